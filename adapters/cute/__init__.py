"""CuTe adapter: CuTe layout text -> canonical :class:`~layoutverify.core.layout.Layout`.

Accepted text (``cute:`` specs), as CuTe prints it or as CuTe C++ spells the algebra:

* layouts ``((2,4),8):((1,16),2)``, static integers ``_8``, a bare shape ``(4,8)`` (CuTe's
  compact column-major ``LayoutLeft`` strides; size-1 modes get stride 0);
* swizzled / composed layouts ``Sw<3,4,3> o _0 o (_8,_64):(_64,_1)``, ``Sw<3,4,3> o (8,64):(64,1)``,
  ``Sw<3,4,3> o smem_ptr[16b](unset) o (_8,_64):(_64,_1)``, ``GMMA::Layout_K_SW128_Atom<half_t>``;
* the algebra: ``composition``, ``coalesce``, ``complement``, ``right_inverse``, ``left_inverse``,
  ``logical_divide``/``zipped_``/``tiled_``/``flat_divide``, ``logical_product``/``zipped_``/
  ``tiled_``/``flat_product``, ``blocked_product``, ``raked_product``, ``make_layout``,
  ``tile_to_shape``, ``upcast<N>``, ``downcast<N>``, ``get<i>`` (see :mod:`.interp`), with CuTe
  C++ semantics (:mod:`.algebra`);
* C++ type spellings as CUTLASS's traits write them: ``Layout<Shape<_8,_64>,Stride<_64,_1>>``,
  ``Int<8>{}``, ``Step<_2,_1>``, ``Tile<_32,_32,_16>``;
* static and dynamic integers as C++ prints them: when a text writes some static integer ``_N``
  (outside template arguments), a bare ``N`` is dynamic, and ``coalesce``, ``composition``, ``right_inverse``,
  ``left_inverse``, ``make_layout``/``compact_col_major``/``compact_row_major``, ``complement``, the
  divides and products, ``tile_to_shape``, ``upcast``/``downcast`` and ``filter`` follow C++'s
  static/dynamic rules (other algebra refuses dynamic integers); negative strides ``4:-1`` /
  ``_-1`` (algebra only: the canonical form needs offsets >= 0); ``make_swizzle<Y,Z>()``; right and
  left inverses of swizzled layouts (:mod:`.layout`, :mod:`.algebra`);
* the CuTe DSL's prints: ``S<3,4,3> o 0 o ...`` and its MLIR types ``!cute.layout<"...">``,
  ``!cute.composed_layout<"...">``, ``!cute.memref<..., "...">`` (:func:`dsl_layout_text`; its ``?``
  for a run-time integer has no value and is refused, naming it);
* coordinate layouts with ScaledBasis strides, as CuTe C++ prints ``make_identity_layout`` and
  ``E<i>{}`` strides (``(_4,_8):(_1@0,_1@1)``, ``_1@0@1`` = ``E<1,0>``) and the DSL prints them
  (``(4,8):(1@0,1@1)``): index -> coordinate tuple, the function view only (:mod:`.coord`);
* ``partition_A(ATOM_SS, sA)`` / ``partition_B``: a GMMA ``_SS`` atom's partition of a shared-memory
  operand, a memory layout ``((AtomM, AtomK), RestM, RestK)``;
* TV layouts of atoms by CUTLASS's names: ``SM80_16x8x16_F32F16F16F32_TN.A`` (or
  ``mma_atom(SM80_16x8x16_F32F16F16F32_TN, A)``), operands ``A``, ``B``, ``C`` (``D`` = ``C``);
  ``SM75_U32x4_LDSM_N.Dst`` (or ``copy_atom(NAME, Dst, bits=16)``; a copy atom without an operand
  means its register side); and tiled MMAs
  ``tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2,2,1), C, tile=(32,32))``.

What the canonical form means:

* a plain or composed layout is a **memory layout** by default (``as_="memory"``): hardware
  ``offset`` -> logical dims, one per top-level mode (``dim0`` = first mode = row); the layout is
  inverted, and a layout that is not a bijection onto ``0..cosize-1`` raises
  :class:`~layoutverify.core.errors.NotInvertibleError` with a witness. ``as_="function"`` gives the CuTe
  function itself (``mode0, mode1, ...`` -> ``dim0`` = offset). See :mod:`.canonical`.
* a TV layout is a **register layout**: ``register`` = CuTe value, ``lane``/``warp`` from the
  thread, logical ``(row, col)`` of the operand with A M x K, B K x N (CuTe's N x K transposed),
  C M x N. See :mod:`.tv`.
* a TV layout written by hand is declared with the prefix ``tv:`` (``cute:tv:((4,8),(2,2)):((32,1),(16,8))``)
  or the option ``as_="register"`` (corpora: ``options = { as = "register" }``): mode 0 is the
  thread (``lane = t % warp_size``, ``warp = t // warp_size``), mode 1 the value (``register``),
  and the layout's value is an index into the tile given as ``shape`` (required), read
  column-major (CuTe's convention). See :func:`.tv.written_tv_to_register`.

:func:`native` answers the same text with the installed CuTe, for ``show --native`` and the atlas:
atoms from CUTLASS's C++ traits compiled from the headers (:mod:`.cutlass_traits`), other layouts
with pycute (the Python CuTe).

Options: ``shape`` (reinterpret a layout's coordinates column-major over this shape; for atoms it
must match; for a written TV layout, the tile), ``as_`` (``"memory"``/``"function"``/``"register"``),
``warp_size`` (default 32), ``bits`` (element
width of copy atoms, default 16). Unknown options are ignored.
"""
from __future__ import annotations

import re

from layoutverify.core.errors import LayoutError, UnsupportedError
from layoutverify.core.layout import Layout

from .atoms import CopyAtom, MmaAtom, copy_atoms, mma_atoms
from .coord import CoordLayout
from .canonical import function_layout, memory_layout
from .interp import evaluate_text
from .layout import CuteLayout, Underscore, leaves
from .swizzle import ComposedLayout, Swizzle
from .tv import TVLayout, copy_tv, mma_tv, written_tv_to_register

__all__ = ["parse", "native", "evaluate", "mma_atoms", "copy_atoms", "to_canonical"]


def evaluate(text: str, *, bits: int = 16):
    """The CuTe value of ``text``: a :class:`CuteLayout`, :class:`ComposedLayout`,
    :class:`TVLayout`, atom, swizzle, IntTuple or tiler."""
    return evaluate_text(text, bits=bits)


def to_canonical(value, shape=None, *, as_: str | None = None, warp_size: int = 32, name: str | None = None,
                 bits: int = 16) -> Layout:
    """The canonical layout of a CuTe value (see the module docstring)."""
    if isinstance(value, MmaAtom):
        raise LayoutError(f"{value.name} is an MMA atom; name an operand: {value.name}.A, .B or .C")
    if isinstance(value, CopyAtom):
        value = copy_tv(value, "Dst" if value.registers == "dst" else "Src", bits)
    if isinstance(value, TVLayout):
        if as_ not in (None, "register"):
            raise LayoutError(f"{value} is a thread/value layout; as_={as_!r} does not apply")
        lay = value.layout(warp_size)
        if shape is not None and tuple(int(s) for s in shape) != lay.shape:
            raise LayoutError(f"{value} covers a {'x'.join(map(str, lay.shape))} tile; "
                              f"shape {'x'.join(map(str, shape))} does not match")
        return lay
    if isinstance(value, CoordLayout):
        if as_ not in (None, "function"):
            raise LayoutError(f"{value} is a coordinate layout (ScaledBasis strides: index -> coordinate); "
                              f"as_={as_!r} does not apply (it has the function view only)")
        if shape is not None:
            raise LayoutError(f"{value} is a coordinate layout; shape= does not apply")
        return value.canonical(name=name)
    if isinstance(value, (CuteLayout, ComposedLayout)):
        inner = value if isinstance(value, CuteLayout) else value.inner
        if isinstance(inner, CuteLayout) and any(d < 0 for d in leaves(inner.stride)):
            raise UnsupportedError(f"{value} has negative strides: CuTe's algebra takes them, but offsets below 0 "
                                   f"have no place in the canonical form (memory offsets 0 .. cosize-1)")
        mode = as_ or "memory"
        if mode == "memory":
            return memory_layout(value, shape, name=name)
        if mode == "function":
            return function_layout(value, shape, name=name)
        if mode == "register":
            if not isinstance(value, CuteLayout):
                raise LayoutError(f"{value} is a swizzled/composed layout; a thread/value layout is a plain "
                                  f"(thread, value) layout")
            return written_tv_to_register(value, shape, warp_size, name=name)
        raise LayoutError(f"as_ must be 'memory', 'function' or 'register', got {as_!r}")
    if isinstance(value, Swizzle):
        raise LayoutError(f"{value} is a swizzle alone; compose it with a layout: {value} o (8,64):(64,1)")
    if isinstance(value, Underscore) or isinstance(value, tuple) and not _is_shape(value):
        raise LayoutError("a tiler is not a layout; use it in logical_divide(L, tiler) or composition(L, tiler)")
    if isinstance(value, (int, tuple)):
        from .layout import compact_layout
        return to_canonical(compact_layout(value), shape, as_=as_, warp_size=warp_size, name=name)
    raise LayoutError(f"not a layout: {value}")


def _native_atom_operand(body: str, bits: int):
    """CUTLASS's compiled TV layout when ``body`` names an atom (operand), else None."""
    m = re.fullmatch(r"(?:cute::)?(SM\w+?)(?:\.(\w+))?", body)
    if not m:
        return None
    name, operand = m.group(1), m.group(2)
    from . import cutlass_traits
    if name in mma_atoms():
        op = {"D": "C"}.get((operand or "").upper(), (operand or "").upper())
        if op not in ("A", "B", "C"):
            return None               # our parse reports the error
        return mma_tv(cutlass_traits.mma_atom(name), op)
    if name in copy_atoms():
        atom = cutlass_traits.copy_atom(name)
        side = {"src": "Src", "dst": "Dst", "s": "Src", "d": "Dst"}.get((operand or "").lower())
        if side is None:
            if operand is not None:
                return None
            side = "Dst" if atom.registers == "dst" else "Src"
        return copy_tv(atom, side, bits)
    return None


def _is_shape(v) -> bool:
    if isinstance(v, int):
        return True
    return isinstance(v, tuple) and all(_is_shape(e) for e in v)


_SPEC_WORDS = re.compile(
    r"^(SM[0-9]|logical_|blocked_|raked_|zipped_|tiled_|flat_|coalesce|composition|complement|right_inverse|"
    r"left_inverse|make_layout|make_swizzle|tiled_mma|mma_atom|copy_atom|tile_to_shape|make_tile|filter|get<|upcast<|"
    r"downcast<|[0-9])")


def looks_like(text: str) -> bool:
    """Whether unprefixed spec text is CuTe's (used by the registry to guess the framework)."""
    t = text.lstrip()
    return t.startswith(("(", "Sw<", "S<", "_", "GMMA::", "SM90::", "Layout<", "Swizzle<", "cute::", "!cute.")) or \
        bool(_SPEC_WORDS.match(t))


#: Text prefix declaring a hand-written layout a thread/value layout: ``tv:((32,4),(2,2)):((..),(..))``.
TV_PREFIX = "tv:"


_DSL_TYPE = re.compile(r'^!cute\.(?:layout|composed_layout|memref)<(?:[^"]*,\s*)?"(?P<layout>[^"]*)"\s*>$')


def dsl_layout_text(text: str) -> str:
    """The layout inside a CuTe DSL (``cutlass.cute``) MLIR type as the DSL prints it:
    ``!cute.layout<"(4,8):(8,1)">``, ``!cute.composed_layout<"S<3,4,3> o 0 o (8,64):(64,1)">``,
    ``!cute.memref<bf16, smem, align<1024>, "S<3,4,3> o 0 o ((8,8),(64,2)):((64,512),(1,4096))">``;
    other text is returned unchanged. (The DSL prints static integers plainly and ``?`` for dynamic
    ones, whose value the print does not give.)"""
    m = _DSL_TYPE.match(text.strip())
    return m.group("layout") if m else text


def parse(text: str, shape=None, **options) -> Layout:
    """Parse CuTe text into its canonical layout (see the module docstring for the options)."""
    as_ = options.get("as_") or options.get("as")
    warp_size = options.get("warp_size") or 32
    bits = options.get("bits") or 16
    body = dsl_layout_text(text).strip()
    if body.startswith(TV_PREFIX):
        if as_ not in (None, "register"):
            raise LayoutError(f"'tv:' declares a register layout; as_={as_!r} contradicts it")
        body, as_ = body[len(TV_PREFIX):], "register"
    value = evaluate_text(body, bits=bits)
    return to_canonical(value, shape, as_=as_, warp_size=warp_size, name=text.strip(), bits=bits)


def native(text: str, shape=None, **options) -> Layout:
    """The installed CuTe's answer for ``text``, in the same canonical form as :func:`parse`.

    An MMA or copy atom operand (``SM80_16x8x16_F32F16F16F32_TN.A``, ``SM75_U32x4_LDSM_N``) comes from
    CUTLASS's C++ ``MMA_Traits``/``Copy_Traits``, compiled from the headers (:mod:`.cutlass_traits`;
    the layout's name starts ``cute-cpp:``); anything else is evaluated by pycute, the Python CuTe
    (:mod:`.pycute_oracle`, which says what pycute covers and where it differs from CuTe C++; name
    ``pycute:``)."""
    from .pycute_oracle import native_value
    as_ = options.get("as_") or options.get("as")
    body = dsl_layout_text(text).strip()
    if body.startswith(TV_PREFIX):
        body, as_ = body[len(TV_PREFIX):], "register"
    atom_tv = _native_atom_operand(body, options.get("bits") or 16)
    if atom_tv is not None:
        lay = to_canonical(atom_tv, shape, warp_size=options.get("warp_size") or 32)
        return Layout(lay.in_dims, lay.out_dims, lay.exprs, name=f"cute-cpp: {text.strip()}")
    value = native_value(body)
    return to_canonical(value, shape, as_=as_, warp_size=options.get("warp_size") or 32,
                        name=f"pycute: {text.strip()}")
