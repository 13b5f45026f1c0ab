"""The mechanism Triton's lowering uses for ``ttg.convert_layout`` (Triton 3.6 - 3.9 rules).

This is the one place of the project's apps that models Triton's choice (the conversion tests
in ``tests/test_conversion_ptx.py`` hold the same reading and check it against the PTX of 520
compiled pairs). Triton decides on the F2 map ``dst.invertAndCompose(src)``: for every hardware
bit of the destination layout, the source location (register, lane, warp, block) it reads.
:func:`invert_and_compose` recomputes that map: Triton solves ``src(x) = dst(bit)`` by Gaussian
elimination over the source's hardware bits taken in order (register bits, then lane, warp,
block, each from bit 0 up) with free variables set to zero, so a source bit that repeats an
earlier one is never read; a destination bit that only broadcasts (zero image) reads the same
bit of the source where that bit broadcasts too, and location 0 otherwise. On broadcast bits
Triton's own map sometimes picks another of the equivalent answers; the *decision* below is the
same (tests/test_scan_triton_choice.py checks both against ``LinearLayout.invert_and_compose``).

Rules (``minimalCvtLayout``, ``cvtNeedsWarpShuffle``, ``getWarpLayoutConvertDecomposition`` in
``triton/Analysis/Utility.h``):

1. ``block`` then ``warp``: every destination block/warp must read the same source block/warp,
   up to the source's broadcast bits of that dim, else shared memory (another block: distributed
   shared memory). A destination warp bit may select a source lane, never a source register.
2. ``lane``: identity (and no warp-selected lanes) means register moves only; a warp-selected
   lane means shared memory before Triton 3.9 (3.9 shuffles it; the lowering helper of
   ``layoutverify.adapters.triton.lowering`` found this compiling the same pairs with each
   release); otherwise warp shuffles when at most one register<->lane exchange remains in each
   direction (F2 rank of the register part of the lane images, and of the lane part of the
   register images, at most 1); otherwise shared memory.

Answers use the conversion analysis's words: ``no_op`` (identical layouts), ``register_permute``,
``intra_warp`` (shuffles), ``intra_cta`` (shared memory), ``cross_cta``; ``None`` when a layout is
not F2-linear (Triton's layouts always are; others are not predicted).
"""
from __future__ import annotations

from dataclasses import dataclass

from layoutverify.core import f2 as F2
from layoutverify.core.layout import Layout

HW = ("register", "lane", "warp", "block")
RULES_VERSION = "3.9"
#: before this release a warp-selected source lane sends the conversion through shared memory
WARP_SELECTED_LANES_SINCE = "3.9"


@dataclass
class TritonChoice:
    mechanism: str | None  # our words, see the module docstring
    rule: str               # the rule that decided

    def to_json(self) -> dict:
        return {"mechanism": self.mechanism, "rule": self.rule}


def _columns(layout: Layout) -> tuple[list[tuple[str, int]], list[int]] | None:
    """Hardware bits in Triton's order and their images as packed logical ints."""
    bases = layout.f2_bases()
    if bases is None:
        return None
    pack = F2.Packing(layout.out_sizes)
    bits, cols = [], []
    for dim in HW:
        for i, v in enumerate(bases.get(dim, [])):
            bits.append((dim, i))
            cols.append(pack.pack(v))
    return bits, cols


def invert_and_compose(src: Layout, dst: Layout) -> dict[str, list[dict[str, int]]] | None:
    """For each hardware dim of ``dst`` and each of its bits, the source location (dict of
    hardware dim -> index) holding the element ``dst`` puts there; None if not F2 or if ``src``
    does not hold some element ``dst`` needs."""
    s, d = _columns(src), _columns(dst)
    if s is None or d is None:
        return None
    sbits, scols = s
    # echelon form: leading bit -> (vector, combination of source bits as a bitmask)
    pivots: dict[int, tuple[int, int]] = {}
    for j, v in enumerate(scols):
        combo = 1 << j
        while v:
            lead = v.bit_length() - 1
            if lead not in pivots:
                pivots[lead] = (v, combo)
                break
            pv, pc = pivots[lead]
            v ^= pv
            combo ^= pc
    out: dict[str, list[dict[str, int]]] = {}
    dbits, dcols = d
    src_zero = {b for b, c in zip(sbits, scols) if c == 0}
    for (dim, i), v in zip(dbits, dcols):
        if v == 0 and (dim, i) in src_zero:
            # both broadcast along this bit: Triton keeps it (identity on the kernel)
            loc = {h: 0 for h in HW}
            loc[dim] = 1 << i
            out.setdefault(dim, []).append(loc)
            continue
        combo = 0
        while v:
            lead = v.bit_length() - 1
            if lead not in pivots:
                return None
            pv, pc = pivots[lead]
            v ^= pv
            combo ^= pc
        loc = {h: 0 for h in HW}
        for j, (sd, si) in enumerate(sbits):
            if combo >> j & 1:
                loc[sd] |= 1 << si
        out.setdefault(dim, []).append(loc)
    return out


def _before(version: str | None, release: str) -> bool:
    if not version:
        return False
    try:
        return tuple(int(x) for x in str(version).split(".")[:2]) < tuple(int(x) for x in release.split("."))
    except ValueError:
        return False


def triton_choice(src: Layout, dst: Layout, triton_version: str | None = None) -> TritonChoice:
    """Triton's mechanism for converting ``src`` to ``dst`` (see the module docstring);
    ``triton_version`` (``"3.8"``, ...; default the newest rules) selects the release's rules."""
    if src.kind != "register" or dst.kind != "register":
        return TritonChoice(None, "not a register layout")
    cvt = invert_and_compose(src, dst)
    if cvt is None:
        if src.f2_bases() is None or dst.f2_bases() is None:
            return TritonChoice(None, "not F2-linear")
        return TritonChoice(None, "source does not hold every element")
    return decide(cvt, src.f2_bases(), src.in_size("register") == dst.in_size("register"), triton_version)


def decide(cvt: dict, src_bases: dict, same_registers: bool = True, triton_version: str | None = None) -> TritonChoice:
    """The rules of the module docstring applied to an ``invertAndCompose`` map ``cvt`` (dst dim ->
    per bit the source location it reads; ``src_bases``: the source's F2 bases)."""
    sb = src_bases
    warp_selects_lane = False
    for dim in ("block", "warp"):
        if not cvt.get(dim):
            continue
        free = sum(1 << i for i, v in enumerate(sb.get(dim, [])) if not any(v))
        same = all(((v[dim] ^ (1 << i)) & ~free) == 0 for i, v in enumerate(cvt[dim])) and \
            all((v[dim] & ~free) == 0 for other, vs in cvt.items() if other != dim for v in vs)
        if not same:
            return TritonChoice("cross_cta" if dim == "block" else "intra_cta", f"reads another {dim}")
        if any(v["register"] for v in cvt[dim]):
            return TritonChoice("intra_cta", f"{dim} selects a source register")
        warp_selects_lane |= any(v["lane"] for v in cvt[dim])
    lanes = cvt.get("lane", [])
    regs = cvt.get("register", [])
    lane_identity = all(v["lane"] == (1 << i) and v["register"] == 0 for i, v in enumerate(lanes)) and \
        all(v["lane"] == 0 for v in regs)
    if lane_identity and not warp_selects_lane:
        ident = all(v["register"] == (1 << i) for i, v in enumerate(regs)) and same_registers
        return TritonChoice("no_op" if ident else "register_permute", "lane identity")
    if warp_selects_lane and _before(triton_version, WARP_SELECTED_LANES_SINCE):
        return TritonChoice("intra_cta", f"a warp selects a source lane (shuffled only from Triton {WARP_SELECTED_LANES_SINCE})")
    mixed = max(F2.rank(v["register"] for v in lanes), F2.rank(v["lane"] for v in regs))
    if mixed < 2:
        return TritonChoice("intra_warp", "lane exchange")
    return TritonChoice("intra_cta", ">= 2 register<->lane exchanges")
