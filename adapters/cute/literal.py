"""Literal CuTe layouts: the text of a layout value, without functions, atoms or names.

Accepted: ``shape:stride`` (``((4,8),2):((16,1),8)``), a bare shape (CuTe's compact column-major
layout), and composed layouts ``Sw<B,M,S> o OFFSET o L`` / ``Sw<B,M,S> o smem_ptr[Nb](unset) o L``
/ ``A o L``. This is what the atom catalogue (``atoms.toml``) is written in, so
:mod:`.atoms` reads it here, and the interpreter (:mod:`.interp`, which needs the atoms) is
only ever imported the other way round: ``interp -> tv -> atoms -> literal``.
"""
from __future__ import annotations

from layoutverify.core.errors import LayoutError

from .layout import CuteLayout, compact_layout, is_int
from .parser import Chain, LayoutLit, Name, Node, Num, Smem, Tup, parse_text
from .swizzle import ComposedLayout, Swizzle


def _inttuple(node: Node):
    if isinstance(node, Num):
        return node.value
    if isinstance(node, Tup):
        return tuple(_inttuple(x) for x in node.items)
    raise LayoutError(f"expected an integer or a tuple of integers at column {node.col}")


def _value(node: Node):
    if isinstance(node, LayoutLit):
        return CuteLayout(_inttuple(node.shape), _inttuple(node.stride))
    if isinstance(node, (Num, Tup)):
        return compact_layout(_inttuple(node))
    if isinstance(node, Name) and node.name.split("::")[-1] in ("Sw", "Swizzle") and node.args is None:
        if len(node.targs) != 3 or not all(isinstance(t, Num) for t in node.targs):
            raise LayoutError("a swizzle is Sw<B,M,S> with three integers")
        return Swizzle(*(t.value for t in node.targs))
    raise LayoutError(f"not a literal layout at column {node.col}")


def evaluate_literal(text: str) -> CuteLayout | ComposedLayout:
    """The layout written literally in ``text`` (see the module docstring)."""
    node = parse_text(text)
    if not isinstance(node, Chain):
        val = _value(node)
        if isinstance(val, Swizzle):
            raise LayoutError(f"{text!r}: a swizzle alone is not a layout")
        return val
    parts = node.parts
    if len(parts) not in (2, 3):
        raise LayoutError(f"{text!r}: a composed layout is 'A o B' or 'A o offset o B'")
    outer, inner = _value(parts[0]), _value(parts[-1])
    off, bits = 0, None
    if len(parts) == 3:
        mid = parts[1]
        if isinstance(mid, Smem):
            bits = mid.bits
        elif isinstance(mid, Num) and is_int(mid.value):
            off = mid.value
        else:
            raise LayoutError(f"{text!r}: the middle of 'A o offset o B' must be an integer offset")
    if isinstance(inner, Swizzle):
        raise LayoutError(f"{text!r}: the right part of a composed layout must be a layout")
    return ComposedLayout(outer, int(off), inner, bits)
