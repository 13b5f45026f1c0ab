"""Many comparisons at once: :func:`prove_many`, the stable entry point of sweeps, corpus checks,
snapshot diffs and the service.

Every pair is answered by :func:`layoutverify.core.compare.compare`, so a pair gets the same
verdict, method and witness here as there. What batching adds: a pair that only a strategy
decides (its normal forms do not), and whose two layouts' canonical keys (the maps written out:
:mod:`layoutverify.core.normalform`) were compared before, is answered from the earlier result:
the same maps, so the same verdict, and a witness valid for both.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from layoutverify.core import normalform as NF
from layoutverify.core import result as R
from layoutverify.core.compare import compare
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout


def canonical_key(lay: Layout) -> tuple | None:
    """A hashable description of the map (equal keys = equal layouts), or ``None`` when the
    layout has no cheap exact form (then pairs with it are always compared)."""
    key = NF.of(lay).key
    return None if key is None else key.value


def prove_many(pairs: Iterable[Sequence[Layout]], *, method: str = "auto", timeout_ms: int = 10_000,
               errors: str = "raise") -> list:
    """:func:`~layoutverify.core.compare.compare` every ``(a, b)`` of ``pairs``; results in
    input order (see the module docstring).

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
    """:func:`prove_many` one pair at a time, keeping its memo of strategy-decided canonical
    pairs between calls (at most ``max_memo`` entries; the memo is emptied when full)."""

    def __init__(self, *, method: str = "auto", timeout_ms: int = 10_000, max_memo: int = 1 << 16):
        self.method, self.timeout_ms, self.max_memo = method, timeout_ms, max_memo
        self.done: dict[tuple, R.Result] = {}

    def prove(self, a: Layout, b: Layout) -> R.Result:
        """The verdict on ``a`` against ``b``, as :func:`~layoutverify.core.compare.compare` gives it."""
        if len(self.done) >= self.max_memo:
            self.done.clear()
        return compare(a, b, method=self.method, timeout_ms=self.timeout_ms, memo=self.done)
