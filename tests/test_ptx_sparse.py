"""Sparse fragments (``mma.sp``, ``wgmma.sp``) against the PTX ISA's fragment text and CUTLASS.

The ISA (§9.7.14.6.2) gives, per element ``ai`` of the packed A fragment, its ``row`` and the dense
column span ``[firstcol .. lastcol]`` it comes from. Those cases are transcribed here a second time,
as data (which ``i`` take ``groupID + 8``, which take the second span), independently of the
adapter's formulas; each fragment must (1) place ``ai`` in that row, (2) in the packed column range
of that span, (3) number the elements of one span consecutively, and (4) cover the packed
``M x K/2`` matrix exactly once.
"""
import re
from pathlib import Path

import numpy as np
import pytest

from layoutverify.adapters import ptx
from layoutverify.adapters.ptx import sparse
from layoutverify.core.compare import compare

# fragment -> (registers, i with row groupID + 8, i in the second span, span width W, second-span offset)
ISA_A = {
    # §9.7.14.6.2.1: row = groupID for a0 and a1, groupID + 8 for a2 and a3; firstcol = tig * 4
    "mma.sp.m16n8k16.f16.A": (4, {2, 3}, set(), 4, 0),
    # §9.7.14.6.2.2: row groupID for 0 <= i < 2 || 4 <= i < 6; firstcol + 16 for i >= 4
    "mma.sp.m16n8k32.f16.A": (8, {2, 3, 6, 7}, {4, 5, 6, 7}, 4, 16),
    # §9.7.14.6.2.3: groupID for a0 and a2; firstcol tig * 2, + 8 for a2 and a3
    "mma.sp.m16n8k16.tf32.A": (4, {1, 3}, {2, 3}, 2, 8),
    # §9.7.14.6.2.4: groupID for a0, + 8 for a1; firstcol = tig * 2
    "mma.sp.m16n8k8.tf32.A": (2, {1}, set(), 2, 0),
    # §9.7.14.6.2.5: groupID for 0 <= i < 4; firstcol = tig * 8
    "mma.sp.m16n8k32.s8.A": (8, {4, 5, 6, 7}, set(), 8, 0),
    # §9.7.14.6.2.6: groupID for 0 <= i < 4 || 8 <= i < 12; firstcol + 32 for i >= 8
    "mma.sp.m16n8k64.e4m3.A": (16, {4, 5, 6, 7, 12, 13, 14, 15}, set(range(8, 16)), 8, 32),
    # §9.7.14.6.2.7: groupID for 0 <= i < 8; firstcol = tig * 16
    "mma.sp.m16n8k64.s4.A": (16, set(range(8, 16)), set(), 16, 0),
    # §9.7.14.6.2.8: groupID for 0 <= i < 8 || 16 <= i < 24; firstcol + 64 for i >= 16
    "mma.sp.m16n8k128.e2m1.A": (32, set(range(8, 16)) | set(range(24, 32)), set(range(16, 32)), 16, 64),
}


def _coords(layout):
    """{(register, lane, warp): (row, col)}"""
    hw = layout.hardware_indices()
    return {tuple(int(x) for x in h[:3]): tuple(int(v) for v in c) for h, c in zip(hw, layout.table())}


@pytest.mark.parametrize("name", sorted(ISA_A))
def test_packed_a_follows_the_isa_text(name):
    regs, plus8, second, width, offset = ISA_A[name]
    frag = ptx.fragment(name)
    lay = frag.layout()
    assert frag.registers == regs
    m, kp = lay.out_sizes
    assert lay.is_bijective(), "every packed element held exactly once"
    cells = _coords(lay)
    for lane in range(32):
        gid, tig = lane >> 2, lane % 4
        seen: dict = {}
        for i in range(regs):
            row, col = cells[(i, lane, 0)]
            assert row == gid + (8 if i in plus8 else 0), (name, lane, i)
            firstcol = tig * width + (offset if i in second else 0)
            lo = firstcol // 2                      # the span's first packed column (half its non-zeros)
            assert lo <= col < lo + width // 2, (name, lane, i, col)
            key = (row, firstcol)
            assert col - lo == seen.get(key, 0), "the span's non-zeros in order a_i, a_i+1, ..."
            seen[key] = seen.get(key, 0) + 1


def test_every_sparse_a_is_transcribed_twice():
    covered = {(n.split(".")[2], "A") for n in ISA_A}
    assert {(k[0], k[1]) for k in sparse.MMA_SP if k[1] == "A"} == covered


@pytest.mark.parametrize("sp,dense", [
    ("mma.sp.m16n8k16.f16.B", "mma.m16n8k16.f16.B"), ("mma.sp.m16n8k8.tf32.B", "mma.m16n8k8.tf32.B"),
    ("mma.sp.m16n8k32.s8.B", "mma.m16n8k32.s8.B"), ("mma.sp.m16n8k64.s4.B", "mma.m16n8k64.s4.B"),
    ("mma.sp.m16n8k16.f32.C", "mma.m16n8k16.f32.C"), ("mma.sp.m16n8k64.s32.C", "mma.m16n8k64.s32.C"),
])
def test_b_and_c_are_the_dense_ones(sp, dense):
    """"Matrix fragments for multiplicand B and accumulators C and D are the same as in case of ..." """
    assert compare(ptx.parse(sp), ptx.parse(dense)).verdict == "equal"


def test_packed_a_of_k16_is_the_dense_k8_a():
    """Read as a packed 16x8 matrix, the .f16 m16n8k16 sparse A is the dense m16n8k8 A (what the
    NVIDIA forum thread on mma.sp fragments found by experiment)."""
    assert compare(ptx.parse("mma.sp.m16n8k16.f16.A"), ptx.parse("mma.m16n8k8.f16.A")).verdict == "equal"


# ---------------------------------------------------------------------------------------------
# B fragments the ISA gives only as figures
# ---------------------------------------------------------------------------------------------
#: figure-only B -> (element bits, the dense B of the same type and half the K, its K)
FIGURE_B = {
    "mma.sp.m16n8k32.bf16.B": (16, "mma.m16n8k16.bf16.B", 16),
    "mma.sp.m16n8k16.tf32.B": (32, "mma.m16n8k8.tf32.B", 8),
    "mma.sp.m16n8k64.e4m3.B": (8, "mma.m16n8k32.e4m3.B", 32),
    "mma.sp.m16n8k128.e2m1.B": (4, "mma.m16n8k64.e2m1.B", 64),
}


@pytest.mark.parametrize("name", sorted(FIGURE_B))
def test_figure_b_is_the_dense_half_k_b_twice(name):
    """Each figure shows the dense B of half the K (itself checked against the ISA's formulas in
    test_ptx.py) in the first half of the registers, and the same again K/2 rows further down."""
    _, dense_name, half = FIGURE_B[name]
    ours, dense = _coords(ptx.parse(name)), _coords(ptx.parse(dense_name))
    regs = ptx.fragment(dense_name).registers
    assert ptx.fragment(name).registers == 2 * regs
    for (r, lane, w), (row, col) in dense.items():
        assert ours[(r, lane, w)] == (row, col)
        assert ours[(r + regs, lane, w)] == (row + half, col)


@pytest.mark.parametrize("name", sorted(FIGURE_B))
def test_figure_b_registers_hold_the_same_words(name):
    """All four figures put bytes [4 * tig + 16 r, + 4) of column groupID in register r of a thread."""
    bits = FIGURE_B[name][0]
    per_reg = 32 // bits
    for (i, lane, _), (row, col) in _coords(ptx.parse(name)).items():
        assert col == lane >> 2
        first = 4 * (lane % 4) + 16 * (i // per_reg)
        assert first <= row * bits // 8 < first + 4, (name, i, lane, row)


def _cutlass_sm120_sparse_blayout(shape):
    try:
        import cutlass_library
    except ImportError:
        pytest.skip("nvidia-cutlass not installed")
    p = Path(cutlass_library.__file__).parent / "source/include/cute/atom/mma_traits_sm120_sparse.hpp"
    if not p.exists():
        pytest.skip("no SM120 sparse traits in this nvidia-cutlass")
    text = p.read_text()
    i = text.index(f"Shape_MNK = Shape<_16, _8, _{shape}>")
    m = re.search(r"using BLayout\s*=\s*(Layout<.*?>)\s*;", text[i:], re.S)
    from layoutverify.adapters.cute.interp import evaluate_text
    return evaluate_text(" ".join(m.group(1).split()))


@pytest.mark.parametrize("k,name", [(64, "mma.sp.m16n8k64.e4m3.B"), (128, "mma.sp.m16n8k128.e2m1.B")])
def test_figure_b_matches_cutlass_sm120_sparse(k, name):
    """CUTLASS's ``SM120_SPARSE_16x8x64_TN`` / ``SM120_SPARSE_16x8x128_TN_VS`` ``BLayout``:
    (thread, value) -> (N8, K) column-major; value v is element b_v of the thread."""
    tv = _cutlass_sm120_sparse_blayout(k)
    ours = _coords(ptx.parse(name))
    n_val = tv.mode(1).size()
    assert (tv.mode(0).size(), n_val) == (32, ptx.fragment(name).registers)
    for lane in range(32):
        for v in range(n_val):
            idx = int(tv(lane + 32 * v))
            assert ours[(v, lane, 0)] == (idx // 8, idx % 8), (lane, v)


# ---------------------------------------------------------------------------------------------
# wgmma.sp: CUTLASS's sparse RS A layouts (dense coordinates) packed to K/2 = our packed A
# ---------------------------------------------------------------------------------------------
def _cutlass_gmma_header() -> str | None:
    try:
        import cutlass_library
    except ImportError:
        return None
    p = Path(cutlass_library.__file__).parent / "source/include/cute/atom/mma_traits_sm90_gmma.hpp"
    return p.read_text() if p.exists() else None


def _cutlass_alayout(header: str, name: str):
    m = re.search(rf"using {name}\s*=\s*(Layout<.*?>>>);", header, re.S)
    assert m, name
    from layoutverify.adapters.cute.interp import evaluate_text
    return evaluate_text(" ".join(m.group(1).split()))


@pytest.mark.parametrize("alayout,k,dtype,span", [("ALayout_64x32", 32, "f16", 4), ("ALayout_64x64", 64, "s8", 8),
                                                  ("ALayout_64x16", 16, "tf32", 2)])
def test_wgmma_sp_a_is_cutlass_sparse_rs_layout_packed(alayout, k, dtype, span):
    """CUTLASS's SM90 sparse RS atoms (``mma_traits_sm90_gmma_sparse.hpp``) use ``ALayout_64xK`` in
    dense coordinates: each thread's values come in runs of ``span`` dense columns holding
    ``span / 2`` non-zeros. Packing (column ``c`` -> ``c // span * span / 2 + rank in run``) must give
    exactly the elements our packed A gives each thread."""
    header = _cutlass_gmma_header()
    if header is None:
        pytest.skip("nvidia-cutlass headers not installed")
    tv = _cutlass_alayout(header, alayout)
    ours = _coords(ptx.parse(f"wgmma.sp.m64n64k{k}.{dtype}.A"))
    n_thr, n_val = tv.mode(0).size(), tv.mode(1).size()
    assert (n_thr, n_val // 2) == (128, ptx.fragment(f"wgmma.sp.m64n64k{k}.{dtype}.A").registers)
    for t in range(n_thr):
        idx = [tv(t + n_thr * v) for v in range(n_val)]          # CuTe's (thread, value) -> M x K col-major
        dense = sorted({(int(i) % 64, int(i) // 64) for i in idx})
        packed = set()
        for (row, col) in dense:
            run = col // span
            packed.add((row, run * span // 2 + (col % span) % (span // 2)))
        mine = {ours[(r, t % 32, t // 32)] for r in range(n_val // 2)}
        assert packed == mine, (t, sorted(packed), sorted(mine))
