"""Evaluate parsed CuTe text (:mod:`.parser`) into values: integers, IntTuples, tilers, layouts,
composed (swizzled) layouts, swizzles and TV layouts of atoms.

Functions (CuTe C++ names; ``cute::`` prefixes are accepted):

=================================  =========================================================
``composition(A, B)``              ``A o B``; ``B`` a layout or a tiler
``coalesce(L[, profile])``         also ``filter(L[, profile])``, ``filter_zeros(L)``
``complement(L[, cotarget])``      ``cotarget`` an integer or a shape
``right_inverse(L)``, ``left_inverse(L)``
``logical_divide(L, T)``           also ``zipped_``/``tiled_``/``flat_divide``
``logical_product(L, T)``          also ``zipped_``/``tiled_``/``flat_product``
``blocked_product(A, B)``          also ``raked_product``
``make_layout(...)``               ``(shape)``, ``(shape, stride)``, ``(shape, LayoutRight)``, or
                                   layouts to concatenate
``make_tile(...)``                 a tiler tuple; ``(a, b)`` means the same
``tile_to_shape(L, shape)``        ``[, GenRowMajor]``
``upcast<N>(L)``, ``downcast<N>(L)``
``get<i>(L)`` / ``layout<i>(L)``   a top-level mode (``get<i,j>`` nests)
``Sw<B,M,S>`` / ``Swizzle<B,M,S>`` a swizzle (compose it: ``Sw<3,4,3> o L``)
``GMMA::Layout_K_SW128_Atom<T>``   GMMA shared-memory layout atoms (K / MN, INTER / SW32 / SW64 / SW128)
``NAME.OP`` / ``mma_atom(NAME, OP)``   TV layout of an MMA atom's operand A, B or C
``NAME.OP`` / ``copy_atom(NAME, OP)``  TV layout of a copy atom's Src or Dst (``bits=16``)
``tiled_mma(NAME, AtomLayout, OP[, tile=(M,N,K)])``  an atom tiled over threads (and values)
=================================  =========================================================
"""
from __future__ import annotations

import json
import re

from layoutverify.core.errors import LayoutError, ParseError, UnsupportedError

from . import algebra as A
from .atoms import CopyAtom, MmaAtom, find_atom, smem_atom, smem_atom_names, type_bits
from .layout import (MAX_EXTENT, MAX_LEAVES, UNDERSCORE, CuteLayout, Dyn, Underscore, check_inttuple, compact_layout,
                     has_dynamic, is_int, is_tuple, make_layout)
from .parser import BasisLit, Chain, LayoutLit, Name, Node, Num, Smem, Tup, Under, parse_text
from .swizzle import ComposedLayout, Swizzle, make_swizzle
from .tv import TVLayout, copy_tv, mma_tv, tiled_mma


class SmemFlag:
    """CuTe's ``smem_ptr[Nb](unset)`` offset placeholder."""

    def __init__(self, bits: int):
        self.bits = bits

    def __str__(self):
        return f"smem_ptr[{self.bits}b](unset)"


#: functions that follow CuTe C++'s static/dynamic integer rules (see :mod:`.layout`); the others
#: refuse dynamic integers rather than give C++'s static answer for a dynamic input
DYNAMIC_OPS = {"coalesce", "composition", "right_inverse", "left_inverse", "make_layout", "compact_col_major",
               "compact_row_major", "get", "layout", "complement", "logical_divide", "zipped_divide",
               "tiled_divide", "flat_divide", "logical_product", "zipped_product", "tiled_product", "flat_product",
               "blocked_product", "raked_product", "tile_to_shape", "upcast", "downcast", "filter"}

_STATIC_LITERAL = re.compile(r"(?<![A-Za-z0-9_])_-?[0-9]")


_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")


def uses_cpp_integers(text: str) -> bool:
    """Whether ``text`` writes integers as CuTe C++ prints them: some static ``_N`` outside C++
    template arguments (``Step<_2,_1>`` is a type, always static). Then a bare ``N`` is a dynamic
    integer, as in C++'s print; otherwise every integer is static (pycute's and layoutverify's
    plain print)."""
    prev = None
    while prev != text:                       # drop template arguments, innermost first
        prev, text = text, _TEMPLATE_ARGS.sub("", text)
    return bool(_STATIC_LITERAL.search(text))


class Interpreter:
    """Evaluates a parsed CuTe expression (:mod:`.parser`) into CuTe values (layouts, swizzles,
    composed layouts, atoms, TV layouts) with the algebra of :mod:`.algebra`; ``dynamic`` makes bare
    integers dynamic (C++ runtime values)."""
    def __init__(self, text: str, *, bits: int = 16, dynamic: bool | None = None):
        self.text = text
        self.bits = bits
        self.dynamic = uses_cpp_integers(text) if dynamic is None else dynamic

    def error(self, msg, node: Node, token: str | None = None) -> LayoutError:
        """A ParseError at ``node``; a more specific LayoutError (size limit, unsupported, not
        invertible) keeps its type and gains the position."""
        if token is None:
            token = self.text[node.col - 1:node.col - 1 + 24].split(",")[0].split(")")[0] or "?"
        if isinstance(msg, LayoutError):
            if type(msg) not in (LayoutError, ParseError):
                return type(msg)(f"{msg} (at column {node.col})")
            msg = str(msg)
        return ParseError(msg, self.text, node.col, token)

    # -- values ------------------------------------------------------------------------------
    def eval(self, node: Node):
        """The value of a node (numbers, tuples, ``shape:stride`` literals, ``o`` chains, names and calls)."""
        if isinstance(node, Num):
            return Dyn(node.value) if self.dynamic and not node.static else node.value
        if isinstance(node, Under):
            return UNDERSCORE
        if isinstance(node, BasisLit):
            raise self.error("a scaled basis element (v@i) is only a stride of a coordinate layout, "
                             "as in (4,8):(_1@0,_1@1)", node)
        if isinstance(node, Smem):
            return SmemFlag(node.bits)
        if isinstance(node, Tup):
            return tuple(self.eval(x) for x in node.items)
        if isinstance(node, LayoutLit):
            if _has_basis(node.stride):
                return self.coord_layout(node)
            shape = self.inttuple(node.shape, "shape")
            stride = self.inttuple(node.stride, "stride")
            try:
                return CuteLayout(shape, stride)
            except LayoutError as e:
                raise self.error(e, node) from None
        if isinstance(node, Chain):
            return self.chain(node)
        if isinstance(node, Name):
            return self.named(node)
        raise self.error("unexpected expression", node)  # pragma: no cover

    def coord_layout(self, node: LayoutLit):
        """``shape:stride`` with ScaledBasis strides (``(4,8):(_1@0,_1@1)``): a coordinate layout."""
        from .coord import Basis, CoordLayout

        def strides(n):
            if isinstance(n, BasisLit):
                return Basis(n.value, tuple(n.path), n.static)
            if isinstance(n, Tup):
                return tuple(strides(x) for x in n.items)
            if isinstance(n, Num):
                return n.value
            raise self.error("the stride of a coordinate layout is scaled basis elements v@i", n)
        shape = self.inttuple(node.shape, "shape")
        try:
            return CoordLayout(_plain_ints(shape), strides(node.stride))
        except LayoutError as e:
            raise self.error(e, node) from None

    def inttuple(self, node: Node, what: str):
        """The value of a node that must be an IntTuple (the shape or stride of a layout literal)."""
        v = self.eval(node)
        if not _is_inttuple(v):
            raise self.error(f"the {what} of a layout must be integers or tuples of integers", node)
        return v

    def chain(self, node: Chain):
        """``outer o [offset o] inner``: a composed layout (a swizzle or layout over an inner layout,
        with an optional offset or smem pointer type)."""
        vals = [self.eval(p) for p in node.parts]
        if len(vals) == 3:
            outer, off, inner = vals
            bits = None
            if isinstance(off, SmemFlag):
                bits, off = off.bits, 0
            elif not is_int(off):
                raise self.error("the middle of 'A o offset o B' must be an integer offset", node.parts[1])
        elif len(vals) == 2:
            outer, inner = vals
            off, bits = 0, None
        else:
            raise self.error("a composed layout is 'A o B' or 'A o offset o B'", node)
        inner = self.as_layout(inner, node.parts[-1])
        if not isinstance(outer, (Swizzle, CuteLayout)):
            raise self.error("the left part of 'A o offset o B' must be a swizzle or a layout", node.parts[0])
        try:
            return ComposedLayout(outer, int(off), inner, bits)
        except LayoutError as e:
            raise self.error(e, node) from None

    def as_layout(self, v, node: Node):
        """A layout value; a bare shape becomes CuTe's compact column-major layout."""
        if isinstance(v, (CuteLayout, ComposedLayout)):
            return v
        if _is_inttuple(v):
            try:
                return compact_layout(v)
            except LayoutError as e:
                raise self.error(e, node) from None
        raise self.error(f"expected a layout, got {_describe(v)}", node)

    # -- names and calls -----------------------------------------------------------------------
    def named(self, node: Name):
        """A name, or a call of a CuTe function by name (``composition(a, b)``), with its template and
        keyword arguments."""
        name = node.name
        short = name.split("::")[-1]
        if node.args is None:
            return self.bare_name(node, short)
        fn = _FUNCTIONS.get(short)
        if fn is None:
            raise self.error(f"unknown CuTe function {name!r}", node, name)
        args = [self.eval(a) for a in node.args]
        kwargs = {k: (self.eval(v), v) for k, v in node.kwargs.items()}
        if short not in DYNAMIC_OPS and any(has_dynamic(a) for a in args + [v for v, _ in kwargs.values()]):
            raise self.error(UnsupportedError(
                f"{short} with dynamic (run-time) integers is not modelled: CuTe C++ runs it differently than "
                f"for static ones; modelled: {', '.join(sorted(DYNAMIC_OPS))} (write _N for static integers)"),
                node, name)
        try:
            out = fn(self, node, args, kwargs)
        except ParseError:
            raise
        except LayoutError as e:
            if type(e) not in (LayoutError, ParseError):
                raise self.error(e, node, name) from None
            raise self.error(f"{short}: {e}", node, name) from None
        return self.attr(node, out)

    def attr(self, node: Name, val):
        """``NAME.ATTR`` applies to atom names only: the value unchanged, or an error at the attribute."""
        if node.attr is None:
            return val
        raise ParseError(f"'.{node.attr}' applies to an atom name", self.text, node.attr_col, node.attr)

    def bare_name(self, node: Name, short: str):
        """A name without a call: a swizzle ``Sw<B,M,S>``, ``_`` / ``LayoutLeft`` markers, or an MMA or
        copy atom (with its operand)."""
        if short in ("Sw", "Swizzle", "S"):       # S<B,M,S>: the CuTe DSL's print of a swizzle
            if len(node.targs) != 3 or not all(isinstance(t, Num) for t in node.targs):
                raise self.error("a swizzle is Sw<B,M,S> with three integers", node, node.name)
            try:
                return self.attr(node, Swizzle(*(t.value for t in node.targs)))
            except LayoutError as e:
                raise self.error(e, node, node.name) from None
        if short in smem_atom_names():
            if len(node.targs) != 1:
                raise self.error(f"{short} takes one element type, e.g. {short}<half_t>", node, node.name)
            t = node.targs[0]
            bits = t.value if isinstance(t, Num) else None
            if bits is None:
                try:
                    bits = type_bits(t.name)
                except LayoutError as e:
                    raise self.error(e, t, t.name) from None
            try:
                return self.attr(node, smem_atom(short, bits))
            except LayoutError as e:
                raise self.error(e, node, node.name) from None
        atom = find_atom(short)
        if atom is not None:
            if node.attr is None:
                return atom
            return self.atom_operand(atom, node.attr, node, col=node.attr_col)
        if short in _CPP_TYPES and node.targs:
            try:
                return self.attr(node, self.cpp_type(node))
            except LayoutError as e:
                raise self.error(e, node, node.name) from None
        if node.targs:
            raise self.error(f"unknown CuTe template {node.name!r}", node, node.name)
        if short in _KEYWORDS:
            return _Keyword(short)
        raise self.error(f"unknown name {node.name!r} (not a CuTe function, atom or layout)", node, node.name)

    def cpp_type(self, node):
        """C++ type spellings: ``Int<N>``, ``Shape<...>``, ``Stride<...>``, ``Step<...>``,
        ``Tile<...>``, ``Layout<Shape, Stride>``."""
        if isinstance(node, Num):
            return node.value
        if isinstance(node, Under):
            return UNDERSCORE
        short = node.name.split("::")[-1]
        if short in ("Int", "C"):
            if len(node.targs) != 1 or not isinstance(node.targs[0], Num):
                raise LayoutError("Int<N> takes one integer")
            return node.targs[0].value
        if short in ("Shape", "Stride", "Step", "Tile", "Coord"):
            return tuple(self.cpp_type(t) for t in node.targs)
        if short == "Layout":
            if not 1 <= len(node.targs) <= 2:
                raise LayoutError("Layout<Shape, Stride> takes one or two template arguments")
            shape = self.cpp_type(node.targs[0])
            if not _is_inttuple(shape):
                raise LayoutError("the shape of Layout<...> must be integers")
            if len(node.targs) == 1:
                return compact_layout(shape)
            stride = self.cpp_type(node.targs[1])
            return CuteLayout(shape, stride)
        if short in ("Sw", "Swizzle"):
            return Swizzle(*(self.cpp_type(t) for t in node.targs))
        raise LayoutError(f"unknown C++ type {node.name!r} in template arguments")

    def atom_operand(self, atom, operand: str, node: Node, bits: int | None = None, col: int | None = None):
        """The thread/value layout of an atom's operand (``A``/``B``/``C`` of an MMA atom,
        ``Src``/``Dst`` of a copy atom)."""
        if col is not None:
            node = Name(col, operand)
        if isinstance(atom, MmaAtom):
            op = operand.upper() if operand.upper() in ("A", "B", "C") else operand
            if op == "D":
                op = "C"
            if op not in ("A", "B", "C"):
                raise self.error(f"MMA operand must be A, B or C, got {operand!r}", node, operand)
            try:
                return mma_tv(atom, op)
            except LayoutError as e:
                raise self.error(e, node, operand) from None
        if isinstance(atom, CopyAtom):
            op = {"src": "Src", "dst": "Dst", "s": "Src", "d": "Dst"}.get(operand.lower())
            if op is None:
                raise self.error(f"copy atom operand must be Src or Dst, got {operand!r}", node, operand)
            return copy_tv(atom, op, bits if bits is not None else self.bits)
        raise self.error(f"{atom} is not an atom", node)


class _Keyword(str):
    """A bare identifier used as an argument (an operand name, LayoutRight, ...)."""


_CPP_TYPES = {"Int", "C", "Shape", "Stride", "Step", "Tile", "Coord", "Layout"}
_KEYWORDS = {"A", "B", "C", "D", "Src", "Dst", "LayoutLeft", "LayoutRight", "GenColMajor", "GenRowMajor"}


def _has_basis(node: Node) -> bool:
    if isinstance(node, BasisLit):
        return True
    return isinstance(node, Tup) and any(_has_basis(x) for x in node.items)


def _plain_ints(v):
    return tuple(_plain_ints(e) for e in v) if is_tuple(v) else int(v)


def _is_inttuple(v) -> bool:
    if is_int(v):
        return True
    return is_tuple(v) and all(_is_inttuple(e) for e in v)


def _describe(v) -> str:
    if isinstance(v, TVLayout):
        return f"the TV layout {v}"
    if isinstance(v, (MmaAtom, CopyAtom)):
        return f"the atom {v.name}"
    if isinstance(v, Swizzle):
        return f"the swizzle {v}"
    if isinstance(v, Underscore):
        return "_"
    if is_tuple(v):
        return "a tiler " + A.fmt_tiler(v)
    return str(v)


# ---------------------------------------------------------------------------------------------
# functions: fn(interp, node, args, kwargs) -> value
# ---------------------------------------------------------------------------------------------
def _nargs(node, args, lo, hi=None, kwargs=None, allowed=()):
    hi = lo if hi is None else hi
    if not lo <= len(args) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise LayoutError(f"takes {want} argument(s), got {len(args)}")
    for k in (kwargs or {}):
        if k not in allowed:
            raise LayoutError(f"unknown keyword argument {k!r}")


def _layout_arg(it, node, v, i):
    return it.as_layout(v, node.args[i])


def _tiler_arg(v):
    """A tiler: a layout, an integer, ``_`` or a tuple of tilers (IntTuples are tuples of ints)."""
    if isinstance(v, (CuteLayout, Underscore)) or is_int(v):
        return v
    if is_tuple(v):
        return tuple(_tiler_arg(e) for e in v)
    raise LayoutError(f"not a tiler: {_describe(v)}")


def _unary(op):
    def f(it, node, args, kwargs):
        _nargs(node, args, 1, kwargs=kwargs)
        return op(_layout_arg(it, node, args[0], 0))
    return f


def _binary_tiler(op):
    def f(it, node, args, kwargs):
        _nargs(node, args, 2, kwargs=kwargs)
        return op(_layout_arg(it, node, args[0], 0), _tiler_arg(args[1]))
    return f


def _f_composition(it, node, args, kwargs):
    _nargs(node, args, 2, kwargs=kwargs)
    a = args[0]
    if not isinstance(a, Swizzle):
        a = _layout_arg(it, node, a, 0)
    b = args[1]
    if isinstance(a, Swizzle):
        b = _layout_arg(it, node, b, 1)
    elif not isinstance(b, ComposedLayout):
        b = _tiler_arg(b)
    return A.composition(a, b)


def _f_coalesce(op):
    def f(it, node, args, kwargs):
        _nargs(node, args, 1, 2, kwargs=kwargs)
        lay = _layout_arg(it, node, args[0], 0)
        if len(args) == 2:
            if not _is_inttuple(args[1]):
                raise LayoutError("the profile must be an IntTuple")
            return op(lay, args[1])
        return op(lay)
    return f


def _f_complement(it, node, args, kwargs):
    _nargs(node, args, 1, 2, kwargs=kwargs)
    lay = _layout_arg(it, node, args[0], 0)
    if len(args) == 2:
        cot = args[1]
        if isinstance(cot, CuteLayout):
            cot = cot.shape
        if not _is_inttuple(cot):
            raise LayoutError("the cotarget must be an integer or a shape")
        return A.complement(lay, check_inttuple(cot, "cotarget"))
    return A.complement(lay)


def _f_product2(op):
    def f(it, node, args, kwargs):
        _nargs(node, args, 2, kwargs=kwargs)
        return op(_layout_arg(it, node, args[0], 0), _layout_arg(it, node, args[1], 1))
    return f


def _f_make_layout(it, node, args, kwargs):
    _nargs(node, args, 1, 16, kwargs=kwargs)
    if all(isinstance(a, CuteLayout) for a in args):
        return make_layout(*args)
    if len(args) == 1 and _is_inttuple(args[0]):
        return compact_layout(args[0])
    if len(args) == 2 and _is_inttuple(args[0]):
        if isinstance(args[1], _Keyword) and args[1] in ("LayoutLeft", "GenColMajor", "LayoutRight", "GenRowMajor"):
            return compact_layout(args[0], "left" if args[1] in ("LayoutLeft", "GenColMajor") else "right")
        if _is_inttuple(args[1]):
            return CuteLayout(args[0], args[1])
    raise LayoutError("make_layout takes a shape, a shape and a stride (or LayoutLeft/LayoutRight), or layouts "
                      "to concatenate")


def _f_compact(major: str):
    def f(it, node, args, kwargs):
        _nargs(node, args, 1, 1, kwargs=kwargs)
        if not _is_inttuple(args[0]):
            raise LayoutError(f"compact_{major}_major takes a shape")
        return compact_layout(args[0], "left" if major == "col" else "right")
    return f


def _f_make_swizzle(it, node, args, kwargs):
    """C++ ``make_swizzle<Y, Z>()`` (see :func:`.swizzle.make_swizzle`)."""
    _nargs(node, args, 0, 0, kwargs=kwargs)
    if len(node.targs) != 2 or not all(isinstance(t, Num) for t in node.targs):
        raise LayoutError("make_swizzle<Y, Z>() takes two integer masks (e.g. make_swizzle<8, 4>())")
    y, z = (t.value for t in node.targs)
    sw = make_swizzle(y, z)
    return sw if sw is not None else Swizzle(0, 0, 0)


def _f_make_tile(it, node, args, kwargs):
    _nargs(node, args, 1, 16, kwargs=kwargs)
    return tuple(_tiler_arg(a) for a in args)


def _f_tile_to_shape(it, node, args, kwargs):
    _nargs(node, args, 2, 3, kwargs=kwargs)
    block = _layout_arg(it, node, args[0], 0)
    shape = args[1].shape if isinstance(args[1], CuteLayout) else args[1]
    if not _is_inttuple(shape):
        raise LayoutError("the target shape must be an IntTuple")
    order = "left"
    if len(args) == 3:
        if isinstance(args[2], _Keyword) and args[2] in ("LayoutRight", "GenRowMajor"):
            order = "right"
        elif isinstance(args[2], _Keyword) and args[2] in ("LayoutLeft", "GenColMajor"):
            order = "left"
        elif _is_inttuple(args[2]) and is_tuple(args[2]):
            order = args[2]
        else:
            raise LayoutError("the mode order must be GenColMajor, GenRowMajor or a Step<...> such as Step<_2,_1>")
    return A.tile_to_shape(block, check_inttuple(shape), order)


def _targ_ints(node, n=None):
    vals = []
    for t in node.targs:
        if not isinstance(t, Num):
            raise LayoutError("template arguments must be integers here")
        vals.append(t.value)
    if n is not None and len(vals) != n:
        raise LayoutError(f"takes {n} template argument(s)")
    return vals


def _f_cast(op):
    def f(it, node, args, kwargs):
        _nargs(node, args, 1, kwargs=kwargs)
        (n,) = _targ_ints(node, 1)
        if n < 1 or n & (n - 1):
            raise LayoutError(f"N must be a positive power of two, got {n}")
        return op(_layout_arg(it, node, args[0], 0), n)
    return f


def _f_get(it, node, args, kwargs):
    _nargs(node, args, 1, kwargs=kwargs)
    idx = _targ_ints(node)
    if not idx:
        raise LayoutError("get<i>(L) needs a mode index")
    lay = _layout_arg(it, node, args[0], 0)
    for i in idx:
        lay = lay.mode(i)
    return lay


def _operand_arg(v) -> str:
    if isinstance(v, _Keyword) or isinstance(v, str):
        return str(v)
    raise LayoutError(f"expected an operand name (A, B, C, Src, Dst), got {_describe(v)}")


def _f_mma_atom(it, node, args, kwargs):
    _nargs(node, args, 2, kwargs=kwargs)
    atom = args[0]
    if not isinstance(atom, MmaAtom):
        raise LayoutError(f"expected an MMA atom name, got {_describe(atom)}")
    return it.atom_operand(atom, _operand_arg(args[1]), node)


def _f_partition(operand: str):
    """``partition_A(ATOM, sA)`` / ``partition_B(ATOM, sB)``: C++ ``ThrMMA::partition_A/B`` of a
    shared-memory tensor for a GMMA ``_SS`` atom (both operands read through shared-memory
    descriptors; every thread of the warpgroup sees the whole ``M x K`` / ``N x K`` atom tile, so the
    slice of any thread is the same). The result is ``((AtomM, AtomK), RestM, RestK)`` over the
    operand's memory: ``zipped_divide(sA, (AtomM, AtomK))`` with the rest modes unpacked, a memory
    layout (offset -> partition coordinate) whose swizzle stays that of ``sA``. One atom per tiled
    MMA (atom layout (1,1,1)), as a bare atom names it."""
    def f(it, node, args, kwargs):
        _nargs(node, args, 2, 2, kwargs=kwargs)
        atom, smem = args
        if not isinstance(atom, MmaAtom):
            raise LayoutError(f"partition_{operand} takes an MMA atom first, got {_describe(atom)}")
        if getattr(atom, operand) is not None:
            raise UnsupportedError(f"{atom.name} holds {operand} in registers (an _RS atom); partition_{operand} "
                                   f"of shared memory is modelled for operands read from shared memory (_SS)")
        if not isinstance(smem, (CuteLayout, ComposedLayout)):
            raise LayoutError(f"partition_{operand} takes a shared-memory layout second, got {_describe(smem)}")
        m, n, k = atom.shape_mnk
        tile = (m, k) if operand == "A" else (n, k)
        inner = smem.inner if isinstance(smem, ComposedLayout) else smem
        if inner.rank() != 2:
            raise LayoutError(f"partition_{operand}: the shared-memory layout must be 2-D "
                              f"({'M' if operand == 'A' else 'N'} x K), got rank {inner.rank()}")
        z = A.zipped_divide(smem, tile)
        zl = z.inner if isinstance(z, ComposedLayout) else z
        atom_mode, rest = zl.mode(0), zl.mode(1)
        flat = CuteLayout((atom_mode.shape,) + tuple(rest.shape), (atom_mode.stride,) + tuple(rest.stride))
        return z.with_inner(flat) if isinstance(z, ComposedLayout) else flat
    return f


def _f_copy_atom(it, node, args, kwargs):
    _nargs(node, args, 2, kwargs=kwargs, allowed=("bits",))
    atom = args[0]
    if not isinstance(atom, CopyAtom):
        raise LayoutError(f"expected a copy atom name, got {_describe(atom)}")
    bits = None
    if "bits" in kwargs:
        bits = kwargs["bits"][0]
        if not is_int(bits):
            raise LayoutError("bits must be an integer")
    return it.atom_operand(atom, _operand_arg(args[1]), node, bits)


def _f_tiled_mma(it, node, args, kwargs):
    _nargs(node, args, 2, 3, kwargs=kwargs, allowed=("tile", "operand"))
    atom = args[0]
    if not isinstance(atom, MmaAtom):
        raise LayoutError(f"expected an MMA atom name, got {_describe(atom)}")
    lay = args[1]
    if _is_inttuple(lay):
        lay = compact_layout(lay)
    if not isinstance(lay, CuteLayout):
        raise LayoutError(f"the atom layout must be a shape like (2,2,1) or a layout, got {_describe(lay)}")
    if len(args) == 3:
        op = _operand_arg(args[2])
    elif "operand" in kwargs:
        op = _operand_arg(kwargs["operand"][0])
    else:
        op = "C"
    op = "C" if op == "D" else op
    perms = (UNDERSCORE,) * 3
    if "tile" in kwargs:
        t = kwargs["tile"][0]
        if not is_tuple(t):
            raise LayoutError("tile=(M, N[, K]) takes a tuple of tile sizes, layouts or _")
        if len(t) > 3:
            raise LayoutError("tile=(M, N, K) has at most three entries")
        perms = tuple(_tiler_arg(x) for x in t) + (UNDERSCORE,) * (3 - len(t))
    return tiled_mma(atom, lay, op, perms)


_FUNCTIONS = {
    "composition": _f_composition,
    "coalesce": _f_coalesce(A.coalesce),
    "filter": _f_coalesce(A.filter_layout),
    "filter_zeros": _unary(A.filter_zeros),
    "complement": _f_complement,
    "right_inverse": _unary(A.right_inverse),
    "left_inverse": _unary(A.left_inverse),
    "logical_divide": _binary_tiler(A.logical_divide),
    "zipped_divide": _binary_tiler(A.zipped_divide),
    "tiled_divide": _binary_tiler(A.tiled_divide),
    "flat_divide": _binary_tiler(A.flat_divide),
    "logical_product": _binary_tiler(A.logical_product),
    "zipped_product": _binary_tiler(A.zipped_product),
    "tiled_product": _binary_tiler(A.tiled_product),
    "flat_product": _binary_tiler(A.flat_product),
    "blocked_product": _f_product2(A.blocked_product),
    "raked_product": _f_product2(A.raked_product),
    "make_layout": _f_make_layout,
    "compact_col_major": _f_compact("col"),
    "compact_row_major": _f_compact("row"),
    "make_swizzle": _f_make_swizzle,
    "partition_A": _f_partition("A"),
    "partition_B": _f_partition("B"),
    "make_tile": _f_make_tile,
    "tile_to_shape": _f_tile_to_shape,
    "upcast": _f_cast(A.upcast),
    "downcast": _f_cast(A.downcast),
    "get": _f_get,
    "layout": _f_get,
    "mma_atom": _f_mma_atom,
    "copy_atom": _f_copy_atom,
    "tiled_mma": _f_tiled_mma,
    "make_tiled_mma": _f_tiled_mma,
}

FUNCTION_NAMES = sorted(_FUNCTIONS)


def evaluate(node: Node, text: str, *, bits: int = 16, dynamic: bool | None = None):
    return Interpreter(text, bits=bits, dynamic=dynamic).eval(node)


#: ``(s0,s1,...):(d0,d1,...)`` with two or more plain integers a side (up to 9 digits each)
_FLAT = re.compile(r"\(\s*((?:0|[1-9][0-9]{0,8})(?:\s*,\s*(?:0|[1-9][0-9]{0,8}))+)\s*\)"
                   r"\s*:\s*\(\s*((?:0|[1-9][0-9]{0,8})(?:\s*,\s*(?:0|[1-9][0-9]{0,8}))+)\s*\)")


def evaluate_text(text: str, *, bits: int = 16, dynamic: bool | None = None):
    """Parse and evaluate CuTe text into a value (layout, composed layout, TV layout, ...).

    ``dynamic``: whether bare integers are dynamic; default: when the text writes some static
    integer as ``_N`` (CuTe C++'s print), see :func:`uses_cpp_integers`.

    A flat ``(s0,s1,...):(d0,d1,...)`` of plain integers (static) is built directly; anything it
    refuses, and everything else, goes through the parser and interpreter, whose value and error
    messages it then is (``tests/test_cute_parser.py`` checks both give equal layouts)."""
    if not dynamic:
        flat = flat_layout(text)
        if flat is None:
            flat = nested_layout(text)
        if flat is not None:
            return CuteLayout._valid(*flat)
    return evaluate(parse_text(text), text, bits=bits, dynamic=dynamic)


#: longest text the shortcuts read (the interpreter, with its own limits, takes longer ones)
_SHORT = 4096
_INT = r"(?:0|[1-9][0-9]{0,8})"
_MODE = rf"(?:{_INT}|\([ \t]*{_INT}(?:[ \t]*,[ \t]*{_INT})+[ \t]*\))"
_TUPLE = rf"\([ \t]*{_MODE}(?:[ \t]*,[ \t]*{_MODE})+[ \t]*\)"
#: ``shape:stride`` with one level of nesting (``((2,32),64):((64,128),1)``), plain integers,
#: spaces and tabs only; every tuple has two entries or more
_NESTED = re.compile(rf"[ \t]*({_TUPLE})[ \t]*:[ \t]*({_TUPLE})[ \t]*")


def nested_layout(text):
    """``(shape, stride)`` of a ``shape:stride`` with one level of nesting (see ``_NESTED``) that
    passes every check of ``CuteLayout()`` (the same profile, sizes positive, at most
    ``MAX_LEAVES`` modes, size and cosize within ``MAX_EXTENT``); ``None`` for anything else."""
    m = _NESTED.fullmatch(text) if type(text) is str and len(text) <= _SHORT else None
    if m is None:
        return None
    shape, stride = (_as_tuple(json.loads(g.replace("(", "[").replace(")", "]"))) for g in m.groups())
    if len(shape) != len(stride):
        return None
    leaves_ = []
    for s, d in zip(shape, stride):
        if type(s) is not type(d):
            return None
        if type(s) is tuple:
            if len(s) != len(d):
                return None
            leaves_.extend(zip(s, d))
        else:
            leaves_.append((s, d))
    return (shape, stride) if _within_limits(leaves_) else None


def _within_limits(leaves_) -> bool:
    """Do the leaf modes ``(size, stride)`` pass the checks of ``CuteLayout()`` (sizes positive, at
    most ``MAX_LEAVES`` modes, size and cosize within ``MAX_EXTENT``)? Strides are non-negative
    (the patterns admit no sign)."""
    if len(leaves_) > MAX_LEAVES:
        return False
    size, cosize = 1, 1
    for s, d in leaves_:
        if s < 1:
            return False
        size *= s
        cosize += (s - 1) * d
    return size <= MAX_EXTENT and cosize <= MAX_EXTENT


def _as_tuple(x):
    return tuple(_as_tuple(v) for v in x) if type(x) is list else x


def flat_layout(text) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """``(shape, stride)`` of a flat ``(s0,s1,...):(d0,d1,...)`` of plain (static) integers that
    passes every check of ``CuteLayout()`` (sizes positive, at most ``MAX_LEAVES`` modes, size and
    cosize within ``MAX_EXTENT``); ``None`` for anything else (the interpreter builds it or names
    the error)."""
    m = _FLAT.fullmatch(text.strip()) if type(text) is str and len(text) <= _SHORT else None
    if m is None:
        return None
    shape = tuple(int(v) for v in m.group(1).split(","))
    stride = tuple(int(v) for v in m.group(2).split(","))
    if len(shape) != len(stride):
        return None
    return (shape, stride) if _within_limits(list(zip(shape, stride))) else None
