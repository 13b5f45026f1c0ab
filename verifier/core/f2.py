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
_PACKINGS: dict = {}


class Packing:
    """Packs a logical coordinate tuple with power-of-two sizes into one int: ``dim0`` in the
    lowest bits, each dim taking ``log2(size)`` bits. Coordinates combine by XOR in F2 layouts,
    so the packing is a linear isomorphism."""

    __slots__ = ("bits", "shifts", "full")

    def __init__(self, sizes: Sequence[int]):
        self.bits = [max(0, int(s) - 1).bit_length() for s in sizes]
        self.shifts = []
        sh = 0
        for b in self.bits:
            self.shifts.append(sh)
            sh += b
        #: every logical bit set (the packed value of the whole space's top corner)
        self.full = (1 << sh) - 1

    @property
    def width(self) -> int:
        return sum(self.bits)

    def pack(self, coords: Sequence[int]) -> int:
        v = 0
        for c, sh in zip(coords, self.shifts):
            v |= int(c) << sh
        return v

    def pack_all(self, vectors) -> list[int]:
        """``[pack(v) for v in vectors]``, one expression per vector for one or two logical dims
        (every vector has one coordinate per logical dim)."""
        shifts = self.shifts
        if len(shifts) == 2:
            s1 = shifts[1]
            return [int(a) | int(b) << s1 for a, b in vectors]
        if len(shifts) == 1:
            return [int(a) for (a,) in vectors]
        return [self.pack(v) for v in vectors]

    @classmethod
    def of(cls, sizes: Sequence[int]) -> "Packing":
        """The packing of ``sizes``, shared (packings are never changed once made)."""
        key = tuple(sizes)
        got = _PACKINGS.get(key)
        if got is None:
            if len(_PACKINGS) >= 1024:
                _PACKINGS.clear()
            got = _PACKINGS[key] = cls(key)
        return got

    def unpack(self, v: int) -> list[int]:
        return [(v >> sh) & ((1 << b) - 1) for sh, b in zip(self.shifts, self.bits)]


# -- reading F2 bases off an expression, symbolically ----------------------------------------------
class NotLinear(Exception):
    """The expression is not recognisably F2-linear (it may still be; the caller falls back to
    an exhaustive check)."""


def linearize(exprs, in_dims, out_sizes) -> dict[str, list[tuple[int, ...]]] | None:
    """F2 bases of a map given by expressions, derived symbolically, or ``None``.

    Every value is tracked bit by bit as an affine GF(2) form over the hardware bits: bit 0 of a
    form is the constant 1, bit ``g + 1`` is hardware bit ``g`` (dims in ``in_dims`` order, least
    significant bit first). ``^``, ``& c``, ``>> k``, ``<< k``, ``// 2**k``, ``% 2**k`` act on the
    bit lists exactly; ``a + b`` is accepted only when no bit position can be non-zero in both
    (so no carry exists and it equals ``a ^ b``); ``a * c`` only for ``c`` a power of two or
    ``a`` a single bit. Anything else (``Lookup``, ``% 3``, a possible carry) gives ``None``:
    unknown, not "non-linear". The result is exact when it is not ``None``: every output bit
    is the stated XOR of hardware bits. Requires power-of-two sizes; a map with a non-zero
    constant term or a bit above its logical size gives ``None``.
    """
    from layoutverify.core import expr as E

    offs, nbits = {}, 0
    var_bits = {}
    for n, s in in_dims:
        if s < 1 or s & (s - 1):
            return None
        offs[n] = nbits
        var_bits[n] = [1 << (nbits + i + 1) for i in range(s.bit_length() - 1)]
        nbits += s.bit_length() - 1
    memo: dict[int, list[int]] = {}

    def trim(bits):
        while bits and bits[-1] == 0:
            bits.pop()
        return bits

    def lin(x) -> list[int]:
        key = id(x)
        if key in memo:
            return memo[key]
        if isinstance(x, E.Var):
            r = var_bits[x.name]
        elif isinstance(x, E.Const):
            r = [1 if (x.value >> j) & 1 else 0 for j in range(x.value.bit_length())]
        elif isinstance(x, E.Xor):
            a, b = lin(x.a), lin(x.b)
            n = max(len(a), len(b))
            r = [(a[j] if j < len(a) else 0) ^ (b[j] if j < len(b) else 0) for j in range(n)]
        elif isinstance(x, E.Add):
            a, b = lin(x.a), lin(x.b)
            if any(a[j] and b[j] for j in range(min(len(a), len(b)))):
                raise NotLinear
            n = max(len(a), len(b))
            r = [(a[j] if j < len(a) else 0) ^ (b[j] if j < len(b) else 0) for j in range(n)]
        elif isinstance(x, E.And):
            a = lin(x.a)
            r = [a[j] if (x.c >> j) & 1 else 0 for j in range(len(a))]
        elif isinstance(x, E.Shr):
            r = lin(x.a)[x.c:]
        elif isinstance(x, E.Shl):
            r = [0] * x.c + lin(x.a)
        elif isinstance(x, E.FloorDiv):
            if x.c & (x.c - 1):
                raise NotLinear
            r = lin(x.a)[x.c.bit_length() - 1:]
        elif isinstance(x, E.Mod):
            a = lin(x.a)
            if x.c & (x.c - 1) == 0:
                r = a[:x.c.bit_length() - 1]
            elif (1 << len(trim(list(a)))) <= x.c:
                r = a  # the value is already below the modulus
            else:
                raise NotLinear
        elif isinstance(x, E.Mul):
            a = trim(list(lin(x.a)))
            if x.c & (x.c - 1) == 0:
                r = [0] * (x.c.bit_length() - 1) + a
            else:
                nz = [j for j, f in enumerate(a) if f]
                if len(nz) > 1:
                    raise NotLinear
                if not nz:
                    r = []
                else:
                    p, f = nz[0], a[nz[0]]
                    c = x.c << p
                    r = [f if (c >> j) & 1 else 0 for j in range(c.bit_length())]
        else:  # Lookup and anything unknown
            raise NotLinear
        r = trim(list(r))
        memo[key] = r
        return r

    try:
        outs = [lin(e) for e in exprs]
    except NotLinear:
        return None
    for bits, size in zip(outs, out_sizes):
        if size & (size - 1):
            return None
        k = size.bit_length() - 1
        if len(bits) > k or any(f & 1 for f in bits):
            return None  # may leave the tensor, or L(0) != 0: not a linear layout
    bases = {}
    for n, s in in_dims:
        vecs = []
        for i in range(s.bit_length() - 1):
            g = offs[n] + i + 1
            vecs.append(tuple(sum(((f >> g) & 1) << j for j, f in enumerate(bits)) for bits in outs))
        bases[n] = vecs
    return bases
