"""Exception types of layoutverify.

Every error a user can provoke with bad input is a :class:`LayoutError`; the CLI prints it as one
line and exits with status 2. Anything else escaping is a bug in layoutverify.
"""
from __future__ import annotations


class LayoutError(ValueError):
    """Base class: a layout, a layout text or a query that layoutverify cannot accept."""


class ParseError(LayoutError):
    """A layout text that does not parse.

    ``token`` is the offending token as written, ``column`` its 1-based column in ``text``.
    """

    def __init__(self, message: str, text: str = "", column: int | None = None, token: str | None = None):
        self.text = text
        self.column = column
        self.token = token
        where = ""
        if token is not None and column is not None:
            where = f" at column {column} (token {token!r})"
        elif column is not None:
            where = f" at column {column}"
        super().__init__(f"{message}{where}")


class UnsupportedError(LayoutError):
    """Well-formed input that names something layoutverify does not model (yet)."""


class NotInvertibleError(LayoutError):
    """A layout asked to be inverted that is not a bijection on its domain."""


class SizeLimitError(LayoutError):
    """A layout whose domain is too large to evaluate or prove about."""


class NativeError(LayoutError):
    """The installed framework (run as an oracle) rejected the input or crashed."""
