"""CuTe against Triton: the same MMA accumulators / operands and the same swizzled shared layouts.

Triton's side comes from the installed Triton itself (``layoutverify.adapters.triton.native``: Triton's parser
and ``toLinearLayout`` in a subprocess) and from ``layoutverify.adapters.triton.parse``; CuTe's from our CuTe
adapter (whose algebra and atoms are checked against CuTe C++ in ``test_cute_algebra_cpp.py``).

**MMA.** ``#ttg.nvidia_mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>`` on a
32x32 accumulator is CuTe's ``SM80_16x8x16_F32F16F16F32_TN`` tiled over 2x2 warps with a 32x32
tile, **provided the warps are numbered the same way**: Triton puts warp 1 next along N (its
warp bases are ``[[0, 8], [16, 0]]``), CuTe's ``make_tiled_mma(atom, Layout<Shape<_2,_2,_1>>)``
is column-major and puts warp 1 next along M. So

* ``tiled_mma(..., (2,2,1), C, tile=(32,32))`` is ``not_equal``: warp 1, lane 0, register 0 holds
  (16, 0) in CuTe and (0, 8) in Triton;
* ``tiled_mma(..., (2,2,1):(2,1,0), C, tile=(32,32))`` (row-major warps) is ``equal``: not merely
  up to register order, because CuTe's value order (the atom's ``(2,2)`` values, then the N
  repeat) is Triton's register order (bases ``[0,1], [8,0], [0,16]``).

With repeats along both M and N (e.g. 2x2 warps on 64x64) the two are only
``equal_up_to_register_order``: CuTe's values run ``(FrgV, RestM, RestN)``, Triton's registers
repeat along N before M.

The dot operands (``#ttg.dot_op<{opIdx = 0|1, parent = ..., kWidth = 2}>``) are CuTe's tiled A
and B (B transposed to K x N). With K = 32 (two k-steps of the atom), B is only
``equal_up_to_register_order``: CuTe numbers the N repeat before the K repeat, Triton the K repeat
first.

**Shared memory.** ``#ttg.nvmma_shared<{swizzlingByteWidth = W, transposed = T, elementBitWidth = 16}>``
against CuTe's GMMA layout atoms tiled to the same shape:

* ``transposed = false`` (K-major: dim1 contiguous) equals
  ``tile_to_shape(GMMA::Layout_K_SW{W}_Atom<half_t>, (M,K))``;
* ``transposed = true`` (MN-major) equals ``tile_to_shape(GMMA::Layout_MN_SW{W}_Atom<half_t>,
  (M,K), Step<_2,_1>)``, the order CUTLASS's SM90 collective builders use for MN-major operands
  (repeat the atom along K first). CuTe's default column-major ``tile_to_shape`` repeats it along M
  first, which differs whenever the atom is shorter than M: the witness is the first offset of the
  second atom.
"""
from __future__ import annotations

import pytest

from layoutverify.adapters.cute import parse as cute

triton_adapter = pytest.importorskip("layoutverify.adapters.triton")
compare = pytest.importorskip("layoutverify.core.compare").compare
pytest.importorskip("triton")

MMA = "#ttg.nvidia_mma<{{versionMajor = 2, versionMinor = 0, warpsPerCTA = [{wm}, {wn}], instrShape = [16, 8]}}>"
ATOM = "SM80_16x8x16_F32F16F16F32_TN"


def nvmma(sw: int, transposed: bool) -> str:
    return (f"#ttg.nvmma_shared<{{swizzlingByteWidth = {sw}, transposed = {'true' if transposed else 'false'}, "
            f"elementBitWidth = 16}}>")


MMA_CASES = [
    # (warpsPerCTA, shape)
    ((2, 2), (32, 32)),
    ((2, 2), (64, 64)),
    ((4, 1), (64, 32)),
    ((1, 4), (32, 64)),
    ((2, 4), (64, 128)),
]
DOT_CASES = [
    # (opIdx, shape, CuTe tile (M,N,K), expected verdict)
    (0, (32, 16), (32, 32, 16), "equal"),
    (1, (16, 32), (32, 32, 16), "equal"),
    (0, (32, 32), (32, 32, 32), "equal"),
    (1, (32, 32), (32, 32, 32), "equal_up_to_register_order"),
]
SHARED_CASES = [(sw, tr, shape) for sw in (32, 64, 128) for tr in (False, True) for shape in ((64, 64), (128, 64))]


@pytest.fixture(scope="module")
def native():
    """Triton's own layouts for every Triton text used here (one subprocess)."""
    cases = [(MMA.format(wm=w[0], wn=w[1]), shape) for w, shape in MMA_CASES]
    cases += [(f"#ttg.dot_op<{{opIdx = {op}, parent = {MMA.format(wm=2, wn=2)}, kWidth = 2}}>", shape)
              for op, shape, _, _ in DOT_CASES]
    cases += [(nvmma(sw, tr), shape) for sw, tr, shape in SHARED_CASES]
    out = triton_adapter.native_many(cases)
    return {(t, tuple(s)): r for (t, s), r in zip(cases, out)}


def _triton(native, text, shape):
    ours = triton_adapter.parse(text, shape=shape)
    theirs = native[(text, tuple(shape))]
    if isinstance(theirs, Exception):
        pytest.fail(f"Triton rejected {text}: {theirs}")
    assert compare(ours, theirs).verdict == "equal", "layoutverify.adapters.triton disagrees with the installed Triton"
    return theirs


def _tiled(atom_layout: str, op: str, tile) -> str:
    return f"tiled_mma({ATOM}, {atom_layout}, {op}, tile=({','.join(map(str, tile))}))"


def test_mma_v2_2x2_on_32x32(native):
    t = _triton(native, MMA.format(wm=2, wn=2), (32, 32))
    col_major = cute(_tiled("(2,2,1)", "C", (32, 32)))
    res = compare(col_major, t)
    assert res.verdict == "not_equal"
    w = res.witness
    hw = {k: [v] for k, v in w["hardware"].items()}
    # a real difference at that location (re-evaluated here), and the one the layouts' warp orders
    # predict: warp 1 holds rows 16-31 in CuTe's column-major atom layout, columns 8-15 in Triton's
    assert [int(x) for x in col_major.apply(hw)[0]] == w["a"] and [int(x) for x in t.apply(hw)[0]] == w["b"]
    assert w["hardware"]["warp"] == 1 and w["a"][0] >= 16 and w["b"][0] < 16 and w["b"][1] >= 8
    row_major = cute(_tiled("(2,2,1):(2,1,0)", "C", (32, 32)))
    assert compare(row_major, t).verdict == "equal"
    assert row_major.f2_bases()["register"] == t.f2_bases()["register"]


@pytest.mark.parametrize("warps,shape", MMA_CASES)
def test_mma_v2_accumulators(native, warps, shape):
    wm, wn = warps
    t = _triton(native, MMA.format(wm=wm, wn=wn), shape)
    c = cute(_tiled(f"({wm},{wn},1):({wn},1,0)", "C", shape))
    rest_m = shape[0] // (16 * wm)
    # CuTe numbers the M repeats before the N repeats, Triton the N repeats first
    assert compare(c, t).verdict == ("equal" if rest_m == 1 else "equal_up_to_register_order")


@pytest.mark.parametrize("op,shape,tile,verdict", DOT_CASES)
def test_dot_operands(native, op, shape, tile, verdict):
    t = _triton(native, f"#ttg.dot_op<{{opIdx = {op}, parent = {MMA.format(wm=2, wn=2)}, kWidth = 2}}>", shape)
    c = cute(_tiled("(2,2,1):(2,1,0)", "AB"[op], tile))
    assert c.shape == t.shape
    assert compare(c, t).verdict == verdict


@pytest.mark.parametrize("sw,transposed,shape", SHARED_CASES)
def test_nvmma_shared_vs_gmma_atoms(native, sw, transposed, shape):
    t = _triton(native, nvmma(sw, transposed), shape)
    m, k = shape
    if not transposed:
        c = cute(f"tile_to_shape(GMMA::Layout_K_SW{sw}_Atom<half_t>, ({m},{k}))")
        assert compare(c, t).verdict == "equal"
        return
    c = cute(f"tile_to_shape(GMMA::Layout_MN_SW{sw}_Atom<half_t>, ({m},{k}), Step<_2,_1>)")
    assert compare(c, t).verdict == "equal"
    default = cute(f"tile_to_shape(GMMA::Layout_MN_SW{sw}_Atom<half_t>, ({m},{k}))")
    atom_rows = sw // 2              # the MN atom spans sw bytes = sw/2 half_t along M
    res = compare(default, t)
    if atom_rows >= m:
        assert res.verdict == "equal"      # one atom covers M: the repeat order does not matter
    else:
        assert res.verdict == "not_equal"
        # the first offset of the second atom: CuTe goes down M, Triton along K
        off = res.witness["hardware"]["offset"]
        assert off == atom_rows * 8
        assert res.witness["a"] == [atom_rows, 0] and res.witness["b"] == [0, 8]


def test_swizzle_is_what_cute_says():
    """The 128-byte swizzle on 16-bit elements: element offset o holds row o // 64 of the 8x64
    K-major atom, column (o % 64) with bits 3-5 XORed with the row (CuTe's Sw<3,4,3> on bytes)."""
    lay = cute("GMMA::Layout_K_SW128_Atom<half_t>")
    t = lay.table()
    import numpy as np
    o = np.arange(512)
    row = o // 64
    assert np.array_equal(t[:, 0], row)
    assert np.array_equal(t[:, 1], (o % 64) ^ (row << 3))
