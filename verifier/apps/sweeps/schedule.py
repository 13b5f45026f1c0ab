"""Which shard a worker (or a Ray node) takes next: contiguous regions of the locality order,
then stealing.

The shards to run are put in the space's locality order (:meth:`.space.Space.locality`: shards
that use the same parsed layouts next to each other; for Triton spaces the groups that differ only
in element type, row by row), then split into one contiguous region per slot (a worker process, or
a Ray node weighted by its CPUs), and a slot takes the shards of its region in order. So a worker
parses the layouts it needs once for all its shards instead of once per shard (with a shared queue
in index order, 16 workers would each parse every group's B layouts again for every shard) and
once for all element types (in index order the groups of one shape and another element type come
a dozen groups later, after the parse cache has let them go). A slot whose region is empty takes
the *last* shard of the region with the most shards left, which keeps the victim's next shards
contiguous, and the regions finish together. Shards given back (their worker died) go first.
"""
from __future__ import annotations

from collections import deque


def locality_order(todo: list, space) -> list:
    """The shards ``todo`` (``(n, lo, hi)``) in the locality order of ``space``, by first point."""
    return sorted(todo, key=lambda t: space.locality(t[1]))


class Regions:
    """``next(slot)`` hands out ``(n, lo, hi)`` shards as the module docstring says."""

    def __init__(self, todo: list, weights: dict):
        self.retry: deque = deque()
        self.regions: dict = {}
        total, shares = len(todo), sum(weights.values()) or 1
        start, acc = 0, 0
        for slot, w in weights.items():
            acc += w
            end = total * acc // shares
            self.regions[slot] = deque(todo[start:end])
            start = end

    def __len__(self) -> int:
        return len(self.retry) + sum(len(r) for r in self.regions.values())

    def next(self, slot):
        """The next shard for ``slot``, or None when none is left anywhere."""
        if self.retry:
            return self.retry.popleft()
        own = self.regions.get(slot)
        if own:
            return own.popleft()
        victim = max(self.regions.values(), key=len, default=None)
        return victim.pop() if victim else None

    def give_back(self, shard) -> None:
        """Put ``shard`` back to be handed out again (before any region's shards)."""
        self.retry.append(shard)
