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
* The map is one :class:`~layoutverify.core.expr.Expr` per logical dim, over variables named after the
  hardware dims.
* **F2 normal form** (only when every size is a power of two and the map is checked to be
  F2-linear): ``bases[in_dim][i] = L(2**i)`` as a tuple of logical coordinates ``(dim0, dim1, ...)``,
  exactly Triton's ``LinearLayout`` bases.
"""
from __future__ import annotations

import hashlib
import json
import math
import numbers
from typing import Mapping, Sequence

import numpy as np

from layoutverify.core import expr as E
from layoutverify.core.errors import LayoutError, NotInvertibleError, SizeLimitError

#: the hardware dims of a register (distributed) layout (DESIGN.md §1)
THREAD_DIMS = frozenset({"register", "lane", "warp", "block"})

#: Largest hardware domain (number of locations) evaluated as an explicit table.
MAX_TABLE_LOCATIONS = 1 << 24

REGISTER_DIMS = ("register", "lane", "warp", "block")
MEMORY_DIMS = ("offset", "block")


class memo_property:
    """A value computed on first access and kept in the instance's ``__dict__`` (later reads
    never reach this descriptor). ``functools.cached_property`` without its lock: a layout is
    immutable, so two threads that race compute equal values, and the lock cost a microsecond
    on every first access of every new layout."""

    def __init__(self, func):
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.func(obj)
        return value


def is_pow2(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


def log2(n: int) -> int:
    if not is_pow2(n):
        raise LayoutError(f"{n} is not a power of two")
    return n.bit_length() - 1


def _norm_dims(dims, what: str) -> tuple[tuple[str, int], ...]:
    if (type(dims) is tuple or type(dims) is list) and all(
            type(p) is tuple and len(p) == 2 and type(p[0]) is str and p[0] and type(p[1]) is int and p[1] > 0
            for p in dims) and len({p[0] for p in dims}) == len(dims):
        return tuple(dims)  # already (name, positive int size) pairs with distinct names
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


def _inside(vecs: Sequence[tuple[int, ...]], out_dims: Sequence[tuple[str, int]]) -> bool:
    """Does every basis vector have one entry per logical dim, each in ``[0, size)``?"""
    nout = len(out_dims)
    if any(len(v) != nout for v in vecs):
        return False
    for col, (_, size) in zip(zip(*vecs), out_dims):
        if min(col) < 0 or max(col) >= size:
            return False
    return True


def logical_dims(shape: Sequence[int]) -> tuple[tuple[str, int], ...]:
    """``[64, 32]`` -> ``(("dim0", 64), ("dim1", 32))``."""
    return tuple((f"dim{i}", int(s)) for i, s in enumerate(shape))


class Layout:
    """A layout in canonical form. Immutable; derived data is cached.

    Build one with :meth:`from_bases` (F2 / Triton linear layouts), :meth:`from_modes`
    (mixed-radix shape/stride modes: CuTe, Tilus, IREE), :meth:`from_table` (an explicit
    table), or directly from expressions.
    """

    def __init__(self, in_dims, out_dims, exprs: Sequence[E.Expr], *, name: str | None = None):
        self.in_dims = _norm_dims(in_dims, "hardware")
        self.out_dims = _norm_dims(out_dims, "logical")
        if not self.in_dims:
            raise LayoutError("a layout needs at least one hardware dim")
        if not self.out_dims:
            raise LayoutError("a layout needs at least one logical dim")
        exprs = tuple(E.lift(e) for e in exprs)
        if len(exprs) != len(self.out_dims):
            raise LayoutError(f"{len(self.out_dims)} logical dims but {len(exprs)} expressions")
        known = set(self.in_names)
        for e in exprs:
            unknown = E.variables(e) - known
            if unknown:
                raise LayoutError(f"expression {e} reads {sorted(unknown)}, not hardware dims {self.in_names}")
        self._exprs = exprs
        self.name = name

    def __setattr__(self, key, value):
        # Immutable once built (layouts are shared through caches, e.g. the adapters' parse
        # cache): dims and expressions are written once; only the display ``name`` may change.
        if key in self.__dict__ and key != "name" and not (key == "_exprs" and self.__dict__[key] is None):
            raise AttributeError(f"Layout is immutable: cannot change {key!r}")
        object.__setattr__(self, key, value)

    @property
    def exprs(self) -> tuple[E.Expr, ...]:
        """One expression per logical dim over the hardware dims (built on first use for
        layouts made from F2 bases or from digits, which compare without them)."""
        ex = self._exprs
        if ex is None:
            declared = self.__dict__.get("_declared_bases")
            if declared is not None:
                ex = _exprs_from_bases(self.in_dims, declared, len(self.out_dims))
            else:
                ex = _exprs_from_digits(self.in_dims, self.__dict__["_declared_digits"])
            self._exprs = ex
        return ex

    # -- dims -----------------------------------------------------------------------------------
    @memo_property
    def in_names(self) -> tuple[str, ...]:
        return tuple([n for n, _ in self.in_dims])

    @memo_property
    def in_sizes(self) -> tuple[int, ...]:
        return tuple([s for _, s in self.in_dims])

    @memo_property
    def out_names(self) -> tuple[str, ...]:
        return tuple([n for n, _ in self.out_dims])

    @memo_property
    def out_sizes(self) -> tuple[int, ...]:
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
        if name is None:
            return math.prod(self.out_sizes)  # exact (Python ints)
        return dict(self.out_dims).get(name, 1)

    @property
    def kind(self) -> str:
        """``"register"`` when every hardware dim is a thread dim (``register``, ``lane``,
        ``warp``, ``block``), else ``"memory"`` (``offset`` for shared memory; ``row``/``col`` for
        Blackwell tensor memory)."""
        return "register" if set(self.in_names) <= THREAD_DIMS else "memory"

    # -- constructors ---------------------------------------------------------------------------
    @classmethod
    def from_bases(cls, bases: Mapping[str, Sequence[Sequence[int]]], out_dims, *, name=None) -> "Layout":
        """An F2-linear layout from Triton-style bases.

        ``bases[in_dim][i]`` is the logical coordinate (one entry per logical dim, ``dim0`` first)
        of hardware index ``2**i`` in ``in_dim``; the image of any index is the XOR of the bases of
        its set bits. Each hardware dim has size ``2**len(bases[in_dim])``. ``out_dims`` is a
        shape (``[16, 16]``) or ``(name, size)`` pairs; sizes must be powers of two.
        """
        if out_dims and isinstance(next(iter(out_dims)), (int, np.integer)):
            out_dims = logical_dims(out_dims)
        out_dims = _norm_dims(out_dims, "logical")
        for n, s in out_dims:
            if not is_pow2(s):
                raise LayoutError(f"F2 layouts need power-of-two sizes; logical dim {n!r} has size {s}")
        nout = len(out_dims)
        in_dims = []
        declared = {}
        every = []
        for in_name, vecs in bases.items():
            vecs = [tuple(map(int, v)) for v in vecs]
            in_dims.append((in_name, 1 << len(vecs)))
            declared[in_name] = vecs
            every += vecs
        if every and not _inside(every, out_dims):  # the fast check failed: find the culprit
            for in_name, vecs in declared.items():
                for v in vecs:
                    if len(v) != nout:
                        raise LayoutError(
                            f"basis {list(v)} of {in_name!r} has {len(v)} entries, expected {nout} (one per logical dim)")
                    for d, c in enumerate(v):
                        if c < 0 or c >= out_dims[d][1]:
                            raise LayoutError(
                                f"basis {list(v)} of {in_name!r} is outside logical dim {out_dims[d][0]!r} of size {out_dims[d][1]}")
        if not in_dims:
            raise LayoutError("a layout needs at least one hardware dim")
        lay = cls.__new__(cls)
        # set once here, past the immutability guard of ``__setattr__``; ``_exprs`` is built from
        # the bases on first use (see ``exprs``)
        lay.__dict__.update(in_dims=_norm_dims(in_dims, "hardware"), out_dims=out_dims, _exprs=None, name=name,
                            _declared_bases=declared)
        return lay

    @classmethod
    def _from_checked_bases(cls, declared: dict[str, list[tuple[int, ...]]], out_dims: tuple[tuple[str, int], ...],
                            *, name=None) -> "Layout":
        """:meth:`from_bases` for a caller that has checked everything it checks: ``out_dims`` are
        ``(name, power-of-two int size)`` pairs with distinct names, ``declared`` (not empty) maps each
        hardware dim name to a list of int tuples with one entry per logical dim, each inside its
        dim. The layout keeps ``declared`` as it is (the Triton adapter builds it fresh)."""
        lay = cls.__new__(cls)
        lay.__dict__.update(in_dims=tuple((k, 1 << len(vs)) for k, vs in declared.items()), out_dims=out_dims,
                            _exprs=None, name=name, _declared_bases=declared)
        return lay

    @classmethod
    def from_digits(cls, in_dims, out_dims, digits: Sequence[tuple[str, int, int, Sequence[int]]], *,
                    offset: Sequence[int] | None = None, name=None) -> "Layout":
        """A digit-linear (mixed-radix) layout given by its digits.

        ``digits`` lists ``(in_dim, place, radix, strides)``: the hardware digit
        ``(x // place) % radix`` of dim ``x`` adds ``digit * strides[d]`` to logical dim ``d``
        (``strides`` has one non-negative int per logical dim, ``dim0`` first). ``place * radix``
        must divide the dim's size; a dim's digits may leave parts of it unread (broadcast).
        ``offset`` is the logical coordinate of the origin (zeros by default).

        The expressions are built on first use; the mixed-radix normal form is read off the
        digits themselves (:func:`layoutverify.core.radix.digit_form`).
        """
        in_dims = _norm_dims(in_dims, "hardware")
        if out_dims and isinstance(next(iter(out_dims)), (int, np.integer)):
            out_dims = logical_dims(out_dims)
        out_dims = _norm_dims(out_dims, "logical")
        nout = len(out_dims)
        if not in_dims or not nout:
            raise LayoutError("a layout needs at least one hardware dim and one logical dim")
        sizes = dict(in_dims)
        off = tuple(int(c) for c in (offset if offset is not None else (0,) * nout))
        if len(off) != nout or min(off) < 0:
            raise LayoutError(f"offset {list(off)} must have {nout} non-negative entries")
        kept = []
        for item in digits:
            try:
                n, p, r, st = item
            except (TypeError, ValueError):
                raise LayoutError(f"a digit is (in_dim, place, radix, strides), got {item!r}") from None
            size = sizes.get(n) if type(n) is str else None
            if size is None:
                raise LayoutError(f"digit of unknown hardware dim {n!r}")
            if not (type(p) is int and type(r) is int):  # (the common case needs no conversions)
                if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in (p, r)):
                    raise LayoutError(f"digit {item!r}: place and radix must be positive integers")
                p, r = int(p), int(r)
            if p < 1 or r < 1:
                raise LayoutError(f"digit {item!r}: place and radix must be positive integers")
            try:
                st = tuple(st)
            except TypeError:
                raise LayoutError(f"digit {item!r}: strides must be {nout} non-negative integers") from None
            if not all(type(v) is int for v in st):
                if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in st):
                    raise LayoutError(f"digit {item!r}: strides must be {nout} non-negative integers")
                st = tuple(map(int, st))
            if len(st) != nout or (st and min(st) < 0):
                raise LayoutError(f"digit {item!r}: strides must be {nout} non-negative integers")
            if size % (p * r):
                raise LayoutError(f"digit {item!r}: place * radix does not divide the size {size} of {n!r}")
            if r > 1:
                kept.append((n, p, r, st))
        lay = cls.__new__(cls)
        lay.__dict__.update(in_dims=in_dims, out_dims=out_dims, _exprs=None, name=name,
                            _declared_digits=(off, tuple(kept)))
        return lay

    @classmethod
    def from_modes(cls, in_dims, out_dims, modes: Mapping[str, Sequence[tuple[int, Mapping[str, int] | Sequence[int]]]],
                   *, offset: Mapping[str, int] | None = None, name=None) -> "Layout":
        """A mixed-radix (shape:stride) layout.

        ``modes[in_dim]`` lists the modes that split that hardware index, **fastest first**: mode
        ``(size, strides)`` reads ``(index // (product of earlier sizes)) % size`` and adds it,
        times ``strides[d]``, to logical dim ``d``. ``strides`` is a dict by logical dim name or a
        sequence with one stride per logical dim. The product of a dim's mode sizes must equal the
        dim's size; a dim without modes contributes nothing (full replication).
        """
        in_dims = _norm_dims(in_dims, "hardware")
        if out_dims and isinstance(next(iter(out_dims)), (int, np.integer)):
            out_dims = logical_dims(out_dims)
        out_dims = _norm_dims(out_dims, "logical")
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
        """A layout given by its table: row ``k`` holds the logical coordinates of flat hardware
        index ``k`` (first hardware dim fastest). An F2-linear table becomes an F2 layout unless
        ``detect_f2`` is false, which keeps the explicit ``Lookup`` form (tests use it to exercise
        the non-F2 paths on F2 maps)."""
        in_dims = _norm_dims(in_dims, "hardware")
        if out_dims and isinstance(next(iter(out_dims)), (int, np.integer)):
            out_dims = logical_dims(out_dims)
        out_dims = _norm_dims(out_dims, "logical")
        t = np.asarray(table, dtype=np.int64)
        n = int(np.prod([s for _, s in in_dims]))
        if t.ndim == 1:
            t = t.reshape(-1, 1)
        if t.shape != (n, len(out_dims)):
            raise LayoutError(f"table has shape {t.shape}, expected ({n}, {len(out_dims)})")
        for d, (dn, ds) in enumerate(out_dims):
            if n and (t[:, d].min() < 0 or t[:, d].max() >= ds):
                raise LayoutError(f"table entries for {dn!r} fall outside [0, {ds})")
        if detect_f2 and all(is_pow2(s) for _, s in in_dims + out_dims):
            bases = _bases_from_table(in_dims, t)
            if np.array_equal(_table_from_bases(in_dims, bases, len(out_dims)), t):
                return cls.from_bases(bases, out_dims, name=name)
        flat = E.Const(0)
        stride = 1
        for nm, s in in_dims:
            flat = flat + E.Var(nm) * stride
            stride *= s
        exprs = [E.Lookup(flat, t[:, d].copy()) for d in range(len(out_dims))]
        return cls(in_dims, out_dims, exprs, name=name)

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

    def table(self) -> np.ndarray:
        """Logical coordinates of every hardware location, shape ``(N, n_out)``, flat order."""
        return self._table

    @memo_property
    def _table(self) -> np.ndarray:
        declared = self.__dict__.get("_declared_bases")
        if declared is not None and self.in_size() <= MAX_TABLE_LOCATIONS:
            t = _table_from_bases(self.in_dims, declared, len(self.out_dims))
        else:
            n = self.in_size()
            if n > MAX_TABLE_LOCATIONS:
                raise SizeLimitError(f"hardware domain of {n} locations exceeds the table limit {MAX_TABLE_LOCATIONS}")
            # evaluated in chunks: memory is the table itself plus one chunk of index arrays
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

    @memo_property
    def _f2(self):
        if not self.all_pow2:
            return None
        declared = self.__dict__.get("_declared_bases")
        if declared is not None:  # from_bases checked every component; XOR stays below a power of two
            return {n: list(v) for n, v in declared.items()}
        self.check_in_range()  # bases of a map that leaves its shape would be meaningless
        if any(int(x) != 0 for x in self.apply(np.zeros((1, len(self.in_dims)), np.int64))[0]):
            return None
        bases = self.candidate_bases()
        if self.in_size() <= MAX_TABLE_LOCATIONS:
            ok = np.array_equal(_table_from_bases(self.in_dims, bases, len(self.out_dims)), self.table())
        else:
            from layoutverify.core.f2check import prove_f2_linear
            ok = prove_f2_linear(self, bases)
        return bases if ok else None

    def is_f2_linear(self) -> bool:
        """Checked (never assumed): power-of-two sizes and ``L(a ^ b) == L(a) ^ L(b)`` everywhere."""
        return self._f2 is not None

    def f2_bases(self) -> dict[str, list[tuple[int, ...]]] | None:
        """The F2 normal form, or ``None`` when the layout is not F2-linear."""
        f2 = self._f2
        return None if f2 is None else {k: list(v) for k, v in f2.items()}

    # -- serialisation, identity ----------------------------------------------------------------
    def normal_form(self) -> dict:
        """JSON-able canonical description: dims plus bases (F2) or the explicit table."""
        d = {"in_dims": [[n, s] for n, s in self.in_dims], "out_dims": [[n, s] for n, s in self.out_dims]}
        f2 = self.f2_bases()
        if f2 is not None:
            d["bases"] = {k: [list(v) for v in vs] for k, vs in f2.items()}
        else:
            d["table"] = self.table().tolist()
        return d

    @staticmethod
    def check_normal_form(d) -> None:
        """The shape of a normal form read from outside (a golden file): an object whose
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
    def from_normal_form(cls, d: Mapping) -> "Layout":
        cls.check_normal_form(d)
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
        f2 = self.f2_bases() if self.in_size() <= MAX_TABLE_LOCATIONS or "_declared_bases" in self.__dict__ else None
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
        in_names, out_names = dict(in_names or {}), dict(out_names or {})
        sub = {n: E.Var(in_names[n]) for n in self.in_names if n in in_names}
        return Layout([(in_names.get(n, n), s) for n, s in self.in_dims],
                      [(out_names.get(n, n), s) for n, s in self.out_dims],
                      [E.substitute(e, sub) for e in self.exprs], name=self.name)

    def permute_out(self, perm: Sequence[int]) -> "Layout":
        """Reorder logical dims: new dim ``i`` is old dim ``perm[i]``; names stay ``dim0..``."""
        if sorted(perm) != list(range(len(self.out_dims))):
            raise LayoutError(f"{list(perm)} is not a permutation of {len(self.out_dims)} dims")
        names = self.out_names
        dims = [(names[i], self.out_sizes[p]) for i, p in enumerate(perm)] if all(
            n == f"dim{i}" for i, n in enumerate(names)) else [self.out_dims[p] for p in perm]
        return Layout(self.in_dims, dims, [self.exprs[p] for p in perm], name=self.name)

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
        flat = self.flat_table()
        return np.unique(flat).size == flat.size

    def render(self, **kw) -> str:
        from layoutverify.core.render import render_grid
        return render_grid(self, **kw)


# ---------------------------------------------------------------------------------------------
def _exprs_from_digits(in_dims, declared) -> tuple[E.Expr, ...]:
    """The expressions of a layout made by :meth:`Layout.from_digits` (written as
    :meth:`Layout.from_modes` writes a mode: ``(x // place) % radix``, without the ``%`` when the
    digit reaches the top of its dim)."""
    offset, digits = declared
    sizes = dict(in_dims)
    acc: list[E.Expr] = [E.Const(c) for c in offset]
    for n, p, r, strides in digits:
        digit = E.Var(n) // p if p > 1 else E.Var(n)
        if p * r < sizes[n]:
            digit = digit % r
        for d, s in enumerate(strides):
            if s:
                acc[d] = acc[d] + digit * s
    return tuple(acc)


def _exprs_from_bases(in_dims, bases, nout: int) -> tuple[E.Expr, ...]:
    """The XOR-of-bits expressions of an F2 layout: ``dim_d = XOR_i ((x >> i) & 1) * basis_i[d]``."""
    acc: list[E.Expr] = [E.Const(0)] * nout
    for in_name, _ in in_dims:
        for bit, v in enumerate(bases[in_name]):
            bitvar = (E.Var(in_name) >> bit) & 1
            for d, c in enumerate(v):
                if c:
                    acc[d] = acc[d] ^ (bitvar * c)
    return tuple(acc)


def _bases_from_table(in_dims, t: np.ndarray) -> dict[str, list[tuple[int, ...]]]:
    bases, stride = {}, 1
    for n, s in in_dims:
        bases[n] = [tuple(int(c) for c in t[stride << b]) for b in range(log2(s))]
        stride *= s
    return bases


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
    """Public: the table of an F2 layout given by bases, flat order."""
    return _table_from_bases(_norm_dims(in_dims, "hardware"), bases, nout)
