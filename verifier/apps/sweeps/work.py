"""Evaluating sweep points in a worker (a pool process or a Ray task).

A **chunk** is a JSON-able dict: ``task``, ``shape_a``/``shape_b``, ``options`` (adapter
options), ``element_type``, ``layouts`` (name -> spec, only those its pairs use), ``pairs``
(``[id, a name, b name]``; ``id`` None: computed here from the group ``key``) and ``meta``. :func:`evaluate_chunk` parses each layout once and
answers one record per pair:

* ``prove``: ``verdict`` and ``method`` (the core's batch prover, :func:`layoutverify.core.batch.prove_many`);
* ``analyze``: ``mechanism`` (cheapest sufficient), ``triton_mechanism`` (what Triton's lowering
  uses; :mod:`layoutverify.apps.scan.triton_choice`), ``elements_moved``, ``vector_width``;

or ``error`` (bad input: the layout does not fit the shape, ...). Records carry ``id``, ``a``,
``b`` (names) and the group's ``meta``.
"""
from __future__ import annotations

import os
import time

from layoutverify.core.errors import LayoutError

#: set to make a worker crash on purpose (tests of Ray's task retries): "PATH:N" makes the first
#: N chunks evaluated anywhere with this marker file present exit the worker process
CRASH_ENV = "LAYOUTVERIFY_SWEEP_CRASH_ONCE"


def _maybe_crash() -> None:
    marker = os.environ.get(CRASH_ENV)
    if marker and os.path.exists(marker):
        try:
            os.remove(marker)
        except OSError:
            return
        os._exit(17)


def _parse_all(chunk: dict) -> dict:
    from layoutverify.adapters import parse_spec, split_spec
    out = {}
    used_a = {p[1] for p in chunk["pairs"]}
    used_b = {p[2] for p in chunk["pairs"]}
    for name, spec in chunk["layouts"].items():
        for side, shape, used in (("a", chunk.get("shape_a"), used_a), ("b", chunk.get("shape_b"), used_b)):
            if name not in used:
                continue
            opts = dict(chunk.get("options") or {})
            if split_spec(spec)[0] != "triton":
                opts.pop("triton_version", None)
            try:
                out[(side, name)] = parse_spec(spec, shape=tuple(shape) if shape else None, **opts)
            except LayoutError as e:
                out[(side, name)] = e
    return out


def evaluate_chunk(chunk: dict) -> list[dict]:
    """One record per pair of ``chunk`` (see the module docstring)."""
    _maybe_crash()
    t0 = time.perf_counter()
    layouts = _parse_all(chunk)
    meta = chunk.get("meta") or {}
    records = []
    todo = []
    for pid, a, b in chunk["pairs"]:
        if pid is None:
            from .spec import point_id
            pid = point_id(chunk["task"], chunk["key"], chunk["layouts"][a], chunk["layouts"][b])
        rec = {"id": pid, "a": a, "b": b, **meta}
        la, lb = layouts[("a", a)], layouts[("b", b)]
        bad = la if isinstance(la, Exception) else lb if isinstance(lb, Exception) else None
        if bad is not None:
            rec["error"] = str(bad)
        else:
            todo.append((rec, la, lb))
        records.append(rec)
    if chunk["task"] == "prove":
        from layoutverify.core.batch import prove_many
        results = prove_many([(la, lb) for _, la, lb in todo], errors="return")
        for (rec, _, _), res in zip(todo, results):
            if isinstance(res, Exception):
                rec["error"] = str(res)
            else:
                rec["verdict"], rec["method"] = res.verdict, res.method
    else:
        from layoutverify.apps.scan.triton_choice import triton_choice
        from layoutverify.core.conversion import analyze
        bits = _bits(chunk.get("element_type"))
        for rec, la, lb in todo:
            try:
                rep = analyze(la, lb, element_bits=bits)
                rec.update(mechanism=rep.mechanism, elements_moved=rep.elements_moved, vector_width=rep.vector_width)
                if la.kind == "register" and lb.kind == "register":
                    rec["triton_mechanism"] = triton_choice(la, lb).mechanism
            except LayoutError as e:
                rec["error"] = str(e)
    dt = time.perf_counter() - t0
    for r in records:
        r["worker_seconds"] = round(dt / max(1, len(records)), 7)
    return records


def evaluate_chunk_lines(chunk: dict) -> tuple[int, str, float]:
    """:func:`evaluate_chunk` serialised in the worker: ``(records, JSON lines, CPU seconds the
    worker spent on the chunk)``; the CPU time gives a throughput that other load on the machine
    does not bend."""
    import json
    c0 = time.process_time()
    recs = evaluate_chunk(chunk)
    text = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in recs)
    return len(recs), text, time.process_time() - c0


def _bits(etype) -> int:
    from .spec import ELEMENT_BITS
    return ELEMENT_BITS.get(etype or "f16", 16)
