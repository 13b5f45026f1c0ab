"""Triton's linear-layout algebra (:class:`LL`), shared by every encoding module of the adapter.

:class:`LL` is an independent re-implementation of the parts of Triton's ``LinearLayout`` that
its ``toLinearLayout`` conversions use (facts from Triton's documentation and source, read,
not copied): ordered *in dims* (``register, lane, warp, block``; ``offset, block`` for memory)
each with F2 bases, and ordered *out dims* (``dim0, dim1, ...``) each with a power-of-two size.
``bases[in][i]`` is the logical coordinate of in-index ``2**i`` (one entry per out dim, in out-dim
order); any index maps to the XOR of the bases of its set bits.

The **order of out dims matters**: Triton keeps them in the order the layout was built (most
minor first), and :meth:`LL.not_smaller` adds register repetitions in that order.

This module imports nothing else of the adapter, so :mod:`.linear`, :mod:`.cga`, :mod:`.shared`
and the others all build on it without import cycles.
"""
from __future__ import annotations

from itertools import chain
from operator import itemgetter
from typing import Mapping, Sequence

from layoutverify.core import f2 as F2
from layoutverify.core.errors import LayoutError, SizeLimitError, UnsupportedError
from layoutverify.core.layout import Layout

REGISTER_DIMS = ("register", "lane", "warp", "block")
MEMORY_DIMS = ("offset", "block")
#: most bases (bits) one hardware dim may have: Triton sizes dims with 32-bit signed ints
MAX_IN_BITS = 31
#: 0 and the powers of two (a basis entry that moves along its dim, or not)
ZERO_OR_POW2 = frozenset([0] + [1 << i for i in range(64)])


def is_pow2(n: int) -> bool:
    return isinstance(n, int) and n >= 1 and n & (n - 1) == 0


def log2(n: int) -> int:
    return n.bit_length() - 1


_DIM_NAMES = tuple(f"dim{i}" for i in range(16))


def dim_names(rank: int) -> list[str]:
    """``["dim0", ..., "dim<rank-1>"]`` (a new list)."""
    return list(_DIM_NAMES[:rank]) if rank <= len(_DIM_NAMES) else [f"dim{i}" for i in range(rank)]


def supremum(x: Sequence[str], y: Sequence[str]) -> list[str]:
    """Merge two name orders, keeping the relative order of each (``x`` first where free).

    Triton orders the in and out dims of a product this way.
    """
    # the common cases first (same names, one side empty, no shared name): no merge needed
    if x == y or not y:
        return list(x)
    if not x:
        return list(y)
    if set(x).isdisjoint(y):
        return list(x) + list(y)
    if _is_subsequence(y, x):
        return list(x)
    if _is_subsequence(x, y):
        return list(y)
    pos_x = {n: i for i, n in enumerate(x)}
    pos_y = {n: i for i, n in enumerate(y)}
    out: list[str] = []
    i = j = 0
    while True:
        while i < len(x) and x[i] in out:
            i += 1
        while j < len(y) and y[j] in out:
            j += 1
        if i >= len(x) and j >= len(y):
            return out
        if i < len(x) and j < len(y) and x[i] == y[j]:
            out.append(x[i])
            continue
        # where does the other order place our next candidate (None: nowhere ahead, so it is free)
        in_y = pos_y.get(x[i]) if i < len(x) else None
        in_x = pos_x.get(y[j]) if j < len(y) else None
        x_free = i < len(x) and (in_y is None or in_y < j)
        y_free = j < len(y) and (in_x is None or in_x < i)
        if x_free:
            out.append(x[i])
        elif y_free:
            out.append(y[j])
        elif in_y <= in_x:
            out.append(x[i])
        else:
            out.append(y[j])


def _is_subsequence(x: Sequence[str], y: Sequence[str]) -> bool:
    """Does ``y`` hold every name of ``x`` in the same relative order? (then merging gives ``y``)"""
    it = iter(y)
    return all(n in it for n in x)


class LL:
    """An F2 linear layout with ordered, named in and out dims (Triton's ``LinearLayout``)."""

    __slots__ = ("bases", "outs")

    def __init__(self, bases: Mapping[str, Sequence[Sequence[int]]], outs: Sequence[tuple[str, int]]):
        self.outs: list[tuple[str, int]] = [(n, int(s)) for n, s in outs]
        n = len(self.outs)
        self.bases: dict[str, list[list[int]]] = {}
        for k, vs in bases.items():
            vs = [list(map(int, v)) for v in vs]
            for v in vs:
                if len(v) != n:
                    raise LayoutError(f"basis {v} of {k!r} has {len(v)} entries for {n} out dims")
            self.bases[k] = vs

    @classmethod
    def _of(cls, bases: dict[str, list[list[int]]], outs: list[tuple[str, int]]) -> "LL":
        """Internal constructor without copies or checks: ``bases`` and ``outs`` are fresh,
        consistent (one entry per out dim in every basis) and never changed afterwards. Layouts
        are immutable, so results may share basis vectors with their operands."""
        ll = cls.__new__(cls)
        ll.bases = bases
        ll.outs = outs
        return ll

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def empty(cls) -> "LL":
        """The layout with no in or out dims (the unit of the product)."""
        return cls({}, [])

    @classmethod
    def identity1d(cls, size: int, in_dim: str, out_dim: str) -> "LL":
        """``identity1D(size, in, out)``: ``in = x`` maps to ``out = x`` (bases ``1, 2, 4, ...``)."""
        if not is_pow2(size):
            raise LayoutError(f"size {size} along {out_dim} is not a power of two")
        return cls._of({in_dim: [[1 << i] for i in range(log2(size))]}, [(out_dim, size)])

    @classmethod
    def zeros1d(cls, size: int, in_dim: str, out_dim: str, out_size: int = 1) -> "LL":
        """``zeros1D(size, in, out)``: every ``in`` index maps to 0 (zero bases: a broadcast)."""
        if not is_pow2(size):
            raise LayoutError(f"size {size} of {in_dim} is not a power of two")
        return cls._of({in_dim: [[0] for _ in range(log2(size))]}, [(out_dim, int(out_size))])

    @classmethod
    def inferred(cls, bases: Mapping[str, Sequence[Sequence[int]]], out_names: Sequence[str],
                 *, require_surjective: bool = True, what: str = "layout", fresh: bool = False) -> "LL":
        """Out-dim sizes inferred as the smallest power of two above every basis value
        (Triton's ``LinearLayout(bases, outDimNames)``), which must then be surjective.
        ``fresh``: ``bases`` is a dict of new lists of int lists that the caller hands over (kept
        as they are, not copied)."""
        n = len(out_names)
        every = [v for vs in bases.values() for v in vs]
        if n and every and set(map(len, every)) == {n} and set(map(type, chain.from_iterable(every))) == {int}:
            cols = list(zip(*every))
            if min(map(min, cols)) >= 0:   # the common case, at C speed
                outs = [(name, 1 << max(col).bit_length()) for name, col in zip(out_names, cols)]
                ll = cls._of(bases, outs) if fresh and type(bases) is dict else cls(bases, outs)
                if require_surjective and not ll.is_surjective():
                    raise LayoutError(f"{what}: the bases do not cover every element of a "
                                      f"{'x'.join(str(s) for _, s in ll.outs)} grid (not surjective), "
                                      f"which Triton requires")
                return ll
        sizes = [1] * n
        for vs in bases.values():
            for v in vs:
                for d, c in enumerate(v):
                    if c:
                        if c < 0:
                            raise LayoutError(f"{what}: basis {list(v)} has a negative entry")
                        s = 1 << int(c).bit_length()
                        if s > sizes[d]:
                            sizes[d] = s
        ll = cls(bases, list(zip(out_names, sizes)))
        if require_surjective and not ll.is_surjective():
            raise LayoutError(f"{what}: the bases do not cover every element of a "
                              f"{'x'.join(map(str, sizes))} grid (not surjective), which Triton requires")
        return ll

    @classmethod
    def standard_nd(cls, in_dim: str, sizes: Sequence[int], order: Sequence[int]) -> "LL":
        """``identityStandardND``: ``in_dim`` walks ``sizes`` (per logical dim), ``order[0]`` fastest;
        the out dims come in ``order`` (most minor first)."""
        # built directly: the product of ``identity1d(sizes[d], in_dim, dim<d>)`` over ``order``
        if not len(order):
            return cls.empty()
        k = len(order)
        outs, vecs = [], []
        for p, d in enumerate(order):
            size = sizes[d]
            if not is_pow2(size):
                raise LayoutError(f"size {size} along dim{d} is not a power of two")
            outs.append((f"dim{d}", size))
            for i in range(size.bit_length() - 1):
                w = [0] * k
                w[p] = 1 << i
                vecs.append(w)
        if len({n for n, _ in outs}) != k:
            raise LayoutError(f"internal: order {list(order)} repeats a dim")
        return cls._of({in_dim: vecs}, outs)

    @classmethod
    def standard_nd_tiles(cls, parts: Sequence[tuple[str, Sequence[int]]], order: Sequence[int]) -> "LL":
        """``standard_nd(in_0, sizes_0, order) * standard_nd(in_1, sizes_1, order) * ...`` built
        directly: each in dim walks its sizes in ``order`` (most minor first) where the ones
        before it stopped (a blocked layout's registers, lanes, warps)."""
        k = len(order)
        if not k or len({d for d in order}) != k:
            out = cls.empty()
            for in_dim, sizes in parts:
                out = out * cls.standard_nd(in_dim, sizes, order)
            return out
        reach = [1] * k
        bases: dict[str, list[list[int]]] = {}
        for in_dim, sizes in parts:
            vecs = bases.setdefault(in_dim, [])
            for p, d in enumerate(order):
                size = sizes[d]
                if not is_pow2(size):
                    raise LayoutError(f"size {size} along dim{d} is not a power of two")
                for i in range(size.bit_length() - 1):
                    w = [0] * k
                    w[p] = reach[p] << i
                    vecs.append(w)
                reach[p] *= size
        return cls._of(bases, [(f"dim{d}", reach[p]) for p, d in enumerate(order)])

    # -- queries ------------------------------------------------------------------------------
    @property
    def in_names(self) -> list[str]:
        """The in dims, in order."""
        return list(self.bases)

    @property
    def out_names(self) -> list[str]:
        """The out dims, in order (most minor first, as built)."""
        return [n for n, _ in self.outs]

    def out_size(self, name: str) -> int:
        """The size of out dim ``name`` (1 if absent)."""
        for n, s in self.outs:
            if n == name:
                return s
        return 1

    def in_size(self, name: str) -> int:
        """The size of in dim ``name``: ``2**(number of its bases)`` (1 if absent)."""
        return 1 << len(self.bases.get(name, []))

    def is_surjective(self) -> bool:
        """Do the bases span every out coordinate? (F2 rank == total out bits)"""
        packing = F2.Packing.of([s for _, s in self.outs])
        return F2.rank(packing.pack_all([v for vs in self.bases.values() for v in vs])) == packing.width

    def __eq__(self, other) -> bool:
        return isinstance(other, LL) and self.bases == other.bases and self.outs == other.outs

    def __repr__(self) -> str:
        return f"LL({self.bases}, {self.outs})"

    # -- algebra ------------------------------------------------------------------------------
    def __mul__(self, other: "LL") -> "LL":
        """Triton's product ``self * other``: ``self`` is the inner (fast) part. Shared in dims
        get ``self``'s bases then ``other``'s; ``other``'s out coordinates are scaled by
        ``self``'s out sizes; out sizes multiply."""
        if len(other.outs) == 1 and len(other.bases) == 1:
            return self._times_1d(other)
        s_names = [n for n, _ in self.outs]
        o_names = [n for n, _ in other.outs]
        ins = supremum(list(self.bases), list(other.bases))
        outs = supremum(s_names, o_names)
        s_size, o_size = dict(self.outs), dict(other.outs)
        k = len(outs)
        pos = {n: i for i, n in enumerate(outs)}
        s_idx = [pos[n] for n in s_names]
        s_same = s_names == outs       # self's vectors are already in the product's out order
        o_place = [(pos[n], s_size.get(n, 1)) for n in o_names]
        o_same = o_names == outs       # other's vectors too: only scaled
        o_scale = [scale for _, scale in o_place]
        bases: dict[str, list[list[int]]] = {}
        for i in ins:
            sv = self.bases.get(i)
            if not sv:
                vs = []
            elif s_same:
                vs = list(sv)
            else:
                vs = []
                for v in sv:
                    w = [0] * k
                    for j, c in zip(s_idx, v):
                        w[j] = c
                    vs.append(w)
            ov = other.bases.get(i)
            if not ov:
                pass
            elif o_same:
                for v in ov:
                    vs.append([c * scale for c, scale in zip(v, o_scale)])
            else:
                for v in ov:
                    w = [0] * k
                    for (j, scale), c in zip(o_place, v):
                        w[j] = c * scale
                    vs.append(w)
            bases[i] = vs
        return LL._of(bases, [(n, s_size.get(n, 1) * o_size.get(n, 1)) for n in outs])

    def _times_1d(self, other: "LL") -> "LL":
        """``self * other`` for ``other`` with one in dim and one out dim (``identity1d``,
        ``zeros1d``): the same merge of names, done without the general bookkeeping."""
        (o_name, o_size), = other.outs
        (i_name, o_vecs), = other.bases.items()
        outs = list(self.outs)
        k = len(outs)
        for pos, (n, s) in enumerate(outs):
            if n == o_name:
                outs[pos] = (n, s * o_size)
                scale = s
                bases = dict(self.bases)
                break
        else:   # a new out dim, last: every vector of ``self`` gets a 0 for it
            pos, scale = k, 1
            k += 1
            outs.append((o_name, o_size))
            bases = {i: [v + [0] for v in vs] for i, vs in self.bases.items()}
        added = []
        for (c,) in o_vecs:
            w = [0] * k
            w[pos] = c * scale
            added.append(w)
        bases[i_name] = bases[i_name] + added if i_name in bases else added
        return LL._of(bases, outs)

    def times_identities(self, factors: Sequence[tuple[int, str, str]]) -> "LL":
        """``self * identity1d(size, in_dim, out_dim) * ...`` for each ``(size, in_dim, out_dim)``
        of ``factors`` in turn (left to right), built in one pass on fresh copies."""
        outs = list(self.outs)
        pos = {n: i for i, (n, _) in enumerate(outs)}
        bases = {k: [list(v) for v in vs] for k, vs in self.bases.items()}
        for size, in_dim, out_dim in factors:
            if not is_pow2(size):
                raise LayoutError(f"size {size} along {out_dim} is not a power of two")
            p = pos.get(out_dim)
            if p is None:   # a new out dim, last: every vector so far gets a 0 for it
                p = pos[out_dim] = len(outs)
                outs.append((out_dim, 1))
                for vs in bases.values():
                    for v in vs:
                        v.append(0)
            k = len(outs)
            scale = outs[p][1]
            vs = bases.setdefault(in_dim, [])
            for i in range(size.bit_length() - 1):
                w = [0] * k
                w[p] = scale << i
                vs.append(w)
            outs[p] = (out_dim, scale * size)
        return LL._of(bases, outs)

    def transpose_outs(self, names: Sequence[str]) -> "LL":
        """The same map with the out dims reordered to ``names`` (each basis permuted likewise)."""
        names = list(names)
        own = [n for n, _ in self.outs]
        if names == own:
            return self
        if sorted(names) != sorted(own):
            raise LayoutError(f"cannot reorder out dims {own} as {names}")
        idx = [own.index(n) for n in names]
        if len(idx) == 1:
            return self
        pick = itemgetter(*idx)
        return LL._of({k: list(map(list, map(pick, vs))) for k, vs in self.bases.items()},
                      [self.outs[i] for i in idx])

    def not_smaller(self, shape: Mapping[str, int]) -> "LL":
        """``ensureLayoutNotSmallerThan``: repeat along the first in dim (register/offset), one
        out dim at a time in this layout's out-dim order, until each out dim reaches ``shape``."""
        # built directly: ``self * identity1d(desired // actual, first, name)`` per short out dim
        first = self.in_names[0]
        outs = list(self.outs)
        k = len(outs)
        added = []
        for oi, (name, actual) in enumerate(self.outs):
            desired = shape[name]
            if actual < desired:
                if desired % actual:
                    raise LayoutError(f"size {desired} of {name} is not a multiple of the layout's {actual}")
                f = desired // actual
                if not is_pow2(f):
                    raise LayoutError(f"size {f} along {name} is not a power of two")
                for i in range(f.bit_length() - 1):
                    w = [0] * k
                    w[oi] = actual << i
                    added.append(w)
                outs[oi] = (name, desired)
        if outs == self.outs:
            return self
        bases = dict(self.bases)
        bases[first] = self.bases[first] + added
        return LL._of(bases, outs)

    def not_larger(self, shape: Mapping[str, int], *, broadcast_registers: bool = True) -> "LL":
        """``ensureLayoutNotLargerThan``: for each out dim larger than ``shape``, zero its largest
        bases (broadcast) until it fits; with ``broadcast_registers=False`` such register bases are
        removed instead of zeroed."""
        if all(actual <= shape[name] for name, actual in self.outs):
            return self._sizes_inferred()
        bases = {k: [list(v) for v in vs] for k, vs in self.bases.items()}
        dropped: set[int] = set()
        for oi, (name, actual) in enumerate(self.outs):
            desired = shape[name]
            if actual <= desired:
                continue
            entries = [(k, bi, v[oi]) for k, vs in bases.items() for bi, v in enumerate(vs) if v[oi] != 0]
            entries.sort(key=lambda e: -e[2])  # largest first (stable among equals)
            for k, bi, _ in entries:
                if actual <= desired:
                    break
                if not broadcast_registers and k == "register":
                    dropped.add(bi)
                else:
                    bases[k][bi][oi] = 0
                actual >>= 1
        if not broadcast_registers and "register" in bases:
            bases["register"] = [v for bi, v in enumerate(bases["register"]) if bi not in dropped]
        return LL.inferred(bases, self.out_names, require_surjective=False)

    def _sizes_inferred(self) -> "LL":
        """``LL.inferred(self.bases, self.out_names, require_surjective=False)``: out sizes shrunk
        to the smallest powers of two above every basis value (``self`` when they already are)."""
        every = [v for vs in self.bases.values() for v in vs]
        sizes = [1 << max(col).bit_length() for col in zip(*every)] if every else [1] * len(self.outs)
        if all(s == have for s, (_, have) in zip(sizes, self.outs)):
            return self
        return LL._of(self.bases, [(n, s) for (n, _), s in zip(self.outs, sizes)])

    def drop_zero_registers(self) -> "LL":
        """Remove register bases that move nothing (a thread holds no duplicate registers)."""
        if not any(not any(v) for v in self.bases.get("register", [])):
            return self
        bases = dict(self.bases)
        bases["register"] = [v for v in bases["register"] if any(v)]
        return LL._of(bases, list(self.outs))

    def map_outs(self, fn, out_names: Sequence[str]) -> "LL":
        """New out dims: ``fn(basis) -> new basis`` applied to every basis; sizes inferred."""
        return LL.inferred({k: [fn(v) for v in vs] for k, vs in self.bases.items()}, out_names,
                           require_surjective=False)

    # -- to the canonical form ----------------------------------------------------------------
    def to_layout(self, shape: Sequence[int] | None = None, in_dims: Sequence[str] = REGISTER_DIMS,
                  *, name: str | None = None) -> Layout:
        """The canonical :class:`~layoutverify.core.layout.Layout`: in dims in Triton's order (absent ones
        get no bases), out dims ``dim0..`` in standard order with sizes ``shape``."""
        names = dim_names(len(self.outs))
        ll = self.transpose_outs(names)
        if shape is not None:
            for (n, s), want in zip(ll.outs, shape):
                if s != want:
                    raise LayoutError(f"internal: layout covers {s} along {n}, tensor has {want}")
        for k, vs in ll.bases.items():
            if len(vs) > MAX_IN_BITS:
                raise SizeLimitError(f"the layout has 2^{len(vs)} {k} indices; Triton keeps each hardware dim "
                                     f"below 2^{MAX_IN_BITS}")
        extra = [k for k in ll.bases if k not in in_dims]
        if extra:
            raise LayoutError(f"internal: unexpected in dims {extra}")
        return Layout.from_bases({k: ll.bases.get(k, ()) for k in in_dims}, ll.outs, name=name)

    @classmethod
    def from_layout(cls, layout: Layout) -> "LL":
        """Back from a canonical F2 layout (out dims in standard order)."""
        bases = layout.f2_bases()
        if bases is None:
            raise UnsupportedError("this layout is not F2-linear, so Triton's linear-layout algebra "
                                   "cannot be applied to it")
        return cls({k: [list(v) for v in vs] for k, vs in bases.items()}, list(layout.out_dims))
