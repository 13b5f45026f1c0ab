"""Register fragments of ``tcgen05.ld`` / ``tcgen05.st`` (Blackwell tensor memory <-> registers).

Source: PTX ISA §9.7.16.2.3 "Data Movement Shape", §9.7.16.2.3.1 "Memory Layout", "Matrix
fragments for shape .32x32b / .16x64b / .16x128b / .16x256b / .16x32bx2" (Figures 183-187 in PTX
ISA 9.x). A warp moves ``.num`` (``x1 .. x128``) repetitions of the shape ``lanes x bits``; the ISA
gives the thread <-> cell association as figures only. The formulas below are read off them and
checked against three independent readings: Triton's TMEM register layouts
(``compute_tmem_reg_layout``), Tilus's ``tilus.ir.layout.cuda.tcgen05.ldst.get_ldst_layout`` and
CUTLASS's ``Copy_Traits<SM100_TMEM_LOAD_*>`` (``tests/test_ptx_tcgen05.py``).

Canonical form: hardware dims ``register`` (``r0, r1, ...`` of the instruction's ``.b32`` vector),
``lane`` (32), ``warp`` (1), ``block`` (1); logical dims ``dim0`` = TMEM lane (data-path row)
relative to the warp's first accessed lane, ``dim1`` = TMEM column (one 32-bit cell) relative to
the address's column. With ``l`` the lane id and ``r`` the register index:

============  ==================  =============  =====================================================
shape         tile (lanes x cols)  registers      register ``r`` of lane ``l`` holds (lane, column)
============  ==================  =============  =====================================================
32x32b        32 x num             num            ``(l, r)``
16x64b        16 x 2 num           num            ``(l // 4 + 8 (l % 2), (l // 2) % 2 + 2 r)``
16x128b       16 x 4 num           2 num          ``(l // 4 + 8 (r % 2), l % 4 + 4 (r // 2))``
16x256b       16 x 8 num           4 num          ``(l // 4 + 8 ((r // 2) % 2), r % 2 + 2 (l % 4) + 8 (r // 4))``
16x32bx2      16 x 2 num           num            ``(l % 16, r + num (l // 16))``
============  ==================  =============  =====================================================

``.16x32bx2`` accesses two 16-lane halves, the second at ``taddr + immHalfSplitoff``; the
fragment places it at column ``num`` (``immHalfSplitoff = num``, what CUTLASS's
``SM100_TMEM_LOAD_16dp32b*x`` issue), so the two halves tile a ``16 x 2 num`` block. ``.pack::16b``
/ ``.unpack::16b`` (two 16-bit values per register) are not modelled.
"""
from __future__ import annotations

from layoutverify.adapters.isa.fragment import Fragment, bit

ISA = "PTX ISA §9.7.16.2.3.1"

#: shape -> (TMEM lanes, columns per repetition, registers per repetition, figure)
SHAPES = {
    "32x32b": (32, 1, 1, "Figure 183"),
    "16x64b": (16, 2, 1, "Figure 184"),
    "16x128b": (16, 4, 2, "Figure 185"),
    "16x256b": (16, 8, 4, "Figure 186"),
    "16x32bx2": (16, 2, 1, "Figure 187"),
}
NUMS = (1, 2, 4, 8, 16, 32, 64, 128)


def cell_32x32b(r, lane, warp):
    """.32x32b: every lane reads its own TMEM lane; register r is column r."""
    return lane, r


def cell_16x64b(r, lane, warp):
    """.16x64b: lanes 0, 2 share TMEM lane 0 (columns 0, 1), lanes 4, 6 TMEM lane 1, ...; odd lanes
    hold TMEM lanes 8-15: (l // 4 + 8 (l % 2), (l // 2) % 2 + 2 r)."""
    return (lane >> 2) + bit(lane, 0) * 8, bit(lane, 1) + r * 2


def cell_16x128b(r, lane, warp):
    """.16x128b: four lanes per TMEM lane (columns l % 4), the odd registers 8 TMEM lanes down:
    (l // 4 + 8 (r % 2), l % 4 + 4 (r // 2))."""
    return (lane >> 2) + bit(r, 0) * 8, (lane & 3) + (r >> 1) * 4


def cell_16x256b(r, lane, warp):
    """.16x256b: four lanes per TMEM lane, each two adjacent columns; registers 2, 3 are 8 TMEM lanes
    down: (l // 4 + 8 ((r // 2) % 2), r % 2 + 2 (l % 4) + 8 (r // 4))."""
    return (lane >> 2) + bit(r, 1) * 8, bit(r, 0) + (lane & 3) * 2 + (r >> 2) * 8


def _cell_16x32bx2(num: int):
    def cell(r, lane, warp):
        return lane & 15, r + (lane >> 4) * num
    cell.__doc__ = (f".16x32bx2 .x{num}: lanes 0-15 read TMEM lanes 0-15 at the address, lanes 16-31 the same "
                    f"TMEM lanes at immHalfSplitoff = {num} columns further: (l % 16, r + {num} (l // 16)).")
    return cell


_CELLS = {"32x32b": cell_32x32b, "16x64b": cell_16x64b, "16x128b": cell_16x128b, "16x256b": cell_16x256b}


def fragment(op: str, shape: str, num: int) -> Fragment:
    """The fragment of ``tcgen05.{ld,st}.{shape}.x{num}`` (``shape`` and ``num`` validated by the caller)."""
    lanes, cols, regs, figure = SHAPES[shape]
    coords = _cell_16x32bx2(num) if shape == "16x32bx2" else _CELLS[shape]
    note = ("dim0 = TMEM lane relative to the warp's first accessed lane, dim1 = 32-bit TMEM column "
            "relative to the address")
    if shape == "16x32bx2":
        note += f"; the second half sits at immHalfSplitoff = {num} columns"
    return Fragment(name=f"{op}.{shape}.x{num}", operand="tile", rows=lanes, cols=cols * num,
                    registers=regs * num, coords=coords, source=f"{ISA}, {figure}", note=note)


def names() -> list[str]:
    return [f"tcgen05.ld.{s}.x{n}" for s in SHAPES for n in NUMS]
