"""Register layouts of ``ldmatrix`` / ``stmatrix`` ``.m8n8 .b16`` (PTX ISA §9.7.14.5.15-16).

Facts from the ISA:

* ``.x1/.x2/.x4`` move 1, 2 or 4 matrices of 8 x 8 16-bit elements; the eight row addresses of
  matrix ``m`` come from threads ``8m .. 8m+7`` (addr0-addr7 are the rows of the first matrix,
  addr8-addr15 of the second, ...).
* "Each thread in a warp loads fragments of a row, with thread 0 receiving the first fragment in
  its register r ... A group of four threads loads an entire row" (Figure 104): destination
  register ``r_m`` (one ``.b32`` = two ``.b16``) of lane ``l`` holds row ``l >> 2``, columns
  ``2 * (l % 4)`` and ``2 * (l % 4) + 1`` of matrix ``m``.
* ``.trans``: "the matrix is loaded in column-major format": lane ``l`` holds column ``l >> 2``,
  rows ``2 * (l % 4)`` and ``2 * (l % 4) + 1`` of the matrix as it lies in memory.
* ``stmatrix`` (sm_90) stores with the same fragment layout ("Each thread in a warp stores
  fragments of a row ...", Figure 107).

The canonical layout describes the *tile in memory* that the row addresses point at:

* ``register`` = ``2m + j``: register ``r_m`` unpacked, ``j`` = low (0) / high (1) half;
* logical tile, by default ``8*num x 8``: matrix ``m`` is rows ``8m .. 8m+7`` (each row is the
  8 elements at the address thread ``8m + row`` supplies). With ``shape`` the matrices are placed
  as ``R x C`` blocks of 8 x 8 in column-major block order (matrix ``m`` at block row ``m % R``,
  block column ``m // R``): ``.x4`` as ``16x16`` is the usual A-operand load of ``mma.m16n8k16``
  (matrix 0 top left, 1 bottom left, 2 top right, 3 bottom right).
"""
from __future__ import annotations

from layoutverify.core.errors import LayoutError

from layoutverify.adapters.isa.fragment import Fragment

ISA = "PTX ISA §9.7.14.5.15"
NUMS = {"x1": 1, "x2": 2, "x4": 4}


def arrangements(num: int) -> list[tuple[int, int]]:
    """The tile shapes a ``.x{num}`` load can be viewed as: ``(8*R, 8*C)`` with ``R*C = num``."""
    return [(8 * (num // c), 8 * c) for c in (1, 2, 4) if num % c == 0]


def fragment(op: str, num: int, trans: bool, shape=None) -> Fragment:
    """The layout of ``{op}.x{num}[.trans]`` over a tile of ``shape`` (default ``(8*num, 8)``)."""
    if shape is None:
        shape = (8 * num, 8)
    shape = tuple(int(s) for s in shape)
    if shape not in arrangements(num):
        raise LayoutError(f"{op}.x{num} loads {num} 8x8 matrices; a tile of shape "
                          f"{'x'.join(map(str, shape))} does not hold them; use one of "
                          + ", ".join(f"{r}x{c}" for r, c in arrangements(num)))
    block_rows = shape[0] // 8

    def coords(r, lane, warp):
        m, j = r >> 1, r & 1
        if trans:
            row_in, col_in = (lane % 4) * 2 + j, lane >> 2
        else:
            row_in, col_in = lane >> 2, (lane % 4) * 2 + j
        return (m % block_rows) * 8 + row_in, (m // block_rows) * 8 + col_in

    coords.__doc__ = (f"{op}.x{num}{'.trans' if trans else ''}: register 2m+j of lane l -> matrix m, "
                      + ("row 2*(l%4)+j, column l>>2" if trans else "row l>>2, column 2*(l%4)+j"))
    name = f"{op}.x{num}{'.trans' if trans else ''}"
    src = ISA if op == "ldmatrix" else "PTX ISA §9.7.14.5.16"
    return Fragment(name=name, operand="tile", rows=shape[0], cols=shape[1], registers=2 * num, coords=coords,
                    source=src)


def names() -> list[str]:
    return [f"{op}.{x}{t}" for op in ("ldmatrix", "stmatrix") for x in NUMS for t in ("", ".trans")]
