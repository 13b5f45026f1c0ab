"""IREE nested layouts: parser, IREE's own distribution as the oracle, MFMA fragments vs Triton.

* MFMA operand/accumulator layouts as IREE builds them (facts from IREE's ``IREEGPUAttrs.cpp``,
  ``getSingleSubgroupLayout``: MFMA_F32_16x16x16_F16 and MFMA_F32_32x32x8_F16) must equal, or equal
  up to register order, Triton's ``#ttg.amd_mfma`` accumulator and ``#ttg.dot_op`` operand
  layouts for the same instruction: through our Triton adapter and through the installed Triton
  itself (``layoutverify.adapters.triton.native``), and the AMD ISA adapter where it is present.
* Differential sweep: random nested layouts (ranks 1-3, non-power-of-two tiles, subgroups, zero
  strides) distributed by IREE's own ``iree-opt`` (``transform.iree.test_gpu_vector_distribution``)
  and evaluated thread by thread must equal our canonical layout, location by location.
* ``iree-base-compiler``'s own attribute parser round-trips our text (IREE's printed form is what
  we print) and rejects what we reject.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

import layoutverify.adapters.iree as I
from layoutverify.core.compare import compare
from layoutverify.core.errors import LayoutError, ParseError, SizeLimitError, UnsupportedError

try:
    import layoutverify.adapters.triton as TR
except ImportError:  # pragma: no cover
    TR = None

#: IREE getSingleSubgroupLayout facts: (outer, thread, tstrides, element) per operand
MFMA = {
    "MFMA_F32_16x16x16_F16": {
        "mnk": (16, 16, 16),
        "lhs": ((1, 1), (16, 4), (1, 16), (1, 4)),
        "rhs": ((1, 1), (4, 16), (16, 1), (4, 1)),
        "acc": ((1, 1), (4, 16), (16, 1), (4, 1)),
    },
    "MFMA_F32_32x32x8_F16": {
        "mnk": (32, 32, 8),
        "lhs": ((1, 1), (32, 2), (1, 32), (1, 4)),
        "rhs": ((1, 1), (2, 32), (32, 1), (4, 1)),
        "acc": ((4, 1), (2, 32), (32, 1), (4, 1)),
    },
}


def iree_text(name, operand):
    outer, thread, tstrides, element = MFMA[name][operand]
    return str(I.nested_from_mma(outer, thread, tstrides, element))


def triton_text(name, operand):
    m, n, k = MFMA[name]["mnk"]
    mfma = (f"#ttg.amd_mfma<{{version = 3, warpsPerCTA = [1, 1], instrShape = [{m}, {n}, {k}], "
            f"isTransposed = false}}>")
    if operand == "acc":
        return mfma, [m, n]
    op_idx = 0 if operand == "lhs" else 1
    shape = [m, k] if operand == "lhs" else [k, n]
    return f"#ttg.dot_op<{{opIdx = {op_idx}, parent = {mfma}, kWidth = 4}}>", shape


CASES = [(n, op) for n in MFMA for op in ("lhs", "rhs", "acc")]


def test_mfma_layouts_have_the_instruction_shapes():
    for name, op in CASES:
        lay = I.parse(iree_text(name, op))
        m, n, k = MFMA[name]["mnk"]
        want = {"lhs": (m, k), "rhs": (k, n), "acc": (m, n)}[op]
        assert lay.out_sizes == want
        assert lay.in_size("lane") == 64 and lay.is_bijective()


@pytest.mark.parametrize("name,op", CASES)
def test_mfma_equals_triton_adapter(name, op):
    if TR is None:
        pytest.skip("layoutverify.adapters.triton is not available")
    text, shape = triton_text(name, op)
    try:
        tri = TR.parse(text, shape=shape)
    except UnsupportedError as e:  # pragma: no cover
        pytest.skip(f"layoutverify.adapters.triton cannot read {text}: {e}")
    r = compare(I.parse(iree_text(name, op)), tri)
    assert r.verdict in ("equal", "equal_up_to_register_order"), (r.verdict, r.witness)


def test_mfma_equals_installed_triton():
    """Against the installed Triton (``to_linear_layout`` of ``AMDMFMALayout``/``DotOperandLayout``)."""
    if TR is None:
        pytest.skip("layoutverify.adapters.triton is not available")
    pytest.importorskip("triton")
    cases = [triton_text(name, op) for name, op in CASES]
    answers = TR.native_many(cases)
    verdicts = {}
    for (name, op), ans in zip(CASES, answers):
        if isinstance(ans, Exception):
            pytest.skip(f"installed Triton could not build {name} {op}: {ans}")
        r = compare(I.parse(iree_text(name, op)), ans)
        verdicts[(name, op)] = r.verdict
        assert r.verdict in ("equal", "equal_up_to_register_order"), (name, op, r.verdict, r.witness)
    # the accumulators agree register for register (IREE's batch x outer x element order)
    assert verdicts[("MFMA_F32_16x16x16_F16", "acc")] == "equal"
    assert verdicts[("MFMA_F32_32x32x8_F16", "acc")] == "equal"


def test_mfma_equals_amd_isa_adapter():
    A = pytest.importorskip("layoutverify.adapters.amd")
    names = {"MFMA_F32_16x16x16_F16": "v_mfma_f32_16x16x16_f16", "MFMA_F32_32x32x8_F16": "v_mfma_f32_32x32x8_f16"}
    for name, op in CASES:
        spec = A.parse(f"{names[name]}.{ {'lhs': 'A', 'rhs': 'B', 'acc': 'C'}[op] }")
        r = compare(I.parse(iree_text(name, op)), spec)
        assert r.verdict in ("equal", "equal_up_to_register_order"), (name, op, r.verdict, r.witness)


def test_mfma_layouts_match_iree_distribution():
    pytest.importorskip("iree.compiler")
    lays = [I.nested_from_mma(*MFMA[name][op]) for name, op in CASES]
    for (name, op), lay, nat in zip(CASES, lays, I.native_many(lays)):
        assert np.array_equal(I.to_layout(lay).table(), nat.table()), (name, op)


def test_register_numbering_is_iree_simt_vector_order():
    """Register r is the row-major index into [batch..., outer..., element...] (IREE's
    getDistributedShape): for the 32x32x8 accumulator, r = outer * 4 + element and
    row = 8 * outer + 4 * (lane // 32) + element."""
    lay = I.parse(iree_text("MFMA_F32_32x32x8_F16", "acc"))
    hw = lay.hardware_indices()
    r, lane = hw[:, 0], hw[:, 1]
    t = lay.table()
    assert np.array_equal(t[:, 0], 8 * (r // 4) + 4 * (lane // 32) + r % 4)
    assert np.array_equal(t[:, 1], lane % 32)


# ----------------------------------------------------------------------------------------------
def random_layout(rng: random.Random) -> I.NestedLayout:
    rank = rng.choice([1, 2, 2, 3])
    while True:
        f = {k: [] for k in I.FIELDS}
        for _ in range(rank):
            f["subgroup_tile"].append(rng.choice([1, 1, 2, 3]))
            f["batch_tile"].append(rng.choice([1, 2, 3]))
            f["outer_tile"].append(rng.choice([1, 1, 2]))
            f["thread_tile"].append(rng.choice([1, 2, 3, 4, 8, 16]))
            f["element_tile"].append(rng.choice([1, 2, 3, 4]))
        for tiles, strides, limit in (("subgroup_tile", "subgroup_strides", 8), ("thread_tile", "thread_strides", 64)):
            order = list(range(rank))
            rng.shuffle(order)
            s = [0] * rank
            acc = 1
            for d in order:
                n = f[tiles][d]
                if n == 1:
                    continue
                acc *= rng.choice([1, 1, 1, 2])        # a gap: lanes/subgroups in between replicate
                s[d] = acc
                acc *= n
            f[strides] = s
            if acc > limit:
                break
        else:
            lay = I.NestedLayout(**{k: tuple(v) for k, v in f.items()})
            regs = int(np.prod(lay.distributed_shape))
            if regs <= 64:
                return lay


def test_sweep_against_iree_distribution():
    pytest.importorskip("iree.compiler")
    rng = random.Random(1234)
    lays = [random_layout(rng) for _ in range(150)]
    natives = I.native_many(lays)
    non_pow2 = multi_warp = replicated = 0
    for lay, nat in zip(lays, natives):
        ours = I.parse(str(lay))
        assert ours.in_dims == nat.in_dims, str(lay)
        assert np.array_equal(ours.table(), nat.table()), str(lay)
        non_pow2 += not ours.all_pow2
        multi_warp += ours.in_size("warp") > 1
        replicated += (ours.holder_counts() > 1).any()
    assert non_pow2 >= 50 and multi_warp >= 30 and replicated >= 30, (non_pow2, multi_warp, replicated)


def test_zero_stride_on_a_split_dim_is_partial_like_iree():
    """thread_tile 4 with stride 0: only thread-tile index 0 is ever held (IREE distributes it so)."""
    pytest.importorskip("iree.compiler")
    text = ("#iree_vector_ext.nested_layout<subgroup_tile = [1], batch_tile = [2], outer_tile = [1], "
            "thread_tile = [4], element_tile = [2], subgroup_strides = [0], thread_strides = [0]>")
    ours = I.parse(text)
    assert not ours.is_surjective()
    assert np.array_equal(ours.table(), I.native(text).table())


# ----------------------------------------------------------------------------------------------
# IREE's own attribute parser
def _iree_ir():
    ir = pytest.importorskip("iree.compiler.ir")
    return ir


def iree_print(ir, text):
    ctx = ir.Context()
    return str(ir.Attribute.parse(text, ctx))


def test_round_trip_through_iree_attribute_parser():
    ir = _iree_ir()
    rng = random.Random(77)
    for _ in range(100):
        lay = random_layout(rng)
        # write it loosely (odd spacing, line breaks, non-normalized strides of size-1 tiles)
        raw = I.NestedLayout(lay.subgroup_tile, lay.batch_tile, lay.outer_tile, lay.thread_tile, lay.element_tile,
                             tuple(s if n > 1 else rng.choice([0, 5]) for s, n in zip(lay.subgroup_strides, lay.subgroup_tile)),
                             tuple(s if n > 1 else rng.choice([0, 7]) for s, n in zip(lay.thread_strides, lay.thread_tile)))
        text = str(raw).replace(", ", rng.choice([", ", ",\n  ", " ,  "]))
        printed = iree_print(ir, text)
        assert printed == str(I.parse_attr(text)[0].normalized())     # IREE normalizes as we do
        assert np.array_equal(I.parse(printed).table(), I.parse(text).table())


@pytest.mark.parametrize("text", [
    "#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], batch_tile = [1], outer_tile = [1, 1], thread_tile = [16, 4], element_tile = [1, 4], subgroup_strides = [0, 0], thread_strides = [1, 16]>",
    "#iree_vector_ext.nested_layout<batch_tile = [1], subgroup_tile = [1], outer_tile = [1], thread_tile = [4], element_tile = [1], subgroup_strides = [0], thread_strides = [1]>",
    "#iree_vector_ext.nested_layout<subgroup_tile = [1], batch_tile = [1], outer_tile = [1], thread_tile = [4], element_tile = [1], subgroup_strides = [0]>",
    "#iree_vector_ext.nested_layout<subgroup_tile = [1], batch_tile = [1], outer_tile = [1], thread_tile = [4], element_tile = [1], subgroup_strides = [0], thread_strides = [1]",
    "#iree_vector_ext.nested_layout<subgroup_tile = [1], batch_tile = [1], outer_tile = [1], thread_tile = [4.5], element_tile = [1], subgroup_strides = [0], thread_strides = [1]>",
    "#iree_vector_ext.nested_layout<subgroup_tile = [1], batch_tile = [1], outer_tile = [1], thread_tile = [4], element_tile = [1], subgroup_strides = [0], thread_strides = [1], extra = [1]>",
    "#iree_vector_ext.nested_layout<subgroup_tile = 1, batch_tile = [1], outer_tile = [1], thread_tile = [4], element_tile = [1], subgroup_strides = [0], thread_strides = [1]>",
])
def test_iree_rejects_what_we_reject(text):
    ir = _iree_ir()
    with pytest.raises(ParseError):
        I.parse(text)
    with pytest.raises(Exception):
        iree_print(ir, text)


# ----------------------------------------------------------------------------------------------
# bad input and options
GOOD = ("#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], batch_tile = [1, 1], outer_tile = [1, 1], "
        "thread_tile = [16, 4], element_tile = [1, 4], subgroup_strides = [0, 0], thread_strides = [1, 16]>")


def test_bad_input():
    e = pytest.raises(ParseError, I.parse, GOOD.replace("thread_tile = [16, 4]", "thread_tile = [16, x]")).value
    assert e.token == "x" and e.column == GOOD.index("thread_tile") + len("thread_tile = [16, ") + 1
    e = pytest.raises(ParseError, I.parse, GOOD.replace("outer_tile", "outer_tiles")).value
    assert e.token == "outer_tiles"
    e = pytest.raises(ParseError, I.parse, GOOD + " trailing").value
    assert e.token == "trailing"
    with pytest.raises(ParseError):
        I.parse(GOOD.replace("#iree_vector_ext.nested_layout", "#iree_vector_ext.layout"))
    with pytest.raises(ParseError):
        I.parse(GOOD.replace("[16, 4]", "[16, -4]"))
    with pytest.raises(ParseError):
        I.parse(GOOD.replace("element_tile = [1, 4]", "element_tile = [0, 4]"))
    with pytest.raises(SizeLimitError):
        I.parse(GOOD.replace("[16, 4]", "[16, 1099511627776]"))
    with pytest.raises(LayoutError, match="overlap"):
        I.parse(GOOD.replace("thread_strides = [1, 16]", "thread_strides = [1, 1]"))
    with pytest.raises(LayoutError, match="does not match"):
        I.parse(GOOD, shape=(16, 32))
    with pytest.raises(LayoutError, match="does not match"):
        I.parse(GOOD + " : vector<16x32xf16>")
    assert I.parse(GOOD + " : vector<16x16xf16>", shape=(16, 16)).out_sizes == (16, 16)
    assert I.parse("#nested = " + GOOD).out_sizes == (16, 16)
    with pytest.raises(UnsupportedError):
        I.parse(GOOD.replace("[16, 4]", "[]").replace("[1, 1]", "[]").replace("[1, 4]", "[]")
                .replace("[0, 0]", "[]").replace("[1, 16]", "[]"))
    with pytest.raises(LayoutError, match="unknown IREE option"):
        I.parse(GOOD, num_warps=2)
    with pytest.raises(LayoutError):
        I.parse(GOOD, warp_size=0)
    with pytest.raises(ParseError):
        I.parse("")
    with pytest.raises(ParseError):
        I.parse(GOOD.replace("[16, 4]", "[" * 5000 + "]" * 5000))
    with pytest.raises(ParseError):
        I.parse(GOOD[:-1] + "\x00>")
    with pytest.raises(LayoutError):
        I.parse(GOOD.replace("[16, 4]", "[" + ", ".join(["1"] * 20) + "]"))


def test_warp_size_and_subgroup_options():
    # wave32: 16x4 threads with stride 16 in dim 1 reach 64 threads: two warps of 32
    lay = I.parse(GOOD, warp_size=32)
    assert (lay.in_size("lane"), lay.in_size("warp")) == (32, 2)
    assert lay.is_bijective()
    lay64 = I.parse(GOOD)
    assert np.array_equal(lay.flat_table(), lay64.flat_table())   # same thread numbering t = lane + 32 warp
    more = I.parse(GOOD, num_subgroups=4)
    assert more.in_size("warp") == 4 and (more.holder_counts() == 4).all()
    with pytest.raises(UnsupportedError):
        I.native(GOOD, warp_size=32)
