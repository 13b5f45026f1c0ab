"""Triton adapter: TTGIR layout text -> canonical :class:`~verifier.layout.Layout`.

``parse(text, shape=None, **options)`` accepts what Triton prints (see :mod:`.parser`): an
encoding attribute with a ``shape``, a whole ``tensor<64x64xf16, #ttg....>`` /
``!ttg.memdesc<...>`` type (shape from the type), alias definitions followed by a use, and the
older ``#triton_gpu.`` spellings. The result has Triton's hardware dims (``register, lane, warp,
block`` for distributed layouts; ``offset, block`` for shared ones) and logical dims ``dim0..``,
with exactly the bases of Triton's own ``toLinearLayout``.

Converters are registered per attribute kind in :data:`.attr.ENCODINGS` by :mod:`.linear`
(linear, blocked, slice, dot_op), :mod:`.nvidia` (nvidia_mma and its operands) and, when present,
``.amd`` and ``.shared``. ``native(text, shape=None, **options)`` asks the installed Triton (in a
subprocess) for its answer: see :mod:`.native`.

Options: ``warp_size`` (checked against the lanes the text implies); converters also receive
``element_type`` (``"f16"``, ...) when the text is a whole type.
"""
from __future__ import annotations

import importlib

from verifier.errors import LayoutError, UnsupportedError
from verifier.layout import Layout

from . import linear as _linear  # noqa: F401  (registers linear, blocked, slice, dot_op)
from . import native as _native_module  # before `def native` below, which must win the name
from . import nvidia as _nvidia  # noqa: F401  (registers nvidia_mma and its dot operands)
from .attr import DOT_OPERAND_PARENTS, ENCODINGS, Attr
from .parser import SHARED_KINDS, Parsed, describe, parse_text

#: optional modules written beside this core; each registers its kinds on import
OPTIONAL_MODULES = ("amd", "shared")

for _name in OPTIONAL_MODULES:
    try:
        importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as _e:  # absent in this build: their kinds stay unknown
        if _e.name != f"{__name__}.{_name}":
            raise

__all__ = ["parse", "native", "native_many", "convert", "parse_text", "Attr", "Parsed", "ENCODINGS",
           "DOT_OPERAND_PARENTS", "SHARED_KINDS"]


def resolve_shape(parsed: Parsed, shape) -> tuple[int, ...] | None:
    """The tensor shape: the ``shape`` argument or the type's; they must agree when both are given."""
    if shape is not None:
        try:
            shape = tuple(int(s) for s in shape)
        except (TypeError, ValueError):
            raise LayoutError(f"shape must be a sequence of integers, got {shape!r}") from None
        if not shape or any(s < 1 for s in shape):
            raise LayoutError(f"shape {list(shape)} must be non-empty with positive sizes")
        if parsed.shape is not None and parsed.shape != shape:
            raise LayoutError(f"--shape {'x'.join(map(str, shape))} disagrees with the type's shape "
                              f"{'x'.join(map(str, parsed.shape))}")
        return shape
    return parsed.shape


def convert(attr: Attr, shape=None, **options) -> Layout:
    """The canonical layout of a parsed encoding attribute over a tensor of ``shape``."""
    fn = ENCODINGS.get(attr.kind)
    if fn is None:
        known = ", ".join(sorted(ENCODINGS))
        if attr.kind in ("shared_memory", "tensor_memory"):
            raise LayoutError(f"{describe(attr)} is a memory space, not a layout")
        raise UnsupportedError(f"unknown or unsupported Triton layout {describe(attr)} (supported: {known})")
    return fn(attr, shape, **options)


def parse(text: str, shape=None, **options) -> Layout:
    """Parse Triton layout text into the canonical form (see the module docstring)."""
    parsed = parse_text(text)
    if parsed.attr is None:
        raise LayoutError("the tensor type has no encoding attribute; write tensor<SHAPExTYPE, #ttg....>")
    shape = resolve_shape(parsed, shape)
    if parsed.element_type is not None:
        options.setdefault("element_type", parsed.element_type)
    layout = convert(parsed.attr, shape, **options)
    return layout


def native(text: str, shape=None, **options) -> Layout:
    """Triton's own layout for ``text`` (installed Triton, in a subprocess); see :mod:`.native`."""
    return _native_module.native(text, shape=shape, **options)


def native_many(cases, **kw):
    """Batch form of :func:`native`: a list of ``Layout`` or ``NativeError``; see :mod:`.native`."""
    return _native_module.native_many(cases, **kw)
