"""Many comparisons at once: :func:`prove_many`.

Sweeps, corpus checks, snapshot diffs and the service compare many pairs in which the same
layouts recur. :func:`prove_many` takes pairs of :class:`Layout` objects (parsing is the
adapters' job; :func:`layoutverify.apps.batch.prove_specs` does it for text) and

* uses each layout's normal form (:mod:`layoutverify.core.normalform`, built once per layout
  object and kept on it): its *canonical key* is the map written out (F2 bases, or coalesced
  mixed-radix digits, over the hardware dims of size > 1, with the logical dims; not a hash), so
  a pair with equal keys is ``equal`` without running a strategy, and the normal forms decide
  most other pairs in about a microsecond (as :func:`layoutverify.core.compare.compare` does);
* answers a pair that only a strategy decides, and whose two keys were already compared, from
  the earlier result (same maps, so the same verdict and a witness valid for both);
* sends every other pair to :func:`layoutverify.core.compare.compare`.
"""
from __future__ import annotations

import time
from typing import Iterable, Sequence

from layoutverify.core import normalform as NF
from layoutverify.core import result as R
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout

def canonical_key(lay: Layout) -> tuple | None:
    """A hashable description of the map (equal keys = equal layouts), or ``None`` when the
    layout has no cheap exact form (then pairs with it are always compared)."""
    return NF.of(lay).key


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
    na, nb = NF.of(a), NF.of(b)
    ka, kb = na.key, nb.key
    same_head = na.head is nb.head or na.head == nb.head  # same kind and logical dims
    if ka is not None and same_head and (ka is kb or ka == kb) and method in ("auto", "f2", "radix"):
        res = R.equal_result(None, "normal form", "identical canonical forms")
        res.seconds = time.perf_counter() - t0
        return res
    if ka is None or kb is None or (method == "auto" and same_head and NF.decide(na, nb) is not None):
        return compare(a, b, method=method, timeout_ms=timeout_ms)  # (decided on the normal forms again)
    memo_key = (ka, kb, method)
    res = done.get(memo_key)
    if res is None:
        res = compare(a, b, method=method, timeout_ms=timeout_ms)
        if res.verdict != "unknown":
            done[memo_key] = res
    return res
