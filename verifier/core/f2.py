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


def pivot_rows(vectors: Iterable[int], rows: dict[int, int] | None = None) -> dict[int, int]:
    """A row echelon basis of the span of ``vectors`` (added to a copy of ``rows``, an earlier
    result): ``{pivot bit: row}`` where each row's highest set bit is its pivot, pivots distinct."""
    rows = {} if rows is None else dict(rows)
    for v in vectors:
        while v:
            p = v.bit_length() - 1
            r = rows.get(p)
            if r is None:
                rows[p] = v
                break
            v ^= r
    return rows


def rref(rows: dict[int, int]) -> list[int]:
    """The reduced row echelon basis of the span of an echelon basis (:func:`pivot_rows`): each
    pivot bit set in its own row only, highest pivot first. The canonical basis of a subspace:
    two spans are equal iff their lists are."""
    out = [rows[p] for p in sorted(rows, reverse=True)]
    for i in range(len(out) - 1, -1, -1):  # back-substitute: clear each pivot from the rows above
        p = 1 << (out[i].bit_length() - 1)
        for j in range(i):
            if out[j] & p:
                out[j] ^= out[i]
    return out


def reduce(v: int, basis: Sequence[int]) -> int:
    """The canonical representative of the coset ``v + span(basis)`` (``basis`` reduced, as
    :func:`rref` gives it): ``v`` with every pivot bit cleared."""
    for r in basis:
        if v >> (r.bit_length() - 1) & 1:
            v ^= r
    return v


class Echelon:
    """Incremental row echelon form of a list of vectors, remembering combinations.

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
        """Insert the next input vector; whether it enlarged the span."""
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
        """The dimension of the span."""
        return len(self._rows)

    def basis(self) -> list[int]:
        """A basis of the span (reduced vectors, highest pivot first)."""
        return [self._rows[p][0] for p in sorted(self._rows, reverse=True)]

    def contains(self, v: int) -> bool:
        """Whether ``v`` lies in the span."""
        return self._reduce(v)[0] == 0

    def solve(self, v: int) -> int | None:
        """A bitmask ``c`` over input numbers with ``XOR_{i in c} input_i == v``, or ``None``."""
        r, combo = self._reduce(v)
        return combo if r == 0 else None


def rank(vectors: Iterable[int]) -> int:
    """Dimension of the span of ``vectors``."""
    return len(pivot_rows(vectors))


def row_reduce(vectors: Iterable[int]) -> list[int]:
    """Fully reduced row echelon basis of the span: pivots (highest bits) descending, and no
    basis vector has another's pivot bit set. Unique for a given subspace."""
    return rref(pivot_rows(vectors))


def in_span(v: int, vectors: Iterable[int]) -> bool:
    """Whether ``v`` is a combination of ``vectors``."""
    return reduce(v, row_reduce(vectors)) == 0


def same_span(a: Iterable[int], b: Iterable[int]) -> bool:
    """Whether two lists of vectors span the same subspace."""
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
        """The number of bits of a packed coordinate: ``sum(log2(size))``."""
        return sum(self.bits)

    def pack(self, coords: Sequence[int]) -> int:
        """The packed int of a coordinate tuple (``dim0`` in the lowest bits)."""
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
        """The coordinate tuple of a packed int (the inverse of :meth:`pack`)."""
        return [(v >> sh) & ((1 << b) - 1) for sh, b in zip(self.shifts, self.bits)]


# -- reading F2 bases off an expression, symbolically ----------------------------------------------
class NotLinear(Exception):
    """The expression is not recognisably F2-linear (it may still be; the caller falls back to
    an exhaustive check)."""


def _trim(bits: list[int]) -> list[int]:
    while bits and bits[-1] == 0:
        bits.pop()
    return bits


def _xor_bits(a: list[int], b: list[int]) -> list[int]:
    n = max(len(a), len(b))
    return _trim([(a[j] if j < len(a) else 0) ^ (b[j] if j < len(b) else 0) for j in range(n)])


def _add_bits(x, a, b):
    if any(a[j] and b[j] for j in range(min(len(a), len(b)))):
        raise NotLinear  # a bit may be set in both: a carry is possible
    return _xor_bits(a, b)


def _mod_bits(x, a):
    if x.c & (x.c - 1) == 0:
        return _trim(a[:x.c.bit_length() - 1])
    if (1 << len(a)) <= x.c:
        return a  # the value is already below the modulus
    raise NotLinear


def _mul_bits(x, a):
    if x.c & (x.c - 1) == 0:
        return _trim([0] * (x.c.bit_length() - 1) + a)
    nz = [j for j, f in enumerate(a) if f]
    if len(nz) > 1:
        raise NotLinear
    if not nz:
        return []
    p, f = nz[0], a[nz[0]]
    c = x.c << p
    return _trim([f if (c >> j) & 1 else 0 for j in range(c.bit_length())])


def _floordiv_bits(x, a):
    if x.c & (x.c - 1):
        raise NotLinear
    return a[x.c.bit_length() - 1:]


def _not_linear(x, *_):
    raise NotLinear


def linearize(exprs, in_dims, out_sizes) -> dict[str, list[tuple[int, ...]]] | None:
    """F2 bases of a map given by expressions, derived symbolically, or ``None``.

    Every value is tracked bit by bit as an affine GF(2) form over the hardware bits (a fold of
    :func:`layoutverify.core.expr.fold` with the rules below): bit 0 of a form is the constant 1,
    bit ``g + 1`` is hardware bit ``g`` (dims in ``in_dims`` order, least significant bit first);
    a value is the list of its bits' forms, least significant first. ``^``, ``& c``, ``>> k``,
    ``<< k``, ``// 2**k``, ``% 2**k`` act on the bit lists exactly; ``a + b`` is accepted only
    when no bit position can be non-zero in both (so no carry exists and it equals ``a ^ b``);
    ``a % c`` for any ``c`` above every value of ``a``; ``a * c`` only for ``c`` a power of two or
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
    rules = {
        E.Var: lambda x: var_bits[x.name],
        E.Const: lambda x: [1 if (x.value >> j) & 1 else 0 for j in range(x.value.bit_length())],
        E.Xor: lambda x, a, b: _xor_bits(a, b),
        E.Add: _add_bits,
        E.And: lambda x, a: _trim([a[j] if (x.c >> j) & 1 else 0 for j in range(len(a))]),
        E.Shr: lambda x, a: a[x.c:],
        E.Shl: lambda x, a: _trim([0] * x.c + a),
        E.FloorDiv: _floordiv_bits,
        E.Mod: _mod_bits,
        E.Mul: _mul_bits,
        E.Lookup: _not_linear,
    }
    memo: dict = {}
    try:
        outs = [E.fold(e, rules, memo) for e in exprs]
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


def prove_linear(layout, bases, timeout_ms: int = 10_000) -> bool:
    """Whether z3 proves ``L(x) == XOR_{i in bits(x)} bases_i`` at every hardware location ``x``
    (for layouts too large to tabulate: it refutes ``exists x: L(x) != ...``). A time-out counts
    as not proved."""
    import z3

    from layoutverify.core import expr as E

    bounds = {n: s - 1 for n, s in layout.in_dims}
    cand = max((max(v) if v else 0) for vs in bases.values() for v in vs) if bases else 0
    width = E.bit_width(layout.exprs, bounds, extra=max(cand, max(layout.out_sizes)))
    env = {n: z3.BitVec(n, width) for n in layout.in_names}
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    for n, size in layout.in_dims:
        s.add(z3.ULT(env[n], size))
    diffs = []
    for d, e in enumerate(layout.exprs):
        lhs = E.to_z3(e, env, width)
        rhs = z3.BitVecVal(0, width)
        for n in layout.in_names:
            for b, v in enumerate(bases[n]):
                if v[d]:
                    bit = z3.Extract(b, b, env[n])
                    rhs = rhs ^ z3.If(bit == 1, z3.BitVecVal(v[d], width), z3.BitVecVal(0, width))
        diffs.append(lhs != rhs)
    s.add(z3.Or(*diffs) if diffs else z3.BoolVal(False))
    return s.check() == z3.unsat
