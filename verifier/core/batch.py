"""Many comparisons at once: :func:`prove_many`.

Sweeps, corpus checks, snapshot diffs and the service compare many pairs in which the same
layouts recur. :func:`prove_many` takes pairs of :class:`Layout` objects (parsing is the
adapters' job; :func:`layoutverify.apps.batch.prove_specs` does it for text) and

* derives each distinct layout's *canonical key* once (by object identity): the F2 bases, or the
  mixed-radix digits, over the hardware dims of size > 1, with the logical dims. Equal keys
  mean equal maps (the key is the map written out, not a hash), so a pair with equal keys is
  ``equal`` without running a strategy;
* answers a pair whose two keys were already compared from the earlier result (same maps, so the
  same verdict and a witness valid for both);
* sends every other pair to :func:`layoutverify.core.compare.compare`.
"""
from __future__ import annotations

import time
import weakref
from typing import Iterable, Sequence

from layoutverify.core import result as R
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout

_KEYS: "weakref.WeakKeyDictionary[Layout, tuple | None]" = weakref.WeakKeyDictionary()


def canonical_key(lay: Layout) -> tuple | None:
    """A hashable description of the map (equal keys = equal layouts), or ``None`` when the
    layout has no cheap exact form (then pairs with it are always compared)."""
    try:
        return _KEYS[lay]
    except KeyError:
        pass
    from layoutverify.core.compare import _f2_data
    from layoutverify.core.radix import digit_form
    ins = tuple(sorted((n, s) for n, s in lay.in_dims if s > 1))
    key = None
    f2 = _f2_data(lay)
    if f2 is not None:
        key = ("f2", ins, lay.out_dims, tuple((n, tuple(f2.bases.get(n, ()))) for n, _ in ins))
    else:
        df = digit_form(lay)
        if df is not None:
            dg = df.own_digits()
            key = ("radix", ins, lay.out_dims, df.offset, tuple(sorted(dg.items())))
    _KEYS[lay] = key
    return key


def prove_many(pairs: Iterable[Sequence[Layout]], *, method: str = "auto", timeout_ms: int = 10_000,
               errors: str = "raise") -> list:
    """Compare every ``(a, b)`` of ``pairs``; results in input order (see the module docstring).

    ``errors="return"`` puts a pair's :class:`LayoutError` (e.g. a layout that leaves its shape)
    in its slot instead of raising. Results of repeated pairs are shared objects: treat them as
    read-only."""
    if errors not in ("raise", "return"):
        raise LayoutError(f"errors must be 'raise' or 'return', got {errors!r}")
    prover = Prover(method=method, timeout_ms=timeout_ms)
    out: list = []
    for a, b in pairs:
        try:
            out.append(prover.prove(a, b))
        except LayoutError as e:
            if errors == "raise":
                raise
            out.append(e)
    return out


class Prover:
    """:func:`prove_many` one pair at a time, keeping its memo of decided canonical pairs between
    calls (at most ``max_memo`` entries; the memo is emptied when full)."""

    def __init__(self, *, method: str = "auto", timeout_ms: int = 10_000, max_memo: int = 1 << 16):
        self.method, self.timeout_ms, self.max_memo = method, timeout_ms, max_memo
        self.done: dict[tuple, R.Result] = {}

    def prove(self, a: Layout, b: Layout) -> R.Result:
        if len(self.done) >= self.max_memo:
            self.done.clear()
        return _prove(a, b, self.method, self.timeout_ms, self.done)


def _prove(a: Layout, b: Layout, method: str, timeout_ms: int, done: dict) -> R.Result:
    from layoutverify.core.compare import compare

    if not isinstance(a, Layout) or not isinstance(b, Layout):
        raise LayoutError("prove_many needs pairs of Layout objects")
    t0 = time.perf_counter()
    ka, kb = canonical_key(a), canonical_key(b)
    if ka is None or kb is None:
        return compare(a, b, method=method, timeout_ms=timeout_ms)
    memo_key = (ka, kb, method)
    res = done.get(memo_key)
    if res is None:
        if ka == kb and method in ("auto", "f2", "radix"):
            res = R.equal_result(R.Pair(a, b), "normal form", "identical canonical forms")
            res.seconds = time.perf_counter() - t0
        else:
            res = compare(a, b, method=method, timeout_ms=timeout_ms)
        if res.verdict != "unknown":
            done[memo_key] = res
    return res
