"""Which shard a worker (or a Ray node) takes next: contiguous regions, then stealing.

The shards to run are split into one contiguous region per slot (a worker process, or a Ray node
weighted by its CPUs), and a slot takes the shards of its region in order. Neighbouring shards
share their group's layouts, so a worker parses a group's layouts once for all its shards of that
group instead of once per shard (with a shared queue in index order, 16 workers would each
parse every group's B layouts again for every shard). A slot whose region is empty takes the
*last* shard of the region with the most shards left, which keeps the victim's next shards
contiguous, and the regions finish together. Shards given back (their worker died) go first.
"""
from __future__ import annotations

from collections import deque


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
        self.retry.append(shard)
