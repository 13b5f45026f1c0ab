"""CuTe layouts (coordinate -> offset) to the canonical form (DESIGN.md §1).

**Memory view** (``as_="memory"``, the default): a CuTe layout is a map from a logical coordinate
to a memory offset; the canonical layout is its inverse, hardware ``(offset, block)`` -> logical
``(dim0, dim1, ...)``:

* one logical dim per **top-level mode** of the layout, ``dim0`` = the first mode (for a 2-D tile,
  the row), with that mode's size; inside a hierarchical mode the coordinate is CuTe's own
  colexicographic index (the first sub-mode fastest). So ``(4,8):(1,4)`` (column-major) puts
  ``offset = row + 4*col`` and ``(4,8):(8,1)`` (row-major) ``offset = 8*row + col``.
* ``shape=(s0, s1, ...)`` reinterprets CuTe's 1-D coordinate as a ``shape``-d coordinate, also
  column-major (``dim0`` fastest), as CuTe does when a layout of size ``N`` is used as an
  ``s0 x s1`` tile; the product must equal the layout's size.
* the layout must be a bijection between its coordinates and the offsets ``0 .. cosize-1``;
  otherwise :class:`NotInvertibleError` names two coordinates that share an offset, or an offset
  no coordinate reaches (a hole).
* a composed layout ``Sw<B,M,S> o 0 o L`` inverts as ``L^-1(Sw(offset))`` (a swizzle is its own
  inverse).

The map is built from CuTe's modes as ``//``, ``%``, ``*``, ``+`` (and ``^``, ``&``, ``>>`` for a
swizzle), so it is exact for any sizes; the F2 normal form exists only where it truly holds
(``(4,3):(1,4)`` has none).

**Function view** (``as_="function"``): the CuTe function itself, hardware dims ``mode0, mode1, ...``
(one per top-level mode, CuTe's colex index within it; with ``shape=`` one per entry of the shape)
-> one logical dim ``dim0`` = the offset, of size ``max offset + 1``. It needs no inverse, so any
layout (broadcasts, holes) has one.
"""
from __future__ import annotations

import numpy as np

from layoutverify.core import expr as E
from layoutverify.core.errors import LayoutError, NotInvertibleError, SizeLimitError, UnsupportedError
from layoutverify.core.layout import MAX_TABLE_LOCATIONS, Layout

from .layout import CuteLayout, is_tuple, leaves
from .swizzle import ComposedLayout, Swizzle

#: Largest number of elements a CuTe layout may have to become a canonical layout.
MAX_CANONICAL = 1 << 32


def _check_size(n: int, what) -> None:
    if n > MAX_CANONICAL:
        raise SizeLimitError(f"{what} has {n} elements (more than 2^32); too large to verify")


def _leaf_weights(layout: CuteLayout):
    """For each leaf mode: (size, stride, top-level mode index, colex weight inside that mode)."""
    out = []
    modes = layout.shape if is_tuple(layout.shape) else (layout.shape,)
    strides = layout.stride if is_tuple(layout.stride) else (layout.stride,)
    for k, (ms, md) in enumerate(zip(modes, strides)):
        if type(ms) is int:  # a leaf mode (the common case)
            out.append((ms, md, k, 1))
            continue
        w = 1
        for s, d in zip(leaves(ms), leaves(md)):
            out.append((s, d, k, w))
            w *= s
    return out


def _top_sizes(layout: CuteLayout) -> list[int]:
    shape = layout.shape
    if type(shape) is tuple and all(type(s) is int for s in shape):  # flat: the sizes themselves
        return list(shape)
    return [m.size() for m in layout.modes()]


def _coord_str(layout: CuteLayout, idx: int, shape=None) -> str:
    """The natural coordinate (one entry per top-level mode, or per ``shape`` entry) of 1-D index ``idx``."""
    sizes = list(shape) if shape is not None else _top_sizes(layout)
    c = []
    for s in sizes:
        c.append(idx % s)
        idx //= s
    return "(" + ", ".join(str(x) for x in c) + ")"


# ---------------------------------------------------------------------------------------------
def _witness(layout, offsets: np.ndarray, cosize: int, shape) -> str:
    """Explain why ``offsets`` (of 1-D coordinates) is not a bijection onto [0, cosize)."""
    inner = layout.inner if isinstance(layout, ComposedLayout) else layout
    order = np.argsort(offsets, kind="stable")
    so = offsets[order]
    dup = np.nonzero(so[1:] == so[:-1])[0]
    if dup.size:
        a, b = int(order[dup[0]]), int(order[dup[0] + 1])
        return (f"coordinates {_coord_str(inner, a, shape)} and {_coord_str(inner, b, shape)} both map to offset "
                f"{int(offsets[a])} (not injective)")
    if so.size and so[0] < 0:
        return f"coordinate {_coord_str(inner, int(order[0]), shape)} maps to the negative offset {int(so[0])}"
    # sorted without repeats: the first hole is the first position k where so[k] != k (no table of
    # all offsets up to the largest, which may be ~2^32)
    top = max(cosize, int(so[-1]) + 1 if so.size else 0)
    wrong = np.nonzero(so != np.arange(so.size))[0]
    first = int(wrong[0]) if wrong.size else (int(so.size) if so.size < top else None)
    if first is not None:
        return f"offset {first} is not the image of any coordinate (a hole in 0..{top - 1})"
    return "it is not a bijection"


def _sorted_compact_modes(layout: CuteLayout, lw=None):
    """``(leaf index, size, stride)`` of the non-trivial leaf modes sorted by stride, if they form a
    compact mixed-radix system (a bijection onto ``[0, size)``), else ``None``. ``lw``: the
    layout's :func:`_leaf_weights`, if the caller has them."""
    ms = [(j, s, d) for j, (s, d, _, _) in enumerate(lw or _leaf_weights(layout)) if s > 1]
    ms.sort(key=lambda m: m[2])
    expect = 1
    for _, s, d in ms:
        if d != expect:
            return None
        expect *= s
    return ms


def _logical_dims(layout: CuteLayout, shape):
    if shape is None:
        sizes = _top_sizes(layout)
    else:
        sizes = [int(s) for s in shape]
        if int(np.prod(sizes, dtype=object)) != layout.size():
            raise LayoutError(f"shape {'x'.join(map(str, sizes))} has {int(np.prod(sizes, dtype=object))} elements "
                              f"but the CuTe layout {layout} has {layout.size()}")
    return [(f"dim{i}", s) for i, s in enumerate(sizes)]


def _coords_from_leaf_digits(layout: CuteLayout, digits: dict[int, E.Expr], shape) -> list[E.Expr]:
    """Logical coordinates from the digit of each leaf mode (indexed by leaf position)."""
    lw = _leaf_weights(layout)
    if shape is None:
        ntop = layout.rank()
        coords: list[E.Expr] = [E.Const(0)] * ntop
        for j, (s, d, k, w) in enumerate(lw):
            if j in digits:
                coords[k] = coords[k] + digits[j] * w
        return coords
    # CuTe 1-D index, then split column-major over ``shape``
    idx: E.Expr = E.Const(0)
    p = 1
    for j, (s, d, k, w) in enumerate(lw):
        if j in digits:
            idx = idx + digits[j] * p
        p *= s
    out, q = [], 1
    for n, s in enumerate(shape):
        last = n == len(shape) - 1
        c = idx // q
        out.append(c if last else c % s)
        q *= s
    return out


def memory_layout(layout, shape=None, *, name=None) -> Layout:
    """Offset -> coordinate (see the module docstring)."""
    inner = layout.inner if isinstance(layout, ComposedLayout) else layout
    if not isinstance(inner, CuteLayout):
        raise LayoutError(f"not a layout: {layout}")
    lw = _leaf_weights(inner)
    n = 1
    for size, _, _, _ in lw:  # (the layout's size: the product of its leaf sizes)
        n *= size
    if n > MAX_CANONICAL:
        _check_size(n, f"CuTe layout {layout}")
    out_dims = _logical_dims(inner, shape)
    outer = None
    ms = _sorted_compact_modes(inner, lw)
    if isinstance(layout, ComposedLayout):
        outer = layout.element_outer()
        if layout.offset != 0 or not isinstance(outer, Swizzle) or ms is None:
            return _memory_from_table(layout, inner, shape, out_dims, name)
    if ms is None:
        if n > MAX_TABLE_LOCATIONS:
            raise NotInvertibleError(f"CuTe layout {layout} is not a bijection onto offsets 0..{inner.cosize() - 1}")
        raise NotInvertibleError(f"CuTe layout {layout} is not invertible as a memory layout: "
                                 f"{_witness(inner, inner.offsets(), inner.cosize(), shape)}")
    if outer is not None and not outer.is_identity():
        # the swizzle must map the offsets 0..n-1 onto themselves
        top = max(outer.yyy_msk, outer.zzz_msk).bit_length()
        if n % (1 << top) != 0:
            if n > MAX_TABLE_LOCATIONS:
                raise SizeLimitError(f"cannot check that {outer} permutes offsets 0..{n - 1}")
            sw = outer(np.arange(n, dtype=np.int64))
            if sw.max(initial=0) >= n:
                k = int(np.argmax(sw >= n))
                raise NotInvertibleError(f"composed layout {layout} is not a bijection onto offsets 0..{n - 1}: "
                                         f"{outer} sends offset {k} to {int(sw[k])}")
    if outer is None and shape is None:
        return _digits_layout(ms, lw, n, out_dims, name or str(layout))
    off = E.Var("offset")
    y = outer.expr(off) if outer is not None else off
    digits: dict[int, E.Expr] = {}
    for rank_pos, (j, s, d) in enumerate(ms):
        last = rank_pos == len(ms) - 1
        dig = y // d
        digits[j] = dig if (last and outer is None) else dig % s
    coords = _coords_from_leaf_digits(inner, digits, shape)
    return Layout([("offset", n), ("block", 1)], out_dims, coords, name=name or str(layout))


def _digits_layout(ms, lw, n: int, out_dims, name: str) -> Layout:
    """The memory view of a compact layout from its digits: the offset digit ``(offset // d) % s``
    of each sorted leaf mode ``ms`` (:func:`_sorted_compact_modes`) is that leaf's coordinate, and
    adds ``digit * w`` to its top-level mode's logical dim (``lw``: :func:`_leaf_weights`; ``w`` the
    leaf's colex weight in its mode)."""
    ntop = len(out_dims)
    digits = []
    for j, s, d in ms:
        k, w = lw[j][2], lw[j][3]
        strides = [0] * ntop
        strides[k] = w
        digits.append(("offset", d, s, strides))
    return Layout.from_digits([("offset", n), ("block", 1)], out_dims, digits, name=name)


def _memory_from_table(layout, inner, shape, out_dims, name) -> Layout:
    n = inner.size()
    if n > MAX_TABLE_LOCATIONS:
        raise SizeLimitError(f"composed layout {layout} is too large ({n} elements) to invert by table")
    offs = layout.offsets()
    if offs.min(initial=0) < 0 or offs.max(initial=0) >= n or np.unique(offs).size != n:
        raise NotInvertibleError(f"composed layout {layout} is not invertible as a memory layout: "
                                 f"{_witness(layout, offs, n, shape)}")
    inv = np.empty(n, dtype=np.int64)
    inv[offs] = np.arange(n, dtype=np.int64)
    sizes = [s for _, s in out_dims]
    table = np.zeros((n, len(sizes)), dtype=np.int64)
    rest = inv.copy()          # CuTe's 1-D coordinate, split column-major (first dim fastest)
    for k, s in enumerate(sizes):
        table[:, k] = rest % s
        rest //= s
    return Layout.from_table([("offset", n), ("block", 1)], out_dims, table, name=name or str(layout))


# ---------------------------------------------------------------------------------------------
def function_layout(layout, shape=None, *, name=None) -> Layout:
    """Coordinate -> offset as a canonical layout (see the module docstring)."""
    inner = layout.inner if isinstance(layout, ComposedLayout) else layout
    if not isinstance(inner, CuteLayout):
        raise LayoutError(f"not a layout: {layout}")
    n = inner.size()
    _check_size(n, f"CuTe layout {layout}")
    lw = _leaf_weights(inner)
    if shape is None:
        in_dims = [(f"mode{k}", s) for k, s in enumerate(_top_sizes(inner))]
        digit = {}
        for j, (s, d, k, w) in enumerate(lw):
            v = E.Var(f"mode{k}")
            digit[j] = (v // w) % s if s > 1 else E.Const(0)
    else:
        sizes = [int(s) for s in shape]
        if int(np.prod(sizes, dtype=object)) != n:
            raise LayoutError(f"shape {'x'.join(map(str, sizes))} does not have the layout's {n} elements")
        in_dims = [(f"mode{k}", s) for k, s in enumerate(sizes)]
        idx: E.Expr = E.Const(0)
        q = 1
        for k, s in enumerate(sizes):
            idx = idx + E.Var(f"mode{k}") * q
            q *= s
        digit = {}
        p = 1
        for j, (s, d, k, w) in enumerate(lw):
            digit[j] = (idx // p) % s if s > 1 else E.Const(0)
            p *= s
    off: E.Expr = E.Const(0)
    for j, (s, d, k, w) in enumerate(lw):
        off = off + digit[j] * d
    extent = inner.cosize()
    if isinstance(layout, ComposedLayout):
        outer = layout.element_outer()
        if not isinstance(outer, Swizzle):
            raise UnsupportedError("the function view of a layout composed with a layout is not supported")
        off = outer.expr(off + layout.offset)
        bound = E.upper_bound(off, {nm: s - 1 for nm, s in in_dims})
        extent = bound + 1
        if n <= MAX_TABLE_LOCATIONS:
            extent = int(layout.offsets().max(initial=0)) + 1
    _check_size(extent, f"the offsets of CuTe layout {layout}")
    return Layout(in_dims, [("dim0", extent)], [off], name=name or str(layout))
