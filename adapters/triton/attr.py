"""The parsed form of a TTGIR layout attribute, shared by the Triton adapter's modules.

The parser (``layoutverify.adapters.triton.parser``) turns ``#ttg.blocked<{sizePerThread = [1, 4], ...}>``
into ``Attr(kind="blocked", params={"sizePerThread": [1, 4], ...})``. Values are ints, bools,
strings, (nested) lists of those, or nested :class:`Attr` (``parent = #ttg.nvidia_mma<...>``).
Encoding modules register a converter per kind with :func:`encoding`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from layoutverify.core.errors import LayoutError


@dataclass(frozen=True)
class Attr:
    """A parsed Triton layout attribute: its kind (``blocked``, ``nvidia_mma``, ...), parameters, and
    where it was written (column, text)."""
    kind: str                       # "blocked", "nvidia_mma", "dot_op", "slice", "amd_mfma", ...
    params: dict[str, Any] = field(default_factory=dict)
    column: int | None = None       # 1-based column of the attribute in the source text
    text: str = ""                  # the source text of this attribute

    def get(self, key: str, default=None):
        """Parameter ``key``, or ``default``."""
        return self.params.get(key, default)

    def require(self, key: str):
        """Parameter ``key``; a :class:`LayoutError` naming it when the attribute lacks it."""
        if key not in self.params:
            raise LayoutError(f"#{self.kind} needs a {key!r} parameter")
        return self.params[key]


#: kind -> converter(attr, shape, **options) -> verifier.Layout
ENCODINGS: dict[str, Callable] = {}

#: parent kind -> converter(dot_op attr, parent attr, shape, **options) -> verifier.Layout
DOT_OPERAND_PARENTS: dict[str, Callable] = {}


def encoding(*kinds: str):
    """Decorator: register a converter for one or more attribute kinds."""
    def deco(fn):
        for k in kinds:
            ENCODINGS[k] = fn
        return fn
    return deco


def dot_operand_parent(*kinds: str):
    """Decorator: register the dot_op converter for a parent kind."""
    def deco(fn):
        for k in kinds:
            DOT_OPERAND_PARENTS[k] = fn
        return fn
    return deco


def ignored_params(attr: Attr, known) -> list[str]:
    """Parameters of ``attr`` outside ``known``: Triton's parsers of some encodings
    (``amd_mfma``, ``amd_wmma``, ``linear``) skip keys they do not know instead of failing."""
    if attr.kind == "dot_op":
        return []
    return [f"{k!r} of #ttg.{attr.kind}" for k in attr.params if k not in known]


def ignored_note(ignored) -> str:
    """A note for a layout's name naming the parameters Triton ignored (``""`` for none)."""
    if not ignored:
        return ""
    return f" (Triton ignores unknown parameter{'s' if len(ignored) > 1 else ''} {', '.join(ignored)})"
