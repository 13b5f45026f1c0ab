"""CuTe thread/value (TV) layouts to canonical register layouts, and tiled MMAs.

A TV layout maps ``(thread, value)`` to an index into a tile. The canonical register layout
(DESIGN.md §1) has hardware dims ``register`` (= CuTe's value index), ``lane``, ``warp`` (flat
thread ``t = lane + warp_size * warp``) and ``block`` (1), and logical dims ``dim0`` (row),
``dim1`` (column):

* **MMA operands**: CuTe's tile index is column-major over CuTe's tile, ``i = p + P * q``. A is
  M x K (``dim0 = m = p``, ``dim1 = k = q``), C is M x N (``dim0 = m``, ``dim1 = n``); CuTe holds B as
  N x K, so B is transposed to K x N (``dim0 = k = q``, ``dim1 = n = p``) as in the PTX ISA.
* **Thread ids**: an atom's TV thread is its *logical* thread; ``ThrID`` maps it to the thread
  index in the warp (group). When ``ThrID`` is not the identity (SM70's quadpairs
  ``(4,2):(1,16)``), the other lanes run their own copy of the instruction on their own data: lane
  ``p`` holds what the logical thread ``ThrID^-1(p mod the complement)`` holds, so every element has
  one holder per copy (here 4, one per quadpair), as the PTX ISA describes ``mma.m8n8k4``.
* **Copy atoms** map to *bits* of a block of 128-bit rows (an ldmatrix 8x8 matrix of 16-bit
  elements is 8 rows of 128 bits). With ``bits``-bit elements (default 16), element ``e`` of the
  block is ``dim0 = e // (128 / bits)`` (the row; matrix ``j`` of an ``.x2``/``.x4`` copy holds rows
  ``8j .. 8j+7``), ``dim1 = e % (128 / bits)``.

A **tiled MMA** repeats an atom over a thread layout ``(ThrM, ThrN, ThrK)`` (column-major by
default, as CuTe's ``make_tiled_mma``) and, optionally, over a larger tile (CuTe's permutation
``Tile<_32,_32,_>``: each thread then holds several atoms' values). Its TV layouts are computed with
the algebra exactly as CuTe's ``TiledMMA::get_layout{A,B,C}_TV``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from layoutverify.core import expr as E
from layoutverify.core.errors import LayoutError, NotInvertibleError, UnsupportedError
from layoutverify.core.layout import Layout

from . import algebra as A
from .atoms import CopyAtom, MmaAtom
from .canonical import _sorted_compact_modes
from .layout import UNDERSCORE, CuteLayout, Underscore, compact_left, leaves, make_layout

ROW_BITS = 128


@dataclass(frozen=True)
class TVLayout:
    """A TV layout with everything needed to place it: the canonical form is :meth:`layout`."""

    name: str
    operand: str                  # A, B, C, Src, Dst
    tv: CuteLayout                # (thread, value) -> tile index (elements)
    thr_id: CuteLayout | None     # logical thread -> thread index (None: identity)
    tile: tuple[int, int]         # CuTe tile (P, Q), index i = p + P*q  (copy: rows-major, see below)
    kind: str = "mma"             # "mma" (column-major CuTe tile) or "copy" (row-major 128-bit rows)

    def __str__(self):
        return f"{self.name}.{self.operand}"

    def layout(self, warp_size: int = 32) -> Layout:
        """The canonical register layout (:func:`tv_to_register`): value -> ``register``, thread ->
        ``lane``/``warp`` for ``warp_size``."""
        return tv_to_register(self, warp_size)


# ---------------------------------------------------------------------------------------------
def _digit(hw: list[tuple[str, int]], div: int, size: int, flat: E.Expr | None = None) -> E.Expr:
    """Digit ``(flat // div) % size`` of the flat index over hardware dims ``hw`` (first fastest),
    written on a single hardware dim when the digit lies inside one."""
    if size == 1:
        return E.Const(0)
    if flat is None:
        h = 1
        for name, n in hw:
            if div >= h and div % h == 0 and div * size <= h * n and (h * n) % (div * size) == 0:
                e = E.Var(name) // (div // h)
                return e if div * size == h * n else e % size
            h *= n
        flat = E.Const(0)
        h = 1
        for name, n in hw:
            flat = flat + E.Var(name) * h
            h *= n
    return (flat // div) % size


def _thread_index(thr_id: CuteLayout | None, nthreads: int, warp_size: int):
    """Hardware dims for the threads and, for a non-identity ThrID, the logical thread as an
    expression of them (None when the logical thread is the hardware flat thread)."""
    identity = thr_id is None or (thr_id.size() == thr_id.cosize() and
                                  np.array_equal(thr_id.offsets(), np.arange(thr_id.size())))
    if identity:
        if nthreads >= warp_size:
            if nthreads % warp_size:
                raise UnsupportedError(f"{nthreads} threads is not a whole number of {warp_size}-thread warps")
            return [("lane", warp_size), ("warp", nthreads // warp_size)], None
        return [("lane", nthreads), ("warp", 1)], None
    extent = -(-thr_id.cosize() // warp_size) * warp_size
    full = make_layout(thr_id, A.complement(thr_id, extent))
    ms = _sorted_compact_modes(full)
    if ms is None or full.size() != extent:
        raise NotInvertibleError(f"ThrID {thr_id} and its complement do not tile {extent} threads")
    hw = [("lane", warp_size), ("warp", extent // warp_size)]
    p = E.Var("lane") + E.Var("warp") * warp_size if extent > warp_size else E.Var("lane")
    # leaves of mode 0 (the logical thread) come first in ``full``; their colex weights give t
    nleaf0 = len(leaves(thr_id.shape))
    t: E.Expr = E.Const(0)
    weight = {}
    w = 1
    for j, s in enumerate(leaves(thr_id.shape)):
        weight[j] = w
        w *= s
    for pos, (j, s, d) in enumerate(ms):
        if j < nleaf0:
            t = t + ((p // d) % s) * weight[j]
    return hw, t


def _split(contribs: list[tuple[E.Expr, int, int]], fast: int) -> tuple[E.Expr, E.Expr]:
    """Write ``idx = sum(digit * stride)`` as ``(idx % fast, idx // fast)``, term by term when no
    term straddles ``fast`` and the low parts cannot carry."""
    lo: E.Expr = E.Const(0)
    hi: E.Expr = E.Const(0)
    lo_max = 0
    separable = True
    for dig, d, s in contribs:
        if d == 0 or s == 1:
            continue
        if d % fast == 0:
            hi = hi + dig * (d // fast)
        elif (s - 1) * d < fast:
            lo = lo + dig * d
            lo_max += (s - 1) * d
        else:
            separable = False
    if separable and lo_max < fast:
        return lo, hi
    idx: E.Expr = E.Const(0)
    for dig, d, s in contribs:
        if d and s > 1:
            idx = idx + dig * d
    return idx % fast, idx // fast


#: Largest TV layout (threads x values, and tile elements) turned into a register layout.
MAX_TV_LOCATIONS = 1 << 32


def _check_size(tvl: TVLayout, nthr: int, nval: int) -> None:
    """Refuse TV layouts past the stated limits: 2^32 hardware locations (threads x values) and
    tensors of 2^32 elements (a tiled MMA over 2^32 warps has a 2^39-element tile)."""
    from layoutverify.core.errors import SizeLimitError
    if nthr * nval > MAX_TV_LOCATIONS:
        raise SizeLimitError(f"{tvl.name} has {nthr} threads x {nval} values (more than 2^32 hardware "
                             "locations); too large to verify")
    elements = 1
    for n in tvl.tile:
        elements *= n
    if elements > MAX_TV_LOCATIONS:
        raise SizeLimitError(f"{tvl.name} covers a {'x'.join(map(str, tvl.tile))} tile of {elements} elements "
                             "(more than 2^32); too large to verify")


def tv_to_register(tvl: TVLayout, warp_size: int = 32) -> Layout:
    """The canonical register layout of a TV layout (see the module docstring)."""
    if warp_size < 1:
        raise LayoutError(f"warp size must be positive, got {warp_size}")
    tv = tvl.tv
    if tv.rank() != 2:
        raise LayoutError(f"a TV layout has two modes (thread, value); {tv} has {tv.rank()}")
    thr, val = tv.mode(0), tv.mode(1)
    nthr, nval = thr.size(), val.size()
    _check_size(tvl, nthr, nval)
    hw, t_expr = _thread_index(tvl.thr_id, nthr, warp_size)
    contribs: list[tuple[E.Expr, int, int]] = []
    div = 1
    for s, d in thr.flat_modes():
        contribs.append((_digit(hw, div, s, t_expr), d, s))
        div *= s
    div = 1
    for s, d in val.flat_modes():
        contribs.append((_digit([("register", nval)], div, s), d, s))
        div *= s
    P, Q = tvl.tile
    lo, hi = _split(contribs, P)
    if tvl.kind == "copy":
        out = [("dim0", Q), ("dim1", P)]
        exprs = [hi, lo]
    elif tvl.operand == "B":
        out = [("dim0", Q), ("dim1", P)]
        exprs = [hi, lo]
    else:
        out = [("dim0", P), ("dim1", Q)]
        exprs = [lo, hi]
    in_dims = [("register", nval)] + hw + [("block", 1)]
    lay = Layout(in_dims, out, exprs, name=str(tvl))
    lay.check_in_range()
    return lay


# ---------------------------------------------------------------------------------------------

def written_tv_to_register(tv: CuteLayout, shape=None, warp_size: int = 32, name: str | None = None) -> Layout:
    """A TV layout written by hand (``cute:tv:((32,4),(2,2)):((...),(...))``) as a register layout.

    Mode 0 is the thread, mode 1 the value, as in CuTe's ``get_layoutC_TV``: thread ``t`` is
    ``lane = t % warp_size``, ``warp = t // warp_size`` (DESIGN.md §1), value ``v`` is ``register``.
    The layout maps ``(t, v)`` to an index of a tile; ``shape`` is the tile (``--shape 16x8``) and
    the index is read column-major over it, CuTe's convention (``i = m + M * n`` for an M x N
    tile, so ``dim0`` = m). ``shape`` is required, as CuTe keeps a TV layout beside its tile (the
    ``Tiler_MN`` of ``make_tiled_copy``, the M x N tile of a ``TiledMMA``): without it the index
    has no coordinates (``shape=(cosize,)`` reads it as the flat 1-D index). An index outside the
    tile is an error; tile elements that no (t, v) reaches make a partial layout.
    """
    if warp_size < 1:
        raise LayoutError(f"warp size must be positive, got {warp_size}")
    if tv.rank() != 2:
        raise LayoutError(f"a TV layout has two modes (thread, value); {tv} has {tv.rank()}")
    thr, val = tv.mode(0), tv.mode(1)
    nthr, nval = thr.size(), val.size()
    if nthr * nval > MAX_TV_LOCATIONS:
        from layoutverify.core.errors import SizeLimitError
        raise SizeLimitError(f"TV layout {tv} has {nthr} threads x {nval} values (more than 2^32); too large to verify")
    if shape is None:
        raise LayoutError(f"the thread/value layout {tv} maps (thread, value) to an index of a tile, which "
                          f"CuTe keeps beside it (the Tiler_MN of make_tiled_copy, a TiledMMA's tile): give the "
                          f"tile with --shape, e.g. --shape 16x8 (--shape {max(tv.cosize(), 1)} reads the flat index)")
    tile = tuple(int(x) for x in shape)
    if not tile or any(x < 1 for x in tile):
        raise LayoutError(f"bad tile shape {tile} for TV layout {tv}")
    total = 1
    for x in tile:
        total *= x
    if tv.cosize() > total:
        raise LayoutError(f"TV layout {tv} reaches tile index {tv.cosize() - 1}, outside the "
                          f"{'x'.join(map(str, tile))} tile (give the tile with --shape)")
    hw, _ = _thread_index(None, nthr, warp_size)
    contribs: list[tuple[E.Expr, int, int]] = []
    div = 1
    for s_, d in thr.flat_modes():
        contribs.append((_digit(hw, div, s_), d, s_))
        div *= s_
    div = 1
    for s_, d in val.flat_modes():
        contribs.append((_digit([("register", nval)], div, s_), d, s_))
        div *= s_
    if len(tile) == 2:
        lo, hi = _split(contribs, tile[0])
        exprs = [lo, hi]
    else:
        idx: E.Expr = E.Const(0)
        for dig, d, s_ in contribs:
            if d and s_ > 1:
                idx = idx + dig * d
        exprs, below = [], 1
        for k, x in enumerate(tile):
            digit = idx // below if below > 1 else idx
            exprs.append(digit % x if k < len(tile) - 1 else digit)
            below *= x
    out = [(f"dim{k}", x) for k, x in enumerate(tile)]
    lay = Layout([("register", nval)] + hw + [("block", 1)], out, exprs, name=name or f"tv:{tv}")
    lay.check_in_range()
    return lay


# ---------------------------------------------------------------------------------------------
def mma_tv(atom: MmaAtom, operand: str) -> TVLayout:
    return TVLayout(atom.name, operand, atom.tv(operand), atom.thr_id, atom.tile(operand), "mma")


def copy_tv(atom: CopyAtom, operand: str, bits: int = 16) -> TVLayout:
    """A copy atom's Src or Dst in ``bits``-bit elements (CuTe's ``recast_layout<uint1_t, T>``)."""
    if bits < 1 or ROW_BITS % bits:
        raise LayoutError(f"element width {bits} bits does not divide a {ROW_BITS}-bit row")
    tv_bits = atom.tv(operand)
    tv = A.upcast(tv_bits, bits)
    total = tv_bits.cosize()
    if total % ROW_BITS:
        raise LayoutError(f"{atom.name}: {total} bits is not a whole number of {ROW_BITS}-bit rows")
    row_elems = ROW_BITS // bits
    rows = total // ROW_BITS
    return TVLayout(atom.name, operand, tv, atom.thr_id, (row_elems, rows), "copy")


# ---------------------------------------------------------------------------------------------
def _perm(atom: MmaAtom, vmnk: CuteLayout, perms, i: int):
    p = perms[i]
    if isinstance(p, Underscore):
        return atom.shape_mnk[i] * vmnk.mode(i + 1).size()
    return p


def tiled_mma(atom: MmaAtom, atom_layout: CuteLayout, operand: str, perms=(UNDERSCORE,) * 3) -> TVLayout:
    """CuTe's ``make_tiled_mma(atom, atom_layout, Tile<perms...>).get_layout{A,B,C}_TV()``."""
    if atom_layout.rank() > 3:
        raise LayoutError(f"the atom layout {atom_layout} has more than 3 modes (M, N, K)")
    layout_mnk = A.append_rank(atom_layout, 3)
    perms = tuple(perms) + (UNDERSCORE,) * (3 - len(perms))
    if len(perms) != 3:
        raise LayoutError("a tiled MMA takes at most 3 permutation tiles (M, N, K)")
    vmnk = A.tiled_product(atom.thr_id, layout_mnk)
    pm = [_perm(atom, vmnk, perms, i) for i in range(3)]
    tile_size = [A.size(p) if not isinstance(p, int) else p for p in pm]
    nthr = vmnk.size()
    thridx_2_thrid = A.composition(CuteLayout((nthr, 1), (1, 0)),
                                   A.right_inverse(make_layout(vmnk, A.complement(vmnk))))
    m_atom, n_atom, k_atom = atom.shape_mnk
    s1, s2, s3 = vmnk.mode(1).size(), vmnk.mode(2).size(), vmnk.mode(3).size()

    def compact(n: int) -> CuteLayout:
        return CuteLayout(n, compact_left(n)[0])

    def thrfrg(ref: CuteLayout, t_tile, a_tile, atom_tv: CuteLayout, thr_sizes):
        t_tensor = A.logical_divide(ref, t_tile)
        a_tensor = A.zipped_divide(t_tensor, a_tile)
        tv_tensor = A.composition(a_tensor, (atom_tv, UNDERSCORE))
        thr_tile = (UNDERSCORE, (compact(thr_sizes[0]), compact(thr_sizes[1])))
        return A.zipped_divide(tv_tensor, thr_tile)

    if operand == "C":
        ref = CuteLayout((tile_size[0], tile_size[1]), compact_left((tile_size[0], tile_size[1]))[0])
        frg = thrfrg(ref, (pm[0], pm[1]), (compact(m_atom), compact(n_atom)), atom.tv("C"), (s1, s2))
        tv = A.composition(frg, (thridx_2_thrid, UNDERSCORE))
        tile = (tile_size[0], tile_size[1])
    elif operand == "A":
        ref = CuteLayout((tile_size[0], tile_size[2]), compact_left((tile_size[0], tile_size[2]))[0])
        frg = thrfrg(ref, (pm[0], pm[2]), (compact(m_atom), compact(k_atom)), atom.tv("A"), (s1, s3))
        atile = (UNDERSCORE, (CuteLayout((s1, s2), (1, 0)), UNDERSCORE))
        tv = A.composition(A.composition(frg, (atile, UNDERSCORE)), (thridx_2_thrid, UNDERSCORE))
        tile = (tile_size[0], tile_size[2])
    elif operand == "B":
        ref = CuteLayout((tile_size[1], tile_size[2]), compact_left((tile_size[1], tile_size[2]))[0])
        frg = thrfrg(ref, (pm[1], pm[2]), (compact(n_atom), compact(k_atom)), atom.tv("B"), (s2, s3))
        btile = (UNDERSCORE, (CuteLayout((s1, s2), (0, 1)), UNDERSCORE))
        tv = A.composition(A.composition(frg, (btile, UNDERSCORE)), (thridx_2_thrid, UNDERSCORE))
        tile = (tile_size[1], tile_size[2])
    else:
        raise LayoutError(f"tiled MMA operand must be A, B or C, got {operand!r}")
    name = f"tiled_mma({atom.name},{atom_layout})"
    return TVLayout(name, operand, tv, None, tile, "mma")
