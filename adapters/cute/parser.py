"""Tokenizer and recursive-descent parser for CuTe layout text (no ``eval``).

Grammar (whitespace is free; ``_N`` is CuTe's static integer ``N``)::

    expr    := term ('o' term)*                       composed layout: A o offset o B, or A o B
    term    := primary [':' primary]                  shape:stride
    primary := INT | '-' INT | '_' | SMEM_PTR          INT: 8 (bare), _8 (static), _-1, C++'s 0b1000, 0x10
             | '(' expr (',' expr)* ')'               IntTuple, or a tiler of layouts / ints / _
             | NAME ['<' targ (',' targ)* '>'] ['(' [arg (',' arg)*] ')'] ['.' NAME]
    arg     := NAME '=' expr | expr
    targ    := ['-'] INT | NAME
    NAME    := identifier, possibly qualified with '::' (cute::, GMMA::, SM90::GMMA::)

C++ type spellings are accepted too, as CUTLASS's traits write them:
``Layout<Shape<Shape<_4,_8>,_2>, Stride<Stride<_16,_1>,_8>>``, ``Int<8>{}``, ``Step<_2,_1>``,
``Tile<_32,_32,_16>``.

Examples: ``((2,4),8):((1,16),2)``, ``(_8,_64)``, ``Sw<3,4,3> o _0 o (_8,_64):(_64,_1)``,
``logical_divide((8,8):(8,1), (2,4))``, ``composition(A, (2:1, _))``,
``SM80_16x8x16_F32F16F16F32_TN.A``, ``tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2,2,1), C, tile=(32,32))``.

Nesting is limited to :data:`MAX_NESTING` levels, so a 10,000-deep text is a :class:`ParseError`
rather than a ``RecursionError``. Every error names the offending token and its 1-based column.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from layoutverify.core.errors import ParseError

MAX_NESTING = 100
MAX_TOKENS = 200_000
MAX_INT_DIGITS = 30


@dataclass(frozen=True)
class Token:
    """A token of CuTe text: its kind (``INT``, ``BASIS``, ``NAME``, punctuation, ``EOF``), text as
    written, 1-based column and integer value."""
    kind: str      # INT BASIS NAME US SMEM ( ) , : < > . = - EOF
    text: str
    col: int       # 1-based
    value: int | None = None


_TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<smem>smem_ptr\[(?P<bits>[0-9]+)b\]\(unset\))
  | (?P<cxxint>0[bB][01]+|0[xX][0-9a-fA-F]+)(?![A-Za-z0-9_@])
  | (?P<basis>_?-?[0-9]+(?:@[0-9]+)+)
  | (?P<int>_?-?[0-9]+)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<punct>[(),:<>.=\-{}])
""", re.VERBOSE)


def tokenize(text: str) -> list[Token]:
    toks: list[Token] = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN_RE.match(text, pos)
        if not m:
            if text[pos] == "?":
                raise ParseError("'?' is how the CuTe DSL prints a dynamic integer whose value is only known at run "
                                 "time; write its value (e.g. (4,8):(8,1), or CuTe C++'s (_4,8):(8,_1) to keep it "
                                 "dynamic)", text, pos + 1, "?")
            raise ParseError("unexpected character", text, pos + 1, text[pos])
        kind = m.lastgroup
        s = m.group(0)
        if kind == "ws":
            pass
        elif kind == "smem":
            toks.append(Token("SMEM", s, pos + 1, int(m.group("bits"))))
        elif kind == "basis":                # v@i@j: a ScaledBasis stride, printed innermost mode first
            head, *path = s.split("@")
            digits = head.lstrip("_")
            if len(s) > MAX_INT_DIGITS * 2 or len(path) > 8:
                raise ParseError("scaled basis element too large", text, pos + 1, s)
            toks.append(Token("BASIS", s, pos + 1, (int(digits), tuple(int(p) for p in reversed(path)))))
        elif kind == "cxxint":               # C++ binary and hexadecimal literals: make_swizzle<0b1000,0b0100>()
            if len(s) > MAX_INT_DIGITS * 4:
                raise ParseError("integer too large", text, pos + 1, s)
            toks.append(Token("INT", s, pos + 1, int(s, 0)))
        elif kind == "int":
            digits = s.lstrip("_")
            if len(digits) > MAX_INT_DIGITS:
                raise ParseError("integer too large", text, pos + 1, s)
            toks.append(Token("INT", s, pos + 1, int(digits)))
        elif kind == "name":
            if s == "_":
                toks.append(Token("US", s, pos + 1))
            elif s.startswith("_"):
                raise ParseError("identifiers may not start with '_' (CuTe writes static integers as _8)",
                                 text, pos + 1, s)
            else:
                toks.append(Token("NAME", s, pos + 1))
        else:
            toks.append(Token(s, s, pos + 1))
        if len(toks) > MAX_TOKENS:
            raise ParseError(f"layout text has more than {MAX_TOKENS} tokens", text, pos + 1, s)
        pos = m.end()
    toks.append(Token("EOF", "", n + 1))
    return toks


# ---------------------------------------------------------------------------------------------
# AST
# ---------------------------------------------------------------------------------------------
@dataclass
class Node:
    """A node of the parse tree, with the 1-based column of its first token."""
    col: int


@dataclass
class Num(Node):
    """An integer literal (``static``: written ``_N``, CuTe C++'s print of a static integer)."""
    value: int
    static: bool = False      #: written ``_N`` (CuTe's print of a static integer)


@dataclass
class BasisLit(Node):
    """``v@i@j``: the stride ``v * E<j, i>`` (CuTe's ScaledBasis); ``path`` outermost mode first."""
    value: int
    path: tuple
    static: bool = False


@dataclass
class Under(Node):
    """``_``: CuTe's underscore (a mode left whole in a slice or tiler)."""
    pass


@dataclass
class Smem(Node):
    """``smem_ptr[16b]``: the shared-memory pointer type of a composed layout's offset (its element bits)."""
    bits: int


@dataclass
class Tup(Node):
    """A parenthesised tuple ``(a, b, ...)``."""
    items: list


@dataclass
class LayoutLit(Node):
    """A layout literal ``shape:stride``."""
    shape: Node
    stride: Node


@dataclass
class Chain(Node):
    """A composition chain ``a o b o c``."""
    parts: list


@dataclass
class Name(Node):
    """A name, with template arguments (``Sw<3,4,3>``), call arguments and keywords when it is a call,
    and an attribute (``ATOM.A``)."""
    name: str
    targs: list = field(default_factory=list)     # template arguments: Num or Name nodes
    args: list | None = None                     # call arguments (None: not a call)
    kwargs: dict = field(default_factory=dict)
    attr: str | None = None                      # NAME.ATTR
    attr_col: int = 0


# ---------------------------------------------------------------------------------------------
class Parser:
    """Recursive-descent parser of CuTe text (grammar in the module docstring); nesting is limited
    (``MAX_NESTING``) and every error names its token and column."""
    def __init__(self, text: str):
        self.text = text
        self.toks = tokenize(text)
        self.i = 0
        self.depth = 0

    # -- helpers -----------------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        """The current token."""
        return self.toks[self.i]

    def next(self) -> Token:
        """Consume and return the current token."""
        t = self.toks[self.i]
        self.i += 1
        return t

    def error(self, msg: str, tok: Token | None = None):
        """A :class:`ParseError` at ``tok`` (the current token by default)."""
        tok = tok or self.tok
        return ParseError(msg, self.text, tok.col, tok.text if tok.kind != "EOF" else "end of text")

    def expect(self, kind: str, what: str) -> Token:
        """Consume a token of ``kind``, or raise an error saying ``what`` was expected."""
        if self.tok.kind != kind:
            raise self.error(f"expected {what}")
        return self.next()

    def enter(self, tok: Token):
        """One more level of nesting (an error past ``MAX_NESTING``)."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"nesting deeper than {MAX_NESTING} levels", tok)

    def leave(self):
        """One level of nesting less."""
        self.depth -= 1

    # -- grammar -----------------------------------------------------------------------------
    def parse(self) -> Node:
        """The whole text as one expression (an error for text left over)."""
        if self.tok.kind == "EOF":
            raise self.error("empty CuTe layout text")
        node = self.expr()
        if self.tok.kind != "EOF":
            if self.tok.kind == ")":
                raise self.error("unbalanced ')'")
            raise self.error("unexpected token after the layout")
        return node

    def expr(self) -> Node:
        """``expr := term ('o' term)*``: a chain when there is an ``o``."""
        first = self.term()
        parts = [first]
        while self.tok.kind == "NAME" and self.tok.text == "o":
            self.next()
            parts.append(self.term())
        if len(parts) == 1:
            return first
        return Chain(first.col, parts)

    def term(self) -> Node:
        """``term := primary (':' primary)?``: a layout literal when there is a ``:``."""
        node = self.primary()
        if self.tok.kind == ":":
            self.next()
            stride = self.primary()
            return LayoutLit(node.col, node, stride)
        return node

    def primary(self) -> Node:
        """An integer, basis literal, ``_``, tuple, name or call."""
        t = self.tok
        if t.kind == "BASIS":
            self.next()
            return BasisLit(t.col, t.value[0], t.value[1], t.text.startswith("_"))
        if t.kind == "INT":
            self.next()
            return Num(t.col, t.value, t.text.startswith("_"))
        if t.kind == "-":                     # a negative stride written '- 1' (the tokenizer reads '-1' whole)
            self.next()
            n = self.expect("INT", "an integer after '-'")
            if "-" in n.text:
                raise ParseError("one sign per integer", self.text, n.col, n.text)
            return Num(t.col, -n.value, n.text.startswith("_"))
        if t.kind == "US":
            self.next()
            return Under(t.col)
        if t.kind == "SMEM":
            self.next()
            return Smem(t.col, t.value)
        if t.kind == "(":
            self.enter(t)
            self.next()
            if self.tok.kind == ")":
                raise self.error("empty tuple ()")
            items = [self.expr()]
            while self.tok.kind == ",":
                self.next()
                items.append(self.expr())
            if self.tok.kind != ")":
                if self.tok.kind == "EOF":
                    raise ParseError("unbalanced '(': missing ')'", self.text, t.col, "(")
                raise self.error("expected ',' or ')'")
            self.next()
            self.leave()
            return Tup(t.col, items)
        if t.kind == "NAME":
            return self.named()
        if t.kind == "EOF":
            raise self.error("unexpected end of text")
        if t.kind == ")":
            raise self.error("unbalanced ')'")
        raise self.error("unexpected token")

    def named(self) -> Node:
        """A name with optional template arguments, call arguments and attribute."""
        t = self.next()
        node = Name(t.col, t.text)
        if self.tok.kind == "<":
            self.next()
            node.targs.append(self.targ())
            while self.tok.kind == ",":
                self.next()
                node.targs.append(self.targ())
            self.expect(">", "'>' closing the template arguments")
            if self.tok.kind == "{":           # C++ value syntax Sw<3,4,3>{} / Int<8>{}
                self.next()
                self.expect("}", "'}'")
        if self.tok.kind == "(":
            open_tok = self.tok
            self.enter(open_tok)
            self.next()
            node.args = []
            if self.tok.kind != ")":
                self.arg(node)
                while self.tok.kind == ",":
                    self.next()
                    self.arg(node)
            if self.tok.kind != ")":
                if self.tok.kind == "EOF":
                    raise ParseError("unbalanced '(': missing ')'", self.text, open_tok.col, "(")
                raise self.error("expected ',' or ')' in the argument list")
            self.next()
            self.leave()
        if self.tok.kind == ".":
            self.next()
            a = self.expect("NAME", "an operand name after '.' (A, B, C, Src or Dst)")
            node.attr, node.attr_col = a.text, a.col
        return node

    def arg(self, call: Name) -> None:
        """One call argument, positional or ``name = value``."""
        if self.tok.kind == "NAME" and self.toks[self.i + 1].kind == "=":
            k = self.next()
            self.next()
            if k.text in call.kwargs:
                raise self.error(f"argument {k.text!r} given twice", k)
            call.kwargs[k.text] = self.expr()
            return
        if call.kwargs:
            raise self.error("positional argument after a keyword argument")
        call.args.append(self.expr())

    def targ(self) -> Node:
        """One template argument: an integer (optionally negative) or a name."""
        t = self.tok
        if t.kind == "-":
            self.next()
            n = self.expect("INT", "an integer after '-'")
            if "-" in n.text:
                raise ParseError("one sign per integer", self.text, n.col, n.text)
            return Num(t.col, -n.value)
        if t.kind == "INT":
            self.next()
            return Num(t.col, t.value)
        if t.kind == "US":                     # Tile<_32, _, _>
            self.next()
            return Under(t.col)
        if t.kind == "NAME":                   # a type, possibly a template: Shape<_4,_8>
            self.next()
            node = Name(t.col, t.text)
            if self.tok.kind == "<":
                open_tok = self.tok
                self.enter(open_tok)
                self.next()
                node.targs.append(self.targ())
                while self.tok.kind == ",":
                    self.next()
                    node.targs.append(self.targ())
                self.expect(">", "'>' closing the template arguments")
                self.leave()
            if self.tok.kind == "{":
                self.next()
                self.expect("}", "'}'")
            return node
        raise self.error("expected a template argument (an integer or a type name)")


def parse_text(text: str) -> Node:
    """Parse CuTe layout text into an AST (see the module docstring)."""
    if not isinstance(text, str):
        raise ParseError(f"CuTe layout text must be a string, got {type(text).__name__}")
    return Parser(text).parse()
