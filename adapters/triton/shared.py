"""Triton shared-memory encodings -> canonical memory layouts (offset[, block] -> dim0, dim1, ...).

A memory layout's hardware dims are ``offset`` (the element index inside one CTA's buffer, in
elements, not bytes) and, when the encoding spreads the tensor over several CTAs, ``block``.
The map gives the logical coordinate stored at each offset: exactly the ``offset_bases`` /
``block_bases`` of the ``SharedLinearLayout`` that Triton's ``to_linear_layout`` returns.
Offsets are numbered with the *first* hardware dim fastest (``offset + N * block``).

Encodings (TTGIR spellings, parameters as Triton prints them):

``#ttg.swizzled_shared<{vec, perPhase, maxPhase, order[, CGALayout]}>``
    ``order[0]`` is the contiguous (column) dim, ``order[1]`` the row dim. Inside one CTA the
    columns come first in memory, then the rows (with a swizzle), then ``order[2:]``. In row
    ``r`` the groups of ``vec`` columns are XOR-ed with ``phase(r) = (r // perPhase) % maxPhase``:
    memory (row ``r``, column ``c``) holds logical column ``((c // vec) ^ phase(r)) * vec + c % vec``
    (TritonGPUAttrDefs.td, when ``vec * maxPhase <= numCols``). As an F2 map: offset bit
    ``log2(numCols) + j`` (row ``2**j``) maps to ``(row 2**j, col (vec * phase(2**j)) % numCols)``.
``#triton_gpu.shared<{vec, perPhase, maxPhase, order, hasLeadingOffset[, CTAsPerCGA, ...]}>``
    The pre-3.3 name. ``hasLeadingOffset = false`` is the swizzled layout above, built the old
    way: on the whole shape, then cut to one CTA (with several CTAs that conversion zeroes
    offset bases, i.e. is non-injective; it is reproduced as it was). ``hasLeadingOffset = true`` is the old MMAv3
    layout: an 8-row tile ``8 * tileBytes / elementBits`` columns wide, ``tileBytes`` 32/64/128
    for ``(perPhase, maxPhase)`` = (4, 2)/(2, 4)/(1, 8); it needs the element bit width, which the
    attribute lacks: pass ``element_bitwidth=`` (or ``element_type="f16"``).
``#ttg.nvmma_shared<{swizzlingByteWidth, transposed, elementBitWidth[, fp4Padded][, rank | CGALayout]}>``
    The layout of the PTX wgmma/tcgen05 shared-memory operands: core tiles of 8 rows x
    ``swizzlingByteWidth`` bytes with ``vec = 16 bytes``, ``perPhase = 128 / swizzlingByteWidth``,
    ``maxPhase = swizzlingByteWidth / 16``, tiled as Triton's TMA block (at most 256 per dim,
    contiguous dim exactly one swizzle row). ``transposed`` makes ``dim0`` the contiguous dim.
    ``fp4Padded`` (mxfp4 operands, 8-bit containers, 128-byte swizzle): each 16-byte chunk holds 8
    bytes of data and 8 of padding; like Triton, the padding offsets *replicate* the data
    offsets' coordinates (two holders per element), so the map stays F2-linear.
    ``swizzlingByteWidth = 0`` is unswizzled: TMA boxes with the contiguous dim fastest (row-major,
    or ``dim0`` first when transposed; rank > 2 transposed is refused: Triton 3.9 makes it
    non-injective). Triton <= 3.7 ignored ``transposed`` when unswizzled (row-major boxes);
    ``triton_version="3.6"``/``"3.7"`` reproduce that (Triton #10453 changed it in 3.8).
``#ttg.amd_rotating_shared<{vec, perPhase, maxPhase, order[, CGALayout]}>``
    Swizzled, with the phase also XOR-ed with the block number ``(r // (perPhase*maxPhase)) % maxPhase``.
``#ttg.shared_linear<{offset = [[...]], block = [[...]]}, alignment = N>``
    The bases themselves.
``#ttg.padded_shared<[I0:+P0, I1:+P1, ...] {offset = [[...]], block = [[...]]}>`` or
``#ttg.padded_shared<[I0:+P0, ...] {order = [...], shape = [...]}>`` (identity short form)
    **Not F2 in memory**: after every ``I_k`` elements, ``P_k`` padding slots are inserted, so
    the element with dense index ``i`` lives at slot ``i + sum_k (i // I_k) * P_k`` and the
    padding slots hold no element. The canonical form wants every hardware location to hold
    an element, so this adapter returns the layout over **dense** offsets: ``offset`` counts
    elements, padding skipped, which is Triton's own "linear component"
    (``paddedLinearLayout``); the padding is carried next to it, never dropped silently:
    the returned Layout's ``name`` spells it out, and its attributes ``padding`` (the
    ``(interval, pad)`` pairs) and ``physical_offset`` (an expression over ``offset``: the slot
    of that element) say where each element physically lives. :func:`padded_address_layout`
    gives the other direction, logical coordinate -> physical slot, as a Layout whose inputs
    are ``dim0, dim1, ...`` and whose output is ``offset`` (size = the padded buffer size).
    Two padded layouts that differ only in padding are therefore *equal* as canonical
    layouts; compare ``padding`` (or the address layouts) to tell them apart.

CTA (CGA) layouts, both spellings: ``CGALayout = [[...], ...]`` (Triton >= 3.5ish: one basis per
``block`` bit, each a logical coordinate in units of the per-CTA tile) and the older
``CTAsPerCGA = [...], CTASplitNum = [...], CTAOrder = [...]``. ``shapePerCTA[d] =
shape[d] / min(shape[d], split[d])``; CTAs that split nothing hold copies (zero ``block`` bases).

All sizes must be powers of two (Triton's requirement for these encodings). Semantics follow
Triton 3.9's ``LinearLayoutConversions.cpp`` (checked against the installed Triton in
``tests/test_triton_shared.py``); where older releases differ (the legacy ``shared`` kind,
``CTAsPerCGA``), the older behaviour is modelled from its source and not oracle-tested here.
"""
from __future__ import annotations

import re
from typing import Iterable, Mapping, Sequence

from layoutverify.core import expr as E
from layoutverify.core.errors import LayoutError, NotInvertibleError, SizeLimitError, UnsupportedError
from layoutverify.core.layout import Layout

from . import version
from .attr import Attr, encoding
from .cga import cga_bases, combine_cta_cga
from .ll import LL
from .parser import bool_param, describe, int_param

__all__ = [
    "swizzled_shared_layout", "nvmma_shared_layout", "padded_shared_layout",
    "shared_linear_layout", "amd_rotating_shared_layout", "legacy_shared_layout",
    "padded_address_layout", "physical_offset_expr", "padded_size", "tma_block_shape",
    "NVMMA_SWIZZLE_WIDTHS",
]

NVMMA_SWIZZLE_WIDTHS = (0, 32, 64, 128)
_NVMMA_ELEMENT_BITS = (4, 8, 16, 32, 64)
_MAX_DIM = 1 << 31                  # Triton keeps sizes and bases in int32
_TMA_DIM_MAX = 256                  # TMA box dims are at most 256 elements


def element_bits(type_name: str) -> int | None:
    """Bit width of an MLIR element type name (``f16``, ``bf16``, ``i8``, ``f8E4M3FN``, ``!tt.ptr<..>``)."""
    t = type_name.strip()
    if t.startswith("!tt.ptr"):
        return 64
    low = t.lower()
    if low in ("bf16", "tf32"):
        return 16 if low == "bf16" else 32
    if low.startswith(("f8", "fp8")):
        return 8
    m = re.fullmatch(r"(?:i|u|si|ui|f)([0-9]+)", low)
    if not m:
        return None
    return max(8, int(m.group(1))) if low in ("i1", "u1") else int(m.group(1))   # i1 is stored as a byte


def _is_pow2(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


def _log2(n: int) -> int:
    return n.bit_length() - 1


def _next_pow2_above(n: int) -> int:
    """Smallest power of two strictly greater than ``n`` (1 for 0): the size Triton infers for
    an out dim from its largest basis value."""
    return 1 << n.bit_length()


# ------------------------------------------------------------------------------------------------
# Steps of Triton's shared-layout conversions, on the adapter's one linear-layout class (.ll.LL)
# ------------------------------------------------------------------------------------------------
def _id(size: int, in_name: str, out_name: str) -> LL:
    """``LinearLayout::identity1D``; size 0 (a repetition count that rounded down) is the empty layout."""
    return LL.empty() if size == 0 else LL.identity1d(size, in_name, out_name)


def _inferred(ins, out_names) -> LL:
    """Out-dim sizes inferred from the largest basis value, as Triton's constructor does."""
    return LL.inferred(ins, out_names, require_surjective=False)


def _total(ll: LL) -> int:
    return _prod(s for _, s in ll.outs)


def _grow(ll: LL, shape: Mapping[str, int], names: Sequence[str] | None = None) -> LL:
    """Grow each out dim (in the order ``names``, default the layout's) to ``shape`` with identity
    bases appended to the first in dim (``offset``)."""
    first = next(iter(ll.bases))
    ret = ll
    for n in (names if names is not None else ll.out_names):
        ret = ret * _id(int(shape[n]) // ll.out_size(n), first, n)
    return ret


def _shrink(ll: LL, shape: Mapping[str, int]) -> LL:
    """Shrink each out dim to ``shape``: the most major bases that move it, ``offset`` first and
    ``block`` last (blocks replicate only as a last resort), stop moving it; the coordinate bits
    above a removed one move down."""
    ret = ll
    for n in ll.out_names:
        if ll.out_size(n) <= shape[n]:
            continue
        for in_name in ("offset", "warp", "lane", "register", "block"):
            if in_name in ret.bases:
                ret = _shrink_codomain(ret, in_name, n, int(shape[n]))
    return ret


def _shrink_codomain(ll: LL, in_name: str, out_name: str, desired: int) -> LL:
    d = ll.out_names.index(out_name)
    size = ll.out_size(out_name)
    zeros = _log2(size // desired) if desired < size else 0
    if zeros == 0:
        return ll
    to_zero = []
    for v in reversed(ll.bases[in_name]):
        if len(to_zero) == zeros:
            break
        if v[d]:
            to_zero.append(v[d])
    if not to_zero:
        return ll
    if not all(_is_pow2(b) for b in to_zero):
        raise UnsupportedError(f"cannot shrink {out_name!r}: bases {to_zero} are not powers of two")
    # New image of each out bit: removed bits map to 0, the bits above them shift down.
    image = [1 << i for i in range(_log2(size))]
    for b in sorted(to_zero):
        idx = _log2(b)
        for i in range(len(image) - 1, idx, -1):
            image[i] = image[i - 1]
        image[idx] = 0

    def remap(c: int) -> int:
        r = 0
        for i in range(len(image)):
            if (c >> i) & 1:
                r ^= image[i]
        return r

    bases = {k: [v[:d] + [remap(v[d])] + v[d + 1:] for v in vs] for k, vs in ll.bases.items()}
    new_size = _next_pow2_above(max(image, default=0))
    return LL(bases, [(n, new_size if n == out_name else s) for n, s in ll.outs])


def _reshape_row_major(ll: LL, shape: Sequence[int]) -> LL:
    """Reinterpret the out space (``dim0`` slowest) as ``shape``: flat index preserved."""
    sizes = [s for _, s in ll.outs]
    if _total(ll) != _prod(shape):
        raise AssertionError(f"reshape {sizes} -> {list(shape)}")

    def flat(v):
        f = 0
        for c, s in zip(v, sizes):
            f = f * s + c
        return f

    def unflat(f):
        cs = []
        for s in reversed(shape):
            cs.append(f % s)
            f //= s
        return list(reversed(cs))

    return LL({k: [unflat(flat(v)) for v in vs] for k, vs in ll.bases.items()},
              list(zip(_dim_names(len(shape)), shape)))


def _permute_dims(ll: LL, order: Sequence[int]) -> LL:
    """Result dim ``i`` is input dim ``order[i]`` (Triton's transposeLinearLayout)."""
    names = _dim_names(len(order))
    return LL({k: [[v[o] for o in order] for v in vs] for k, vs in ll.bases.items()},
              [(names[i], ll.outs[o][1]) for i, o in enumerate(order)])


def _prod(xs: Iterable[int]) -> int:
    n = 1
    for x in xs:
        n *= int(x)
    return n


def _dim_names(rank: int) -> list[str]:
    return [f"dim{i}" for i in range(rank)]


# ------------------------------------------------------------------------------------------------
# CTA (CGA) layouts
# ------------------------------------------------------------------------------------------------
class _CGA:
    """The block -> logical-tile layout of an encoding, plus how many CTAs split each dim."""

    def __init__(self, ll: LL, split: list[int]):
        self.ll = ll            # in-dim "block", out dims dim0.. (standard order)
        self.split = split

    def shape_per_cta(self, shape: Sequence[int]) -> list[int]:
        return [s // min(s, k) for s, k in zip(shape, self.split)]


def _cga_from_attr(attr: Attr, rank: int) -> _CGA:
    """Either spelling of the CTA layout, read and checked by :func:`.cga.cga_bases`."""
    bases = cga_bases(attr, rank)
    ll = _inferred({"block": bases}, _dim_names(rank))
    split = [1] * rank
    for b in bases:
        nz = [i for i, c in enumerate(b) if c]
        if nz:
            split[nz[0]] *= 2
    return _CGA(ll, split)


def _combine_cta_cga(cta: LL, cga: _CGA, shape: Sequence[int]) -> LL:
    """Triton's combineCtaCgaWithShape (:func:`.cga.combine_cta_cga`), cutting as the shared
    conversions do (:func:`_shrink`)."""
    return combine_cta_cga(cta, cga.ll, shape, fit_cga=_shrink, fit_cta=_shrink)


def _to_layout(ll: LL, name: str) -> Layout:
    bases = {"offset": ll.bases.get("offset", [])}
    if ll.bases.get("block"):
        bases["block"] = ll.bases["block"]
    return Layout.from_bases(bases, ll.outs, name=name)


# ------------------------------------------------------------------------------------------------
# Parameter reading and validation
# ------------------------------------------------------------------------------------------------
def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _pow2_param(attr: Attr, key: str) -> int:
    """A required positive power-of-two integer parameter (:func:`.parser.int_param`, then the power)."""
    v = int_param(attr, key, minimum=1)
    if not _is_pow2(v):
        raise LayoutError(f"{describe(attr)}: {key} must be a power of two, got {v}")
    return v


def _int_list(attr: Attr, key: str, rank: int | None = None, *, default=None) -> list[int]:
    if key not in attr.params:
        if default is not None:
            return list(default)
        raise LayoutError(f"#{attr.kind} needs a {key!r} parameter")
    v = attr.params[key]
    if not isinstance(v, (list, tuple)) or not all(_is_int(x) for x in v):
        raise LayoutError(f"#{attr.kind}: {key} must be a list of integers, got {v!r}")
    if rank is not None and len(v) != rank:
        raise LayoutError(f"#{attr.kind}: {key} has {len(v)} entries, expected {rank}")
    return [int(x) for x in v]


def _int_matrix(attr: Attr, key: str) -> list[list[int]]:
    v = attr.params.get(key, [])
    if not isinstance(v, (list, tuple)) or not all(
            isinstance(row, (list, tuple)) and all(_is_int(x) for x in row) for row in v):
        raise LayoutError(f"#{attr.kind}: {key} must be a list of integer lists, got {v!r}")
    return [[int(x) for x in row] for row in v]


def _check_permutation(attr: Attr, key: str, order: Sequence[int], rank: int) -> None:
    if sorted(order) != list(range(rank)):
        raise LayoutError(f"#{attr.kind}: {key} = {list(order)} is not a permutation of 0..{rank - 1}")


def _check_shape(attr: Attr, shape, rank: int | None) -> list[int]:
    if shape is None:
        raise LayoutError(f"#{attr.kind} is a shared-memory encoding: it needs a tensor shape (e.g. --shape 64x64)")
    try:
        shape = [int(s) for s in shape]
    except (TypeError, ValueError):
        raise LayoutError(f"shape must be a list of integers, got {shape!r}") from None
    if rank is not None and len(shape) != rank:
        raise LayoutError(f"#{attr.kind} has rank {rank} but the shape {shape} has rank {len(shape)}")
    for s in shape:
        if s < 1:
            raise LayoutError(f"shape {shape}: sizes must be positive")
        if s > _MAX_DIM:
            raise SizeLimitError(f"shape {shape}: size {s} exceeds 2**31")
        if not _is_pow2(s):
            raise UnsupportedError(f"shape {shape}: Triton shared encodings need power-of-two sizes, got {s}")
    return shape


def _element_bits_option(attr: Attr, options: Mapping) -> int:
    for key in ("element_bitwidth", "elementBitWidth", "element_bits"):
        if options.get(key) is not None:
            v = options[key]
            if not _is_int(v) or not _is_pow2(v) or v > 64:
                raise LayoutError(f"{key} must be a power of two up to 64, got {v!r}")
            return v
    for key in ("element_type", "dtype"):
        t = options.get(key)
        if t is not None:
            bits = element_bits(str(t))
            if bits is None:
                raise LayoutError(f"unknown element type {t!r} (give element_bitwidth instead)")
            return bits
    raise LayoutError(f"#{attr.kind} with hasLeadingOffset = true depends on the element bit width, which the "
                      "attribute does not carry: give the tensor type (e.g. tensor<64x64xf16, ...>) or element_bitwidth")


# ------------------------------------------------------------------------------------------------
# Swizzled shared (and AMD rotating)
# ------------------------------------------------------------------------------------------------
def _swizzle_params(attr: Attr) -> tuple[int, int, int, list[int]]:
    vec = _pow2_param(attr, "vec")
    per_phase = _pow2_param(attr, "perPhase")
    max_phase = _pow2_param(attr, "maxPhase")
    order = _int_list(attr, "order")
    if not order:
        raise LayoutError(f"#{attr.kind}: order must not be empty")
    _check_permutation(attr, "order", order, len(order))
    return vec, per_phase, max_phase, order


def _swizzled_tile(vec, per_phase, max_phase, order, sizes, *, rotating=False) -> LL:
    """Offsets of one CTA: columns (``order[0]``), then swizzled rows (``order[1]``), then
    ``order[2:]``. ``sizes`` are the dims the bases are built on."""
    rank = len(order)
    if rank == 1:
        return _id(sizes[0], "offset", "dim0")
    col, row = order[0], order[1]
    ncols, nrows = sizes[col], sizes[row]
    bases = [(0, 1 << i) for i in range(_log2(ncols))]
    for j in range(_log2(nrows)):
        r = 1 << j
        phase = (r // per_phase) % max_phase
        if rotating:
            phase ^= (r // max_phase // per_phase) % max_phase
        bases.append((r, (vec * phase) % ncols))
    ll = _inferred({"offset": bases}, [f"dim{row}", f"dim{col}"])
    for d in order[2:]:
        ll = ll * _id(sizes[d], "offset", f"dim{d}")
    return ll


def _describe(attr: Attr) -> str:
    return attr.text or f"#{attr.kind}<{attr.params}>"


def _swizzled_one_cta(vec, per_phase, max_phase, order, shape, name) -> Layout:
    """A rank-2 swizzled shared layout of one CTA, written out: what :func:`_swizzled_tile` and
    :func:`_combine_cta_cga` give when the tile is the whole tensor (no CTA split: fitting it
    changes nothing and the ``block`` dim is empty). Offset bit ``i`` of the ``ncols`` columns
    (``order[0]``, fastest) is column ``2**i``; the ``j``-th bit above them is row ``r = 2**j``
    with its column swizzled to ``(vec * ((r // perPhase) % maxPhase)) % ncols``.
    ``tests/test_triton_shared.py`` checks it against the general construction."""
    col, row = order
    ncols, nrows = shape[col], shape[row]
    bases = []
    for i in range(ncols.bit_length() - 1):
        v = [0, 0]
        v[col] = 1 << i
        bases.append(tuple(v))
    for j in range(nrows.bit_length() - 1):
        r = 1 << j
        v = [0, 0]
        v[row] = r
        v[col] = (vec * ((r // per_phase) % max_phase)) % ncols
        bases.append(tuple(v))
    return Layout.from_bases({"offset": bases}, shape, name=name)


def _swizzled_general(attr: Attr, vec, per_phase, max_phase, order, shape) -> Layout:
    """A swizzled shared layout through Triton's construction: tile, then CTA/CGA combine."""
    cga = _cga_from_attr(attr, len(order))
    tile = _swizzled_tile(vec, per_phase, max_phase, order, cga.shape_per_cta(shape))
    return _to_layout(_combine_cta_cga(tile, cga, shape), _describe(attr))


@encoding("swizzled_shared")
def swizzled_shared_layout(attr: Attr, shape=None, **options) -> Layout:
    vec, per_phase, max_phase, order = _swizzle_params(attr)
    shape = _check_shape(attr, shape, len(order))
    if len(order) == 2 and not cga_bases(attr, 2):
        return _swizzled_one_cta(vec, per_phase, max_phase, order, shape, _describe(attr))
    return _swizzled_general(attr, vec, per_phase, max_phase, order, shape)


@encoding("amd_rotating_shared")
def amd_rotating_shared_layout(attr: Attr, shape=None, **options) -> Layout:
    vec, per_phase, max_phase, order = _swizzle_params(attr)
    shape = _check_shape(attr, shape, len(order))
    cga = _cga_from_attr(attr, len(order))
    # Triton builds the rotating tile on the whole shape (not per CTA) and then fits it.
    sizes = cga.shape_per_cta(shape) if len(order) == 1 else shape
    tile = _swizzled_tile(vec, per_phase, max_phase, order, sizes, rotating=True)
    return _to_layout(_combine_cta_cga(tile, cga, shape), _describe(attr))


@encoding("shared")
def legacy_shared_layout(attr: Attr, shape=None, **options) -> Layout:
    """``#triton_gpu.shared`` (Triton < 3.3)."""
    vec, per_phase, max_phase, order = _swizzle_params(attr)
    rank = len(order)
    shape = _check_shape(attr, shape, rank)
    cga = _cga_from_attr(attr, rank)
    if not bool_param(attr, "hasLeadingOffset", False):
        tile = _swizzled_tile(vec, per_phase, max_phase, order, shape)
        return _to_layout(_combine_cta_cga(tile, cga, shape), _describe(attr))
    if rank == 1:
        return _to_layout(_combine_cta_cga(_id(shape[0], "offset", "dim0"), cga, shape), _describe(attr))
    widths = {(4, 2): 32, (2, 4): 64, (1, 8): 128}
    tile_bytes = widths.get((per_phase, max_phase))
    if tile_bytes is None:
        raise LayoutError(f"#{attr.kind} with hasLeadingOffset = true needs (perPhase, maxPhase) = (4, 2), (2, 4) "
                          f"or (1, 8), got ({per_phase}, {max_phase})")
    bits = _element_bits_option(attr, options)
    col, row = order[0], order[1]
    tile_rows, tile_cols = 8, 8 * tile_bytes // bits
    if shape[col] < tile_cols or shape[row] < tile_rows:
        raise LayoutError(f"#{attr.kind}: shape {shape} is smaller than the {tile_rows} x {tile_cols} tile "
                          f"(rows = dim{row}, columns = dim{col})")
    bases = [(0, 1 << i) for i in range(_log2(tile_cols))]
    bases += [(1 << j, vec * (((1 << j) // per_phase) % max_phase)) for j in range(_log2(tile_rows))]
    tile = _inferred({"offset": bases}, [f"dim{row}", f"dim{col}"])
    for d in order[2:]:
        tile = tile * _id(shape[d], "offset", f"dim{d}")
    return _to_layout(_combine_cta_cga(tile, cga, shape), _describe(attr))


# ------------------------------------------------------------------------------------------------
# NVMMA shared
# ------------------------------------------------------------------------------------------------
def tma_block_shape(shape_per_cta: Sequence[int], element_bits: int, swizzle_bytes: int,
                    fp4_padded: bool, transposed: bool) -> list[int]:
    """The TMA box one NVMMA tile covers, in (packed) elements: every dim at most 256, the
    contiguous dim exactly one swizzle row (``8 * swizzle_bytes / element_bits``)."""
    block = list(shape_per_cta)
    contig = 0 if transposed else len(block) - 1
    if fp4_padded:
        block[contig] *= 2
    block = [min(s, _TMA_DIM_MAX) for s in block]
    if swizzle_bytes:
        row = 8 * swizzle_bytes // element_bits
        if block[contig] < row:
            raise LayoutError(f"nvmma_shared: the contiguous dim (dim{contig}) holds {block[contig]} elements per CTA, "
                              f"fewer than one {swizzle_bytes}-byte swizzle row ({row} elements of {element_bits} bits)")
        block[contig] = row
    if fp4_padded:
        block[contig] //= 2
    return block


def _nvmma_core_tile(element_bits: int, swizzle_bytes: int, fp4_padded: bool) -> LL:
    """8 rows x one swizzle row: 16-byte vectors of row ``r`` XOR-ed with ``(r // perPhase) % maxPhase``."""
    vec = 128 // element_bits
    per_phase, max_phase = 128 // swizzle_bytes, swizzle_bytes // 16
    tile_cols = 8 * max(16, swizzle_bytes) // element_bits

    def packed(col: int) -> int:          # fp4Padded: 8 data bytes then 8 padding bytes per 16
        return col // 16 * 8 + col % 8 if fp4_padded else col

    bases = [(0, packed(1 << i)) for i in range(_log2(tile_cols))]
    bases += [(1 << j, packed(vec * (((1 << j) // per_phase) % max_phase))) for j in range(3)]
    return _inferred({"offset": bases}, ["dim0", "dim1"])


def _nvmma_rank(attr: Attr) -> int:
    cga = _int_matrix(attr, "CGALayout") if "CGALayout" in attr.params else None
    for key in ("CTAsPerCGA", "CTASplitNum", "CTAOrder"):
        if key in attr.params:
            return len(_int_list(attr, key))
    if cga:
        return len(cga[0])
    return int_param(attr, "rank", 2, minimum=1)


@encoding("nvmma_shared")
def nvmma_shared_layout(attr: Attr, shape=None, **options) -> Layout:
    swizzle = attr.params.get("swizzlingByteWidth")
    if swizzle is None:
        raise LayoutError(f"#{attr.kind} needs a 'swizzlingByteWidth' parameter")
    if not _is_int(swizzle) or swizzle not in NVMMA_SWIZZLE_WIDTHS:
        raise LayoutError(f"#{attr.kind}: swizzlingByteWidth must be 0, 32, 64 or 128, got {swizzle!r}")
    bits = attr.params.get("elementBitWidth")
    if bits is None:
        raise LayoutError(f"#{attr.kind} needs an 'elementBitWidth' parameter")
    if not _is_int(bits) or bits not in _NVMMA_ELEMENT_BITS:
        raise LayoutError(f"#{attr.kind}: elementBitWidth must be one of {list(_NVMMA_ELEMENT_BITS)}, got {bits!r}")
    transposed = bool_param(attr, "transposed")
    fp4 = bool_param(attr, "fp4Padded")
    if fp4 and (swizzle != 128 or bits != 8):
        raise LayoutError(f"#{attr.kind}: fp4Padded needs swizzlingByteWidth = 128 and elementBitWidth = 8, "
                          f"got {swizzle} and {bits}")
    rank = _nvmma_rank(attr)
    shape = _check_shape(attr, shape, rank)
    cga = _cga_from_attr(attr, rank)
    spc = cga.shape_per_cta(shape)
    names = _dim_names(rank)
    if rank == 1 and swizzle:
        raise LayoutError(f"#{attr.kind}: a swizzled ({swizzle}-byte) layout needs rank >= 2")
    tma = tma_block_shape(spc, bits, swizzle, fp4, transposed)
    if swizzle == 0 and transposed and version.before(options, "3.8"):
        # Triton <= 3.7 ignored ``transposed`` here: row-major boxes (fixed by #10453, Triton 3.8)
        transposed = False
    if swizzle == 0:
        # Unswizzled: plain TMA boxes, the contiguous dim fastest (dim0 when transposed).
        if transposed and rank > 2:
            raise UnsupportedError(
                f"#{attr.kind}: an unswizzled transposed layout of rank {rank} is not modelled: Triton 3.9 "
                "maps it to a non-injective offset layout (several offsets per element)")
        ll = LL({"offset": []}, [])
        for d in (range(rank) if transposed else reversed(range(rank))):
            ll = ll * _id(tma[d], "offset", names[d])
        # more boxes than one: the last dim's boxes first, also when transposed (Triton 3.9)
        ll = _grow(ll, dict(zip(names, spc)), names[::-1])
        return _to_layout(_combine_cta_cga(ll, cga, shape), _describe(attr))

    rows, cols = _prod(tma[:-1]), tma[-1]
    if transposed:
        rows, cols = cols, rows
    tile = _nvmma_core_tile(bits, swizzle, fp4)
    tile_rows, tile_cols = tile.out_size("dim0"), tile.out_size("dim1")
    packing = 2 if fp4 else 1
    if cols * packing < tile_cols or rows < tile_rows:
        raise LayoutError(f"#{attr.kind}: Illegal shared layout; the per-CTA tile, collapsed to 2-D, is "
                          f"[{rows}, {cols}] but must be at least [{tile_rows}, {tile_cols // packing}]")
    ll = _grow(tile, {"dim0": rows, "dim1": cols}, ["dim0", "dim1"])
    pre_shape = tma[1:] + tma[:1] if transposed else list(tma)
    if _total(ll) != _prod(pre_shape):
        raise LayoutError(f"#{attr.kind}: Illegal shared layout for shape {shape}")
    ll = _reshape_row_major(ll, pre_shape)
    if transposed:
        ll = _permute_dims(ll, [rank - 1] + list(range(rank - 1)))
    ll = _grow(ll, dict(zip(names, spc)), names)
    return _to_layout(_combine_cta_cga(ll, cga, shape), _describe(attr))


# ------------------------------------------------------------------------------------------------
# Shared linear
# ------------------------------------------------------------------------------------------------
def _bases_block(attr: Attr) -> tuple[list[list[int]], list[list[int]], int]:
    offset = _int_matrix(attr, "offset")
    block = _int_matrix(attr, "block")
    rows = offset + block
    if not rows:
        raise LayoutError(f"#{attr.kind}: offset bases must not be empty")
    rank = len(rows[0])
    if rank == 0 or any(len(r) != rank for r in rows):
        raise LayoutError(f"#{attr.kind}: every basis needs the same number (>= 1) of entries")
    if any(c < 0 or c >= _MAX_DIM for r in rows for c in r):
        raise LayoutError(f"#{attr.kind}: basis entries must lie in [0, 2**31)")
    return offset, block, rank


def _check_alignment_placement(attr: Attr) -> None:
    """Triton 3.9 reads ``alignment`` only after the bases' braces
    (``#ttg.shared_linear<{offset = [...]}, alignment = 16>``) and rejects it inside them."""
    text = attr.text or ""
    open_at = text.find("{")
    if open_at < 0:
        return
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            if re.search(r"[{,]\s*alignment\s*=", text[open_at:i + 1]):
                raise LayoutError(f"#{attr.kind}: alignment must be specified outside of the linear layout braces "
                                  f"(write #ttg.shared_linear<{{offset = [...]}}, alignment = N>)")
            return


@encoding("shared_linear")
def shared_linear_layout(attr: Attr, shape=None, **options) -> Layout:
    _check_alignment_placement(attr)
    alignment = attr.params.get("alignment", 16)
    if not _is_int(alignment) or not _is_pow2(alignment):
        raise LayoutError(f"#{attr.kind}: alignment must be a positive power of two, got {alignment!r}")
    offset, block, rank = _bases_block(attr)
    ll = _inferred({"offset": offset, "block": block}, _dim_names(rank))
    sizes = [s for _, s in ll.outs]
    if shape is not None:
        shape = _check_shape(attr, shape, rank)
        if list(shape) != sizes:
            raise LayoutError(f"#{attr.kind}: its bases span {sizes}, but the shape is {list(shape)} "
                              "(Triton does not broadcast shared linear layouts)")
    nonzero = [tuple(v) for v in offset + block if any(v)]
    lay = _to_layout(ll, _describe(attr))
    if len(nonzero) != _log2(_total(ll)) or not lay.is_surjective():
        raise LayoutError(f"#{attr.kind}: the layout must be surjective and, without its zero bases, "
                          "a bijection (every element stored once per copy)")
    return lay


# ------------------------------------------------------------------------------------------------
# Padded shared
# ------------------------------------------------------------------------------------------------
def _padding_pairs(attr: Attr) -> list[tuple[int, int]]:
    p = attr.params
    if "intervals" in p or "paddings" in p:
        intervals, paddings = _int_list(attr, "intervals"), _int_list(attr, "paddings")
        if len(intervals) != len(paddings):
            raise LayoutError(f"#{attr.kind}: {len(intervals)} intervals but {len(paddings)} paddings")
        pairs = list(zip(intervals, paddings))
    else:
        key = next((k for k in ("interval_padding_pairs", "intervalPaddings", "padding") if k in p), None)
        if key is None:
            raise LayoutError(f"#{attr.kind} needs its [interval:+padding, ...] list")
        pairs = []
        for item in _int_matrix(attr, key):
            if len(item) != 2:
                raise LayoutError(f"#{attr.kind}: each interval-padding pair needs 2 numbers, got {item}")
            pairs.append((item[0], item[1]))
    if not pairs:
        raise LayoutError(f"#{attr.kind}: needs at least one interval-padding pair")
    for i, pd in pairs:
        if not (_is_pow2(i) and _is_pow2(pd)):
            raise LayoutError(f"#{attr.kind}: interval {i} and padding {pd} must be powers of two")
    if len({i for i, _ in pairs}) != len(pairs):
        raise LayoutError(f"#{attr.kind}: interval values cannot repeat")
    return pairs


def _padded_linear_component(attr: Attr) -> LL:
    p = attr.params
    if "offset" in p or "block" in p:
        extra = sorted(set(p) & {"order", "shape"})
        if extra:
            raise LayoutError(f"#{attr.kind}: give offset/block bases or order/shape, not both ({extra})")
        offset, block, rank = _bases_block(attr)
        for r in offset + block:
            if sum(1 for c in r if c) > 1 or any(c and not _is_pow2(c) for c in r):
                raise LayoutError(f"#{attr.kind}: basis {r}: each basis must move one dim by a power of two")
        ll = _inferred({"offset": offset, "block": block}, _dim_names(rank))
        vecs = [tuple(r) for r in offset + block]
        if any(not any(v) for v in vecs) or len(set(vecs)) != len(vecs) or \
                len(vecs) != _log2(_total(ll)):
            raise LayoutError(f"#{attr.kind}: the linear component must be a bijection (no zero or repeated bases, "
                              "no holes)")
        return ll
    order = _int_list(attr, "order")
    shape = _int_list(attr, "shape", len(order))
    _check_permutation(attr, "order", order, len(order))
    for s in shape:
        if not _is_pow2(s) or s > _MAX_DIM:
            raise LayoutError(f"#{attr.kind}: shape {shape} needs power-of-two sizes below 2**31")
    ll = LL({"offset": []}, [])
    for d in order:
        ll = ll * _id(shape[d], "offset", f"dim{d}")
    return ll.transpose_outs(_dim_names(len(order)))


def padded_size(pairs: Sequence[tuple[int, int]], n: int) -> int:
    """Slots a padded buffer of ``n`` elements occupies (no padding after the last element)."""
    size = n
    for interval, pad in pairs:
        size += (n // interval) * pad - (pad if n % interval == 0 else 0)
    return size


def physical_offset_expr(pairs: Sequence[tuple[int, int]], dense: E.Expr | None = None) -> E.Expr:
    """Slot of the element with dense index ``dense`` (default ``Var("offset")``):
    ``dense + sum_k (dense // interval_k) * pad_k``."""
    dense = E.Var("offset") if dense is None else dense
    out = dense
    for interval, pad in pairs:
        out = out + (dense // interval) * pad
    return out


def _padded_parts(attr: Attr, shape) -> tuple[list[tuple[int, int]], LL]:
    pairs = _padding_pairs(attr)
    ll = _padded_linear_component(attr)
    sizes = [s for _, s in ll.outs]
    if shape is not None:
        shape = _check_shape(attr, shape, len(sizes))
        if list(shape) != sizes:
            raise LayoutError(f"#{attr.kind}: its linear component covers {sizes}, but the shape is {list(shape)}")
    return pairs, ll


@encoding("padded_shared")
def padded_shared_layout(attr: Attr, shape=None, **options) -> Layout:
    """Dense offsets (padding skipped); see the module docstring. The returned Layout carries
    ``padding`` and ``physical_offset``."""
    pairs, ll = _padded_parts(attr, shape)
    pad_text = ", ".join(f"{i}:+{p}" for i, p in pairs)
    lay = _to_layout(ll, f"{_describe(attr)} (offset = dense element index; element at dense offset i is in "
                         f"slot i + sum(i // interval * pad) for [{pad_text}])")
    lay.padding = tuple(pairs)
    lay.physical_offset = physical_offset_expr(pairs)
    return lay


def padded_address_layout(attr: Attr, shape=None) -> Layout:
    """Logical coordinate -> physical slot of a ``padded_shared`` encoding, as a Layout whose
    inputs are ``dim0, dim1, ...`` and whose outputs are ``offset`` (the padded buffer size) and,
    with several CTAs, ``block``. Built symbolically: the dense index is the F2 inverse of the
    linear component, then padding is added."""
    pairs, ll = _padded_parts(attr, shape)
    names = [n for n, _ in ll.outs]
    n_off = len(ll.bases.get("offset", []))
    rows = [("offset", i, v) for i, v in enumerate(ll.bases.get("offset", []))] + \
           [("block", i, v) for i, v in enumerate(ll.bases.get("block", []))]
    # Each basis moves exactly one logical bit (checked in the linear component): invert bit by bit.
    dense: E.Expr = E.Const(0)
    block: E.Expr = E.Const(0)
    for in_name, i, v in rows:
        d = next((k for k, c in enumerate(v) if c), None)
        if d is None:
            raise NotInvertibleError(f"#{attr.kind}: zero basis; the linear component is not invertible")
        bit = (E.Var(names[d]) >> _log2(v[d])) & 1
        if in_name == "offset":
            dense = dense + (bit << i) if i else dense + bit
        else:
            block = block + (bit << i) if i else block + bit
    outs = [("offset", padded_size(pairs, 1 << n_off))]
    exprs = [physical_offset_expr(pairs, dense)]
    if ll.bases.get("block"):
        outs.append(("block", 1 << len(ll.bases["block"])))
        exprs.append(block)
    return Layout(ll.outs, outs, exprs, name=f"address of {_describe(attr)}")


def encoding_rank(attr: Attr) -> int | None:
    """The rank a memory encoding is written for, or None when the text does not fix it."""
    p = attr.params
    if attr.kind.startswith(("ttng.", "triton_nvidia_gpu.")):
        return 2
    if attr.kind == "partitioned_shared" and isinstance(p.get("partitionLayout"), Attr):
        return encoding_rank(p["partitionLayout"])
    for key in ("offset", "CGALayout"):
        v = p.get(key)
        if isinstance(v, list) and v and isinstance(v[0], list):
            return len(v[0])
    for key in ("order", "CTAOrder", "CTAsPerCGA", "shape"):
        v = p.get(key)
        if isinstance(v, list):
            return len(v)
    if attr.kind == "nvmma_shared":
        r = p.get("rank", 2)
        return r if isinstance(r, int) and not isinstance(r, bool) else None
    return None


# ------------------------------------------------------------------------------------------------
# Partitioned shared
# ------------------------------------------------------------------------------------------------
@encoding("partitioned_shared")
def partitioned_shared_layout(attr: Attr, shape=None, **options) -> Layout:
    """``#ttg.partitioned_shared<{numPartitions = P, numGroups = G, partitionDim = d, partitionLayout = #inner}>``.

    The tensor is cut along ``dim d`` into ``P * G`` equal pieces; piece ``i`` goes to partition
    (a separate buffer) ``i % P``, at group ``i // P`` inside it, so partition 0 holds pieces 0, P,
    2P, ... one after the other (``partitionedSharedToLinearLayout``). Each piece is laid out by
    ``#inner`` over the piece's shape. Hardware dims: ``offset`` (inside one partition),
    ``partition``, ``block``. With a ``padded_shared`` inner layout the offsets are dense (padding
    skipped, as for ``padded_shared`` itself: Triton's ``paddedLinearLayout``), and the returned
    Layout carries the inner ``padding``.
    """
    for key in ("numPartitions", "numGroups", "partitionDim", "partitionLayout"):
        if key not in attr.params:
            raise LayoutError(f"#ttg.{attr.kind} needs parameter {key}")
    unknown = sorted(set(attr.params) - {"numPartitions", "numGroups", "partitionDim", "partitionLayout"})
    if unknown:
        raise LayoutError(f"#ttg.{attr.kind} has no parameter {', '.join(map(repr, unknown))}")
    n_part = int_param(attr, "numPartitions")
    n_group = int_param(attr, "numGroups")
    pdim = int_param(attr, "partitionDim")
    inner = attr.params["partitionLayout"]
    if not isinstance(inner, Attr):
        raise LayoutError(f"#ttg.{attr.kind}: partitionLayout must be a shared layout attribute, got {inner!r}")
    if n_part < 2 or not _is_pow2(n_part):
        raise LayoutError(f"#ttg.{attr.kind}: numPartitions must be a power of 2 and at least 2, got {n_part}")
    if n_group < 1 or not _is_pow2(n_group):
        raise LayoutError(f"#ttg.{attr.kind}: numGroups must be a power of 2 and greater than 0, got {n_group}")
    fn = _SHARED_INNER.get(inner.kind)
    if fn is None:
        raise LayoutError(f"#ttg.{attr.kind}: partitionLayout must be a shared layout, got #ttg.{inner.kind}")
    rank = encoding_rank(inner)
    if rank is not None and pdim >= rank:
        raise LayoutError(f"#ttg.{attr.kind}: partitionDim ({pdim}) must be less than the layout rank ({rank})")
    shape = _check_shape(attr, shape, rank)
    pieces = n_part * n_group
    if shape[pdim] % pieces or shape[pdim] < pieces:
        raise LayoutError(f"#ttg.{attr.kind}: dim{pdim} of shape {shape} does not split into {pieces} pieces "
                          f"(numPartitions x numGroups)")
    piece_shape = list(shape)
    piece_shape[pdim] //= pieces
    base = fn(inner, None if inner.kind == "padded_shared" else piece_shape, **options)
    names = _dim_names(len(shape))
    ll = (LL.from_layout(base) * LL.identity1d(n_part, "partition", names[pdim])
          * LL.identity1d(n_group, "offset", names[pdim]))
    if [s for _, s in ll.transpose_outs(names).outs] != list(shape):
        raise LayoutError(f"#ttg.{attr.kind}: its pieces cover {[s for _, s in ll.transpose_outs(names).outs]}, "
                          f"the shape is {shape}")
    lay = ll.to_layout(shape, ("offset", "partition", "block"), name=_describe(attr))
    if getattr(base, "padding", None):
        lay.padding = base.padding
    return lay


#: shared layouts a partitioned layout may wrap
_SHARED_INNER = {"swizzled_shared": swizzled_shared_layout, "nvmma_shared": nvmma_shared_layout,
                 "shared_linear": shared_linear_layout, "padded_shared": padded_shared_layout,
                 "amd_rotating_shared": amd_rotating_shared_layout}
