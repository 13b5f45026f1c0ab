"""Blackwell tensor-memory encodings against the installed Triton, and the TMEM memory layout
composed with the PTX ``tcgen05.ld`` fragments against Triton's TMEM register layouts.

* ``#ttng.tensor_memory_encoding`` / ``#ttng.tensor_memory_scales_encoding``: a random sweep
  against ``GluonOpBuilder.to_linear_layout`` (the oracle answers ``row``/``col`` bases; Gluon's
  object drops ``block``, which is checked against the formula instead).
* End to end: a warp ``w`` of a warp group reaches TMEM lanes ``32 w ..`` (PTX ISA
  "tcgen05 Memory Layout"); the ``tcgen05.ld`` fragment (adapters/ptx/tcgen05.py, from the ISA's
  figures) says which (TMEM lane, column) register ``r`` of lane ``l`` reads; our TMEM layout
  says which tensor element that cell holds. Their composition must be the register layout Triton
  itself picks for the load (``compute_tmem_reg_layout``).
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from layoutverify.adapters import ptx
from layoutverify.adapters import triton as T
from layoutverify.core.compare import compare
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout

from triton_oracle import have_triton

needs_triton = pytest.mark.skipif(not have_triton(), reason="needs the installed Triton (with Gluon) as the oracle")


def _tmem_text(m, n, col_stride, cga=(), two_ctas=False, shape=(128, 128), elem="f32", fp4=False):
    extra = ", fp4Padded = true" if fp4 else ""
    if cga:
        extra += ", CGALayout = [" + ", ".join(f"[{a}, {b}]" for a, b in cga) + "]"
    if two_ctas:
        extra += ", twoCTAs = true"
    return (f"!ttg.memdesc<{shape[0]}x{shape[1]}x{elem}, #ttng.tensor_memory_encoding<blockM = {m}, blockN = {n}, "
            f"colStride = {col_stride}{extra}>, #ttng.tensor_memory, mutable>")


def _cases(seed=7, count=120):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        m = rng.choice([64, 128])
        n = rng.choice([8, 16, 32, 64, 128, 256])
        stride = rng.choice([1, 1, 2, 4])
        elem = {1: "f32", 2: "f16", 4: "i8"}[stride]
        cga = rng.choice([(), (), ((1, 0),), ((0, 1),), ((1, 0), (0, 1)), ((0, 0),)])
        two = bool(cga) and cga[0] == (1, 0) and rng.random() < 0.5
        split = [1, 1]
        for b in cga:
            for d in (0, 1):
                split[d] *= 2 if b[d] else 1
        shape = (m * split[0] * rng.choice([1, 2, 4]), n * split[1] * rng.choice([1, 2]))
        out.append(_tmem_text(m, n, stride, cga, two, shape, elem))
    for m, n, shape in ((128, 64, (128, 64)), (128, 32, (256, 128)), (64, 64, (128, 64)), (64, 16, (64, 64))):
        out.append(_tmem_text(m, n, 1, shape=shape, elem="i8", fp4=True))
    for shape in ((128, 4), (128, 8), (256, 16), (64, 4), (32, 4), (128, 32)):
        out.append(f"!ttg.memdesc<{shape[0]}x{shape[1]}xi8, #ttng.tensor_memory_scales_encoding<>, "
                   f"#ttng.tensor_memory, mutable>")
    return out


@needs_triton
def test_tmem_encodings_match_triton():
    cases = _cases()
    theirs = T.native_many([(t, None) for t in cases], lenient=True)
    agreed = 0
    for text, th in zip(cases, theirs):
        try:
            ours = T.parse(text)
        except LayoutError as e:
            assert isinstance(th, Exception), (text, str(e))
            continue
        assert not isinstance(th, Exception), (text, str(th))
        ob = ours.f2_bases()
        assert {k: ob[k] for k in ("row", "col")} == th.f2_bases() and ours.out_dims == th.out_dims, text
        agreed += 1
    assert agreed >= 100


def test_tmem_block_bases_follow_the_cga_layout():
    """``tile *= cgaLayout``: CTA b holds the tile shifted by b's CGA basis times the per-CTA tile."""
    lay = T.parse(_tmem_text(128, 64, 1, ((1, 0),), False, (256, 64)))
    assert lay.f2_bases()["block"] == [(128, 0)]
    lay = T.parse(_tmem_text(128, 64, 1, ((0, 1), (0, 0)), False, (128, 128)))
    assert lay.f2_bases()["block"] == [(0, 64), (0, 0)]


def test_tmem_packed_128_rows_is_the_identity():
    """blockM = 128, colStride = 1: TMEM lane r holds tensor row r, column c holds column c."""
    lay = T.parse(_tmem_text(128, 128, 1, shape=(128, 128)))
    hw = lay.hardware_indices()
    assert (lay.table() == hw[:, :2]).all()


def test_tmem_unpacked_leaves_every_other_column_undefined():
    """colStride = 2: an element every second 32-bit column; odd columns repeat (zero basis)."""
    lay = T.parse(_tmem_text(128, 64, 2, shape=(128, 64), elem="f16"))
    assert lay.f2_bases()["col"][0] == (0, 0)


def test_tmem_bad_parameters():
    for text, words in [
        (_tmem_text(96, 64, 1), ["blockM must be 64 or 128"]),
        (_tmem_text(128, 1024, 1), ["blockN"]),
        (_tmem_text(128, 64, 3), ["colStride must be 1, 2, or 4"]),
        (_tmem_text(128, 64, 2, elem="i8", fp4=True), ["fp4Padded", "colStride 1"]),
        (_tmem_text(128, 64, 1).replace("colStride = 1", "unpacked = true"), ["unpacked", "colStride = 2"]),
        (_tmem_text(128, 64, 2, elem="f32"), ["bitwidth * colStride"]),
        (_tmem_text(128, 64, 1, ((0, 1),), True, (128, 128)), ["twoCTAs", "[1, 0]"]),
        (_tmem_text(128, 64, 1, shape=(64, 64)), ["at least 128x64"]),
        ("!ttg.memdesc<128x64xf32, #ttng.tensor_memory_encoding<blockM = 128, blockN = 64, colStride = 1>, "
         "#ttg.shared_memory>", ["TensorMemorySpace"]),
    ]:
        with pytest.raises(LayoutError) as e:
            T.parse(text)
        for w in words:
            assert w in str(e.value), (text, str(e.value))


# ---------------------------------------------------------------------------------------------
# tcgen05.ld fragment o TMEM layout == Triton's TMEM register layout
# ---------------------------------------------------------------------------------------------
_FRAGMENT_CASES = [("32x32b", 128, 128, 16), ("32x32b", 128, 128, 64), ("32x32b", 128, 128, 128),
                   ("16x64b", 64, 64, 32), ("16x128b", 64, 64, 32), ("16x256b", 64, 64, 64)]
_TRITON: dict = {}


def _triton_reg_layout(variant, m, n, block_m):
    """Triton's TMEM register layout as a Layout (``None`` where Triton has none), every case of
    this module asked at once in one subprocess (``triton_oracle.tmem_reg_layouts``)."""
    if not _TRITON:
        from triton_oracle import tmem_reg_layouts
        _TRITON.update(tmem_reg_layouts([(v, mm, nn, bm) for v, mm, bm, nn in _FRAGMENT_CASES]))
    bases = _TRITON[(variant, m, n, block_m)]
    return None if bases is None else Layout.from_bases(bases, [m, n])


def _composed(variant, m, n, block_m, registers):
    """(register, lane, warp) -> tensor element through the tcgen05.ld fragment and our TMEM layout."""
    per, lanes = {"32x32b": (1, 32), "16x64b": (1, 16), "16x128b": (2, 16), "16x256b": (4, 16)}[variant][0], \
        {"32x32b": 32}.get(variant, 16)
    frag = ptx.parse(f"tcgen05.ld.{variant}.x{registers // per}")
    tmem = T.parse(_tmem_text(block_m, n, 1, shape=(m, n)))
    hw = np.array([(r, l, w) for w in range(4) for l in range(32) for r in range(registers)])
    fr = frag.apply({"register": hw[:, 0], "lane": hw[:, 1], "warp": np.zeros(len(hw), dtype=np.int64),
                     "block": np.zeros(len(hw), dtype=np.int64)})
    row = 32 * hw[:, 2] + fr[:, 0]
    el = tmem.apply({"row": row, "col": fr[:, 1], "block": np.zeros(len(hw), dtype=np.int64)})
    table = np.concatenate([hw, np.zeros((len(hw), 1), dtype=np.int64)], axis=1)
    return Layout.from_table([("register", registers), ("lane", 32), ("warp", 4), ("block", 1)],
                             [("dim0", m), ("dim1", n)], el, name=f"tcgen05.ld.{variant} o TMEM") if table.size else None


@needs_triton
@pytest.mark.parametrize("variant,m,block_m,n", _FRAGMENT_CASES)
def test_tcgen05_fragment_composed_with_tmem_is_tritons_register_layout(variant, m, block_m, n):
    theirs = _triton_reg_layout(variant, m, n, block_m)
    if theirs is None:
        pytest.skip(f"Triton has no {variant} layout for {m}x{n}")
    registers = theirs.in_size("register")
    ours = _composed(variant, m, n, block_m, registers)
    v = compare(ours, theirs).verdict
    assert v in ("equal", "equal_up_to_register_order"), (variant, m, n, v)


def test_tensor_memory_is_a_memory_layout_with_row_col_holders():
    """TMEM is memory (rows = lanes, columns), not threads: its kind is ``memory``, the grid names
    each holder ``row,col`` (and each such location maps back to the element), and comparing it
    with a register layout says the kinds differ."""
    from layoutverify.adapters import parse_spec
    from layoutverify.core.compare import compare
    from layoutverify.core.render import holder_labels
    lay = parse_spec("triton:#ttng.tensor_memory_encoding<blockM = 128, blockN = 32, colStride = 1>",
                     shape=(128, 32))
    assert lay.kind == "memory" and {"row", "col"} <= set(lay.in_names)
    labels = holder_labels(lay)
    for flat, holders in enumerate(labels):
        assert holders, f"element {flat} has no holder"
        for h in holders:
            row, col = (int(x) for x in h.split(","))
            hw = {n: 0 for n in lay.in_names}
            hw.update(row=row, col=col)
            coord = lay.apply({n: [v] for n, v in hw.items()})[0]
            assert int(coord[0]) * 32 + int(coord[1]) == flat
    res = compare(lay, parse_spec("ptx:mma.m16n8k16.f32.C"))
    assert res.verdict == "different_tensors" and res.method == "kinds"
