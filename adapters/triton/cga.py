"""CTA (block) layouts of a cooperative grid array, and how Triton combines them with a CTA tile.

A layout's CGA part says which piece of the tensor each CTA (``block``) of a cluster holds. It is
written two ways:

* Triton >= 3.6 (#8770, all supported releases): ``CGALayout = [[1, 0], [0, 0]]``: the F2 bases of ``block``, in units of
  one CTA's tile (``[1, 0]``: block 1 holds the next tile along dim0; ``[0, 0]``: broadcast).
  Absent means a single CTA.
* older: ``CTAsPerCGA = [2, 1], CTASplitNum = [2, 1], CTAOrder = [1, 0]``: per dim, ``CTAsPerCGA``
  CTAs of which ``CTASplitNum`` hold distinct tiles (the rest replicate them), walking dims in
  ``CTAOrder`` (most minor first). Converted to bases the way Triton's
  ``CGAEncodingAttr::fromSplitParams`` does: per dim in that order, the split first, then the
  replication.

:func:`combine_cta_cga` is Triton's ``combineCtaCgaWithShape``: the CGA layout is cut to the
tensor, the CTA tile is fitted to the per-CTA share of the tensor (repeating in registers or
broadcasting), and the two are multiplied (``block`` outermost).
"""
from __future__ import annotations

from typing import Sequence

from layoutverify.core.errors import LayoutError

from .attr import Attr
from .ll import LL, dim_names, is_pow2
from .parser import bases_param, describe, int_list_param

OLD_PARAMS = ("CTAsPerCGA", "CTASplitNum", "CTAOrder")


def cga_bases(attr: Attr, rank: int) -> list[list[int]]:
    """The ``block`` bases of ``attr``'s CGA layout (``[]`` for one CTA), checked as Triton checks."""
    p = attr.params
    old = [k for k in OLD_PARAMS if k in p]
    if "CGALayout" in p:
        if old:
            raise LayoutError(f"{describe(attr)} gives both CGALayout and {', '.join(old)}; write one of them")
        bases = bases_param(attr, "CGALayout", rank)
        if rank == 0 and bases:
            raise LayoutError(f"{describe(attr)}: CGALayout given for a rank-0 layout")
        check_cga_bases(bases, f"{describe(attr)} CGALayout")
        return bases
    if not old:
        return []
    missing = [k for k in OLD_PARAMS if k not in p]
    if missing:
        raise LayoutError(f"{describe(attr)} gives {', '.join(old)} but not {', '.join(missing)}; the old CTA "
                          f"layout needs all of CTAsPerCGA, CTASplitNum and CTAOrder")
    ctas = int_list_param(attr, "CTAsPerCGA", length=rank, pow2=True)
    split = int_list_param(attr, "CTASplitNum", length=rank, pow2=True)
    order = int_list_param(attr, "CTAOrder", length=rank)
    if sorted(order) != list(range(rank)):
        raise LayoutError(f"{describe(attr)}: CTAOrder = {order} must be a permutation of 0..{rank - 1}")
    return split_params_bases(ctas, split, order, attr)


def check_cga_bases(bases: Sequence[Sequence[int]], what: str = "CGALayout") -> None:
    """Triton's rule: without its zero (broadcast) bases, a CGA layout is a permutation matrix:
    every other basis is one power of two in one dim, and together they cover a grid of tiles."""
    seen = set()
    for b in bases:
        nz = [(d, c) for d, c in enumerate(b) if c]
        if not nz:
            continue
        if len(nz) > 1 or not is_pow2(nz[0][1]) or tuple(nz) in seen:
            raise LayoutError(f"{what}: after removing broadcast (zero) bases the CGA layout must be a "
                              f"permutation matrix; basis {list(b)} breaks that")
        seen.add(tuple(nz))
    if bases:
        LL.inferred({"block": [list(b) for b in bases]}, dim_names(len(bases[0])), what=what)


def split_params_bases(ctas: Sequence[int], split: Sequence[int], order: Sequence[int],
                       attr: Attr | None = None) -> list[list[int]]:
    """``CTAsPerCGA / CTASplitNum / CTAOrder`` -> ``block`` bases (``fromSplitParams``)."""
    rank = len(order)
    names = dim_names(rank)
    ll = LL.empty()
    for d in order:
        if ctas[d] % split[d]:
            where = f"{describe(attr)}: " if attr is not None else ""
            raise LayoutError(f"{where}CTAsPerCGA[{d}] = {ctas[d]} is not a multiple of CTASplitNum[{d}] = {split[d]}")
        ll = ll * LL.identity1d(split[d], "block", names[d]) * LL.zeros1d(ctas[d] // split[d], "block", names[d])
    if rank == 0:
        return []
    ll = ll.transpose_outs(names)
    return [list(v) for v in ll.bases.get("block", [])]


def combine_cta_cga(cta: LL, cga: "Sequence[Sequence[int]] | LL", shape: Sequence[int], *,
                    fit_cga=None, fit_cta=None, check: bool = True) -> LL:
    """Triton's ``combineCtaCgaWithShape``: the layout of the whole tensor of ``shape``.

    ``cta`` maps ``register, lane, warp`` (or ``offset``) to one CTA's tile, out dims in its own
    order (most minor first); ``cga`` is the list of ``block`` bases (or their :class:`LL`). The
    result's out dims are ``dim0, dim1, ...`` with the sizes of ``shape``.

    ``fit_cga(ll, shape)`` / ``fit_cta(ll, shape)`` cut a layout that is larger than the tensor
    (``ensureLayoutNotLargerThan``; default :meth:`LL.not_larger`) and leave one that fits
    alone; the AMD encodings pass the variants of the Triton releases they reproduce.
    ``check=False`` skips the final size check (a fit that zeroes rather than drops may leave a
    smaller image, as Triton's does).
    """
    if isinstance(cga, LL):
        one_cta = list(cga.bases) == ["block"] and not cga.bases["block"] and all(s == 1 for _, s in cga.outs) \
            and sorted(cga.out_names) == sorted(cta.out_names)
    else:
        one_cta = not cga
    if one_cta:   # a CGA layout of size 1 everywhere fits any tensor: nothing for ``fit_cga`` to cut
        return _combine_one_cta(cta, shape, check, fit_cta)
    fit_cga = fit_cga or (lambda ll, want: ll.not_larger(want))
    fit_cta = fit_cta or (lambda ll, want: ll.not_larger(want))
    rank = len(shape)
    names = dim_names(rank)
    if sorted(cta.out_names) != names:
        raise LayoutError(f"internal: CTA tile has out dims {cta.out_names}, expected {names}")
    if not isinstance(cga, LL) and not cga:
        # one CTA: the CGA layout is an empty ``block`` dim (fitting and reordering it change nothing)
        cga_ll = None
    elif isinstance(cga, LL):
        cga_ll = cga
    else:
        for b in cga:
            if len(b) != rank:
                raise LayoutError(f"CGA basis {list(b)} has {len(b)} entries, the layout has rank {rank}")
        cga_ll = LL.inferred({"block": [list(b) for b in cga]}, names, require_surjective=False)
    want = dict(zip(names, (int(s) for s in shape)))
    for n, s in want.items():
        if not is_pow2(s):
            raise LayoutError(f"Triton layouts need power-of-two tensor sizes; {n} is {s}")
    if cga_ll is None:
        cga_ll = LL._of({"block": []}, [(n, 1) for n in cta.out_names])
    else:
        cga_ll = fit_cga(cga_ll, want).transpose_outs(cta.out_names)
    cta_shape = {n: max(1, want[n] // cga_ll.out_size(n)) for n in cta.out_names}
    cta = fit_cta(cta.not_smaller(cta_shape), cta_shape)
    if not any(cga_ll.bases.values()) and [n for n, _ in cga_ll.outs] == cta.out_names \
            and all(s == 1 for _, s in cga_ll.outs):
        # one CTA: the product only adds an empty ``block`` dim
        out = LL._of({**cta.bases, **{k: cta.bases.get(k, []) for k in cga_ll.bases}}, list(cta.outs))
    else:
        out = cta * cga_ll
    out = out.transpose_outs(names)
    if check:
        for (n, s) in out.outs:
            if s != want[n]:
                raise LayoutError(f"internal: combined layout covers {s} along {n}, tensor has {want[n]}")
    return out


def _combine_one_cta(cta: LL, shape: Sequence[int], check: bool, fit_cta=None) -> LL:
    """:func:`combine_cta_cga` for a single CTA (no CGA bases): the CGA layout is an empty
    ``block`` dim of size 1 everywhere, so the CTA tile is fitted to the whole tensor (``fit_cta``,
    default :meth:`LL.not_larger`) and gets that empty dim."""
    names = dim_names(len(shape))
    if sorted(cta.out_names) != names:
        raise LayoutError(f"internal: CTA tile has out dims {cta.out_names}, expected {names}")
    want = dict(zip(names, map(int, shape)))
    for n, s in want.items():
        if not is_pow2(s):
            raise LayoutError(f"Triton layouts need power-of-two tensor sizes; {n} is {s}")
    cta = cta.not_smaller(want)
    cta = cta.not_larger(want) if fit_cta is None else fit_cta(cta, want)
    bases = cta.bases
    out = LL._of({**bases, "block": bases.get("block", [])}, list(cta.outs)).transpose_outs(names)
    if check:
        for (n, s) in out.outs:
            if s != want[n]:
                raise LayoutError(f"internal: combined layout covers {s} along {n}, tensor has {want[n]}")
    return out
