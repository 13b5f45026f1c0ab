"""Triton's linear-layout algebra, and the encodings that need nothing else.

:class:`LL` is an independent re-implementation of the parts of Triton's ``LinearLayout`` that
its ``toLinearLayout`` conversions use (facts from Triton's documentation and source, read,
not copied): ordered *in dims* (``register, lane, warp, block``; ``offset, block`` for memory)
each with F2 bases, and ordered *out dims* (``dim0, dim1, ...``) each with a power-of-two size.
``bases[in][i]`` is the logical coordinate of in-index ``2**i`` (one entry per out dim, in out-dim
order); any index maps to the XOR of the bases of its set bits.

The **order of out dims matters**: Triton keeps them in the order the layout was built (most
minor first), and :meth:`LL.not_smaller` adds register repetitions in that order.

Encodings registered here: ``#ttg.linear``, ``#ttg.blocked``, ``#ttg.slice`` (any parent) and
``#ttg.dot_op`` (dispatching on the parent kind; the ``blocked`` parent, Triton's FMA dot, is
here; NVIDIA MMA parents are in :mod:`.nvidia`, AMD ones in ``.amd``).
"""
from __future__ import annotations

from typing import Mapping, Sequence

from layoutverify.core.errors import LayoutError, SizeLimitError, UnsupportedError
from layoutverify.core.layout import Layout

from . import version
from .attr import DOT_OPERAND_PARENTS, ENCODINGS, Attr, dot_operand_parent, encoding
from .parser import (attr_param, bases_param, check_params, describe, int_list_param, int_param)

REGISTER_DIMS = ("register", "lane", "warp", "block")
MEMORY_DIMS = ("offset", "block")
CGA_PARAMS = ("CGALayout", "CTAsPerCGA", "CTASplitNum", "CTAOrder")
#: most bases (bits) one hardware dim may have: Triton sizes dims with 32-bit signed ints
MAX_IN_BITS = 31


def is_pow2(n: int) -> bool:
    return isinstance(n, int) and n >= 1 and n & (n - 1) == 0


def log2(n: int) -> int:
    return n.bit_length() - 1


def dim_names(rank: int) -> list[str]:
    return [f"dim{i}" for i in range(rank)]


def supremum(x: Sequence[str], y: Sequence[str]) -> list[str]:
    """Merge two name orders, keeping the relative order of each (``x`` first where free).

    Triton orders the in and out dims of a product this way.
    """
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


class LL:
    """An F2 linear layout with ordered, named in and out dims (Triton's ``LinearLayout``)."""

    __slots__ = ("bases", "outs")

    def __init__(self, bases: Mapping[str, Sequence[Sequence[int]]], outs: Sequence[tuple[str, int]]):
        self.outs: list[tuple[str, int]] = [(n, int(s)) for n, s in outs]
        n = len(self.outs)
        self.bases: dict[str, list[list[int]]] = {}
        for k, vs in bases.items():
            vs = [list(int(c) for c in v) for v in vs]
            for v in vs:
                if len(v) != n:
                    raise LayoutError(f"basis {v} of {k!r} has {len(v)} entries for {n} out dims")
            self.bases[k] = vs

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def empty(cls) -> "LL":
        return cls({}, [])

    @classmethod
    def identity1d(cls, size: int, in_dim: str, out_dim: str) -> "LL":
        if not is_pow2(size):
            raise LayoutError(f"size {size} along {out_dim} is not a power of two")
        return cls({in_dim: [[1 << i] for i in range(log2(size))]}, [(out_dim, size)])

    @classmethod
    def zeros1d(cls, size: int, in_dim: str, out_dim: str, out_size: int = 1) -> "LL":
        if not is_pow2(size):
            raise LayoutError(f"size {size} of {in_dim} is not a power of two")
        return cls({in_dim: [[0] for _ in range(log2(size))]}, [(out_dim, out_size)])

    @classmethod
    def inferred(cls, bases: Mapping[str, Sequence[Sequence[int]]], out_names: Sequence[str],
                 *, require_surjective: bool = True, what: str = "layout") -> "LL":
        """Out-dim sizes inferred as the smallest power of two above every basis value
        (Triton's ``LinearLayout(bases, outDimNames)``), which must then be surjective."""
        n = len(out_names)
        sizes = [1] * n
        for vs in bases.values():
            for v in vs:
                for d, c in enumerate(v):
                    if c < 0:
                        raise LayoutError(f"{what}: basis {list(v)} has a negative entry")
                    sizes[d] = max(sizes[d], 1 << int(c).bit_length())
        ll = cls(bases, list(zip(out_names, sizes)))
        if require_surjective and not ll.is_surjective():
            raise LayoutError(f"{what}: the bases do not cover every element of a "
                              f"{'x'.join(map(str, sizes))} grid (not surjective), which Triton requires")
        return ll

    @classmethod
    def standard_nd(cls, in_dim: str, sizes: Sequence[int], order: Sequence[int]) -> "LL":
        """``identityStandardND``: ``in_dim`` walks ``sizes`` (per logical dim), ``order[0]`` fastest;
        the out dims come in ``order`` (most minor first)."""
        names = dim_names(len(sizes))
        out = cls.empty()
        for d in order:
            out = out * cls.identity1d(sizes[d], in_dim, names[d])
        return out

    # -- queries ------------------------------------------------------------------------------
    @property
    def in_names(self) -> list[str]:
        return list(self.bases)

    @property
    def out_names(self) -> list[str]:
        return [n for n, _ in self.outs]

    def out_size(self, name: str) -> int:
        for n, s in self.outs:
            if n == name:
                return s
        return 1

    def in_size(self, name: str) -> int:
        return 1 << len(self.bases.get(name, []))

    def is_surjective(self) -> bool:
        """Do the bases span every out coordinate? (F2 rank == total out bits)"""
        shifts, total = [], 0
        for _, s in self.outs:
            shifts.append(total)
            total += log2(s)
        rows = []
        for vs in self.bases.values():
            for v in vs:
                x = 0
                for d, c in enumerate(v):
                    x |= c << shifts[d]
                rows.append(x)
        rank = 0
        pivots: dict[int, int] = {}
        for x in rows:
            while x:
                hb = x.bit_length() - 1
                if hb in pivots:
                    x ^= pivots[hb]
                else:
                    pivots[hb] = x
                    rank += 1
                    break
        return rank == total

    def __eq__(self, other) -> bool:
        return isinstance(other, LL) and self.bases == other.bases and self.outs == other.outs

    def __repr__(self) -> str:
        return f"LL({self.bases}, {self.outs})"

    # -- algebra ------------------------------------------------------------------------------
    def __mul__(self, other: "LL") -> "LL":
        """Triton's product ``self * other``: ``self`` is the inner (fast) part. Shared in dims
        get ``self``'s bases then ``other``'s; ``other``'s out coordinates are scaled by
        ``self``'s out sizes; out sizes multiply."""
        ins = supremum(self.in_names, other.in_names)
        outs = supremum(self.out_names, other.out_names)
        size = {n: self.out_size(n) * other.out_size(n) for n in outs}
        bases: dict[str, list[list[int]]] = {}
        for i in ins:
            vs = []
            for v in self.bases.get(i, []):
                m = dict(zip(self.out_names, v))
                vs.append([m.get(n, 0) for n in outs])
            for v in other.bases.get(i, []):
                m = dict(zip(other.out_names, v))
                vs.append([m.get(n, 0) * self.out_size(n) for n in outs])
            bases[i] = vs
        return LL(bases, [(n, size[n]) for n in outs])

    def transpose_outs(self, names: Sequence[str]) -> "LL":
        names = list(names)
        if sorted(names) != sorted(self.out_names):
            raise LayoutError(f"cannot reorder out dims {self.out_names} as {names}")
        idx = [self.out_names.index(n) for n in names]
        return LL({k: [[v[i] for i in idx] for v in vs] for k, vs in self.bases.items()},
                  [self.outs[i] for i in idx])

    def not_smaller(self, shape: Mapping[str, int]) -> "LL":
        """``ensureLayoutNotSmallerThan``: repeat along the first in dim (register/offset), one
        out dim at a time in this layout's out-dim order, until each out dim reaches ``shape``."""
        first = self.in_names[0]
        ret = self
        for name, actual in self.outs:
            desired = shape[name]
            if actual < desired:
                if desired % actual:
                    raise LayoutError(f"size {desired} of {name} is not a multiple of the layout's {actual}")
                ret = ret * LL.identity1d(desired // actual, first, name)
        return ret

    def not_larger(self, shape: Mapping[str, int], *, broadcast_registers: bool = True) -> "LL":
        """``ensureLayoutNotLargerThan``: for each out dim larger than ``shape``, zero its largest
        bases (broadcast) until it fits; with ``broadcast_registers=False`` such register bases are
        removed instead of zeroed."""
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

    def drop_zero_registers(self) -> "LL":
        """Remove register bases that move nothing (a thread holds no duplicate registers)."""
        if not any(not any(v) for v in self.bases.get("register", [])):
            return self
        bases = dict(self.bases)
        bases["register"] = [v for v in bases["register"] if any(v)]
        return LL(bases, self.outs)

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
        ll = self.transpose_outs(names) if self.out_names != names else self
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
        bases = {k: ll.bases.get(k, []) for k in in_dims}
        return Layout.from_bases(bases, [(n, s) for n, s in ll.outs], name=name)

    @classmethod
    def from_layout(cls, layout: Layout) -> "LL":
        """Back from a canonical F2 layout (out dims in standard order)."""
        bases = layout.f2_bases()
        if bases is None:
            raise UnsupportedError("this layout is not F2-linear, so Triton's linear-layout algebra "
                                   "cannot be applied to it")
        return cls({k: [list(v) for v in vs] for k, vs in bases.items()}, list(layout.out_dims))


# ---------------------------------------------------------------------------------------------
# Helpers shared by the encodings
# ---------------------------------------------------------------------------------------------
def need_shape(attr: Attr, shape, rank: int | None = None) -> tuple[int, ...]:
    """Check the tensor shape for a distributed encoding: given, right rank, powers of two."""
    if shape is None:
        raise LayoutError(f"{describe(attr)} needs a tensor shape: pass --shape (e.g. "
                          f"{'x'.join(['64'] * (rank or 2))}) or write a whole type "
                          f"tensor<{'x'.join(['64'] * (rank or 2))}xf16, {describe(attr)}<...>>")
    shape = tuple(int(s) for s in shape)
    if rank is not None and len(shape) != rank:
        raise LayoutError(f"shape {'x'.join(map(str, shape))} has rank {len(shape)}, but {describe(attr)} "
                          f"has rank {rank}")
    for d, s in enumerate(shape):
        if not is_pow2(s):
            raise LayoutError(f"Triton layouts need power-of-two tensor sizes; dim{d} of shape "
                              f"{'x'.join(map(str, shape))} is {s}")
    return shape


def check_order(attr: Attr, order: Sequence[int], rank: int, key: str = "order") -> None:
    if sorted(order) != list(range(rank)):
        raise LayoutError(f"{describe(attr)}: {key} = {list(order)} must be a permutation of 0..{rank - 1}")


def check_warp_size(attr: Attr, lanes: int, options: Mapping) -> None:
    ws = options.get("warp_size")
    if ws is not None and int(ws) != lanes:
        raise LayoutError(f"{describe(attr)} has {lanes} lanes per warp, but the warp size given is {ws}")


def linear_of(attr: Attr, shape, **options) -> LL:
    """The linear layout of any registered distributed encoding, out dims in standard order."""
    own = _LL_CONVERTERS.get(attr.kind)
    if own is not None:
        return own(attr, shape, **options)
    fn = ENCODINGS.get(attr.kind)
    if fn is None:
        raise UnsupportedError(f"{describe(attr)} is not a supported layout (known: "
                               f"{', '.join(sorted(ENCODINGS))})")
    return LL.from_layout(fn(attr, shape, **options))


#: kind -> converter returning :class:`LL` (for the kinds implemented in this adapter's core)
_LL_CONVERTERS: dict = {}


def ll_encoding(*kinds: str):
    """Register a converter returning :class:`LL` and its :class:`Layout` wrapper."""
    def deco(fn):
        for k in kinds:
            _LL_CONVERTERS[k] = fn

        def to_layout(attr, shape, **options):
            return fn(attr, shape, **options).to_layout()
        to_layout.__name__ = fn.__name__ + "_layout"
        to_layout.__doc__ = fn.__doc__
        encoding(*kinds)(to_layout)
        return fn
    return deco


# ---------------------------------------------------------------------------------------------
# #ttg.linear
# ---------------------------------------------------------------------------------------------
def linear_attr_ll(attr: Attr, options: Mapping | None = None) -> LL:
    """The layout written in a ``#ttg.linear`` attribute, sizes inferred (natural shape).

    Triton >= 3.7 also requires it to be a bijection once its zero (broadcast) bases are removed,
    i.e. a permutation matrix: every non-zero basis one power of two along one dim, none repeated
    (``LinearEncodingAttr::verify``, #9215); Triton 3.6 accepted repeated bases."""
    # Triton's parser reads the four bases and skips any other key (``order = [1, 0]`` appears in
    # its own tests), so other keys are ignored here too
    check_params(attr, required=REGISTER_DIMS, optional=tuple(attr.params))
    raw = {k: bases_param(attr, k) for k in REGISTER_DIMS}
    for k, vs in raw.items():
        if len(vs) > MAX_IN_BITS:
            raise SizeLimitError(f"{describe(attr)}: {k} has {len(vs)} bases (2^{len(vs)} indices); Triton keeps "
                                 f"each hardware dim below 2^{MAX_IN_BITS}")
    rank = next((len(vs[0]) for vs in raw.values() if vs), 0)
    if rank == 0:
        raise LayoutError(f"{describe(attr)} has no bases at all; Triton needs at least one to know the rank")
    for k, vs in raw.items():
        for v in vs:
            if len(v) != rank:
                raise LayoutError(f"{describe(attr)}: basis {v} of {k} has {len(v)} entries, but the first "
                                  f"basis has {rank}")
            if sum(1 for c in v if c) > 1:
                raise LayoutError(f"{describe(attr)}: basis {v} of {k} moves in more than one dimension; "
                                  f"in a distributed layout each basis moves in at most one")
    ll = LL.inferred(raw, dim_names(rank), what=describe(attr))
    if version.at_least(options or {}, "3.7"):
        seen: dict[tuple[int, ...], str] = {}
        for k, vs in raw.items():
            for v in vs:
                if any(v) and not all(is_pow2(c) for c in v if c):
                    raise LayoutError(f"{describe(attr)}: basis {v} of {k} is not a power of two along its dim; "
                                      f"Triton >= 3.7 requires a permutation matrix layout after removing "
                                      f"broadcast (zero) bases")
                if any(v) and tuple(v) in seen:
                    raise LayoutError(f"{describe(attr)}: basis {v} appears twice ({seen[tuple(v)]} and {k}); "
                                      f"Triton >= 3.7 requires the layout to be a bijection once its zero bases "
                                      f"are removed (Triton 3.6 accepted repeated bases)")
                seen.setdefault(tuple(v), k)
    return ll


@ll_encoding("linear")
def linear_ll(attr: Attr, shape=None, **options) -> LL:
    """``#ttg.linear``: the bases as written, fitted to ``shape`` (``LinearEncodingAttr::toLinearLayout``).

    Registers repeat (or are dropped) in the layout's own order: the dims in order of first
    appearance in the register bases, then the rest from the last dim to the first."""
    ll = linear_attr_ll(attr, options)
    rank = len(ll.outs)
    check_warp_size(attr, ll.in_size("lane"), options)
    if shape is None:
        return ll
    shape = need_shape(attr, shape, rank)
    names = dim_names(rank)
    order: list[int] = []
    for v in ll.bases["register"]:
        for d, c in enumerate(v):
            if c and d not in order:
                order.append(d)
    order += [d for d in reversed(range(rank)) if d not in order]
    want = dict(zip(names, shape))
    ll = ll.transpose_outs([names[d] for d in order])
    ll = ll.not_smaller(want).not_larger(want, broadcast_registers=False)
    _check_fits(attr, ll, want)
    return ll.transpose_outs(names)


def _check_fits(attr: Attr, ll: LL, want: Mapping[str, int]) -> None:
    """Triton builds the fitted layout with the tensor's sizes and aborts when a basis lies
    outside them. Only a layout with repeated bases (accepted by Triton 3.6 alone) can get here:
    shrinking a dim then zeroes just as many bases as halve its size, and a repeat stays."""
    for k, vs in ll.bases.items():
        for v in vs:
            for (name, _), c in zip(ll.outs, v):
                if c >= want[name]:
                    raise LayoutError(f"{describe(attr)}: Triton aborts fitting it to the tensor ('Invalid basis "
                                      f"{c} for in-dim {k!r} and out-dim {name!r}'): a repeated basis is left "
                                      f"outside the tensor's size {want[name]}")


# ---------------------------------------------------------------------------------------------
# #ttg.blocked
# ---------------------------------------------------------------------------------------------
def blocked_params(attr: Attr, options: Mapping) -> tuple[list[int], list[int], list[int], list[int]]:
    """Checked ``(sizePerThread, threadsPerWarp, warpsPerCTA, order)`` of a ``#ttg.blocked``."""
    check_params(attr, required=("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order"), optional=CGA_PARAMS)
    spt = int_list_param(attr, "sizePerThread", pow2=True)
    rank = len(spt)
    if rank == 0:
        raise LayoutError(f"{describe(attr)}: sizePerThread is empty; the rank must be at least 1")
    tpw = int_list_param(attr, "threadsPerWarp", length=rank, pow2=True)
    wpc = int_list_param(attr, "warpsPerCTA", length=rank, pow2=True)
    order = int_list_param(attr, "order", length=rank)
    check_order(attr, order, rank)
    lanes = 1
    for t in tpw:
        lanes *= t
    check_warp_size(attr, lanes, options)
    return spt, tpw, wpc, order


@ll_encoding("blocked")
def blocked_ll(attr: Attr, shape, **options) -> LL:
    """``#ttg.blocked``: each thread holds ``sizePerThread`` contiguous elements, threads of a warp
    tile ``threadsPerWarp``, warps tile ``warpsPerCTA``, all walking dims in ``order`` (most minor
    first); CTAs tile by the CGA layout; the tile repeats in registers over larger tensors and
    broadcasts over smaller ones. Registers that would only broadcast (``sizePerThread`` larger
    than the tensor) stay as zero register bases in Triton 3.6-3.8; Triton 3.9 drops them for
    blocked layouts (#11541; it keeps them for MMA layouts). Both checked against Triton's output."""
    from .cga import cga_bases, combine_cta_cga
    spt, tpw, wpc, order = blocked_params(attr, options)
    rank = len(spt)
    cga = cga_bases(attr, rank)
    shape = need_shape(attr, shape, rank)
    cta = (LL.standard_nd("register", spt, order) * LL.standard_nd("lane", tpw, order)
           * LL.standard_nd("warp", wpc, order))
    ll = combine_cta_cga(cta, cga, shape)
    return ll.drop_zero_registers() if version.at_least(options, "3.9") else ll


# ---------------------------------------------------------------------------------------------
# #ttg.slice
# ---------------------------------------------------------------------------------------------
@ll_encoding("slice")
def slice_ll(attr: Attr, shape, **options) -> LL:
    """``#ttg.slice<{dim = d, parent = P}>``: the parent's layout for the shape with a size-1 dim
    inserted at ``d``, with that dim removed; register bases that become zero are dropped."""
    check_params(attr, required=("dim", "parent"))
    dim = int_param(attr, "dim")
    parent = attr_param(attr, "parent")
    if shape is None:
        need_shape(attr, None)
    shape = tuple(shape)
    if dim > len(shape):
        raise LayoutError(f"{describe(attr)}: dim = {dim} is past the parent's rank {len(shape) + 1}")
    shape = need_shape(attr, shape)
    _check_slice_of_linear(attr, options)
    parent_shape = shape[:dim] + (1,) + shape[dim:]
    pll = linear_of(parent, parent_shape, **options)
    if len(pll.outs) != len(parent_shape):
        raise LayoutError(f"{describe(attr)}: its parent has rank {len(pll.outs)}, so the sliced tensor "
                          f"must have rank {len(pll.outs) - 1}, not {len(shape)}")
    names = dim_names(len(parent_shape))
    pll = pll.transpose_outs(names)
    drop = lambda v: [c for d, c in enumerate(v) if d != dim]  # noqa: E731
    bases = {}
    for k, vs in pll.bases.items():
        new = [drop(v) for v in vs]
        if k == "register":
            new = [v for v in new if any(v)]
        bases[k] = new
    return LL.inferred(bases, dim_names(len(shape)), require_surjective=False)


def _check_slice_of_linear(attr: Attr, options: Mapping) -> None:
    """Triton 3.6 and 3.7 abort on some slices of a ``#ttg.linear``: checking the slice, they
    derive the linear parent's CTA (CGA) layout (``linearToCTAEncodingAttr``), which builds the
    per-CTA part with per-CTA sizes, so every register/lane/warp basis must lie below
    ``size / 2**(block bases along that dim)`` (the block bases must be each dim's top bits).
    Triton 3.6 does that for every slice (``SliceEncodingAttr::verify`` calls ``getCTALayout`` on
    the parent; #8922 changed it to ``getRank``, Triton 3.7); Triton 3.7 still does it when a
    slice's parent is itself a slice (the default ``getRank`` goes through the CGA layout; #9557
    gave slices their own ``getRank``, Triton 3.8)."""
    if version.at_least(options, "3.8"):
        return
    depth, root = 1, attr_param(attr, "parent")
    while root.kind == "slice" and isinstance(root.params.get("parent"), Attr):
        depth, root = depth + 1, root.params["parent"]
    if root.kind != "linear" or (version.of(options) == "3.7" and depth < 2):
        return
    ll = linear_attr_ll(root, options)
    split = [1] * len(ll.outs)
    for v in ll.bases.get("block", []):
        for d, c in enumerate(v):
            if c:
                split[d] *= 2
    for k in ("register", "lane", "warp"):
        for v in ll.bases.get(k, []):
            for d, ((name, size), c) in enumerate(zip(ll.outs, v)):
                if c >= size // split[d]:
                    why = ("checks every slice's parent" if version.of(options) == "3.6"
                           else "checks the parent of a slice of a slice")
                    raise LayoutError(
                        f"{describe(attr)}: Triton {version.of(options)} aborts on this ('Invalid basis {c} for "
                        f"in-dim {k!r} and out-dim {name!r}'): it {why} by deriving the #ttg.linear's CTA "
                        f"layout, which needs its block bases to be the top bits of each dim; Triton >= 3.8 "
                        f"accepts it")


# ---------------------------------------------------------------------------------------------
# #ttg.dot_op
# ---------------------------------------------------------------------------------------------
@encoding("dot_op")
def dot_op_layout(attr: Attr, shape, **options) -> Layout:
    """``#ttg.dot_op<{opIdx, parent, kWidth}>``: operand A (opIdx 0, M x K) or B (opIdx 1, K x N)
    of the parent's matrix instruction; the converter is chosen by the parent's kind."""
    check_params(attr, required=("opIdx", "parent"), optional=("kWidth",))
    op = int_param(attr, "opIdx")
    if op not in (0, 1):
        raise LayoutError(f"{describe(attr)}: opIdx must be 0 (operand A) or 1 (operand B), got {op}")
    int_param(attr, "kWidth", 0)
    parent = attr_param(attr, "parent")
    fn = DOT_OPERAND_PARENTS.get(parent.kind)
    if fn is None:
        raise UnsupportedError(f"{describe(attr)} with a {describe(parent)} parent is not supported "
                               f"(supported parents: {', '.join(sorted(DOT_OPERAND_PARENTS))})")
    return fn(attr, parent, shape, **options)


def dot_cga_bases(dot: Attr, parent: Attr, rank: int) -> list[list[int]]:
    """The CGA layout of a dot operand: the parent's, not split along K (``getCTALayout(dot)``)."""
    from .cga import cga_bases
    k_dim = rank - 1 if int_param(dot, "opIdx") == 0 else rank - 2
    out = []
    for b in cga_bases(parent, rank):
        b = list(b)
        b[k_dim] = 0
        out.append(b)
    return out


def broadcast_along(in_dim: str, sizes: Sequence[int], order: Sequence[int], k_dim: int) -> LL:
    """``in_dim`` walks ``sizes`` in ``order`` but moves nothing along ``k_dim`` (broadcast)."""
    names = dim_names(len(sizes))
    out = LL.empty()
    for d in order:
        part = LL.zeros1d(sizes[d], in_dim, names[d]) if d == k_dim else LL.identity1d(sizes[d], in_dim, names[d])
        out = out * part
    return out


def fma_dot_ll(dot: Attr, parent: Attr, shape, **options) -> LL:
    """Dot operand of a ``blocked`` parent (Triton's FMA dot): each thread holds the whole K
    extent in registers; lanes and warps broadcast along K."""
    from .cga import combine_cta_cga
    if int_param(dot, "kWidth", 0) != 0:
        raise LayoutError(f"{describe(dot)}: kWidth must be 0 (absent) when the parent is a blocked layout")
    spt, tpw, wpc, order = blocked_params(parent, options)
    rank = len(spt)
    if rank < 2:
        raise LayoutError(f"{describe(dot)}: a dot operand needs rank >= 2, the blocked parent has rank {rank}")
    cga = dot_cga_bases(dot, parent, rank)
    shape = need_shape(dot, shape, rank)
    op = int_param(dot, "opIdx")
    k_dim = rank - 1 if op == 0 else rank - 2
    spt[k_dim] = shape[k_dim]
    names = dim_names(rank)
    rep_names = [names[d] for d in order]
    regs = LL.standard_nd("register", spt, order).transpose_outs(rep_names)
    lanes = broadcast_along("lane", tpw, order, k_dim).transpose_outs(rep_names)
    warps = broadcast_along("warp", wpc, order, k_dim).transpose_outs(rep_names)
    return combine_cta_cga(regs * lanes * warps, cga, shape)


@dot_operand_parent("blocked")
def fma_dot_layout(dot: Attr, parent: Attr, shape, **options) -> Layout:
    return fma_dot_ll(dot, parent, shape, **options).to_layout()


_LL_CONVERTERS["dot_op"] = lambda attr, shape, **o: LL.from_layout(dot_op_layout(attr, shape, **o))
