"""The AMD LDS bank model (``arch="cdna3"`` / ``"cdna4"`` of layoutverify.core.banks) against the
shared layouts Triton's AMD back end picks so that MFMA operands load without bank conflicts.

Triton's choice is ``AMDMfmaEncodingAttr::composeSharedLayoutForOperand``
(lib/Dialect/TritonGPU/IR/Dialect.cpp, triton-lang/triton df82d98), transcribed in
:func:`triton_amd_swizzle`: its comment and purpose are that ``ds_read`` of the operand's
``kWidth`` vectors hits distinct banks. Our model must therefore report one wavefront per phase
(1-way) for every choice it makes, and a conflict for the same load from the unswizzled layout.
"""
from __future__ import annotations

import pytest

from layoutverify.adapters import triton as T
from layoutverify.core.banks import BANK_MODELS, bank_conflicts, bank_model
from layoutverify.core.errors import LayoutError


def triton_amd_swizzle(version: int, op_idx: int, shape, order, vec: int, bits: int, instr_m: int):
    """(vec, perPhase, maxPhase) of composeSharedLayoutForOperand (non-transposed operands)."""
    k_dim = 1 if op_idx == 0 else 0
    gfx950 = version == 4
    if order[0] != k_dim and not (gfx950 and bits in (8, 16)):
        return 1, 1, 1
    banks = 64 if gfx950 else 32
    inner = shape[order[0]]
    per_row = banks * 32 // bits
    per_phase = max(1, per_row // inner)
    max_phase = max(min(16 // per_phase, inner // vec), 1)
    if instr_m == 4:
        max_phase = 4
    return vec, per_phase, max_phase


def _case(version, instr, op, k_width, shape):
    order = [1, 0] if op == 0 else [0, 1]      # K contiguous in shared memory
    vec, pp, mp = triton_amd_swizzle(version, op, shape, order, k_width, 16, instr[0])
    mfma = f"#ttg.amd_mfma<{{version = {version}, warpsPerCTA = [2, 2], instrShape = {instr}, isTransposed = true}}>"
    reg = T.parse(f"tensor<{shape[0]}x{shape[1]}xf16, #ttg.dot_op<{{opIdx = {op}, parent = {mfma}, kWidth = {k_width}}}>>")

    def shared(v, p, m):
        return T.parse(f"!ttg.memdesc<{shape[0]}x{shape[1]}xf16, #ttg.swizzled_shared<{{vec = {v}, perPhase = {p}, "
                       f"maxPhase = {m}, order = {order}}}>, #ttg.shared_memory>")
    return reg, shared(vec, pp, mp), shared(1, 1, 1)


SHAPES = ([128, 64], [64, 128], [256, 32], [32, 256])


@pytest.mark.parametrize("instr", [[32, 32, 8], [16, 16, 16]])
@pytest.mark.parametrize("op", [0, 1])
@pytest.mark.parametrize("k_width", [4, 8])
def test_cdna3_tritons_swizzle_is_conflict_free_unswizzled_is_not(instr, op, k_width):
    for shape in SHAPES:
        reg, swizzled, plain = _case(3, instr, op, k_width, shape)
        good = bank_conflicts(reg, swizzled, 16, arch="cdna3")
        bad = bank_conflicts(reg, plain, 16, arch="cdna3")
        assert good.vector == k_width and good.access_bytes == 2 * k_width      # ds_read_b64 / b128
        assert good.lanes_per_phase == 128 // (2 * k_width)                      # 16 / 8 lanes per phase
        assert good.conflict_ways == 1, (shape, good.summary())
        assert bad.conflict_ways > 1, (shape, bad.summary())


@pytest.mark.parametrize("instr", [[32, 32, 16], [16, 16, 32]])
@pytest.mark.parametrize("op", [0, 1])
def test_cdna4_tritons_swizzle_is_conflict_free_for_b128(instr, op):
    """gfx950 f16 MFMA operands are read 8 at a time (kWidth 8, ds_read_b128) from a 64-bank LDS."""
    for shape in SHAPES:
        reg, swizzled, plain = _case(4, instr, op, 8, shape)
        good = bank_conflicts(reg, swizzled, 16, arch="cdna4")
        bad = bank_conflicts(reg, plain, 16, arch="cdna4")
        assert good.banks == 64 and good.lanes_per_phase == 16
        assert good.conflict_ways == 1, (shape, good.summary())
        assert bad.conflict_ways > 1, (shape, bad.summary())


def test_bank_word_counts_per_arch():
    """ds_read_b32 down a column of a 32-dword-wide row-major tile (lane l reads dword 32 l)."""
    reg = T.parse("tensor<64x32xf32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [64, 1], "
                  "warpsPerCTA = [1, 1], order = [1, 0]}>>")
    shared = T.parse("!ttg.memdesc<64x32xf32, #ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, "
                     "order = [1, 0]}>, #ttg.shared_memory>")
    b32 = dict(max_vector_bytes=4)
    r3 = bank_conflicts(reg, shared, 32, arch="cdna3", **b32)
    r4 = bank_conflicts(reg, shared, 32, arch="cdna4", **b32)
    assert (r3.lanes_per_phase, r3.conflict_ways) == (32, 32)     # a half-wave, all in bank 0
    assert (r4.lanes_per_phase, r4.conflict_ways) == (64, 32)     # the whole wave: banks 0 and 32, 32 words each
    assert bank_conflicts(reg, shared, 32, arch="nvidia", **b32).lanes_per_phase == 32


def test_arch_names():
    assert bank_model("gfx942") == 32 and bank_model("gfx950") == 64 and bank_model("nvidia") == 32
    assert set(BANK_MODELS) == {"nvidia", "cdna3", "cdna4"}
    with pytest.raises(LayoutError, match="unknown architecture"):
        bank_model("gfx1234")
