"""Tilus shared-memory layouts: an independent model, turned into canonical memory layouts.

A Tilus shared layout (``tilus.ir.layout.SharedLayout``) maps a tensor index to a shared-memory
offset (in elements): each dim is split into modes (most significant first, dim 0's modes first),
mode ``m`` has a stride, and

    offset(index) = swizzle( sum over modes of digit_m * stride_m )

with the optional CuTe-style swizzle ``Swizzle(base, bits, shift)``:
``x ^ ((x & (((1 << bits) - 1) << (base + shift))) >> shift)`` (the ``bits`` bits starting at
``base + shift`` are XORed into the ``bits`` bits starting at ``base``).

Text syntax (tilus 0.2.0 function names; all arguments integers or integer lists)::

    shared_row_major(16, 64)                 shared_column_major(16, 64)
    shared_row_major_swizzle([16, 64], 2)    # shape, dtype_nbytes: tilus's ldmatrix-friendly layout
    shared_layout(shape=[8, 8], mode_shape=[8, 8], mode_strides=[1, 8], optional_swizzle=Swizzle(0, 3, 3))
    SharedLayout(shape=[16, 64], mode_shape=[16, 64], mode_strides=[64, 1],
                 swizzle=Swizzle(base=3, bits=3, shift=3))          # what tilus prints
    shared_compose(a, b)  shared_permute(a, [1, 0])  shared_reshape(a, [4, 256])
    shared_unsqueeze(a, [0])  shared_slice(a, [1])
    a.apply_swizzle(Swizzle(...)) .permute(dims) .transpose() .prepend_dim(n) .unsqueeze(dims) .slice(dims)

Canonical form (DESIGN.md §1): a *memory layout* ``(offset, block) -> (dim0, dim1, ...)``, the
inverse of the map above: hardware ``offset`` (elements, size = number of elements) to the
logical index stored there. That needs the map to be a bijection onto ``[0, size)``: padded
strides (holes) or overlapping strides give a :class:`~layoutverify.core.errors.NotInvertibleError` that
says which offset or element is the problem.

``shared_compose`` of a swizzled operand is refused (:class:`~layoutverify.core.errors.UnsupportedError`):
tilus 0.2.0 silently drops both operands' swizzles there.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from layoutverify.core import expr as E
from layoutverify.core.errors import LayoutError, NotInvertibleError, SizeLimitError, UnsupportedError
from layoutverify.core.layout import MAX_TABLE_LOCATIONS, Layout, logical_dims

from .register import MAX_ELEMENTS, MAX_RANK, MAX_SIZE, _check_shape, _prod

#: Largest stride accepted.
MAX_STRIDE = 1 << 40


@dataclass(frozen=True)
class Swizzle:
    """Tilus's shared-memory ``Swizzle(base, bits, shift)``: ``x ^ ((x & y_mask) >> shift)``, the
    ``bits`` bits above bit ``base + shift`` XORed into the ``bits`` bits above bit ``base``."""
    base: int
    bits: int
    shift: int

    def __post_init__(self):
        for n in ("base", "bits", "shift"):
            v = getattr(self, n)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v > 40:
                raise LayoutError(f"Swizzle {n} must be an integer in [0, 40], got {v!r}")

    def __str__(self):
        return f"Swizzle(base={self.base}, bits={self.bits}, shift={self.shift})"

    def y_mask(self) -> int:
        """The bits read: ``bits`` bits from bit ``base + shift``."""
        return ((1 << self.bits) - 1) << (self.base + self.shift)

    def apply(self, x):
        """Works on ints, numpy arrays and :class:`~layoutverify.core.expr.Expr`."""
        if self.bits == 0:
            return x
        return x ^ ((x & self.y_mask()) >> self.shift)

    def is_involution(self) -> bool:
        """Y and Z bit ranges are disjoint (``shift >= bits``), so applying twice is the identity."""
        return self.bits == 0 or self.shift >= self.bits


@dataclass(frozen=True)
class SharedModes:
    """A Tilus shared layout in mode form (our model). ``modes[i] = (dim, size, stride)``."""

    shape: tuple
    modes: tuple
    swizzle: Swizzle | None = None

    def __post_init__(self):
        if len(self.shape) > MAX_RANK:
            raise LayoutError(f"layout of rank {len(self.shape)} (at most {MAX_RANK} dims)")
        _check_shape(self.shape)
        if _prod(self.shape) > MAX_ELEMENTS:
            raise SizeLimitError(f"shape {list(self.shape)} has more than {MAX_ELEMENTS} elements")
        per = [1] * len(self.shape)
        last = -1
        for d, n, s in self.modes:
            if not 0 <= d < len(self.shape) or d < last or n < 2:
                raise LayoutError(f"internal: bad shared modes {self.modes}")
            if s < 0 or s > MAX_STRIDE:
                raise LayoutError(f"mode stride {s} must be in [0, {MAX_STRIDE}]")
            last = d
            per[d] *= n
        if tuple(per) != tuple(self.shape):
            raise LayoutError(f"modes {[n for _, n, _ in self.modes]} do not split shape {list(self.shape)}")

    @classmethod
    def from_attributes(cls, shape, mode_shape, mode_strides, swizzle=None) -> "SharedModes":
        """From Tilus's attributes (``SharedLayout(shape, mode_shape, mode_strides, swizzle)``): modes
        of size 1 dropped, the others assigned to dims in order until their product is the dim's
        size."""
        shape = _check_shape(shape)
        if len(mode_shape) != len(mode_strides):
            raise LayoutError(f"mode_shape {list(mode_shape)} and mode_strides {list(mode_strides)} differ in length")
        for n in mode_shape:
            if n < 1:
                raise LayoutError(f"mode_shape {list(mode_shape)}: sizes must be positive")
        kept = [(n, s) for n, s in zip(mode_shape, mode_strides) if n > 1]
        modes, k = [], 0
        for d, size in enumerate(shape):
            rest = size
            while rest > 1:
                if k >= len(kept) or rest % kept[k][0]:
                    raise LayoutError(f"mode_shape {list(mode_shape)} does not split shape {list(shape)}")
                rest //= kept[k][0]
                modes.append((d, kept[k][0], kept[k][1]))
                k += 1
        if k != len(kept):
            raise LayoutError(f"mode_shape {list(mode_shape)} does not split shape {list(shape)}")
        if swizzle is not None and swizzle.bits == 0:
            swizzle = None
        return cls(shape, tuple(modes), swizzle)

    @property
    def rank(self):
        """The number of tensor dims."""
        return len(self.shape)

    def groups(self):
        """Mode indices of each dim, most significant first."""
        g = [[] for _ in self.shape]
        for i, (d, _, _) in enumerate(self.modes):
            g[d].append(i)
        return g

    def count_size(self) -> int:
        """Smallest buffer (in elements) that holds the layout: largest unswizzled offset + 1."""
        return sum((n - 1) * s for _, n, s in self.modes) + 1

    def __str__(self):
        sw = str(self.swizzle) if self.swizzle else "None"
        return (f"SharedLayout(shape={list(self.shape)}, mode_shape={[n for _, n, _ in self.modes]}, "
                f"mode_strides={[s for _, _, s in self.modes]}, swizzle={sw})")

    # -- evaluation ------------------------------------------------------------------------------
    def offsets(self) -> np.ndarray:
        """Offset of every element, an array of the tensor's shape."""
        n = _prod(self.shape)
        if n > MAX_TABLE_LOCATIONS:
            raise SizeLimitError(f"shared layout of {n} elements exceeds the table limit {MAX_TABLE_LOCATIONS}")
        idx = np.indices(self.shape, dtype=np.int64) if self.shape else np.zeros((0,), np.int64)
        total = np.zeros(self.shape, dtype=np.int64)
        g = self.groups()
        for d in range(self.rank):
            rest = idx[d]
            for m in reversed(g[d]):
                _, size, stride = self.modes[m]
                total = total + (rest % size) * stride
                rest = rest // size
        return self.swizzle.apply(total) if self.swizzle else total

    def to_layout(self, name: str | None = None) -> Layout:
        """The memory layout ``(offset, block) -> (dim0, ...)`` (inverse of index -> offset)."""
        if self.rank == 0:
            raise UnsupportedError("a rank-0 shared layout has no logical dims")
        n = _prod(self.shape)
        in_dims = [("offset", n), ("block", 1)]
        # the unswizzled offsets must be a compact mixed radix: strides sorted ascending are
        # 1, n0, n0*n1, ... (no holes, no overlaps); then each mode's digit is read off the offset.
        order = sorted(range(len(self.modes)), key=lambda i: (self.modes[i][2], self.modes[i][1]))
        expect, compact = 1, True
        for i in order:
            _, size, stride = self.modes[i]
            if stride != expect:
                compact = False
                break
            expect *= size
        sw = self.swizzle
        if compact and (sw is None or sw.is_involution()) and (sw is None or _swizzle_closed(sw, n)):
            off = E.Var("offset")
            u = sw.apply(off) if sw else off
            exprs = []
            g = self.groups()
            for d in range(self.rank):
                acc, weight = E.Const(0), 1
                for m in reversed(g[d]):
                    _, size, stride = self.modes[m]
                    digit = u // stride
                    if stride * size < n:
                        digit = digit % size
                    acc = acc + digit * weight
                    weight *= size
                exprs.append(acc)
            return Layout(in_dims, logical_dims(self.shape), exprs, name=name)
        return _invert_offsets(self.offsets(), self.shape, name)


def _swizzle_closed(sw: Swizzle, n: int) -> bool:
    """The swizzle maps ``[0, n)`` onto itself (true when ``n`` is a multiple of the span of the
    bits it reads and writes)."""
    span = 1 << (sw.base + sw.shift + sw.bits)
    return n % span == 0


def _invert_offsets(off: np.ndarray, shape, name=None) -> Layout:
    """Memory layout from an explicit index -> offset grid, checked to be a bijection onto [0, n)."""
    n = _prod(shape)
    flat = off.reshape(-1)
    if flat.min(initial=0) < 0 or flat.max(initial=0) >= n:
        k = int(np.argmax((flat < 0) | (flat >= n)))
        coord = tuple(int(c) for c in np.unravel_index(k, shape))
        raise NotInvertibleError(
            f"element {coord} is at offset {int(flat[k])}, outside [0, {n}): the layout has holes "
            f"(padding, or a swizzle that leaves the buffer) and no offset -> element form")
    holder = np.full(n, -1, dtype=np.int64)
    holder[flat] = np.arange(n, dtype=np.int64)
    if (holder < 0).any():
        o = int(np.argmax(holder < 0))
        raise NotInvertibleError(f"offset {o} holds no element while two elements share an offset "
                                 f"(overlapping strides): not invertible")
    coords = np.stack(np.unravel_index(holder, shape), axis=1)
    return Layout.from_table([("offset", n), ("block", 1)], logical_dims(shape), coords, name=name)


# ----------------------------------------------------------------------------------------------
# creation and operations (tilus 0.2.0 semantics)
def _strides_from_ranks(shape, ranks):
    return [_prod(s for j, s in enumerate(shape) if ranks[j] > ranks[i]) for i in range(len(shape))]


def shared_row_major(*shape: int) -> SharedModes:
    shape = _check_shape(shape)
    return SharedModes.from_attributes(shape, shape, _strides_from_ranks(shape, list(range(len(shape)))))


def shared_column_major(*shape: int) -> SharedModes:
    shape = _check_shape(shape)
    return SharedModes.from_attributes(shape, shape, _strides_from_ranks(shape, list(reversed(range(len(shape))))))


def shared_layout(shape, mode_shape, mode_strides, optional_swizzle=None) -> SharedModes:
    return SharedModes.from_attributes(_check_shape(shape), tuple(mode_shape), tuple(mode_strides), optional_swizzle)


def shared_row_major_swizzle(shape: Sequence[int], dtype_nbytes: int) -> SharedModes:
    """Tilus's ldmatrix-friendly layout: rows of 16-byte groups, the group index XORed with the row.

    For ``[..., m, n]`` with ``m % 8 == 0`` and ``n * dtype_nbytes % 16 == 0``: columns are cut into
    vectors of ``v = gcd(n, 128 / dtype_nbytes)`` elements stored vector-major (vector, row, element),
    and a swizzle of ``log2(v * dtype_nbytes / 16)`` bits (shift 3, base ``log2(16 / dtype_nbytes)``)
    permutes the 16-byte groups of each 8-row band.
    """
    shape = _check_shape(shape)
    if len(shape) < 2:
        raise LayoutError("the swizzled shared layout needs at least two dimensions")
    if dtype_nbytes not in (1, 2, 4, 8, 16):
        raise LayoutError(f"dtype_nbytes must be 1, 2, 4, 8 or 16, got {dtype_nbytes}")
    head, m, n = tuple(shape[:-2]), shape[-2], shape[-1]
    if m % 8 or (n * dtype_nbytes) % 16:
        raise LayoutError("m must be a multiple of 8 and n * dtype_nbytes a multiple of 16")
    import math
    vec = math.gcd(n, 128 // dtype_nbytes)
    nvec = n // vec
    mode_shape = head + (m, nvec, vec)
    ranks = list(range(len(head))) + [len(head) + 1, len(head), len(head) + 2]
    strides = _strides_from_ranks(mode_shape, ranks)
    width = vec * dtype_nbytes
    base = (16 // dtype_nbytes).bit_length() - 1
    bits = {128: 3, 64: 2, 32: 1, 16: 0}[width]
    sw = Swizzle(base, bits, 3) if bits else None
    return SharedModes.from_attributes(shape, mode_shape, strides, sw)


def shared_compose(lhs: SharedModes, rhs: SharedModes) -> SharedModes:
    """Tile ``rhs`` inside every element of ``lhs``: ``offset = lhs_offset * rhs.count_size() +
    rhs_offset`` (same rank required)."""
    if lhs.rank != rhs.rank:
        raise LayoutError(f"shared_compose needs layouts of the same rank, got {lhs.rank} and {rhs.rank}")
    if lhs.swizzle or rhs.swizzle:
        raise UnsupportedError("shared_compose of a swizzled layout (tilus 0.2.0 drops the swizzle there)")
    size = rhs.count_size()
    lg, rg = lhs.groups(), rhs.groups()
    modes = []
    for d in range(lhs.rank):
        modes += [(d, lhs.modes[m][1], lhs.modes[m][2] * size) for m in lg[d]]
        modes += [(d, rhs.modes[m][1], rhs.modes[m][2]) for m in rg[d]]
    shape = tuple(a * b for a, b in zip(lhs.shape, rhs.shape))
    return SharedModes(shape, tuple(modes), None)


def shared_permute(layout: SharedModes, dims: Sequence[int]) -> SharedModes:
    dims = tuple(dims)
    if sorted(dims) != list(range(layout.rank)):
        raise LayoutError(f"dims {list(dims)} must be a permutation of 0..{layout.rank - 1}")
    g = layout.groups()
    modes = tuple((i, layout.modes[m][1], layout.modes[m][2]) for i, d in enumerate(dims) for m in g[d])
    return SharedModes(tuple(layout.shape[d] for d in dims), modes, layout.swizzle)


def shared_slice(layout: SharedModes, retain_dims: Sequence[int]) -> SharedModes:
    """Keep ``retain_dims`` (in that order); the other dims are fixed at index 0."""
    dims = tuple(retain_dims)
    if any(not 0 <= d < layout.rank for d in dims) or len(set(dims)) != len(dims):
        raise LayoutError(f"retain_dims {list(dims)} must be distinct dims of a rank-{layout.rank} layout")
    g = layout.groups()
    modes = tuple((i, layout.modes[m][1], layout.modes[m][2]) for i, d in enumerate(dims) for m in g[d])
    return SharedModes(tuple(layout.shape[d] for d in dims), modes, layout.swizzle)


def shared_unsqueeze(layout: SharedModes, dims: Sequence[int]) -> SharedModes:
    dims = tuple(dims)
    n = layout.rank + len(dims)
    if any(not 0 <= d <= layout.rank + len(dims) - 1 for d in dims) or len(set(dims)) != len(dims):
        raise LayoutError(f"dims {list(dims)} must be distinct positions in [0, {n})")
    new_of_old = [i for i in range(n) if i not in dims]
    shape = [1] * n
    for old, new in enumerate(new_of_old):
        shape[new] = layout.shape[old]
    return SharedModes(tuple(shape), tuple((new_of_old[d], k, s) for d, k, s in layout.modes), layout.swizzle)


def shared_reshape(layout: SharedModes, new_shape: Sequence[int]) -> SharedModes:
    """Row-major reinterpretation of the index: the modes (dim 0 first, most significant first)
    are the digits of the flat index; a mode straddling a new dim boundary is split (one size must
    divide the other), keeping the offset of every element."""
    shape = _check_shape(new_shape)
    if _prod(shape) != _prod(layout.shape):
        raise LayoutError(f"cannot reshape shape {list(layout.shape)} to {list(shape)}: sizes differ")
    # merge modes that are one mixed-radix digit (stride_i == stride_{i+1} * size_{i+1}), also
    # across dims: reshape only sees the flat digit sequence
    merged = []
    for _, n, s in layout.modes:
        if merged and merged[-1][1] == s * n:
            merged[-1] = (merged[-1][0] * n, s)
        else:
            merged.append((n, s))
    out = []              # (dim, size, stride), built from the least significant end
    d = len(shape) - 1
    remaining = shape[d] if d >= 0 else 1
    for n, s in reversed(merged):
        stride = s
        while n > 1:
            while remaining == 1:
                d -= 1
                remaining = shape[d]
            if remaining % n == 0:
                out.append((d, n, stride))
                remaining //= n
                n = 1
            elif n % remaining == 0:
                out.append((d, remaining, stride))
                stride *= remaining
                n //= remaining
                remaining = 1
            else:
                raise LayoutError(f"cannot reshape {layout} to {list(shape)}: a mode of size {n} straddles a "
                                  f"dimension boundary unevenly")
    return SharedModes(shape, tuple(reversed(out)), layout.swizzle)


def apply_swizzle(layout: SharedModes, swizzle: Swizzle) -> SharedModes:
    if layout.swizzle is not None:
        raise LayoutError("the layout is already swizzled (chained swizzles are not supported)")
    return SharedModes(layout.shape, layout.modes, None if swizzle.bits == 0 else swizzle)


def prepend_dim(layout: SharedModes, extent: int) -> SharedModes:
    """A new leading dim of ``extent`` copies, each ``count_size()`` elements apart."""
    if extent < 1 or extent > MAX_SIZE:
        raise LayoutError(f"extent must be in [1, {MAX_SIZE}], got {extent}")
    modes = tuple((d + 1, n, s) for d, n, s in layout.modes)
    if extent > 1:
        modes = ((0, extent, layout.count_size()),) + modes
    return SharedModes((extent,) + layout.shape, modes, layout.swizzle)
