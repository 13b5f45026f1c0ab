"""Coordinate layouts: CuTe layouts whose strides are scaled basis elements (``1@0``, ``_2@1``).

CuTe C++ writes ``ScaledBasis<T, N...>`` (``E<N...>{}`` scaled by ``T``) strides for layouts whose
value is a *coordinate*, not an offset: ``make_identity_layout(make_shape(4, 8))`` prints
``(4,8):(_1@0,_1@1)`` and maps index ``i`` to the coordinate ``(i % 4, i / 4)``; the CuTe DSL prints
the same as ``(4,8):(1@0,1@1)``. The print of ``v * E<a, b, ..., z>`` is ``v@z@...@b@a``: the scale,
then the basis path from the innermost mode out (``E<1,0>`` prints ``_1@0@1`` and puts its value in
element 0 of mode 1 of the coordinate, which C++ prints ``(0,(k))``).

The value at a coordinate of the layout's shape is the sum over its leaf modes of ``digit * scale``
added into the coordinate element named by the leaf's basis path; elements no stride names stay 0.

**Canonical form** (the function view of :mod:`.canonical`, with a tuple value): hardware dims
``mode0, mode1, ...`` (one per top-level mode, CuTe's colex index within it) -> logical dims
``dim0, dim1, ...``, one per element of the coordinate (the basis paths in lexicographic order),
each of size its largest value + 1.
"""
from __future__ import annotations

from dataclasses import dataclass

from layoutverify.core import expr as E
from layoutverify.core.errors import LayoutError, UnsupportedError
from layoutverify.core.layout import Layout

from .layout import is_tuple


def leaves(x) -> list:
    """The leaves of a nested tuple, left to right, as they are (ints or :class:`Basis`)."""
    return [y for e in x for y in leaves(e)] if is_tuple(x) else [x]


@dataclass(frozen=True)
class Basis:
    """One scaled basis stride ``scale * E<path...>`` (``path`` outermost mode first)."""
    scale: int
    path: tuple[int, ...]
    static: bool = True

    def __str__(self):
        return f"{'_' if self.static else ''}{self.scale}" + "".join(f"@{p}" for p in reversed(self.path))


def _congruent(shape, stride) -> bool:
    if is_tuple(shape):
        return is_tuple(stride) and len(shape) == len(stride) and all(
            _congruent(s, d) for s, d in zip(shape, stride))
    return not is_tuple(stride)


def _text(x) -> str:
    if is_tuple(x):
        return "(" + ",".join(_text(e) for e in x) + ")"
    return str(x)


@dataclass(frozen=True)
class CoordLayout:
    """A layout ``shape : stride`` whose strides are all :class:`Basis` (see the module docstring)."""
    shape: object
    stride: object

    def __post_init__(self):
        if not _congruent(self.shape, self.stride):
            raise LayoutError(f"shape {_text(self.shape)} and stride {_text(self.stride)} are not congruent")
        bad = [d for d in leaves(self.stride) if not isinstance(d, Basis)]
        if bad:
            raise UnsupportedError(f"{self}: a stride mixes integers ({bad[0]}) with scaled basis elements "
                                   f"(CuTe C++ cannot add them either); write every stride as v@i")
        if any(s < 1 for s in leaves(self.shape)):
            raise LayoutError(f"{self}: shape entries must be positive")
        paths = sorted({d.path for d in leaves(self.stride)})
        for a, b in zip(paths, paths[1:]):
            if b[:len(a)] == a:
                raise LayoutError(f"{self}: basis paths {a} and {b} name a coordinate element and a part of it")
        object.__setattr__(self, "_paths", paths)

    def __str__(self):
        return f"{_text(self.shape)}:{_text(self.stride)}"

    @property
    def paths(self) -> list[tuple[int, ...]]:
        """The coordinate elements named by the strides, outermost mode first, in order."""
        return self._paths

    def size(self) -> int:
        """The number of 1-D coordinates: the product of the shape's leaves."""
        n = 1
        for s in leaves(self.shape):
            n *= int(s)
        return n

    def _leaf_digits(self, i: int):
        for s, d in zip(leaves(self.shape), leaves(self.stride)):
            yield i % int(s), d
            i //= int(s)

    def values(self, i: int) -> dict[tuple[int, ...], int]:
        """Index ``i`` (colex over the whole shape) -> {basis path: coordinate element}."""
        out = {p: 0 for p in self.paths}
        for digit, d in self._leaf_digits(i):
            out[d.path] += digit * d.scale
        return out

    def __call__(self, i: int):
        """The coordinate at index ``i`` as CuTe C++ builds it: a nested tuple over the paths."""
        vals = self.values(i)

        def build(prefix):
            children = sorted({p[len(prefix)] for p in vals if len(p) > len(prefix) and p[:len(prefix)] == prefix})
            if prefix in vals:
                return vals[prefix]
            return tuple(build(prefix + (c,)) if c in children else 0 for c in range(max(children) + 1))
        return build(())

    def canonical(self, name: str | None = None) -> Layout:
        """The canonical layout of the function view: hardware dim ``idx`` (the 1-D coordinate, first
        mode fastest) -> the coordinate its ``ScaledBasis`` strides give, one logical dim per basis
        path."""
        modes = self.shape if is_tuple(self.shape) else (self.shape,)
        strides = self.stride if is_tuple(self.stride) else (self.stride,)
        in_dims, acc = [], {p: E.Const(0) for p in self.paths}
        hi = {p: 0 for p in self.paths}
        for k, (ms, md) in enumerate(zip(modes, strides)):
            size = 1
            for s in leaves(ms):
                size *= int(s)
            in_dims.append((f"mode{k}", size))
            w = 1
            for s, d in zip(leaves(ms), leaves(md)):
                s = int(s)
                if s > 1:
                    if d.scale < 0:
                        raise UnsupportedError(f"{self}: negative scales give coordinates below 0, which have "
                                               f"no place in the canonical form")
                    acc[d.path] = acc[d.path] + ((E.Var(f"mode{k}") // w) % s) * int(d.scale)
                    hi[d.path] += (s - 1) * int(d.scale)
                w *= s
        from .canonical import _check_size
        _check_size(self.size(), f"CuTe coordinate layout {self}")
        for p in self.paths:
            _check_size(hi[p] + 1, f"coordinate element {p} of CuTe layout {self}")
        out_dims = [(f"dim{j}", hi[p] + 1) for j, p in enumerate(self.paths)]
        return Layout(in_dims, out_dims, [acc[p] for p in self.paths], name=name or str(self))
