"""Compiling conversion kernels with a given Triton release, on the CPU, with a disk cache.

Two kernel builders, one kernel (see :mod:`layoutverify.adapters.triton.compile_worker`):

* releases 3.6 - 3.9: the Gluon kernel of the compile worker (Triton's own encodings for
  ``triton:`` specs, ``DistributedLinearLayout`` bases for the others);
* older releases (2.1 - 3.5): the same kernel written as TTGIR (:mod:`.ttgir`) and compiled by
  :mod:`.ttgir_worker`, since their Gluon is missing or different.

Both run in subprocesses of the release's interpreter (:mod:`.releases`). A compiled kernel is
kept in ``cache_dir`` under the hash of the Triton version and the case, so a suite compiles once
per machine; only successful compiles are kept.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys

from .releases import SUPPORTED

WORKER_TTGIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ttgir_worker.py")


def uses_gluon(release: str) -> bool:
    """Whether release ``X.Y`` builds the kernel with Gluon (else from TTGIR text)."""
    return release in SUPPORTED


def _key(version: str, case: dict) -> str:
    body = {k: v for k, v in case.items() if k != "id"}
    return hashlib.sha256(json.dumps([version, body], sort_keys=True).encode()).hexdigest()[:24]


def compile_cases(cases: list[dict], *, python: str | None, version: str, cache_dir: str | None = None,
                  gluon: bool = True, workers: int = 2) -> dict:
    """``{case id: worker answer}`` (``{"ptx", "triton", ...}`` or ``{"error"}``) for every case,
    compiled by ``python`` (whose Triton is ``version``, major.minor.patch) or read from
    ``cache_dir``. ``gluon``: the cases are the Gluon worker's, else the TTGIR worker's."""
    from layoutverify.adapters import adapter
    results: dict = {}
    todo, keys = [], {}
    for c in cases:
        keys[c["id"]] = key = _key(version, c)
        path = os.path.join(cache_dir, key + ".json") if cache_dir else None
        if path and os.path.exists(path):
            try:
                with open(path) as f:
                    results[c["id"]] = dict(json.load(f), id=c["id"])
                continue
            except (OSError, ValueError):  # a torn file: compile again
                pass
        todo.append(c)
    if todo:
        fresh = adapter("triton").lowering.compile_conversions(
            todo, python=python or sys.executable, workers=min(workers, len(todo)),
            worker=None if gluon else WORKER_TTGIR)
        for cid, r in fresh.items():
            results[cid] = r
            if cache_dir and "ptx" in r:
                _store(os.path.join(cache_dir, keys[cid] + ".json"), r)
    return results


def _store(path: str, answer: dict) -> None:
    """Write atomically (another process may read the cache meanwhile); a cache that cannot be
    written is only slower."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(answer, f)
        os.replace(tmp, path)
    except OSError:
        pass
