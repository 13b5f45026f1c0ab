"""The canonical layout: hardware index space -> logical index space (DESIGN.md §1).

Conventions, fixed for the whole project:

* **Hardware dims** (inputs) are ordered and sized: ``register, lane, warp, block`` for
  distributed (register) layouts, ``offset, block`` for memory layouts. Sizes are any positive
  integers. A hardware location is one index per hardware dim.
* **Flat hardware index**: the *first* hardware dim is the fastest, as in Triton's linear
  layouts: ``flat = register + R * (lane + L * (warp + W * block))``. Tables are in that order.
* **Logical dims** (outputs) are ``dim0, dim1, ...``; ``dim0`` is the first tensor index (the row
  of a 2-D tile). A flat logical index is row-major: the *last* logical dim is the fastest.
* Every hardware location holds exactly one logical element; an element may have several holders
  (replication). A layout that leaves an element without holder is *partial*.

**The representation.** A layout is ``Layout(in_dims, out_dims, map)``; the map ``L`` is one of
four frozen types, each stating the map in the form its source has it:

=================  =======================================================================
:class:`F2Bases`   ``bases[in_dim][i] = L(in_dim = 2**i)``, every other dim 0; ``L(x)`` is the
                   XOR of the bases of the set bits of ``x`` (Triton's ``LinearLayout``)
:class:`Digits`    ``L(x)[d] = offset[d] + sum over digits ((x[n] // place) % radix) * strides[d]``
                   (mixed radix: CuTe shape:stride, Tilus modes)
:class:`Exprs`     one :class:`~layoutverify.core.expr.Expr` per logical dim over variables named
                   after the hardware dims (swizzles, reshapes, anything else)
:class:`Table`     ``L(flat) = values[flat]``: an explicit table (flat hardware order)
=================  =======================================================================

``Layout.__init__`` is the one validating construction path: each map type checks itself
against the dims there (:meth:`LayoutMap.checked`), and the ``from_*`` class methods only
translate their arguments into a map. A plain sequence of expressions is accepted as the map
(``Layout(in_dims, out_dims, [e0, e1])``) and read as :class:`Exprs`. Conversions between the
representations are defined once, here: every map has expressions (:attr:`Layout.exprs`) and a
table (:meth:`Layout.table`); the F2 form (:attr:`Layout.f2_form`) is derived by one route
(:meth:`Layout._derive_f2`).

**Derived data.** A layout never changes once built, so whatever is computed from it alone is
computed once and kept by the layout: its expressions and table, its F2 form, fingerprint, and
the forms other core modules read (the comparison's normal form, the digit form, the packed F2
bases, the solver's facts). :class:`derived` is the one mechanism: a value kept in the
instance attribute of its name, written only here; modules that own a derivation register it
with :meth:`Layout.derive` (``Layout.derived_names()`` lists them all). No other module reads
or writes a layout's ``__dict__``. Derived values are dropped when a layout is pickled or copied
and computed again on demand.
"""
from __future__ import annotations

import hashlib
import json
import math
import numbers
from dataclasses import dataclass
from itertools import chain
from typing import Callable, Mapping, Sequence

import numpy as np

from layoutverify.core import expr as E
from layoutverify.core import f2 as F2
from layoutverify.core.errors import LayoutError, NotInvertibleError, SizeLimitError

#: the hardware dims of a register (distributed) layout (DESIGN.md §1)
THREAD_DIMS = frozenset({"register", "lane", "warp", "block"})

#: Largest hardware domain (number of locations) evaluated as an explicit table.
MAX_TABLE_LOCATIONS = 1 << 24

REGISTER_DIMS = ("register", "lane", "warp", "block")
MEMORY_DIMS = ("offset", "block")


def is_pow2(n: int) -> bool:
    """Whether ``n`` is a positive power of two."""
    return n >= 1 and (n & (n - 1)) == 0


def log2(n: int) -> int:
    """``k`` with ``2**k == n``; a :class:`LayoutError` when ``n`` is not a power of two."""
    if not is_pow2(n):
        raise LayoutError(f"{n} is not a power of two")
    return n.bit_length() - 1


def _norm_dims(dims, what: str) -> tuple[tuple[str, int], ...]:
    if type(dims) is tuple or type(dims) is list:  # already (name, positive int size) pairs, names distinct?
        seen = set()
        for p in dims:
            if type(p) is not tuple or len(p) != 2:
                break
            n, s = p
            if type(n) is not str or not n or type(s) is not int or s < 1 or n in seen:
                break
            seen.add(n)
        else:
            return tuple(dims)
    if isinstance(dims, Mapping):
        dims = list(dims.items())
    out = []
    seen = set()
    for item in dims:
        try:
            name, size = item
        except (TypeError, ValueError):
            raise LayoutError(f"{what} dims must be (name, size) pairs, got {item!r}") from None
        if not isinstance(name, str) or not name:
            raise LayoutError(f"{what} dim name must be a non-empty string, got {name!r}")
        if name in seen:
            raise LayoutError(f"{what} dim {name!r} appears twice")
        seen.add(name)
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise LayoutError(f"{what} dim {name!r} must have a positive integer size, got {size!r}")
        out.append((name, int(size)))
    return tuple(out)


def _logical(out_dims) -> tuple[tuple[str, int], ...]:
    """Logical dims from ``(name, size)`` pairs or from a shape (``[64, 32]``)."""
    if type(out_dims) is list and out_dims and type(out_dims[0]) is int:
        out_dims = tuple(out_dims)
    if type(out_dims) is tuple and out_dims and type(out_dims[0]) is int:
        got = _SHAPES.get(out_dims)  # (a shape of plain ints seen before: its dims, checked then)
        if got is not None and set(map(type, out_dims)) == _INT:
            return got
    if out_dims:
        first = out_dims[0] if type(out_dims) is tuple or type(out_dims) is list else next(iter(out_dims))
        if type(first) is not tuple and isinstance(first, (int, np.integer)):
            dims = _norm_dims(logical_dims(out_dims), "logical")
            if type(out_dims) is tuple and set(map(type, out_dims)) == _INT:
                if len(_SHAPES) >= 4096:
                    _SHAPES.clear()
                _SHAPES[out_dims] = dims
            return dims
    return _norm_dims(out_dims, "logical")


#: shape (a tuple of ints) -> its logical dims, as :func:`_logical` checked them
_SHAPES: dict = {}


def logical_dims(shape: Sequence[int]) -> tuple[tuple[str, int], ...]:
    """``[64, 32]`` -> ``(("dim0", 64), ("dim1", 32))``."""
    return tuple((f"dim{i}", int(s)) for i, s in enumerate(shape))


def _is_int(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, np.integer))


# -- the four representations of a map ---------------------------------------------------------
class LayoutMap:
    """A layout's map in one of its representations (frozen). Subclasses state the math of
    their form; :meth:`checked` is called by ``Layout.__init__`` and nowhere else."""

    __slots__ = ()

    def checked(self, in_dims, out_dims) -> "LayoutMap":
        """This map validated against the dims (``(name, size)`` tuples, already normalised),
        in its normal spelling (Python ints, tuples); a :class:`LayoutError` names what is wrong."""
        raise NotImplementedError

    def to_exprs(self, in_dims, out_dims) -> tuple[E.Expr, ...]:
        """One expression per logical dim computing the same map."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class F2Bases(LayoutMap):
    """An F2-linear map by its bases: ``bases = ((in_dim, (L(2**0), L(2**1), ...)), ...)`` in
    hardware-dim order, each basis a tuple of logical coordinates (``dim0`` first). ``L(x)`` is
    the XOR, coordinate by coordinate, of the bases of the set bits of ``x``; hardware dim
    ``in_dim`` has ``2**len(bases)`` indices. Exactly Triton's ``bases[inDim][i]``."""

    bases: tuple

    def as_dict(self) -> dict[str, tuple]:
        """``{in_dim: (basis, ...)}``."""
        return dict(self.bases)

    def checked(self, in_dims, out_dims) -> "F2Bases":
        for n, s in out_dims:
            if s & (s - 1):
                raise LayoutError(f"F2 layouts need power-of-two sizes; logical dim {n!r} has size {s}")
        pairs = self.bases if type(self.bases) is tuple else tuple(self.bases.items())
        every = [v for _, vs in pairs for v in vs]
        if not (set(map(type, every)) <= _TUPLE and set(map(type, chain.from_iterable(every))) <= _INT
                and set(map(type, [vs for _, vs in pairs])) <= _TUPLE):
            pairs = tuple([(n, tuple([tuple(map(int, v)) for v in vs])) for n, vs in pairs])
            every = [v for _, vs in pairs for v in vs]
        if tuple([(n, 1 << len(vs)) for n, vs in pairs]) != in_dims:
            raise LayoutError(f"the hardware dims {[list(d) for d in in_dims]} are not those of the bases "
                              f"({[[n, 1 << len(vs)] for n, vs in pairs]})")
        if every and not _inside(every, out_dims):  # the fast check failed: find the culprit
            nout = len(out_dims)
            for in_name, vecs in pairs:
                for v in vecs:
                    if len(v) != nout:
                        raise LayoutError(f"basis {list(v)} of {in_name!r} has {len(v)} entries, expected {nout} "
                                          f"(one per logical dim)")
                    for d, c in enumerate(v):
                        if c < 0 or c >= out_dims[d][1]:
                            raise LayoutError(f"basis {list(v)} of {in_name!r} is outside logical dim "
                                              f"{out_dims[d][0]!r} of size {out_dims[d][1]}")
        return self if pairs is self.bases else F2Bases(pairs)

    def to_exprs(self, in_dims, out_dims) -> tuple[E.Expr, ...]:
        """``dim_d = XOR_i ((x >> i) & 1) * basis_i[d]`` over every hardware dim ``x``."""
        acc: list[E.Expr] = [E.Const(0)] * len(out_dims)
        for in_name, vecs in self.bases:
            for bit, v in enumerate(vecs):
                bitvar = (E.Var(in_name) >> bit) & 1
                for d, c in enumerate(v):
                    if c:
                        acc[d] = acc[d] ^ (bitvar * c)
        return tuple(acc)

    def table(self, in_dims, nout: int) -> np.ndarray:
        """Every location's coordinates (first hardware dim fastest), by XOR doubling."""
        return _table_from_bases(in_dims, dict(self.bases), nout)


_INT, _TUPLE = frozenset({int}), frozenset({tuple})


def _inside(vecs: Sequence[tuple[int, ...]], out_dims: Sequence[tuple[str, int]]) -> bool:
    """Does every basis vector have one entry per logical dim, each in ``[0, size)``?"""
    if set(map(len, vecs)) != {len(out_dims)}:
        return False
    for col, (_, size) in zip(zip(*vecs), out_dims):
        if min(col) < 0 or max(col) >= size:
            return False
    return True


@dataclass(frozen=True, slots=True)
class Digits(LayoutMap):
    """A digit-linear (mixed-radix) map: ``L(x)[d] = offset[d] + sum_k t_k * strides_k[d]``
    over ``digits = ((in_dim, place, radix, strides), ...)``, where digit ``t_k = (x[in_dim] //
    place) % radix`` (``strides`` one non-negative int per logical dim). ``place * radix``
    divides the size of ``in_dim``; digits of one dim may leave parts of it unread (broadcast).
    Digits of radix 1 are dropped when the map is checked."""

    offset: tuple
    digits: tuple

    def checked(self, in_dims, out_dims) -> "Digits":
        nout = len(out_dims)
        sizes = dict(in_dims)
        try:
            off = tuple(int(c) for c in (self.offset if self.offset is not None else (0,) * nout))
        except (TypeError, ValueError):
            raise LayoutError(f"offset {self.offset!r} must have {nout} non-negative entries") from None
        if len(off) != nout or (off and min(off) < 0):
            raise LayoutError(f"offset {list(off)} must have {nout} non-negative entries")
        kept = []
        for item in self.digits:
            try:
                n, p, r, st = item
            except (TypeError, ValueError):
                raise LayoutError(f"a digit is (in_dim, place, radix, strides), got {item!r}") from None
            size = sizes.get(n) if type(n) is str else None
            if size is None:
                raise LayoutError(f"digit of unknown hardware dim {n!r}")
            if not (type(p) is int and type(r) is int):  # (the common case needs no conversions)
                if not (_is_int(p) and _is_int(r)):
                    raise LayoutError(f"digit {item!r}: place and radix must be positive integers")
                p, r = int(p), int(r)
            if p < 1 or r < 1:
                raise LayoutError(f"digit {item!r}: place and radix must be positive integers")
            try:
                st = tuple(st)
            except TypeError:
                raise LayoutError(f"digit {item!r}: strides must be {nout} non-negative integers") from None
            if not all(type(v) is int for v in st):
                if not all(_is_int(v) for v in st):
                    raise LayoutError(f"digit {item!r}: strides must be {nout} non-negative integers")
                st = tuple(map(int, st))
            if len(st) != nout or (st and min(st) < 0):
                raise LayoutError(f"digit {item!r}: strides must be {nout} non-negative integers")
            if size % (p * r):
                raise LayoutError(f"digit {item!r}: place * radix does not divide the size {size} of {n!r}")
            if r > 1:
                kept.append((n, p, r, st))
        return Digits(off, tuple(kept))

    def to_exprs(self, in_dims, out_dims) -> tuple[E.Expr, ...]:
        """Each digit written ``(x // place) % radix`` (without the ``%`` when the digit reaches
        the top of its dim, as :meth:`Layout.from_modes` writes a mode)."""
        sizes = dict(in_dims)
        acc: list[E.Expr] = [E.Const(c) for c in self.offset]
        for n, p, r, strides in self.digits:
            digit = E.Var(n) // p if p > 1 else E.Var(n)
            if p * r < sizes[n]:
                digit = digit % r
            for d, s in enumerate(strides):
                if s:
                    acc[d] = acc[d] + digit * s
        return tuple(acc)


@dataclass(frozen=True, slots=True)
class Exprs(LayoutMap):
    """A map given symbolically: ``exprs[d]`` computes logical coordinate ``d`` from variables
    named after the hardware dims (:mod:`layoutverify.core.expr`)."""

    exprs: tuple

    def checked(self, in_dims, out_dims) -> "Exprs":
        exprs = tuple(E.lift(e) for e in self.exprs)
        if len(exprs) != len(out_dims):
            raise LayoutError(f"{len(out_dims)} logical dims but {len(exprs)} expressions")
        known = {n for n, _ in in_dims}
        for e in exprs:
            unknown = E.variables(e) - known
            if unknown:
                raise LayoutError(f"expression {e} reads {sorted(unknown)}, not hardware dims "
                                  f"{tuple(n for n, _ in in_dims)}")
        return Exprs(exprs)

    def to_exprs(self, in_dims, out_dims) -> tuple[E.Expr, ...]:
        return self.exprs


@dataclass(frozen=True, slots=True, eq=False)
class Table(LayoutMap):
    """A map given by its table: row ``k`` of ``values`` (shape ``(N, n_out)``, read-only) holds
    the logical coordinates of flat hardware index ``k`` (first hardware dim fastest). Compared
    by identity."""

    values: np.ndarray

    def checked(self, in_dims, out_dims) -> "Table":
        t = np.asarray(self.values, dtype=np.int64)
        n = math.prod(s for _, s in in_dims)
        if t.ndim == 1:
            t = t.reshape(-1, 1)
        if t.shape != (n, len(out_dims)):
            raise LayoutError(f"table has shape {t.shape}, expected ({n}, {len(out_dims)})")
        for d, (dn, ds) in enumerate(out_dims):
            if n and (t[:, d].min() < 0 or t[:, d].max() >= ds):
                raise LayoutError(f"table entries for {dn!r} fall outside [0, {ds})")
        if t.flags.writeable or t.base is not None:
            t = t.copy()
            t.setflags(write=False)
        return Table(t)

    def to_exprs(self, in_dims, out_dims) -> tuple[E.Expr, ...]:
        """``Lookup(flat hardware index, column d)`` per logical dim."""
        flat, stride = E.Const(0), 1
        for nm, s in in_dims:
            flat = flat + E.Var(nm) * stride
            stride *= s
        return tuple(E.Lookup(flat, self.values[:, d].copy()) for d in range(len(out_dims)))


# -- derived data ---------------------------------------------------------------------------------
class derived:
    """Derived data of a layout: a value computed from the layout's defining data (dims, map),
    once, and kept by the layout in the instance attribute of its name.

    The one mechanism by which data is memoised on a layout; only this module writes it. Two
    ways to declare a derived value: this descriptor, for the layout's own (``exprs``, the table,
    the F2 form, the fingerprint, the dim names: computed on the first read of the attribute),
    and :meth:`Layout.derive`, for a value another core module owns (its normal form, digit form,
    packed F2 bases, solver facts: computed by the first call of the registered reader). Either
    way a derivation that raises keeps nothing (the next read raises again); every derived value
    is dropped by pickling and copying (:meth:`Layout.__getstate__`) and computed again on
    demand; two threads computing one value at once both get equal values, and one is kept."""

    def __init__(self, fn: Callable, name: str | None = None):
        self.fn = fn
        self.name = name or fn.__name__
        self.__doc__ = fn.__doc__

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


_KEEP = frozenset({"in_dims", "out_dims", "map"})  # the defining data: written once, never again
_MISSING = object()


class Layout:
    """A layout ``L: hardware -> logical`` in canonical form (see the module docstring).

    ``Layout(in_dims, out_dims, map)``: ``in_dims`` / ``out_dims`` are ``(name, size)`` pairs
    (``out_dims`` may be a shape, ``[64, 32]``: ``dim0, dim1, ...``),
    ``map`` an :class:`F2Bases`, :class:`Digits`, :class:`Exprs` or :class:`Table` (or a sequence
    of expressions, one per logical dim). Immutable: the dims and the map are set once; only the
    display ``name`` may change. The class methods :meth:`from_bases`, :meth:`from_digits`,
    :meth:`from_modes` and :meth:`from_table` spell the map from their arguments.
    """

    _DERIVED: dict = {}  # name -> derivation, for every ``derived`` attribute (see :meth:`derive`)

    def __init__(self, in_dims, out_dims, map, *, name: str | None = None):
        in_dims = _norm_dims(in_dims, "hardware")
        out_dims = _logical(out_dims)
        if not in_dims:
            raise LayoutError("a layout needs at least one hardware dim")
        if not isinstance(map, LayoutMap):
            map = Exprs(tuple(map))
        elif type(map) is F2Bases:  # (from_bases names a bad basis before an empty logical space)
            map = map.checked(in_dims, out_dims)
        if not out_dims:
            raise LayoutError("a layout needs at least one logical dim")
        if type(map) is not F2Bases:
            map = map.checked(in_dims, out_dims)
        # written past the guard of __setattr__, in one update: the instance dict is then a plain
        # (combined) dict, whose attributes CPython reads fastest
        self.__dict__.update(in_dims=in_dims, out_dims=out_dims, map=map, name=name)

    def __setattr__(self, key, value):
        # Immutable once built (layouts are shared through caches, e.g. the adapters' parse
        # cache): dims and map are written once, derived data only by its descriptor; the display
        # ``name`` may change, and an adapter may attach facts of its own (``padding``).
        if key in _KEEP or key in Layout._DERIVED:
            raise AttributeError(f"Layout is immutable: cannot change {key!r}")
        object.__setattr__(self, key, value)

    def __getstate__(self):
        """Pickled: the defining data and the adapters' facts, never derived data."""
        return {k: v for k, v in self.__dict__.items() if k not in Layout._DERIVED}

    def __setstate__(self, state):
        self.__dict__.update(state)

    @classmethod
    def derive(cls, name: str):
        """Decorator registering ``fn(layout)`` as the derivation of the derived value ``name``,
        owned by another module: the decorated name becomes its reader, ``fn(lay)`` returns the
        value kept by ``lay`` (computed by the first call). Once computed it is also the plain
        attribute ``lay.<name>`` (a hot path reads it so, catching :class:`AttributeError` for a
        value not computed yet); there is no class attribute of that name, so that reading it
        stays a plain instance-attribute read."""
        def register(fn):
            have = cls._DERIVED.get(name)
            if have is not None and (have.__module__, have.__qualname__) != (fn.__module__, fn.__qualname__):
                raise ValueError(f"derived data {name!r} is already registered")
            if have is None and name in vars(cls):
                raise ValueError(f"{name!r} is an attribute of Layout")
            cls._DERIVED[name] = fn

            def read(lay):
                d = lay.__dict__
                value = d.get(name, _MISSING)
                if value is _MISSING:
                    value = d[name] = fn(lay)
                return value
            read.__name__, read.__qualname__, read.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
            read.__module__, read.__wrapped__ = fn.__module__, fn
            return read
        return register

    @classmethod
    def derived_names(cls) -> tuple[str, ...]:
        """The names of every derived attribute (those of the core modules once imported)."""
        return tuple(cls._DERIVED)

    # -- dims -----------------------------------------------------------------------------------
    @derived
    def in_names(self) -> tuple[str, ...]:
        """The hardware dim names, in order."""
        return tuple([n for n, _ in self.in_dims])

    @derived
    def in_sizes(self) -> tuple[int, ...]:
        """The hardware dim sizes, in order."""
        return tuple([s for _, s in self.in_dims])

    @derived
    def out_names(self) -> tuple[str, ...]:
        """The logical dim names (``dim0, dim1, ...``)."""
        return tuple([n for n, _ in self.out_dims])

    @derived
    def out_sizes(self) -> tuple[int, ...]:
        """The logical sizes: the tensor's shape."""
        return tuple([s for _, s in self.out_dims])

    @property
    def shape(self) -> tuple[int, ...]:
        """The logical (tensor) shape."""
        return self.out_sizes

    def in_size(self, name: str | None = None) -> int:
        """Size of one hardware dim (1 if absent), or of the whole hardware domain."""
        if name is None:
            return math.prod(self.in_sizes)  # exact (Python ints)
        return dict(self.in_dims).get(name, 1)

    def out_size(self, name: str | None = None) -> int:
        """Size of one logical dim (1 if absent), or the number of tensor elements."""
        if name is None:
            return math.prod(self.out_sizes)  # exact (Python ints)
        return dict(self.out_dims).get(name, 1)

    @property
    def kind(self) -> str:
        """``"register"`` when every hardware dim is a thread dim (``register``, ``lane``,
        ``warp``, ``block``), else ``"memory"`` (``offset`` for shared memory; ``row``/``col`` for
        Blackwell tensor memory)."""
        return "register" if set(self.in_names) <= THREAD_DIMS else "memory"

    @derived
    def exprs(self) -> tuple[E.Expr, ...]:
        """The map as expressions: one per logical dim over the hardware dims (for maps given
        otherwise, written out on first use: :meth:`LayoutMap.to_exprs`)."""
        return self.map.to_exprs(self.in_dims, self.out_dims)

    # -- constructors ---------------------------------------------------------------------------
    @classmethod
    def from_bases(cls, bases: Mapping[str, Sequence[Sequence[int]]], out_dims, *, name=None) -> "Layout":
        """An F2-linear layout from Triton-style bases (:class:`F2Bases`).

        ``bases[in_dim][i]`` is the logical coordinate (one entry per logical dim, ``dim0`` first)
        of hardware index ``2**i`` in ``in_dim``; the image of any index is the XOR of the bases of
        its set bits. Each hardware dim has size ``2**len(bases[in_dim])``. ``out_dims`` is a
        shape (``[16, 16]``) or ``(name, size)`` pairs; sizes must be powers of two.
        """
        pairs = tuple([(k, tuple(map(tuple, vs))) for k, vs in bases.items()])
        return cls(tuple([(k, 1 << len(vs)) for k, vs in pairs]), out_dims, F2Bases(pairs), name=name)

    @classmethod
    def from_digits(cls, in_dims, out_dims, digits: Sequence[tuple[str, int, int, Sequence[int]]], *,
                    offset: Sequence[int] | None = None, name=None) -> "Layout":
        """A digit-linear (mixed-radix) layout given by its digits (:class:`Digits`).

        ``digits`` lists ``(in_dim, place, radix, strides)``: the hardware digit
        ``(x // place) % radix`` of dim ``x`` adds ``digit * strides[d]`` to logical dim ``d``
        (``strides`` has one non-negative int per logical dim, ``dim0`` first). ``place * radix``
        must divide the dim's size; a dim's digits may leave parts of it unread (broadcast).
        ``offset`` is the logical coordinate of the origin (zeros by default).
        """
        return cls(in_dims, out_dims, Digits(offset, tuple(digits)), name=name)

    @classmethod
    def from_modes(cls, in_dims, out_dims, modes: Mapping[str, Sequence[tuple[int, Mapping[str, int] | Sequence[int]]]],
                   *, offset: Mapping[str, int] | None = None, name=None) -> "Layout":
        """A mixed-radix (shape:stride) layout, as expressions.

        ``modes[in_dim]`` lists the modes that split that hardware index, **fastest first**: mode
        ``(size, strides)`` reads ``(index // (product of earlier sizes)) % size`` and adds it,
        times ``strides[d]``, to logical dim ``d``. ``strides`` is a dict by logical dim name or a
        sequence with one stride per logical dim. The product of a dim's mode sizes must equal the
        dim's size; a dim without modes contributes nothing (full replication).
        """
        in_dims = _norm_dims(in_dims, "hardware")
        out_dims = _logical(out_dims)
        out_names = [n for n, _ in out_dims]
        acc: list[E.Expr] = [E.Const((offset or {}).get(n, 0)) for n in out_names]
        sizes = dict(in_dims)
        for in_name, ms in modes.items():
            if in_name not in sizes:
                raise LayoutError(f"modes given for unknown hardware dim {in_name!r}")
            div = 1
            for size, strides in ms:
                if isinstance(strides, Mapping):
                    bad = set(strides) - set(out_names)
                    if bad:
                        raise LayoutError(f"stride for unknown logical dim(s) {sorted(bad)}")
                    svec = [int(strides.get(n, 0)) for n in out_names]
                else:
                    svec = [int(s) for s in strides]
                    if len(svec) != len(out_names):
                        raise LayoutError(f"mode of {in_name!r} has {len(svec)} strides for {len(out_names)} logical dims")
                if size < 1:
                    raise LayoutError(f"mode size must be positive, got {size}")
                if size > 1:
                    digit = (E.Var(in_name) // div) % size if div * size < sizes[in_name] else E.Var(in_name) // div
                    for d, s in enumerate(svec):
                        if s < 0:
                            raise LayoutError(f"negative stride {s} is not supported")
                        if s:
                            acc[d] = acc[d] + digit * s
                div *= size
            if div != sizes[in_name]:
                raise LayoutError(f"modes of {in_name!r} multiply to {div}, but the dim has size {sizes[in_name]}")
        return cls(in_dims, out_dims, acc, name=name)

    @classmethod
    def from_table(cls, in_dims, out_dims, table, *, name=None, detect_f2: bool = True) -> "Layout":
        """A layout given by its table (:class:`Table`): row ``k`` holds the logical coordinates
        of flat hardware index ``k`` (first hardware dim fastest). An F2-linear table becomes an
        F2 layout (:class:`F2Bases`) unless ``detect_f2`` is false (tests use it to exercise the
        non-F2 paths on F2 maps)."""
        lay = cls(in_dims, out_dims, Table(table), name=name)
        if detect_f2 and lay.all_pow2:
            bases = _f2_of_table(lay.in_dims, lay.map.values)
            if bases is not None:
                return cls.from_bases(bases, lay.out_dims, name=name)
        return lay

    # -- evaluation -----------------------------------------------------------------------------
    def hardware_indices(self) -> np.ndarray:
        """All hardware locations, shape ``(N, n_in)``, in flat order (first dim fastest)."""
        n = self.in_size()
        if n > MAX_TABLE_LOCATIONS:
            raise SizeLimitError(f"hardware domain of {n} locations exceeds the table limit {MAX_TABLE_LOCATIONS}")
        flat = np.arange(n, dtype=np.int64)
        cols = []
        for s in self.in_sizes:
            cols.append(flat % s)
            flat = flat // s
        return np.stack(cols, axis=1) if cols else np.zeros((1, 0), np.int64)

    def apply(self, hw: np.ndarray | Mapping[str, np.ndarray]) -> np.ndarray:
        """Logical coordinates of the given hardware locations (rows, or a dict of index arrays)."""
        if isinstance(hw, Mapping):
            env = {k: np.asarray(v, dtype=np.int64) for k, v in hw.items()}
            shape = np.broadcast_shapes(*(v.shape for v in env.values())) if env else ()
        else:
            hw = np.asarray(hw, dtype=np.int64)
            if hw.ndim == 1:
                hw = hw.reshape(1, -1)
            env = {n: hw[:, i] for i, n in enumerate(self.in_names)}
            shape = (hw.shape[0],)
        cols = [np.broadcast_to(np.asarray(E.evaluate(e, env), dtype=np.int64), shape) for e in self.exprs]
        return np.stack(cols, axis=-1)

    def element(self, loc: Mapping[str, int]) -> list[int]:
        """``L(loc)`` with exact Python integers: the element at one hardware location (a dim
        missing from ``loc`` is 0)."""
        m = self.map
        if type(m) is F2Bases:  # XOR of the bases of the set bits
            out = [0] * len(self.out_dims)
            for n, vecs in m.bases:
                x = int(loc.get(n, 0))
                for v in vecs:
                    if x & 1:
                        out = [o ^ c for o, c in zip(out, v)]
                    x >>= 1
            return out
        env = {n: int(loc.get(n, 0)) for n in self.in_names}
        memo: dict = {}
        return [E.evaluate_int(e, env, memo) for e in self.exprs]

    def table(self) -> np.ndarray:
        """Logical coordinates of every hardware location, shape ``(N, n_out)``, flat order
        (read-only)."""
        return self._table

    @derived
    def _table(self) -> np.ndarray:
        """The table (see :meth:`table`)."""
        n = self.in_size()
        if n > MAX_TABLE_LOCATIONS:
            raise SizeLimitError(f"hardware domain of {n} locations exceeds the table limit {MAX_TABLE_LOCATIONS}")
        m = self.map
        if type(m) is Table:
            return m.values
        if type(m) is F2Bases:
            t = m.table(self.in_dims, len(self.out_dims))
        else:  # evaluated in chunks: memory is the table itself plus one chunk of index arrays
            t = np.empty((n, len(self.out_dims)), dtype=np.int64)
            chunk = 1 << 16
            for start in range(0, n, chunk):
                flat = np.arange(start, min(n, start + chunk), dtype=np.int64)
                env = {}
                for nm, s in self.in_dims:
                    env[nm] = flat % s
                    flat = flat // s
                for d, e in enumerate(self.exprs):
                    t[start:start + chunk, d] = E.evaluate(e, env)
        t.setflags(write=False)
        return t

    def flat_table(self) -> np.ndarray:
        """Flat (row-major) logical index of every hardware location, shape ``(N,)``."""
        t = self.table()
        flat = np.zeros(t.shape[0], dtype=np.int64)
        for d, s in enumerate(self.out_sizes):
            flat = flat * s + t[:, d]
        return flat

    def check_in_range(self) -> None:
        """Raise if some hardware location maps outside the logical shape."""
        for d, (n, s) in enumerate(self.out_dims):
            bound = E.upper_bound(self.exprs[d], {k: v - 1 for k, v in self.in_dims})
            if bound < s:
                continue
            col = self.table()[:, d]
            if col.max(initial=0) >= s:
                k = int(np.argmax(col >= s))
                loc = dict(zip(self.in_names, (int(x) for x in self.hardware_indices()[k])))
                raise LayoutError(f"hardware location {loc} maps to {n}={int(col[k])}, outside size {s}")

    # -- F2 normal form -------------------------------------------------------------------------
    @property
    def all_pow2(self) -> bool:
        """Whether every hardware and logical size is a power of two."""
        return all(is_pow2(s) for s in self.in_sizes + self.out_sizes)

    def candidate_bases(self) -> dict[str, list[tuple[int, ...]]]:
        """``L(2**i)`` for every hardware bit (meaningful only for power-of-two sizes)."""
        out = {}
        for i, (n, s) in enumerate(self.in_dims):
            nb = max(0, (s - 1).bit_length())
            pts = np.zeros((max(nb, 1), len(self.in_dims)), dtype=np.int64)
            for b in range(nb):
                pts[b, i] = 1 << b
            vals = self.apply(pts) if nb else np.zeros((0, len(self.out_dims)), np.int64)
            out[n] = [tuple(int(c) for c in vals[b]) for b in range(nb)]
        return out

    @derived
    def f2_form(self) -> F2Bases | None:
        """The F2 normal form (the map as :class:`F2Bases`), or ``None`` when the layout is not
        F2-linear: checked, never assumed (:meth:`_derive_f2`)."""
        return self._derive_f2()

    def _derive_f2(self) -> F2Bases | None:
        """The one route to a layout's F2 bases. ``L`` is F2-linear iff every size is a power of
        two and ``L(x) = XOR_{i in bits(x)} L(2**i)`` at every ``x`` (then ``L(0) = 0``):

        1. a map given as bases is its own F2 form;
        2. otherwise the expressions are read symbolically (:func:`layoutverify.core.f2.linearize`:
           exact when it answers, and its answers stay inside the shape);
        3. otherwise the layout is checked to stay inside its shape, and ``L(2**i)``, read off the
           table, must reproduce the whole table by XOR;
        4. past :data:`MAX_TABLE_LOCATIONS` (no table), a layout that interval bounds keep inside
           its shape is proved F2-linear by z3 against its candidate bases (a time-out counts
           as not linear: the general strategies stay sound).
        """
        m = self.map
        if type(m) is F2Bases:
            return m
        if not self.all_pow2:
            return None
        bases = F2.linearize(self.exprs, self.in_dims, self.out_sizes)
        if bases is None:
            if self.in_size() <= MAX_TABLE_LOCATIONS:
                self.check_in_range()  # bases of a map that leaves its shape would be meaningless
                bases = _f2_of_table(self.in_dims, self.table())
            else:
                bounds = {n: s - 1 for n, s in self.in_dims}
                if any(E.upper_bound(e, bounds) >= s for e, s in zip(self.exprs, self.out_sizes)):
                    return None
                if any(int(x) != 0 for x in self.apply(np.zeros((1, len(self.in_dims)), np.int64))[0]):
                    return None
                bases = self.candidate_bases()
                if not F2.prove_linear(self, bases):
                    return None
        if bases is None:
            return None
        return F2Bases(tuple((n, tuple(bases[n])) for n, _ in self.in_dims))

    def is_f2_linear(self) -> bool:
        """Checked (never assumed): power-of-two sizes and ``L(a ^ b) == L(a) ^ L(b)`` everywhere."""
        return self.f2_form is not None

    def f2_bases(self) -> dict[str, list[tuple[int, ...]]] | None:
        """The F2 normal form ``{in_dim: [L(2**0), L(2**1), ...]}``, or ``None`` when the layout
        is not F2-linear."""
        f2 = self.f2_form
        return None if f2 is None else {k: list(v) for k, v in f2.bases}

    # -- serialisation, identity ----------------------------------------------------------------
    def to_json(self) -> dict:
        """The layout as JSON: ``in_dims``, ``out_dims`` (``[name, size]`` lists) and either
        ``bases`` (the F2 normal form) or ``table`` (every location's coordinates, flat order)."""
        d = {"in_dims": [[n, s] for n, s in self.in_dims], "out_dims": [[n, s] for n, s in self.out_dims]}
        f2 = self.f2_bases()
        if f2 is not None:
            d["bases"] = {k: [list(v) for v in vs] for k, vs in f2.items()}
        else:
            d["table"] = self.table().tolist()
        return d

    @staticmethod
    def check_json(d) -> None:
        """The shape of a layout's JSON read from outside (a golden file): an object whose
        ``in_dims`` / ``out_dims`` are non-empty lists of ``[name, size]`` pairs (sizes 1..2^62)
        and which has ``bases`` (an object) or ``table`` (a list). Values are checked on building."""
        if not isinstance(d, Mapping):
            raise LayoutError(f"malformed normal form: an object expected, got {type(d).__name__}")
        for key in ("in_dims", "out_dims"):
            dims = d.get(key)
            if not isinstance(dims, (list, tuple)) or not dims or not all(
                    isinstance(x, (list, tuple)) and len(x) == 2 and isinstance(x[0], str)
                    and isinstance(x[1], numbers.Integral) and not isinstance(x[1], bool) and 1 <= x[1] <= (1 << 62)
                    for x in dims):
                raise LayoutError(f"malformed normal form: {key} must be a non-empty list of [name, size] pairs "
                                  f"with sizes from 1 to 2^62, got {str(dims)[:80]}")
        if "bases" in d and not isinstance(d["bases"], Mapping):
            raise LayoutError("malformed normal form: bases must be an object")
        if "bases" not in d and not isinstance(d.get("table"), (list, tuple, np.ndarray)):
            raise LayoutError("malformed normal form: needs bases (an object) or table (a list)")

    @classmethod
    def from_json(cls, d: Mapping) -> "Layout":
        """The layout :meth:`to_json` wrote (checked: :meth:`check_json`, then the constructor)."""
        cls.check_json(d)
        try:
            if "bases" in d:
                order = [n for n, _ in d["in_dims"]]
                if set(order) != set(d["bases"]):
                    raise LayoutError("normal form: in_dims disagree with bases")
                for n in order:     # integers only: a float (1.5, inf) is not truncated into a basis
                    vecs = d["bases"][n]
                    if not isinstance(vecs, (list, tuple)) or not all(
                            isinstance(v, (list, tuple)) and all(isinstance(c, numbers.Integral) and not isinstance(c, bool)
                                                                 for c in v) for v in vecs):
                        raise LayoutError(f"malformed normal form: the bases of {n!r} must be lists of integers, "
                                          f"got {str(vecs)[:80]}")
                lay = cls.from_bases({n: d["bases"][n] for n in order}, [tuple(x) for x in d["out_dims"]])
                if [list(x) for x in lay.in_dims] != [list(x) for x in d["in_dims"]]:
                    raise LayoutError("normal form: in_dims disagree with bases")
                return lay
            return cls.from_table([tuple(x) for x in d["in_dims"]], [tuple(x) for x in d["out_dims"]], d["table"])
        except (KeyError, TypeError) as e:
            raise LayoutError(f"malformed normal form: {e}") from None

    def fingerprint(self) -> str:
        """Stable hash of dims, sizes and normal form (or table); 16 hex digits.

        Hardware dims of size 1 carry no information and are left out, so ``[offset]`` and
        Triton's ``[offset, block=1]`` spellings of one layout share a fingerprint (the flat
        hardware order, and hence the table, is the same with or without them).
        """
        return self._fingerprint

    @derived
    def _fingerprint(self) -> str:
        """The fingerprint (see :meth:`fingerprint`)."""
        h = hashlib.sha256()
        ins = [(n, s) for n, s in self.in_dims if s > 1]
        h.update(json.dumps({"in": ins, "out": self.out_dims}, sort_keys=True).encode())
        f2 = self.f2_bases()
        if f2 is not None:
            h.update(b"F2")
            h.update(json.dumps([[n, [list(v) for v in f2[n]]] for n, _ in ins]).encode())
        else:
            h.update(b"TABLE")
            h.update(np.ascontiguousarray(self.table(), dtype="<i8").tobytes())
        return h.hexdigest()[:16]

    def __repr__(self) -> str:
        ins = ", ".join(f"{n}={s}" for n, s in self.in_dims)
        outs = ", ".join(f"{n}={s}" for n, s in self.out_dims)
        head = f"Layout({self.name + ': ' if self.name else ''}[{ins}] -> [{outs}]"
        f2 = self.f2_bases() if self.in_size() <= MAX_TABLE_LOCATIONS or type(self.map) is F2Bases else None
        if f2 is not None:
            body = ", ".join(f"{n}={[list(v) for v in f2[n]]}" for n in self.in_names)
            return f"{head}, bases: {body})"
        body = ", ".join(f"{n} = {e}" for n, e in zip(self.out_names, self.exprs))
        return f"{head}, {body})"

    def describe(self) -> str:
        """Several lines: dims, F2 bases or the symbolic map, fingerprint."""
        lines = ["hardware: " + ", ".join(f"{n}={s}" for n, s in self.in_dims),
                 "logical:  " + ", ".join(f"{n}={s}" for n, s in self.out_dims)]
        f2 = self.f2_bases()
        if f2 is not None:
            lines.append("F2-linear: yes; bases (L(2^i), coordinates dim0 first):")
            for n in self.in_names:
                lines.append(f"  {n:8s} {[list(v) for v in f2[n]]}")
        else:
            lines.append("F2-linear: no; map:")
            for n, e in zip(self.out_names, self.exprs):
                lines.append(f"  {n} = {e}")
        lines.append(f"fingerprint: {self.fingerprint()}")
        return "\n".join(lines)

    # -- algebra --------------------------------------------------------------------------------
    def then(self, other: "Layout", *, name=None) -> "Layout":
        """``other ∘ self``: feed this layout's logical coordinates into ``other``'s hardware dims.

        ``other``'s hardware dims must be this layout's logical dims, same names, sizes and order.
        """
        if other.in_dims != self.out_dims:
            raise LayoutError(f"cannot compose: {self.out_dims} feed a layout expecting {other.in_dims}")
        sub = dict(zip(self.out_names, self.exprs))
        return Layout(self.in_dims, other.out_dims, [E.substitute(e, sub) for e in other.exprs], name=name)

    def compose(self, inner: "Layout", *, name=None) -> "Layout":
        """``self ∘ inner`` (function composition: apply ``inner`` first)."""
        return inner.then(self, name=name)

    def is_bijective(self) -> bool:
        """Whether every logical element has exactly one holder (as many locations as elements, no two
        holding one)."""
        if self.in_size() != self.out_size():
            return False
        flat = self.flat_table()
        return np.unique(flat).size == flat.size

    def inverse(self, *, name=None) -> "Layout":
        """The inverse map (logical -> hardware), which exists only for bijections.

        The result's hardware dims are this layout's logical dims and vice versa. F2-linear
        layouts invert over GF(2); others through the table.
        """
        if self.in_size() != self.out_size():
            raise NotInvertibleError(f"not invertible: {self.in_size()} hardware locations for {self.out_size()} elements")
        # The inverse's hardware dims are our logical dims, flattened first-dim-fastest.
        t = self.table()
        flat = np.zeros(t.shape[0], dtype=np.int64)
        for d in reversed(range(len(self.out_sizes))):
            flat = flat * self.out_sizes[d] + t[:, d]
        inv = np.full(flat.size, -1, dtype=np.int64)
        inv[flat] = np.arange(flat.size, dtype=np.int64)
        if (inv < 0).any():
            missing = int(np.argmax(inv < 0))
            coord = np.unravel_index(missing, self.out_sizes, order="F")
            raise NotInvertibleError(
                f"not invertible: logical element {tuple(int(c) for c in coord)} has no hardware location")
        hw = self.hardware_indices()[inv]
        return Layout.from_table(self.out_dims, self.in_dims, hw, name=name)

    def product(self, other: "Layout", *, name=None) -> "Layout":
        """Layout product (Triton's ``*``): hardware dims present in both are joined with this
        layout's part fastest; logical dims present in both are joined with ``other``'s part
        scaled by this layout's size (``out = self_out + size * other_out``)."""
        sin, oin = dict(self.in_dims), dict(other.in_dims)
        sout, oout = dict(self.out_dims), dict(other.out_dims)
        in_dims = [(n, s * oin.get(n, 1)) for n, s in self.in_dims] + [(n, s) for n, s in other.in_dims if n not in sin]
        out_dims = [(n, s * oout.get(n, 1)) for n, s in self.out_dims] + [(n, s) for n, s in other.out_dims if n not in sout]
        sub_self = {n: (E.Var(n) % s if n in oin else E.Var(n)) for n, s in self.in_dims}
        sub_other = {n: (E.Var(n) // sin[n] if n in sin else E.Var(n)) for n in oin}
        exprs = []
        for n, _ in out_dims:
            e1 = E.substitute(self.exprs[self.out_names.index(n)], sub_self) if n in sout else E.Const(0)
            e2 = E.substitute(other.exprs[other.out_names.index(n)], sub_other) if n in oout else E.Const(0)
            exprs.append(e1 + e2 * sout.get(n, 1))
        return Layout(in_dims, out_dims, exprs, name=name)

    __mul__ = product

    def rename(self, in_names: Mapping[str, str] | None = None, out_names: Mapping[str, str] | None = None) -> "Layout":
        """The same layout with hardware and logical dims renamed (``{old: new}``); the map is unchanged."""
        in_names, out_names = dict(in_names or {}), dict(out_names or {})
        sub = {n: E.Var(in_names[n]) for n in self.in_names if n in in_names}
        return Layout([(in_names.get(n, n), s) for n, s in self.in_dims],
                      [(out_names.get(n, n), s) for n, s in self.out_dims],
                      [E.substitute(e, sub) for e in self.exprs], name=self.name)

    def reshape_out(self, shape: Sequence[int]) -> "Layout":
        """Reinterpret the logical index space (row-major) with a new shape of equal size."""
        if int(np.prod(shape)) != self.out_size():
            raise LayoutError(f"cannot reshape {list(self.out_sizes)} to {list(shape)}")
        flat = E.Const(0)
        for e, s in zip(self.exprs, self.out_sizes):
            flat = flat * s + e
        exprs, rest = [], 1
        for s in reversed(shape):
            exprs.append((flat // rest) % s)
            rest *= s
        return Layout(self.in_dims, logical_dims(shape), list(reversed(exprs)), name=self.name)

    def with_in_dims(self, in_dims) -> "Layout":
        """Same map over a reordered/extended set of hardware dims (new dims must be unread)."""
        return Layout(in_dims, self.out_dims, self.exprs, name=self.name)

    # -- coverage -------------------------------------------------------------------------------
    def holder_counts(self) -> np.ndarray:
        """Number of hardware locations holding each logical element, logical-shaped array."""
        return np.bincount(self.flat_table(), minlength=self.out_size()).reshape(self.out_sizes)

    def is_surjective(self) -> bool:
        """Every logical element has at least one holder (the layout is not partial)."""
        return bool((self.holder_counts() > 0).all())

    def is_injective(self) -> bool:
        """Whether no two hardware locations hold the same element (no replication)."""
        flat = self.flat_table()
        return np.unique(flat).size == flat.size

    def render(self, **kw) -> str:
        """The grid of holders as text (:func:`layoutverify.core.render.render_grid`)."""
        from layoutverify.core.render import render_grid
        return render_grid(self, **kw)




Layout._DERIVED.update({k: v.fn for k, v in vars(Layout).items() if isinstance(v, derived)})


# ---------------------------------------------------------------------------------------------
def _f2_of_table(in_dims, t: np.ndarray) -> dict[str, list[tuple[int, ...]]] | None:
    """The F2 bases ``L(2**i)`` read off a table (flat order, power-of-two sizes) when they
    reproduce the whole table by XOR (so ``L(0) = 0`` too), else ``None``."""
    bases, stride = {}, 1
    for n, s in in_dims:
        bases[n] = [tuple(int(c) for c in t[stride << b]) for b in range(log2(s))]
        stride *= s
    return bases if np.array_equal(_table_from_bases(in_dims, bases, t.shape[1]), t) else None


def _table_from_bases(in_dims, bases, nout: int) -> np.ndarray:
    """Evaluate F2 bases over the whole flat domain (first hardware dim fastest)."""
    vecs = [np.asarray(v, dtype=np.int64).reshape(-1, nout) for n, _ in in_dims for v in [bases[n]]]
    allv = np.concatenate(vecs, axis=0) if vecs else np.zeros((0, nout), np.int64)
    nbits = allv.shape[0]
    t = np.zeros((1, nout), dtype=np.int64)
    for b in range(nbits):  # doubling: rows [2^b, 2^(b+1)) = rows [0, 2^b) ^ basis b
        t = np.concatenate([t, t ^ allv[b]], axis=0)
    return t


def table_from_bases(in_dims, bases, nout: int) -> np.ndarray:
    """The table of an F2 layout given by bases (``{in_dim: [L(2**i), ...]}``), flat order."""
    return _table_from_bases(_norm_dims(in_dims, "hardware"), bases, nout)
