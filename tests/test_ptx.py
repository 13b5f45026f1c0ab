"""PTX spec adapter (``ptx:``): fragment facts from the PTX ISA, and Triton as an oracle.

What is checked, and where the expected values come from:

* every fragment: the registers-per-thread count of the ISA's fragment tables ("four .f16x2
  registers" = 8 values, ...), written out below independently of the adapter; every element held
  exactly once per warp / warpgroup (m8n8k4 .f16: once per quadpair, the ISA's "4 MMA
  computations");
* every mma fragment against a *literal* transcription of the ISA's piecewise row/col text (the
  adapter uses bit arithmetic instead of the ISA's case split, so this checks the translation);
* spot values read off the ISA figures; ldmatrix/mma relations the ISA implies;
* the m16n8k256 A erratum (the ISA text, read literally, is not a fragment);
* Triton's own layouts (``GluonOpBuilder.to_linear_layout`` in a subprocess): nvidia_mma v2/v3
  and dot_op layouts must agree with the ISA fragments.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import layoutverify.adapters
import layoutverify.adapters.ptx as ptx
from layoutverify.core.errors import LayoutError, ParseError, UnsupportedError
from layoutverify.core.layout import Layout

# ---------------------------------------------------------------------------------------------
# Expected registers per thread, from the "Fragment" tables of PTX ISA §9.7.14.5.x (mma) and
# §9.7.15.5.1.1 (wgmma): (shape, operand, types) -> values per thread.
# ---------------------------------------------------------------------------------------------
ISA_COUNTS = {
    ("m8n8k4", "A", ("f16",)): 4, ("m8n8k4", "B", ("f16",)): 4,          # two .f16x2
    ("m8n8k4", "C", ("f16", "f32")): 8,                                  # four .f16x2 / eight .f32
    ("m8n8k4", "A", ("f64",)): 1, ("m8n8k4", "B", ("f64",)): 1, ("m8n8k4", "C", ("f64",)): 2,
    ("m8n8k16", "A", ("s8", "u8")): 4, ("m8n8k16", "B", ("s8", "u8")): 4, ("m8n8k16", "C", ("s32",)): 2,
    ("m8n8k32", "A", ("s4", "u4")): 8, ("m8n8k32", "B", ("s4", "u4")): 8, ("m8n8k32", "C", ("s32",)): 2,
    ("m8n8k128", "A", ("b1",)): 32, ("m8n8k128", "B", ("b1",)): 32, ("m8n8k128", "C", ("s32",)): 2,
    ("m16n8k4", "A", ("tf32", "f64")): 2, ("m16n8k4", "B", ("tf32", "f64")): 1,
    ("m16n8k4", "C", ("f32", "f64")): 4,
    ("m16n8k8", "A", ("f16", "bf16", "tf32", "f64")): 4, ("m16n8k8", "B", ("f16", "bf16", "tf32", "f64")): 2,
    ("m16n8k8", "C", ("f16", "f32", "f64")): 4,
    ("m16n8k16", "A", ("f16", "bf16", "f64", "s8", "u8", "e4m3", "e5m2")): 8,
    ("m16n8k16", "B", ("f16", "bf16", "f64", "s8", "u8", "e4m3", "e5m2")): 4,
    ("m16n8k16", "C", ("f16", "f32", "f64", "s32")): 4,
    ("m16n8k32", "A", ("s4", "u4", "s8", "u8", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1")): 16,
    ("m16n8k32", "B", ("s4", "u4", "s8", "u8", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1")): 8,
    ("m16n8k32", "C", ("s32", "f32", "f16")): 4,
    ("m16n8k64", "A", ("s4", "u4", "e2m1")): 32, ("m16n8k64", "B", ("s4", "u4", "e2m1")): 16,
    ("m16n8k64", "C", ("s32", "f32")): 4,
    ("m16n8k128", "A", ("b1",)): 64, ("m16n8k128", "B", ("b1",)): 32, ("m16n8k128", "C", ("s32",)): 4,
    ("m16n8k256", "A", ("b1",)): 128, ("m16n8k256", "B", ("b1",)): 64, ("m16n8k256", "C", ("s32",)): 4,
}


def _isa_count(name: str) -> int:
    parts = name.split(".")
    if parts[0] == "mma":
        shape, dtype, operand = parts[1], parts[-2], parts[-1]
        for (s, op, types), n in ISA_COUNTS.items():
            if s == shape and op == operand and dtype in types:
                return n
        raise KeyError(name)
    if parts[0] == "wgmma":
        n, k = (int(x) for x in parts[1][4:].split("k"))
        if parts[-1] == "D":
            return n // 2                         # "N/2 number of .f32 registers" (N/4 .f16x2)
        return {16: 8, 8: 4, 32: 16}[k]          # four .f16x2 / four .b32 tf32 / four .b32 of 4 x 8-bit
    num = int(parts[1][1:])                      # ldmatrix/stmatrix .xN: N .b32 = 2N .b16
    return 2 * num


# the dense fragments (sparse mma.sp/wgmma.sp and tcgen05 have their own test files)
ALL = [n for n in ptx.list_fragments() if not n.startswith(("mma.sp.", "wgmma.sp.", "tcgen05."))]


def test_catalogue_is_complete():
    # the shapes and operands the ISA defines register fragments for
    shapes = {n.split(".")[1] for n in ALL if n.startswith("mma.")}
    assert shapes == {"m8n8k4", "m8n8k16", "m8n8k32", "m8n8k128", "m16n8k4", "m16n8k8", "m16n8k16",
                      "m16n8k32", "m16n8k64", "m16n8k128", "m16n8k256"}
    for key in ISA_COUNTS:
        for t in key[2]:
            assert any(n.startswith(f"mma.{key[0]}.") and n.endswith(f".{t}.{key[1]}") for n in ALL), (key, t)
    # wgmma: N = 8..256 step 8 for f32 accumulators, the s32 list for integer ones
    d16 = {int(n.split(".")[1][4:].split("k")[0]) for n in ALL if n.endswith("k16.f32.D")}
    assert d16 == set(range(8, 257, 8))
    s32 = {int(n.split(".")[1][4:].split("k")[0]) for n in ALL if n.endswith("k32.s32.D")}
    assert s32 == {8, 16, 24, 32} | set(range(48, 257, 16))
    assert {"ldmatrix.x1", "ldmatrix.x2.trans", "ldmatrix.x4", "stmatrix.x4.trans"} <= set(ALL)


@pytest.mark.parametrize("name", ALL)
def test_fragment_properties(name):
    frag = ptx.FRAGMENTS[name]
    lay = ptx.parse(name)
    assert frag.name == name
    assert lay.in_size("register") == _isa_count(name)
    assert lay.in_size("lane") == 32
    assert lay.in_size("warp") == (4 if name.startswith("wgmma") else 1)
    lay.check_in_range()
    counts = lay.holder_counts()
    if name.startswith("mma.m8n8k4.") and (".f16." in name or name.endswith(".f32.C")):
        # four independent products, one per quadpair: each element once per quadpair
        assert (counts == 4).all()
        hw, flat = lay.hardware_indices(), lay.flat_table()
        lane = hw[:, lay.in_names.index("lane")]
        quadpair = (lane >> 2) & 3
        for q in range(4):
            assert np.unique(flat[quadpair == q]).size == lay.out_size()
    else:
        assert (counts == 1).all(), f"{name}: elements held {counts.min()}..{counts.max()} times"
    if lay.all_pow2:
        assert lay.is_f2_linear()


# ---------------------------------------------------------------------------------------------
# The ISA's piecewise formulas, transcribed literally (case splits as written, plain ints)
# ---------------------------------------------------------------------------------------------
def _g(lane):
    return lane >> 2


def _t(lane):
    return lane % 4


LITERAL = {
    # §9.7.14.5.1, Figures 46-52
    "mma.m8n8k4.row.f16.A": lambda i, l: (l % 4 if l < 16 else l % 4 + 4, i),
    "mma.m8n8k4.col.f16.A": lambda i, l: (i % 4 if l < 16 else i % 4 + 4, l % 4),
    "mma.m8n8k4.row.f16.B": lambda i, l: (l % 4, i if l < 16 else i + 4),
    "mma.m8n8k4.col.f16.B": lambda i, l: (i, l % 4 if l < 16 else l % 4 + 4),
    "mma.m8n8k4.f16.C": lambda i, l: (l % 4 if l < 16 else l % 4 + 4, i),
    "mma.m8n8k4.f32.C": lambda i, l: (((l & 0b1) + (i & 0b10)) + (0 if l < 16 else 4),
                                      (i & 0b100) + (l & 0b10) + (i & 0b1)),
    # §9.7.14.5.2
    "mma.m8n8k4.f64.A": lambda i, l: (l >> 2, l % 4),
    "mma.m8n8k4.f64.B": lambda i, l: (l % 4, l >> 2),
    "mma.m8n8k4.f64.C": lambda i, l: (_g(l), _t(l) * 2 + (i & 0x1)),
    # §9.7.14.5.3-5
    "mma.m8n8k16.s8.A": lambda i, l: (_g(l), _t(l) * 4 + i),
    "mma.m8n8k16.s8.B": lambda i, l: (_t(l) * 4 + i, _g(l)),
    "mma.m8n8k16.s32.C": lambda i, l: (_g(l), _t(l) * 2 + i),
    "mma.m8n8k32.s4.A": lambda i, l: (_g(l), _t(l) * 8 + i),
    "mma.m8n8k32.s4.B": lambda i, l: (_t(l) * 8 + i, _g(l)),
    "mma.m8n8k128.b1.A": lambda i, l: (_g(l), _t(l) * 32 + i),
    "mma.m8n8k128.b1.B": lambda i, l: (_t(l) * 32 + i, _g(l)),
    # §9.7.14.5.6
    "mma.m16n8k4.tf32.A": lambda i, l: (_g(l) if i == 0 else _g(l) + 8, _t(l)),
    "mma.m16n8k4.tf32.B": lambda i, l: (_t(l), _g(l)),
    "mma.m16n8k4.f32.C": lambda i, l: (_g(l) if i < 2 else _g(l) + 8, _t(l) * 2 + (i & 0x1)),
    # §9.7.14.5.7
    "mma.m16n8k8.f16.A": lambda i, l: (_g(l) if i < 2 else _g(l) + 8, _t(l) * 2 + (i & 0x1)),
    "mma.m16n8k8.f16.B": lambda i, l: (_t(l) * 2 + i, _g(l)),
    "mma.m16n8k8.tf32.A": lambda i, l: (_g(l) if i in (0, 2) else _g(l) + 8, _t(l) if i < 2 else _t(l) + 4),
    "mma.m16n8k8.tf32.B": lambda i, l: (_t(l) if i == 0 else _t(l) + 4, _g(l)),
    "mma.m16n8k8.f64.A": lambda i, l: (_g(l) if i in (0, 2) else _g(l) + 8, _t(l) if i < 2 else _t(l) + 4),
    # §9.7.14.5.8
    "mma.m16n8k16.f16.A": lambda i, l: (_g(l) if (0 <= i < 2 or 4 <= i < 6) else _g(l) + 8,
                                        _t(l) * 2 + (i & 0x1) if i < 4 else _t(l) * 2 + (i & 0x1) + 8),
    "mma.m16n8k16.f16.B": lambda i, l: (_t(l) * 2 + (i & 0x1) if i < 2 else _t(l) * 2 + (i & 0x1) + 8, _g(l)),
    "mma.m16n8k16.f32.C": lambda i, l: (_g(l) if i < 2 else _g(l) + 8, _t(l) * 2 + (i & 0x1)),
    "mma.m16n8k16.f64.A": lambda i, l: (_g(l) if i % 2 == 0 else _g(l) + 8,
                                        i * 2 + _t(l) if i % 2 == 0 else i * 2 - 2 + _t(l)),
    "mma.m16n8k16.f64.B": lambda i, l: (_t(l) + i * 4, _g(l)),
    # §9.7.14.5.9
    "mma.m16n8k16.s8.A": lambda i, l: (_g(l) if i < 4 else _g(l) + 8, _t(l) * 4 + (i & 0x3)),
    "mma.m16n8k16.s8.B": lambda i, l: (_t(l) * 4 + i, _g(l)),
    # §9.7.14.5.10
    "mma.m16n8k32.s4.A": lambda i, l: (_g(l) if i < 8 else _g(l) + 8, _t(l) * 8 + (i & 0x7)),
    "mma.m16n8k32.s4.B": lambda i, l: (_t(l) * 8 + (i & 0x7), _g(l)),
    "mma.m16n8k32.s8.A": lambda i, l: (_g(l) if (0 <= i < 4 or 8 <= i < 12) else _g(l) + 8,
                                       _t(l) * 4 + (i & 0x3) if i < 8 else _t(l) * 4 + (i & 0x3) + 16),
    "mma.m16n8k32.s8.B": lambda i, l: (_t(l) * 4 + (i & 0x3) if i < 4 else _t(l) * 4 + (i & 0x3) + 16, _g(l)),
    # §9.7.14.5.11
    "mma.m16n8k64.s4.A": lambda i, l: (_g(l) if (0 <= i < 8 or 16 <= i < 24) else _g(l) + 8,
                                       _t(l) * 8 + (i & 0x7) if i < 16 else _t(l) * 8 + (i & 0x7) + 32),
    "mma.m16n8k64.s4.B": lambda i, l: (_t(l) * 8 + (i & 0x7) if i < 8 else _t(l) * 8 + (i & 0x7) + 32, _g(l)),
    # §9.7.14.5.12
    "mma.m16n8k128.b1.A": lambda i, l: (_g(l) if i < 32 else _g(l) + 8, _t(l) * 32 + (i & 0x1F)),
    "mma.m16n8k128.b1.B": lambda i, l: (_t(l) * 32 + i, _g(l)),
    # §9.7.14.5.13 (A: see the erratum test below)
    "mma.m16n8k256.b1.B": lambda i, l: (_t(l) * 32 + (i & 0x1F) if i < 32 else _t(l) * 32 + (i & 0x1F) + 128,
                                        _g(l)),
}


def _c_m16n8(i, l):
    """m16n8 C/D, repeated word for word in §9.7.14.5.6-13: row = groupID for ci where i < 2,
    groupID + 8 for i >= 2; col = (threadID_in_group * 2) + (i & 0x1)."""
    return (_g(l) if i < 2 else _g(l) + 8, _t(l) * 2 + (i & 0x1))


def _c_m8n8(i, l):
    """m8n8 C/D (§9.7.14.5.2-5): row = groupID; col = (threadID_in_group * 2) + i."""
    return (_g(l), _t(l) * 2 + i)


for _name in ALL:
    _p = _name.split(".")
    if _p[0] == "mma" and _p[-1] == "C" and _name not in LITERAL:
        LITERAL[_name] = _c_m16n8 if _p[1].startswith("m16n8") else _c_m8n8


def _literal_table(fn, registers: int, lanes: int = 32) -> np.ndarray:
    """Flat table (register fastest, then lane) of a literal formula."""
    return np.array([fn(i, l) for l in range(lanes) for i in range(registers)], dtype=np.int64)


@pytest.mark.parametrize("name", sorted(LITERAL))
def test_matches_literal_isa_text(name):
    lay = ptx.parse(name)
    expect = _literal_table(LITERAL[name], lay.in_size("register"))
    assert np.array_equal(lay.table(), expect)


def test_literal_text_covers_every_mma_fragment_kind():
    # every (shape, operand) the adapter registers has at least one literal check
    kinds = {(n.split(".")[1], n.split(".")[-1]) for n in ALL if n.startswith("mma.")}
    checked = {(n.split(".")[1], n.split(".")[-1]) for n in LITERAL}
    assert kinds - checked == {("m16n8k256", "A")}   # the erratum case, tested below


def test_m16n8k256_a_isa_text_erratum():
    """PTX ISA §9.7.14.5.13 prints col = (threadID_in_group * 32) + i for ai where i < 64.

    Read literally that is not a fragment: values a32..a63 leave the thread's 32-column slice.
    The adapter uses (i & 0x1F), as in m16n8k128 and as the figures show."""
    def literal(i, l):
        row = _g(l) if (0 <= i < 32 or 64 <= i < 96) else _g(l) + 8
        col = _t(l) * 32 + i if i < 64 else _t(l) * 32 + (i & 0x1F) + 128
        return row, col

    t = _literal_table(literal, 128)
    flat = t[:, 0] * 256 + t[:, 1]
    counts = np.bincount(flat, minlength=16 * 256)
    assert counts.max() == 2 and (counts == 0).any()       # the literal text double-covers and leaves holes
    assert (counts[(8 * 256):(8 * 256) + 32] == 0).all()   # e.g. row 8, columns 0..31 have no holder
    lay = ptx.parse("mma.m16n8k256.b1.A")
    corrected = _literal_table(lambda i, l: (literal(i, l)[0], _t(l) * 32 + (i & 0x1F) + (128 if i >= 64 else 0)),
                               128)
    assert np.array_equal(lay.table(), corrected)
    assert (lay.holder_counts() == 1).all()


# ---------------------------------------------------------------------------------------------
# Spot values read off the ISA figures
# ---------------------------------------------------------------------------------------------
def _at(lay: Layout, register: int, lane: int, warp: int = 0):
    loc = {"register": register, "lane": lane, "warp": warp, "block": 0}
    return tuple(int(x) for x in lay.apply(np.array([[loc[n] for n in lay.in_names]]))[0])


@pytest.mark.parametrize("name,register,lane,warp,expect", [
    # Figure 79 (m16n8k16 A .f16): T0 holds a0,a1 at row 0 cols 0,1; a2,a3 at row 8; a4..a7 at cols 8,9
    ("mma.m16n8k16.f16.A", 0, 0, 0, (0, 0)), ("mma.m16n8k16.f16.A", 1, 0, 0, (0, 1)),
    ("mma.m16n8k16.f16.A", 2, 0, 0, (8, 0)), ("mma.m16n8k16.f16.A", 4, 0, 0, (0, 8)),
    ("mma.m16n8k16.f16.A", 7, 31, 0, (15, 15)), ("mma.m16n8k16.f16.A", 0, 5, 0, (1, 2)),
    # Figure 81 (B .f16): T0 holds b0,b1 at rows 0,1 col 0; b2,b3 at rows 8,9; T4 is column 1
    ("mma.m16n8k16.f16.B", 1, 0, 0, (1, 0)), ("mma.m16n8k16.f16.B", 2, 0, 0, (8, 0)),
    ("mma.m16n8k16.f16.B", 0, 4, 0, (0, 1)), ("mma.m16n8k16.f16.B", 3, 31, 0, (15, 7)),
    # Figure 83 (C): T1 holds c0,c1 at row 0 cols 2,3; c2,c3 at row 8
    ("mma.m16n8k16.f32.C", 0, 1, 0, (0, 2)), ("mma.m16n8k16.f32.C", 3, 1, 0, (8, 3)),
    # Figure 72 (m16n8k8 A .tf32): T0: a0 (0,0), a1 (8,0), a2 (0,4), a3 (8,4)
    ("mma.m16n8k8.tf32.A", 1, 0, 0, (8, 0)), ("mma.m16n8k8.tf32.A", 2, 0, 0, (0, 4)),
    # Figure 88 (m16n8k32 A 8-bit): T0: a0..a3 row 0 cols 0..3, a4..a7 row 8, a8..a11 row 0 cols 16..19
    ("mma.m16n8k32.s8.A", 3, 0, 0, (0, 3)), ("mma.m16n8k32.s8.A", 4, 0, 0, (8, 0)),
    ("mma.m16n8k32.s8.A", 8, 0, 0, (0, 16)), ("mma.m16n8k32.s8.A", 15, 1, 0, (8, 23)),
    # Figure 149 (wgmma D): warp w holds rows 16w..16w+15; T0 d0,d1 (0,0),(0,1), d2 (8,0), d4 (0,8)
    ("wgmma.m64n64k16.f32.D", 0, 0, 0, (0, 0)), ("wgmma.m64n64k16.f32.D", 2, 0, 0, (8, 0)),
    ("wgmma.m64n64k16.f32.D", 4, 0, 0, (0, 8)), ("wgmma.m64n64k16.f32.D", 0, 0, 1, (16, 0)),
    ("wgmma.m64n64k16.f32.D", 31, 31, 3, (63, 63)),
    # Figure 148 (wgmma A .f16): warp 2, lane 0: a0 at row 32
    ("wgmma.m64n64k16.f16.A", 0, 0, 2, (32, 0)), ("wgmma.m64n64k16.f16.A", 6, 0, 2, (40, 8)),
    # Figure 104 (ldmatrix): "thread 0 receiving the first fragment"; a group of 4 threads loads a row
    ("ldmatrix.x1", 0, 0, 0, (0, 0)), ("ldmatrix.x1", 1, 0, 0, (0, 1)), ("ldmatrix.x1", 0, 3, 0, (0, 6)),
    ("ldmatrix.x1", 0, 4, 0, (1, 0)), ("ldmatrix.x4", 2, 0, 0, (8, 0)), ("ldmatrix.x4", 7, 31, 0, (31, 7)),
    # .trans: the matrix is read column-major: thread 0 gets column 0, rows 0 and 1
    ("ldmatrix.x1.trans", 0, 0, 0, (0, 0)), ("ldmatrix.x1.trans", 1, 0, 0, (1, 0)),
    ("ldmatrix.x1.trans", 0, 4, 0, (0, 1)),
])
def test_figure_spot_values(name, register, lane, warp, expect):
    assert _at(ptx.parse(name), register, lane, warp) == expect


# ---------------------------------------------------------------------------------------------
# Relations between instructions
# ---------------------------------------------------------------------------------------------
def test_ldmatrix_x4_as_16x16_is_the_mma_a_fragment():
    # the ISA's ldmatrix exists to feed mma: .x4 over the four 8x8 quadrants (0 TL, 1 BL, 2 TR, 3 BR)
    assert np.array_equal(ptx.parse("ldmatrix.x4", shape=(16, 16)).table(), ptx.parse("mma.m16n8k16.f16.A").table())
    assert np.array_equal(ptx.parse("ldmatrix.x2.trans").table(), ptx.parse("mma.m16n8k16.f16.B").table())
    assert np.array_equal(ptx.parse("ldmatrix.x2").table(), ptx.parse("mma.m16n8k8.f16.A").table())
    assert np.array_equal(ptx.parse("stmatrix.x4").table(), ptx.parse("ldmatrix.x4").table())
    # the default x4 tile is 32x8 (matrix m = rows 8m..8m+7), not the mma quadrant order
    assert not np.array_equal(ptx.parse("ldmatrix.x4").reshape_out([16, 16]).table(),
                              ptx.parse("mma.m16n8k16.f16.A").table())


def test_wgmma_d_is_the_m16n8_c_fragment_repeated():
    c = ptx.parse("mma.m16n8k16.f32.C").table()
    d = ptx.parse("wgmma.m64n256k16.f32.D")
    hw, t = d.hardware_indices(), d.table()
    reg, lane, warp = (hw[:, d.in_names.index(n)] for n in ("register", "lane", "warp"))
    block = reg >> 2
    local = (reg & 3) + 4 * lane                       # flat index into the m16n8 C table
    assert np.array_equal(t[:, 0], c[local, 0] + 16 * warp)
    assert np.array_equal(t[:, 1], c[local, 1] + 8 * block)
    for n in (8, 24, 40, 200):                        # smaller N: the first N/2 registers of N = 256
        small = ptx.parse(f"wgmma.m64n{n}k16.f32.D")
        sel = reg < n // 2
        assert np.array_equal(np.sort(small.flat_table()),
                              np.sort(t[sel, 0] * n + t[sel, 1]))


# ---------------------------------------------------------------------------------------------
# Text syntax and errors
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,same_as", [
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32.A", "mma.m16n8k16.f16.A"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32.B", "mma.m16n8k16.bf16.B"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16.C", "mma.m16n8k16.f16.C"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16.D", "mma.m16n8k16.f32.C"),
    ("MMA.M16N8K16.F16.a", "mma.m16n8k16.f16.A"),
    ("mma.m16n8k16.f32.D", "mma.m16n8k16.f32.C"),
    ("mma.m8n8k4.f16.A", "mma.m8n8k4.row.f16.A"),
    ("mma.m8n8k4.f16.B", "mma.m8n8k4.col.f16.B"),
    ("mma.sync.aligned.m8n8k4.col.row.f32.f16.f16.f32.B", "mma.m8n8k4.row.f16.B"),
    ("mma.sync.aligned.m8n8k4.col.row.f32.f16.f16.f32.A", "mma.m8n8k4.col.f16.A"),
    ("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16.D", "wgmma.m64n128k16.f32.D"),
    ("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16.A", "wgmma.m64n128k16.bf16.A"),
    ("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "ldmatrix.x4.trans"),
    ("ldmatrix.sync.aligned.m8n8.x2.shared::cta.b16", "ldmatrix.x2"),
    ("  mma.m16n8k16.f16.A  ", "mma.m16n8k16.f16.A"),
])
def test_accepted_spellings(text, same_as):
    assert ptx.fragment(text).name == ptx.fragment(same_as).name
    assert np.array_equal(ptx.parse(text).table(), ptx.parse(same_as).table())
    assert np.array_equal(layoutverify.adapters.parse_spec("ptx:" + text).table(), ptx.parse(same_as).table())


@pytest.mark.parametrize("text,token,column,hint", [
    ("mma.m16n8k17.f16.A", "m16n8k17", 5, "m16n8k16"),
    ("mma.m16n8k16.f15.A", "f15", 14, "f16"),
    ("mmma.m16n8k16.f16.A", "mmma", 1, "mma"),
    ("mma.m16n8k16.f16.X", "X", 18, "A, B, C, D"),
    ("mma.m16n8k16..A", ".", 14, None),
    ("mma.m16n8k16.f16.A$", "$", 19, None),
    ("mma.m16n8k16.tf32.A", "tf32", 14, "f16"),
    ("mma.m16n8k16.col.row.f16.A", "col", 14, None),
    ("mma.m16n8k16.f16.f16.A", "f16", 18, None),
    ("wgmma.m64n64k16.f32.f16.D", "f16", 21, "three types"),
    ("mma.m16n8k16.f16", "<end>", 17, None),
    ("wgmma.m64n7k16.f32.D", "m64n7k16", 7, None),
    ("wgmma.m64n64k16.f16.B", "B", 21, None),
    ("wgmma.m64n64k16.s8.A", "s8", 17, "f16"),
    ("wgmma.m64n40k32.s32.D", "m64n40k32", 7, None),
    ("ldmatrix.x3", "x3", 10, "x4"),
    ("ldmatrix.x4.b32", "b32", 13, None),
])
def test_parse_errors_name_the_token(text, token, column, hint):
    with pytest.raises(ParseError) as ei:
        ptx.parse(text)
    err = ei.value
    assert err.token == token and err.column == column, str(err)
    if hint:
        assert hint in str(err)


def test_other_errors():
    with pytest.raises(LayoutError, match="16x16"):
        ptx.parse("mma.m16n8k16.f16.A", shape=(16, 8))
    with pytest.raises(LayoutError, match="16x16"):
        ptx.parse("ldmatrix.x4", shape=(8, 8))
    with pytest.raises(UnsupportedError):
        ptx.parse("ldmatrix.m16n16.x1.trans.b8")
    assert ptx.fragment("mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32.B").name == "mma.sp.m16n8k32.f16.B"
    with pytest.raises(UnsupportedError, match="16-bit"):
        ptx.parse("tcgen05.ld.16x64b.x1.pack::16b")
    with pytest.raises(ParseError, match="too long"):
        ptx.parse("mma." + "m16n8k16." * 10_000 + "f16.A")
    with pytest.raises(ParseError):
        ptx.parse("")
    with pytest.raises(ParseError):
        ptx.parse(None)
    assert ptx.parse("ldmatrix.x4", shape=(8, 32)).shape == (8, 32)
    assert ptx.list_fragments("m16n8k16.f16") == ["mma.m16n8k16.f16.A", "mma.m16n8k16.f16.B", "mma.m16n8k16.f16.C",
                                                  "mma.sp.m16n8k16.f16.A", "mma.sp.m16n8k16.f16.B",
                                                  "mma.sp.m16n8k16.f16.C", "mma.sp.m16n8k16.f16.E"]


# ---------------------------------------------------------------------------------------------
# Triton as an oracle
# ---------------------------------------------------------------------------------------------
_TRITON_SCRIPT = textwrap.dedent(r"""
    import json, sys
    from triton._C.libtriton import ir, gluon_ir
    from triton.experimental.gluon import language as gl
    ctx = ir.context(); ir.load_dialects(ctx); b = gluon_ir.GluonOpBuilder(ctx)
    out = []
    for case in json.loads(sys.stdin.read()):
        kind, shape = case["kind"], case["shape"]
        if kind == "mma":
            lay = gl.NVMMADistributedLayout(version=case["version"], warps_per_cta=case["warps"],
                                            instr_shape=case["instr"])
        else:
            parent = gl.NVMMADistributedLayout(version=case["version"], warps_per_cta=case["warps"],
                                               instr_shape=case["instr"])
            lay = gl.DotOperandLayout(operand_index=case["op"], parent=parent, k_width=case["kw"])
        ll = b.to_linear_layout(lay._to_ir(b), shape)
        out.append({"register": ll.reg_bases, "lane": ll.lane_bases, "warp": ll.warp_bases,
                    "block": ll.block_bases, "shape": list(ll.shape)})
    print("RESULT" + json.dumps(out))
""")

#: (our fragment, Triton layout). Triton's dot_op kWidth = values per 32 bits of the element type.
TRITON_CASES = [
    ("mma.m16n8k16.f32.C", dict(kind="mma", version=[2, 0], warps=[1, 1], instr=[16, 8], shape=[16, 8])),
    ("mma.m16n8k16.f16.A", dict(kind="dot", op=0, kw=2, version=[2, 0], warps=[1, 1], instr=[16, 8], shape=[16, 16])),
    ("mma.m16n8k16.f16.B", dict(kind="dot", op=1, kw=2, version=[2, 0], warps=[1, 1], instr=[16, 8], shape=[16, 8])),
    ("mma.m16n8k8.tf32.A", dict(kind="dot", op=0, kw=1, version=[2, 0], warps=[1, 1], instr=[16, 8], shape=[16, 8])),
    ("mma.m16n8k8.tf32.B", dict(kind="dot", op=1, kw=1, version=[2, 0], warps=[1, 1], instr=[16, 8], shape=[8, 8])),
    ("mma.m16n8k32.s8.A", dict(kind="dot", op=0, kw=4, version=[2, 0], warps=[1, 1], instr=[16, 8], shape=[16, 32])),
    ("mma.m16n8k32.s8.B", dict(kind="dot", op=1, kw=4, version=[2, 0], warps=[1, 1], instr=[16, 8], shape=[32, 8])),
    ("mma.m16n8k64.s4.A", dict(kind="dot", op=0, kw=8, version=[2, 0], warps=[1, 1], instr=[16, 8], shape=[16, 64])),
    ("mma.m16n8k64.s4.B", dict(kind="dot", op=1, kw=8, version=[2, 0], warps=[1, 1], instr=[16, 8], shape=[64, 8])),
] + [
    (f"wgmma.m64n{n}k16.f32.D", dict(kind="mma", version=[3, 0], warps=[4, 1], instr=[16, n, 16], shape=[64, n]))
    for n in (8, 16, 32, 64, 128, 256)
] + [
    ("wgmma.m64n64k16.f16.A", dict(kind="dot", op=0, kw=2, version=[3, 0], warps=[4, 1], instr=[16, 64, 16],
                                   shape=[64, 16])),
    ("wgmma.m64n64k8.tf32.A", dict(kind="dot", op=0, kw=1, version=[3, 0], warps=[4, 1], instr=[16, 64, 8],
                                   shape=[64, 8])),
    ("wgmma.m64n64k32.e4m3.A", dict(kind="dot", op=0, kw=4, version=[3, 0], warps=[4, 1], instr=[16, 64, 32],
                                    shape=[64, 32])),
]


#: Known differences: Triton's mma v2 dot operands always model the *largest* K of the element
#: width (m16n8k16 for 16-bit, m16n8k32 for 8-bit types), so on a tile with the smaller K of
#: m16n8k8 / m16n8k16-int8 the top register bit is a zero basis (each value held twice).
#: Restricted to the first half of the registers, Triton's layout is exactly the ISA fragment.
TRITON_BROADCAST_CASES = [
    ("mma.m16n8k8.f16.A", dict(kind="dot", op=0, kw=2, version=[2, 0], warps=[1, 1], instr=[16, 8], shape=[16, 8])),
    ("mma.m16n8k8.f16.B", dict(kind="dot", op=1, kw=2, version=[2, 0], warps=[1, 1], instr=[16, 8], shape=[8, 8])),
    ("mma.m16n8k16.s8.A", dict(kind="dot", op=0, kw=4, version=[2, 0], warps=[1, 1], instr=[16, 8], shape=[16, 16])),
    ("mma.m16n8k16.s8.B", dict(kind="dot", op=1, kw=4, version=[2, 0], warps=[1, 1], instr=[16, 8], shape=[16, 8])),
]


@pytest.fixture(scope="module")
def triton_layouts():
    pytest.importorskip("triton")
    cases = [c for _, c in TRITON_CASES + TRITON_BROADCAST_CASES]
    proc = subprocess.run([sys.executable, "-c", _TRITON_SCRIPT], input=json.dumps(cases), capture_output=True,
                          text=True, timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")]
    if proc.returncode != 0 and not lines:
        if "gluon_ir" in proc.stderr and ("ImportError" in proc.stderr or "ModuleNotFoundError" in proc.stderr):
            pytest.skip("this Triton has no Gluon builder (needs Triton >= 3.5)")
        pytest.fail(f"Triton oracle died (rc {proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(lines[0][len("RESULT"):])


def _triton_layout(res) -> Layout:
    bases = {k: res[k] for k in ("register", "lane", "warp", "block")}
    return Layout.from_bases(bases, res["shape"])


@pytest.mark.parametrize("index", range(len(TRITON_CASES)), ids=[c[0] for c in TRITON_CASES])
def test_agrees_with_triton(triton_layouts, index):
    from layoutverify.core.compare import compare
    name, case = TRITON_CASES[index]
    ours, theirs = ptx.parse(name), _triton_layout(triton_layouts[index])
    assert ours.in_dims == theirs.in_dims and ours.out_dims == theirs.out_dims
    same = np.array_equal(ours.table(), theirs.table())
    res = compare(ours, theirs)
    assert same, f"{name} vs Triton {case}: {res.verdict} {res.witness}"
    assert res.verdict == "equal", (res.verdict, res.witness)
    assert compare(ours, theirs, method="table").verdict == "equal"


@pytest.mark.parametrize("index", range(len(TRITON_BROADCAST_CASES)), ids=[c[0] for c in TRITON_BROADCAST_CASES])
def test_known_difference_triton_broadcasts_small_k(triton_layouts, index):
    from layoutverify.core.compare import compare
    name, case = TRITON_BROADCAST_CASES[index]
    res = triton_layouts[len(TRITON_CASES) + index]
    ours, theirs = ptx.parse(name), _triton_layout(res)
    assert theirs.in_size("register") == 2 * ours.in_size("register")
    assert list(res["register"][-1]) == [0, 0]                      # the extra register bit broadcasts
    assert (theirs.holder_counts() == 2).all()
    assert compare(ours, theirs).verdict != "equal"
    low = Layout.from_bases({**{k: res[k] for k in ("lane", "warp", "block")}, "register": res["register"][:-1]},
                            res["shape"]).with_in_dims(ours.in_dims)
    assert np.array_equal(low.table(), ours.table())
    assert compare(ours, low).verdict == "equal"
