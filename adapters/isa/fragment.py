"""A matrix-instruction register fragment, stated as formulas (the PTX and AMD ISA adapters build them).

A :class:`Fragment` says, for one operand of one matrix instruction, which element of the operand
matrix each hardware location holds:

* hardware dims (inputs), in this order: ``register`` (the per-thread element index in the order
  the ISA numbers them, packed registers unpacked: ``a0, a1, ...``), ``lane`` (32 on NVIDIA and
  RDNA wave32, 64 on CDNA wave64), ``warp`` (1, or 4 for a Hopper warpgroup), ``block`` (always 1;
  present so that the layout has the same dims as Triton's distributed linear layouts);
* logical dims (outputs): ``dim0`` = row, ``dim1`` = column of the operand matrix
  (A is M x K, B is K x N, C/D is M x N; DESIGN.md §1). Multi-block instructions (AMD MFMA
  ``_4b``, ``_16b``: several independent small products) put the block first:
  ``dim0`` = block, ``dim1`` = row, ``dim2`` = column.

The map is given by :attr:`Fragment.coords`, a function of the symbolic hardware indices
``(register, lane, warp)`` returning ``(row, col)`` (or ``(block, row, col)``) expressions, transcribed from the vendor's
formulas. Nothing is tabulated, so whether the result is F2-linear is detected, not declared.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from layoutverify.core import expr as E
from layoutverify.core.layout import Layout

Coords = Callable[[E.Expr, E.Expr, E.Expr], tuple]


def bit(x: E.Expr, k: int) -> E.Expr:
    """Bit ``k`` of ``x`` (0 or 1)."""
    return (x >> k) & 1


@dataclass(frozen=True)
class Fragment:
    """One operand fragment of one matrix instruction."""

    name: str                 #: canonical text, e.g. ``mma.m16n8k16.f16.A``
    operand: str              #: ``A``, ``B`` or ``C`` (C also names the result D)
    rows: int                 #: logical dim0 size
    cols: int                 #: logical dim1 size
    registers: int            #: elements per thread (the ISA's count, packed values unpacked)
    coords: Coords = field(repr=False, compare=False)
    source: str = ""          #: where the formulas come from (document and section)
    lanes: int = 32
    warps: int = 1
    note: str = ""            #: replication or other facts worth saying
    blocks: int = 1           #: independent blocks (AMD multi-block MFMA); > 1 adds a leading logical dim

    def in_dims(self):
        """The hardware dims ``register, lane, warp, block`` with their sizes (block 1)."""
        return [("register", self.registers), ("lane", self.lanes), ("warp", self.warps), ("block", 1)]

    @property
    def shape(self) -> tuple[int, ...]:
        """Logical shape: ``(rows, cols)``, or ``(blocks, rows, cols)`` for multi-block fragments."""
        return (self.rows, self.cols) if self.blocks == 1 else (self.blocks, self.rows, self.cols)

    def layout(self) -> Layout:
        """The canonical layout: (register, lane, warp, block) -> (dim0 = row, dim1 = col)
        (or (dim0 = block, dim1 = row, dim2 = col) for multi-block fragments)."""
        exprs = self.coords(E.Var("register"), E.Var("lane"), E.Var("warp"))
        out = [(f"dim{i}", s) for i, s in enumerate(self.shape)]
        return Layout(self.in_dims(), out, list(exprs), name=self.name)

    @property
    def threads(self) -> int:
        """Threads that hold the fragment: ``lanes * warps``."""
        return self.lanes * self.warps
