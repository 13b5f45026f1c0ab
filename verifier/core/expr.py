"""Symbolic integer expressions over hardware indices (DESIGN.md §1).

A layout's map gives each logical coordinate as an expression of the hardware indices, built from
constants, ``+``, ``* const``, ``// const``, ``% const``, ``^``, ``& const``, ``>> const`` and
``<< const``. Those cover F2-linear layouts (XOR of bases), mixed-radix strides (CuTe, Tilus, IREE)
and swizzles. A ``Lookup`` leaf holds an explicit table for layouts given only as a table.

All values are non-negative integers. The same expression is

* evaluated over whole index arrays with numpy (:func:`evaluate`),
* bounded by interval arithmetic (:func:`upper_bound`), which picks a bit-vector width,
* lowered to z3 bit-vectors (:func:`to_z3`) for proofs, all operations unsigned.

Python operators build expressions with light constant folding: ``Var("lane") % 4 * 2 + 1``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from layoutverify.core.errors import LayoutError


class Expr:
    """Base of the expression tree. Instances are immutable and hashable."""

    __slots__ = ()

    # -- builders with constant folding --------------------------------------------------------
    def __add__(self, other):
        other = lift(other)
        if isinstance(other, Const) and other.value == 0:
            return self
        if isinstance(self, Const) and self.value == 0:
            return other
        if isinstance(self, Const) and isinstance(other, Const):
            return Const(self.value + other.value)
        return Add(self, other)

    __radd__ = __add__

    def __mul__(self, c):
        c = _const_arg(c, "*")
        if c == 0:
            return Const(0)
        if c == 1:
            return self
        if isinstance(self, Const):
            return Const(self.value * c)
        if isinstance(self, Mul):
            return Mul(self.a, self.c * c)
        return Mul(self, c)

    __rmul__ = __mul__

    def __floordiv__(self, c):
        c = _const_arg(c, "//", positive=True)
        if c == 1:
            return self
        if isinstance(self, Const):
            return Const(self.value // c)
        if isinstance(self, FloorDiv):
            return FloorDiv(self.a, self.c * c)
        return FloorDiv(self, c)

    def __mod__(self, c):
        c = _const_arg(c, "%", positive=True)
        if c == 1:
            return Const(0)
        if isinstance(self, Const):
            return Const(self.value % c)
        return Mod(self, c)

    def __xor__(self, other):
        other = lift(other)
        if isinstance(other, Const) and other.value == 0:
            return self
        if isinstance(self, Const) and self.value == 0:
            return other
        if isinstance(self, Const) and isinstance(other, Const):
            return Const(self.value ^ other.value)
        return Xor(self, other)

    __rxor__ = __xor__

    def __and__(self, c):
        c = _const_arg(c, "&")
        if c == 0:
            return Const(0)
        if isinstance(self, Const):
            return Const(self.value & c)
        return And(self, c)

    def __rshift__(self, c):
        c = _const_arg(c, ">>")
        if c == 0:
            return self
        if isinstance(self, Const):
            return Const(self.value >> c)
        return Shr(self, c)

    def __lshift__(self, c):
        c = _const_arg(c, "<<")
        if c == 0:
            return self
        if isinstance(self, Const):
            return Const(self.value << c)
        return Shl(self, c)


def _const_arg(c, op: str, positive: bool = False) -> int:
    if isinstance(c, Const):
        c = c.value
    if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, np.integer)):
        raise LayoutError(f"the right operand of {op!r} must be an integer constant, got {c!r}")
    c = int(c)
    if c < 0 or (positive and c == 0):
        raise LayoutError(f"the right operand of {op!r} must be {'positive' if positive else 'non-negative'}, got {c}")
    return c


def lift(x) -> Expr:
    """An :class:`Expr` as is; a non-negative Python integer as a :class:`Const`."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        if x < 0:
            raise LayoutError(f"layout expressions are non-negative; got the constant {x}")
        return Const(int(x))
    raise LayoutError(f"not an expression: {x!r}")


@dataclass(frozen=True, slots=True)
class Var(Expr):
    """A hardware index: the value of the hardware dim ``name`` at the location."""
    name: str

    def __str__(self):
        return self.name


@dataclass(frozen=True, slots=True)
class Const(Expr):
    """A non-negative integer constant."""
    value: int

    def __str__(self):
        return str(self.value)


@dataclass(frozen=True, slots=True)
class Add(Expr):
    """``a + b``."""
    a: Expr
    b: Expr

    def __str__(self):
        return f"{_paren(self.a, 1)} + {_paren(self.b, 1)}"


@dataclass(frozen=True, slots=True)
class Xor(Expr):
    """``a ^ b`` (bitwise exclusive or)."""
    a: Expr
    b: Expr

    def __str__(self):
        return f"{_paren(self.a, 0)} ^ {_paren(self.b, 0)}"


@dataclass(frozen=True, slots=True)
class Mul(Expr):
    """``a * c`` for a non-negative constant ``c``."""
    a: Expr
    c: int

    def __str__(self):
        return f"{_paren(self.a, 2)}*{self.c}"


@dataclass(frozen=True, slots=True)
class FloorDiv(Expr):
    """``a // c`` for a positive constant ``c``."""
    a: Expr
    c: int

    def __str__(self):
        return f"{_paren(self.a, 2)}//{self.c}"


@dataclass(frozen=True, slots=True)
class Mod(Expr):
    """``a % c`` for a positive constant ``c``."""
    a: Expr
    c: int

    def __str__(self):
        return f"{_paren(self.a, 2)}%{self.c}"


@dataclass(frozen=True, slots=True)
class And(Expr):
    """``a & c`` for a non-negative constant mask ``c``."""
    a: Expr
    c: int

    def __str__(self):
        return f"{_paren(self.a, 0)} & {self.c}"


@dataclass(frozen=True, slots=True)
class Shr(Expr):
    """``a >> c`` (logical shift right by a constant)."""
    a: Expr
    c: int

    def __str__(self):
        return f"{_paren(self.a, 3)} >> {self.c}"


@dataclass(frozen=True, slots=True)
class Shl(Expr):
    """``a << c`` (shift left by a constant)."""
    a: Expr
    c: int

    def __str__(self):
        return f"{_paren(self.a, 3)} << {self.c}"


@dataclass(frozen=True, slots=True, eq=False)
class Lookup(Expr):
    """``values[index]``: an explicit table indexed by an expression (compared by identity)."""

    index: Expr
    values: np.ndarray

    def __str__(self):
        return f"table[{len(self.values)}]({self.index})"

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


# Binding strength for printing: higher binds tighter.
_PREC = {Xor: 0, And: 0, Add: 1, Mul: 2, FloorDiv: 2, Mod: 2, Shr: 3, Shl: 3}


def _paren(e: Expr, prec: int) -> str:
    p = _PREC.get(type(e))
    s = str(e)
    return f"({s})" if p is not None and p < prec else s


# ---------------------------------------------------------------------------------------------
def _children(e: Expr) -> tuple:
    if isinstance(e, (Add, Xor)):
        return (e.a, e.b)
    if isinstance(e, (Mul, FloorDiv, Mod, And, Shr, Shl)):
        return (e.a,)
    if isinstance(e, Lookup):
        return (e.index,)
    return ()


def fold(e: Expr, rules: Mapping[type, object], memo: dict | None = None):
    """The one traversal of an expression: a bottom-up fold, every shared subtree visited once.

    ``rules[type(node)](node, *child_values)`` gives a node's value from its children's values
    (children in field order: ``a, b`` for ``+``/``^``, ``a`` for the unary-with-constant nodes,
    ``index`` for :class:`Lookup`; none for :class:`Var` and :class:`Const`). ``memo`` (optional)
    receives the value of every visited node keyed by ``id``. Iterative, so deep trees (long
    sums) never hit Python's recursion limit.
    """
    memo = {} if memo is None else memo
    key = id(e)
    if key in memo:
        return memo[key]
    try:
        return _fold_rec(e, rules, memo)
    except RecursionError:
        pass  # a very deep tree: finish iteratively (the memo keeps what was computed)
    stack = [(e, False)]
    while stack:
        x, ready = stack.pop()
        k = id(x)
        if k in memo:
            continue
        kids = _children(x)
        if ready or not kids:
            try:
                rule = rules[type(x)]
            except KeyError:  # pragma: no cover - closed set of node types
                raise TypeError(type(x)) from None
            memo[k] = rule(x, *[memo[id(c)] for c in kids])
        else:
            stack.append((x, True))
            stack.extend((c, False) for c in kids if id(c) not in memo)
    return memo[key]


def _fold_rec(x: Expr, rules, memo: dict):
    """The recursive form of :func:`fold` (faster in CPython for the usual shallow trees)."""
    k = id(x)
    r = memo.get(k, memo)
    if r is not memo:
        return r
    t = type(x)
    if t is Add or t is Xor:
        r = rules[t](x, _fold_rec(x.a, rules, memo), _fold_rec(x.b, rules, memo))
    elif t is Var or t is Const:
        r = rules[t](x)
    elif t is Lookup:
        r = rules[t](x, _fold_rec(x.index, rules, memo))
    else:
        r = rules[t](x, _fold_rec(x.a, rules, memo))
    memo[k] = r
    return r


def variables(e: Expr) -> set[str]:
    """Names of the variables an expression reads."""
    out: set[str] = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Var):
            out.add(x.name)
        stack.extend(_children(x))
    return out


def _var_lookup(env: Mapping):
    def get(x):
        try:
            return env[x.name]
        except KeyError:
            raise LayoutError(f"expression reads an unknown index {x.name!r}") from None
    return get


def evaluate(e: Expr, env: Mapping[str, np.ndarray]) -> np.ndarray:
    """Evaluate over numpy int64 arrays (all of one shape); shared subtrees are computed once."""
    get = _var_lookup(env)
    rules = {
        Var: lambda x: get(x),
        Const: lambda x: np.int64(x.value),
        Add: lambda x, a, b: a + b,
        Xor: lambda x, a, b: np.bitwise_xor(a, b),
        Mul: lambda x, a: a * np.int64(x.c),
        FloorDiv: lambda x, a: a // np.int64(x.c),
        Mod: lambda x, a: a % np.int64(x.c),
        And: lambda x, a: np.bitwise_and(a, np.int64(x.c)),
        Shr: lambda x, a: np.right_shift(a, np.int64(x.c)),
        Shl: lambda x, a: np.left_shift(a, np.int64(x.c)),
        Lookup: lambda x, i: x.values[i],
    }
    return fold(e, rules)


def evaluate_int(e: Expr, env: Mapping[str, int], memo: dict | None = None) -> int:
    """Evaluate at one point with exact Python integers (used to re-check witnesses)."""
    get = _var_lookup(env)
    return fold(e, {
        Var: lambda x: int(get(x)),
        Const: lambda x: x.value,
        Add: lambda x, a, b: a + b,
        Xor: lambda x, a, b: a ^ b,
        Mul: lambda x, a: a * x.c,
        FloorDiv: lambda x, a: a // x.c,
        Mod: lambda x, a: a % x.c,
        And: lambda x, a: a & x.c,
        Shr: lambda x, a: a >> x.c,
        Shl: lambda x, a: a << x.c,
        Lookup: lambda x, i: int(x.values[i]),
    }, memo)


def upper_bound(e: Expr, bounds: Mapping[str, int], memo: dict | None = None) -> int:
    """An upper bound (inclusive) of ``e`` when each variable ``v`` ranges over ``[0, bounds[v]]``.

    ``memo`` (optional) receives the bound of every sub-expression, keyed by ``id``.
    """
    return fold(e, {
        Var: lambda x: int(bounds[x.name]),
        Const: lambda x: x.value,
        Add: lambda x, a, b: a + b,
        Xor: lambda x, a, b: (1 << max(a, b).bit_length()) - 1,
        Mul: lambda x, a: a * x.c,
        FloorDiv: lambda x, a: a // x.c,
        Mod: lambda x, a: min(a, x.c - 1),
        And: lambda x, a: min(a, x.c),
        Shr: lambda x, a: a >> x.c,
        Shl: lambda x, a: a << x.c,
        Lookup: lambda x, i: int(x.values.max()) if len(x.values) else 0,
    }, memo)


def substitute(e: Expr, mapping: Mapping[str, Expr]) -> Expr:
    """Replace variables by expressions (used by composition)."""
    return fold(e, {
        Var: lambda x: mapping.get(x.name, x),
        Const: lambda x: x,
        Add: lambda x, a, b: a + b,
        Xor: lambda x, a, b: a ^ b,
        Mul: lambda x, a: a * x.c,
        FloorDiv: lambda x, a: a // x.c,
        Mod: lambda x, a: a % x.c,
        And: lambda x, a: a & x.c,
        Shr: lambda x, a: a >> x.c,
        Shl: lambda x, a: a << x.c,
        Lookup: lambda x, i: Lookup(i, x.values),
    })


def to_z3(e: Expr, env: Mapping[str, object], width: int):
    """Lower to a z3 bit-vector term of ``width`` bits; ``env`` maps variable names to z3 terms.

    All operations are unsigned (``UDiv``, ``URem``, ``LShR``). The caller picks ``width`` large
    enough (see :func:`upper_bound`) that no intermediate value wraps.
    """
    import z3

    def bv(v: int):
        return z3.BitVecVal(v, width)

    return fold(e, {
        Var: lambda x: env[x.name],
        Const: lambda x: bv(x.value),
        Add: lambda x, a, b: a + b,
        Xor: lambda x, a, b: a ^ b,
        Mul: lambda x, a: a * bv(x.c),
        FloorDiv: lambda x, a: z3.UDiv(a, bv(x.c)),
        Mod: lambda x, a: z3.URem(a, bv(x.c)),
        And: lambda x, a: a & bv(x.c),
        Shr: lambda x, a: z3.LShR(a, bv(x.c)),
        Shl: lambda x, a: a << bv(x.c),
        Lookup: lambda x, i: _z3_mux(i, [int(v) for v in x.values], width),
    })


def _z3_mux(index, values: list[int], width: int):
    """``values[index]`` as a balanced tree of ``If`` on the bits of ``index``."""
    import z3

    n = len(values)
    nbits = max(1, (n - 1).bit_length())
    level = [z3.BitVecVal(v, width) for v in values]
    level += [level[-1]] * ((1 << nbits) - n)
    for bit in range(nbits):
        sel = z3.Extract(bit, bit, index) == 1
        level = [z3.If(sel, level[i + 1], level[i]) for i in range(0, len(level), 2)]
    return level[0]


def max_intermediate(e: Expr, bounds: Mapping[str, int]) -> int:
    """Largest value any sub-expression of ``e`` can take (inclusive) under ``bounds``.

    A bit-vector lowering must not wrap at *any* node: ``(x * 7) % 3`` ends below 3 but its
    product does not.
    """
    memo: dict[int, int] = {}
    upper_bound(e, bounds, memo)
    return max(memo.values(), default=0)


def bit_width(exprs, bounds: Mapping[str, int], extra: int = 0) -> int:
    """A bit-vector width in which no node of any of ``exprs`` wraps (plus one spare bit), and
    that also holds every variable bound and ``extra``."""
    m = max([max_intermediate(e, bounds) for e in exprs] + [int(v) for v in bounds.values()] + [int(extra), 1])
    return m.bit_length() + 1
