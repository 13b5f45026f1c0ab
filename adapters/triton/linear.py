"""The encodings that need only Triton's linear-layout algebra (:class:`.ll.LL`).

Encodings registered here: ``#ttg.linear``, ``#ttg.blocked``, ``#ttg.slice`` (any parent) and
``#ttg.dot_op`` (dispatching on the parent kind; the ``blocked`` parent, Triton's FMA dot, is
here; NVIDIA MMA parents are in :mod:`.nvidia`, AMD ones in ``.amd``).
"""
from __future__ import annotations

from itertools import chain
from typing import Mapping, Sequence

from layoutverify.core.errors import LayoutError, SizeLimitError, UnsupportedError
from layoutverify.core.layout import Layout

from . import version
from .attr import DOT_OPERAND_PARENTS, ENCODINGS, Attr, dot_operand_parent, encoding, ignored_note, ignored_params
from .cga import cga_bases, combine_cta_cga
# the algebra lives in .ll, which imports no other module of the adapter (so .cga can use it
# without a cycle); its names stay importable from here
from .ll import (LL, MAX_IN_BITS, MEMORY_DIMS, REGISTER_DIMS, ZERO_OR_POW2, dim_names, is_pow2,  # noqa: F401
                 log2, supremum)
from .parser import (attr_param, bases_param, check_params, describe, int_list_param, int_param)

CGA_PARAMS = ("CGALayout", "CTAsPerCGA", "CTASplitNum", "CTAOrder")


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
            lay = fn(attr, shape, **options).to_layout()
            if attr.kind in ("linear", "generic_linear"):   # keys Triton's parser skips are named, not dropped
                note = ignored_note(ignored_params(attr, REGISTER_DIMS))
                if note:
                    lay.name = (lay.name or describe(attr)) + note
            return lay
        to_layout.__name__ = fn.__name__ + "_layout"
        to_layout.__doc__ = fn.__doc__
        encoding(*kinds)(to_layout)
        return fn
    return deco


# ---------------------------------------------------------------------------------------------
# #ttg.linear
# ---------------------------------------------------------------------------------------------
def linear_attr_ll(attr: Attr, options: Mapping | None = None, *, generic: bool = False) -> LL:
    """The layout written in a ``#ttg.linear`` attribute, sizes inferred (natural shape).

    Triton >= 3.7 also requires it to be a bijection once its zero (broadcast) bases are removed,
    i.e. a permutation matrix: every non-zero basis one power of two along one dim, none repeated
    (``LinearEncodingAttr::verify``, #9215); Triton 3.6 accepted repeated bases.

    ``generic``: a ``#ttg.generic_linear`` (Triton 3.9's ``GenericLinearEncodingAttr``, the same
    four bases in the same syntax): its warp bases may move in several dims (swizzled) and it need
    only be surjective, not a bijection; register, lane and block bases still move in at most one
    dim (``GenericLinearEncodingAttr::verify``). Triton 3.6-3.8 do not know it."""
    if generic and not version.at_least(options or {}, "3.9"):
        raise LayoutError(f"{describe(attr)} is new in Triton 3.9; Triton {version.of(options or {})} "
                          f"does not know it (write #ttg.linear, or read it with --triton-version 3.9)")
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
    every = [v for vs in raw.values() for v in vs]
    # the checks below, at C speed first: one length, at most one non-zero entry per basis
    straight = [v for k, vs in raw.items() if not (generic and k == "warp") for v in vs]
    fine = set(map(len, every)) == {rank} and all(len(v) - v.count(0) <= 1 for v in straight)
    for k, vs in ({} if fine else raw).items():
        for v in vs:
            if len(v) != rank:
                raise LayoutError(f"{describe(attr)}: basis {v} of {k} has {len(v)} entries, but the first "
                                  f"basis has {rank}")
            if sum(1 for c in v if c) > 1 and not (generic and k == "warp"):
                raise LayoutError(f"{describe(attr)}: basis {v} of {k} moves in more than one dimension; "
                                  + ("in a generic linear layout only warp bases may (register, lane and block "
                                     "bases move in at most one)" if generic else
                                     "in a distributed layout each basis moves in at most one"))
    ll = LL.inferred(raw, dim_names(rank), what=describe(attr), fresh=True)
    if version.at_least(options or {}, "3.7") and not generic:
        moving = [tuple(v) for v in every if v.count(0) != len(v)]
        fine = set(chain.from_iterable(moving)) <= ZERO_OR_POW2 and len(set(moving)) == len(moving)
        seen: dict[tuple[int, ...], str] = {}
        for k, vs in ({} if fine else raw).items():
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


@ll_encoding("linear", "generic_linear")
def linear_ll(attr: Attr, shape=None, **options) -> LL:
    """``#ttg.linear`` and ``#ttg.generic_linear``: the bases as written, fitted to ``shape``
    (``LinearEncodingAttr::toLinearLayout``; the generic one shares it).

    Registers repeat (or are dropped) in the layout's own order: the dims in order of first
    appearance in the register bases, then the rest from the last dim to the first."""
    ll = linear_attr_ll(attr, options, generic=attr.kind == "generic_linear")
    rank = len(ll.outs)
    check_warp_size(attr, ll.in_size("lane"), options)
    if shape is None:
        return ll
    shape = need_shape(attr, shape, rank)
    if [s for _, s in ll.outs] == list(shape):
        return ll   # written for this shape: nothing repeats or is cut (the steps below change nothing)
    names = dim_names(rank)
    order: list[int] = []
    for v in ll.bases["register"]:
        if len(order) == rank:
            break
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
    every = [v for vs in ll.bases.values() for v in vs]
    if not every or all(max(col) < want[name] for col, (name, _) in zip(zip(*every), ll.outs)):
        return
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
    spt, tpw, wpc, order = blocked_params(attr, options)
    rank = len(spt)
    cga = cga_bases(attr, rank)
    shape = need_shape(attr, shape, rank)
    drop = version.at_least(options, "3.9")
    if not cga:
        return one_cta_blocked_ll(spt, tpw, wpc, order, shape, drop_zero_registers=drop)
    cta = LL.standard_nd_tiles([("register", spt), ("lane", tpw), ("warp", wpc)], order)
    ll = combine_cta_cga(cta, cga, shape)
    return ll.drop_zero_registers() if drop else ll


def one_cta_blocked_ll(spt: Sequence[int], tpw: Sequence[int], wpc: Sequence[int], order: Sequence[int],
                       shape: Sequence[int], *, drop_zero_registers: bool) -> LL:
    """A blocked layout of one CTA (no CGA bases) over ``shape``, built in one pass; the same as
    ``combine_cta_cga(standard_nd_tiles(...), [], shape)`` (tests/test_triton_ll_fastpaths.py).

    Registers, then lanes, then warps take the next ``log2(size)`` bits of each dim, dims in
    ``order``; a bit at or past the tensor's size along its dim moves nothing (broadcast: what
    ``ensureLayoutNotLargerThan`` leaves of the largest bases); then more registers repeat the
    tile over the rest of the tensor, dims in ``order`` (``ensureLayoutNotSmallerThan``).
    ``drop_zero_registers``: Triton >= 3.9 drops registers that move nothing."""
    rank = len(spt)
    reach = [1] * rank
    bases: dict[str, list[list[int]]] = {}
    for in_dim, sizes in (("register", spt), ("lane", tpw), ("warp", wpc)):
        vecs = bases[in_dim] = []
        for d in order:
            r, top = reach[d], shape[d]
            for i in range(sizes[d].bit_length() - 1):
                w = [0] * rank
                if r << i < top:
                    w[d] = r << i
                vecs.append(w)
            reach[d] = r * sizes[d]
    regs = bases["register"]
    for d in order:
        r = reach[d]
        while r < shape[d]:
            w = [0] * rank
            w[d] = r
            regs.append(w)
            r <<= 1
    if drop_zero_registers:
        bases["register"] = [v for v in regs if any(v)]
    bases["block"] = []
    return LL._of(bases, [(f"dim{d}", s) for d, s in enumerate(shape)])


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
