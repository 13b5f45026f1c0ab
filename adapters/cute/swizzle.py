"""CuTe swizzles ``Sw<B,M,S>`` and composed layouts ``A o offset o B`` (``swizzle.hpp``,
``layout_composed.hpp``, ``pointer_flagged.hpp``).

``Swizzle<B,M,S>`` XORs ``B`` bits of an offset into ``B`` lower bits (C++ ``Swizzle::apply``)::

    bit_msk = 2^B - 1
    yyy_msk = bit_msk << (M + max(0, S))
    zzz_msk = bit_msk << (M - min(0, S))
    apply(x) = x ^ shiftr(x & yyy_msk, S)      # shiftr by a negative S shifts left

so for the usual ``S > 0``: ``x ^ ((x >> S) & (bit_msk << M))``. ``|S| >= B`` (checked, as C++
does) keeps the YYY and ZZZ bits apart, which makes every swizzle its own inverse.

A :class:`ComposedLayout` is C++ ``ComposedLayout<A, O, B>``: ``f(c) = A(O + B(c))`` with an outer
function ``A`` (a swizzle or a layout), an integer offset ``O`` and an inner layout ``B``. CuTe
prints it ``Sw<3,4,3> o _0 o (8,64):(64,1)``. The GMMA shared-memory atoms print the offset as
``smem_ptr[16b](unset)``: their swizzle acts on **byte** addresses of 16-bit elements; the
element-level function (what layoutverify evaluates) recasts the swizzle to element units exactly
as C++ ``as_position_independent_swizzle_layout`` does (``Sw<3,4,3>`` on 16-bit elements acts as
``Sw<3,3,3>`` on element offsets).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from layoutverify.core import expr as E
from layoutverify.core.errors import LayoutError, UnsupportedError

from .layout import CuteLayout


@dataclass(frozen=True)
class Swizzle:
    """CuTe's ``Swizzle<B, M, S>``: ``x ^ ((x & yyy_msk) >> S)`` (``S >= 0``; ``<<`` for ``S < 0``),
    i.e. the ``B`` bits above bit ``M + S`` are XORed into the ``B`` bits above bit ``M``."""
    B: int
    M: int
    S: int

    def __post_init__(self):
        if self.B < 0 or self.M < 0:
            raise LayoutError(f"{self}: B and M must be non-negative")
        if abs(self.S) < self.B:
            raise LayoutError(f"{self}: |S| must be at least B (CuTe: 'abs(SShift) must be more than BBits')")
        if self.B > 32 or self.M > 48 or abs(self.S) > 48:
            raise LayoutError(f"{self}: parameters out of range")
        if self.B + self.M + abs(self.S) > 62:   # both masks (and every offset they touch) fit in int64
            raise LayoutError(f"{self}: B + M + |S| = {self.B + self.M + abs(self.S)} exceeds 62 "
                              "(swizzled offsets must fit in 64-bit integers)")

    def __str__(self):
        return f"Sw<{self.B},{self.M},{self.S}>"

    @property
    def bit_msk(self) -> int:
        """``2**B - 1``: ``B`` low bits."""
        return (1 << self.B) - 1

    @property
    def yyy_msk(self) -> int:
        """The bits read: ``B`` bits from bit ``M + max(0, S)``."""
        return self.bit_msk << (self.M + max(0, self.S))

    @property
    def zzz_msk(self) -> int:
        """The bits changed: ``B`` bits from bit ``M - min(0, S)``."""
        return self.bit_msk << (self.M - min(0, self.S))

    def __call__(self, x):
        """Apply to an integer or a numpy array of offsets."""
        y = x & self.yyy_msk
        if self.S >= 0:
            return x ^ (y >> self.S)
        return x ^ (y << -self.S)

    def expr(self, x: E.Expr) -> E.Expr:
        """The same map as a symbolic expression."""
        if self.B == 0:
            return x
        if self.S >= 0:
            return x ^ ((x & self.yyy_msk) >> self.S)
        return x ^ ((x & self.yyy_msk) << -self.S)

    def is_identity(self) -> bool:
        """Whether the swizzle changes nothing (``B == 0``)."""
        return self.B == 0

    # C++ upcast/downcast of a swizzle (swizzle_layout.hpp)
    def upcast(self, n: int) -> "Swizzle":
        """C++ ``upcast<n>`` of a swizzle: the same permutation on addresses in units ``n`` times
        larger (``M`` decreased by ``log2(n)``, bits below the unit dropped)."""
        k = _log2(n, "upcast")
        m = self.M - k
        if m >= 0:
            return Swizzle(self.B, m, self.S)
        return Swizzle(max(self.B + m, 0), 0, self.S)

    def downcast(self, n: int) -> "Swizzle":
        """C++ ``downcast<n>``: the same permutation on addresses in units ``n`` times smaller (``M``
        increased by ``log2(n)``)."""
        return Swizzle(self.B, self.M + _log2(n, "downcast"), self.S)

    def recast_bytes_to_bits(self, bits: int) -> "Swizzle":
        """C++ ``recast_layout<uint8_t, uint_bit_t<bits>>``: a byte-address swizzle in units of
        ``bits``-bit elements."""
        if bits >= 8:
            if bits % 8:
                raise LayoutError(f"element width {bits} bits is not a whole number of bytes")
            return self.upcast(bits // 8)
        if 8 % bits:
            raise LayoutError(f"element width {bits} bits does not divide a byte")
        return self.downcast(8 // bits)


def make_swizzle(y: int, z: int) -> "Swizzle | None":
    """C++ ``make_swizzle<Y, Z>()``: the swizzle whose masks are ``Y`` (bits read) and ``Z`` (bits
    xor-ed): ``B = popcount(Y)``, ``M = min(ctz(Y), ctz(Z))``, ``S = ctz(Y) - ctz(Z)``. ``None`` for
    ``Y = Z = 0`` (CuTe's ``Swizzle<0,0,0>``, the identity); a :class:`LayoutError` where CuTe's
    ``static_assert``s fail (different bit counts, or masks that are not one swizzle's fields)."""
    if y < 0 or z < 0:
        raise LayoutError(f"make_swizzle<{y}, {z}>: masks must be non-negative")
    if y.bit_count() != z.bit_count():
        raise LayoutError(f"make_swizzle<{y}, {z}>: the masks have different numbers of bits "
                          f"(CuTe: \"Number of bits in Y and Z don't match\")")
    if y == 0:
        return None
    tz_y, tz_z = (y & -y).bit_length() - 1, (z & -z).bit_length() - 1
    sw = Swizzle(y.bit_count(), min(tz_y, tz_z), tz_y - tz_z)
    if (y | z) != sw.yyy_msk | sw.zzz_msk:
        raise LayoutError(f"make_swizzle<{y}, {z}>: the masks are not the contiguous bit fields of one swizzle")
    return sw


def _log2(n: int, what: str) -> int:
    if n < 1 or n & (n - 1):
        raise LayoutError(f"{what} by {n}: N must be a power of two")
    return n.bit_length() - 1


@dataclass(frozen=True)
class ComposedLayout:
    """C++ ``ComposedLayout<A, O, B>``: ``c -> A(O + B(c))``.

    ``smem_bits`` is set when the offset was CuTe's ``smem_ptr[Nb](unset)`` flag: the swizzle then
    acts on byte addresses of ``N``-bit elements (see the module docstring); the offset is 0.
    """

    outer: object          # Swizzle or CuteLayout
    offset: int
    inner: CuteLayout
    smem_bits: int | None = None

    def __post_init__(self):
        if not isinstance(self.inner, CuteLayout):
            raise LayoutError(f"the inner part of a composed layout must be a layout, got {self.inner}")
        if not isinstance(self.outer, (Swizzle, CuteLayout)):
            raise LayoutError(f"the outer part of a composed layout must be a swizzle or a layout, got {self.outer}")
        if self.offset < 0:
            raise UnsupportedError("negative offsets are not supported")
        if self.smem_bits is not None and not isinstance(self.outer, Swizzle):
            raise LayoutError("smem_ptr[...] flags go with a swizzle")

    def __str__(self):
        off = f"smem_ptr[{self.smem_bits}b](unset)" if self.smem_bits is not None else str(self.offset)
        return f"{self.outer} o {off} o {self.inner}"

    __repr__ = __str__

    def cpp_str(self) -> str:
        """As CuTe C++ prints it: ``Sw<3,4,3> o _0 o (_8,_64):(_64,_1)``."""
        off = f"smem_ptr[{self.smem_bits}b](unset)" if self.smem_bits is not None else f"_{self.offset}"
        outer = self.outer.cpp_str() if isinstance(self.outer, CuteLayout) else str(self.outer)
        return f"{outer} o {off} o {self.inner.cpp_str()}"

    # -- the element-level function ------------------------------------------------------------
    def element_outer(self):
        """The outer function acting on element offsets (swizzles recast from bytes, see above)."""
        if self.smem_bits is not None:
            return self.outer.recast_bytes_to_bits(self.smem_bits)
        return self.outer

    def with_inner(self, inner: CuteLayout) -> "ComposedLayout":
        """The same outer function and offset over another inner layout."""
        return ComposedLayout(self.outer, self.offset, inner, self.smem_bits)

    def size(self) -> int:
        """The inner layout's size."""
        return self.inner.size()

    def rank(self) -> int:
        """The inner layout's rank."""
        return self.inner.rank()

    def mode(self, i: int) -> "ComposedLayout":
        """Mode ``i`` of the inner layout, under the same outer function and offset."""
        return self.with_inner(self.inner.mode(i))

    @property
    def shape(self):
        """The inner layout's shape."""
        return self.inner.shape

    def offsets(self) -> np.ndarray:
        """Element offset of every 1-D coordinate of the inner layout."""
        x = self.inner.offsets() + self.offset
        f = self.element_outer()
        if isinstance(f, Swizzle):
            return f(x)
        n = f.size()
        if x.size and int(x.max()) >= n:
            raise LayoutError(f"composed layout {self}: inner offset {int(x.max())} is outside the outer layout's "
                              f"domain of size {n}")
        return f.offsets()[x]

    def __call__(self, idx: int) -> int:
        x = self.offset + self.inner(idx)
        return int(self.element_outer()(x))
