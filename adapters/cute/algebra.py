"""The CuTe layout algebra with CuTe C++ semantics (``include/cute/layout.hpp``).

Each function follows the C++ algorithm step by step for static integers, including the checks
C++ makes at compile time (``static_assert``), which here raise :class:`LayoutError`:

* ``coalesce`` merges adjacent modes from the back (``bw_coalesce``); ``coalesce(L, profile)``
  coalesces mode by mode.
* ``composition(A, B)``: ``A`` is coalesced first (``coalesce_x``), then ``B``'s shape is divided
  through ``A``'s modes under the *stride* and *shape divisibility conditions*. A *tiler* (a tuple
  of layouts / integers / ``_``) composes mode by mode and drops ``A``'s modes it does not reach.
* ``complement(L, cotarget)`` sorts the filtered modes by stride (C++'s ``min``/``find``, so ties
  take the first) and reports non-injective layouts.
* ``right_inverse`` / ``left_inverse`` sort strides with C++'s ``exchange_sort`` (not stable, and
  it matters for ties); ``right_inverse`` skips a mode whose stride does not continue the run but
  keeps looking at the later ones (pycute stops at the first gap).
* ``logical_divide(A, T) = composition(A, make_layout(T, complement(T, shape(coalesce(A)))))``;
  ``logical_product(A, B) = make_layout(A, composition(complement(A, size(A)*cosize(B)), B))``;
  zipped/tiled/flat variants regroup with ``zip2_by`` and slicing; ``blocked_product`` and
  ``raked_product`` zip the two halves; ``tile_to_shape`` repeats a block up to a shape.

A tiler ``T`` is a :class:`CuteLayout`, an ``int`` (the layout ``n:1``), ``_`` or a tuple of
tilers applied mode by mode. Operations on a :class:`ComposedLayout` act on its inner layout, as in
``layout_composed.hpp``.
"""
from __future__ import annotations

from layoutverify.core.errors import LayoutError, UnsupportedError

from .layout import (UNDERSCORE, CuteLayout, Dyn, IntTuple, Underscore, ceil_div, compact_left, compact_right,
                     fmt, is_int, is_static, is_tuple, leaves, make_layout, mul, product, product_each, unwrap,
                     wrap)
from .swizzle import ComposedLayout, Swizzle, make_swizzle

__all__ = [
    "coalesce", "filter_zeros", "filter_layout", "composition", "complement", "right_inverse", "left_inverse",
    "logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product", "zipped_product",
    "tiled_product", "flat_product", "blocked_product", "raked_product", "tile_to_shape", "upcast", "downcast",
    "append_rank", "zip_layouts", "size", "cosize",
]


def size(x) -> int:
    if isinstance(x, (CuteLayout, ComposedLayout)):
        return x.size()
    if isinstance(x, Underscore):
        raise LayoutError("_ has no size")
    if is_tuple(x) and any(isinstance(e, (CuteLayout, Underscore)) for e in _tiler_leaves(x)):
        return product(tuple(size(e) for e in x))
    return product(x)


def cosize(x) -> int:
    if isinstance(x, CuteLayout):
        return x.cosize()
    raise UnsupportedError(f"cosize of {x} is not supported")


def _tiler_leaves(t):
    if is_tuple(t):
        for e in t:
            yield from _tiler_leaves(e)
    else:
        yield t


def _mode_count(layout) -> int:
    return layout.rank()


def _transform_layout(layout: CuteLayout, tiler: tuple, fn, keep_rest: bool = True) -> CuteLayout:
    """C++ ``transform_layout(layout, tiler, f)``: ``f`` on the first ``len(tiler)`` modes, the rest
    of ``layout``'s modes appended unchanged (dropped for composition)."""
    r = layout.rank()
    if len(tiler) > r:
        raise LayoutError(f"tiler {fmt_tiler(tiler)} has {len(tiler)} modes but layout {layout} has only {r}")
    parts = [fn(layout.mode(i), tiler[i]) for i in range(len(tiler))]
    if keep_rest:
        parts += [layout.mode(i) for i in range(len(tiler), r)]
    return make_layout(*parts)


def fmt_tiler(t) -> str:
    if is_tuple(t):
        return "(" + ",".join(fmt_tiler(e) for e in t) + ")"
    return str(t)


def _composed(fn):
    """Decorator: apply ``fn`` to a ComposedLayout's inner layout (layout_composed.hpp)."""
    def wrapper(a, *args, **kw):
        if isinstance(a, ComposedLayout):
            return a.with_inner(fn(a.inner, *args, **kw))
        if not isinstance(a, CuteLayout):
            raise LayoutError(f"{fn.__name__} needs a layout, got {a}")
        return fn(a, *args, **kw)
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


# ---------------------------------------------------------------------------------------------
# coalesce, filter
# ---------------------------------------------------------------------------------------------
def _static_one(x) -> bool:
    """C++ ``is_constant<1, X>``: the static integer 1 (a dynamic 1 is not)."""
    return x == 1 and is_static(x)


def _bw_coalesce(shapes: list[int], strides: list[int], init_shape: int, init_stride: int) -> CuteLayout:
    """C++ ``detail::bw_coalesce`` over flat modes ``0 .. len-1`` (the last one is the init).

    Modes are skipped, replaced or merged only when that is decided at compile time: a size-1 mode
    must be a static 1; a merge needs the front shape and ``s * d == next stride`` static."""
    ns, nd = [init_shape], [init_stride]
    single = True            # the new shape is still an integer (never prepended to)
    for s, d in zip(reversed(shapes), reversed(strides)):
        if _static_one(s):
            continue
        if single and _static_one(ns[0]):
            ns, nd = [s], [d]
        elif is_static(ns[0]) and is_static(s) and is_static(d) and is_static(nd[0]) and s * d == nd[0]:
            ns[0] = mul(s, ns[0])
            nd[0] = d
        else:
            ns.insert(0, s)
            nd.insert(0, d)
            single = False
    if single:
        if _static_one(ns[0]):
            return CuteLayout(1, 0)
        return CuteLayout(ns[0], nd[0])
    return CuteLayout(tuple(ns), tuple(nd))


def _coalesce_flat(layout: CuteLayout, extend_last: bool) -> CuteLayout:
    fs, fd = leaves(layout.shape), leaves(layout.stride)
    last_s, last_d = fs[-1], fd[-1]
    if extend_last and last_s == 1:
        last_s = 2          # coalesce_x: keep the function right outside the domain too
    return _bw_coalesce(fs[:-1], fd[:-1], last_s, last_d)


@_composed
def coalesce(layout: CuteLayout, profile: IntTuple | None = None) -> CuteLayout:
    """C++ ``coalesce(layout)`` / ``coalesce(layout, trg_profile)``."""
    if profile is not None and is_tuple(profile):
        return _transform_layout(layout, profile, lambda l, p: coalesce(l, p))
    return _coalesce_flat(layout, extend_last=False)


def coalesce_x(layout: CuteLayout, profile: IntTuple | None = None) -> CuteLayout:
    """C++ ``detail::coalesce_x``: like coalesce, but a trailing size-1 mode is kept as size 2 so
    the function is preserved outside the domain (used by composition)."""
    if profile is not None and is_tuple(profile):
        return _transform_layout(layout, profile, lambda l, p: coalesce_x(l, p))
    return _coalesce_flat(layout, extend_last=True)


def _filter_zeros_tuple(stride: IntTuple, shape: IntTuple) -> IntTuple:
    if is_tuple(stride):
        return tuple(_filter_zeros_tuple(d, s) for d, s in zip(stride, shape))
    return 1 if (stride == 0 and is_static(stride)) else shape     # C++ is_constant<0>: a static 0 only


@_composed
def filter_zeros(layout: CuteLayout) -> CuteLayout:
    """C++ ``filter_zeros``: modes with stride 0 get size 1."""
    return CuteLayout(_filter_zeros_tuple(layout.stride, layout.shape), layout.stride)


@_composed
def filter_layout(layout: CuteLayout, profile: IntTuple | None = None) -> CuteLayout:
    """C++ ``filter``: remove stride-0 and size-1 modes (``coalesce(filter_zeros(L))``)."""
    if profile is not None and is_tuple(profile):
        return _transform_layout(layout, profile, lambda l, p: filter_layout(l, p))
    return coalesce(filter_zeros(layout))


# ---------------------------------------------------------------------------------------------
# composition
# ---------------------------------------------------------------------------------------------
def _ceil_div_int(a: int, b: int) -> int:
    return _typed_int(-(-int(a) // int(b)), a, b)


def _typed_int(v: int, *operands) -> int:
    """``v`` as CuTe types the result of an operation on ``operands``: dynamic if any is."""
    return Dyn(v) if not all(is_static(o) for o in operands) else int(v)


def _composition_impl(ls: IntTuple, ld: IntTuple, rs: IntTuple, rd: IntTuple) -> CuteLayout:
    """C++ ``detail::composition_impl``, with its static/dynamic branches: shortcuts and skips only
    for static values (a static stride 0, a static 1), divisibility checked only when static."""
    if is_tuple(rs):                                   # right-distributivity over the rhs modes
        return make_layout(*[_composition_impl(ls, ld, s, d) for s, d in zip(rs, rd)])
    if rd == 0 and is_static(rd):
        return CuteLayout(rs, rd)
    if not is_tuple(ls):
        return CuteLayout(rs, mul(rd, ld))
    result_shape: list[int] = []
    result_stride: list[int] = []
    rest_shape, rest_stride = rs, rd
    for cs, cd in zip(ls[:-1], ld[:-1]):
        astride = _typed_int(abs(int(rest_stride)), rest_stride)
        if is_static(cs) and is_static(rest_stride) and not (astride % cs == 0 or astride < cs):
            raise LayoutError(f"composition: stride divisibility condition fails (stride {rest_stride} "
                              f"vs mode size {cs} of the coalesced left layout {fmt(ls)}:{fmt(ld)})")
        next_shape = _ceil_div_int(cs, astride)
        sign = _typed_int((int(rest_stride) > 0) - (int(rest_stride) < 0), rest_stride)
        next_stride = mul(_ceil_div_int(astride, cs), sign)
        if _static_one(next_shape) or _static_one(rest_shape):
            rest_stride = next_stride
            continue
        new_shape = _typed_int(min(int(next_shape), int(rest_shape)), next_shape, rest_shape)
        if is_static(new_shape) and is_static(rest_shape) and rest_shape % new_shape != 0:
            raise LayoutError(f"composition: shape divisibility condition fails ({rest_shape} is not a "
                              f"multiple of {new_shape}; left layout {fmt(ls)}:{fmt(ld)})")
        result_shape.append(new_shape)
        result_stride.append(mul(rest_stride, cd))
        rest_shape = _typed_int(int(rest_shape) // int(new_shape), rest_shape, new_shape)
        rest_stride = next_stride
    if not result_shape:
        return CuteLayout(rest_shape, mul(rest_stride, ld[-1]))
    if _static_one(rest_shape):
        return CuteLayout(unwrap(tuple(result_shape)), unwrap(tuple(result_stride)))
    return CuteLayout(tuple(result_shape) + (rest_shape,), tuple(result_stride) + (mul(rest_stride, ld[-1]),))


def composition(lhs, rhs):
    """C++ ``composition(lhs, rhs)``: ``result(c) = lhs(rhs(c))``; ``rhs`` a layout or a tiler."""
    if isinstance(lhs, Swizzle):
        if isinstance(rhs, CuteLayout):
            return ComposedLayout(lhs, 0, rhs)
        raise UnsupportedError(f"composition of a swizzle with {rhs} is not supported")
    if isinstance(lhs, ComposedLayout):
        return lhs.with_inner(composition(lhs.inner, rhs))
    if not isinstance(lhs, CuteLayout):
        raise LayoutError(f"composition needs a layout on the left, got {fmt_tiler(lhs)}")
    if isinstance(rhs, CuteLayout):
        f = coalesce_x(lhs)
        return _composition_impl(f.shape, f.stride, rhs.shape, rhs.stride)
    if isinstance(rhs, ComposedLayout):
        raise UnsupportedError("composition of a layout with a composed (swizzled) layout is not supported")
    if isinstance(rhs, Underscore):
        return lhs
    if is_int(rhs):
        f = coalesce_x(lhs)
        return _composition_impl(f.shape, f.stride, int(rhs), 1)
    if is_tuple(rhs):
        return _transform_layout(lhs, rhs, composition, keep_rest=False)
    raise LayoutError(f"cannot compose {lhs} with {rhs}")


# ---------------------------------------------------------------------------------------------
# complement, inverses
# ---------------------------------------------------------------------------------------------
def _div(a: int, b: int) -> int:
    """C++ ``a / b`` on CuTe integers: truncating, dynamic if an operand is."""
    if int(b) == 0:
        raise LayoutError(f"division of {a} by zero (CuTe C++ would divide by zero{'' if is_static(b) else ' at run time'})")
    q = abs(int(a)) // abs(int(b))
    return _typed_int(q if (int(a) < 0) == (int(b) < 0) else -q, a, b)


def _ceil_div_typed(a: IntTuple, b: int) -> IntTuple:
    """C++ ``ceil_div(a, b)`` with an integer ``b`` (``(a + b - _1) / b``; a tuple ``a`` folds ``b``
    across its modes), static unless an operand is dynamic."""
    if is_tuple(a):
        out, rest = [], b
        for ai in a:
            out.append(_ceil_div_typed(ai, rest))
            rest = _ceil_div_typed(rest, ai) if not is_tuple(ai) else _ceil_div_typed(rest, product(ai))
        return tuple(out)
    return _div(_typed_int(int(a) + int(b) - 1, a, b), b)


def coalesce_shape(shape: IntTuple) -> IntTuple:
    """C++ ``coalesce(Shape)``: multiply adjacent leaves that are both static or both dynamic
    (``(_2,_4,3,5,_2)`` -> ``(_8,15,_2)``); one leaf left is an integer."""
    flat = leaves(shape) if is_tuple(shape) else [shape]
    out = [flat[0]]
    for a in flat[1:]:
        if is_static(out[-1]) == is_static(a):
            out[-1] = mul(out[-1], a)
        else:
            out.append(a)
    return out[0] if len(out) == 1 else tuple(out)


def cosize_typed(layout: CuteLayout) -> int:
    """C++ ``cosize(layout)`` = ``size(coshape(layout))``: ``1 + sum((s - 1) * |d|)``, typed as C++
    types it (``s - _1`` and ``_0 * x`` static; a sum with a dynamic term dynamic)."""
    total: int = 0
    for s, d in zip(leaves(layout.shape), leaves(layout.stride)):
        term = mul(_typed_int(int(s) - 1, s), _typed_int(abs(int(d)), d))
        total = _typed_int(int(total) + int(term), total, term)
    return _typed_int(int(total) + 1, total)


def _complement(shape: IntTuple, stride: IntTuple, cotarget: IntTuple) -> CuteLayout:
    """C++ ``detail::complement`` on a filtered layout, with its static/dynamic rules: a static
    stride 0 is the special case; dynamic strides only for rank 1 (C++ static_asserts otherwise);
    only a *static* zero shape is reported as non-injective."""
    if not is_tuple(stride) and stride == 0 and is_static(stride):
        n = coalesce_shape(cotarget)
        return CuteLayout(n, compact_left(n)[0])
    shapes, strides = list(wrap(shape)), list(wrap(stride))
    r = len(shapes)
    if r > 1 and not is_static(stride):
        raise LayoutError("complement: dynamic strides only for rank-1 layouts (CuTe C++ static_assert "
                          "'Dynamic-stride complement only for rank-1 layouts')")
    result_shape: list[int] = []
    result_stride: list[int] = [1]
    for i in range(r - 1):
        min_stride = min(strides)
        idx = strides.index(min_stride)
        new_shape = _div(min_stride, result_stride[i])
        if new_shape == 0 and is_static(new_shape):
            raise LayoutError("complement: the layout is not injective (non-injective layout detected)")
        result_shape.append(new_shape)
        result_stride.append(mul(min_stride, shapes[idx]))
        del shapes[idx], strides[idx]
    new_shape = _div(strides[0], result_stride[r - 1])
    if new_shape == 0 and is_static(new_shape):
        raise LayoutError("complement: the layout is not injective (non-injective layout detected)")
    result_shape.append(new_shape)
    new_stride = mul(strides[0], shapes[0])
    rest_shape = coalesce_shape(_ceil_div_typed(cotarget, new_stride))
    rest_stride = compact_left(rest_shape, new_stride)[0]
    return coalesce(CuteLayout((tuple(result_shape), rest_shape), (tuple(result_stride), rest_stride)))


def complement(layout, cotarget: IntTuple | None = None) -> CuteLayout:
    """C++ ``complement(layout, cotarget)`` (``cotarget`` defaults to ``cosize(filter(layout))``)."""
    if isinstance(layout, ComposedLayout):
        if cotarget is None:
            raise UnsupportedError("complement of a composed layout needs an explicit cotarget")
        layout = layout.inner
    if not isinstance(layout, CuteLayout):
        raise LayoutError(f"complement needs a layout, got {fmt_tiler(layout)}")
    f = filter_layout(layout)
    if cotarget is None:
        cotarget = cosize_typed(f)
    elif not all(is_int(c) and c >= 1 for c in leaves(cotarget)):
        raise LayoutError(f"the cotarget {fmt_tiler(cotarget)} of complement must be positive integers")
    return _complement(f.shape, f.stride, cotarget)


def _exchange_sort(keys: list[int]) -> list[int]:
    """C++ ``detail::SortByKey`` (an exchange sort: not stable for equal keys). Returns indices."""
    arr = [(k, i) for i, k in enumerate(keys)]
    n = len(arr)
    for i in range(n):
        for j in range(i + 1, n):
            if arr[j][0] < arr[i][0]:
                arr[i], arr[j] = arr[j], arr[i]
    return [i for _, i in arr]


def _prefix_products(shape: tuple) -> list[int]:
    out = [1]
    for s in shape:
        out.append(mul(out[-1], s))
    return out


def _call_unbounded(layout: CuteLayout, idx: int) -> int:
    """C++ ``layout(idx)`` for any ``idx``: the last mode takes the whole remaining quotient."""
    modes = layout.flat_modes()
    off = 0
    for k, (s, d) in enumerate(modes):
        c = idx if k == len(modes) - 1 else idx % s
        off += c * d
        idx //= s
    return off


def _inverse_of_swizzled(layout: ComposedLayout, inverse):
    """C++ ``right_inverse``/``left_inverse`` of ``Sw o _0 o L``: ``composition(inverse(L), Sw)``,
    which CuTe builds as ``make_swizzle<inv(Y), inv(Z)>() o _0 o inv`` with ``inv = inverse(L)`` and
    ``Y``/``Z`` the swizzle's masks (``composition(Layout, Swizzle)``, swizzle_layout.hpp)."""
    sw = layout.outer
    if not isinstance(sw, Swizzle) or layout.smem_bits is not None or layout.offset != 0:
        raise UnsupportedError(f"{inverse.__name__} of {layout}: only a swizzle composed at offset 0 is modelled")
    inv = inverse(layout.inner)
    new = make_swizzle(_call_unbounded(inv, sw.yyy_msk), _call_unbounded(inv, sw.zzz_msk))
    if new is None:
        return inv                      # composition(Swizzle<0,...>, _0, L) is L
    return ComposedLayout(new, 0, inv)


def right_inverse(layout) -> CuteLayout:
    """C++ ``right_inverse``: ``layout(result(i)) == i`` for ``i < size(result)``."""
    if isinstance(layout, Underscore):
        return layout
    if isinstance(layout, Swizzle):
        return layout                   # a swizzle is its own inverse
    if isinstance(layout, ComposedLayout):
        return _inverse_of_swizzled(layout, right_inverse)
    if not isinstance(layout, CuteLayout):
        raise UnsupportedError(f"right_inverse of {layout} is not supported")
    c = coalesce(layout)
    lstride, lshape = wrap(c.stride), wrap(c.shape)
    pre = _prefix_products(lshape)
    rs, rd, curr = [1], [0], 1
    static_modes = [i for i in range(len(lstride)) if is_static(lstride[i])]     # dynamic strides are filtered out
    order = [static_modes[j] for j in _exchange_sort([lstride[i] for i in static_modes])]
    for i in order:
        if is_static(curr) and lstride[i] == curr:      # C++ is_constant<istride, curr>
            rs.append(lshape[i])
            rd.append(pre[i])
            curr = mul(lshape[i], lstride[i])
    return coalesce(CuteLayout(tuple(rs), tuple(rd)))


def left_inverse(layout) -> CuteLayout:
    """C++ ``left_inverse``: ``layout(result(layout(i))) == layout(i)``."""
    if isinstance(layout, Underscore):
        return layout
    if isinstance(layout, Swizzle):
        return layout
    if isinstance(layout, ComposedLayout):
        return _inverse_of_swizzled(layout, left_inverse)
    if not isinstance(layout, CuteLayout):
        raise UnsupportedError(f"left_inverse of {layout} is not supported")
    c = coalesce(layout)
    lstride, lshape = wrap(c.stride), wrap(c.shape)
    if not is_static(lstride):
        raise LayoutError(f"left_inverse of {layout.cpp_str()}: CuTe requires static strides "
                          f"(\"Left inverse requires static strides.\")")
    pre = _prefix_products(lshape)
    order = _exchange_sort(list(lstride))
    rs: list[int] = []
    rd: list[int] = [0]
    for i in order:
        d = lstride[i]
        if d == 0:
            continue
        sz = product(tuple(rs)) if rs else 1
        if d % sz != 0:
            raise LayoutError(f"left_inverse: divisibility condition fails (stride {d} is not a multiple of {sz})")
        rs.append(d // sz)
        rd.append(pre[i])
    return coalesce(CuteLayout(tuple(rs) + (lshape[order[-1]],), tuple(rd)))


# ---------------------------------------------------------------------------------------------
# divide
# ---------------------------------------------------------------------------------------------
def _as_tiler_layout(t) -> CuteLayout:
    if isinstance(t, CuteLayout):
        return t
    if is_int(t):
        if int(t) < 1:
            raise LayoutError(f"tile size {t} must be positive")
        return CuteLayout(t, compact_left(t)[0])        # C++ make_layout(n): n:_1 (a dynamic n stays dynamic)
    raise LayoutError(f"not a tile: {fmt_tiler(t)}")


@_composed
def logical_divide(layout: CuteLayout, tiler) -> CuteLayout:
    """C++ ``logical_divide(layout, tiler)``."""
    if isinstance(tiler, CuteLayout):
        cot = coalesce(layout).shape
        return composition(layout, make_layout(tiler, complement(tiler, cot)))
    if is_tuple(tiler):
        return _transform_layout(layout, tiler, logical_divide)
    if isinstance(tiler, Underscore):
        return layout
    return logical_divide(layout, _as_tiler_layout(tiler))


def _zip2_by(t: IntTuple, guide) -> tuple:
    """C++ ``zip2_by``: gather the rank-2 modes found at the guide's leaves into ((A,B,..),(a,b,..,rest))."""
    if is_tuple(guide):
        if not is_tuple(t) or len(t) < len(guide):
            raise LayoutError(f"zip2_by: {fmt(t)} has fewer modes than the tiler {fmt_tiler(guide)}")
        split = [_zip2_by(t[i], guide[i]) for i in range(len(guide))]
        return (tuple(s[0] for s in split), tuple(s[1] for s in split) + tuple(t[len(guide):]))
    if not is_tuple(t) or len(t) != 2:
        raise LayoutError(f"zip2_by: expected a rank-2 mode at a tiler leaf, got {fmt(t)}")
    return t


def tile_unzip(layout: CuteLayout, tiler) -> CuteLayout:
    return CuteLayout(_zip2_by(layout.shape, tiler), _zip2_by(layout.stride, tiler))


def _slice_keep(coord, t):
    """C++ ``slice`` with a coordinate made only of ``_``: ``_`` keeps the mode, a tuple of ``_``
    splices the sub-modes in (``lift_slice``)."""
    if isinstance(coord, Underscore):
        return t
    out = []
    for c, x in zip(coord, t):
        out.extend(_lift(c, x))
    return tuple(out)


def _lift(coord, t):
    if isinstance(coord, Underscore):
        return [t]
    out = []
    for c, x in zip(coord, t):
        out.extend(_lift(c, x))
    return out


def _repeat_underscore(n: int):
    return UNDERSCORE if n == 1 else tuple([UNDERSCORE] * n)


def _slice_layout(layout: CuteLayout, coord) -> CuteLayout:
    return CuteLayout(_slice_keep(coord, layout.shape), _slice_keep(coord, layout.stride))


def _tiled(result: CuteLayout) -> CuteLayout:
    """``result(_, repeat<rank<1>>(_))``: unpack the second mode."""
    r1 = result.mode(1).rank()
    return _slice_layout(result, (UNDERSCORE, _repeat_underscore(r1)))


def _flat(result: CuteLayout) -> CuteLayout:
    """``result(repeat<rank<0>>(_), repeat<rank<1>>(_))``: unpack both modes."""
    r0, r1 = result.mode(0).rank(), result.mode(1).rank()
    return _slice_layout(result, (_repeat_underscore(r0), _repeat_underscore(r1)))


@_composed
def zipped_divide(layout: CuteLayout, tiler) -> CuteLayout:
    """``((tile modes), (rest modes))``."""
    return tile_unzip(logical_divide(layout, tiler), tiler)


@_composed
def tiled_divide(layout: CuteLayout, tiler) -> CuteLayout:
    """``((tile modes), rest0, rest1, ...)``."""
    return _tiled(zipped_divide(layout, tiler))


@_composed
def flat_divide(layout: CuteLayout, tiler) -> CuteLayout:
    """``(tile0, tile1, ..., rest0, rest1, ...)``."""
    return _flat(zipped_divide(layout, tiler))


# ---------------------------------------------------------------------------------------------
# products
# ---------------------------------------------------------------------------------------------
@_composed
def logical_product(block: CuteLayout, tiler) -> CuteLayout:
    """C++ ``logical_product(block, tiler)``: ``(block, complement-of-block composed with tiler)``."""
    if isinstance(tiler, CuteLayout):
        comp = complement(block, mul(block.size(), cosize_typed(tiler)))
        return make_layout(block, composition(comp, tiler))
    if is_tuple(tiler):
        return _transform_layout(block, tiler, logical_product)
    if isinstance(tiler, Underscore):
        return block
    return logical_product(block, _as_tiler_layout(tiler))


@_composed
def zipped_product(block: CuteLayout, tiler) -> CuteLayout:
    return tile_unzip(logical_product(block, tiler), tiler)


@_composed
def tiled_product(block: CuteLayout, tiler) -> CuteLayout:
    return _tiled(zipped_product(block, tiler))


@_composed
def flat_product(block: CuteLayout, tiler) -> CuteLayout:
    return _flat(zipped_product(block, tiler))


def append_rank(layout: CuteLayout, r: int) -> CuteLayout:
    """C++ ``append<R>(layout)``: pad with ``1:0`` modes up to rank ``r``."""
    if not is_tuple(layout.shape):
        if r == 1:
            return layout
        return CuteLayout((layout.shape,) + (1,) * (r - 1), (layout.stride,) + (0,) * (r - 1))
    n = len(layout.shape)
    if n == r:
        return layout
    if n > r:
        raise LayoutError(f"cannot append {layout} to rank {r}")
    return CuteLayout(layout.shape + (1,) * (r - n), layout.stride + (0,) * (r - n))


def _zip2(a: IntTuple, b: IntTuple) -> IntTuple:
    """C++ ``zip(a, b)``: pair up the modes of two tuples (``((a,b))`` when ``a`` is an integer)."""
    if is_tuple(a):
        if not is_tuple(b) or len(a) != len(b):
            raise LayoutError(f"zip: mismatched ranks {fmt(a)} and {fmt(b)}")
        return tuple((x, y) for x, y in zip(a, b))
    return ((a, b),)


def zip_layouts(a: CuteLayout, b: CuteLayout) -> CuteLayout:
    return CuteLayout(_zip2(a.shape, b.shape), _zip2(a.stride, b.stride))


def _rank_sensitive(block: CuteLayout, tiler: CuteLayout, raked: bool) -> CuteLayout:
    if not isinstance(tiler, CuteLayout):
        tiler = _as_tiler_layout(tiler)
    r = max(block.rank(), tiler.rank())
    res = logical_product(append_rank(block, r), append_rank(tiler, r))
    a, b = res.mode(0), res.mode(1)
    return zip_layouts(b, a) if raked else zip_layouts(a, b)


@_composed
def blocked_product(block: CuteLayout, tiler) -> CuteLayout:
    """C++ ``blocked_product``: the block repeated over the tiler, block modes fastest."""
    return _rank_sensitive(block, tiler, raked=False)


@_composed
def raked_product(block: CuteLayout, tiler) -> CuteLayout:
    """C++ ``raked_product``: the block interleaved over the tiler, tiler modes fastest."""
    return _rank_sensitive(block, tiler, raked=True)


def compact_order(shape: IntTuple, order) -> IntTuple:
    """C++ ``compact_order(shape, order)`` for a flat order: mode ``i`` starts at the product of
    the sizes of the modes with a smaller order value (ties do not count), column-major inside."""
    if not is_tuple(shape):
        return compact_left(shape)[0]
    if not is_tuple(order) or len(order) != len(shape):
        raise LayoutError(f"the order {fmt_tiler(order)} must have one entry per mode of {fmt(shape)}")
    out = []
    for s, o in zip(shape, order):
        if is_tuple(o):
            raise UnsupportedError("nested mode orders are not supported")
        start = 1
        for s2, o2 in zip(shape, order):
            if o2 < o:
                start *= product(s2)
        out.append(compact_left(s, start)[0])
    return tuple(out)


@_composed
def tile_to_shape(block: CuteLayout, trg_shape: IntTuple, order="left") -> CuteLayout:
    """C++ ``tile_to_shape(block, trg_shape[, order])``: the block repeated over ``trg_shape``;
    ``order`` is ``"left"`` (GenColMajor, the default: first mode first), ``"right"``
    (GenRowMajor) or a ``Step`` tuple such as ``(2,1)`` (CUTLASS's ``Step<_2,_1>``)."""
    r = len(trg_shape) if is_tuple(trg_shape) else 1
    if block.rank() > r:
        raise LayoutError(f"tile_to_shape: rank of {block} exceeds the rank of the target shape {fmt(trg_shape)}")
    padded = append_rank(block, r)
    block_shape = wrap(product_each(padded.shape))
    target = wrap(product_each(trg_shape))
    if is_static(target):                  # C++ checks the division only for a static target shape
        if not is_static(block_shape):     # ... with CUTE_STATIC_ASSERT_V, which needs a static block shape
            raise LayoutError(f"tile_to_shape: a static target shape {fmt(target)} needs a static block shape "
                              f"(CuTe C++ static_asserts that {fmt(block_shape)} divides it)")
        for t, b in zip(target, block_shape):
            if t % b:
                raise LayoutError(f"tile_to_shape: block shape {fmt(block_shape)} does not divide the target "
                                  f"shape {fmt(target)}")
    prod_shape = tuple(_ceil_div_int(t, b) for t, b in zip(target, block_shape))   # C++ ceil_div, typed
    if not is_tuple(trg_shape):
        prod_shape = prod_shape[0]
    if order == "left":
        stride = compact_left(prod_shape)[0]
    elif order == "right":
        stride = compact_right(prod_shape)[0]
    else:
        stride = compact_order(prod_shape, order)
    return blocked_product(padded, CuteLayout(prod_shape, stride))


# ---------------------------------------------------------------------------------------------
# upcast / downcast (recasting between element widths)
# ---------------------------------------------------------------------------------------------
def _upcast(shape: IntTuple, stride: IntTuple, n: int):
    if is_tuple(shape):
        parts = [_upcast(s, d, n) for s, d in zip(shape, stride)]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
    if stride == 0 and is_static(stride):          # static-0 stride: unchanged
        return shape, stride
    if not is_static(stride):                      # dynamic stride: C++ assumes it divisible, safe_div
        return shape, Dyn(int(stride) // n) if int(stride) >= 0 else Dyn(-(-int(stride) // n))
    if stride % n != 0 and n % stride != 0:
        raise LayoutError(f"upcast<{n}>: stride {stride} and {n} do not divide each other")
    a = abs(int(stride))                           # static stride: signum(d) * ceil_div(|d|, N)
    return _ceil_div_int(shape, -(-n // a)), (1 if stride > 0 else -1) * (-(-a // n))


def upcast(layout, n: int):
    """C++ ``upcast<N>``: view ``N`` consecutive elements as one (stride-1 modes shrink)."""
    if isinstance(layout, ComposedLayout):
        if layout.smem_bits is not None:
            return ComposedLayout(layout.outer, 0, upcast(layout.inner, n), layout.smem_bits * n)
        outer = layout.outer.upcast(n) if isinstance(layout.outer, Swizzle) else upcast(layout.outer, n)
        return ComposedLayout(outer, layout.offset // n, upcast(layout.inner, n))
    s, d = _upcast(layout.shape, layout.stride, n)
    return CuteLayout(s, d)


def _downcast(shape, stride, n):
    if is_tuple(shape):
        parts = [_downcast(s, d, n) for s, d in zip(shape, stride)]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
    if stride in (1, -1) and is_static(stride):    # C++ is_constant<1> or <-1>: the size grows
        return mul(shape, n), stride
    return shape, mul(stride, n)


def downcast(layout, n: int):
    """C++ ``downcast<N>``: view one element as ``N`` (stride-1 modes grow)."""
    if isinstance(layout, ComposedLayout):
        if layout.smem_bits is not None:
            if layout.smem_bits % n:
                raise LayoutError(f"downcast<{n}> of a {layout.smem_bits}-bit smem layout")
            return ComposedLayout(layout.outer, 0, downcast(layout.inner, n), layout.smem_bits // n)
        outer = layout.outer.downcast(n) if isinstance(layout.outer, Swizzle) else downcast(layout.outer, n)
        return ComposedLayout(outer, layout.offset * n, downcast(layout.inner, n))
    if not any(d == 1 and is_static(d) for d in leaves(layout.stride)):   # C++ has_int1: a static _1
        raise LayoutError(f"downcast<{n}> of {layout}: it needs a static stride-1 mode (_1)")
    s, d = _downcast(layout.shape, layout.stride, n)
    return CuteLayout(s, d)
