"""CuTe layouts as CuTe C++ defines them: hierarchical ``Shape:Stride`` IntTuples.

An *IntTuple* is a Python ``int`` or a ``tuple`` of IntTuples (CuTe's ``cute::tuple``); a rank-1
tuple ``(8,)`` is distinct from the integer ``8``, exactly as in C++ (it prints as ``(8)``).

A :class:`CuteLayout` maps a coordinate to an offset. Its *1-D coordinate* (CuTe's natural,
"colexicographic" index) runs over ``[0, size)`` with the **first mode fastest**:
``idx = c0 + s0 * (c1 + s1 * (c2 + ...))``, recursively inside nested modes; the offset is
``sum(c_i * d_i)`` over the flattened modes.

**Static and dynamic integers.** A plain Python ``int`` is a *static* (compile-time) integer, as CuTe
prints ``_8``; a :class:`Dyn` is a *dynamic* (run-time) one, as CuTe prints ``8``. CuTe C++ runs some
algorithms differently for dynamic integers, and so do the functions here that take them:
``coalesce`` merges or drops a mode only when it can decide at compile time (static shapes and
strides), ``composition`` takes its shortcuts (a stride-0 or size-1 mode) and checks divisibility
only for static values (so dynamic ones keep size-1 modes C++ keeps), ``right_inverse`` ignores
dynamic strides, ``left_inverse`` requires static strides, ``compact_*`` give a size-1 mode
stride 0 only when the 1 is static, ``complement`` treats only a static stride 0 specially, allows
dynamic strides at rank 1 only, reports only a static zero shape as non-injective and coalesces its
rest shape static-with-static, dynamic-with-dynamic (so the divides and products, built from
``complement`` and ``composition``, follow C++ too). Arithmetic keeps CuTe's types:
static op static is static, anything with a dynamic operand is dynamic, except a static ``0``
times anything (``_0``). Other algebra refuses dynamic integers (:class:`UnsupportedError`)
rather than guess (see :data:`DYNAMIC_OPS` in the interpreter). :func:`fmt` prints plain integers,
:func:`cpp_fmt` prints as CuTe C++ does (``_8`` static, ``8`` dynamic).

Strides may be negative (``4:-1``); shapes are positive.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Union

import numpy as np

from layoutverify.core.errors import LayoutError, SizeLimitError, UnsupportedError

IntTuple = Union[int, tuple]

#: Largest size or cosize an intermediate CuTe layout may have (2^48).
MAX_EXTENT = 1 << 48
#: Largest number of leaf modes in one IntTuple.
MAX_LEAVES = 4096
#: Deepest IntTuple nesting accepted.
MAX_DEPTH = 64


# ---------------------------------------------------------------------------------------------
# Dynamic integers
# ---------------------------------------------------------------------------------------------
class Dyn(int):
    """A dynamic (run-time) CuTe integer: same value as an ``int``, printed without ``_`` by C++."""

    def __repr__(self):
        return f"Dyn({int(self)})"


def is_static(x) -> bool:
    """Whether every integer of ``x`` (an int or IntTuple) is static."""
    if is_tuple(x):
        return all(is_static(e) for e in x)
    return not isinstance(x, Dyn)


def has_dynamic(x) -> bool:
    """Whether a value (int, IntTuple, layout, or a tuple of them) holds a dynamic integer."""
    if isinstance(x, Dyn):
        return True
    if is_tuple(x):
        return any(has_dynamic(e) for e in x)
    if isinstance(x, CuteLayout):
        return not (is_static(x.shape) and is_static(x.stride))
    inner = getattr(x, "inner", None)            # ComposedLayout
    return isinstance(inner, CuteLayout) and has_dynamic(inner)


def _typed(value: int, *operands) -> int:
    return Dyn(value) if any(isinstance(o, Dyn) for o in operands) else int(value)


def mul(a: int, b: int) -> int:
    """CuTe's ``a * b``: static unless an operand is dynamic; ``_0 * x`` is ``_0``."""
    if (a == 0 and not isinstance(a, Dyn)) or (b == 0 and not isinstance(b, Dyn)):
        return 0
    return _typed(int(a) * int(b), a, b)


# ---------------------------------------------------------------------------------------------
# IntTuple helpers (C++ int_tuple.hpp / tuple_algorithms.hpp semantics, static integers)
# ---------------------------------------------------------------------------------------------
def is_tuple(x) -> bool:
    return isinstance(x, tuple)


def is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def leaves(x: IntTuple) -> list[int]:
    """The integers of an IntTuple in order (depth-first)."""
    if type(x) is tuple and all(type(e) is int for e in x):  # flat, plain ints: the common case
        return list(x)
    if type(x) is int:
        return [x]
    out: list[int] = []
    stack = [x]
    while stack:
        t = stack.pop()
        if is_tuple(t):
            stack.extend(reversed(t))
        else:
            out.append(t if isinstance(t, Dyn) else int(t))
    return out


def flatten(x: IntTuple) -> IntTuple:
    """C++ ``flatten``: an integer stays an integer, a tuple becomes a flat tuple."""
    return tuple(leaves(x)) if is_tuple(x) else x


def wrap(x: IntTuple) -> tuple:
    return x if is_tuple(x) else (x,)


def unwrap(x: IntTuple) -> IntTuple:
    while is_tuple(x) and len(x) == 1:
        x = x[0]
    return x


def rank(x: IntTuple) -> int:
    return len(x) if is_tuple(x) else 1


def depth(x: IntTuple) -> int:
    if not is_tuple(x):
        return 0
    return 1 + max((depth(e) for e in x), default=0)


def product(x: IntTuple) -> int:
    """C++ ``product``: static unless a factor is dynamic."""
    p = 1
    for v in leaves(x):
        p = mul(p, v)
    return p


def product_each(x: IntTuple) -> IntTuple:
    return tuple(product(e) for e in x) if is_tuple(x) else x


def congruent(a: IntTuple, b: IntTuple) -> bool:
    if is_tuple(a) != is_tuple(b):
        return False
    if not is_tuple(a):
        return True
    return len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b))


def ceil_div(a: IntTuple, b: IntTuple) -> IntTuple:
    """C++ ``ceil_div`` on IntTuples (tuple/int folds the divisor across the modes)."""
    if is_tuple(a):
        if is_tuple(b):
            if len(a) < len(b):
                raise LayoutError(f"ceil_div: mismatched ranks {fmt(a)} / {fmt(b)}")
            bb = tuple(b) + (1,) * (len(a) - len(b))
            return tuple(ceil_div(x, y) for x, y in zip(a, bb))
        result = []
        rest = b
        for ai in a:
            result.append(ceil_div(ai, rest))
            rest = ceil_div(rest, ai)
        return tuple(result)
    if is_tuple(b):
        return ceil_div(a, product(b))
    return (a + b - 1) // b


def shape_div(a: IntTuple, b: IntTuple) -> IntTuple:
    """C++ ``shape_div`` with its divisibility condition (``a % b == 0 or b % a == 0``)."""
    if is_tuple(a):
        if is_tuple(b):
            if len(a) != len(b):
                raise LayoutError(f"shape_div: mismatched ranks {fmt(a)} / {fmt(b)}")
            return tuple(shape_div(x, y) for x, y in zip(a, b))
        result = []
        rest = b
        for ai in a:
            result.append(shape_div(ai, rest))
            rest = shape_div(rest, ai)
        return tuple(result)
    if is_tuple(b):
        return shape_div(a, product(b))
    if a % b != 0 and b % a != 0:
        raise LayoutError(f"shape_div divisibility condition fails: {a} and {b} do not divide each other")
    return (a + b - 1) // b


def compact_left(shape: IntTuple, current: int = 1) -> tuple[IntTuple, int]:
    """C++ ``compact_major<LayoutLeft>``: column-major strides; size-1 modes get stride 0.

    Returns ``(stride, current * size)``."""
    if is_tuple(shape):
        out = []
        for s in shape:
            d, current = compact_left(s, current)
            out.append(d)
        return tuple(out), current
    if shape == 1 and not isinstance(shape, Dyn):      # a static 1 only (C++ is_constant<1>)
        return 0, current
    return current, mul(current, shape)


def compact_right(shape: IntTuple, current: int = 1) -> tuple[IntTuple, int]:
    """C++ ``compact_major<LayoutRight>``: row-major strides (last mode fastest)."""
    if is_tuple(shape):
        out = []
        for s in reversed(shape):
            d, current = compact_right(s, current)
            out.append(d)
        return tuple(reversed(out)), current
    if shape == 1 and not isinstance(shape, Dyn):
        return 0, current
    return current, mul(current, shape)


def fmt(x) -> str:
    """Print an IntTuple as CuTe does, without the ``_`` of static integers: ``((2,4),8)``."""
    if is_tuple(x):
        return "(" + ",".join(fmt(e) for e in x) + ")"
    return str(int(x))


def cpp_fmt(x) -> str:
    """Print an IntTuple as CuTe C++ does: ``_8`` static, ``8`` dynamic, ``_-1`` static negative."""
    if is_tuple(x):
        return "(" + ",".join(cpp_fmt(e) for e in x) + ")"
    return str(int(x)) if isinstance(x, Dyn) else f"_{int(x)}"


def check_inttuple(x, what: str = "shape") -> IntTuple:
    """Validate an IntTuple's structure and limits; returns it with plain ``int`` leaves."""
    def walk(t, d):
        if d > MAX_DEPTH:
            raise LayoutError(f"{what} is nested deeper than {MAX_DEPTH} levels")
        if is_tuple(t):
            if len(t) == 0:
                raise LayoutError(f"empty tuple () in {what}")
            return tuple(walk(e, d + 1) for e in t)
        if not is_int(t):
            raise LayoutError(f"{what} entries must be integers, got {t!r}")
        return t if isinstance(t, Dyn) else int(t)
    out = walk(x, 0)
    if len(leaves(out)) > MAX_LEAVES:
        raise LayoutError(f"{what} has more than {MAX_LEAVES} modes")
    return out


# ---------------------------------------------------------------------------------------------
class CuteLayout:
    """A CuTe ``Layout<Shape,Stride>``: coordinate -> offset (see the module docstring)."""

    __slots__ = ("shape", "stride")

    def __init__(self, shape: IntTuple, stride: IntTuple | None = None):
        shape = check_inttuple(shape, "shape")
        if stride is None:
            stride = compact_left(shape)[0]
        stride = check_inttuple(stride, "stride")
        if not congruent(shape, stride):
            raise LayoutError(f"shape {fmt(shape)} and stride {fmt(stride)} do not have the same profile "
                              f"(rank {rank(shape)} vs {rank(stride)})")
        for s in leaves(shape):
            if s < 1:
                raise LayoutError(f"shape {fmt(shape)} has a mode of size {s}; sizes must be positive")
        self.shape = shape
        self.stride = stride
        if self.size() > MAX_EXTENT or self.cosize() > MAX_EXTENT:
            raise SizeLimitError(f"layout {self} has more than 2^48 elements or offsets")

    @classmethod
    def _valid(cls, shape: IntTuple, stride: IntTuple) -> "CuteLayout":
        """A layout from parts already checked: a mode of a checked layout (its sizes and offsets
        are within the whole layout's, so every check of ``__init__`` holds)."""
        lay = object.__new__(cls)
        lay.shape, lay.stride = shape, stride
        return lay

    # -- structure ---------------------------------------------------------------------------
    def __eq__(self, other):
        return isinstance(other, CuteLayout) and self.shape == other.shape and self.stride == other.stride

    def __hash__(self):
        return hash((self.shape, self.stride))

    def __str__(self):
        return f"{fmt(self.shape)}:{fmt(self.stride)}"

    __repr__ = __str__

    def cpp_str(self) -> str:
        """As CuTe C++ prints it (``(_4,2):(_1,_4)``: static ``_N``, dynamic ``N``)."""
        return f"{cpp_fmt(self.shape)}:{cpp_fmt(self.stride)}"

    def rank(self) -> int:
        """The number of top-level modes."""
        return rank(self.shape)

    def mode(self, i: int) -> "CuteLayout":
        """C++ ``get<i>(layout)`` / ``layout<i>(layout)``: a top-level mode as a layout."""
        if is_tuple(self.shape):
            if not 0 <= i < len(self.shape):
                raise LayoutError(f"mode {i} of {self}: it has only {len(self.shape)} modes")
            return CuteLayout._valid(self.shape[i], self.stride[i])
        if i != 0:
            raise LayoutError(f"mode {i} of rank-1 layout {self}")
        return self

    def modes(self) -> list["CuteLayout"]:
        """The top-level modes, each as a layout."""
        return [self.mode(i) for i in range(self.rank())]

    def flat_modes(self) -> list[tuple[int, int]]:
        """``(size, stride)`` of every leaf mode, first mode first (= fastest in the 1-D index)."""
        return list(zip(leaves(self.shape), leaves(self.stride)))

    def size(self) -> int:
        """C++ ``size``: the number of 1-D coordinates (the product of the shape)."""
        return product(self.shape)

    def cosize(self) -> int:
        """C++ ``cosize``: ``1 + sum((s - 1) * d)`` over the leaf modes."""
        return 1 + sum((s - 1) * d for s, d in self.flat_modes())

    # -- evaluation --------------------------------------------------------------------------
    def __call__(self, idx: int) -> int:
        """Offset of the 1-D coordinate ``idx`` (first mode fastest)."""
        off = 0
        for s, d in self.flat_modes():
            off += (idx % s) * d
            idx //= s
        return off

    def offsets(self) -> np.ndarray:
        """Offsets of every 1-D coordinate ``0 .. size-1``."""
        n = self.size()
        from layoutverify.core.layout import MAX_TABLE_LOCATIONS
        if n > MAX_TABLE_LOCATIONS:
            raise SizeLimitError(f"layout {self} has {n} coordinates, more than the table limit {MAX_TABLE_LOCATIONS}")
        idx = np.arange(n, dtype=np.int64)
        off = np.zeros(n, dtype=np.int64)
        for s, d in self.flat_modes():
            off += (idx % s) * d
            idx //= s
        return off

    def iter_modes(self) -> Iterator["CuteLayout"]:
        """Iterate over the top-level modes (as :meth:`modes`)."""
        yield from self.modes()


@dataclass(frozen=True)
class Underscore:
    """CuTe's ``_``: keep a mode as it is (in tilers and slices)."""

    def __str__(self):
        return "_"


UNDERSCORE = Underscore()


def make_layout(*layouts: CuteLayout) -> CuteLayout:
    """C++ ``make_layout(L0, L1, ...)``: concatenate layouts as the modes of a new one
    (one argument wraps it into a rank-1 tuple, as C++ does)."""
    for l in layouts:
        if not isinstance(l, CuteLayout):
            raise LayoutError(f"make_layout concatenates layouts; got {l}")
    return CuteLayout(tuple(l.shape for l in layouts), tuple(l.stride for l in layouts))


def compact_layout(shape: IntTuple, major: str = "left") -> CuteLayout:
    """``make_layout(shape)`` (column-major, CuTe's default ``LayoutLeft``) or ``LayoutRight``."""
    shape = check_inttuple(shape, "shape")
    if major == "left":
        return CuteLayout(shape, compact_left(shape)[0])
    return CuteLayout(shape, compact_right(shape)[0])
