"""Hand-written tokenizer and recursive-descent parser for TTGIR layout text.

Accepted input (what Triton prints, so it can be pasted):

* an encoding attribute: ``#ttg.blocked<{sizePerThread = [1, 4], ...}>``, ``#ttg.slice<{dim = 1,
  parent = #ttg.nvidia_mma<...>}>``, ``#ttg.padded_shared<[32:+4] {order = [1, 0], shape = [64,
  64]}>``, ``#ttg.shared_linear<{offset = [...]}, alignment = 16>`` and the older
  ``#triton_gpu.*`` spellings (``#triton_gpu.mma`` is ``nvidia_mma``, ``#triton_gpu.mfma`` is
  ``amd_mfma``);
* a whole type: ``tensor<64x64xf16, #ttg.blocked<...>>`` or ``!ttg.memdesc<64x64xf16, #shared,
  #smem, mutable>`` (the shape and element type come from it);
* either of those preceded by alias definitions, as in a printed module:
  ``#blocked = #ttg.blocked<...>`` (one per line) then ``tensor<64x64xf16, #blocked>``. Alias
  definitions alone mean the last one. ``#loc = loc(...)`` definitions are skipped.

Parsed parameters keep Triton's spelling (``sizePerThread``, ``CGALayout``, ``kWidth``): ints,
bools (``true``/``false``), strings, nested lists, nested :class:`Attr` (``parent = ...``) and
nested dicts (``ctaLayout = {warp = [[0, 1]]}``). ``4 : i32`` is the int 4. A unit attribute
(a key without ``= value``) is ``True``. The interval list of ``padded_shared``
(``[32:+4, 64:+8]``) becomes ``params["intervals"] = [32, 64]`` and ``params["paddings"] = [4, 8]``.
Kinds drop the dialect prefix (``"blocked"``, ``"nvidia_mma"``); attributes of other dialects keep
it (``"ttng.tensor_memory_encoding"``).

Common texts (a ``#ttg.kind<{...}>`` attribute with integer, name, list and nested-attribute
values, optionally in ``tensor<...>`` after alias definitions) are read by :func:`fast_parse`, one
pass of anchored patterns without token objects; it declines anything else, and the tokenizer and
parser read those texts and report every error, so results and messages are theirs.

Errors are :class:`~layoutverify.core.errors.ParseError` naming the offending token and its 1-based
column. Nesting deeper than :data:`MAX_DEPTH` is an error (never a RecursionError), and so are
integers past :data:`MAX_INT` and tensors of more than :data:`MAX_ELEMENTS` elements.
"""
from __future__ import annotations

import difflib

import json
import re
from itertools import chain
from dataclasses import dataclass, field
from typing import Any

from layoutverify.core.errors import LayoutError, ParseError

from .attr import Attr

#: deepest nesting of ``<``, ``{``, ``[``, ``(`` accepted
MAX_DEPTH = 64
#: largest integer accepted anywhere (Triton stores layout parameters as 32-bit ints)
MAX_INT = (1 << 31) - 1
#: largest tensor (number of elements) a ``tensor<...>`` type may describe
MAX_ELEMENTS = 1 << 32
#: longest text accepted
MAX_TEXT = 1 << 20

#: dialect prefixes of TritonGPU attributes, new and old
TTG_DIALECTS = ("ttg", "triton_gpu")
#: dialects whose attributes may also be written generically, ``#ttg<blocked<{...}>>``
GENERIC_DIALECTS = frozenset(TTG_DIALECTS) | {"ttng", "triton_nvidia_gpu"}
#: old attribute names -> current ones
KIND_RENAMES = {"mma": "nvidia_mma", "mfma": "amd_mfma", "wmma": "amd_wmma"}
#: encodings of memory (shared) layouts: they are used in ``!ttg.memdesc`` types
SHARED_KINDS = frozenset({"shared", "swizzled_shared", "nvmma_shared", "padded_shared", "shared_linear",
                          "amd_rotating_shared", "partitioned_shared"})

_PUNCT = set("<>{}[]()=,:+?*")
_IDENT_START = re.compile(r"[A-Za-z_]")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")
_SUFFIX_ID = re.compile(r"[A-Za-z0-9_$.]*")
_INT = re.compile(r"0x[0-9A-Fa-f]+|[0-9]+")
_WS = re.compile(r"(?:\s+|//[^\n]*)+")
_DIM = re.compile(r"([0-9]+)[ \t]*x[ \t]*")
_LAST_DIM = re.compile(r"([0-9]+)")
_DYNAMIC = re.compile(r"[?*]")
#: One match per well-formed token (the common case); anything it does not match, or matches
#: in a form the checks below refuse, goes through the character-by-character scanner, which
#: produces the same tokens and the precise errors.
_FAST = re.compile(r"(?:\s++|//[^\n]*+)*+(?:(?P<hash>[#!][A-Za-z_][A-Za-z0-9_$.]*)"
                   r"|(?P<int>-?(?>0x[0-9A-Fa-f]+|[0-9]+))(?=x|[^A-Za-z0-9_$.]|$)"
                   r"|(?P<ident>[A-Za-z_][A-Za-z0-9_$.]*)|(?P<punct>[<>{}\[\](),=:+?*]))")
#: MLIR builtin element types a Triton tensor holds (``!``-dialect types such as ``!tt.ptr<f16>`` apart)
_ELEMENT_TYPE = re.compile(r"(?:i|si|ui)(?:[1-9][0-9]{0,3})|f16|f32|f64|bf16|tf32|index|"
                           r"f[468]E[0-9]M[0-9](?:FNUZ|FN|FNU|B11FNUZ)?")


@dataclass(slots=True)
class Token:
    """A token of TTGIR text: kind, value (an int for ``int``), start and end offsets, and the text as
    written."""
    kind: str       # "hash", "bang", "ident", "int", "string", "punct", "eof"
    value: Any      # text for most kinds, int for "int"
    start: int      # offset in the text
    end: int
    text: str       # as written

    def shown(self) -> str:
        """The token as an error message names it (``end of text`` at the end)."""
        return "end of text" if self.kind == "eof" else self.text


@dataclass
class Parsed:
    """The result of :func:`parse_text`."""
    attr: Attr | None                    # the encoding (None for a type without one)
    shape: tuple[int, ...] | None = None  # from a tensor / memdesc type
    element_type: str | None = None      # e.g. "f16", "!tt.ptr<f16>"
    container: str | None = None         # "tensor", "memdesc" or None for a bare attribute
    memory_space: Attr | None = None     # memdesc's second attribute (#ttg.shared_memory)
    alloc_shape: tuple[int, ...] | None = None
    aliases: dict[str, Attr] = field(default_factory=dict)
    prelude: str = ""                    # the alias definitions, as written
    main: str = ""                       # the final attribute or type, as written


class _Lexer:
    """On-demand tokenizer; ``peek(k)`` looks ahead without consuming."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.buf: list[Token] = []

    def _scan(self) -> Token:
        m = _FAST.match(self.text, self.pos)
        if m is not None:
            kind = m.lastgroup
            p, end = m.start(kind), m.end()
            word = m.group(kind)
            if kind == "hash":
                self.pos = end
                return Token("hash" if word[0] == "#" else "bang", word, p, end, word)
            if kind == "punct" or kind == "ident":
                self.pos = end
                return Token(kind, word, p, end, word)
            digits = word.lstrip("-")
            if len(digits) <= 30:
                v = int(digits, 16) if digits.startswith("0x") else int(digits)
                self.pos = end
                return Token("int", -v if word[0] == "-" else v, p, end, word)
        return self._scan_slow()

    def _scan_slow(self) -> Token:
        t = self.text
        m = _WS.match(t, self.pos)
        if m:
            self.pos = m.end()
        p = self.pos
        if p >= len(t):
            return Token("eof", None, p, p, "")
        c = t[p]
        if c in "#!":
            m = _IDENT.match(t, p + 1)
            if not m:
                # '#123' style numeric aliases are not MLIR; show the next char
                raise ParseError(f"expected a name after {c!r}", self.text, self.col(p), t[p:p + 2])
            self.pos = m.end()
            return Token("hash" if c == "#" else "bang", t[p:self.pos], p, self.pos, t[p:self.pos])
        if c == '"':
            q = p + 1
            out = []
            while q < len(t) and t[q] != '"':
                if t[q] == "\\" and q + 1 < len(t):
                    out.append(t[q + 1])
                    q += 2
                    continue
                if t[q] == "\n":
                    break
                out.append(t[q])
                q += 1
            if q >= len(t) or t[q] != '"':
                raise ParseError("unterminated string", self.text, self.col(p), t[p:p + 12])
            self.pos = q + 1
            return Token("string", "".join(out), p, self.pos, t[p:self.pos])
        if c == "-" or "0" <= c <= "9":
            q = p + 1 if c == "-" else p
            m = _INT.match(t, q)
            if not m:
                raise ParseError("unexpected character", self.text, self.col(p), c)
            end = m.end()
            tail = _SUFFIX_ID.match(t, end)
            if tail and tail.end() > end and t[end] != "x":
                raise ParseError("malformed number", self.text, self.col(p), t[p:tail.end()])
            digits = m.group(0)
            if len(digits) > 30:
                raise ParseError(f"integer too large (limit {MAX_INT})", self.text, self.col(p), t[p:end][:40])
            v = int(digits, 16) if digits.startswith("0x") else int(digits)
            if c == "-":
                v = -v
            self.pos = end
            return Token("int", v, p, end, t[p:end])
        if _IDENT_START.match(c):
            m = _IDENT.match(t, p)
            self.pos = m.end()
            return Token("ident", m.group(0), p, self.pos, m.group(0))
        if c in _PUNCT:
            self.pos = p + 1
            return Token("punct", c, p, p + 1, c)
        raise ParseError("unexpected character", self.text, self.col(p), c)

    def col(self, offset: int) -> int:
        """The 1-based column of ``offset`` (within its line)."""
        return offset - (self.text.rfind("\n", 0, offset) + 1) + 1

    def peek(self, k: int = 0) -> Token:
        while len(self.buf) <= k:
            self.buf.append(self._scan())
        return self.buf[k]

    def next(self) -> Token:
        tok = self.peek()
        self.buf.pop(0)
        return tok

    def rewind_to_peek(self) -> None:
        """Drop look-ahead so that raw scanning restarts at the next token."""
        if self.buf:
            self.pos = self.buf[0].start
            self.buf.clear()


class _Parser:
    def __init__(self, text: str):
        if not isinstance(text, str):
            raise LayoutError(f"layout text must be a string, got {type(text).__name__}")
        if len(text) > MAX_TEXT:
            raise LayoutError(f"layout text of {len(text)} characters is too long (limit {MAX_TEXT})")
        self.text = text
        self.lex = _Lexer(text)
        self.aliases: dict[str, Attr] = {}

    # -- helpers ------------------------------------------------------------------------------
    def error(self, message: str, tok: Token | None = None) -> ParseError:
        tok = tok or self.lex.peek()
        col = self.lex.col(tok.start)
        line = self.text.count("\n", 0, tok.start) + 1
        if "\n" in self.text.strip():
            message = f"{message} (line {line})"
        return ParseError(message, self.text, col, tok.shown())

    def expect(self, punct: str, what: str = "") -> Token:
        tok = self.lex.peek()
        if tok.kind != "punct" or tok.value != punct:
            raise self.error(f"expected {punct!r}{' ' + what if what else ''}", tok)
        return self.lex.next()

    def at(self, punct: str, k: int = 0) -> bool:
        tok = self.lex.peek(k)
        return tok.kind == "punct" and tok.value == punct

    def deeper(self, depth: int, tok: Token) -> int:
        if depth + 1 > MAX_DEPTH:
            raise self.error(f"nesting deeper than {MAX_DEPTH} levels", tok)
        return depth + 1

    def check_int(self, tok: Token) -> int:
        if abs(tok.value) > MAX_INT:
            raise self.error(f"integer {tok.text[:24]} is too large (limit {MAX_INT})", tok)
        return tok.value

    # -- top level ----------------------------------------------------------------------------
    def parse(self) -> Parsed:
        prelude_end = 0
        last_alias = None
        while self.lex.peek().kind == "hash" and self.at("=", 1):
            name_tok = self.lex.next()
            self.lex.next()  # '='
            value = self.alias_value(name_tok)
            name = name_tok.value[1:]
            if value is not None:
                if name in self.aliases:
                    raise self.error(f"alias #{name} is defined twice", name_tok)
                self.aliases[name] = value
                last_alias = value
            prelude_end = self.lex.peek().start
        tok = self.lex.peek()
        if tok.kind == "eof":
            if last_alias is None:
                raise self.error("empty layout text: expected an attribute like #ttg.blocked<...> "
                                 "or a type like tensor<64x64xf16, #ttg.blocked<...>>", tok)
            return Parsed(attr=last_alias, aliases=dict(self.aliases), prelude=self.text[:prelude_end].strip(),
                          main=last_alias.text)
        start = tok.start
        if tok.kind == "ident" and tok.value == "tensor":
            out = self.tensor_type(0)
        elif tok.kind == "bang" and tok.value.split(".", 1)[-1] == "memdesc" and \
                tok.value.split(".", 1)[0] in ("!ttg", "!triton_gpu", "!tt"):
            out = self.memdesc_type(0)
        elif tok.kind == "hash":
            out = Parsed(attr=self.attribute(0))
        else:
            raise self.error("expected an attribute like #ttg.blocked<...> or a type like "
                             "tensor<64x64xf16, #ttg.blocked<...>>", tok)
        end_tok = self.lex.peek()
        if end_tok.kind != "eof":
            raise self.error("unexpected text after the layout", end_tok)
        out.aliases = dict(self.aliases)
        out.prelude = self.text[:prelude_end].strip() if prelude_end else ""
        out.main = self.text[start:end_tok.start].strip()
        return out

    def alias_value(self, name_tok: Token):
        tok = self.lex.peek()
        if tok.kind == "hash":
            return self.attribute(0)
        if tok.kind == "ident" and tok.value == "loc" and self.at("(", 1):
            self.lex.next()
            self.skip_balanced(0)
            return None
        raise self.error(f"alias {name_tok.text} must be defined as an attribute (#dialect.name<...>)", tok)

    def skip_balanced(self, depth: int) -> None:
        """Skip a bracketed group starting at the next token (any of ( [ { <)."""
        pairs = {"(": ")", "[": "]", "{": "}", "<": ">"}
        open_tok = self.lex.next()
        stack = [pairs[open_tok.value]]
        depth = self.deeper(depth, open_tok)
        while stack:
            tok = self.lex.next()
            if tok.kind == "eof":
                raise self.error(f"unbalanced {open_tok.value!r}: missing {stack[-1]!r}", tok)
            if tok.kind == "punct" and tok.value in pairs:
                if len(stack) + depth > MAX_DEPTH:
                    raise self.error(f"nesting deeper than {MAX_DEPTH} levels", tok)
                stack.append(pairs[tok.value])
            elif tok.kind == "punct" and tok.value in ")]}>":
                if tok.value != stack[-1]:
                    raise self.error(f"expected {stack[-1]!r}", tok)
                stack.pop()

    # -- types --------------------------------------------------------------------------------
    def dims(self) -> tuple[tuple[int, ...], int]:
        """``64x64x`` (the part of a shaped type before its element type)."""
        self.lex.rewind_to_peek()
        t = self.text
        m = _WS.match(t, self.lex.pos)
        p = m.end() if m else self.lex.pos
        out = []
        while True:
            m = _DIM.match(t, p)
            if not m:
                break
            if m.group(1) and len(m.group(1)) > 30:
                raise ParseError("dimension too large", t, self.lex.col(p), m.group(1)[:40])
            v = int(m.group(1))
            if v < 1:
                raise ParseError("tensor dimensions must be positive", t, self.lex.col(p), m.group(1))
            if v > MAX_INT:
                raise ParseError(f"tensor dimension {v} is too large (limit {MAX_INT})", t, self.lex.col(p),
                                 m.group(1))
            out.append(v)
            p = m.end()
        if _DYNAMIC.match(t, p):
            raise ParseError("dynamic tensor dimensions are not supported", t, self.lex.col(p), t[p])
        self.lex.pos = p
        total = 1
        for i, v in enumerate(out):
            total *= v
            if total > MAX_ELEMENTS:   # stop here: the product of many dims is too long to print
                what = f"{total}" if i == len(out) - 1 else f"more than {total}"
                raise ParseError(f"tensor of {what} elements is too large (limit 2^32)", t, self.lex.col(p),
                                 "x".join(map(str, out[:8])) + ("x..." if len(out) > 8 else ""))
        return tuple(out), p

    def element_type(self, depth: int) -> str:
        tok = self.lex.peek()
        if tok.kind == "ident":
            if not _ELEMENT_TYPE.fullmatch(tok.value):
                raise self.error("unknown element type (expected f16, bf16, f32, f64, tf32, i1..i64, "
                                 "f8E4M3FN, f8E5M2, ... or !tt.ptr<...>)", tok)
            self.lex.next()
            return tok.value
        if tok.kind == "bang":
            self.lex.next()
            if self.at("<"):
                start = self.lex.peek().start
                self.skip_balanced(depth)
                return tok.value + self.text[start:self.lex.peek().start].strip()
            return tok.value
        raise self.error("expected an element type (f16, f32, i8, !tt.ptr<f16>, ...)", tok)

    def tensor_type(self, depth: int) -> Parsed:
        self.lex.next()  # 'tensor'
        lt = self.expect("<", "after 'tensor'")
        depth = self.deeper(depth, lt)
        shape, _ = self.dims()
        if not shape:
            raise self.error("a tensor type needs a shape, as in tensor<64x64xf16, #ttg.blocked<...>>")
        elem = self.element_type(depth)
        attr = None
        if self.at(","):
            self.lex.next()
            tok = self.lex.peek()
            if tok.kind != "hash":
                raise self.error("expected the tensor's encoding attribute (#ttg....)", tok)
            attr = self.attribute(depth)
        self.expect(">", "closing the tensor type")
        return Parsed(attr=attr, shape=shape, element_type=elem, container="tensor")

    def memdesc_type(self, depth: int) -> Parsed:
        self.lex.next()
        lt = self.expect("<", "after memdesc")
        depth = self.deeper(depth, lt)
        shape, _ = self.dims()
        if not shape:
            raise self.error("a memdesc type needs a shape, as in !ttg.memdesc<64x64xf16, #shared, #smem>")
        elem = self.element_type(depth)
        attrs, alloc = [], None
        while self.at(","):
            self.lex.next()
            tok = self.lex.peek()
            if tok.kind == "hash":
                attrs.append(self.attribute(depth))
            elif tok.kind == "ident" and tok.value == "mutable":
                self.lex.next()
            elif tok.kind == "int":
                alloc, p = self.dims()
                # the alloc shape is written 2x64x64: the last number has no trailing 'x'
                m = _LAST_DIM.match(self.text, p)
                if not m:
                    raise self.error("expected an allocation shape")
                alloc = alloc + (int(m.group(1)),)
                self.lex.pos = m.end()
            else:
                raise self.error("expected an encoding, memory space, 'mutable' or allocation shape", tok)
        self.expect(">", "closing the memdesc type")
        if not attrs:
            raise self.error("a memdesc type needs an encoding attribute")
        return Parsed(attr=attrs[0], shape=shape, element_type=elem, container="memdesc",
                      memory_space=attrs[1] if len(attrs) > 1 else None, alloc_shape=alloc)

    # -- attributes ---------------------------------------------------------------------------
    def attribute(self, depth: int) -> Attr:
        tok = self.lex.next()
        if tok.kind != "hash":
            raise self.error("expected an attribute (#ttg....)", tok)
        name = tok.value[1:]
        col = self.lex.col(tok.start)
        if "." not in name and name not in self.aliases and name in GENERIC_DIALECTS and self.at("<") \
                and self.lex.peek(1).kind == "ident":
            return self.generic_attribute(tok, name, col, depth)
        if "." not in name:
            if name not in self.aliases:
                raise self.error(f"unknown alias #{name}" + (f" (defined: {', '.join('#' + a for a in self.aliases)})"
                                                             if self.aliases else
                                                             "; define it first (#name = #ttg.blocked<...>) "
                                                             "or write the attribute in full"), tok)
            return self.aliases[name]
        dialect, kind = name.split(".", 1)
        if not dialect or not kind or kind.endswith("."):
            raise self.error("expected an attribute name like #ttg.blocked", tok)
        if dialect in TTG_DIALECTS:
            kind = KIND_RENAMES.get(kind, kind)
        else:
            kind = name
        params: dict[str, Any] = {}
        if self.at("<"):
            params = self.attr_body(depth)
        end = self.lex.peek().start if self.lex.buf else self.lex.pos
        text = self.text[tok.start:end].rstrip()
        return Attr(kind, params, col, text)

    def generic_attribute(self, tok: Token, dialect: str, col: int, depth: int) -> Attr:
        """MLIR's generic spelling of a dialect attribute, ``#ttg<linear<{...}>>`` (the same
        attribute as ``#ttg.linear<{...}>``; Triton's parser accepts both)."""
        lt = self.lex.next()
        depth = self.deeper(depth, lt)
        kind = self.lex.next().value
        kind = KIND_RENAMES.get(kind, kind) if dialect in TTG_DIALECTS else f"{dialect}.{kind}"
        params: dict[str, Any] = self.attr_body(depth) if self.at("<") else {}
        self.expect(">", f"closing #{dialect}<...>")
        end = self.lex.peek().start if self.lex.buf else self.lex.pos
        return Attr(kind, params, col, self.text[tok.start:end].rstrip())

    def attr_body(self, depth: int) -> dict:
        lt = self.lex.next()
        depth = self.deeper(depth, lt)
        params: dict[str, Any] = {}
        while True:
            tok = self.lex.peek()
            if tok.kind == "punct" and tok.value == ">":
                self.lex.next()
                return params
            if tok.kind == "punct" and tok.value == "{":
                for k, (v, ktok) in self.dictionary(depth).items():
                    self.put(params, k, v, ktok)
            elif tok.kind == "punct" and tok.value == "[":
                lst = self.list_value(depth)
                if lst and all(isinstance(x, tuple) for x in lst):
                    self.put(params, "intervals", [x[0] for x in lst], tok)
                    self.put(params, "paddings", [x[1] for x in lst], tok)
                else:
                    raise self.error("unexpected list in attribute body (only padded_shared's "
                                     "[interval:+padding, ...] list goes here)", tok)
            elif tok.kind in ("ident", "string"):
                key, v = self.entry(depth)
                self.put(params, key, v, tok)
            elif tok.kind == "eof":
                raise self.error("unbalanced '<': missing '>'", tok)
            else:
                raise self.error("expected '{', a parameter name or '>'", tok)
            if self.at(","):
                self.lex.next()

    def put(self, params: dict, key: str, value, tok: Token) -> None:
        if key in params:
            raise self.error(f"parameter {key!r} given twice", tok)
        params[key] = value

    def entry(self, depth: int):
        ktok = self.lex.next()
        key = ktok.value
        if self.at("="):
            self.lex.next()
            return key, self.value(depth)
        return key, True  # unit attribute

    def dictionary(self, depth: int) -> dict:
        lb = self.lex.next()
        depth = self.deeper(depth, lb)
        out: dict[str, tuple] = {}
        if self.at("}"):
            self.lex.next()
            return out
        while True:
            tok = self.lex.peek()
            if tok.kind not in ("ident", "string"):
                if tok.kind == "eof":
                    raise self.error("unbalanced '{': missing '}'", tok)
                raise self.error("expected a parameter name", tok)
            key, v = self.entry(depth)
            if key in out:
                raise self.error(f"parameter {key!r} given twice", tok)
            out[key] = (v, tok)
            tok = self.lex.peek()
            if tok.kind == "punct" and tok.value == ",":
                self.lex.next()
                continue
            if tok.kind == "punct" and tok.value == "}":
                self.lex.next()
                return out
            if tok.kind == "eof":
                raise self.error("unbalanced '{': missing '}'", tok)
            raise self.error("expected ',' or '}'", tok)

    def list_value(self, depth: int) -> list:
        lb = self.lex.next()
        depth = self.deeper(depth, lb)
        out = []
        if self.at("]"):
            self.lex.next()
            return out
        while True:
            tok = self.lex.peek()
            if tok.kind == "eof":
                raise self.error("unbalanced '[': missing ']'", tok)
            v = self.value(depth)
            if isinstance(v, int) and not isinstance(v, bool) and self.at(":") and self.at("+", 1):
                self.lex.next()
                self.lex.next()
                ptok = self.lex.next()
                if ptok.kind != "int":
                    raise self.error("expected the padding after ':+'", ptok)
                v = (v, self.check_int(ptok))
            out.append(v)
            tok = self.lex.peek()
            if tok.kind == "punct" and tok.value == ",":
                self.lex.next()
                continue
            if tok.kind == "punct" and tok.value == "]":
                self.lex.next()
                return out
            if tok.kind == "eof":
                raise self.error("unbalanced '[': missing ']'", tok)
            raise self.error("expected ',' or ']'", tok)

    def value(self, depth: int):
        tok = self.lex.peek()
        if tok.kind == "int":
            self.lex.next()
            v = self.check_int(tok)
            # typed integer: `4 : i32`
            if self.at(":") and self.lex.peek(1).kind == "ident":
                self.lex.next()
                self.lex.next()
            return v
        if tok.kind == "ident":
            self.lex.next()
            if tok.value == "true":
                return True
            if tok.value == "false":
                return False
            return tok.value
        if tok.kind == "string":
            self.lex.next()
            return tok.value
        if tok.kind == "hash":
            return self.attribute(depth)
        if tok.kind == "punct" and tok.value == "[":
            return self.list_value(depth)
        if tok.kind == "punct" and tok.value == "{":
            return {k: v for k, (v, _) in self.dictionary(depth).items()}
        if tok.kind == "eof":
            raise self.error("expected a value", tok)
        raise self.error("expected a value (integer, true/false, [list], {dict} or #attribute)", tok)


def parse_text(text: str) -> Parsed:
    """Parse TTGIR layout text (attribute, tensor/memdesc type, optional alias definitions).

    The common spellings go through :func:`fast_parse`; everything else, and every error, through
    the tokenizer and recursive-descent parser above (which names the bad token and its column)."""
    parsed = fast_parse(text)
    if parsed is not None:
        return parsed
    return _Parser(text).parse()


# ---------------------------------------------------------------------------------------------
# Fast path: one pass over the text with anchored patterns, no token objects
# ---------------------------------------------------------------------------------------------
#: ``#ttg.kind<{`` (or ``#triton_gpu.``): the head of an attribute with a dictionary body
_F_HEAD = re.compile(r"#(?:ttg|triton_gpu)\.([A-Za-z_][A-Za-z0-9_]*)\s*<\s*\{\s*")
#: ``#name =`` at the start of an alias definition, and ``#name`` where an alias is used
_F_ALIAS_DEF = re.compile(r"\s*#([A-Za-z_][A-Za-z0-9_]*)\s*=\s*")
_F_ALIAS_USE = re.compile(r"#([A-Za-z_][A-Za-z0-9_]*)(?![A-Za-z0-9_$.])")
_F_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_$.]*)\s*=\s*")
#: a list of integers or of lists of integers (two levels at most; JSON reads it)
_F_LIST = re.compile(r"\[(?:[-0-9\s,]++|\[[-0-9\s,]*+\])*+\]")
_F_INT = re.compile(r"-?[0-9]{1,9}")
_F_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")
#: after a value: ``,`` (another entry follows) or ``}`` then ``>`` (the attribute ends)
_F_NEXT = re.compile(r"\s*(?:(,)\s*|\}\s*>)")
_F_TENSOR = re.compile(r"(\s*)tensor\s*<\s*((?:[0-9]{1,9}[ \t]*x[ \t]*)+)([A-Za-z_][A-Za-z0-9_$.]*)\s*,\s*")
_F_TENSOR_END = re.compile(r"\s*>\s*")
_F_SPACE = re.compile(r"\s*")
#: integers of 10 or more digits may pass MAX_INT: the full parser checks those
_F_LONG_INT = re.compile(r"[0-9]{10}")
#: nesting of attributes the fast path follows (deeper ones go to the full parser)
_F_MAX_NESTING = 8


#: JSON's value scanner (C): reads the integer lists ``_F_LIST`` has delimited
_scan_json = json.decoder.JSONDecoder().scan_once


class _Fallback(Exception):
    """The fast path does not take this text; the full parser reads it (or names its error)."""


def fast_parse(text) -> Parsed | None:
    """The :class:`Parsed` of ``text`` when it is in the common form, else ``None``.

    Reads a ``#ttg.kind<{key = value, ...}>`` attribute (values: integers, ``true``/``false``,
    names, integer lists up to two levels deep, nested attributes), optionally inside
    ``tensor<SHAPExELEM, ...>`` and after ``#name = #ttg....`` alias definitions. Anything else
    (comments, typed integers, strings, unit keys, memdesc types, non-dictionary bodies, repeated
    keys, long integers, an error of any kind) answers ``None``: the full parser then reads the
    text, so results and error messages are those of the full parser. ``tests/test_triton_fast_parse.py``
    checks that both give equal results."""
    if type(text) is not str or len(text) > MAX_TEXT or _F_LONG_INT.search(text):
        return None
    try:
        return _FastParser(text).parse()
    except (_Fallback, ValueError, StopIteration):
        return None


class _FastParser:
    __slots__ = ("text", "aliases")

    def __init__(self, text: str):
        self.text = text
        self.aliases: dict[str, Attr] = {}

    def parse(self) -> Parsed:
        t = self.text
        pos = 0
        last = None
        prelude_end = 0
        while True:
            m = _F_ALIAS_DEF.match(t, pos)
            if m is None:
                break
            name = m.group(1)
            if name in self.aliases or name in GENERIC_DIALECTS:
                raise _Fallback
            attr, pos = self.attribute(m.end(), 0)
            self.aliases[name] = last = attr
            prelude_end = pos
        start = _F_SPACE.match(t, pos).end()
        if start == len(t):
            if last is None:
                raise _Fallback
            return Parsed(attr=last, aliases=dict(self.aliases), prelude=t[:prelude_end].strip(), main=last.text)
        m = _F_TENSOR.match(t, pos)
        if m is not None:
            dims = m.group(2).split("x")
            shape = tuple(int(d) for d in dims[:-1])
            elem = m.group(3)
            total = 1
            for v in shape:
                total *= v
            if 0 in shape or total > MAX_ELEMENTS or not _ELEMENT_TYPE.fullmatch(elem):
                raise _Fallback
            attr, pos = self.attribute(m.end(), 1)
            e = _F_TENSOR_END.match(t, pos)
            if e is None or e.end() != len(t):
                raise _Fallback
            out = Parsed(attr=attr, shape=shape, element_type=elem, container="tensor")
        else:
            attr, pos = self.attribute(start, 0)
            if _F_SPACE.match(t, pos).end() != len(t):
                raise _Fallback
            out = Parsed(attr=attr)
        out.aliases = dict(self.aliases)
        out.prelude = t[:prelude_end].strip() if prelude_end else ""
        out.main = t[start:].strip()
        return out

    def attribute(self, pos: int, nesting: int) -> tuple[Attr, int]:
        """The attribute (or alias use) at ``pos`` and the position after it."""
        t = self.text
        m = _F_HEAD.match(t, pos)
        if m is None:
            u = _F_ALIAS_USE.match(t, pos)
            if u is None or u.group(1) not in self.aliases:
                raise _Fallback
            return self.aliases[u.group(1)], u.end()
        if nesting > _F_MAX_NESTING:
            raise _Fallback
        kind = m.group(1)
        kind = KIND_RENAMES.get(kind, kind)
        params: dict[str, Any] = {}
        p = m.end()
        if t.startswith("}", p):
            e = _F_NEXT.match(t, p)
            if e is None or e.group(1):
                raise _Fallback
            p = e.end()
        else:
            while True:
                k = _F_KEY.match(t, p)
                if k is None:
                    raise _Fallback
                key = k.group(1)
                if key in params:
                    raise _Fallback
                p = k.end()
                c = t[p:p + 1]
                if c == "[":
                    v = _F_LIST.match(t, p)
                    if v is None:
                        raise _Fallback
                    params[key], end = _scan_json(t, p)
                    if end != v.end():
                        raise _Fallback
                    p = end
                elif c == "#":
                    params[key], p = self.attribute(p, nesting + 1)
                elif c == "-" or "0" <= c <= "9":
                    v = _F_INT.match(t, p)
                    if v is None:
                        raise _Fallback
                    params[key] = int(v.group())
                    p = v.end()
                else:
                    v = _F_WORD.match(t, p)
                    if v is None:
                        raise _Fallback
                    word = v.group()
                    params[key] = True if word == "true" else False if word == "false" else word
                    p = v.end()
                e = _F_NEXT.match(t, p)
                if e is None:
                    raise _Fallback
                p = e.end()
                if not e.group(1):
                    break
        return Attr(kind, params, pos - (t.rfind("\n", 0, pos) + 1) + 1, t[pos:p]), p


def parse_attr(text: str) -> Attr:
    """Parse text that must hold an encoding attribute (possibly inside a type)."""
    p = parse_text(text)
    if p.attr is None:
        raise LayoutError("the tensor type has no encoding attribute; write tensor<SHAPExTYPE, #ttg....>")
    return p.attr


# -- parameter checking, shared by the encoding modules ---------------------------------------
def describe(attr: Attr) -> str:
    return f"#ttg.{attr.kind}" if "." not in attr.kind else f"#{attr.kind}"


def check_params(attr: Attr, required=(), optional=()) -> None:
    """Raise naming the unknown parameters of ``attr`` (first: a misspelt key is reported as
    unknown, with the nearest known key, as Triton's parser reports "unexpected key"), then the
    missing required ones."""
    known = set(required) | set(optional)
    unknown = [k for k in attr.params if k not in known]
    if unknown:
        raise LayoutError(f"{describe(attr)} has no parameter{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(repr(k) for k in unknown)}{_nearest(unknown[0], known)}" + _at(attr))
    missing = [k for k in required if k not in attr.params]
    if missing:
        raise LayoutError(f"{describe(attr)} needs parameter{'s' if len(missing) > 1 else ''} "
                          f"{', '.join(missing)}" + _at(attr))


def _nearest(key: str, known) -> str:
    """``; did you mean 'sizePerThread'?`` or the known keys."""
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f" (known: {', '.join(sorted(known))})"


_INT_TYPE = {int}
_LIST_TYPE = {list}
#: the powers of two an integer parameter may take (below :data:`MAX_INT`)
_POWERS_OF_TWO = frozenset(1 << i for i in range(31))


def _at(attr: Attr) -> str:
    return f" (attribute at column {attr.column})" if attr.column else ""


def int_param(attr: Attr, key: str, default=None, *, minimum: int = 0) -> int:
    """An integer parameter (``default`` when absent and not None)."""
    if key not in attr.params:
        if default is None:
            raise LayoutError(f"{describe(attr)} needs parameter {key}{_at(attr)}")
        return default
    v = attr.params[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise LayoutError(f"{describe(attr)}: {key} must be an integer, got {_show(v)}{_at(attr)}")
    if v < minimum:
        raise LayoutError(f"{describe(attr)}: {key} must be >= {minimum}, got {v}{_at(attr)}")
    return v


def bool_param(attr: Attr, key: str, default: bool = False) -> bool:
    if key not in attr.params:
        return default
    v = attr.params[key]
    if not isinstance(v, bool):
        raise LayoutError(f"{describe(attr)}: {key} must be true or false, got {_show(v)}{_at(attr)}")
    return v


def int_list_param(attr: Attr, key: str, default=None, *, length: int | None = None, minimum: int = 0,
                   pow2: bool = False) -> list[int]:
    """A list-of-integers parameter; checks its length, lower bound and power-of-two-ness."""
    if key not in attr.params:
        if default is None:
            raise LayoutError(f"{describe(attr)} needs parameter {key}{_at(attr)}")
        return list(default)
    v = attr.params[key]
    if type(v) is list and v and set(map(type, v)) == _INT_TYPE and (length is None or len(v) == length) \
            and min(v) >= max(minimum, 1) and (not pow2 or all(map(_POWERS_OF_TWO.__contains__, v))):
        return list(v)   # the common case, checked at once
    if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int) for x in v):
        raise LayoutError(f"{describe(attr)}: {key} must be a list of integers, got {_show(v)}{_at(attr)}")
    if length is not None and len(v) != length:
        raise LayoutError(f"{describe(attr)}: {key} = {_show(v)} has {len(v)} entries, expected {length} "
                          f"(the layout's rank){_at(attr)}")
    for x in v:
        if x < minimum:
            raise LayoutError(f"{describe(attr)}: {key} = {_show(v)} has entry {x} < {minimum}{_at(attr)}")
        if pow2 and (x < 1 or x & (x - 1)):
            raise LayoutError(f"{describe(attr)}: every entry of {key} must be a power of two, "
                              f"got {_show(v)}{_at(attr)}")
    return list(v)


def bases_param(attr: Attr, key: str, rank: int | None = None) -> list[list[int]]:
    """A list of bases (``[[0, 1], [2, 0]]``): non-negative integer vectors of one length."""
    if key not in attr.params:
        raise LayoutError(f"{describe(attr)} needs parameter {key} (a list of bases like [[0, 1], [1, 0]])"
                          f"{_at(attr)}")
    v = attr.params[key]
    if type(v) is list and (not v or set(map(type, v)) == _LIST_TYPE):   # the common case, checked at once
        flat = list(chain.from_iterable(v))
        if (not flat or (set(map(type, flat)) == _INT_TYPE and min(flat) >= 0)) and \
                (rank is None or not v or set(map(len, v)) == {rank}):
            return [list(b) for b in v]
    if not isinstance(v, list) or any(not isinstance(b, list) for b in v):
        raise LayoutError(f"{describe(attr)}: {key} must be a list of bases like [[0, 1], [1, 0]], "
                          f"got {_show(v)}{_at(attr)}")
    for b in v:
        if any(isinstance(x, bool) or not isinstance(x, int) for x in b):
            raise LayoutError(f"{describe(attr)}: basis {_show(b)} of {key} must hold integers{_at(attr)}")
        if any(x < 0 for x in b):
            raise LayoutError(f"{describe(attr)}: basis {_show(b)} of {key} has a negative entry{_at(attr)}")
        if rank is not None and len(b) != rank:
            raise LayoutError(f"{describe(attr)}: basis {_show(b)} of {key} has {len(b)} entries, expected "
                              f"{rank} (the layout's rank){_at(attr)}")
    return [list(b) for b in v]


def attr_param(attr: Attr, key: str) -> Attr:
    if key not in attr.params:
        raise LayoutError(f"{describe(attr)} needs parameter {key}{_at(attr)}")
    v = attr.params[key]
    if not isinstance(v, Attr):
        raise LayoutError(f"{describe(attr)}: {key} must be a layout attribute (#ttg....), got {_show(v)}{_at(attr)}")
    return v


def _show(v) -> str:
    s = repr(v) if not isinstance(v, Attr) else (v.text or f"#ttg.{v.kind}<...>")
    return s if len(s) <= 60 else s[:57] + "..."
