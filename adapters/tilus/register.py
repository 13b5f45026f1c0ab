"""Tilus register layouts: an independent model of Tilus's documented semantics.

A Tilus register layout (Tilus docs, "Register Layout"; seed 000) maps ``(thread_id, local_id)`` to
a tensor index. It is given by four attributes:

* ``shape``: the tensor shape;
* ``mode_shape``: each dimension split into *modes* (sub-dimensions), **most significant first**,
  dimension 0's modes first (modes of size 1 are dropped);
* ``spatial_modes``: modes that serialize, **row-major in the order listed** (first = most
  significant), to ``thread_id``; a *negative* entry ``-r`` is a replication of ``r``: ``r``
  consecutive thread groups hold the same elements;
* ``local_modes``: modes that serialize, row-major in the order listed, to ``local_id``.

A mode listed nowhere is pinned to index 0 (the layout is then *partial*; Tilus accepts it).

Canonical form (DESIGN.md §1): ``local_id`` -> ``register``; ``thread_id t`` -> ``lane = t %
warp_size``, ``warp = t // warp_size`` (``warp_size`` option, 32 by default, 64 for AMD wave64), one
``block``. Thread counts need not be powers of two (``spatial(3, 4)`` has 12 threads). **Decision
for thread counts that are not a multiple of the warp size**: when a layout has ``T <= warp_size``
threads it is one warp of ``T`` lanes (``lane`` has size ``T``); when ``T > warp_size``, ``T`` must
be a multiple of ``warp_size`` (``lane = warp_size``, ``warp = T / warp_size``), otherwise it is a
:class:`~layoutverify.core.errors.LayoutError` (a partial last warp has no canonical form).

Operations (``compose``/``*``, ``reduce``, ``reduce_to``, ``permute``, ``reshape``, ``flatten``,
``squeeze``, ``unsqueeze``, ``concat``, ``divide``/``/``, ``left_divide``, creation functions) follow
Tilus's documentation and signatures (tilus 0.2.0), with these deliberate differences, each a
defect of tilus 0.2.0's implementation found by the differential sweep:

* ``flatten(layout, start_dim, end_dim)`` does what tilus 0.2.0's code does, since users compare
  against what Tilus does: ``end_dim`` is **exclusive** (after a negative ``end_dim`` is counted
  from the end, so ``flatten(x)`` of a 3-D layout merges only dims 0 and 1, and
  ``flatten(x, 1, 1)`` inserts a dim of size 1). Tilus's docstring says ``end_dim`` is inclusive;
  that reading is ``flatten_documented`` (``flatten_documented(x)`` merges every dim).
* ``reshape`` is the row-major reinterpretation of the index; tilus 0.2.0 returns a wrong layout
  (different thread/local counts) for e.g. ``reshape(spatial(4).local(2), [2, 4])`` and refuses some
  representable reshapes (``reshape(local(4).spatial(3), [2, 6])``).
* ``left_divide`` finds ``result`` with ``compose(divisor, result) == layout`` whenever one exists;
  tilus 0.2.0 splits the wrong mode and refuses e.g. ``left_divide(spatial(2).local(4),
  spatial(2).local(2))``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from layoutverify.core import expr as E
from layoutverify.core.errors import LayoutError, UnsupportedError, SizeLimitError
from layoutverify.core.layout import Layout, logical_dims

#: Largest size of one tensor dimension, mode or replication factor.
MAX_SIZE = 1 << 24
#: Largest number of tensor elements, threads x locals, of one layout.
MAX_ELEMENTS = 1 << 32
#: Most tensor dimensions.
MAX_RANK = 8
#: Most threads of one layout: Tilus's thread index (``spatial_index`` of ``get_global``, the
#: kernel's thread id) is an ``int32``, so thread ids stop at 2^31 - 1.
MAX_THREADS = 1 << 31


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


@dataclass(frozen=True)
class RegisterModes:
    """A Tilus register layout in mode form (our model, not tilus's class).

    ``modes[i] = (dim, size)``: grouped by dim in increasing order, most significant first within
    a dim, sizes > 1. ``spatial``/``local`` list mode indices (``spatial`` may hold ``-r``
    replication entries), most significant first.
    """

    shape: tuple
    modes: tuple
    spatial: tuple
    local: tuple

    # -- construction ---------------------------------------------------------------------------
    def __post_init__(self):
        shape, modes, spatial, local = self.shape, self.modes, self.spatial, self.local
        if len(shape) > MAX_RANK:
            raise LayoutError(f"layout of rank {len(shape)} (at most {MAX_RANK} dims are supported)")
        for s in shape:
            if s < 1:
                raise LayoutError(f"shape {list(shape)}: sizes must be positive")
            if s > MAX_SIZE:
                raise SizeLimitError(f"dimension size {s} exceeds the limit {MAX_SIZE}")
        if _prod(shape) > MAX_ELEMENTS:
            raise SizeLimitError(f"shape {list(shape)} has {_prod(shape)} elements, more than {MAX_ELEMENTS}")
        per_dim = [1] * len(shape)
        last_dim = -1
        for d, n in modes:
            if not 0 <= d < len(shape) or d < last_dim or n < 2:
                raise LayoutError(f"internal: bad modes {modes} for shape {shape}")
            last_dim = d
            per_dim[d] *= n
        if tuple(per_dim) != tuple(shape):
            raise LayoutError(f"modes {[n for _, n in modes]} do not split shape {list(shape)}")
        used = [m for m in spatial if m >= 0] + list(local)
        for m in used:
            if not 0 <= m < len(modes):
                raise LayoutError(f"mode {m} is out of range (the layout has {len(modes)} modes)")
        if len(used) != len(set(used)):
            raise LayoutError(f"a mode is listed twice in spatial_modes {list(spatial)} / local_modes {list(local)}")
        for m in spatial:
            if m < 0 and -m > MAX_SIZE:
                raise SizeLimitError(f"replication {-m} exceeds the limit {MAX_SIZE}")
        if self.num_threads > MAX_THREADS:
            raise SizeLimitError(f"layout has {self.num_threads} threads; Tilus numbers threads with int32, "
                                 "so at most 2^31")
        if self.num_threads * self.local_size > MAX_ELEMENTS:
            raise SizeLimitError(f"layout has {self.num_threads} threads x {self.local_size} locals, "
                                 f"more than {MAX_ELEMENTS} locations")

    @classmethod
    def from_attributes(cls, shape, mode_shape, spatial_modes, local_modes) -> "RegisterModes":
        """From Tilus's four attributes (``RegisterLayout(...)``/``register_layout(...)``).

        Modes of size 1 are dropped (and their entries in the mode lists); the remaining modes are
        assigned to dims in order: each dim consumes modes until their product is its size.
        """
        shape = tuple(int(s) for s in shape)
        for s in shape:
            if s < 1:
                raise LayoutError(f"shape {list(shape)}: sizes must be positive")
        for n in mode_shape:
            if n < 1:
                raise LayoutError(f"mode_shape {list(mode_shape)}: mode sizes must be positive")
        for m in spatial_modes:
            if m >= len(mode_shape):
                raise LayoutError(f"spatial mode {m} is out of range for mode_shape {list(mode_shape)}")
        for m in local_modes:
            if not 0 <= m < len(mode_shape):
                raise LayoutError(f"local mode {m} is out of range for mode_shape {list(mode_shape)}")
        used = [m for m in spatial_modes if m >= 0] + list(local_modes)
        if len(used) != len(set(used)):
            raise LayoutError("spatial and local modes must be distinct")
        keep = [i for i, n in enumerate(mode_shape) if n > 1]
        remap = {old: new for new, old in enumerate(keep)}
        sizes = [mode_shape[i] for i in keep]
        modes, k = [], 0
        for d, s in enumerate(shape):
            rest = s
            while rest > 1:
                if k >= len(sizes) or rest % sizes[k]:
                    raise LayoutError(f"mode_shape {list(mode_shape)} does not split shape {list(shape)}")
                rest //= sizes[k]
                modes.append((d, sizes[k]))
                k += 1
        if k != len(sizes):
            raise LayoutError(f"mode_shape {list(mode_shape)} does not split shape {list(shape)}")
        spatial = tuple(m if m < 0 else remap[m] for m in spatial_modes if m < 0 or m in remap)
        spatial = tuple(m for m in spatial if m != -1)
        local = tuple(remap[m] for m in local_modes if m in remap)
        return cls(shape, tuple(modes), spatial, local)

    # -- attributes ------------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        """The number of tensor dims."""
        return len(self.shape)

    @property
    def mode_shape(self) -> tuple:
        """The mode sizes, in mode order."""
        return tuple(n for _, n in self.modes)

    @property
    def spatial_shape(self) -> tuple:
        """The sizes of the thread modes, most significant first (a replication ``-r`` counts ``r``)."""
        return tuple(-m if m < 0 else self.modes[m][1] for m in self.spatial)

    @property
    def local_shape(self) -> tuple:
        """The sizes of the local modes, most significant first."""
        return tuple(self.modes[m][1] for m in self.local)

    @property
    def num_threads(self) -> int:
        """Threads of the layout: the product of the spatial shape."""
        return _prod(self.spatial_shape)

    @property
    def local_size(self) -> int:
        """Locals (registers) per thread: the product of the local shape."""
        return _prod(self.local_shape)

    def groups(self) -> list[list[int]]:
        """Mode indices of each dim, most significant first."""
        g = [[] for _ in self.shape]
        for i, (d, _) in enumerate(self.modes):
            g[d].append(i)
        return g

    def __str__(self) -> str:
        c = self.canonical()
        return (f"RegisterLayout(shape={list(c.shape)}, mode_shape={list(c.mode_shape)}, "
                f"spatial_modes={list(c.spatial)}, local_modes={list(c.local)})")

    # -- canonical mode form ---------------------------------------------------------------------
    def canonical(self, across_dims: bool = False) -> "RegisterModes":
        """Merge modes adjacent both in their dim and in their (spatial or local) list.

        Two layouts with the same mode form after this are the same map; the converse need not
        hold (compare canonical :class:`~layoutverify.core.layout.Layout` s for that). With
        ``across_dims``, modes adjacent in the flat (row-major) digit order merge even across a
        dim boundary; the merged mode is put in the first one's dim (only meaningful as a step of
        :func:`reshape`, which reassigns dims).
        """
        where = {}
        for kind, lst in (("s", self.spatial), ("l", self.local)):
            for pos, m in enumerate(lst):
                if m >= 0:
                    where[m] = (kind, pos)
        runs = []           # lists of mode indices merged into one
        for g in ([list(range(len(self.modes)))] if across_dims else self.groups()):
            i = 0
            while i < len(g):
                j = i
                while (j + 1 < len(g) and g[j] in where and g[j + 1] in where
                       and where[g[j]][0] == where[g[j + 1]][0] and where[g[j]][1] + 1 == where[g[j + 1]][1]):
                    j += 1
                runs.append(g[i:j + 1])
                i = j + 1
        if all(len(r) == 1 for r in runs):
            return self
        if across_dims:
            # keep __post_init__'s per-dim products valid: the merged run lives in a 1-D view
            flat = RegisterModes((_prod(self.shape),), tuple((0, n) for _, n in self.modes), self.spatial, self.local)
            return flat.canonical()
        head = {r[0]: k for k, r in enumerate(runs)}
        merged = {m for r in runs for m in r[1:]}
        modes = tuple((self.modes[r[0]][0], _prod(self.modes[m][1] for m in r)) for r in runs)
        spatial = tuple(m if m < 0 else head[m] for m in self.spatial if m < 0 or m not in merged)
        local = tuple(head[m] for m in self.local if m not in merged)
        return RegisterModes(self.shape, modes, spatial, local)

    def refine(self, splits: dict) -> "RegisterModes":
        """Split modes: ``splits[i] = [a, b, ...]`` (product = size of mode ``i``, most significant
        first); each list entry naming mode ``i`` becomes the run of its pieces."""
        new_modes, pieces = [], {}
        for i, (d, n) in enumerate(self.modes):
            parts = [p for p in splits.get(i, [n]) if p > 1] or []
            if _prod(parts) != n:
                raise LayoutError(f"internal: split {parts} of mode size {n}")
            pieces[i] = list(range(len(new_modes), len(new_modes) + len(parts)))
            new_modes.extend((d, p) for p in parts)
        spatial = tuple(x for m in self.spatial for x in ([m] if m < 0 else pieces[m]))
        local = tuple(x for m in self.local for x in pieces[m])
        return RegisterModes(self.shape, tuple(new_modes), spatial, local)

    # -- canonical layout ------------------------------------------------------------------------
    def to_layout(self, warp_size: int = 32, name: str | None = None) -> Layout:
        """The canonical layout ``(register, lane, warp, block) -> (dim0, dim1, ...)``."""
        if self.rank == 0:
            raise UnsupportedError("a rank-0 (scalar) register layout has no logical dims")
        if isinstance(warp_size, bool) or not isinstance(warp_size, int) or warp_size < 1:
            raise LayoutError(f"warp_size must be a positive integer, got {warp_size!r}")
        T, R = self.num_threads, self.local_size
        if T <= warp_size:
            lanes, warps = T, 1
        elif T % warp_size:
            raise LayoutError(f"the layout has {T} threads, more than one warp of {warp_size} but not a "
                              f"multiple of it; pass warp_size= to choose the warp size")
        else:
            lanes, warps = warp_size, T // warp_size
        lay = self._digit_layout(R, T, lanes, warps, name)
        if lay is not None:
            return lay
        lane, warp, reg = E.Var("lane"), E.Var("warp"), E.Var("register")

        def thread_digit(div: int, size: int) -> E.Expr:
            top = div * size >= T
            if div * size <= lanes and lanes % (div * size) == 0:
                d = lane // div
                return d if div * size == lanes else d % size
            if div % lanes == 0:
                d = warp // (div // lanes)
                return d if top else d % size
            d = (lane + warp * lanes) // div
            return d if top else d % size

        digits = {}
        div = 1
        for m, n in reversed(list(zip(self.spatial, self.spatial_shape))):
            if m >= 0:
                digits[m] = thread_digit(div, n)
            div *= n
        div = 1
        for m, n in reversed(list(zip(self.local, self.local_shape))):
            d = reg // div
            digits[m] = d if div * n == R else d % n
            div *= n
        exprs = []
        for g in self.groups():
            acc, weight = E.Const(0), 1
            for m in reversed(g):
                if m in digits:
                    acc = acc + digits[m] * weight
                weight *= self.modes[m][1]
            exprs.append(acc)
        in_dims = [("register", R), ("lane", lanes), ("warp", warps), ("block", 1)]
        return Layout(in_dims, logical_dims(self.shape), exprs, name=name)


    def _digit_layout(self, R: int, T: int, lanes: int, warps: int, name) -> Layout | None:
        """:meth:`to_layout` from digits (:func:`layout_from_digits`), or ``None`` where a spatial
        mode straddles lanes and warps at a place that does not divide the warp size."""
        ndim, modes = len(self.shape), self.modes
        weight = [None] * len(modes)  # mode -> stride vector: its weight inside its dim (later modes are faster)
        w = [1] * ndim
        for m in range(len(modes) - 1, -1, -1):
            d, size = modes[m]
            v = [0] * ndim
            v[d] = w[d]
            weight[m] = v
            w[d] *= size
        thread_digits, place = [], 1
        for m in reversed(self.spatial):
            if m < 0:  # a replication: no digit
                place *= -m
            else:
                size = modes[m][1]
                thread_digits.append((place, size, weight[m]))
                place *= size
        local_digits, place = [], 1
        for m in reversed(self.local):
            size = modes[m][1]
            local_digits.append((place, size, weight[m]))
            place *= size
        return layout_from_digits(self.shape, R, lanes, warps, thread_digits, local_digits, name)


def layout_from_digits(shape, R: int, lanes: int, warps: int, thread_digits, local_digits, name) -> Layout | None:
    """A register layout of ``R`` registers and ``lanes * warps`` threads from its digits:
    ``thread_digits`` / ``local_digits`` list ``(place, radix, strides)`` of the flat thread id
    (``lane + lanes * warp``) / the local index. A thread digit is a digit of ``lane`` or of
    ``warp``, or, where it straddles the two, one digit of each (the lane digit first); ``None``
    when one straddles them at a place that does not divide ``lanes`` (the expressions say it; no
    digits can)."""
    digits = []
    for place, n, strides in thread_digits:
        if n == 1:
            continue
        if place * n <= lanes and lanes % (place * n) == 0:
            digits.append(("lane", place, n, strides))
        elif place % lanes == 0:
            digits.append(("warp", place // lanes, n, strides))
        elif lanes % place == 0 and (place * n) % lanes == 0:
            low = lanes // place
            digits.append(("lane", place, low, strides))
            digits.append(("warp", 1, n // low, [c * low for c in strides]))
        else:
            return None
    digits.extend(("register", place, n, strides) for place, n, strides in local_digits if n > 1)
    in_dims = [("register", R), ("lane", lanes), ("warp", warps), ("block", 1)]
    return Layout.from_digits(in_dims, logical_dims(shape), digits, name=name)


# ----------------------------------------------------------------------------------------------
# creation
def _check_shape(shape: Sequence[int], what: str = "shape") -> tuple:
    shape = tuple(shape)
    for s in shape:
        if isinstance(s, bool) or not isinstance(s, int):
            raise LayoutError(f"{what} entries must be integers, got {s!r}")
        if s < 1:
            raise LayoutError(f"{what} {list(shape)}: sizes must be positive integers")
        if s > MAX_SIZE:
            raise SizeLimitError(f"{what} size {s} exceeds the limit {MAX_SIZE}")
    return shape


def _ranked(shape, ranks, kind: str) -> RegisterModes:
    shape = _check_shape(shape)
    if ranks is not None:
        ranks = tuple(ranks)
        if len(ranks) != len(shape):
            raise LayoutError(f"shape and ranks must have the same length, got {len(shape)} vs {len(ranks)}")
        if sorted(ranks) != list(range(len(shape))):
            raise LayoutError(f"ranks {list(ranks)} must be a permutation of 0..{len(shape) - 1}")
        order = [ranks.index(i) for i in range(len(shape))]   # dim with rank 0 is most significant
    else:
        order = list(range(len(shape)))
    modes, index = [], {}
    for d, s in enumerate(shape):
        if s > 1:
            index[d] = len(modes)
            modes.append((d, s))
    listed = tuple(index[d] for d in order if d in index)
    if kind == "spatial":
        return RegisterModes(shape, tuple(modes), listed, ())
    return RegisterModes(shape, tuple(modes), (), listed)


def spatial(*shape: int, ranks=None) -> RegisterModes:
    """Every dim distributed over threads, row-major (or in ``ranks`` order: rank 0 most significant)."""
    return _ranked(shape, ranks, "spatial")


def local(*shape: int, ranks=None) -> RegisterModes:
    """Every dim held in each thread's registers, row-major (or in ``ranks`` order)."""
    return _ranked(shape, ranks, "local")


def column_spatial(*shape: int) -> RegisterModes:
    return spatial(*shape, ranks=list(reversed(range(len(shape)))))


def column_local(*shape: int) -> RegisterModes:
    return local(*shape, ranks=list(reversed(range(len(shape)))))


def replication(num_workers: int) -> RegisterModes:
    """The rank-0 layout held by ``num_workers`` threads."""
    if num_workers < 1:
        raise LayoutError(f"num_workers must be positive, got {num_workers}")
    if num_workers > MAX_SIZE:
        raise SizeLimitError(f"num_workers {num_workers} exceeds the limit {MAX_SIZE}")
    return RegisterModes((), (), (-num_workers,) if num_workers > 1 else (), ())


def replicated(*shape: int, num_workers: int) -> RegisterModes:
    """The whole tensor (row-major in registers) held by each of ``num_workers`` threads."""
    return compose(replication(num_workers), local(*shape))


def auto_local_spatial(num_threads: int, shape: Sequence[int]) -> RegisterModes:
    """``local(...).spatial(...)`` with ``num_threads`` threads (tilus's rule): from the last dim
    backwards each dim takes ``gcd(threads left, size)`` threads; threads left over replicate
    (most significant thread mode)."""
    shape = _check_shape(shape)
    if num_threads < 1:
        raise LayoutError(f"num_threads must be positive, got {num_threads}")
    size = _prod(shape)
    if size % num_threads and num_threads % size:
        raise LayoutError(f"cannot spread shape {list(shape)} ({size} elements) over {num_threads} threads")
    remain, threads = list(shape), num_threads
    sp = [1] * len(shape)
    for i in reversed(range(len(shape))):
        sp[i] = math.gcd(threads, remain[i])
        threads //= sp[i]
        remain[i] //= sp[i]
    out = compose(local(*remain), spatial(*sp))
    if threads != 1:
        out = RegisterModes(out.shape, out.modes, (-threads,) + out.spatial, out.local)
    return out


def chain(calls: Sequence[tuple[str, Sequence[int]]]) -> RegisterModes:
    """``calls[0].calls[1]...``: the composition (:func:`compose`) of a chain of creation calls
    ``(kind, shape)`` (kind ``local``, ``spatial``, ``column_local`` or ``column_spatial``),
    outermost first, built in one pass. Composing left to right puts, in every dim (after each
    call gets leading size-1 dims up to the largest rank), the calls' modes outermost first; the
    thread modes are the calls' spatial modes in call order, the local modes likewise, and every
    size multiplies. Equal to folding :func:`compose` over the calls (``tests/test_tilus_sweep.py``)."""
    n = max(len(args) for _, args in calls)
    shape = [1] * n
    per_dim: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]   # (call, dim of the call, size)
    for c, (kind, args) in enumerate(calls):
        args = _check_shape(args)
        lead = n - len(args)
        for d, s in enumerate(args):
            shape[lead + d] *= s
            if s > 1:
                per_dim[lead + d].append((c, d, s))
    index, modes = {}, []
    for d, ms in enumerate(per_dim):
        for c, cd, s in ms:
            index[(c, cd)] = len(modes)
            modes.append((d, s))
    spatial, local = [], []
    for c, (kind, args) in enumerate(calls):  # row-major: the first dim most significant; column: the last
        dims = range(len(args) - 1, -1, -1) if kind.startswith("column") else range(len(args))
        (spatial if kind.endswith("spatial") else local).extend(index[(c, d)] for d in dims if (c, d) in index)
    return RegisterModes(tuple(shape), tuple(modes), tuple(spatial), tuple(local))


def register_layout(shape, mode_shape, spatial_modes, local_modes) -> RegisterModes:
    return RegisterModes.from_attributes(_check_shape(shape), tuple(mode_shape), tuple(spatial_modes), tuple(local_modes))


# ----------------------------------------------------------------------------------------------
# transformations
def unsqueeze(layout: RegisterModes, dims: Sequence[int]) -> RegisterModes:
    """Insert size-1 dims; ``dims`` are positions in the result."""
    dims = tuple(dims)
    n = layout.rank + len(dims)
    if any(not 0 <= d < n for d in dims):
        raise LayoutError(f"dims {list(dims)} must be in range [0, {n})")
    if len(set(dims)) != len(dims):
        raise LayoutError(f"dims {list(dims)} must be distinct")
    new_of_old = []
    for i in range(n):
        if i not in dims:
            new_of_old.append(i)
    shape = [1] * n
    for old, new in enumerate(new_of_old):
        shape[new] = layout.shape[old]
    modes = tuple((new_of_old[d], s) for d, s in layout.modes)
    return RegisterModes(tuple(shape), modes, layout.spatial, layout.local)


def squeeze(layout: RegisterModes, dims: Sequence[int]) -> RegisterModes:
    """Remove size-1 dims."""
    dims = tuple(dims)
    if any(not 0 <= d < layout.rank for d in dims):
        raise LayoutError(f"dims {list(dims)} must be in range [0, {layout.rank})")
    if len(set(dims)) != len(dims):
        raise LayoutError(f"dims {list(dims)} must be distinct")
    if any(layout.shape[d] != 1 for d in dims):
        raise LayoutError(f"cannot squeeze dims {list(dims)} of shape {list(layout.shape)}: they must have size 1")
    keep = [d for d in range(layout.rank) if d not in dims]
    new = {old: i for i, old in enumerate(keep)}
    return RegisterModes(tuple(layout.shape[d] for d in keep), tuple((new[d], s) for d, s in layout.modes),
                         layout.spatial, layout.local)


def compose(outer: RegisterModes, inner: RegisterModes) -> RegisterModes:
    """Replace every element of ``outer`` by a tile laid out as ``inner`` (Tilus doc 8.3.2):
    ``index = outer_index * inner.shape + inner_index``, ``thread = outer_thread * inner_threads +
    inner_thread``, ``local = outer_local * inner_locals + inner_local``. The lower-rank operand gets
    leading size-1 dims."""
    n = max(outer.rank, inner.rank)
    outer = unsqueeze(outer, range(n - outer.rank))
    inner = unsqueeze(inner, range(n - inner.rank))
    shape = tuple(a * b for a, b in zip(outer.shape, inner.shape))
    modes, omap, imap = [], {}, {}
    og, ig = outer.groups(), inner.groups()
    for d in range(n):
        for m in og[d]:
            omap[m] = len(modes)
            modes.append(outer.modes[m])
        for m in ig[d]:
            imap[m] = len(modes)
            modes.append(inner.modes[m])
    spatial = tuple(m if m < 0 else omap[m] for m in outer.spatial) + tuple(m if m < 0 else imap[m] for m in inner.spatial)
    local = tuple(omap[m] for m in outer.local) + tuple(imap[m] for m in inner.local)
    return RegisterModes(shape, tuple(modes), spatial, local)


def concat(lhs: RegisterModes, rhs: RegisterModes) -> RegisterModes:
    """Dims of ``lhs`` then dims of ``rhs``; ``thread = lhs_thread * rhs_threads + rhs_thread``,
    same for locals."""
    k = len(lhs.modes)
    modes = lhs.modes + tuple((d + lhs.rank, s) for d, s in rhs.modes)
    spatial = lhs.spatial + tuple(m if m < 0 else m + k for m in rhs.spatial)
    local = lhs.local + tuple(m + k for m in rhs.local)
    return RegisterModes(lhs.shape + rhs.shape, modes, spatial, local)


def permute(layout: RegisterModes, dims: Sequence[int]) -> RegisterModes:
    """New dim ``i`` is old dim ``dims[i]``; who holds what is unchanged."""
    dims = tuple(dims)
    if sorted(dims) != list(range(layout.rank)):
        raise LayoutError(f"dims {list(dims)} must be a permutation of 0..{layout.rank - 1}")
    g = layout.groups()
    order = [m for d in dims for m in g[d]]
    new_index = {old: i for i, old in enumerate(order)}
    new_dim = {old: i for i, old in enumerate(dims)}
    modes = tuple((new_dim[layout.modes[m][0]], layout.modes[m][1]) for m in order)
    return RegisterModes(tuple(layout.shape[d] for d in dims), modes,
                         tuple(m if m < 0 else new_index[m] for m in layout.spatial),
                         tuple(new_index[m] for m in layout.local))


def reduce(layout: RegisterModes, dims: Sequence[int], keepdims: bool = False) -> RegisterModes:
    """Drop ``dims`` (Tilus doc 8.3.4): their spatial modes become replication entries (the threads
    that held any element along them now all hold the result), their local modes disappear."""
    dims = tuple(dims)
    if any(not 0 <= d < layout.rank for d in dims):
        raise LayoutError(f"dims {list(dims)} must be in range [0, {layout.rank})")
    if len(set(dims)) != len(dims):
        raise LayoutError(f"dims {list(dims)} must be distinct")
    gone = {i for i, (d, _) in enumerate(layout.modes) if d in dims}
    keep_modes = [i for i in range(len(layout.modes)) if i not in gone]
    new_index = {old: i for i, old in enumerate(keep_modes)}
    if keepdims:
        shape = tuple(1 if d in dims else s for d, s in enumerate(layout.shape))
        new_dim = {d: d for d in range(layout.rank)}
    else:
        kept = [d for d in range(layout.rank) if d not in dims]
        shape = tuple(layout.shape[d] for d in kept)
        new_dim = {d: i for i, d in enumerate(kept)}
    modes = tuple((new_dim[layout.modes[i][0]], layout.modes[i][1]) for i in keep_modes)
    spatial = tuple(m if m < 0 else (-layout.modes[m][1] if m in gone else new_index[m]) for m in layout.spatial)
    local = tuple(new_index[m] for m in layout.local if m not in gone)
    return RegisterModes(shape, modes, spatial, local)


def reduce_to(layout: RegisterModes, shape: Sequence[int]) -> RegisterModes:
    """Reduce to a broadcast-compatible ``shape``: extra leading dims are reduced away, dims where
    ``shape`` has 1 (and the layout not) are reduced keeping a size-1 dim."""
    shape = tuple(shape)
    diff = layout.rank - len(shape)
    if diff < 0:
        raise LayoutError(f"cannot reduce a rank-{layout.rank} layout to rank {len(shape)}")
    drop, keep1 = [], []
    for i in range(layout.rank):
        if i < diff:
            drop.append(i)
        elif layout.shape[i] == shape[i - diff]:
            continue
        elif shape[i - diff] == 1:
            keep1.append(i)
        else:
            raise LayoutError(f"cannot reduce shape {list(layout.shape)} to {list(shape)}")
    if keep1:
        layout = reduce(layout, keep1, keepdims=True)
    if drop:
        layout = reduce(layout, drop, keepdims=False)
    return layout


def reshape(layout: RegisterModes, shape: Sequence[int]) -> RegisterModes:
    """Row-major reinterpretation of the index with a new shape of the same size.

    The layout's modes, read dim 0 first and most significant first, are the digits of the flat
    (row-major) index; the new dims take consecutive runs of them. A mode that straddles a new dim
    boundary is split, which needs one of the two sizes to divide the other; otherwise the result
    is not a mode layout and this is an error.
    """
    shape = _check_shape(shape)
    if _prod(shape) != _prod(layout.shape):
        raise LayoutError(f"cannot reshape shape {list(layout.shape)} ({_prod(layout.shape)} elements) to "
                          f"{list(shape)} ({_prod(shape)} elements)")
    original, layout = layout, layout.canonical(across_dims=True)
    # walk modes and new dims from the least significant end
    splits: dict[int, list[int]] = {}
    dims_of_pieces: dict[int, list[int]] = {}   # mode -> new dim of each piece, most significant first
    d = len(shape) - 1
    remaining = shape[d] if d >= 0 else 1
    for m in reversed(range(len(layout.modes))):
        n = layout.modes[m][1]
        pieces = []           # least significant first
        while n > 1:
            while remaining == 1:
                d -= 1
                if d < 0:
                    raise LayoutError("internal: reshape ran out of dims")
                remaining = shape[d]
            if remaining % n == 0:
                pieces.append((n, d))
                remaining //= n
                n = 1
            elif n % remaining == 0:
                pieces.append((remaining, d))
                n //= remaining
                remaining = 1
            else:
                raise LayoutError(f"cannot reshape {original} to {list(shape)}: mode of size {layout.modes[m][1]} "
                                  f"straddles a dimension boundary unevenly")
        splits[m] = [p for p, _ in reversed(pieces)]
        dims_of_pieces[m] = [dd for _, dd in reversed(pieces)]
    refined = layout.refine(splits)
    # new dims of the refined modes, in order
    dims_of = [dd for m in range(len(layout.modes)) for dd in dims_of_pieces[m]]
    modes = tuple((dd, n) for dd, (_, n) in zip(dims_of, refined.modes))
    return RegisterModes(shape, modes, refined.spatial, refined.local)


def flatten(layout: RegisterModes, start_dim: int = 0, end_dim: int = -1) -> RegisterModes:
    """Tilus's ``flatten`` as tilus 0.2.0 implements it: merge dims ``start_dim`` up to
    ``end_dim`` **exclusive**, where a negative ``end_dim`` first becomes ``rank + end_dim`` (so the
    default ``-1`` leaves the last dim alone), and ``start_dim == end_dim`` inserts a dim of size 1
    (the product of no dims). Its docstring's reading is :func:`flatten_documented`."""
    n = layout.rank
    s = start_dim
    e = end_dim + n if end_dim < 0 else end_dim
    if not 0 <= s <= e <= n or s == n:
        raise LayoutError(f"cannot flatten dims {start_dim}..{end_dim} (end exclusive, as tilus 0.2.0 "
                          f"computes it) of a rank-{n} layout")
    shape = layout.shape[:s] + (_prod(layout.shape[s:e]),) + layout.shape[e:]
    return reshape(layout, shape)


def flatten_documented(layout: RegisterModes, start_dim: int = 0, end_dim: int = -1) -> RegisterModes:
    """Tilus's ``flatten`` as its docstring states it: merge dims ``start_dim..end_dim``
    **inclusive** (negative dims count from the end; the default merges every dim). tilus 0.2.0's
    code differs (see :func:`flatten`)."""
    n = layout.rank
    s = start_dim + n if start_dim < 0 else start_dim
    e = end_dim + n if end_dim < 0 else end_dim
    if not (0 <= s < n and 0 <= e < n) or s > e:
        raise LayoutError(f"cannot flatten dims {start_dim}..{end_dim} (inclusive) of a rank-{n} layout")
    shape = layout.shape[:s] + (_prod(layout.shape[s:e + 1]),) + layout.shape[e + 1:]
    return reshape(layout, shape)


def _same_map(a: RegisterModes, b: RegisterModes) -> bool:
    """Same shape, thread and local counts, and the same holders for every (thread, local)."""
    if a.shape != b.shape or a.num_threads != b.num_threads or a.local_size != b.local_size:
        return False
    if a.canonical() == b.canonical():
        return True
    if a.rank == 0:
        return True
    import numpy as np
    la, lb = a.to_layout(warp_size=max(a.num_threads, 1)), b.to_layout(warp_size=max(b.num_threads, 1))
    try:
        return bool(np.array_equal(la.table(), lb.table()))
    except SizeLimitError:
        raise SizeLimitError("the layouts are too large to check the quotient of the division") from None


def divide(lhs: RegisterModes, rhs: RegisterModes) -> RegisterModes:
    """The layout ``r`` with ``compose(r, rhs) == lhs`` (``lhs / rhs``), or an error if none exists.

    ``rhs``'s modes must end each dim's modes of ``lhs`` and its spatial/local lists must end those
    of ``lhs`` (after splitting the one ``lhs`` mode that may have merged with ``rhs``'s first mode of a
    dim); the result keeps the rest. The result is checked by composing it back.
    """
    if rhs.rank > lhs.rank:
        raise LayoutError(f"cannot divide a rank-{lhs.rank} layout by a rank-{rhs.rank} layout")
    rhs = unsqueeze(rhs, range(lhs.rank - rhs.rank))
    if any(a % b for a, b in zip(lhs.shape, rhs.shape)):
        raise LayoutError(f"shape {list(rhs.shape)} does not divide shape {list(lhs.shape)}")
    if lhs.num_threads % rhs.num_threads or lhs.local_size % rhs.local_size:
        raise LayoutError("the divisor has threads or locals that do not divide the layout's")
    L, R = lhs.canonical(), rhs.canonical()
    lg, rg = L.groups(), R.groups()
    splits = {}
    for d in range(L.rank):
        if not rg[d]:
            continue
        if len(lg[d]) < len(rg[d]):
            raise LayoutError(f"dim {d}: the divisor has more modes than the layout")
        first = lg[d][len(lg[d]) - len(rg[d])]
        p, q = L.modes[first][1], R.modes[rg[d][0]][1]
        if p != q:
            if p % q:
                raise LayoutError(f"dim {d}: mode {p} of the layout is not a multiple of the divisor's {q}")
            splits[first] = [p // q, q]
    L = L.refine(splits)
    lg = L.groups()
    match = {}          # divisor mode -> layout mode
    for d in range(L.rank):
        tail = lg[d][len(lg[d]) - len(rg[d]):] if rg[d] else []
        for a, b in zip(tail, rg[d]):
            if L.modes[a][1] != R.modes[b][1]:
                raise LayoutError(f"dim {d}: the divisor's modes do not end the layout's modes")
            match[b] = a
    for lst_l, lst_r, what in ((L.spatial, R.spatial, "spatial"), (L.local, R.local, "local")):
        if len(lst_r) > len(lst_l):
            raise LayoutError(f"the divisor has more {what} modes than the layout")
        for a, b in zip(lst_l[len(lst_l) - len(lst_r):], lst_r):
            if (a < 0 or b < 0) and a != b:
                raise LayoutError(f"the divisor's {what} modes do not end the layout's")
            if b >= 0 and match.get(b) != a:
                raise LayoutError(f"the divisor's {what} modes do not end the layout's")
    removed = set(match.values())
    keep = [i for i in range(len(L.modes)) if i not in removed]
    new_index = {old: i for i, old in enumerate(keep)}
    shape = tuple(a // b for a, b in zip(L.shape, R.shape))
    sp = L.spatial[:len(L.spatial) - len(R.spatial)]
    lo = L.local[:len(L.local) - len(R.local)]
    result = RegisterModes(shape, tuple(L.modes[i] for i in keep),
                           tuple(m if m < 0 else new_index[m] for m in sp), tuple(new_index[m] for m in lo))
    if not _same_map(compose(result, rhs), lhs):
        raise LayoutError("no layout r with compose(r, divisor) == layout")
    return result


def left_divide(layout: RegisterModes, lhs_divisor: RegisterModes) -> RegisterModes:
    """The layout ``r`` with ``compose(lhs_divisor, r) == layout``, or an error if none exists.

    Mirror image of :func:`divide`: the divisor's modes must *begin* each dim's modes and its
    spatial/local lists must begin the layout's, after splitting the layout mode that may have
    merged with the divisor's *last* mode of a dim.
    """
    if lhs_divisor.rank > layout.rank:
        raise LayoutError(f"cannot divide a rank-{layout.rank} layout by a rank-{lhs_divisor.rank} layout")
    D0 = unsqueeze(lhs_divisor, range(layout.rank - lhs_divisor.rank))
    if any(a % b for a, b in zip(layout.shape, D0.shape)):
        raise LayoutError(f"shape {list(D0.shape)} does not divide shape {list(layout.shape)}")
    if layout.num_threads % D0.num_threads or layout.local_size % D0.local_size:
        raise LayoutError("the divisor has threads or locals that do not divide the layout's")
    L, D = layout.canonical(), D0.canonical()
    lg, dg = L.groups(), D.groups()
    splits = {}
    for d in range(L.rank):
        if not dg[d]:
            continue
        if len(lg[d]) < len(dg[d]):
            raise LayoutError(f"dim {d}: the divisor has more modes than the layout")
        last = lg[d][len(dg[d]) - 1]
        p, q = L.modes[last][1], D.modes[dg[d][-1]][1]
        if p != q:
            if p % q:
                raise LayoutError(f"dim {d}: mode {p} of the layout is not a multiple of the divisor's {q}")
            splits[last] = [q, p // q]
    L = L.refine(splits)
    lg = L.groups()
    match = {}
    for d in range(L.rank):
        for a, b in zip(lg[d][:len(dg[d])], dg[d]):
            if L.modes[a][1] != D.modes[b][1]:
                raise LayoutError(f"dim {d}: the divisor's modes do not begin the layout's modes")
            match[b] = a
    for lst_l, lst_d, what in ((L.spatial, D.spatial, "spatial"), (L.local, D.local, "local")):
        if len(lst_d) > len(lst_l):
            raise LayoutError(f"the divisor has more {what} modes than the layout")
        for a, b in zip(lst_l[:len(lst_d)], lst_d):
            if (a < 0 or b < 0) and a != b:
                raise LayoutError(f"the divisor's {what} modes do not begin the layout's")
            if b >= 0 and match.get(b) != a:
                raise LayoutError(f"the divisor's {what} modes do not begin the layout's")
    removed = set(match.values())
    keep = [i for i in range(len(L.modes)) if i not in removed]
    new_index = {old: i for i, old in enumerate(keep)}
    shape = tuple(a // b for a, b in zip(L.shape, D.shape))
    sp = L.spatial[len(D.spatial):]
    lo = L.local[len(D.local):]
    result = RegisterModes(shape, tuple(L.modes[i] for i in keep),
                           tuple(m if m < 0 else new_index[m] for m in sp), tuple(new_index[m] for m in lo))
    if not _same_map(compose(lhs_divisor, result), layout):
        raise LayoutError("no layout r with compose(divisor, r) == layout")
    return result
