"""Safe reading of Tilus layout expressions: Python syntax, parsed with :mod:`ast`, never evaluated.

The text is a Python-like expression built only from whitelisted calls::

    local(2, 1).spatial(8, 4).local(1, 2)
    reduce(spatial(3, 4), dims=[0])
    RegisterLayout(shape=[4], mode_shape=[4], spatial_modes=[-3, 0], local_modes=[])
    shared_row_major_swizzle([16, 64], 2)

Reading happens in two steps:

1. :func:`parse_tree` checks the raw tokens (length, bracket nesting, chain length: so a 10,000-deep
   expression is a clear :class:`~layoutverify.core.errors.ParseError`, not a ``RecursionError``), runs
   ``ast.parse`` and converts the Python AST into a small tree of :class:`Num`, :class:`Seq`,
   :class:`Call`, :class:`Method` and :class:`BinOp` nodes. Only integer literals (optionally
   negated), ``True``/``False``/``None``, list/tuple literals, calls of whitelisted function names,
   whitelisted method names, and the operators ``*`` (compose) and ``/`` (divide) pass; anything
   else (other names, attribute reads such as ``__class__``, floats, strings, ``**kwargs``) is a
   ``ParseError`` naming the token and its 1-based column.
2. :func:`evaluate` walks that tree with a *backend*: our own re-implementation
   (:mod:`layoutverify.adapters.tilus.register`, :mod:`layoutverify.adapters.tilus.shared`) or the installed tilus package
   (:mod:`layoutverify.adapters.tilus.oracle`). Arguments are bound against :data:`FUNCTIONS`/:data:`METHODS`,
   which mirror tilus 0.2.0's signatures, so both backends see the same, checked arguments.
"""
from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass, field
from typing import Any, Callable

from layoutverify.core.errors import LayoutError, ParseError

#: Longest accepted text (characters).
MAX_TEXT = 20_000
#: Deepest bracket nesting accepted.
MAX_NESTING = 32
#: Most ``.`` (method call) tokens accepted in one expression.
MAX_CHAIN = 100
#: Most tokens accepted in one expression.
MAX_TOKENS = 5_000
#: Largest integer literal accepted (sizes are further limited by the layout models).
MAX_INT = 1 << 40


# ----------------------------------------------------------------------------------------------
# The tree
@dataclass
class Node:
    """A node of a parsed expression: the 1-based column of its first character and its source text
    (for messages)."""
    column: int            # 1-based column of the node's first character (in the whole text)
    token: str             # the source text of the node (shortened), for messages


@dataclass
class Num(Node):
    """An integer literal."""
    value: int = 0


@dataclass
class Const(Node):
    """``True``, ``False`` or ``None``."""
    value: Any = None       # True, False or None


@dataclass
class Seq(Node):
    """A list or tuple literal."""
    items: list = field(default_factory=list)


@dataclass
class Call(Node):
    """A call of a Tilus function by name, with positional and keyword arguments."""
    func: str = ""
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)   # name -> Node


@dataclass
class Method(Node):
    """A method call on a value (``layout.local(2, 1)``)."""
    recv: Node = None
    name: str = ""
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)


@dataclass
class BinOp(Node):
    """``lhs * rhs`` (compose) or ``lhs / rhs`` (divide) of two layouts."""
    op: str = "*"
    lhs: Node = None
    rhs: Node = None


# ----------------------------------------------------------------------------------------------
# Signatures (tilus 0.2.0). Kinds: int, ints (list/tuple of int), bool, reg (register layout),
# shared (shared layout), swizzle, opt_swizzle (swizzle or None), opt_ints (ints or None).
@dataclass(frozen=True)
class Param:
    """A parameter of a Tilus function: name, kind (``int``, ``ints``, ``layout``, ...), default
    (``...``: required) and whether it is keyword-only."""
    name: str
    kind: str
    default: Any = ...           # ... = required
    kw_only: bool = False


@dataclass(frozen=True)
class Sig:
    """A Tilus function's signature: its parameters and the ``*args`` parameter, if any."""
    params: tuple = ()
    varargs: tuple | None = None   # (name, kind) for *args


def _sig(*params, varargs=None):
    return Sig(tuple(params), varargs)


SHAPE_VARARGS = ("shape", "int")

#: Free functions by name.
FUNCTIONS: dict[str, Sig] = {
    # register layout creation
    "spatial": _sig(Param("ranks", "opt_ints", None, True), varargs=SHAPE_VARARGS),
    "local": _sig(Param("ranks", "opt_ints", None, True), varargs=SHAPE_VARARGS),
    "repeat": _sig(Param("ranks", "opt_ints", None, True), varargs=SHAPE_VARARGS),  # old name of local
    "column_spatial": _sig(varargs=SHAPE_VARARGS),
    "column_local": _sig(varargs=SHAPE_VARARGS),
    "replicated": _sig(Param("num_workers", "int", ..., True), varargs=SHAPE_VARARGS),
    "auto_local_spatial": _sig(Param("num_threads", "int"), Param("shape", "ints")),
    "register_layout": _sig(Param("shape", "ints"), Param("mode_shape", "ints"),
                            Param("spatial_modes", "ints"), Param("local_modes", "ints")),
    "RegisterLayout": _sig(Param("shape", "ints"), Param("mode_shape", "ints"),
                           Param("spatial_modes", "ints"), Param("local_modes", "ints")),
    # register layout operations
    "compose": _sig(Param("outer", "reg"), Param("inner", "reg")),
    "concat": _sig(Param("lhs", "reg"), Param("rhs", "reg")),
    "divide": _sig(Param("lhs", "reg"), Param("rhs", "reg")),
    "left_divide": _sig(Param("layout", "reg"), Param("lhs_divisor", "reg")),
    "permute": _sig(Param("layout", "reg"), Param("dims", "ints")),
    "reshape": _sig(Param("layout", "reg"), Param("shape", "ints")),
    "flatten": _sig(Param("layout", "reg"), Param("start_dim", "int", 0), Param("end_dim", "int", -1)),
    "flatten_documented": _sig(Param("layout", "reg"), Param("start_dim", "int", 0), Param("end_dim", "int", -1)),
    "squeeze": _sig(Param("layout", "reg"), Param("dims", "ints")),
    "unsqueeze": _sig(Param("layout", "reg"), Param("dims", "ints")),
    "reduce": _sig(Param("layout", "reg"), Param("dims", "ints"), Param("keepdims", "bool", False, True)),
    "reduce_to": _sig(Param("layout", "reg"), Param("shape", "ints")),
    # shared layouts
    "Swizzle": _sig(Param("base", "int"), Param("bits", "int"), Param("shift", "int")),
    "shared_row_major": _sig(varargs=SHAPE_VARARGS),
    "shared_column_major": _sig(varargs=SHAPE_VARARGS),
    "shared_row_major_swizzle": _sig(Param("shape", "ints"), Param("dtype_nbytes", "int")),
    "shared_layout": _sig(Param("shape", "ints"), Param("mode_shape", "ints"), Param("mode_strides", "ints"),
                          Param("optional_swizzle", "opt_swizzle", None)),
    "SharedLayout": _sig(Param("shape", "ints"), Param("mode_shape", "ints"), Param("mode_strides", "ints"),
                         Param("swizzle", "opt_swizzle", None)),
    "shared_compose": _sig(Param("lhs", "shared"), Param("rhs", "shared")),
    "shared_permute": _sig(Param("layout", "shared"), Param("dims", "ints")),
    "shared_reshape": _sig(Param("layout", "shared"), Param("new_shape", "ints")),
    "shared_unsqueeze": _sig(Param("layout", "shared"), Param("dims", "ints")),
    "shared_slice": _sig(Param("layout", "shared"), Param("retain_dims", "ints")),
}

#: Methods by (receiver kind, name).
METHODS: dict[tuple[str, str], Sig] = {
    ("reg", "local"): _sig(varargs=SHAPE_VARARGS),
    ("reg", "repeat"): _sig(varargs=SHAPE_VARARGS),
    ("reg", "spatial"): _sig(varargs=SHAPE_VARARGS),
    ("reg", "column_local"): _sig(varargs=SHAPE_VARARGS),
    ("reg", "column_spatial"): _sig(varargs=SHAPE_VARARGS),
    ("reg", "reduce_to"): _sig(Param("shape", "ints")),
    ("shared", "apply_swizzle"): _sig(Param("swizzle", "swizzle")),
    ("shared", "permute"): _sig(Param("dims", "ints")),
    ("shared", "transpose"): _sig(),
    ("shared", "prepend_dim"): _sig(Param("extent", "int")),
    ("shared", "unsqueeze"): _sig(Param("dims", "ints")),
    ("shared", "slice"): _sig(Param("retain_dims", "ints")),
}

METHOD_NAMES = frozenset(n for _, n in METHODS)

KIND_WORDS = {"reg": "a register layout", "shared": "a shared layout", "swizzle": "a Swizzle",
              "int": "an integer", "ints": "a list of integers", "bool": "True or False"}


# ----------------------------------------------------------------------------------------------
# Step 1: tokens -> ast -> tree
class _Source:
    """Maps ``ast`` positions to 1-based character columns in the user's text.

    The text is parsed wrapped as ``"(\n" + text + "\n)"`` (so leading blanks and line breaks are
    fine); ``ast`` line numbers are therefore one more than the user's.
    """

    def __init__(self, text: str):
        self.text = text
        self.lines = text.split("\n")
        self.starts = []
        pos = 0
        for line in self.lines:
            self.starts.append(pos)
            pos += len(line) + 1

    def column(self, lineno: int, byte_col: int) -> int:
        """1-based column for an ``ast`` (wrapped) line number and UTF-8 byte offset."""
        i = lineno - 2
        if not 0 <= i < len(self.lines):
            return len(self.text) + 1 if i >= len(self.lines) else 1
        chars = len(self.lines[i].encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))
        return self.starts[i] + chars + 1

    def char_column(self, lineno: int, char_col: int) -> int:
        """1-based column for a ``tokenize`` position in the unwrapped text."""
        i = lineno - 1
        if 0 <= i < len(self.lines):
            return self.starts[i] + char_col + 1
        return len(self.text) + 1

    def token_at(self, column: int, width: int = 12) -> str:
        t = self.text[column - 1:column - 1 + width]
        return t if t else "<end>"

    def segment(self, node) -> str:
        try:
            a = self.column(node.lineno, node.col_offset)
            b = self.column(node.end_lineno, node.end_col_offset)
        except AttributeError:
            return ""
        return self.text[a - 1:b - 1]


def _short(s: str | None, limit: int = 40) -> str:
    s = (s or "").replace("\n", " ")
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _check_tokens(text: str, src: _Source) -> None:
    """Bound the expression's size before ``ast.parse`` sees it."""
    depth = 0
    dots = 0
    count = 0
    unary_run = 0
    opening = []
    prev = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.INDENT,
                            tokenize.DEDENT, tokenize.COMMENT):
                continue
            count += 1
            col = src.char_column(*tok.start)
            if (tok.type == tokenize.NAME and prev is not None and prev.type == tokenize.NUMBER
                    and prev.end == tok.start):  # ``1or 2``: Python warns and reads two tokens
                raise ParseError("invalid number literal", text, src.char_column(*prev.start),
                                 prev.string + tok.string)
            prev = tok
            if count > MAX_TOKENS:
                raise ParseError(f"layout expression has more than {MAX_TOKENS} tokens", text, col, tok.string)
            if tok.type == tokenize.OP:
                if tok.string in "([{":
                    depth += 1
                    opening.append(col)
                    if depth > MAX_NESTING:
                        raise ParseError(f"brackets nested deeper than {MAX_NESTING}", text, col, tok.string)
                elif tok.string in ")]}":
                    depth -= 1
                    if depth < 0:
                        raise ParseError("unbalanced closing bracket", text, col, tok.string)
                    opening.pop()
                elif tok.string == ".":
                    dots += 1
                    if dots > MAX_CHAIN:
                        raise ParseError(f"more than {MAX_CHAIN} chained method calls", text, col, tok.string)
                if tok.string in "+-~":
                    unary_run += 1
                    if unary_run > 4:
                        raise ParseError("too many consecutive sign operators", text, col, tok.string)
                else:
                    unary_run = 0
            else:
                unary_run = 0
    except tokenize.TokenError as e:
        col = opening[-1] if opening else len(text) + 1
        tok = "(" if opening else None
        raise ParseError(f"unterminated expression ({e.args[0]})", text, col, tok) from None
    except IndentationError as e:
        raise ParseError(f"bad indentation: {e.msg}", text, 1, None) from None
    except SyntaxError as e:  # e.g. an unterminated string
        col = src.char_column(e.lineno or 1, (e.offset or 1) - 1)
        raise ParseError(f"invalid syntax: {e.msg}", text, col, src.token_at(col)) from None


def parse_tree(text: str) -> Node:
    """Check and parse a Tilus layout expression into a :class:`Node` tree (no evaluation)."""
    if not isinstance(text, str):
        raise LayoutError(f"a Tilus layout must be text, got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise ParseError(f"layout text of {len(text)} characters is too long (limit {MAX_TEXT})", text, MAX_TEXT + 1)
    if not text.strip():
        raise ParseError("empty Tilus layout text", text, 1)
    if "\x00" in text:
        k = text.index("\x00")
        raise ParseError("NUL character in layout text", text, k + 1, "\\x00")
    src = _Source(text)
    _check_tokens(text, src)
    try:
        tree = ast.parse("(\n" + text + "\n)", mode="eval")
    except SyntaxError as e:
        col = src.column(e.lineno or 2, max((e.offset or 1) - 1, 0))
        msg = e.msg.split(". Maybe")[0].split(". Perhaps")[0]
        raise ParseError(f"invalid syntax: {msg}" if msg != "invalid syntax" else "invalid syntax",
                         text, col, src.token_at(col)) from None
    except (RecursionError, MemoryError):
        raise ParseError("layout expression is too deeply nested", text, 1) from None
    return _convert(tree.body, text, src)


def _convert(node: ast.AST, text: str, src: _Source) -> Node:
    col = src.column(node.lineno, node.col_offset)
    seg = _short(src.segment(node))

    def fail(msg, n=node, token=None):
        c = src.column(n.lineno, n.col_offset)
        t = token if token is not None else _short(src.segment(n) or src.token_at(c), 24)
        raise ParseError(msg, text, c, t)

    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool) or v is None:
            return Const(col, seg, v)
        if isinstance(v, int):
            if abs(v) > MAX_INT:
                fail(f"integer {v} is too large (limit {MAX_INT})")
            return Num(col, seg, v)
        fail(f"only integer arguments are allowed, got {type(v).__name__} {_short(repr(v), 20)}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _convert(node.operand, text, src)
        if not isinstance(inner, Num):
            fail("a sign is only allowed before an integer")
        return Num(col, seg, -inner.value if isinstance(node.op, ast.USub) else inner.value)
    if isinstance(node, (ast.List, ast.Tuple)):
        return Seq(col, seg, [_convert(e, text, src) for e in node.elts])
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Mult):
            op = "*"
        elif isinstance(node.op, ast.Div):
            op = "/"
        else:
            fail(f"operator {type(node.op).__name__} is not allowed between layouts (only * and /)")
        # locate the operator itself, between the two operands
        a = src.column(node.left.end_lineno, node.left.end_col_offset)
        b = src.column(node.right.lineno, node.right.col_offset)
        k = text.find(op, a - 1, b - 1)
        return BinOp(k + 1 if k >= 0 else col, op, op, _convert(node.left, text, src), _convert(node.right, text, src))
    if isinstance(node, ast.Call):
        f = node.func
        # the function or method name is checked before its arguments
        if isinstance(f, ast.Name):
            if f.id not in FUNCTIONS:
                fail(f"unknown function {f.id!r}; known: {', '.join(sorted(FUNCTIONS))}", f, f.id)
        elif isinstance(f, ast.Attribute):
            if f.attr.startswith("_") or f.attr not in METHOD_NAMES:
                c = src.column(f.end_lineno, f.end_col_offset) - len(f.attr)
                raise ParseError(f"unknown or forbidden method {f.attr!r}; known: {', '.join(sorted(METHOD_NAMES))}",
                                 text, c, f.attr)
        else:
            fail("only calls of layout functions are allowed")
        args, kwargs = [], {}
        for a in node.args:
            if isinstance(a, ast.Starred):
                fail("*args are not allowed", a)
            args.append(_convert(a, text, src))
        for kw in node.keywords:
            if kw.arg is None:
                fail("**kwargs are not allowed", kw.value)
            if kw.arg in kwargs:
                fail(f"keyword argument {kw.arg!r} given twice", kw.value)
            kwargs[kw.arg] = _convert(kw.value, text, src)
        if isinstance(f, ast.Name):
            return Call(col, seg, f.id, args, kwargs)
        recv = _convert(f.value, text, src)
        # a method call is located at its name
        mcol = src.column(f.end_lineno, f.end_col_offset) - len(f.attr)
        return Method(mcol, f.attr + "(...)", recv, f.attr, args, kwargs)
        fail("only calls of layout functions are allowed")
    if isinstance(node, ast.Attribute):
        c = src.column(node.end_lineno, node.end_col_offset) - len(node.attr)
        raise ParseError(f"attribute access {node.attr!r} is not allowed", text, c, node.attr)
    if isinstance(node, ast.Name):
        fail(f"unknown name {node.id!r} (only calls of layout functions are allowed)", node, node.id)
    fail(f"{type(node).__name__} is not allowed in a layout expression")


# ----------------------------------------------------------------------------------------------
# Step 2: evaluation with a backend
class Backend:
    """What an evaluator needs. ``kind_of(value)`` returns ``"reg"``, ``"shared"``, ``"swizzle"``
    or ``None``; ``call(name, bound, node)`` and ``method(kind, name, recv, bound, node)`` build values."""

    def kind_of(self, value) -> str | None:  # pragma: no cover - interface
        """The kind (``reg``, ``shared``, ``swizzle``) of a value of this backend, ``None`` for other
        values."""
        raise NotImplementedError

    def call(self, name: str, bound: dict, node: Node):  # pragma: no cover - interface
        """The value of function ``name`` applied to the bound arguments."""
        raise NotImplementedError

    def method(self, kind: str, name: str, recv, bound: dict, node: Node):  # pragma: no cover - interface
        """The value of method ``name`` of a value of ``kind`` applied to the bound arguments."""
        raise NotImplementedError


def node_error(text: str, node: Node, message: str, cls=ParseError) -> ParseError:
    """An error located at ``node`` (its column and source text)."""
    return cls(message, text, node.column, _short(node.token, 24))


class Evaluator:
    """Evaluates a parsed Tilus expression with a backend (our models or the installed tilus): checks
    every call against its signature, binds the arguments, and calls the backend."""
    def __init__(self, text: str, backend: Backend):
        self.text = text
        self.backend = backend

    def fail(self, node: Node, message: str):
        """Raise a :class:`ParseError` located at ``node``."""
        raise node_error(self.text, node, message)

    def value(self, node: Node):
        """The value of a node (literals, sequences, calls, methods, ``*`` and ``/``)."""
        if isinstance(node, Num):
            return node.value
        if isinstance(node, Const):
            return node.value
        if isinstance(node, Seq):
            out = []
            for item in node.items:
                if not isinstance(item, Num):
                    self.fail(item, "list entries must be integers")
                out.append(item.value)
            return tuple(out)
        if isinstance(node, Call):
            sig = FUNCTIONS[node.func]
            bound = self.bind(node, sig, node.func)
            return self.backend.call(node.func, bound, node)
        if isinstance(node, Method):
            recv = self.value(node.recv)
            kind = self.backend.kind_of(recv)
            sig = METHODS.get((kind, node.name))
            if sig is None:
                what = KIND_WORDS.get(kind, "this value")
                self.fail(node, f"{what} has no method {node.name!r}")
            bound = self.bind(node, sig, node.name)
            return self.backend.method(kind, node.name, recv, bound, node)
        if isinstance(node, BinOp):
            lhs, rhs = self.value(node.lhs), self.value(node.rhs)
            for side, v in ((node.lhs, lhs), (node.rhs, rhs)):
                if self.backend.kind_of(v) != "reg":
                    self.fail(side, f"operator {node.op!r} needs register layouts on both sides")
            name = "compose" if node.op == "*" else "divide"
            return self.backend.call(name, {"outer" if name == "compose" else "lhs": lhs,
                                            "inner" if name == "compose" else "rhs": rhs}, node)
        self.fail(node, "cannot evaluate this")  # pragma: no cover

    def bind(self, node, sig: Sig, name: str) -> dict:
        """The arguments of a call bound to the signature's parameters by position and keyword
        (defaults filled; unknown, missing and repeated ones refused)."""
        bound = {}
        args = list(node.args)
        positional = [p for p in sig.params if not p.kw_only]
        for p, a in zip(positional, args):
            bound[p.name] = (a, p.kind)
        extra = args[len(positional):]
        if sig.varargs is not None:
            vname, vkind = sig.varargs
            bound[vname] = ([a for a in extra], "*" + vkind)
        elif extra:
            self.fail(extra[0], f"{name}() takes {len(positional)} positional argument(s), got {len(args)}")
        names = {p.name: p for p in sig.params}
        for k, a in node.kwargs.items():
            if k not in names:
                self.fail(a, f"{name}() has no argument {k!r}")
            if k in bound:
                self.fail(a, f"{name}() got argument {k!r} twice")
            bound[k] = (a, names[k].kind)
        out = {}
        for p in sig.params:
            if p.name not in bound:
                if p.default is ...:
                    self.fail(node, f"{name}() is missing argument {p.name!r}")
                out[p.name] = p.default
        for k, (a, kind) in bound.items():
            if kind.startswith("*"):
                out[k] = tuple(self.check(x, kind[1:], name, k) for x in a)
            else:
                out[k] = self.check(a, kind, name, k)
        return out

    def check(self, node: Node, kind: str, fname: str, pname: str):
        """The value of argument ``pname`` of ``fname``, checked to be of ``kind``."""
        v = self.value(node)
        ok = True
        if kind == "int":
            ok = isinstance(v, int) and not isinstance(v, bool)
        elif kind in ("ints", "opt_ints"):
            ok = isinstance(v, tuple) or (kind == "opt_ints" and v is None)
        elif kind == "bool":
            ok = isinstance(v, bool)
        elif kind in ("reg", "shared", "swizzle"):
            ok = self.backend.kind_of(v) == kind
        elif kind == "opt_swizzle":
            ok = v is None or self.backend.kind_of(v) == "swizzle"
        if not ok:
            want = KIND_WORDS.get(kind.replace("opt_", ""), kind)
            self.fail(node, f"argument {pname!r} of {fname}() must be {want}")
        return v


def evaluate(text: str, backend: Backend, tree: Node | None = None):
    """Parse (unless ``tree`` is given) and evaluate ``text`` with ``backend``."""
    if tree is None:
        tree = parse_tree(text)
    return Evaluator(text, backend).value(tree)


def wrap_errors(text: str, node: Node, fn: Callable, *args, **kwargs):
    """Run a layout operation; re-raise its ``LayoutError`` located at ``node`` (column, token)."""
    try:
        return fn(*args, **kwargs)
    except ParseError:
        raise
    except LayoutError as e:
        msg = f"{node_name(node)}: {e}"
        if type(e) is LayoutError:
            raise node_error(text, node, msg) from None
        raise type(e)(f"{msg} at column {node.column} (token {_short(node.token, 24)!r})") from None


def node_name(node: Node) -> str:
    if isinstance(node, Call):
        return node.func
    if isinstance(node, Method):
        return "." + node.name
    if isinstance(node, BinOp):
        return "compose" if node.op == "*" else "divide"
    return "expression"
