"""``layoutverify list [atoms|fragments|encodings|frameworks]``: the names the adapters accept.

* ``atoms``: CuTe MMA atoms (operands ``.A``, ``.B``, ``.C``), copy atoms (``.Src``, ``.Dst``) and
  GMMA shared-memory layout atoms, from the CuTe adapter's catalogue (``atoms.toml``, transcribed
  from CUTLASS's traits);
* ``fragments``: the PTX and AMD matrix-instruction fragments the ``ptx:`` and ``amd:`` adapters know;
* ``encodings``: the Triton layout encodings the ``triton:`` adapter converts, each with an example;
* ``frameworks``: the adapter registry, each framework with example specs.

Every listed spec parses as written (``tests/test_list.py`` checks them all against the adapters).
Everything is read through the registry (:func:`layoutverify.adapters.adapter`). ``--json`` prints
a ``list`` document (docs/json-schema.md); a word filters names (``layoutverify list fragments
m16n8k16``).
"""
from __future__ import annotations

from layoutverify.adapters import FRAMEWORKS, adapter
from layoutverify.apps import jsonout

CATEGORIES = ("atoms", "fragments", "encodings", "frameworks")

#: An example per Triton encoding, with the shape it needs (None: none). An encoding the adapter
#: registers without an example here is still listed (its spelling, no example).
TRITON_EXAMPLES = {
    "blocked": ("#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], "
                "order = [1, 0]}>", "64x64"),
    "slice": ("#ttg.slice<{dim = 1, parent = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], "
              "warpsPerCTA = [4, 1], order = [1, 0]}>}>", "64"),
    "nvidia_mma": ("#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], "
                   "instrShape = [16, 8]}>", "32x32"),
    "dot_op": ("#ttg.dot_op<{opIdx = 0, parent = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, "
               "warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2}>", "32x32"),
    "amd_mfma": ("#ttg.amd_mfma<{version = 3, warpsPerCTA = [2, 2], instrShape = [32, 32, 8], "
                 "isTransposed = true}>", "64x64"),
    "amd_wmma": ("#ttg.amd_wmma<{version = 2, isTranspose = false, ctaLayout = {warp = [[0, 1], [1, 0]]}}>",
                 "32x32"),
    "linear": ("#ttg.linear<{register = [[0, 1], [0, 2]], lane = [[0, 4], [0, 8], [1, 0], [2, 0], [4, 0]], "
               "warp = [[8, 0], [16, 0]], block = []}>", "32x16"),
    "swizzled_shared": ("#ttg.swizzled_shared<{vec = 4, perPhase = 1, maxPhase = 8, order = [1, 0]}>", "64x64"),
    "shared": ("#ttg.shared<{vec = 4, perPhase = 1, maxPhase = 8, order = [1, 0]}>", "64x64"),
    "nvmma_shared": ("#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>",
                     "64x64"),
    "padded_shared": ("#ttg.padded_shared<[32:+4] {order = [1, 0], shape = [64, 64]}>", "64x64"),
    "shared_linear": ("#ttg.shared_linear<{offset = [[0, 1], [0, 2], [0, 4], [1, 0], [2, 0]]}, alignment = 16>",
                      None),
    "amd_rotating_shared": ("#ttg.amd_rotating_shared<{vec = 4, perPhase = 1, maxPhase = 8, order = [1, 0]}>",
                            "64x64"),
    "ttng.tensor_memory_encoding": ("#ttng.tensor_memory_encoding<{blockM = 128, blockN = 128, colStride = 1}>",
                                    "128x128"),
    "ttng.tensor_memory_scales_encoding": ("#ttng.tensor_memory_scales_encoding<{}>", "128x4"),
}

#: Older dialect names the Triton adapter also reads (listed as aliases of the current spelling).
_DIALECT_ALIASES = {"triton_nvidia_gpu.": "ttng."}

#: Example specs per framework (the README's and DESIGN.md's), each with the shape it needs.
FRAMEWORK_EXAMPLES = {
    "triton": [("triton:" + TRITON_EXAMPLES["blocked"][0], "64x64"),
               ("triton:tensor<64x64xf16, " + TRITON_EXAMPLES["nvidia_mma"][0] + ">", None)],
    "cute": [("cute:((2,4),8):((1,16),2)", None), ("cute:Sw<3,4,3> o (8,64):(64,1)", None),
             ("cute:SM80_16x8x16_F32F16F16F32_TN.C", None),
             ("cute:tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2,2,1), C, tile=(32,32))", None)],
    "tilus": [("tilus:local(2, 1).spatial(8, 4).local(1, 2)", None)],
    "iree": [("iree:#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], batch_tile = [1, 1], "
              "outer_tile = [1, 1], thread_tile = [16, 4], element_tile = [1, 4], subgroup_strides = [0, 0], "
              "thread_strides = [1, 16]>", "16x16")],
    "ptx": [("ptx:mma.m16n8k16.f16.A", None), ("ptx:wgmma.m64n128k16.f32.D", None), ("ptx:ldmatrix.x4.trans", None)],
    "amd": [("amd:v_mfma_f32_32x32x8_f16.A", None)],
}


def register(sub) -> None:
    """The ``list`` subcommand's arguments."""
    p = sub.add_parser("list", help="names the adapters accept: CuTe atoms, PTX/AMD fragments, Triton encodings, frameworks",
                       description="List what can be written after FRAMEWORK: without reading the source: CuTe MMA/"
                                   "copy/shared-memory atoms, PTX and AMD instruction fragments, Triton encodings "
                                   "(with an example each), or the frameworks with example specs.")
    p.add_argument("what", nargs="?", choices=CATEGORIES, default="frameworks", help="what to list (default: frameworks)")
    p.add_argument("filter", nargs="?", metavar="TEXT", help="only names containing TEXT (case-insensitive)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


# -- gatherers: each returns a list of items {"name", "kind", "framework", "specs": [...], ...} -----
def atoms() -> list[dict]:
    """The CuTe atoms: MMA atoms (their operands), copy atoms (``Src``, ``Dst``) and GMMA
    shared-memory layout atoms."""
    cute = adapter("cute")
    out = []
    for name, atom in cute.mma_atoms().items():
        # GMMA atoms read A (SS) or A and B from shared memory: only register operands are layouts here
        out.append({"name": name, "kind": "mma", "framework": "cute",
                    "specs": [f"cute:{name}.{op}" for op in atom.operands()],
                    "ptx": getattr(atom, "ptx", None)})
    for name, atom in cute.copy_atoms().items():
        out.append({"name": name, "kind": "copy", "framework": "cute",
                    "specs": [f"cute:{name}.{op}" for op in ("Src", "Dst")],
                    "ptx": getattr(atom, "ptx", None)})
    for name in cute.atoms.smem_atom_names():
        out.append({"name": f"GMMA::{name}", "kind": "smem", "framework": "cute",
                    "specs": [f"cute:GMMA::{name}<half_t>"]})
    return out


def fragments() -> list[dict]:
    """The PTX and AMD matrix-instruction fragments."""
    out = []
    for fw in ("ptx", "amd"):
        for name in adapter(fw).list_fragments():
            out.append({"name": name, "kind": "fragment", "framework": fw, "specs": [f"{fw}:{name}"]})
    return out


def spelling(kind: str) -> str:
    """How an encoding kind is written in TTGIR: ``blocked`` -> ``#ttg.blocked``,
    ``ttng.tensor_memory_encoding`` -> ``#ttng.tensor_memory_encoding``."""
    return f"#{kind}" if "." in kind else f"#ttg.{kind}"


def encodings() -> list[dict]:
    """The Triton encodings, each as spelled in TTGIR with its example (older dialect spellings as
    aliases)."""
    triton = adapter("triton")
    kinds = sorted(triton.ENCODINGS)
    aliases: dict[str, list[str]] = {}
    for kind in kinds:
        for old, new in _DIALECT_ALIASES.items():
            if kind.startswith(old) and new + kind[len(old):] in triton.ENCODINGS:
                aliases.setdefault(new + kind[len(old):], []).append(spelling(kind))
    alias_kinds = {k for k in kinds for old in _DIALECT_ALIASES if k.startswith(old)
                   and _DIALECT_ALIASES[old] + k[len(old):] in triton.ENCODINGS}
    out = []
    for kind in kinds:
        if kind in alias_kinds:
            continue
        text, shape = TRITON_EXAMPLES.get(kind, (None, None))
        item = {"name": spelling(kind), "kind": "encoding", "framework": "triton",
                "specs": [f"triton:{text}"] if text else [], "shape": shape}
        if kind in aliases:
            item["aliases"] = aliases[kind]
        if kind in triton.DOT_OPERAND_PARENTS:
            item["dot_op_parent"] = True
        out.append(item)
    return out


def frameworks() -> list[dict]:
    """The frameworks of the adapter registry, each with its module and example specs."""
    return [{"name": fw, "kind": "framework", "framework": fw, "module": FRAMEWORKS[fw],
             "specs": [s for s, _ in FRAMEWORK_EXAMPLES.get(fw, [])],
             "shapes": [sh for _, sh in FRAMEWORK_EXAMPLES.get(fw, [])]} for fw in FRAMEWORKS]


GATHER = {"atoms": atoms, "fragments": fragments, "encodings": encodings, "frameworks": frameworks}


def items(what: str, filt: str | None = None) -> list[dict]:
    """The items of category ``what``; with ``filt``, those whose name or a spec contains it
    (case-insensitive)."""
    got = GATHER[what]()
    if filt:
        f = filt.lower()
        got = [i for i in got if f in i["name"].lower() or any(f in s.lower() for s in i["specs"])]
    return got


def run(args) -> int:
    """Run ``layoutverify list``: print (or emit as JSON) the items of the category asked for; exit 0."""
    got = items(args.what, args.filter)
    if args.json:
        jsonout.emit("list", {"what": args.what, "filter": args.filter, "count": len(got), "items": got})
        return 0
    if args.what == "frameworks":
        for i in got:
            print(f"{i['name']}:")
            for spec, shape in zip(i["specs"], i["shapes"]):
                print(f"  {spec}" + (f"   --shape {shape}" if shape else ""))
    elif args.what == "encodings":
        for i in got:
            extra = [f"also {', '.join(i['aliases'])}"] if i.get("aliases") else []
            extra += ["a dot_op parent"] if i.get("dot_op_parent") else []
            print(f"{i['name']}" + (f"  ({'; '.join(extra)})" if extra else ""))
            for spec in i["specs"]:
                print(f"  {spec}" + (f"   --shape {i['shape']}" if i["shape"] else ""))
    elif args.what == "atoms":
        width = max((len(i["name"]) for i in got), default=0)
        for i in got:
            ops = " ".join(s.rsplit(".", 1)[1] for s in i["specs"]) if i["kind"] != "smem" else "<element type>"
            print(f"{i['name'].ljust(width)}  {i['kind']:<4}  {ops}" + (f"  ({i['ptx']})" if i.get("ptx") else ""))
    else:
        for i in got:
            print(i["specs"][0])
    print(f"{len(got)} {args.what}" + (f" matching {args.filter!r}" if args.filter else ""))
    return 0
