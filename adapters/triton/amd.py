"""Triton's AMD matrix-core encodings as canonical layouts.

Handles three TTGIR attribute kinds (registered in :mod:`layoutverify.adapters.triton.attr`):

* ``#ttg.amd_mfma<{version = 3, warpsPerCTA = [2, 2], instrShape = [32, 32, 8], isTransposed = true,
  tilesPerWarp = [2, 1], elementBitWidth = 64, CGALayout = [[1, 0]]}>`` -- the accumulator (C/D)
  of CDNA ``v_mfma`` instructions, wave64 (versions 1-4: gfx908, gfx90a, gfx942, gfx950).
* ``#ttg.amd_wmma<{version = 2, isTranspose = false, ctaLayout = {register = [[1, 0]], warp = [[0, 1]]},
  instrShape = [16, 16, 32]}>`` -- the accumulator of ``v_wmma`` instructions, wave32 (versions
  1-3: RDNA3, RDNA4, gfx1250). Triton 3.9 writes the warp arrangement as a linear layout
  ``ctaLayout`` (a batch dim shows as 3-entry bases, or ``rank = 3``; Triton >= 3.7, #8946); Triton
  3.6 wrote ``warpsPerCTA`` (and ``tilesPerWarp``): with ``triton_version="3.6"`` that text gets
  Triton 3.6's own formulas, with a newer release the ``ctaLayout`` #8946 translates it to.
* ``#ttg.dot_op<{opIdx = 0|1, parent = #ttg.amd_mfma<...>|#ttg.amd_wmma<...>, kWidth = N}>`` -- the
  A (M x K, opIdx 0) and B (K x N, opIdx 1) operands. ``kWidth`` is the number of consecutive K
  elements a lane holds per instruction, which is where the element width enters (e.g. MFMA f16
  uses 4 or 8, fp8 8 or 16).

Conventions. Hardware dims are Triton's ``register, lane, warp, block``; logical dims ``dim0, dim1
(, dim2)``, ``dim0`` the row (M for C and A, K for B), a batch dim first. The layouts are built
with the linear-layout algebra Triton uses (:class:`~layoutverify.adapters.triton.linear.LL`: ``identity1D``,
products, and fitting the tile to the tensor), so the bases equal
``GluonOpBuilder.to_linear_layout``'s exactly, not only up to equivalence. The formulas are those
of ``lib/Dialect/TritonGPU/IR/LinearLayoutConversions.cpp`` for Triton 3.9, with the older releases'
differences (option ``triton_version``, table in :mod:`layoutverify.adapters.triton`), checked against the
installed Triton by ``tests/test_triton_amd.py`` (run there with Triton 3.6.0, 3.7.1, 3.8.0, 3.9.0).

The CGA (``block``) arrangement is read by :func:`layoutverify.adapters.triton.cga.cga_bases`
(``CGALayout = [[...]]`` or the older ``CTAsPerCGA / CTASplitNum / CTAOrder``).
"""
from __future__ import annotations

from itertools import chain
from typing import Mapping, Sequence

from layoutverify.core.errors import LayoutError, SizeLimitError
from layoutverify.core.layout import Layout

from . import version
from .attr import Attr, dot_operand_parent, encoding, ignored_note, ignored_params
from .cga import cga_bases, combine_cta_cga
from .ll import LL, ZERO_OR_POW2, dim_names, is_pow2
from .parser import bases_param, bool_param, check_params, describe, int_list_param, int_param

MFMA_WARP_SIZE = 64     # CDNA wave64
WMMA_WARP_SIZE = 32     # RDNA3/4 and gfx1250 run WMMA in wave32

#: (M, N) accumulator tiles of ``v_mfma`` that Triton 3.6+ models (the old 4x4 one is gone)
MFMA_TILES = ((32, 32), (16, 16), (64, 4), (4, 64))
#: what Triton's verifier accepts: 0 (no target) and CDNA1..CDNA4
MFMA_VERSIONS = range(0, 5)
#: valid WMMA (M, N, K) instruction shapes per version (Triton 3.9's verifier)
WMMA_INSTR_SHAPES = {
    1: ((16, 16, 16),),
    2: ((16, 16, 16), (16, 16, 32)),
    3: ((16, 16, 4), (16, 16, 32), (16, 16, 64), (16, 16, 128), (32, 16, 64), (32, 16, 128)),
}
WMMA_DEFAULT_INSTR_SHAPE = (16, 16, 16)


def wmma_instr_shapes(wmma_version: int, options: Mapping) -> tuple[tuple[int, int, int], ...]:
    """The instruction shapes Triton's verifier accepts for a WMMA version, in the selected
    release: the 32x16 gfx1250 shapes came with Triton 3.8 (#10082)."""
    shapes = WMMA_INSTR_SHAPES[wmma_version]
    if version.before(options, "3.8"):
        shapes = tuple(s for s in shapes if s[:2] != (32, 16))
    return shapes
#: kWidth values Triton's dot_op verifier allows with a WMMA parent (None: any)
WMMA_KWIDTHS = {1: (8, 16), 2: (4, 8, 16), 3: None}

#: largest tensor (elements) we build a layout for; Triton indexes tensors with 32-bit integers
MAX_ELEMENTS = 1 << 32
HW_DIMS = ("register", "lane", "warp", "block")

_CGA_KEYS = ("CGALayout", "CTAsPerCGA", "CTASplitNum", "CTAOrder")
_MFMA_KEYS = ("version", "versionMajor", "versionMinor", "warpsPerCTA", "instrShape", "isTransposed",
              "tilesPerWarp", "elementBitWidth") + _CGA_KEYS
_WMMA_KEYS = ("version", "isTranspose", "ctaLayout", "rank", "instrShape", "warpsPerCTA",
              "tilesPerWarp") + _CGA_KEYS


def _fail(attr: Attr, msg: str) -> LayoutError:
    at = f" (attribute at column {attr.column})" if attr.column else ""
    return LayoutError(f"{describe(attr)}: {msg}{at}")


# ---------------------------------------------------------------------------------------------
# Linear-layout steps whose Triton 3.9 behaviour the AMD conversions rely on
# ---------------------------------------------------------------------------------------------
def _id(size: int, in_dim: str, out_dim: str) -> LL:
    """``LinearLayout::identity1D``, where size 0 (a repetition count that rounded down) is empty."""
    return LL.empty() if size == 0 else LL.identity1d(size, in_dim, out_dim)


def _not_larger(ll: LL, shape: Mapping[str, int]) -> LL:
    """``ensureLayoutNotLargerThan`` as the AMD layouts see it in Triton 3.9: along each out dim
    that is too large, every basis reaching past the tensor is zeroed (a broadcast, kept as a zero
    basis; registers are not dropped), then the out sizes are re-inferred from the bases."""
    if all(size <= shape[name] for name, size in ll.outs):
        return ll._sizes_inferred()   # nothing reaches past the tensor: only the sizes are re-inferred
    bases = {k: [list(v) for v in vs] for k, vs in ll.bases.items()}
    for col, (name, size) in enumerate(ll.outs):
        if size > shape[name]:
            for vs in bases.values():
                for v in vs:
                    if v[col] >= shape[name]:
                        v[col] = 0
    return LL.inferred(bases, ll.out_names, require_surjective=False)


def _not_larger_legacy(ll: LL, shape: Mapping[str, int]) -> LL:
    """``ensureLayoutNotLargerThan`` before Triton #9221 (Triton <= 3.7): along each dim that is
    too large, zero the largest bases, one per halving of the size. Same result for injective
    layouts; a repeated basis (a ``ctaLayout`` repeating a bit) can be left past the tensor's
    size, and Triton then aborts building the layout."""
    out = ll.not_larger(shape)
    for k, vs in out.bases.items():
        for v in vs:
            for (name, _), c in zip(out.outs, v):
                if c >= shape[name]:
                    raise LayoutError(f"Triton <= 3.7 aborts fitting this layout to the tensor ('Invalid basis {c} "
                                      f"for in-dim {k!r} and out-dim {name!r}'): a repeated basis is left past the "
                                      f"size {shape[name]}; Triton >= 3.8 zeroes it")
    return out


def _combine_cta_cga(cta: LL, cga: LL, shape: Sequence[int], legacy_fit: bool = False) -> LL:
    """:func:`.cga.combine_cta_cga` with the cut of Triton 3.9 (:func:`_not_larger`) or, with
    ``legacy_fit``, Triton <= 3.7's (:func:`_not_larger_legacy`) for the CTA tile."""
    return combine_cta_cga(cta, cga, shape, fit_cga=_not_larger,
                           fit_cta=_not_larger_legacy if legacy_fit else _not_larger, check=False)


def _cga_layout(attr: Attr, rank: int, drop_dim: str | None = None) -> LL:
    """The ``block`` -> tensor layout; a dot operand's blocks never split K (``drop_dim``), as in
    ``DotOperandEncodingAttr::getCGALayout``."""
    bases = cga_bases(attr, rank)
    names = dim_names(rank)
    ll = LL.inferred({"block": bases}, names, require_surjective=False)
    if drop_dim is None:
        return ll
    col = names.index(drop_dim)
    return LL({"block": [[0 if d == col else c for d, c in enumerate(v)] for v in ll.bases["block"]]},
              [(n, 1 if n == drop_dim else s) for n, s in ll.outs])


def _matrix_order(rank: int, row_major: bool) -> list[int]:
    """``getMatrixOrder``: ``[rank-1, ..., 0]``, the two minor dims swapped if column-major."""
    order = list(range(rank - 1, -1, -1))
    if not row_major:
        order[0], order[1] = order[1], order[0]
    return order


def _operand_order(op_idx: int, rank: int) -> list[int]:
    """``getOrderForDotOperand(opIdx, rank, kContig=true)``: ``[K, nonK, batch]``."""
    return _matrix_order(rank, row_major=(op_idx == 0))


def _check_permutation(attr: Attr, what: str, bases: Sequence[Sequence[int]]) -> None:
    """Triton's distributed layouts are a permutation matrix once zero (broadcast) bases are
    dropped: every other basis moves one tensor dim by a power of two, no two the same."""
    moving = [tuple(v) for v in bases if v.count(0) != len(v)]
    if all(len(v) - v.count(0) == 1 for v in moving) and set(chain.from_iterable(moving)) <= ZERO_OR_POW2 \
            and len(set(moving)) == len(moving):
        return   # checked at C speed; the loop below names the basis that breaks it
    seen = set()
    for v in bases:
        nz = [(d, c) for d, c in enumerate(v) if c]
        if not nz:
            continue
        if len(nz) != 1 or not is_pow2(nz[0][1]) or nz[0] in seen:
            raise LayoutError(f"{what} basis {list(v)}, but once broadcast (zero) bases are dropped Triton needs "
                              f"every basis to be a distinct power of two along one dim (a permutation matrix)")
        seen.add(nz[0])


def _shape(attr: Attr, shape, rank: int) -> list[int]:
    if shape is None:
        raise _fail(attr, "needs a tensor shape (pass --shape 64x64, or write tensor<64x64xf32, #ttg....>)")
    try:
        dims = [int(s) for s in shape]
    except (TypeError, ValueError):
        raise _fail(attr, f"shape {shape!r} is not a list of integers") from None
    if len(dims) != rank:
        raise _fail(attr, f"shape {'x'.join(map(str, dims))} has rank {len(dims)}, but the layout has rank {rank}")
    for s in dims:
        if not is_pow2(s):
            raise _fail(attr, f"shape {'x'.join(map(str, dims))}: {s} is not a power of two (Triton tensors are)")
    total = 1
    for s in dims:
        total *= s
    if total > MAX_ELEMENTS:
        raise SizeLimitError(f"{describe(attr)}: shape {'x'.join(map(str, dims))} has {total} elements, "
                             f"more than {MAX_ELEMENTS}")
    return dims


def _check_warp_size(attr: Attr, options: Mapping, lanes: int) -> None:
    ws = options.get("warp_size")
    if ws is not None and int(ws) != lanes:
        raise _fail(attr, f"runs with {lanes} threads per warp; a warp size of {ws} does not apply")


def _to_layout(ll: LL, shape: Sequence[int], attr: Attr, name: str) -> Layout:
    bases = {d: ll.bases.get(d, []) for d in HW_DIMS}
    # LinearEncodingAttr refuses layouts that are not a permutation matrix (a ctaLayout repeating
    # a bit that the shape does not cut away gives one); so do we
    try:
        _check_permutation(attr, f"{describe(attr)}: for shape {'x'.join(map(str, shape))} the layout has",
                           [v for d in HW_DIMS for v in bases[d]])
    except LayoutError as e:
        raise LayoutError(f"{e} -- two hardware bits reach the same element; does ctaLayout repeat a basis?") from None
    ignored = ignored_params(attr, _MFMA_KEYS if attr.kind == "amd_mfma" else _WMMA_KEYS)
    parent = attr.params.get("parent") if attr.kind == "dot_op" else None
    if isinstance(parent, Attr):
        ignored += ignored_params(parent, _MFMA_KEYS if parent.kind == "amd_mfma" else _WMMA_KEYS)
    return ll.to_layout(shape, HW_DIMS, name=name + ignored_note(ignored))


# ---------------------------------------------------------------------------------------------
# #ttg.amd_mfma
# ---------------------------------------------------------------------------------------------
class _Mfma:
    """The checked parameters of an ``amd_mfma`` attribute."""

    def __init__(self, attr: Attr):
        # Triton's parser takes the keys it knows and ignores the rest (they are reported in the
        # layout's name); version and isTransposed default to 0 and false
        check_params(attr, required=("warpsPerCTA", "instrShape"), optional=tuple(attr.params))
        p = attr.params
        self.attr = attr
        if "version" in p:
            self.version = int_param(attr, "version")
        elif "versionMajor" in p:   # the spelling of Triton <= 3.2
            self.version = int_param(attr, "versionMajor")
            if int_param(attr, "versionMinor", 0) != 0:
                raise _fail(attr, "versionMinor must be 0")
        else:
            self.version = 0   # no target: what Triton's parser gives an attribute without version
        if self.version not in MFMA_VERSIONS:
            raise _fail(attr, f"version {self.version} is not an MFMA version (0..4; 1 = gfx908, "
                              f"2 = gfx90a, 3 = gfx942, 4 = gfx950)")
        self.warps = int_list_param(attr, "warpsPerCTA", pow2=True)
        self.rank = len(self.warps)
        if self.rank not in (2, 3):
            raise _fail(attr, f"warpsPerCTA {self.warps} must have 2 entries, or 3 with a leading batch dim")
        instr = int_list_param(attr, "instrShape", minimum=1)
        if len(instr) not in (2, 3):
            raise _fail(attr, f"instrShape {instr} must be [M, N, K] (or [M, N])")
        self.m, self.n = instr[0], instr[1]
        if (self.m, self.n) not in MFMA_TILES:
            raise _fail(attr, f"instrShape {instr}: no MFMA has an {self.m}x{self.n} accumulator "
                              f"(valid M x N: {', '.join(f'{a}x{b}' for a, b in MFMA_TILES)})")
        self.transposed = bool_param(attr, "isTransposed")
        if (self.m, self.n) == (64, 4) and not self.transposed:
            raise _fail(attr, "a 64x4 MFMA layout must have isTransposed = true (Triton computes it as 4x64)")
        self.tiles = int_list_param(attr, "tilesPerWarp", [1] * self.rank, length=self.rank, pow2=True)
        self.element_bits = int_param(attr, "elementBitWidth", 32)
        if self.element_bits not in (32, 64):
            raise _fail(attr, f"elementBitWidth {self.element_bits} must be 32 or 64")
        cga_bases(attr, self.rank)   # checked now, used per shape


def _mfma_layout(mf: _Mfma, shape: Sequence[int]) -> LL:
    """``AMDMfmaEncodingAttr::toLinearLayout``.

    One instruction: each lane holds ``height`` consecutive elements (4, or 1 for 64-bit results)
    along M (along N when transposed); lanes run along N first, then M; more registers repeat that
    pattern along M until the M x N tile is full. Tiles then go N-contiguous over the whole
    tensor: ``tilesPerWarp[N]`` registers, ``warpsPerCTA[N]`` warps, the rest of N in registers,
    then ``tilesPerWarp[M]`` registers and ``warpsPerCTA[M]`` warps; a batch dim comes last.
    """
    rank = mf.rank
    names = dim_names(rank)
    m_idx, n_idx = rank - 2, rank - 1
    dim_m, dim_n = names[m_idx], names[n_idx]
    height = 1 if mf.element_bits == 64 else 4
    reps = (mf.m * mf.n) // (MFMA_WARP_SIZE * height)
    if not mf.transposed:
        tile = (_id(height, "register", dim_m)
                * (_id(mf.n, "lane", dim_n) * _id(MFMA_WARP_SIZE // mf.n, "lane", dim_m))
                * _id(reps, "register", dim_m))
    else:
        tile = (_id(height, "register", dim_n)
                * (_id(mf.m, "lane", dim_m) * _id(MFMA_WARP_SIZE // mf.m, "lane", dim_n))
                * _id(reps, "register", dim_n))
    tile = tile.transpose_outs([dim_n, dim_m])
    factors = [(mf.tiles[n_idx], "register", dim_n),
               (mf.warps[n_idx], "warp", dim_n),
               (shape[n_idx] // (mf.n * mf.warps[n_idx] * mf.tiles[n_idx]), "register", dim_n),
               (mf.tiles[m_idx], "register", dim_m),
               (mf.warps[m_idx], "warp", dim_m)]
    if rank == 3:
        factors += [(1, "register", names[0]), (1, "lane", names[0]), (mf.warps[0], "warp", names[0])]
    # ``tile * _id(...) * ...``; a size of 0 (a repetition count that rounded down) is the empty layout
    tile = tile.times_identities([f for f in factors if f[0] != 0])
    return _combine_cta_cga(tile, _cga_layout(mf.attr, rank), shape)


@encoding("amd_mfma")
def mfma_encoding(attr: Attr, shape, **options) -> Layout:
    """``#ttg.amd_mfma<...>`` over a tensor of ``shape`` -> the accumulator layout (wave64)."""
    mf = _Mfma(attr)
    _check_warp_size(attr, options, MFMA_WARP_SIZE)
    shape = _shape(attr, shape, mf.rank)
    return _to_layout(_mfma_layout(mf, shape), shape, attr, "amd_mfma")


# ---------------------------------------------------------------------------------------------
# #ttg.amd_wmma
# ---------------------------------------------------------------------------------------------
class _Wmma:
    """The checked parameters of an ``amd_wmma`` attribute, with its register/warp ``ctaLayout``."""

    def __init__(self, attr: Attr, shape=None, options: Mapping | None = None):
        options = options or {}
        check_params(attr, required=("version",), optional=tuple(attr.params))   # others ignored, as Triton does
        p = attr.params
        self.attr = attr
        self.triton = version.of(options)
        self.version = int_param(attr, "version")
        if self.version not in WMMA_INSTR_SHAPES:
            raise _fail(attr, f"version {self.version} is not a WMMA version (1 = RDNA3, 2 = RDNA4, 3 = gfx1250)")
        self.transposed = bool_param(attr, "isTranspose", False)
        instr = tuple(int_list_param(attr, "instrShape", list(WMMA_DEFAULT_INSTR_SHAPE)))
        valid_shapes = wmma_instr_shapes(self.version, options)
        if instr not in valid_shapes:
            valid = ", ".join(str(list(s)) for s in valid_shapes)
            raise _fail(attr, f"instrShape {list(instr)} is not a WMMA v{self.version} instruction in Triton "
                              f"{self.triton} (valid: {valid})")
        self.m, self.n, self.k = instr
        #: Triton 3.6's warpsPerCTA / tilesPerWarp (None when the text gives ctaLayout)
        self.warps: list[int] | None = None
        self.tiles: list[int] | None = None
        if "ctaLayout" in p:
            if "warpsPerCTA" in p or "tilesPerWarp" in p:
                raise _fail(attr, "give either ctaLayout or warpsPerCTA/tilesPerWarp, not both")
            if self.triton == "3.6":
                raise _fail(attr, "Triton 3.6 writes the WMMA warp arrangement as warpsPerCTA (and tilesPerWarp); "
                                  "ctaLayout came with Triton 3.7 (#8946), and Triton 3.6 aborts on it")
            self.cta, self.rank = self._cta_layout(attr, _rank_of(shape))
        elif "warpsPerCTA" in p:   # Triton 3.6's spelling
            warps = int_list_param(attr, "warpsPerCTA", pow2=True)
            self.rank = len(warps)
            if self.rank not in (2, 3):
                raise _fail(attr, f"warpsPerCTA {warps} must have 2 entries, or 3 with a leading batch dim")
            if int_param(attr, "rank", self.rank) != self.rank:
                raise _fail(attr, f"rank {p['rank']} does not match warpsPerCTA {warps}")
            tiles = int_list_param(attr, "tilesPerWarp", [1] * self.rank, length=self.rank, pow2=True)
            self.warps, self.tiles = warps, tiles
            self.cta = _wmma_cta_from_warps(self.rank, warps, tiles)
        else:
            raise _fail(attr, "needs parameter ctaLayout = {warp = [...]} (or warpsPerCTA in Triton 3.6)")
        cga_bases(attr, self.rank)   # checked now, used per shape

    @property
    def legacy(self) -> bool:
        """Compute as Triton 3.6 did (its own warpsPerCTA formulas, before #8946)."""
        return self.triton == "3.6"

    @property
    def legacy_fit(self) -> bool:
        """Cut to the tensor as Triton <= 3.7 did (before #9221)."""
        return self.triton in ("3.6", "3.7")

    @staticmethod
    def _cta_layout(attr: Attr, shape_rank: int | None) -> tuple[LL, int]:
        cta = attr.params["ctaLayout"]
        if isinstance(cta, Attr):
            cta = cta.params
        if not isinstance(cta, Mapping):
            raise _fail(attr, f"ctaLayout must be a dictionary like {{warp = [[0, 1]]}}, got {cta!r}")
        # ctaLayout's entries, read with the parser's checks; messages name them ctaLayout.<key>
        sub = Attr("amd_wmma", {f"ctaLayout.{k}": v for k, v in cta.items()}, attr.column, attr.text)
        for key in cta:
            if key not in ("register", "warp"):
                raise _fail(attr, f"ctaLayout has unknown key {key!r} (expected register, warp)")
        # Triton prints no rank (the bases tell it, else the tensor) and drops empty entries
        # (``ctaLayout = {}`` is one warp)
        vecs = [v for key in ("warp", "register") if isinstance(cta.get(key), list)
                for v in cta[key] if isinstance(v, list)]
        rank = int_param(attr, "rank", len(vecs[0]) if vecs else (shape_rank or 2))
        if rank not in (2, 3):
            raise _fail(attr, f"rank {rank} must be 2, or 3 with a leading batch dim")
        bases = {key: bases_param(sub, f"ctaLayout.{key}", rank) if key in cta else [] for key in ("register", "warp")}
        ll = LL.inferred(bases, dim_names(rank), what=f"{describe(attr)}: ctaLayout {dict(cta)}")
        return ll, rank


def _rank_of(shape) -> int | None:
    """The rank of a shape argument, or None when there is none (checked properly later)."""
    try:
        return len(shape) if shape is not None else None
    except TypeError:
        return None


def _wmma_cta_from_warps(rank: int, warps: Sequence[int], tiles: Sequence[int]) -> LL:
    """``chooseWmmaCTALinearLayout``: per dim, fastest (last) first, ``tilesPerWarp`` registers then warps."""
    names = dim_names(rank)
    ret = LL.empty()
    for d in _matrix_order(rank, row_major=True):
        ret = ret * _id(tiles[d], "register", names[d]) * _id(warps[d], "warp", names[d])
    return ret.transpose_outs(names)


def _wmma_tile(wm: _Wmma) -> LL:
    """``AMDWmmaEncodingAttr::getTileLayout``: one instruction's accumulator over 32 lanes.

    The bases below are (fast, slow) pairs over ``getMatrixOrder(rank, !isTranspose)``, i.e.
    (N, M), or (M, N) when transposed. v1 (RDNA3): a lane keeps every other row, the two half-waves
    interleaving; v2/v3: each half-wave holds 8 consecutive rows; 32x16 (gfx1250) puts a second
    16-row half in more registers.
    """
    rank = wm.rank
    names = dim_names(rank)
    fast, slow = _matrix_order(rank, row_major=not wm.transposed)[:2]
    if wm.version == 1:
        reg = [[0, 2], [0, 4], [0, 8]]
        lane = [[1, 0], [2, 0], [4, 0], [8, 0], [0, 1]]
    elif (wm.m, wm.n) == (32, 16):
        reg = [[0, 1], [0, 2], [0, 4], [0, 16]]
        lane = [[1, 0], [2, 0], [4, 0], [8, 0], [0, 8]]
    else:
        reg = [[0, 1], [0, 2], [0, 4]]
        lane = [[1, 0], [2, 0], [4, 0], [8, 0], [0, 8]]
    tile = LL.inferred({"register": reg, "lane": lane}, [names[fast], names[slow]])
    if rank == 3:
        tile = tile * _id(1, "register", names[0]) * _id(1, "lane", names[0])
    return tile.transpose_outs(names)


def _wmma_layout(wm: _Wmma, shape: Sequence[int]) -> LL:
    """``AMDWmmaEncodingAttr::toLinearLayout``: instruction tile x ctaLayout, fitted to the shape."""
    if wm.legacy:
        return _wmma_layout_36(wm, shape)
    names = dim_names(wm.rank)
    ll = (_wmma_tile(wm) * wm.cta).transpose_outs([names[d] for d in _matrix_order(wm.rank, True)])
    return _combine_cta_cga(ll, _cga_layout(wm.attr, wm.rank), shape, legacy_fit=wm.legacy_fit)


def _wmma_layout_36(wm: _Wmma, shape: Sequence[int]) -> LL:
    """Triton 3.6's ``AMDWmmaEncodingAttr::toLinearLayout`` (``warpsPerCTA``/``tilesPerWarp``).

    Along N: ``tilesPerWarp[N]`` registers, ``warpsPerCTA[N]`` warps, then registers for the rest of
    the tensor's N (computed from the whole shape, before the CGA split); then along M:
    ``tilesPerWarp[M]`` registers and ``warpsPerCTA[M]`` warps; a batch dim gets its warps last.
    Triton 3.7 (#8946) instead appends the N repetitions after the M tiles."""
    rank = wm.rank
    names = dim_names(rank)
    m_idx, n_idx = rank - 2, rank - 1
    dim_m, dim_n = names[m_idx], names[n_idx]
    tile = _wmma_tile(wm).transpose_outs([dim_n, dim_m] + names[:rank - 2])
    tile = tile * _id(wm.tiles[n_idx], "register", dim_n) * _id(wm.warps[n_idx], "warp", dim_n)
    tile = tile * _id(shape[n_idx] // (wm.n * wm.warps[n_idx] * wm.tiles[n_idx]), "register", dim_n)
    tile = tile * _id(wm.tiles[m_idx], "register", dim_m) * _id(wm.warps[m_idx], "warp", dim_m)
    if rank == 3:
        tile = tile * _id(wm.warps[0], "warp", names[0])
    return _combine_cta_cga(tile, _cga_layout(wm.attr, rank), shape, legacy_fit=True)


def _check_wmma_tensor_shape(wm: _Wmma, shape: Sequence[int]) -> None:
    """Triton <= 3.7 asserts that the tensor's M and N are 1 or at least one instruction's
    (``Unsupported tensor shape for given wmma layout``); #9825 (Triton 3.8) lifted it."""
    if wm.triton not in ("3.6", "3.7"):
        return
    m, n = shape[-2], shape[-1]
    if not ((m == 1 or m >= wm.m) and (n == 1 or n >= wm.n)):
        raise _fail(wm.attr, f"Triton {wm.triton} aborts on a {'x'.join(map(str, shape))} tensor: its M and N must "
                             f"each be 1 or at least the instruction's {wm.m}x{wm.n} (Triton >= 3.8 accepts it)")


@encoding("amd_wmma")
def wmma_encoding(attr: Attr, shape, **options) -> Layout:
    """``#ttg.amd_wmma<...>`` over a tensor of ``shape`` -> the accumulator layout (wave32)."""
    wm = _Wmma(attr, shape, options)
    _check_warp_size(attr, options, WMMA_WARP_SIZE)
    shape = _shape(attr, shape, wm.rank)
    _check_wmma_tensor_shape(wm, shape)
    return _to_layout(_wmma_layout(wm, shape), shape, attr, "amd_wmma")


# ---------------------------------------------------------------------------------------------
# #ttg.dot_op with an MFMA or WMMA parent
# ---------------------------------------------------------------------------------------------
def _dot_params(dot: Attr, parent: Attr) -> tuple[int, int]:
    check_params(dot, required=("opIdx", "parent"), optional=("kWidth",))
    op_idx = int_param(dot, "opIdx")
    if op_idx not in (0, 1):
        raise _fail(dot, f"opIdx {op_idx} must be 0 (A, M x K) or 1 (B, K x N)")
    if "kWidth" not in dot.params:
        raise _fail(dot, f"kWidth is mandatory with a {describe(parent)} parent")
    k_width = int_param(dot, "kWidth")
    if not is_pow2(k_width):
        raise _fail(dot, f"kWidth {k_width} must be a positive power of two")
    return op_idx, k_width


def _mfma_operand_layout(mf: _Mfma, op_idx: int, k_width: int, shape: Sequence[int]) -> LL:
    """``mfmaDotToLinearLayout``: the A or B operand of an MFMA (wave64).

    Each lane holds ``kWidth`` consecutive K elements; lanes run along the non-K dim (M for A, N
    for B) for the instruction's extent there, then the rest of the 64 lanes along K. 64x4 A and
    4x64 B operands repeat 16 times along K. Registers repeat along K over the tensor's K, then
    ``tilesPerWarp`` times along the non-K dim. Warps follow ``warpsPerCTA`` (row-major); their
    bits along K run past the tensor and so become broadcasts.
    """
    rank = mf.rank
    names = dim_names(rank)
    order = _operand_order(op_idx, rank)
    k_idx, nonk_idx = order[0], order[1]
    dim_k, dim_nonk = names[k_idx], names[nonk_idx]
    nonk = mf.m if op_idx == 0 else mf.n
    tile = (_id(k_width, "register", dim_k)
            * (_id(nonk, "lane", dim_nonk) * _id(MFMA_WARP_SIZE // nonk, "lane", dim_k)))
    k_tile = MFMA_WARP_SIZE // nonk * k_width
    if ((mf.m, mf.n) == (64, 4) and op_idx == 0) or ((mf.m, mf.n) == (4, 64) and op_idx == 1):
        tile = tile * _id(16, "register", dim_k)
        k_tile *= 16
    if shape[k_idx] > k_tile:
        tile = tile * _id(shape[k_idx] // k_tile, "register", dim_k)
    tile = tile * _id(mf.tiles[nonk_idx], "register", dim_nonk)
    tile = tile.transpose_outs([dim_k, dim_nonk])
    if rank == 3:
        tile = tile * _id(1, "register", names[order[2]]) * _id(1, "lane", names[order[2]])
    warps = LL.standard_nd("warp", mf.warps, _matrix_order(rank, True))
    return _combine_cta_cga(tile * warps, _cga_layout(mf.attr, rank), shape).transpose_outs(names)


def _wmma_operand_layout(wm: _Wmma, op_idx: int, k_width: int, shape: Sequence[int]) -> LL:
    """``wmmaDotOperandToLinearLayout`` (Triton 3.7-3.9): the A or B operand of a WMMA (wave32).

    ``kWidth`` K elements per lane; 16 lanes along the non-K dim; the other half-wave holds the
    next ``kWidth`` K elements (v2, v3) or the same ones again (v1: a broadcast); registers repeat
    along K to the instruction's K, then -- for the 32-row operand of a 32x16 instruction -- along
    the non-K dim. Warps and register repeats come from the accumulator's ``ctaLayout`` with their
    K component dropped (all-zero register bases removed); CGA blocks broadcast along K.
    """
    rank = wm.rank
    names = dim_names(rank)
    order = _operand_order(op_idx, rank)
    dim_k, dim_nonk = names[order[0]], names[order[1]]
    # a transposed WMMA computes C^T = B^T A^T, so the two operands trade M and N
    nonk = wm.m if (op_idx == 0) != wm.transposed else wm.n
    lanes_nonk = 16
    depth = WMMA_WARP_SIZE // lanes_nonk
    tile = _id(k_width, "register", dim_k) * _id(lanes_nonk, "lane", dim_nonk)
    tile = tile * (LL.zeros1d(depth, "lane", dim_k) if wm.version == 1 else _id(depth, "lane", dim_k))
    k_regs = wm.k // (depth * k_width)
    if wm.triton == "3.7":
        # Triton 3.7 repeated the registers over the whole tensor's K here, before the ctaLayout's
        # registers; #10082 (Triton 3.8) stops at the instruction's K and repeats the rest last
        k_regs = max(shape[names.index(dim_k)], wm.k) // (depth * k_width)
    tile = tile * _id(k_regs, "register", dim_k)
    if nonk > lanes_nonk:
        tile = tile * _id(nonk // lanes_nonk, "register", dim_nonk)
    cta = _operand_cta_layout(wm.cta, dim_k)
    ll = (tile * cta).transpose_outs([names[d] for d in order])
    # the operand's own CGA layout (K not split) since #9694 (Triton 3.8); before, the accumulator's
    cga = _cga_layout(wm.attr, rank, drop_dim=dim_k if wm.triton not in ("3.6", "3.7") else None)
    return _combine_cta_cga(ll, cga, shape, legacy_fit=wm.legacy_fit)


def _wmma_operand_layout_36(wm: _Wmma, op_idx: int, k_width: int, shape: Sequence[int]) -> LL:
    """Triton 3.6's ``wmmaDotOperandToLinearLayout`` (``warpsPerCTA``/``tilesPerWarp``).

    ``kWidth`` K registers, 16 lanes along the non-K dim, the other half-wave along K (v2, v3) or
    a broadcast (v1); then registers along K up to the instruction's K -- or, when
    ``tilesPerWarp`` along the non-K dim is above 1, over the whole tensor's K followed by those
    tiles. Warps follow ``warpsPerCTA`` with K broadcast; the CGA layout is the accumulator's.
    ``isTranspose`` plays no part (Triton 3.7 swapped the operands' M/N for it)."""
    rank = wm.rank
    names = dim_names(rank)
    order = _operand_order(op_idx, rank)
    dim_k, dim_nonk = names[order[0]], names[order[1]]
    k_idx, nonk_idx = (rank - 1, rank - 2) if op_idx == 0 else (rank - 2, rank - 1)
    nonk = wm.m if op_idx == 0 else wm.n
    depth = WMMA_WARP_SIZE // nonk
    tile = _id(k_width, "register", dim_k) * _id(nonk, "lane", dim_nonk)
    tile = tile * (LL.zeros1d(depth, "lane", dim_k) if wm.version == 1 else _id(depth, "lane", dim_k))
    k_tile = depth * k_width
    if wm.tiles[nonk_idx] > 1:
        tile = tile * _id(max(shape[k_idx], wm.k) // k_tile, "register", dim_k)
        tile = tile * _id(wm.tiles[nonk_idx], "register", dim_nonk)
    else:
        tile = tile * _id(wm.k // k_tile, "register", dim_k)
    if rank == 3:
        tile = tile * _id(1, "register", names[order[2]]) * _id(1, "lane", names[order[2]])
    rep_names = [names[d] for d in order]
    warps = LL.empty()
    for d in _matrix_order(rank, True):
        warps = warps * (LL.zeros1d(wm.warps[d], "warp", names[d]) if d == k_idx
                         else _id(wm.warps[d], "warp", names[d]))
    ll = tile.transpose_outs(rep_names) * warps.transpose_outs(rep_names)
    return _combine_cta_cga(ll, _cga_layout(wm.attr, rank), shape, legacy_fit=True)


def _operand_cta_layout(cta: LL, dim_k: str) -> LL:
    """The accumulator's ``ctaLayout`` seen by an operand: the K component of every basis is dropped
    (``projectAwayOutDim``), then register bases left all zero are removed; sizes re-inferred."""
    col = cta.out_names.index(dim_k)
    bases = {}
    for key, vs in cta.bases.items():
        projected = [[0 if d == col else c for d, c in enumerate(v)] for v in vs]
        bases[key] = [v for v in projected if any(v)] if key == "register" else projected
    return LL.inferred(bases, cta.out_names, require_surjective=False)


@dot_operand_parent("amd_mfma", "amd_wmma")
def amd_dot_operand(dot: Attr, parent: Attr, shape, **options) -> Layout:
    """``#ttg.dot_op<{opIdx, parent = #ttg.amd_mfma|amd_wmma<...>, kWidth}>`` -> the operand layout."""
    op_idx, k_width = _dot_params(dot, parent)
    if parent.kind == "amd_mfma":
        mf = _Mfma(parent)
        _check_warp_size(dot, options, MFMA_WARP_SIZE)
        shape = _shape(dot, shape, mf.rank)
        ll = _mfma_operand_layout(mf, op_idx, k_width, shape)
    elif parent.kind == "amd_wmma":
        wm = _Wmma(parent, shape, options)
        _check_warp_size(dot, options, WMMA_WARP_SIZE)
        allowed = WMMA_KWIDTHS[wm.version]
        if wm.version == 3 and wm.triton == "3.6":
            allowed = (2, 8, 16)   # Triton 3.6's verifier; #8783 (Triton 3.7) allows any kWidth
        if allowed is not None and k_width not in allowed:
            raise _fail(dot, f"kWidth {k_width} with a WMMA v{wm.version} parent must be "
                             f"{' or '.join(map(str, allowed))}")
        shape = _shape(dot, shape, wm.rank)
        if wm.legacy:
            ll = _wmma_operand_layout_36(wm, op_idx, k_width, shape)
        else:
            ll = _wmma_operand_layout(wm, op_idx, k_width, shape)
    else:
        raise _fail(dot, f"parent {describe(parent)} is not an AMD encoding")
    return _to_layout(ll, shape, dot, f"dot_op{op_idx}<{parent.kind}>")
