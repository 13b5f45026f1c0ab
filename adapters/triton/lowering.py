"""Which mechanism Triton's ``convert_layout`` lowering emits for a conversion ``src -> dst``.

:func:`layoutverify.core.conversion.analyze` says which mechanism *suffices*; this module says
which one Triton *uses*, by the rules of its NVIDIA lowering (``minimalCvtLayout``,
``cvtNeedsWarpShuffle`` and ``getWarpLayoutConvertDecomposition`` in ``lib/Analysis/Utility.cpp``
and ``ConvertLayoutOpToLLVM.cpp``), applied to ``cvt = dst.invertAndCompose(src)``: for every
hardware basis of ``dst`` the ``src`` hardware location holding the same element.

The rules (Triton 3.6 - 3.9, checked against the PTX each release compiles; see
``tests/test_lowering.py``):

1. ``block`` then ``warp``: every ``dst`` block/warp must read its own ``src`` block/warp (up to
   ``src``'s broadcast bases of that dim), else shared memory (``reads another warp``). A ``dst``
   warp bit may select a ``src`` lane, never a ``src`` register (``warp selects a source
   register``: shared memory).
2. ``lane``: the identity (and no warp-selected lane) means registers only; a warp-selected
   lane means shared memory before Triton 3.9 (:data:`WARP_SELECTED_LANES_SINCE`); otherwise warp
   shuffles when at most one register<->lane exchange remains in each direction (the F2 rank of
   the register part of the lane images and of the lane part of the register images is at most
   1); otherwise shared memory.

Mechanism names are :mod:`layoutverify.core.conversion`'s: ``registers`` is ``no_op`` when the
two layouts are equal and ``register_permute`` otherwise, ``shuffle`` is ``intra_warp``, shared
memory is ``intra_cta`` (``cross_cta`` when a ``dst`` block reads another block).

Besides the prediction, :func:`conversion_ptx` compiles a Gluon conversion kernel for
``sm_80``/``sm_90`` on the CPU (Triton's pipeline stopped at the PTX stage: no GPU, no
``ptxas``); :func:`ptx_mechanism` reads the mechanism off that PTX.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from layoutverify.core import f2 as F2
from layoutverify.core.errors import LayoutError, UnsupportedError
from layoutverify.core.layout import Layout

from . import version as _version

HW_DIMS = ("register", "lane", "warp", "block")
#: Triton's class (what the PTX shows) -> our mechanism name
CLASS_MECHANISM = {"registers": "register_permute", "shuffle": "intra_warp", "shared": "intra_cta",
                   "distributed_shared": "cross_cta"}
RANK = {"no_op": 0, "register_permute": 1, "intra_warp": 2, "intra_cta": 3, "cross_cta": 4, "impossible": 5}


@dataclass(frozen=True)
class Emitted:
    """Triton's choice: ``mechanism`` (our name), ``ptx_class`` (``registers``, ``shuffle``,
    ``shared``, ``distributed_shared``), the ``rule`` that decided, and the release."""

    mechanism: str
    ptx_class: str
    rule: str
    triton_version: str

    def to_json(self) -> dict:
        """The fields as JSON."""
        return {"mechanism": self.mechanism, "ptx_class": self.ptx_class, "rule": self.rule,
                "triton_version": self.triton_version}


# ---------------------------------------------------------------------------------------------
def _bases(layout: Layout, what: str) -> dict[str, list[tuple[int, ...]]]:
    f2 = layout.f2_bases()
    if f2 is None:
        raise UnsupportedError(f"{what} is not F2-linear: Triton's lowering works on linear layouts")
    extra = set(layout.in_names) - set(HW_DIMS)
    if extra:
        raise UnsupportedError(f"{what} has hardware dims {sorted(extra)}; a conversion needs register/lane/warp/block")
    return {d: [tuple(v) for v in f2.get(d, [])] for d in HW_DIMS}


def invert_and_compose(src: Layout, dst: Layout) -> dict[str, list[dict[str, int]]]:
    """``dst.invertAndCompose(src)``: for every basis of every ``dst`` hardware dim, the ``src``
    hardware location (``{"register": r, "lane": l, "warp": w, "block": b}``) holding the same
    element. Where ``src`` holds an element at several locations the preimage is the one over
    the earliest independent ``src`` bases (registers before lanes before warps before blocks),
    as the pivot choice of Triton's Gaussian elimination, except that a zero (broadcast) basis
    ``i`` of a ``dst`` dim maps to basis ``i`` of the same ``src`` dim when that one is zero too,
    as Triton's ``invertAndCompose`` does. Raises :class:`LayoutError` when
    ``src`` does not hold an element ``dst`` needs."""
    if src.out_sizes != dst.out_sizes:
        raise LayoutError(f"a conversion keeps the tensor: {list(src.out_sizes)} vs {list(dst.out_sizes)}")
    sb, db = _bases(src, "the source layout"), _bases(dst, "the destination layout")
    pack = F2.Packing(src.out_sizes).pack
    cols, owner = [], []  # src hardware bases in pivot order, and (dim, bit) of each
    for d in HW_DIMS:
        for i, v in enumerate(sb[d]):
            cols.append(pack(v))
            owner.append((d, i))
    ech = F2.Echelon(cols)
    out: dict[str, list[dict[str, int]]] = {}
    for d in HW_DIMS:
        images = []
        for i, v in enumerate(db[d]):
            if not any(v) and i < len(sb[d]) and not any(sb[d][i]):
                # a broadcast basis of dst read from the same broadcast basis of src: Triton keeps
                # free (replicated) bits on their own dim
                images.append({**dict.fromkeys(HW_DIMS, 0), d: 1 << i})
                continue
            combo = ech.solve(pack(v))
            if combo is None:
                raise LayoutError(f"the source layout does not hold the element {tuple(v)} that the destination's "
                                  f"{d} basis needs")
            loc = dict.fromkeys(HW_DIMS, 0)
            for k, (od, bit) in enumerate(owner):
                if combo >> k & 1:
                    loc[od] ^= 1 << bit
            images.append(loc)
        out[d] = images
    return out


#: first release whose warp shuffles let a destination warp bit select a source lane (before it,
#: such a conversion goes through shared memory); found by compiling 511 seeded pairs with each
#: release (tests/test_lowering.py)
WARP_SELECTED_LANES_SINCE = "3.9"


def _decide(cvt: dict, src_bases: dict, triton_version: str = _version.NEWEST) -> tuple[str, str]:
    warp_selects_lane = False
    for dim in ("block", "warp"):
        free = sum(1 << i for i, v in enumerate(src_bases[dim]) if not any(v))
        own = all(((loc[dim] ^ (1 << i)) & ~free) == 0 for i, loc in enumerate(cvt[dim]))
        others = all((loc[dim] & ~free) == 0 for other in HW_DIMS if other != dim for loc in cvt[other])
        if not (own and others):
            return ("distributed_shared" if dim == "block" else "shared"), f"reads another {dim}"
        if any(loc["register"] for loc in cvt[dim]):
            return "shared", f"{dim} selects a source register"
        warp_selects_lane |= any(loc["lane"] for loc in cvt[dim])
    lane_identity = all(loc["lane"] == 1 << i and loc["register"] == 0 for i, loc in enumerate(cvt["lane"])) and \
        all(loc["lane"] == 0 for loc in cvt["register"])
    if lane_identity and not warp_selects_lane:
        return "registers", "lane identity"
    if warp_selects_lane and _version.before({_version.OPTION: triton_version}, WARP_SELECTED_LANES_SINCE):
        return "shared", f"a warp selects a source lane (shuffles allow it from Triton {WARP_SELECTED_LANES_SINCE})"
    mixed = max(F2.rank(loc["register"] for loc in cvt["lane"]), F2.rank(loc["lane"] for loc in cvt["register"]))
    if mixed < 2:
        return "shuffle", "at most one register<->lane exchange"
    return "shared", ">= 2 register<->lane exchanges"


def decide(cvt: dict, src_bases: dict, triton_version=None) -> tuple[str, str]:
    """Triton's class (``registers``, ``shuffle``, ``shared``, ``distributed_shared``) and the rule
    that decided, from ``cvt`` (:func:`invert_and_compose`'s form, or Triton's own
    ``invert_and_compose`` turned into it) and the source's bases per hardware dim."""
    sb = {d: [tuple(v) for v in src_bases.get(d, [])] for d in HW_DIMS}
    full = {d: [{**dict.fromkeys(HW_DIMS, 0), **loc} for loc in cvt.get(d, [])] for d in HW_DIMS}
    return _decide(full, sb, _version.normalize(triton_version))


def emitted_mechanism(src: Layout, dst: Layout, *, triton_version=None, equal: bool | None = None) -> Emitted:
    """The mechanism Triton (``triton_version``, default the installed release) emits for
    ``convert_layout(src -> dst)`` of distributed layouts. ``equal`` (whether the two layouts are
    the same map; computed when omitted) turns ``registers`` into ``no_op``."""
    tv = _version.normalize(triton_version)
    sb = _bases(src, "the source layout")
    _bases(dst, "the destination layout")
    for d in ("lane",):
        if src.in_size(d) != dst.in_size(d):
            raise LayoutError(f"source and destination have {src.in_size(d)} and {dst.in_size(d)} lanes per warp")
    cvt = invert_and_compose(src, dst)
    cls, rule = _decide(cvt, sb, tv)
    mech = CLASS_MECHANISM[cls]
    if cls == "registers":
        if equal is None:
            from layoutverify.core.compare import compare
            equal = compare(src, dst).verdict == "equal"
        if equal:
            mech = "no_op"
    return Emitted(mechanism=mech, ptx_class=cls, rule=rule, triton_version=tv)


# ---------------------------------------------------------------------------------------------
# reading the mechanism off compiled PTX
PTX_PATTERNS = {
    "shfl": r"\bshfl\.sync",
    "st_shared": r"\bst\.shared",
    "ld_shared": r"\bld\.shared",
    "stmatrix": r"\bstmatrix",
    "ldmatrix": r"\bldmatrix",
    "bar": r"\bbar\.sync|\bbarrier\.sync",
    "cluster": r"\bshared::cluster|\bmapa\b",
}


def ptx_counts(ptx: str) -> dict[str, int]:
    """Static counts of the instructions that move data between threads."""
    return {name: len(re.findall(rx, ptx)) for name, rx in PTX_PATTERNS.items()}


def ptx_class(ptx_or_counts) -> str:
    """``distributed_shared``, ``shared``, ``shuffle`` or ``registers``: what the PTX uses to move
    data between threads (the kernel must contain nothing but the conversion's shared-memory and
    shuffle traffic, as :func:`conversion_ptx`'s does)."""
    c = ptx_counts(ptx_or_counts) if isinstance(ptx_or_counts, str) else ptx_or_counts
    if c.get("cluster"):
        return "distributed_shared"
    if c["st_shared"] + c["ld_shared"] + c["stmatrix"] + c["ldmatrix"]:
        return "shared"
    if c["shfl"]:
        return "shuffle"
    return "registers"


# ---------------------------------------------------------------------------------------------
# compiling the conversion kernel on the CPU (in worker subprocesses: Triton's C++ can abort)
def gluon_spec(layout: Layout | None = None, text: str | None = None, *, shape=None, triton_version=None) -> dict:
    """The JSON Gluon spec (see :mod:`.compile_worker`) of a layout: Triton's own encoding when
    ``text`` is a ``blocked``/``nvidia_mma``/``dot_op``/``slice`` attribute, else a
    ``DistributedLinearLayout`` with ``layout``'s F2 bases."""
    if text is not None:
        from .parser import parse_text
        try:
            spec = _attr_spec(parse_text(text).attr)
        except (LayoutError, KeyError, TypeError):
            spec = None
        if spec is not None:
            return spec
    if layout is None:
        raise LayoutError("gluon_spec needs a layout or Triton text")
    b = _bases(layout, "the layout")
    if layout.in_size("block") != 1:
        raise UnsupportedError("the conversion kernel runs one CTA; the layout has several blocks")
    return {"kind": "linear", "reg": [list(v) for v in b["register"]], "lane": [list(v) for v in b["lane"]],
            "warp": [list(v) for v in b["warp"]], "block": []}


def _attr_spec(attr) -> dict | None:
    p = attr.params
    if attr.kind == "blocked" and "CGALayout" not in p and "CTAsPerCGA" not in p:
        return {"kind": "blocked", "spt": list(p["sizePerThread"]), "tpw": list(p["threadsPerWarp"]),
                "wpc": list(p["warpsPerCTA"]), "order": list(p["order"])}
    if attr.kind == "nvidia_mma" and "CGALayout" not in p and "CTAsPerCGA" not in p:
        return {"kind": "mma", "version": [p["versionMajor"], p.get("versionMinor", 0)], "warps": list(p["warpsPerCTA"]),
                "instr": list(p["instrShape"])}
    if attr.kind == "dot_op":
        parent = _attr_spec(p["parent"])
        if parent is None or parent["kind"] != "mma":
            return None
        return {"kind": "dot", "op": p["opIdx"], "parent": parent, "k_width": p.get("kWidth", 0)}
    if attr.kind == "slice":
        parent = _attr_spec(p["parent"])
        return None if parent is None else {"kind": "slice", "dim": p["dim"], "parent": parent}
    return None


def num_warps_of(layout: Layout) -> int:
    return layout.in_size("warp")


def compile_conversions(cases: list[dict], *, python: str | None = None, workers: int = 2,
                        timeout: float = 900, worker: str | None = None) -> dict:
    """Compile every case (the :mod:`.compile_worker` format) in ``workers`` subprocesses of
    ``python`` (default: this interpreter; another one runs another Triton release). A worker that
    dies is restarted after the case it died on, which is answered ``{"error": "crash ..."}``.
    ``worker``: another worker script of the same protocol (one JSON case a line in, one JSON
    answer with the case's ``id`` a line out). Returns ``{id: answer}``."""
    import json
    import os
    import selectors
    import subprocess
    import sys
    import tempfile
    import time

    exe = python or sys.executable
    worker = worker or os.path.join(os.path.dirname(os.path.abspath(__file__)), "compile_worker.py")
    env = dict(os.environ, TRITON_DEFAULT_FP_FUSION="1", PYTHONWARNINGS="ignore")
    pending = [list(cases[i::workers]) for i in range(workers)]
    procs: list = [None] * workers
    results: dict = {}
    sel = selectors.DefaultSelector()
    deadline = time.monotonic() + timeout

    def start(i):
        if not pending[i]:
            procs[i] = None
            return
        # the cases go through a file: writing them to a pipe while the worker's answers (whole
        # PTX texts) fill the other pipe would deadlock
        with tempfile.TemporaryFile("w+") as f:
            f.write("".join(json.dumps(c) + "\n" for c in pending[i]))
            f.seek(0)
            p = subprocess.Popen([exe, worker], stdin=f, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True, env=env)
        procs[i] = p
        sel.register(p.stdout, selectors.EVENT_READ, i)

    for i in range(workers):
        start(i)
    try:
        while sel.get_map():
            if time.monotonic() > deadline:
                raise TimeoutError("Triton compile workers took too long")
            for key, _ in sel.select(timeout=5):
                i = key.data
                line = key.fileobj.readline()
                if line:
                    r = json.loads(line)
                    results[r["id"]] = r
                    pending[i] = [c for c in pending[i] if c["id"] != r["id"]]
                    continue
                sel.unregister(key.fileobj)
                procs[i].wait()
                if pending[i]:
                    dead = pending[i].pop(0)
                    results[dead["id"]] = {"id": dead["id"], "error": f"crash (exit {procs[i].returncode})"}
                    start(i)
    finally:
        for p in procs:
            if p is not None and p.poll() is None:
                p.kill()
    return results
