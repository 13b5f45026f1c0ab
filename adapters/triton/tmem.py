"""Blackwell tensor memory (TMEM) encodings as memory layouts over TMEM rows and columns.

Tensor memory is a 2-D array per CTA: 128 rows (the PTX ISA calls them *lanes*; warp ``w`` of a
warp group reaches rows ``32 * (w % 4) .. + 31``) by 512 columns of 32-bit cells. A TMEM layout
says which tensor element each cell holds, so its hardware dims are

* ``row``: the TMEM lane (0..127; DESIGN.md's memory-layout ``offset``, split in two because
  TMEM is addressed by lane and column, not linearly),
* ``col``: the 32-bit column,
* ``block``: the CTA of the cluster (CGA layout), as for every Triton layout,

and its logical dims ``dim0`` (M, rows of the tile) and ``dim1`` (N). These are the in-dim names
of Triton's own ``toLinearLayout`` for these encodings (``LinearLayoutConversions.cpp``,
``tensorMemoryToLinearLayout`` / ``tensorMemoryScalesToLinearLayout``; formulas re-derived from
there and checked against the installed Triton's ``GluonOpBuilder.to_linear_layout`` in
``tests/test_triton_tmem.py``). Zero bases mean: along ``row`` bits 5 and 6 (lanes 32 and 64) a
copy of the same element in another warp's quarter; elsewhere a cell whose content is undefined
(``colStride`` > 1 leaves the columns between two elements unused).

``#ttng.tensor_memory_encoding<blockM = M, blockN = N, colStride = S[, CGALayout = [...]][, twoCTAs = true]>``
    One MMA block of ``blockM`` (64 or 128) rows by ``blockN`` columns per CTA, elements
    ``colStride`` columns apart (1: packed, 2 or 4: one 16-/8-bit element per 32-bit cell;
    the older ``unpacked = true``, which Triton 3.9 rejects, is refused naming ``colStride = 2``).
    ``fp4Padded = true`` (Triton 3.9, with colStride 1: an operand A of packed FP4 pairs in
    bytes, one byte of TMEM per FP4 value) spaces the elements like ``colStride = 2``. With ``blockM = 128`` row ``r`` holds
    tensor row ``r``; with ``blockM = 64`` (one CTA) rows 0-15 of each 32-lane quarter hold the
    block's rows and lanes 16-31 hold the next block (the one below, or to the right when the
    tensor has no more rows), so 64-row blocks interleave in pairs. With ``twoCTAs``
    (``cta_group::2``) and ``blockM = 64`` the top column bit moves to the rows. Blocks repeat
    along the columns: first down M, then across N. ``CGALayout`` splits the tensor over CTAs.
``#ttng.tensor_memory_scales_encoding<[CGALayout = [...]]>``
    The block-scale factors of ``tcgen05.mma ... .block_scale`` (PTX ISA, "Scale factor A/B
    layout"): 32 lanes x 4 columns per 128-row chunk, the four warp quarters holding copies;
    the tile then repeats along the columns, first over M then over N, and is cut to the tensor.

A ``!ttg.memdesc<...>`` of these encodings with an allocation shape is read over the
allocation's trailing two dims, as Triton's ``toLinearLayout(MemDescType)`` does.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout

from .attr import Attr, encoding
from .cga import cga_bases
from .linear import need_shape
from .ll import LL, dim_names, is_pow2
from .parser import bool_param, check_params, describe, int_param

TMEM_DIMS = ("row", "col", "block")
TMEM_ROWS = 128
TMEM_COLUMNS = 512
_CGA = ("CGALayout", "CTAsPerCGA", "CTASplitNum", "CTAOrder")
_TMEM_KEYS = ("blockM", "blockN", "colStride", "unpacked", "twoCTAs", "fp4Padded", "CTASplitM", "CTASplitN") + _CGA


def _cga(attr: Attr) -> tuple[LL, list[int]]:
    """The rank-2 CGA layout (``block`` -> tile) and how many CTAs split each dim."""
    p = attr.params
    if "CTASplitM" in p or "CTASplitN" in p:
        raise LayoutError(f"{describe(attr)}: CTASplitM/CTASplitN are the pre-3.6 spelling; Triton 3.6-3.9 "
                          f"write the CTA split as CGALayout = [[1, 0]] (block bases)")
    bases = cga_bases(attr, 2)
    split = [1, 1]
    for b in bases:
        for d, c in enumerate(b):
            if c:
                split[d] *= 2
    return LL.inferred({"block": bases}, dim_names(2), require_surjective=False), split


def _per_cta(shape: Sequence[int], split: Sequence[int]) -> list[int]:
    """``getShapePerCTA``: each dim divided by its CTA split (never below 1)."""
    return [s // min(s, k) for s, k in zip(shape, split)]


def _zero_past(ll: LL, shape: Mapping[str, int]) -> LL:
    """``ensureLayoutNotLargerThan``: every basis coordinate past the tensor's size is zeroed
    (a broadcast) and the out sizes are cut to the tensor."""
    sizes = [min(s, shape[n]) for n, s in ll.outs]
    bases = {k: [[0 if c >= sizes[d] else c for d, c in enumerate(v)] for v in vs] for k, vs in ll.bases.items()}
    return LL(bases, [(n, s) for (n, _), s in zip(ll.outs, sizes)])


def _id(size: int, in_dim: str, out_dim: str) -> LL:
    return LL.identity1d(size, in_dim, out_dim)


def tensor_memory_ll(attr: Attr, shape) -> LL:
    """``tensorMemoryToLinearLayout`` (see the module docstring)."""
    check_params(attr, required=("blockM", "blockN"), optional=_TMEM_KEYS)
    block_m = int_param(attr, "blockM")
    block_n = int_param(attr, "blockN")
    if "unpacked" in attr.params:
        raise LayoutError(f"{describe(attr)}: unpacked is the old spelling, which Triton 3.9 rejects; write "
                          f"colStride = 2 (unpacked = true) or colStride = 1 (unpacked = false)")
    if "colStride" in attr.params:
        col_stride = int_param(attr, "colStride")
    else:
        raise LayoutError(f"{describe(attr)} needs parameter colStride (1 = packed, 2 or 4 = one element per "
                          f"32-bit column)")
    two_ctas = bool_param(attr, "twoCTAs")
    fp4_padded = bool_param(attr, "fp4Padded")
    if block_m not in (64, 128):
        raise LayoutError(f"{describe(attr)}: blockM must be 64 or 128 but got {block_m}")
    if not is_pow2(block_n):
        raise LayoutError(f"{describe(attr)}: blockN must be a power of 2 but got {block_n}")
    if block_n > TMEM_COLUMNS:
        raise LayoutError(f"{describe(attr)}: blockN must be less than or equal to {TMEM_COLUMNS} but got {block_n}")
    if col_stride not in (1, 2, 4):
        raise LayoutError(f"{describe(attr)}: colStride must be 1, 2, or 4 but got {col_stride}")
    if fp4_padded and col_stride != 1:
        raise LayoutError(f"{describe(attr)}: fp4Padded tensor memory layout requires colStride 1 but got {col_stride}")
    cga, split = _cga(attr)
    if two_ctas and (not cga.bases["block"] or cga.bases["block"][0] != [1, 0]):
        raise LayoutError(f"{describe(attr)}: twoCTAs layout requires the first CGALayout block basis to be [1, 0]")
    shape = need_shape(attr, shape, 2)
    spc = _per_cta(shape, split)
    d0, d1 = dim_names(2)
    block_n = min(block_n, spc[1])
    # fp4Padded: each byte-backed element (two FP4 values) takes one byte per FP4 value, i.e. two
    # columns' worth of stride, as colStride = 2 does (checked against Triton 3.9)
    tile = LL.zeros1d(col_stride * (2 if fp4_padded else 1), "col", d1)
    if block_m == 64 and not two_ctas:
        tile = tile * _id(16, "row", d0) * _id(block_n, "col", d1)
        rows = [list(v) for v in tile.transpose_outs([d0, d1]).bases["row"]]
        if spc[0] > block_m:
            rows.append([64, 0])          # lanes 16-31: the next 64-row block
        elif spc[1] > block_n:
            rows.append([0, block_n])     # lanes 16-31: the next block to the right
        else:
            rows.append([0, 0])           # lanes 16-31 hold nothing defined
        rows += [[16, 0], [32, 0]]
        cols = [list(v) for v in tile.transpose_outs([d0, d1]).bases["col"]]
        tile = LL.inferred({"col": cols, "row": rows}, [d0, d1], require_surjective=False)
    else:
        tile = tile * _id(block_m, "row", d0) * _id(block_n, "col", d1)
        if block_m == 64:                 # twoCTAs: the top column bit addresses rows 64..127
            t = tile.transpose_outs([d0, d1])
            cols = [list(v) for v in t.bases["col"]]
            rows = [list(v) for v in t.bases["row"]] + [cols.pop()]
            tile = LL({"col": cols, "row": rows}, t.outs)
    t = tile.transpose_outs([d0, d1])
    reps_m, reps_n = spc[0] // t.out_size(d0), spc[1] // t.out_size(d1)
    if reps_m < 1 or reps_n < 1:
        raise LayoutError(f"{describe(attr)}: the per-CTA tensor {spc[0]}x{spc[1]} is smaller than one "
                          f"{t.out_size(d0)}x{t.out_size(d1)} TMEM block; Triton aborts on it "
                          f"(tensorMemoryToLinearLayout: repsM >= 1 && repsN >= 1)")
    tile = tile * _id(reps_m, "col", d0) * _id(reps_n, "col", d1)
    return (tile * cga).transpose_outs([d0, d1])


def tensor_memory_scales_ll(attr: Attr, shape) -> LL:
    """``tensorMemoryScalesToLinearLayout`` (see the module docstring)."""
    check_params(attr, optional=_CGA)
    cga, split = _cga(attr)
    shape = need_shape(attr, shape, 2)
    spc = _per_cta(shape, split)
    d0, d1 = dim_names(2)
    tile = (_id(32, "row", d0) * LL.zeros1d(4, "row", d0) * _id(4, "col", d1) * _id(2, "col", d0))
    t = tile.transpose_outs([d0, d1])
    reps_m = -(-spc[0] // t.out_size(d0))
    reps_n = -(-spc[1] // t.out_size(d1))
    tile = tile * _id(reps_m, "col", d0) * _id(reps_n, "col", d1) * LL({"block": []}, [(d0, 1)])
    tile = _zero_past(tile, {d0: spc[0], d1: spc[1]})
    return (tile * cga).transpose_outs([d0, d1])


def _to_layout(ll: LL, attr: Attr) -> Layout:
    bases = {k: ll.bases.get(k, []) for k in TMEM_DIMS}
    return Layout.from_bases(bases, list(ll.outs), name=attr.text or describe(attr))


@encoding("ttng.tensor_memory_encoding", "triton_nvidia_gpu.tensor_memory_encoding")
def tensor_memory_layout(attr: Attr, shape=None, **options) -> Layout:
    """``#ttng.tensor_memory_encoding<...>`` over a tensor of ``shape`` -> ``row, col, block`` -> ``dim0, dim1``."""
    return _to_layout(tensor_memory_ll(attr, shape), attr)


@encoding("ttng.tensor_memory_scales_encoding", "triton_nvidia_gpu.tensor_memory_scales_encoding")
def tensor_memory_scales_layout(attr: Attr, shape=None, **options) -> Layout:
    """``#ttng.tensor_memory_scales_encoding<...>`` -> ``row, col, block`` -> ``dim0, dim1``."""
    return _to_layout(tensor_memory_scales_ll(attr, shape), attr)
