"""Register fragments of ``mma.sync.aligned`` (PTX ISA §9.7.14.5, "Matrix Fragments for mma.m*n*k*").

Every formula is transcribed from the ISA's fragment descriptions, which use

    groupID           = %laneid >> 2
    threadID_in_group = %laneid % 4

and give ``row``/``col`` of element ``ai`` / ``bi`` / ``ci`` of the operand (A: M x K, B: K x N,
C/D: M x N). The ISA's piecewise conditions on the element index ``i`` ("groupID for ai where
0 <= i < 2 || 4 <= i < 6, groupID + 8 otherwise") are written here with the bits of ``i``
(``bit(i, 1) * 8``); each function quotes the ISA's wording in its docstring.

Fragments are registered under ``(shape, operand, layout, element type)``: operand ``A``, ``B``
or ``C`` (C also names D; the accumulator type names it), layout ``row``/``col`` only where the
ISA gives layout-dependent fragments (``m8n8k4`` with ``.f16``), else ``""``.

Section numbers are those of PTX ISA 8.7/8.8 (9.7.14.5.x).
"""
from __future__ import annotations

from layoutverify.adapters.isa.fragment import Fragment, bit

ISA = "PTX ISA §9.7.14.5"

#: (shape, operand, layout, type) -> Fragment
MMA: dict[tuple[str, str, str, str], Fragment] = {}


def group_id(lane):
    """``groupID = %laneid >> 2``"""
    return lane >> 2


def thread_in_group(lane):
    """``threadID_in_group = %laneid % 4``"""
    return lane % 4


def _register(shape: str, operand: str, types, rows: int, cols: int, registers: int, coords, section: str,
              *, layout: str = "", note: str = "") -> None:
    for t in types:
        lay = f".{layout}" if layout else ""
        frag = Fragment(name=f"mma.{shape}{lay}.{t}.{operand}", operand=operand, rows=rows, cols=cols,
                        registers=registers, coords=coords, source=f"{ISA}.{section}", note=note)
        key = (shape, operand, layout, t)
        assert key not in MMA, key
        MMA[key] = frag


def _mnk(shape: str) -> tuple[int, int, int]:
    m, rest = shape[1:].split("n")
    n, k = rest.split("k")
    return int(m), int(n), int(k)


def _abc(shape, a, b, c, section, a_types, b_types=None, c_types=(), *, layout_a="", layout_b="", note=""):
    """Register the A, B and C fragments of one shape: ``a``/``b``/``c`` are ``(registers, coords)``."""
    m, n, k = _mnk(shape)
    if a:
        _register(shape, "A", a_types, m, k, a[0], a[1], section, layout=layout_a, note=note)
    if b:
        _register(shape, "B", b_types or a_types, k, n, b[0], b[1], section, layout=layout_b, note=note)
    if c:
        _register(shape, "C", c_types, m, n, c[0], c[1], section, note=note)


# =============================================================================================
# m8n8k4 with .f16 (§9.7.14.5.1): four independent 8x8x4 products per warp
# =============================================================================================
_QUADPAIR_NOTE = ("the warp computes 4 independent m8n8k4 products, one per quadpair (lanes 0-3 with 16-19, "
                  "4-7 with 20-23, ...); the layout gives each lane's position in its own quadpair's matrix, "
                  "so every element has 4 holders, one per quadpair (lane bits 2-3)")


def _high_group(lane):
    """1 for ``%laneid >= 16`` (the "high group" of a quadpair), else 0."""
    return bit(lane, 4)


def a_m8n8k4_f16_row(r, lane, warp):
    """A row-major (Figure 46): row = %laneid % 4 if %laneid < 16, (%laneid % 4) + 4 otherwise;
    col = i for ai, i = 0..3."""
    return lane % 4 + _high_group(lane) * 4, r


def a_m8n8k4_f16_col(r, lane, warp):
    """A column-major (Figure 47): row = i % 4 for ai if %laneid < 16, (i % 4) + 4 otherwise;
    col = %laneid % 4."""
    return r % 4 + _high_group(lane) * 4, lane % 4


def b_m8n8k4_f16_row(r, lane, warp):
    """B row-major (Figure 48): row = %laneid % 4; col = i for bi if %laneid < 16, i + 4 otherwise."""
    return lane % 4, r + _high_group(lane) * 4


def b_m8n8k4_f16_col(r, lane, warp):
    """B column-major (Figure 49): row = i for bi; col = %laneid % 4 if %laneid < 16,
    (%laneid % 4) + 4 otherwise."""
    return r, lane % 4 + _high_group(lane) * 4


def c_m8n8k4_f16(r, lane, warp):
    """C/D with .ctype = .f16 (Figure 50): row = %laneid % 4 if %laneid < 16, (%laneid % 4) + 4
    otherwise; col = i for ci, i = 0..7."""
    return lane % 4 + _high_group(lane) * 4, r


def c_m8n8k4_f32(r, lane, warp):
    """C/D with .ctype = .f32 (Figures 51, 52): row = X if %laneid < 16, X + 4 otherwise, where
    X = (%laneid & 0b1) + (i & 0b10); col = (i & 0b100) + (%laneid & 0b10) + (i & 0b1)."""
    x = (lane & 1) + (r & 2)
    return x + _high_group(lane) * 4, (r & 4) + (lane & 2) + (r & 1)


_register("m8n8k4", "A", ("f16",), 8, 4, 4, a_m8n8k4_f16_row, "1", layout="row", note=_QUADPAIR_NOTE)
_register("m8n8k4", "A", ("f16",), 8, 4, 4, a_m8n8k4_f16_col, "1", layout="col", note=_QUADPAIR_NOTE)
_register("m8n8k4", "B", ("f16",), 4, 8, 4, b_m8n8k4_f16_row, "1", layout="row", note=_QUADPAIR_NOTE)
_register("m8n8k4", "B", ("f16",), 4, 8, 4, b_m8n8k4_f16_col, "1", layout="col", note=_QUADPAIR_NOTE)
_register("m8n8k4", "C", ("f16",), 8, 8, 8, c_m8n8k4_f16, "1", note=_QUADPAIR_NOTE)
_register("m8n8k4", "C", ("f32",), 8, 8, 8, c_m8n8k4_f32, "1", note=_QUADPAIR_NOTE)


# =============================================================================================
# m8n8k4 with .f64 (§9.7.14.5.2)
# =============================================================================================
def a_m8n8k4_f64(r, lane, warp):
    """A (Figure 53), ``a0``: row = %laneid >> 2; col = %laneid % 4."""
    return lane >> 2, lane % 4


def b_m8n8k4_f64(r, lane, warp):
    """B (Figure 54), ``b0``: row = %laneid % 4; col = %laneid >> 2."""
    return lane % 4, lane >> 2


def c_m8n8(r, lane, warp):
    """m8n8 C/D, ``c0, c1``: row = groupID; col = (threadID_in_group * 2) + (i & 0x1)
    (identical wording in §9.7.14.5.2-5: f64 and s32 accumulators)."""
    return group_id(lane), thread_in_group(lane) * 2 + bit(r, 0)


_abc("m8n8k4", (1, a_m8n8k4_f64), (1, b_m8n8k4_f64), (2, c_m8n8), "2", ("f64",), c_types=("f64",))


# =============================================================================================
# m8n8k16 (.s8/.u8, §9.7.14.5.3), m8n8k32 (.s4/.u4, §9.7.14.5.4), m8n8k128 (.b1, §9.7.14.5.5)
# =============================================================================================
def _a_m8n8(per_thread: int):
    def a(r, lane, warp):
        return group_id(lane), thread_in_group(lane) * per_thread + r
    a.__doc__ = f"A: row = groupID; col = (threadID_in_group * {per_thread}) + i for ai, i = 0..{per_thread - 1}."
    return a


def _b_m8n8(per_thread: int):
    def b(r, lane, warp):
        return thread_in_group(lane) * per_thread + r, group_id(lane)
    b.__doc__ = f"B: row = (threadID_in_group * {per_thread}) + i for bi, i = 0..{per_thread - 1}; col = groupID."
    return b


_abc("m8n8k16", (4, _a_m8n8(4)), (4, _b_m8n8(4)), (2, c_m8n8), "3", ("s8", "u8"), c_types=("s32",))
_abc("m8n8k32", (8, _a_m8n8(8)), (8, _b_m8n8(8)), (2, c_m8n8), "4", ("s4", "u4"), c_types=("s32",))
_abc("m8n8k128", (32, _a_m8n8(32)), (32, _b_m8n8(32)), (2, c_m8n8), "5", ("b1",), c_types=("s32",))


# =============================================================================================
# Accumulators shared by every m16n8 shape (§9.7.14.5.6-13: f16/f32/s32/f64 C and D)
# =============================================================================================
def c_m16n8(r, lane, warp):
    """m16n8 C/D, ``c0..c3``: row = groupID for ci where i < 2, groupID + 8 for i >= 2;
    col = (threadID_in_group * 2) + (i & 0x1)."""
    return group_id(lane) + bit(r, 1) * 8, thread_in_group(lane) * 2 + bit(r, 0)


# =============================================================================================
# m16n8k4 (.tf32, .f64; §9.7.14.5.6)
# =============================================================================================
def a_m16n8k4(r, lane, warp):
    """A ``a0, a1``: row = groupID for a0, groupID + 8 for a1; col = threadID_in_group."""
    return group_id(lane) + r * 8, thread_in_group(lane)


def b_m16n8k4(r, lane, warp):
    """B ``b0``: row = threadID_in_group; col = groupID."""
    return thread_in_group(lane), group_id(lane)


_abc("m16n8k4", (2, a_m16n8k4), (1, b_m16n8k4), (4, c_m16n8), "6", ("tf32",), c_types=("f32",))
_abc("m16n8k4", (2, a_m16n8k4), (1, b_m16n8k4), (4, c_m16n8), "6", ("f64",), c_types=("f64",))


# =============================================================================================
# m16n8k8 (.f16/.bf16, .tf32, .f64; §9.7.14.5.7)
# =============================================================================================
def a_m16n8k8_f16(r, lane, warp):
    """A .f16/.bf16 ``a0..a3``: row = groupID for a0 and a1, groupID + 8 for a2 and a3;
    col = threadID_in_group * 2 + (i & 0x1)."""
    return group_id(lane) + bit(r, 1) * 8, thread_in_group(lane) * 2 + bit(r, 0)


def b_m16n8k8_f16(r, lane, warp):
    """B .f16/.bf16 ``b0, b1``: row = (threadID_in_group * 2) + i; col = groupID."""
    return thread_in_group(lane) * 2 + r, group_id(lane)


def a_m16n8k8_tf32(r, lane, warp):
    """A .tf32 and .f64 ``a0..a3``: row = groupID for a0 and a2, groupID + 8 for a1 and a3;
    col = threadID_in_group for a0 and a1, threadID_in_group + 4 for a2 and a3."""
    return group_id(lane) + bit(r, 0) * 8, thread_in_group(lane) + bit(r, 1) * 4


def b_m16n8k8_tf32(r, lane, warp):
    """B .tf32 and .f64 ``b0, b1``: row = threadID_in_group for b0, threadID_in_group + 4 for b1;
    col = groupID."""
    return thread_in_group(lane) + r * 4, group_id(lane)


_abc("m16n8k8", (4, a_m16n8k8_f16), (2, b_m16n8k8_f16), (4, c_m16n8), "7", ("f16", "bf16"), c_types=("f16", "f32"))
_abc("m16n8k8", (4, a_m16n8k8_tf32), (2, b_m16n8k8_tf32), None, "7", ("tf32", "f64"))
_register("m16n8k8", "C", ("f64",), 16, 8, 4, c_m16n8, "7")


# =============================================================================================
# m16n8k16 floating point (.f16/.bf16, .f64; §9.7.14.5.8) and 8-bit (.s8/.u8/.e4m3/.e5m2; §9.7.14.5.9)
# =============================================================================================
def a_m16n8k16_f16(r, lane, warp):
    """A .f16/.bf16 ``a0..a7``: row = groupID for ai where 0 <= i < 2 || 4 <= i < 6, groupID + 8
    otherwise; col = (threadID_in_group * 2) + (i & 0x1) for ai where i < 4,
    (threadID_in_group * 2) + (i & 0x1) + 8 for ai where i >= 4."""
    return group_id(lane) + bit(r, 1) * 8, thread_in_group(lane) * 2 + bit(r, 0) + bit(r, 2) * 8


def b_m16n8k16_f16(r, lane, warp):
    """B .f16/.bf16 ``b0..b3``: row = (threadID_in_group * 2) + (i & 0x1) for bi where i < 2,
    (threadID_in_group * 2) + (i & 0x1) + 8 for bi where i >= 2; col = groupID."""
    return thread_in_group(lane) * 2 + bit(r, 0) + bit(r, 1) * 8, group_id(lane)


def a_m16n8k16_f64(r, lane, warp):
    """A .f64 ``a0..a7``: row = groupID for ai where i % 2 = 0, groupID + 8 otherwise;
    col = (i * 2) + threadID_in_group for i % 2 = 0, (i * 2) - 2 + threadID_in_group otherwise.
    Both column cases equal ``(i >> 1) * 4 + threadID_in_group``, written so to stay non-negative."""
    return group_id(lane) + bit(r, 0) * 8, (r >> 1) * 4 + thread_in_group(lane)


def b_m16n8k16_f64(r, lane, warp):
    """B .f64 ``b0..b3``: row = threadID_in_group + (i * 4); col = groupID."""
    return thread_in_group(lane) + r * 4, group_id(lane)


def a_m16n8k16_i8(r, lane, warp):
    """A 8-bit ``a0..a7``: row = groupID for ai where i < 4, groupID + 8 for i >= 4;
    col = (threadID_in_group * 4) + (i & 0x3)."""
    return group_id(lane) + bit(r, 2) * 8, thread_in_group(lane) * 4 + (r & 3)


def b_m16n8k16_i8(r, lane, warp):
    """B 8-bit ``b0..b3``: row = (threadID_in_group * 4) + i; col = groupID."""
    return thread_in_group(lane) * 4 + r, group_id(lane)


_abc("m16n8k16", (8, a_m16n8k16_f16), (4, b_m16n8k16_f16), (4, c_m16n8), "8", ("f16", "bf16"),
     c_types=("f16", "f32"))
_abc("m16n8k16", (8, a_m16n8k16_f64), (4, b_m16n8k16_f64), (4, c_m16n8), "8", ("f64",), c_types=("f64",))
_abc("m16n8k16", (8, a_m16n8k16_i8), (4, b_m16n8k16_i8), (4, c_m16n8), "9", ("s8", "u8", "e4m3", "e5m2"),
     c_types=("s32",))


# =============================================================================================
# m16n8k32 (.s4/.u4 and 8-bit containers; §9.7.14.5.10)
# =============================================================================================
def a_m16n8k32_i4(r, lane, warp):
    """A .s4/.u4 ``a0..a15``: row = groupID for ai where i < 8, groupID + 8 for i >= 8;
    col = (threadID_in_group * 8) + (i & 0x7)."""
    return group_id(lane) + bit(r, 3) * 8, thread_in_group(lane) * 8 + (r & 7)


def b_m16n8k32_i4(r, lane, warp):
    """B .s4/.u4 ``b0..b7``: row = (threadID_in_group * 8) + (i & 0x7); col = groupID."""
    return thread_in_group(lane) * 8 + r, group_id(lane)


def a_m16n8k32_i8(r, lane, warp):
    """A 8-bit ``a0..a15``: row = groupID for ai where 0 <= i < 4 || 8 <= i < 12, groupID + 8
    otherwise; col = (threadID_in_group * 4) + (i & 0x3) for i < 8, ... + 16 for i >= 8."""
    return group_id(lane) + bit(r, 2) * 8, thread_in_group(lane) * 4 + (r & 3) + bit(r, 3) * 16


def b_m16n8k32_i8(r, lane, warp):
    """B 8-bit ``b0..b7``: row = (threadID_in_group * 4) + (i & 0x3) for bi where i < 4,
    ... + 16 for i >= 4; col = groupID."""
    return thread_in_group(lane) * 4 + (r & 3) + bit(r, 2) * 16, group_id(lane)


_abc("m16n8k32", (16, a_m16n8k32_i4), (8, b_m16n8k32_i4), None, "10", ("s4", "u4"))
_abc("m16n8k32", (16, a_m16n8k32_i8), (8, b_m16n8k32_i8), None, "10",
     ("s8", "u8", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1"))
_register("m16n8k32", "C", ("s32", "f32", "f16"), 16, 8, 4, c_m16n8, "10")


# =============================================================================================
# m16n8k64 (.s4/.u4/.e2m1; §9.7.14.5.11)
# =============================================================================================
def a_m16n8k64(r, lane, warp):
    """A ``a0..a31``: row = groupID for ai where 0 <= i < 8 || 16 <= i < 24, groupID + 8
    otherwise; col = (threadID_in_group * 8) + (i & 0x7) for i < 16, ... + 32 for i >= 16."""
    return group_id(lane) + bit(r, 3) * 8, thread_in_group(lane) * 8 + (r & 7) + bit(r, 4) * 32


def b_m16n8k64(r, lane, warp):
    """B ``b0..b15``: row = (threadID_in_group * 8) + (i & 0x7) for bi where i < 8, ... + 32 for
    i >= 8; col = groupID."""
    return thread_in_group(lane) * 8 + (r & 7) + bit(r, 3) * 32, group_id(lane)


_abc("m16n8k64", (32, a_m16n8k64), (16, b_m16n8k64), (4, c_m16n8), "11", ("s4", "u4", "e2m1"),
     c_types=("s32", "f32"))


# =============================================================================================
# m16n8k128 and m16n8k256 (.b1; §9.7.14.5.12, §9.7.14.5.13)
# =============================================================================================
def a_m16n8k128(r, lane, warp):
    """A ``a0..a63``: row = groupID for ai where i < 32, groupID + 8 for i >= 32;
    col = (threadID_in_group * 32) + (i & 0x1F)."""
    return group_id(lane) + bit(r, 5) * 8, thread_in_group(lane) * 32 + (r & 31)


def b_m16n8k128(r, lane, warp):
    """B ``b0..b31``: row = (threadID_in_group * 32) + i; col = groupID."""
    return thread_in_group(lane) * 32 + r, group_id(lane)


def a_m16n8k256(r, lane, warp):
    """A ``a0..a127``: row = groupID for ai where 0 <= i < 32 || 64 <= i < 96, groupID + 8
    otherwise; col = (threadID_in_group * 32) + (i & 0x1F) for i < 64, ... + 128 for i >= 64.

    ISA erratum: the text prints ``(threadID_in_group * 32) + i`` for ``i < 64``; read literally,
    elements a32..a63 would land in columns 32..63 past the thread's own 32-column slice, two
    threads would share elements and row groupID+8, columns 0..31 would have no holder
    (``tests/test_ptx.py`` demonstrates it). Figures 100-103 and the m16n8k128 wording show the
    intended ``(i & 0x1F)``, used here."""
    return group_id(lane) + bit(r, 5) * 8, thread_in_group(lane) * 32 + (r & 31) + bit(r, 6) * 128


def b_m16n8k256(r, lane, warp):
    """B ``b0..b63``: row = (threadID_in_group * 32) + (i & 0x1F) for bi where i < 32,
    ... + 128 for i >= 32; col = groupID."""
    return thread_in_group(lane) * 32 + (r & 31) + bit(r, 5) * 128, group_id(lane)


_abc("m16n8k128", (64, a_m16n8k128), (32, b_m16n8k128), (4, c_m16n8), "12", ("b1",), c_types=("s32",))
_abc("m16n8k256", (128, a_m16n8k256), (64, b_m16n8k256), (4, c_m16n8), "13", ("b1",), c_types=("s32",))


def shapes() -> list[str]:
    return sorted({k[0] for k in MMA}, key=_mnk)


def layout_dependent(shape: str, operand: str) -> bool:
    """True where the ISA gives separate .row and .col fragments (m8n8k4 .f16 A and B)."""
    return any(k[0] == shape and k[1] == operand and k[2] for k in MMA)
