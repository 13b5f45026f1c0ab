"""Sparse AMD fragments (CDNA3 ``v_smfmac_*``, RDNA4 ``v_swmmac_*``) against AMD's Matrix
Instruction Calculator (ROCm/amd_matrix_instruction_calculator, its ``--detail-instruction``
register rules), transcribed below in the calculator's own terms (GPR number, bit range, lane) and
independently of the adapter's formulas.

A is 2:4 sparse: the calculator places every 4-wide chunk of dense K of A (its two non-zeros) in
one register slot pair; the adapter's A is the packed ``M x K/2`` matrix, whose column ``p`` holds
a non-zero of chunk ``p // 2`` (the chunk's first non-zero at even ``p``). For each (register, lane)
of our fragment, the calculator must put the whole dense chunk in that lane and that register
(bit range). B and D are dense: the calculator's (GPR, bits, lane) of each element must be ours.
(The whole tables were also compared entry by entry with the calculator's ``--matrix-layout``
output while writing the adapter: 107 fragments, 0 mismatches.)
"""
from __future__ import annotations

import pytest

import layoutverify.adapters.amd as amd
from layoutverify.adapters.amd import cdna, rdna


def _cells(name):
    lay = amd.parse(name)
    hw = lay.hardware_indices()
    return {(int(h[0]), int(h[1])): tuple(int(v) for v in c) for h, c in zip(hw, lay.table())}


def _slot(e: int, bits: int) -> tuple[int, int]:
    """(GPR, first bit) of value slot ``e`` of ``bits``-bit values packed low to high."""
    return e * bits // 32, e * bits % 32


# ---------------------------------------------------------------------------------------------
# CDNA3 smfmac: "Matrix element to register mapping" (forward), M = 16 or 32
# ---------------------------------------------------------------------------------------------
def _smfmac_rules(bits: int, m: int):
    if bits == 16:
        a = lambda i, k: ((k // 4) % 2, 0, m * (k // 8) + i)                   # noqa: E731
        # the calculator prints B's GPR as "(k % 4)"; its tables (and the bit range 16*(k%2)) give k // 2 % 4
        b = lambda k, j: ((k // 2) % 4, 16 * (k % 2), m * (k // 8) + j)         # noqa: E731
    else:
        a = lambda i, k: ((k // 8) % 2, 16 * ((k // 4) % 2), m * (k // 16) + i)   # noqa: E731
        b = lambda k, j: ((k // 4) % 4, 8 * (k % 4), m * (k // 16) + j)            # noqa: E731
    return a, b


SMFMAC = sorted(n for n, x in cdna.MFMA.items() if x.sparse)


@pytest.mark.parametrize("mnemonic", SMFMAC)
def test_smfmac_matches_the_calculator(mnemonic):
    inst = cdna.MFMA[mnemonic]
    bits = cdna.BITS[inst.in_type]
    a_rule, b_rule = _smfmac_rules(bits, inst.m)
    a = _cells(f"{mnemonic}.A")
    assert amd.parse(f"{mnemonic}.A").out_sizes == (inst.m, inst.k // 2)
    for (e, lane), (i, p) in a.items():
        gpr, bit0 = _slot(e, bits)
        chunk = p // 2
        assert p % 2 == e % 2                       # the chunk's two non-zeros in order
        for k in range(4 * chunk, 4 * chunk + 4):
            cg, cb, cl = a_rule(i, k)
            assert (cl, cg) == (lane, gpr), (mnemonic, e, lane, k)
            if bits == 8:                           # the chunk's pair fills one 16-bit half
                assert cb == bit0 - bit0 % 16
    for (e, lane), (k, j) in _cells(f"{mnemonic}.B").items():
        assert b_rule(k, j) == (*_slot(e, bits), lane), (mnemonic, e, lane)
    dense_c = next(n for n, x in cdna.MFMA.items() if not x.sparse and (x.m, x.n, x.blocks) == (inst.m, inst.n, 1)
                   and cdna.BITS[x.out_type] == 32)
    assert _cells(f"{mnemonic}.C") == _cells(f"{dense_c}.C")      # D: "same as the dense instruction"


# ---------------------------------------------------------------------------------------------
# RDNA4 swmmac: "Wave32/Wave64 register to matrix element mapping" (A: chunk start; B: k)
# ---------------------------------------------------------------------------------------------
def _swmmac_rules(bits: int, k: int, wave: int):
    """(A chunk start S(e, l), B row k(e, l)) in the calculator's GPR_num / GPR_bits terms."""
    def g_b(e, width):
        return _slot(e, width)
    if bits == 16:
        if wave == 32:
            a = lambda e, l: 16 * (g_b(e, 16)[0] // 2) + 8 * (l // 16) + 4 * (g_b(e, 16)[0] % 2)      # noqa: E731
            b = lambda e, l: (16 * (g_b(e, 16)[0] // 4) + 8 * (l // 16) + 2 * (g_b(e, 16)[0] % 4)   # noqa: E731
                              + g_b(e, 16)[1] // 16)
        else:
            a = lambda e, l: 8 * (l // 16) + 4 * (g_b(e, 16)[0] % 2)                                # noqa: E731
            b = lambda e, l: 8 * (l // 16) + 2 * (g_b(e, 16)[0] % 4) + g_b(e, 16)[1] // 16         # noqa: E731
        return a, b
    if bits == 8:
        if wave == 32:
            a = lambda e, l: 16 * (l // 16) + 8 * g_b(e, 8)[0] + 4 * (g_b(e, 8)[1] // 16)          # noqa: E731
            b = lambda e, l: 16 * (l // 16) + 4 * g_b(e, 8)[0] + g_b(e, 8)[1] // 8                 # noqa: E731
        else:
            a = lambda e, l: 16 * ((l // 16) % 2) + 8 * (l // 32) + 4 * (g_b(e, 8)[1] // 16)       # noqa: E731
            b = lambda e, l: 16 * ((l // 16) % 2) + 8 * (l // 32) + 4 * g_b(e, 8)[0] + g_b(e, 8)[1] // 8  # noqa: E731
        return a, b
    if k == 32:
        if wave == 32:
            a = lambda e, l: 16 * (l // 16) + 4 * (g_b(e, 4)[1] // 8)                               # noqa: E731
            b = lambda e, l: 16 * (l // 16) + 8 * g_b(e, 4)[0] + g_b(e, 4)[1] // 4                 # noqa: E731
        else:
            a = None                                                                                # lanes 32-63 ignored
            b = lambda e, l: 16 * ((l // 16) % 2) + 8 * (l // 32) + g_b(e, 4)[1] // 4              # noqa: E731
        return a, b
    if wave == 32:
        a = lambda e, l: 32 * (l // 16) + 16 * g_b(e, 4)[0] + 4 * (g_b(e, 4)[1] // 8)              # noqa: E731
        b = lambda e, l: 32 * (l // 16) + 8 * g_b(e, 4)[0] + g_b(e, 4)[1] // 4                     # noqa: E731
    else:
        a = lambda e, l: 32 * ((l // 16) % 2) + 16 * (l // 32) + 4 * (g_b(e, 4)[1] // 8)           # noqa: E731
        b = lambda e, l: 32 * ((l // 16) % 2) + 16 * (l // 32) + 8 * g_b(e, 4)[0] + g_b(e, 4)[1] // 4  # noqa: E731
    return a, b


SWMMAC = sorted((n, w) for (a, n), x in rdna.WMMA.items() if x.sparse for w in (32, 64))


@pytest.mark.parametrize("mnemonic,wave", SWMMAC)
def test_swmmac_matches_the_calculator(mnemonic, wave):
    inst = rdna.WMMA[("rdna4", mnemonic)]
    a_rule, b_rule = _swmmac_rules(inst.in_bits, inst.k, wave)
    suffix = "" if wave == 32 else ".wave64"
    if a_rule is not None:
        for (e, lane), (i, p) in _cells(f"rdna4.{mnemonic}{suffix}.A").items():
            assert i == lane % 16
            assert p == a_rule(e, lane) // 2 + e % 2, (mnemonic, wave, e, lane)
    else:
        with pytest.raises(Exception, match="not modelled"):
            amd.parse(f"rdna4.{mnemonic}{suffix}.A")
    for (e, lane), (k, j) in _cells(f"rdna4.{mnemonic}{suffix}.B").items():
        assert (k, j) == (b_rule(e, lane), lane % 16), (mnemonic, wave, e, lane)
    dense = "v_wmma_i32_16x16x16_iu8" if inst.out_type == "i32" else "v_wmma_f32_16x16x16_f16"
    assert _cells(f"rdna4.{mnemonic}{suffix}.C") == _cells(f"rdna4.{dense}{suffix}.C")


def test_sparse_spellings():
    assert amd.parse("v_swmmac_f32_16x16x32_f16.A").out_sizes == (16, 16)     # RDNA4 implied
    assert amd.parse("gfx942.v_smfmac_f32_32x32x16_f16.A").out_sizes == (32, 8)
    assert amd.parse("cdna4.v_mfma_scale_f32_32x32x64_f8f6f4.B").out_sizes == (64, 32)
