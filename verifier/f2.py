"""Linear algebra over GF(2) with vectors bit-packed into Python ints.

Conventions:

* A **vector** is a non-negative ``int``; bit ``k`` is coordinate ``k``. Addition is XOR.
* A **linear map** ``M`` is given by its *column images*: ``cols[i] = M(e_i)`` (the image of the
  ``i``-th unit vector), exactly like Triton's bases ``L(2**i)``. ``M(x)`` is the XOR of the
  columns selected by the set bits of ``x``.
* A **subspace** is given by any spanning list of vectors; :class:`Echelon` keeps a reduced
  basis of it and remembers, for every basis vector, which input vectors it combines (so a
  vector in the span can be written back as a combination of the inputs).

Everything is exact and small (layouts have at most a few dozen hardware bits), so plain ints
beat numpy here.
"""
from __future__ import annotations

from typing import Iterable, Sequence


class Echelon:
    """Incremental row echelon form of a list of vectors.

    ``add(v)`` inserts the next input vector (numbered 0, 1, ... in insertion order) and returns
    whether it enlarged the span. :meth:`solve` writes a vector as a combination (a bitmask over
    input numbers) of the inputs, or returns ``None`` when it lies outside the span.
    """

    __slots__ = ("_rows", "_count")

    def __init__(self, vectors: Iterable[int] = ()):
        # pivot bit -> (reduced vector whose highest set bit is the pivot, combination mask)
        self._rows: dict[int, tuple[int, int]] = {}
        self._count = 0
        for v in vectors:
            self.add(v)

    def _reduce(self, v: int) -> tuple[int, int]:
        combo = 0
        while v:
            p = v.bit_length() - 1
            row = self._rows.get(p)
            if row is None:
                break
            v ^= row[0]
            combo ^= row[1]
        return v, combo

    def add(self, v: int) -> bool:
        if v < 0:
            raise ValueError("GF(2) vectors are non-negative ints")
        idx = self._count
        self._count += 1
        r, combo = self._reduce(v)
        if r == 0:
            return False
        self._rows[r.bit_length() - 1] = (r, combo ^ (1 << idx))
        return True

    @property
    def rank(self) -> int:
        return len(self._rows)

    def basis(self) -> list[int]:
        """A basis of the span (reduced vectors, highest pivot first)."""
        return [self._rows[p][0] for p in sorted(self._rows, reverse=True)]

    def contains(self, v: int) -> bool:
        return self._reduce(v)[0] == 0

    def solve(self, v: int) -> int | None:
        """A bitmask ``c`` over input numbers with ``XOR_{i in c} input_i == v``, or ``None``."""
        r, combo = self._reduce(v)
        return combo if r == 0 else None


def rank(vectors: Iterable[int]) -> int:
    """Dimension of the span of ``vectors``."""
    return Echelon(vectors).rank


def row_reduce(vectors: Iterable[int]) -> list[int]:
    """Fully reduced row echelon basis of the span: pivots (highest bits) descending, and no
    basis vector has another's pivot bit set. Unique for a given subspace."""
    rows = Echelon(vectors).basis()
    for i in range(len(rows)):
        p = rows[i].bit_length() - 1
        for j in range(len(rows)):
            if j != i and (rows[j] >> p) & 1:
                rows[j] ^= rows[i]
    return sorted(rows, reverse=True)


def in_span(v: int, vectors: Iterable[int]) -> bool:
    return Echelon(vectors).contains(v)


def same_span(a: Iterable[int], b: Iterable[int]) -> bool:
    return row_reduce(a) == row_reduce(b)


def apply(cols: Sequence[int], x: int) -> int:
    """``M(x)``: XOR of the columns picked by the set bits of ``x``."""
    out = 0
    i = 0
    while x:
        if x & 1:
            out ^= cols[i]
        x >>= 1
        i += 1
    return out


def image(cols: Sequence[int], subspace: Iterable[int] | None = None) -> list[int]:
    """Reduced basis of ``M(S)`` (``S`` given by spanning vectors; the whole domain if ``None``)."""
    if subspace is None:
        return row_reduce(cols)
    return row_reduce(apply(cols, s) for s in subspace)


def kernel(cols: Sequence[int]) -> list[int]:
    """A basis of ``{x : M(x) == 0}`` (vectors over the domain bits, one bit per column)."""
    ech = Echelon()
    out = []
    for i, c in enumerate(cols):
        r, combo = ech._reduce(c)
        if r == 0:
            out.append(combo ^ (1 << i))
        ech.add(c)
    return out


def inverse(cols: Sequence[int]) -> list[int] | None:
    """Columns of ``M^-1`` for a square invertible ``M`` (``n`` columns of ``n`` bits), else
    ``None``."""
    n = len(cols)
    if any(c >> n for c in cols):
        return None
    ech = Echelon(cols)
    if ech.rank != n:
        return None
    return [ech.solve(1 << k) for k in range(n)]


def compose(outer: Sequence[int], inner: Sequence[int]) -> list[int]:
    """Columns of ``outer ∘ inner``."""
    return [apply(outer, c) for c in inner]


# -- packing logical coordinates -------------------------------------------------------------
class Packing:
    """Packs a logical coordinate tuple with power-of-two sizes into one int: ``dim0`` in the
    lowest bits, each dim taking ``log2(size)`` bits. Coordinates combine by XOR in F2 layouts,
    so the packing is a linear isomorphism."""

    __slots__ = ("bits", "shifts")

    def __init__(self, sizes: Sequence[int]):
        self.bits = [max(0, int(s) - 1).bit_length() for s in sizes]
        self.shifts = []
        sh = 0
        for b in self.bits:
            self.shifts.append(sh)
            sh += b

    @property
    def width(self) -> int:
        return sum(self.bits)

    def pack(self, coords: Sequence[int]) -> int:
        v = 0
        for c, sh in zip(coords, self.shifts):
            v |= int(c) << sh
        return v

    def unpack(self, v: int) -> list[int]:
        return [(v >> sh) & ((1 << b) - 1) for sh, b in zip(self.shifts, self.bits)]
