"""The installed CuTe's own answer: the text evaluated with **pycute** (the Python CuTe in the
``nvidia-cutlass`` wheel), then put in canonical form exactly like ours.

pycute covers plain layouts, swizzled layouts and the core algebra (``composition``,
``coalesce``, ``filter``, ``complement``, ``right_inverse``, ``left_inverse``, ``logical_``/
``zipped_``/``tiled_divide``, ``logical_``/``zipped_``/``tiled_product``, ``make_layout``); it has no
MMA/copy atoms, GMMA atoms, ``flat_*``, ``blocked_``/``raked_product`` or ``tile_to_shape``, which
raise :class:`UnsupportedError`. pycute differs from CuTe C++ (which our adapter follows) on some
inputs; ``tests/test_cute_pycute.py`` lists them. A pycute failure becomes :class:`NativeError`.
"""
from __future__ import annotations

from layoutverify.core.errors import LayoutError, NativeError, UnsupportedError

from .layout import CuteLayout
from .parser import Chain, LayoutLit, Name, Num, Smem, Tup, Under, parse_text
from .swizzle import ComposedLayout, Swizzle

_OPS = {"composition", "coalesce", "filter", "complement", "right_inverse", "left_inverse", "logical_divide",
        "zipped_divide", "tiled_divide", "logical_product", "zipped_product", "tiled_product", "make_layout"}


def _pycute():
    try:
        import pycute
    except ImportError:
        raise UnsupportedError("--native for CuTe needs pycute (pip install nvidia-cutlass)") from None
    return pycute


def _eval(node, pc):
    if isinstance(node, Num):
        return node.value
    if isinstance(node, Under):
        return None
    if isinstance(node, Tup):
        return tuple(_eval(x, pc) for x in node.items)
    if isinstance(node, LayoutLit):
        return pc.Layout(_eval(node.shape, pc), _eval(node.stride, pc))
    if isinstance(node, Chain):
        parts = [_eval(p, pc) for p in node.parts]
        if len(parts) == 2:
            parts = [parts[0], 0, parts[1]]
        if isinstance(node.parts[1], Smem):
            raise UnsupportedError("pycute does not model smem_ptr swizzle flags")
        outer, off, inner = parts
        if isinstance(inner, tuple):
            inner = pc.Layout(inner)
        return pc.ComposedLayout(outer, off, inner)
    if isinstance(node, Name):
        short = node.name.split("::")[-1]
        if node.args is None:
            if short in ("Sw", "Swizzle") and len(node.targs) == 3:
                return pc.Swizzle(*(t.value for t in node.targs))
            if short == "Step":
                return tuple(t.value for t in node.targs)
            raise UnsupportedError(f"pycute has no {node.name} (atoms, GMMA layouts and names are C++-only)")
        if short not in _OPS:
            raise UnsupportedError(f"pycute has no {short}")
        args = [_eval(a, pc) for a in node.args]
        if short == "make_layout":
            if all(isinstance(a, pc.Layout) for a in args):
                return pc.make_layout(*args)
            return pc.Layout(*args)
        fn = getattr(pc, short)
        if args and isinstance(args[0], tuple):
            args[0] = pc.Layout(args[0])
        return fn(*args)
    raise UnsupportedError("expression not supported by pycute")


def _to_ours(v, pc):
    if isinstance(v, pc.ComposedLayout):
        outer = v.layoutB
        if isinstance(outer, pc.Swizzle):
            outer = Swizzle(outer.bits, outer.base, outer.shift)
        else:
            outer = _to_ours(outer, pc)
        return ComposedLayout(outer, int(v.offset), _to_ours(v.layoutA, pc))
    if isinstance(v, pc.Layout):
        return CuteLayout(v.shape, v.stride)
    if isinstance(v, (int, tuple)):
        return CuteLayout(v)
    raise UnsupportedError(f"pycute returned {v!r}, not a layout")


def native_value(text: str):
    """pycute's value for ``text``, as our :class:`CuteLayout` / :class:`ComposedLayout`."""
    pc = _pycute()
    node = parse_text(text)
    try:
        v = _eval(node, pc)
    except LayoutError:
        raise
    except Exception as e:  # pycute asserts (AssertionError) or fails (TypeError) on inputs it rejects
        raise NativeError(f"pycute rejected {text.strip()!r}: {type(e).__name__} {e}".rstrip()) from None
    return _to_ours(v, pc)
