"""tcgen05.ld/st register fragments against three independent readings of the ISA's figures:
Triton 3.9's TMEM register layouts (``compute_tmem_reg_layout``), Tilus's tcgen05 ld/st layouts
(``tilus.ir.layout.cuda.tcgen05.ldst``) and CUTLASS's ``SM100_TMEM_LOAD_16dp32b*x`` instruction
strings (the ``immHalfSplitoff`` that the ``.16x32bx2`` fragment assumes)."""
import re
from pathlib import Path

import numpy as np
import pytest

from layoutverify.adapters import ptx
from layoutverify.adapters.ptx import tcgen05
from layoutverify.core.compare import compare


def _ours(shape: str, num: int):
    lay = ptx.parse(f"tcgen05.ld.{shape}.x{num}")
    hw = lay.hardware_indices()
    return {(int(h[0]), int(h[1])): tuple(int(v) for v in c) for h, c in zip(hw, lay.table())}


def test_every_shape_and_num_is_a_bijection_onto_its_tile():
    for name in tcgen05.names():
        lay = ptx.parse(name)
        assert lay.is_bijective(), name
        st = ptx.parse(name.replace(".ld.", ".st."))
        assert compare(lay, st).verdict == "equal"       # st moves the same cells the other way


def test_register_counts_follow_the_isa_table():
    # "A vector expression containing .num number of .b32 registers" for 32x32b/16x64b/16x32bx2;
    # twice / four times that for 16x128b / 16x256b (Table "tcgen05 .num and register counts")
    for shape, per in (("32x32b", 1), ("16x64b", 1), ("16x128b", 2), ("16x256b", 4), ("16x32bx2", 1)):
        for num in (1, 4, 32):
            assert ptx.fragment(f"tcgen05.ld.{shape}.x{num}").registers == per * num


# ---------------------------------------------------------------------------------------------
# Triton: TMEM register layouts for a block of M = 128 (32x32b) or M = 64 (16x*) rows, 4 warps
# ---------------------------------------------------------------------------------------------
_WARP0_CASES = [("32x32b", 128, 8), ("16x64b", 64, 8), ("16x64b", 64, 32), ("16x128b", 64, 8),
                ("16x128b", 64, 64), ("16x256b", 64, 16), ("16x256b", 64, 64)]
_TRITON: dict = {}


def _triton_layout(variant: str, m: int, n: int):
    """Triton's layout as ``{"register": bases, "lane": ..., ...}``, every case of this module
    asked at once in one subprocess (see ``triton_oracle.tmem_reg_layouts``)."""
    pytest.importorskip("triton")
    if not _TRITON:
        from triton_oracle import tmem_reg_layouts
        try:
            _TRITON.update(tmem_reg_layouts([(v, mm, nn, mm) for v, mm, nn in _WARP0_CASES]))
        except LookupError as e:
            pytest.skip(str(e))
    return _TRITON[(variant, m, n, m)]


def _apply(bases, index):
    out = np.zeros(2, dtype=np.int64)
    for k, b in enumerate(bases):
        if index >> k & 1:
            out ^= np.array(b)
    return out


@pytest.mark.parametrize("shape,m,n", _WARP0_CASES)
def test_warp0_of_tritons_tmem_layout_is_the_fragment(shape, m, n):
    """Warp 0 of Triton's layout reads rows 0..15 (or 0..31) = TMEM lanes of its own sub-partition,
    columns = TMEM columns (32-bit elements, colStride 1); its registers are .x{num} repetitions."""
    ll = _triton_layout(shape, m, n)
    regs = 1 << len(ll["register"])
    lanes, cols, per, _ = tcgen05.SHAPES[shape]
    num = regs // per
    ours = _ours(shape, num)
    assert len(ours) == regs * 32
    for (r, lane), cell in ours.items():
        got = _apply(ll["register"], r) ^ _apply(ll["lane"], lane)
        assert tuple(int(x) for x in got) == cell, (shape, r, lane)


# ---------------------------------------------------------------------------------------------
# Tilus: get_ldst_layout (one repetition, .x1)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", ["32x32b", "16x64b", "16x128b", "16x256b"])
def test_tilus_ldst_layout_is_the_fragment(shape):
    pytest.importorskip("tilus")
    from tilus.hidet.ir.primitives.cuda.tcgen05 import Tcgen05LoadStoreShapeKind as K
    from tilus.ir.layout.cuda.tcgen05.ldst import get_ldst_layout

    from layoutverify.adapters.tilus.oracle import register_to_layout
    kind = {"32x32b": K.R32x32B, "16x64b": K.R16x64B, "16x128b": K.R16x128B, "16x256b": K.R16x256B}[shape]
    theirs = register_to_layout(get_ldst_layout(kind))
    assert compare(ptx.parse(f"tcgen05.ld.{shape}.x1"), theirs).verdict == "equal"


# ---------------------------------------------------------------------------------------------
# CUTLASS: the .16x32bx2 loads put the second half immHalfSplitoff = num columns further
# ---------------------------------------------------------------------------------------------
def test_cutlass_16x32bx2_split_offset_is_num():
    try:
        import cutlass_library
    except ImportError:
        pytest.skip("nvidia-cutlass not installed")
    p = Path(cutlass_library.__file__).parent / "source/include/cute/arch/copy_sm100.hpp"
    if not p.exists():
        pytest.skip("CUTLASS SM100 copy header missing")
    found = re.findall(r'tcgen05\.ld\.sync\.aligned\.16x32bx2\.x(\d+)\.b32".*?"\[%\d+\],\s*(\d+);', p.read_text(), re.S)
    assert len(found) >= 5
    for num, split in found:
        assert int(split) == int(num)
        cells = _ours("16x32bx2", int(num))
        assert cells[(0, 16)] == (0, int(split))       # lane 16 starts the second half
