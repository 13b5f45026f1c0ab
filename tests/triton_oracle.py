"""Seeded random TTGIR encodings and shapes, and the installed Triton as a batched oracle.

Used by the Triton sweeps (``test_triton_sweep.py``) and reusable by the AMD and shared-layout
sweeps: generate ``(text, shape)`` cases with the ``gen_*`` functions, ask Triton for all of them
at once with :func:`oracle` (one subprocess, ~1 ms per case; a Triton crash costs only its case),
parse them with ``layoutverify.adapters.triton.parse`` and compare with :func:`compare`.

Every generator draws only what Triton documents as valid (powers of two where Triton requires
them, 32 lanes for NVIDIA, CGA layouts that are permutation matrices plus broadcast bases), so a
case Triton rejects is worth reporting, not silently dropping: :class:`Tally` counts those with
their reasons.
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

LANES = 32


# ---------------------------------------------------------------------------------------------
# Small random pieces
# ---------------------------------------------------------------------------------------------
def pow2_split(rng: random.Random, total: int, rank: int) -> list[int]:
    """Random powers of two, one per dim, multiplying to ``total`` (a power of two)."""
    out = [1] * rank
    for _ in range(total.bit_length() - 1):
        out[rng.randrange(rank)] *= 2
    return out


def rand_pow2(rng: random.Random, lo: int, hi: int) -> int:
    """A power of two in [lo, hi] (both powers of two), log-uniform."""
    return 1 << rng.randint(lo.bit_length() - 1, hi.bit_length() - 1)


def rand_order(rng: random.Random, rank: int) -> list[int]:
    order = list(range(rank))
    rng.shuffle(order)
    return order


def rand_cga(rng: random.Random, rank: int, nctas: int) -> list[list[int]]:
    """``log2(nctas)`` CGA bases: each either broadcast (zero) or the next tile along some dim."""
    bases, reach = [], [1] * rank
    for _ in range(nctas.bit_length() - 1):
        b = [0] * rank
        if rng.random() < 0.8:
            d = rng.randrange(rank)
            b[d] = reach[d]
            reach[d] *= 2
        bases.append(b)
    return bases


def fmt(v) -> str:
    """Python value -> TTGIR text (lists as ``[1, 2]``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt(x) for x in v) + "]"
    return str(v)


def _new_cga_syntax() -> bool:
    """Does the installed Triton write CTA layouts as ``CGALayout`` bases (3.9) or as
    ``CTAsPerCGA/CTASplitNum/CTAOrder`` (older)? Decided by Gluon's BlockedLayout fields."""
    try:
        import dataclasses
        from triton.experimental.gluon.language import BlockedLayout
        return "cga_layout" in {f.name for f in dataclasses.fields(BlockedLayout)}
    except Exception:
        return True


NEW_CGA_SYNTAX = _new_cga_syntax()


def cga_param(cga: list[list[int]]) -> str:
    """The CTA layout in the installed Triton's syntax (old syntax: only split-then-replicate
    layouts, which is what the old parameters can say)."""
    if not cga:
        return ""
    if NEW_CGA_SYNTAX:
        return f", CGALayout = {fmt(cga)}"
    rank = len(cga[0])
    ctas, split, order = [1] * rank, [1] * rank, []
    for b in cga:
        d = next((i for i, c in enumerate(b) if c), None)
        if d is None:
            d = order[-1] if order else 0
            ctas[d] *= 2
        else:
            split[d] *= 2
            ctas[d] *= 2
        if d not in order:
            order.append(d)
    order += [d for d in range(rank) if d not in order]
    return f", CTAsPerCGA = {fmt(ctas)}, CTASplitNum = {fmt(split)}, CTAOrder = {fmt(order)}"


def rand_shape(rng: random.Random, rank: int, near=None, max_elems: int = 1 << 14) -> tuple[int, ...]:
    """A power-of-two shape: near the tile ``near`` (from 1/8 to 8 times it per dim) if given."""
    while True:
        if near is None:
            shape = [rand_pow2(rng, 1, 256) for _ in range(rank)]
        else:
            shape = [max(1, min(1 << 12, n * (1 << rng.randint(0, 6)) // 8)) for n in near]
        total = 1
        for s in shape:
            total *= s
        if total <= max_elems:
            return tuple(shape)
        near = None if rng.random() < 0.3 else near


# ---------------------------------------------------------------------------------------------
# Encodings (text, tile shape)
# ---------------------------------------------------------------------------------------------
def gen_blocked(rng: random.Random, rank: int, warps: int | None = None, nctas: int | None = None):
    warps = warps or rand_pow2(rng, 1, 16)
    nctas = nctas or rand_pow2(rng, 1, 4)
    spt = [rand_pow2(rng, 1, 8) for _ in range(rank)]
    tpw = pow2_split(rng, rng.choice([LANES] * 8 + [16, 64]), rank)
    wpc = pow2_split(rng, warps, rank)
    order = rand_order(rng, rank)
    cga = rand_cga(rng, rank, nctas) if rng.random() < 0.5 else []
    text = (f"#ttg.blocked<{{sizePerThread = {fmt(spt)}, threadsPerWarp = {fmt(tpw)}, warpsPerCTA = {fmt(wpc)}, "
            f"order = {fmt(order)}{cga_param(cga)}}}>")
    split = [1] * rank
    for b in cga:
        for d, c in enumerate(b):
            if c:
                split[d] *= 2
    tile = [s * t * w * c for s, t, w, c in zip(spt, tpw, wpc, split)]
    return text, tile


def gen_mma(rng: random.Random, version: int, rank: int = 2):
    warps = rand_pow2(rng, 4 if version == 3 else 1, 16)
    nctas = rand_pow2(rng, 1, 4)
    if version == 3:
        if rng.random() < 0.9:   # a warp group (4 warps) down M, the rest anywhere
            rest = pow2_split(rng, warps // 4, 2)
            wpc = [4 * rest[0], rest[1]]
        else:
            wpc = pow2_split(rng, rand_pow2(rng, 1, 16), 2)
        n = rand_pow2(rng, 8, 256)
        m = 16 if rng.random() < 0.85 else rand_pow2(rng, 8, 64)
        instr = [m, n, rng.choice([8, 16, 32])]
        tile = [m * wpc[0], n * wpc[1]]
    else:
        wpc = pow2_split(rng, warps, rank)
        mn = [16, 8] if rng.random() < 0.8 else [rand_pow2(rng, 8, 64), rand_pow2(rng, 8, 32)]
        instr = mn if rank == 2 else [1] + mn
        tile = [i * w for i, w in zip(instr, wpc)]
    cga = rand_cga(rng, rank, nctas) if rng.random() < 0.4 else []
    text = (f"#ttg.nvidia_mma<{{versionMajor = {version}, versionMinor = 0, warpsPerCTA = {fmt(wpc)}"
            f"{cga_param(cga)}, instrShape = {fmt(instr)}}}>")
    return text, tile


def gen_dot(rng: random.Random, rank: int | None = None):
    parent_kind = rng.choice(["mma2", "mma2", "mma3", "blocked"])
    if parent_kind == "blocked":
        rank = rank or rng.randint(2, 4)
        parent, tile = gen_blocked(rng, rank)
        op = rng.randint(0, 1)
        return f"#ttg.dot_op<{{opIdx = {op}, parent = {parent}}}>", tile
    if parent_kind == "mma3":
        parent, tile = gen_mma(rng, 3)
        op = 0
    else:
        rank = rank if rank in (2, 3) else rng.choice([2, 2, 3])
        parent, tile = gen_mma(rng, 2, rank)
        op = rng.randint(0, 1)
    k_width = rand_pow2(rng, 1, 16)
    k = len(tile) - 1 if op == 0 else len(tile) - 2
    tile = list(tile)
    tile[k] = 8 * k_width
    return f"#ttg.dot_op<{{opIdx = {op}, parent = {parent}, kWidth = {k_width}}}>", tile


def gen_linear(rng: random.Random, rank: int, warps: int | None = None, nctas: int | None = None):
    """A random distributed linear layout: every basis moves one dim by a power of two (or is 0)."""
    warps = warps or rand_pow2(rng, 1, 16)
    nctas = nctas or rand_pow2(rng, 1, 4)
    sizes = [rand_pow2(rng, 1, 64) for _ in range(rank)]
    while sum(s.bit_length() - 1 for s in sizes) > 13:
        sizes[rng.randrange(rank)] = 1
    units = [[0] * d + [1 << b] + [0] * (rank - d - 1) for d, s in enumerate(sizes) for b in range(s.bit_length() - 1)]
    rng.shuffle(units)
    lanes = rng.choice([LANES] * 6 + [16, 64])
    slots = {"lane": lanes.bit_length() - 1, "warp": warps.bit_length() - 1, "block": nctas.bit_length() - 1}
    bases = {"register": [], "lane": [], "warp": [], "block": []}
    for dim in ("lane", "warp", "block"):
        for _ in range(slots[dim]):
            if units and rng.random() < 0.85:
                bases[dim].append(units.pop())
            else:
                bases[dim].append([0] * rank)
    bases["register"] = units
    if rng.random() < 0.2:
        bases["register"].insert(rng.randint(0, len(units)), [0] * rank)
    if not any(bases.values()) or all(not v for v in bases.values()):
        bases["register"] = [[0] * rank]
    if not any(v for vs in bases.values() for v in vs):
        bases["register"] = [[0] * rank]
    # Sizes actually reached (a dim may have lost no units; tile = sizes)
    text = ("#ttg.linear<{" + ", ".join(f"{k} = {fmt(v)}" for k, v in bases.items()) + "}>")
    return text, sizes


def gen_slice(rng: random.Random, rank: int, depth: int = 0):
    """``slice`` of a random parent of rank ``rank + 1`` (blocked, mma, dot_op, linear, slice)."""
    prank = rank + 1
    choices = ["blocked", "linear"]
    if prank in (2, 3):
        choices += ["mma2", "dot"]
    if prank == 2:
        choices += ["mma3"]
    if depth < 1 and rank <= 3:
        choices += ["slice"]
    kind = rng.choice(choices)
    if kind == "blocked":
        parent, tile = gen_blocked(rng, prank)
    elif kind == "linear":
        parent, tile = gen_linear(rng, prank)
    elif kind == "mma2":
        parent, tile = gen_mma(rng, 2, prank)
    elif kind == "mma3":
        parent, tile = gen_mma(rng, 3)
    elif kind == "dot":
        parent, tile = gen_dot(rng, prank)
        while len(tile) != prank:
            parent, tile = gen_dot(rng, prank)
    else:
        parent, tile = gen_slice(rng, prank, depth + 1)
    dim = rng.randrange(prank)
    tile = [t for d, t in enumerate(tile) if d != dim]
    return f"#ttg.slice<{{dim = {dim}, parent = {parent}}}>", tile


#: kind name -> generator(rng) -> (text, tile); ranks drawn inside
GENERATORS = {
    "blocked": lambda rng: gen_blocked(rng, rng.randint(1, 4)),
    "slice": lambda rng: gen_slice(rng, rng.randint(1, 4)),
    "mma_v2": lambda rng: gen_mma(rng, 2, rng.choice([2, 2, 3])),
    "mma_v3": lambda rng: gen_mma(rng, 3),
    "dot_op": lambda rng: gen_dot(rng),
    "linear": lambda rng: gen_linear(rng, rng.randint(1, 4)),
}


def sweep_cases(seed: int, per_kind: int, kinds=None) -> list[tuple[str, str, tuple[int, ...]]]:
    """``per_kind`` seeded ``(kind, text, shape)`` cases per kind."""
    rng = random.Random(seed)
    out = []
    for kind in kinds or GENERATORS:
        for _ in range(per_kind):
            text, tile = GENERATORS[kind](rng)
            out.append((kind, text, rand_shape(rng, len(tile), tile)))
    return out


# ---------------------------------------------------------------------------------------------
# Oracle and comparison
# ---------------------------------------------------------------------------------------------
def installed_version() -> str:
    """The installed Triton as the adapter's ``triton_version`` (``major.minor``), so that a sweep
    compares like with like on any installed release (3.9 when Triton is absent or newer)."""
    from layoutverify.adapters.triton import version
    return version.default()


TRITON_VERSION = installed_version()


def have_triton() -> bool:
    try:
        from triton._C.libtriton import gluon_ir  # noqa: F401
        return hasattr(gluon_ir.GluonOpBuilder, "to_linear_layout")
    except Exception:
        return False


def oracle(cases, raw: bool = False):
    """Triton's layouts for ``[(text, shape), ...]``: Layout or NativeError per case."""
    from layoutverify.adapters.triton.native import native_many
    return native_many(list(cases), raw=raw)


_TMEM_WORKER = r"""
import json, os, sys
out = {}
try:
    from triton._C.libtriton.gluon_ir import compute_tmem_reg_layout
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia import blackwell as bw
except ImportError as e:
    out = {"unavailable": f"Triton without Gluon's Blackwell TMEM layouts: {e}"}
else:
    for variant, m, n, block_m in json.loads(sys.stdin.read()):
        tl = bw.TensorMemoryLayout(block=(block_m, n), col_stride=1)
        ll = compute_tmem_reg_layout(gl.float32, [m, n], [m, n], tl, 4, variant)
        out[f"{variant} {m} {n} {block_m}"] = None if ll is None else {
            "register": ll.reg_bases, "lane": ll.lane_bases, "warp": ll.warp_bases, "block": ll.block_bases}
sys.stdout.write(json.dumps(out))
sys.stdout.flush()
os._exit(0)  # Triton keeps MLIR attributes alive to the end: no nanobind leak report at teardown
"""


def tmem_reg_layouts(cases) -> dict:
    """Triton's TMEM register layouts (``compute_tmem_reg_layout``, f32, 4 warps) for
    ``[(variant, m, n, block_m), ...]``, asked in one subprocess: ``{(variant, m, n, block_m):
    {"register": bases, "lane": ..., "warp": ..., "block": ...} or None}``; raises
    ``LookupError`` naming why when the installed Triton has none."""
    import json
    import subprocess
    import sys
    cases = [tuple(c) for c in cases]
    proc = subprocess.run([sys.executable, "-c", _TMEM_WORKER], input=json.dumps(cases), capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"the TMEM worker failed: {proc.stderr[-2000:]}")
    got = json.loads(proc.stdout)
    if "unavailable" in got:
        raise LookupError(got["unavailable"])
    return {c: got[" ".join(map(str, c))] for c in cases}


def compare(ours, theirs) -> str | None:
    """None when the two layouts have the same dims, sizes and F2 bases; else what differs."""
    if ours.in_dims != theirs.in_dims:
        return f"hardware dims differ: ours {ours.in_dims}, Triton {theirs.in_dims}"
    if ours.out_dims != theirs.out_dims:
        return f"logical dims differ: ours {ours.out_dims}, Triton {theirs.out_dims}"
    a, b = ours.f2_bases(), theirs.f2_bases()
    if a != b:
        diff = [k for k in b if a is None or a.get(k) != b[k]]
        return f"bases differ in {diff}: ours {a}, Triton {b}"
    return None


@dataclass
class Tally:
    """Outcome counts of a differential sweep, with the reasons for everything not compared."""
    compared: int = 0
    mismatches: list = field(default_factory=list)        # (text, shape, message)
    triton_rejects: Counter = field(default_factory=Counter)  # reason -> count (we accepted)
    both_reject: Counter = field(default_factory=Counter)
    we_reject: list = field(default_factory=list)          # (text, shape, our error): Triton accepted
    examples: dict = field(default_factory=dict)
    layouts: list = field(default_factory=list)            # (kind, text, Triton's layout) of equal cases

    def total(self) -> int:
        return (self.compared + len(self.mismatches) + sum(self.triton_rejects.values())
                + sum(self.both_reject.values()) + len(self.we_reject))

    def summary(self) -> str:
        lines = [f"{self.total()} cases: {self.compared} equal to Triton, {len(self.mismatches)} differ, "
                 f"{sum(self.triton_rejects.values())} rejected by Triton only, "
                 f"{sum(self.both_reject.values())} rejected by both, {len(self.we_reject)} rejected by us only"]
        for why, n in self.triton_rejects.most_common(8):
            lines.append(f"  Triton rejects ({n}): {why}  e.g. {self.examples.get(why, '')}")
        for why, n in self.both_reject.most_common(5):
            lines.append(f"  both reject ({n}): {why}")
        for text, shape, msg in self.mismatches[:5]:
            lines.append(f"  DIFF {text} shape={shape}: {msg}")
        for text, shape, msg in self.we_reject[:5]:
            lines.append(f"  WE REJECT {text} shape={shape}: {msg}")
        return "\n".join(lines)


def _reason(err) -> str:
    """A short, case-independent reason for a Triton error (for counting)."""
    import re
    s = str(err)
    s = re.sub(r'loc\("[^"]*":\d+:\d+\): ', "", s)
    s = re.sub(r"/tmp/\S+", "<tmp>", s)
    s = re.sub(r"\d+", "N", s)
    return s[:160]


def run_sweep(cases, parse, theirs=None, triton_version: str | None = None) -> Tally:
    """Compare ``parse(text, shape=shape, triton_version=...)`` with Triton on every
    ``(kind, text, shape)`` case; the version defaults to the installed Triton's.

    ``theirs``: Triton's answers if already computed (else asked now). Equal cases are kept in
    ``tally.layouts`` as ``(kind, text, triton_layout)``."""
    triton_version = triton_version or TRITON_VERSION
    from layoutverify.core.errors import LayoutError
    if theirs is None:
        theirs = oracle([(text, shape) for _, text, shape in cases])
    tally = Tally()
    for (kind, text, shape), t in zip(cases, theirs):
        try:
            ours = parse(text, shape=shape, triton_version=triton_version)
            our_err = None
        except LayoutError as e:
            ours, our_err = None, e
        if isinstance(t, Exception):
            why = _reason(t)
            (tally.both_reject if our_err is not None else tally.triton_rejects)[why] += 1
            tally.examples.setdefault(why, f"{text} shape={shape}")
            continue
        if our_err is not None:
            tally.we_reject.append((text, shape, str(our_err)))
            continue
        msg = compare(ours, t)
        if msg is None:
            tally.compared += 1
            tally.layouts.append((kind, text, t))
        else:
            tally.mismatches.append((text, shape, msg))
    return tally
