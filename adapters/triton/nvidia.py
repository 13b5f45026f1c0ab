"""NVIDIA tensor-core layouts: ``#ttg.nvidia_mma`` (Ampere v2, Hopper v3) and its dot operands.

Conventions (Triton's, from its ``NvidiaMmaEncodingAttr`` documentation and
``LinearLayoutConversions``):

* An MMA tile is built from the ``mma.sync`` fragment: along the inner (fastest) dim each thread
  holds ``kWidth`` consecutive elements and 4 lanes cover ``4 * kWidth``; along the outer dim 8
  lanes cover 8 rows; then registers repeat ``m / 8`` times along the outer dim and
  ``n / (4 * kWidth)`` times along the inner one. The accumulator (C/D) is the tile
  ``instrShape`` (``[16, 8]`` for v2, ``instrShape[:2] = [16, N]`` for v3) with ``kWidth = 2``.
* Warps tile ``warpsPerCTA``: row-major for Ampere (last dim fastest), column-major for
  Hopper (warps go down M first: a warp group covers 64 rows).
* Operand A (``opIdx = 0``, M x K) has the tile ``M x 8*kWidth`` with ``M`` from the parent's
  ``instrShape`` (16 for ``mma.sync`` and ``wgmma``); operand B (``opIdx = 1``, K x N, Ampere
  only) has ``8*kWidth x 8`` (N = 8 whatever the ``instrShape``); both have K fastest. With
  ``M = 8`` (fp64 ``mma.m8n8k4``) the K extent is ``4*kWidth``. Warps tile as for C but broadcast along
  K (every warp of a row needs the whole K extent).
* Leading dims of rank-3 layouts are batch dims (``instrShape = [1, 16, 8]``).
"""
from __future__ import annotations

from typing import Sequence

from layoutverify.core.errors import LayoutError, UnsupportedError
from layoutverify.core.layout import Layout

from . import version
from .attr import Attr, dot_operand_parent
from .cga import cga_bases, combine_cta_cga
from .linear import (CGA_PARAMS, LL, broadcast_along, check_warp_size, dim_names, dot_cga_bases, ll_encoding,
                     need_shape)
from .parser import check_params, describe, int_list_param, int_param

MMA_LANES = 32


def matrix_order(rank: int, row_major: bool = True) -> list[int]:
    """``getMatrixOrder``: ``[rank-1, rank-2, ..., 0]``, first two swapped if not row-major."""
    order = list(reversed(range(rank)))
    if rank >= 2 and not row_major:
        order[0], order[1] = order[1], order[0]
    return order


def operand_order(op_idx: int, rank: int) -> list[int]:
    """``getOrderForDotOperand(opIdx, rank, kContig=True)``: K fastest."""
    return matrix_order(rank, row_major=(op_idx == 0))


def mma_tile(tile: Sequence[int], k_width: int, order: Sequence[int], rep_order: Sequence[int]) -> LL:
    """``nvidiaMmaTile``: registers and lanes of one warp over ``tile`` (see module doc)."""
    rank = len(rep_order)
    names = dim_names(rank)
    ll = LL.standard_nd("register", [1] * rank, rep_order)
    inner, outer = order[0], order[1]
    m, n = tile[outer], tile[inner]
    if m % 8 or n % (4 * k_width):
        raise LayoutError(f"MMA tile {list(tile)} does not split into 8 x {4 * k_width} fragments")
    return ll.times_identities([(k_width, "register", names[inner]), (4, "lane", names[inner]),
                                (8, "lane", names[outer]), (m // 8, "register", names[outer]),
                                (n // (4 * k_width), "register", names[inner])])


def mma_params(attr: Attr, options) -> tuple[int, int, list[int], list[int]]:
    """Checked ``(versionMajor, versionMinor, warpsPerCTA, instrShape)`` of an ``nvidia_mma``."""
    check_params(attr, required=("versionMajor", "warpsPerCTA"), optional=("versionMinor", "instrShape") + CGA_PARAMS)
    major = int_param(attr, "versionMajor")
    minor = int_param(attr, "versionMinor", 0)
    wpc = int_list_param(attr, "warpsPerCTA", pow2=True)
    rank = len(wpc)
    if major == 1:
        raise UnsupportedError(f"{describe(attr)}: versionMajor = 1 (Volta) has no linear layout in Triton >= 3.0")
    if major not in (2, 3):
        raise UnsupportedError(f"{describe(attr)}: versionMajor = {major} is not supported "
                               f"(2 = Ampere mma.sync, 3 = Hopper wgmma)")
    if major == 2:
        if rank not in (2, 3):
            raise LayoutError(f"{describe(attr)}: warpsPerCTA must have 2 or 3 entries (rank), got {wpc}")
        default = [16, 8] if rank == 2 else [1, 16, 8]
        instr = int_list_param(attr, "instrShape", default, length=rank, minimum=1)
        _check_tile(attr, instr[-2:])
    else:
        if rank != 2:
            raise LayoutError(f"{describe(attr)}: Hopper (versionMajor = 3) layouts have rank 2; "
                              f"warpsPerCTA = {wpc}")
        instr = int_list_param(attr, "instrShape", length=3, minimum=1)
        _check_tile(attr, instr[:2])
    check_warp_size(attr, MMA_LANES, options)
    return major, minor, wpc, instr


def _check_tile(attr: Attr, mn: Sequence[int]) -> None:
    if any(x < 8 or x & (x - 1) for x in mn):
        raise LayoutError(f"{describe(attr)}: instrShape M, N = {list(mn)} must be "
                          f"powers of two >= 8 (mma.sync: [16, 8]; wgmma: [16, N, K])")


@ll_encoding("nvidia_mma")
def mma_ll(attr: Attr, shape, **options) -> LL:
    """The accumulator (C/D) layout of ``mma.sync`` (v2) or ``wgmma`` (v3)."""
    major, _, wpc, instr = mma_params(attr, options)
    rank = len(wpc)
    cga = cga_bases(attr, rank)
    shape = need_shape(attr, shape, rank)
    tile = list(instr) if major == 2 else [instr[0], instr[1]]
    order = matrix_order(rank)
    cta = mma_tile(tile, 2, order, matrix_order(rank))
    # ``cta * standard_nd("warp", wpc, warp order)``: warps tile each dim after the instruction tile
    names = dim_names(rank)
    cta = cta.times_identities([(wpc[d], "warp", names[d]) for d in matrix_order(rank, row_major=(major != 3))])
    return combine_cta_cga(cta, cga, shape)


def mma_dot_ll(dot: Attr, parent: Attr, shape, **options) -> LL:
    """Operand A or B of an NVIDIA MMA, held in registers (``mma.sync``; Hopper: A only)."""
    major, _, wpc, instr = mma_params(parent, options)
    rank = len(wpc)
    op = int_param(dot, "opIdx")
    k_width = int_param(dot, "kWidth", 0)
    if k_width == 0:
        raise LayoutError(f"{describe(dot)}: kWidth is required (non-zero) for an nvidia_mma parent")
    if k_width & (k_width - 1):
        raise LayoutError(f"{describe(dot)}: kWidth = {k_width} must be a power of two")
    if major == 3 and op != 0:
        raise LayoutError(f"{describe(dot)}: opIdx must be 0 for a Hopper (versionMajor = 3) parent: "
                          f"wgmma takes only operand A from registers")
    cga = dot_cga_bases(dot, parent, rank)
    shape = need_shape(dot, shape, rank)
    tile = [1] * rank
    instr_m = instr[rank - 2]
    if version.before(options, "3.8"):
        instr_m = 16   # Triton <= 3.7: a 16-row tile whatever the instrShape (#10060, Triton 3.8)
    k_tile = (4 if instr_m == 8 else 8) * k_width  # m8n8k4 (fp64) has half the K of m16n8k16
    if op == 0:   # M of the instruction x K
        tile[-2], tile[-1] = instr_m, k_tile
    else:         # K x 8 (N = 8 whatever the instrShape)
        tile[-2], tile[-1] = k_tile, 8
    order = operand_order(op, rank)
    cta = mma_tile(tile, k_width, order, order)
    k_dim = rank - 1 if op == 0 else rank - 2
    warp_order = matrix_order(rank, row_major=(major != 3))
    warps = broadcast_along("warp", wpc, warp_order, k_dim)
    cta = cta * warps.transpose_outs(cta.out_names)
    return combine_cta_cga(cta, cga, shape)


@dot_operand_parent("nvidia_mma")
def mma_dot_layout(dot: Attr, parent: Attr, shape, **options) -> Layout:
    return mma_dot_ll(dot, parent, shape, **options).to_layout()
