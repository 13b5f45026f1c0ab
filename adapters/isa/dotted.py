"""Tokenizer for dotted instruction names (``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32.A``,
``cdna3.v_mfma_f32_32x32x8_f16.A``), shared by the ISA adapters (PTX, AMD).

A name is a sequence of tokens separated by ``.``; each token keeps its 1-based column so that an
error names the offending token and where it is. Only letters, digits, ``_`` and ``::`` occur in
tokens; anything else is an error at that character.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Iterable

from layoutverify.core.errors import ParseError

MAX_NAME = 256
_TOKEN = re.compile(r"[A-Za-z0-9_:]+")


@dataclass(frozen=True)
class Token:
    """One dot-separated token of an instruction name, with its 1-based column."""
    text: str
    column: int          #: 1-based column in the original text

    @property
    def low(self) -> str:
        """The token in lower case (names compare case-insensitively)."""
        return self.text.lower()


def tokenize(text: str, what: str) -> list[Token]:
    """Split ``text`` at dots; leading/trailing white space is ignored."""
    if not isinstance(text, str):
        raise ParseError(f"a {what} name must be text, got {type(text).__name__}")
    if len(text) > MAX_NAME:
        raise ParseError(f"{what} name of {len(text)} characters is too long (limit {MAX_NAME})", text, MAX_NAME + 1)
    lead = len(text) - len(text.lstrip())
    body = text.strip()
    if not body:
        raise ParseError(f"empty {what} name", text, 1)
    tokens: list[Token] = []
    pos = 0
    while True:
        m = _TOKEN.match(body, pos)
        if not m:
            col = lead + pos + 1
            tok = body[pos] if pos < len(body) else "<end>"
            why = "empty token" if tok in (".", "<end>") else f"unexpected character {tok!r}"
            raise ParseError(f"bad {what} name: {why}", text, col, tok)
        tokens.append(Token(m.group(0), lead + m.start() + 1))
        pos = m.end()
        if pos == len(body):
            return tokens
        if body[pos] != ".":
            raise ParseError(f"bad {what} name: unexpected character {body[pos]!r}", text, lead + pos + 1, body[pos])
        pos += 1


def suggest(word: str, choices: Iterable[str], n: int = 4) -> str:
    """``"; did you mean 'm16n8k16'?"`` or ``"; expected one of ..."`` (for error messages)."""
    choices = sorted(set(choices))
    close = difflib.get_close_matches(word, choices, n=n, cutoff=0.5)
    if close:
        return "; did you mean " + " or ".join(repr(c) for c in close) + "?"
    if len(choices) <= 12:
        return "; expected one of " + ", ".join(choices)
    return "; expected one of " + ", ".join(choices[:12]) + ", ..."


def error(msg: str, text: str, tok: Token | None, choices: Iterable[str] | None = None) -> ParseError:
    """A :class:`ParseError` naming ``tok`` (or the end of the text when ``tok`` is None)."""
    if choices is not None:
        msg += suggest(tok.text if tok else "", choices)
    if tok is None:
        return ParseError(msg, text, len(text.rstrip()) + 1, "<end>")
    return ParseError(msg, text, tok.column, tok.text)
