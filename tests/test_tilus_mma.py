"""Tilus's ``mma.sync`` fragment layouts, proven equal to the PTX ISA, Triton and CuTe fragments.

The Tilus layouts are tilus's own (``tilus.ir.instructions.cuda.mma_dot.AtomicMmaConfig``:
``la``/``lb``/``lc`` of every config), turned into canonical form by tilus's own mapping
(``layoutverify.adapters.tilus.oracle.register_to_layout``: ``get_global``). They are compared with

* the PTX ISA fragments: formulas written out here for m16n8k16 .f16, and ``layoutverify.adapters.ptx`` for
  every config;
* Triton's ``#ttg.nvidia_mma`` (v2, one warp) accumulator and ``#ttg.dot_op`` operands, through our
  Triton adapter and through the installed Triton; Tilus's ``vec_k`` variants are Triton's
  ``kWidth = vec_k * (4 bytes / element size)`` operands;
* CuTe's SM80 MMA atoms (``layoutverify.adapters.cute``).

Our own parser must reproduce the same layouts from tilus's printed form and from the expression
text written in tilus's source.
"""
from __future__ import annotations

import importlib

import numpy as np
import pytest

pytest.importorskip("tilus")
from tilus.ir.instructions.cuda.mma_dot import AtomicMmaConfig  # noqa: E402

import layoutverify.adapters.tilus as T  # noqa: E402
from layoutverify.core.compare import compare  # noqa: E402

nat = importlib.import_module("layoutverify.adapters.tilus.oracle")

#: config -> (tilus factory, PTX A, PTX B, PTX C, CuTe atom, Triton kWidth per vec_k or None,
#: the la/lb/lc expressions as written in tilus's source for vec_k = 1)
CONFIGS = {
    "m16n8k16_f16_f32": (AtomicMmaConfig.m16n8k16_f16_f32, "mma.m16n8k16.f16.A", "mma.m16n8k16.f16.B",
                         "mma.m16n8k16.f32.C", "SM80_16x8x16_F32F16F16F32_TN", 2,
                         ("column_local(2, 2).spatial(8, 4).local(1, 2)", "local(2, 1).column_spatial(4, 8).local(2, 1)",
                          "local(2, 1).spatial(8, 4).local(1, 2)")),
    "m16n8k16_f16_f16": (AtomicMmaConfig.m16n8k16_f16_f16, "mma.m16n8k16.f16.A", "mma.m16n8k16.f16.B",
                         "mma.m16n8k16.f16.C", "SM80_16x8x16_F16F16F16F16_TN", 2, None),
    "m16n8k16_bf16_f32": (AtomicMmaConfig.m16n8k16_bf16_f32, "mma.m16n8k16.bf16.A", "mma.m16n8k16.bf16.B",
                          "mma.m16n8k16.f32.C", "SM80_16x8x16_F32BF16BF16F32_TN", 2, None),
    "m8n8k16_i8_i32": (AtomicMmaConfig.m8n8k16_i8_i32, "mma.m8n8k16.s8.A", "mma.m8n8k16.s8.B",
                       "mma.m8n8k16.s32.C", "SM80_8x8x16_S32S8S8S32_TN", None,
                       ("spatial(8, 4).local(1, 4)", "column_spatial(4, 8).local(4, 1)", "spatial(8, 4).local(1, 2)")),
    "m16n8k16_i8_i32": (AtomicMmaConfig.m16n8k16_i8_i32, "mma.m16n8k16.s8.A", "mma.m16n8k16.s8.B",
                        "mma.m16n8k16.s32.C", "SM80_16x8x16_S32S8S8S32_TN", None,
                        ("column_local(2, 1).spatial(8, 4).local(1, 4)", "column_spatial(4, 8).local(4, 1)",
                         "local(2, 1).spatial(8, 4).local(1, 2)")),
    "m16n8k32_i8_i32": (AtomicMmaConfig.m16n8k32_i8_i32, "mma.m16n8k32.s8.A", "mma.m16n8k32.s8.B",
                        "mma.m16n8k32.s32.C", "SM80_16x8x32_S32S8S8S32_TN", 4,
                        ("column_local(2, 2).spatial(8, 4).local(1, 4)", "local(2, 1).column_spatial(4, 8).local(4, 1)",
                         "local(2, 1).spatial(8, 4).local(1, 2)")),
}
OPERANDS = ("A", "B", "C")
CASES = [(c, op) for c in CONFIGS for op in OPERANDS]
NV_MMA = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [1, 1], instrShape = [16, 8]}>"


def tilus_layout(config, op, vec_k=1):
    cfg = CONFIGS[config][0](vec_k)
    return {"A": cfg.la, "B": cfg.lb, "C": cfg.lc}[op]


def tilus_canonical(config, op, vec_k=1):
    return nat.register_to_layout(tilus_layout(config, op, vec_k))


def assert_same(a, b, allow_register_order=False):
    r = compare(a, b)
    ok = ("equal", "equal_up_to_register_order") if allow_register_order else ("equal",)
    assert r.verdict in ok, (r.verdict, r.witness)
    return r.verdict


# ----------------------------------------------------------------------------------------------
def ptx_m16n8k16_f16(op):
    """PTX ISA, mma.m16n8k16 .f16: groupID = lane >> 2, threadID_in_group = lane % 4."""
    lane = np.repeat(np.arange(32), {"A": 8, "B": 4, "C": 4}[op])
    i = np.tile(np.arange({"A": 8, "B": 4, "C": 4}[op]), 32)
    g, t = lane >> 2, lane % 4
    if op == "A":        # a0..a7: rows g / g+8, cols 2t+(i%2) (+8 for a4..a7)
        return g + 8 * ((i // 2) % 2), 2 * t + i % 2 + 8 * (i // 4)
    if op == "B":        # b0..b3: rows 2t+(i%2) (+8 for b2, b3), col g
        return 2 * t + i % 2 + 8 * (i // 2), g
    return g + 8 * (i // 2), 2 * t + i % 2     # c0..c3


@pytest.mark.parametrize("op", OPERANDS)
def test_m16n8k16_f16_against_ptx_isa_formulas(op):
    lay = tilus_canonical("m16n8k16_f16_f32", op)
    assert lay.in_size("lane") == 32 and lay.in_size("warp") == 1
    rows, cols = ptx_m16n8k16_f16(op)
    t = lay.table()      # register fastest, then lane
    assert np.array_equal(t[:, 0], rows) and np.array_equal(t[:, 1], cols)


@pytest.mark.parametrize("config,op", CASES)
def test_against_ptx_adapter(config, op):
    P = pytest.importorskip("layoutverify.adapters.ptx")
    name = CONFIGS[config][1 + OPERANDS.index(op)]
    assert_same(tilus_canonical(config, op), P.parse(name))


@pytest.mark.parametrize("config,op", CASES)
def test_against_cute_atoms(config, op):
    C = pytest.importorskip("layoutverify.adapters.cute")
    atom = CONFIGS[config][4]
    assert_same(tilus_canonical(config, op), C.parse(f"{atom}.{op}"), allow_register_order=True)


def triton_text(op, k_width):
    if op == "C":
        return NV_MMA
    return f"#ttg.dot_op<{{opIdx = {0 if op == 'A' else 1}, parent = {NV_MMA}, kWidth = {k_width}}}>"


TRITON_CASES = [(c, op, vk) for c in CONFIGS if CONFIGS[c][5] for op in OPERANDS for vk in (1, 2, 4)
                if not (op == "C" and vk > 1)]


@pytest.mark.parametrize("config,op,vec_k", TRITON_CASES)
def test_against_triton_adapter(config, op, vec_k):
    TR = pytest.importorskip("layoutverify.adapters.triton")
    lay = tilus_canonical(config, op, vec_k)
    tri = TR.parse(triton_text(op, CONFIGS[config][5] * vec_k), shape=list(lay.out_sizes))
    assert_same(lay, tri)


def test_against_installed_triton():
    TR = pytest.importorskip("layoutverify.adapters.triton")
    pytest.importorskip("triton")
    lays = [tilus_canonical(c, op, vk) for c, op, vk in TRITON_CASES]
    answers = TR.native_many([(triton_text(op, CONFIGS[c][5] * vk), list(l.out_sizes))
                              for (c, op, vk), l in zip(TRITON_CASES, lays)])
    for case, lay, ans in zip(TRITON_CASES, lays, answers):
        assert not isinstance(ans, Exception), (case, ans)
        assert_same(lay, ans)


# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("config,op", CASES)
def test_our_parser_reproduces_tilus_fragments(config, op):
    tl = tilus_layout(config, op)
    want = tilus_canonical(config, op)
    assert np.array_equal(T.parse(str(tl)).table(), want.table())      # printed form
    texts = CONFIGS[config][6]
    if texts:
        assert np.array_equal(T.parse(texts[OPERANDS.index(op)]).table(), want.table())   # source text
    assert np.array_equal(T.native(str(tl)).table(), want.table())


def test_fragments_are_bijective_one_warp():
    for config, op in CASES:
        lay = tilus_canonical(config, op)
        assert lay.is_bijective() and lay.in_size("lane") == 32 and lay.in_size("warp") == 1
