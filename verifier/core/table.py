"""The explicit-table comparison, vectorised: both layouts evaluated at every hardware location
with numpy (int32 where the tensor fits, chunked), then compared.

This is the independent cross-check of the symbolic strategies and the fallback before z3 for
layouts of up to :data:`TABLE_FALLBACK` locations. Memory stays near one int32 per location and
layout plus a bitmap per tensor: a flat grid of the row-major logical index of every location,
in the pair's aligned hardware order (first dim fastest).

* A digit-linear layout (:mod:`layoutverify.core.radix`) is tabulated by broadcasting: the grid
  is an outer sum of ``arange(radix) * weight`` over its digits, no expression evaluation.
* Any other layout is evaluated chunk by chunk (:data:`CHUNK` locations at a time) with the
  numpy evaluator; a location mapped outside the shape is an error.

Verdicts follow :mod:`layoutverify.core.compare`: coverage (bitmaps), then pointwise, then the
per-thread element sets (sorted rows and ``searchsorted`` on ``thread * elements + element``
keys, chunked).
"""
from __future__ import annotations

import numpy as np

from layoutverify.core import expr as E
from layoutverify.core import result as R
from layoutverify.core.errors import LayoutError, SizeLimitError
from layoutverify.core.layout import MAX_TABLE_LOCATIONS, Layout
from layoutverify.core.radix import digit_form

#: Largest hardware domain for which ``auto`` uses the table before trying z3.
TABLE_FALLBACK = 1 << 22
#: Locations evaluated at once by the expression evaluator.
CHUNK = 1 << 16


def _dtype(lay: Layout):
    return np.int32 if lay.out_size() < (1 << 31) else np.int64


def _row_major(lay: Layout) -> list[int]:
    mult, out = 1, []
    for s in reversed(lay.out_sizes):
        out.append(mult)
        mult *= s
    return out[::-1]


def flat_grid(lay: Layout, names, sizes: dict) -> np.ndarray:
    """Row-major flat logical index of every location, 1-D, in the flat order of ``names``
    (first fastest; ``sizes`` gives each name's size in ``lay``, 1 where absent)."""
    n = 1
    for nm in names:
        n *= sizes[nm]
    if n > MAX_TABLE_LOCATIONS:
        raise SizeLimitError(f"the table method evaluates at most {MAX_TABLE_LOCATIONS} hardware locations; "
                             f"this layout has {n}")
    dt = _dtype(lay)
    mult = _row_major(lay)
    df = digit_form(lay)
    dg = df.own_digits() if df is not None else None
    if dg is not None:
        top = df.maximum()
        for d, (m, s) in enumerate(zip(top, lay.out_sizes)):
            if m >= s:
                raise LayoutError(f"layout maps some hardware location to {lay.out_names[d]}={m}, "
                                  f"outside its logical shape {list(lay.out_sizes)}")
        base = sum(o * w for o, w in zip(df.offset, mult))
        grid = np.full(1, base, dtype=dt)
        order = []
        for nm in names:
            order += sorted((p, r, s) for (dn, p), (r, s) in dg.items() if dn == nm)
        for p, r, s in reversed(order):  # slowest digit first: the fastest ends as the last axis
            w = sum(c * m for c, m in zip(s, mult))
            grid = np.add.outer(grid, np.arange(r, dtype=dt) * dt(w)).ravel()
        return grid
    out = np.empty(n, dtype=dt)
    for start in range(0, n, CHUNK):
        flat = np.arange(start, min(n, start + CHUNK), dtype=np.int64)
        env = {}
        for nm in names:
            s = sizes[nm]
            env[nm] = flat % s
            flat = flat // s
        acc = np.zeros(len(env[names[0]]) if names else 1, dtype=np.int64)
        for d, (e, s) in enumerate(zip(lay.exprs, lay.out_sizes)):
            v = np.broadcast_to(np.asarray(E.evaluate(e, env), dtype=np.int64), acc.shape)
            bad = (v < 0) | (v >= s)
            if bad.any():
                k = int(np.argmax(bad))
                loc = {nm: int(env[nm][k]) for nm in names if nm in lay.in_names}
                raise LayoutError(f"hardware location {loc} maps to {lay.out_names[d]}={int(v[k])}, "
                                  f"outside size {s}")
            acc = acc * s + v
        out[start:start + len(acc)] = acc
    return out


def _loc(pair: R.Pair, k: int, sizes: dict) -> dict:
    loc = {}
    for nm in pair.names:
        k, loc[nm] = divmod(int(k), sizes[nm])
    return loc


def _unflat(f: int, shape) -> list[int]:
    return [int(c) for c in np.unravel_index(int(f), shape)]


def _box(g: np.ndarray, pair: R.Pair, sizes: dict, box: dict) -> np.ndarray:
    """The part of a flat grid inside ``box`` (a size per name), as a flat array in the same order."""
    shape = [sizes[n] for n in pair.names]
    arr = g.reshape(shape[::-1])  # C order: the last axis is the first (fastest) name
    sl = tuple(slice(0, box[n]) for n in reversed(pair.names))
    return arr[sl].ravel()


def compare_table(pair: R.Pair) -> R.Result:
    """Decide by evaluating both layouts everywhere (see the module docstring)."""
    ga = flat_grid(pair.a, pair.names, pair.size_a)
    gb = flat_grid(pair.b, pair.names, pair.size_b)
    n_el = pair.a.out_size()
    shape = pair.a.out_sizes

    # Coverage: bitmaps of held elements.
    ha = np.zeros(n_el, dtype=bool)
    ha[ga] = True
    hb = np.zeros(n_el, dtype=bool)
    hb[gb] = True
    if not np.array_equal(ha, hb):
        for side, g, hx, hy, sz in (("a", ga, ha, hb, pair.size_a), ("b", gb, hb, ha, pair.size_b)):
            only = hx & ~hy
            if only.any():
                f = int(np.argmax(only))
                k = int(np.argmax(g == f))
                return R.coverage_result("table", side, _unflat(f, shape), _loc(pair, k, sz))
    del ha, hb

    # Pointwise on the common box, then outside it.
    if pair.same_sizes:
        ca, cb = ga, gb
    else:
        common = {n: min(pair.size_a[n], pair.size_b[n]) for n in pair.names}
        ca, cb = _box(ga, pair, pair.size_a, common), _box(gb, pair, pair.size_b, common)
    if pair.same_sizes and np.array_equal(ca, cb):
        return R.equal_result("table", "explicit tables identical")
    neq = np.flatnonzero(ca != cb)
    if neq.size:
        sizes = pair.size_a if pair.same_sizes else {n: min(pair.size_a[n], pair.size_b[n]) for n in pair.names}
        diff_loc = _loc(pair, int(neq[0]), sizes)
    else:
        diff_loc = pair.outside_location()
    del neq, ca, cb

    if not pair.has_register:
        return R.not_equal_result(pair, "table", diff_loc)
    if not pair.same_threads:
        return R.not_equal_result(pair, "table", pair.outside_thread_location())

    # Per-thread element sets. The register dim is the first (fastest) aligned dim.
    ra, rb = pair.size_a[R.REGISTER], pair.size_b[R.REGISTER]
    rows_a, rows_b = ga.reshape(-1, ra), gb.reshape(-1, rb)
    for side, rx, ry in (("a", rows_a, rows_b), ("b", rows_b, rows_a)):
        miss = _first_missing(rx, ry, n_el)
        if miss is not None:
            t, r = miss
            sz = pair.sizes(side)
            loc = _loc(pair, t * sz[R.REGISTER] + r, sz)
            return R.not_equal_result(pair, "table", loc, side, thread_set=True)
    return R.reg_order_result(pair, "table", diff_loc)


def _first_missing(rx: np.ndarray, ry: np.ndarray, n_el: int):
    """``(thread, register)`` of the first element of ``rx``'s rows absent from the same row of
    ``ry``, or ``None``."""
    ky = np.sort(ry, axis=1).astype(np.int64)
    nthreads = ky.shape[0]
    ky += np.arange(nthreads, dtype=np.int64)[:, None] * n_el
    ky = ky.ravel()  # rows sorted and thread-major: globally sorted
    rows_per_chunk = max(1, CHUNK // max(1, rx.shape[1]))
    for t0 in range(0, nthreads, rows_per_chunk):
        part = rx[t0:t0 + rows_per_chunk].astype(np.int64)
        part += np.arange(t0, t0 + part.shape[0], dtype=np.int64)[:, None] * n_el
        pos = np.searchsorted(ky, part.ravel())
        pos = np.minimum(pos, ky.size - 1)
        found = ky[pos] == part.ravel()
        if not found.all():
            k = int(np.argmin(found))
            return t0 + k // rx.shape[1], k % rx.shape[1]
    return None
