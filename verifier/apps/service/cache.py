"""The in-memory answer cache, bounded in bytes and keyed by the canonical form.

Two least-recently-used maps, both counted in bytes:

* ``results``: result id -> the stored answer (``{"result", "fingerprints"}``) as JSON bytes.
  The result id is derived from the question's canonical key (kind, fingerprints of the layouts,
  options, tool version; :func:`.store.store_key`), so every spelling of one question shares
  one entry, however many spellings are asked.
* ``requests``: hash of a request as written -> (permalink id, result id): a few dozen bytes a
  spelling, so that a repeated spelling is answered without a worker or the store.

An entry's size is its key and value lengths plus :data:`ENTRY_OVERHEAD` for the Python objects
around them; when the total passes the budget the least recently used entries go. Only answers
already committed to the store enter the cache (they never change: the key holds the tool
version).
"""
from __future__ import annotations

import json
from collections import OrderedDict

#: bytes counted for each entry besides its key and value (dict slot, tuple, str and bytes headers)
ENTRY_OVERHEAD = 240


class _LRU:
    """A least-recently-used map whose values are sized in bytes."""

    def __init__(self, budget: int):
        self.budget = budget
        self.size = 0
        self._items: OrderedDict = OrderedDict()

    def get(self, key):
        item = self._items.get(key)
        if item is not None:
            self._items.move_to_end(key)
            return item[0]
        return None

    def put(self, key, value, nbytes: int) -> None:
        cost = nbytes + len(key) + ENTRY_OVERHEAD
        if cost > self.budget:
            return
        old = self._items.pop(key, None)
        if old is not None:
            self.size -= old[1]
        self._items[key] = (value, cost)
        self.size += cost
        while self.size > self.budget:
            _, (_, c) = self._items.popitem(last=False)
            self.size -= c

    def __len__(self) -> int:
        return len(self._items)


class AnswerCache:
    """Answers by request hash, stored once per result; at most ``budget`` bytes in all (a tenth of
    it for the request map)."""

    def __init__(self, budget: int = 64 << 20):
        self.results = _LRU(budget - budget // 10)
        self.requests = _LRU(budget // 10)

    @property
    def size(self) -> int:
        return self.results.size + self.requests.size

    def get(self, request_hash: str) -> dict | None:
        """``{"id", "result_id", "result", "fingerprints", "cached": True}`` or ``None``."""
        link = self.requests.get(request_hash)
        if link is None:
            return None
        pid, rid = link
        raw = self.results.get(rid)
        if raw is None:
            return None
        return {"id": pid, "result_id": rid, **json.loads(raw), "cached": True}

    def put(self, request_hash: str, pid: str, rid: str, result: dict, fingerprints: dict) -> None:
        if self.results.get(rid) is None:
            raw = json.dumps({"result": result, "fingerprints": fingerprints}, separators=(",", ":")).encode()
            self.results.put(rid, raw, len(raw))
        self.requests.put(request_hash, (pid, rid), len(pid) + len(rid))
