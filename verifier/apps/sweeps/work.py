"""A worker's part of a sweep: the shard ``[lo, hi)``, enumerated, evaluated and written here.

:func:`run_shard` numbers its own points from the spec (:class:`~.space.Space`, built once per
process), parses each layout a shard uses once, evaluates every point and writes the shard's
records and summary into the results directory (:mod:`.store`); the coordinator receives only the
summary (a few hundred bytes). Where the results directory is not visible (a Ray node without the
shared path) the records come back instead, compressed, for the coordinator to write.

A record is one JSON line, its keys in this order: ``i`` (index in the space), ``id`` (stable
hash, :func:`~.space.point_id`), ``a``, ``b`` (layout names), the group's ``meta`` (Triton:
``version``, ``element_type``, ``num_warps``, ``shape``; templates: ``vars``, ``a_spec``,
``b_spec``), then

* ``prove``: ``verdict`` and ``method`` (the core's :func:`~layoutverify.core.batch.prove_many`);
* ``analyze``: ``mechanism`` (cheapest sufficient), ``triton_mechanism`` (what Triton's lowering
  uses; :mod:`layoutverify.apps.scan.triton_choice`), ``elements_moved``, ``vector_width``;

or ``error`` (bad input: a layout that does not fit its shape, ...). Records hold no times or
other run-dependent values, so a sweep's records are the same however it is run.
"""
from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import socket
import time
import zlib
from collections import Counter

from layoutverify.core.errors import LayoutError

from .space import Space
from .store import MANIFEST, read_json, write_records, write_summary

#: set to make a worker crash on purpose (tests of retries): "PATH" makes the first shard started
#: anywhere while the marker file PATH exists remove it and exit its worker process
CRASH_ENV = "LAYOUTVERIFY_SWEEP_CRASH_ONCE"
#: set (to any value) to make workers treat the results directory as not shared (tests of the
#: path by which records come back to the coordinator)
UNSHARED_ENV = "LAYOUTVERIFY_SWEEP_UNSHARED"

class SweepFailed(RuntimeError):
    """A shard could not be evaluated (its worker died more often than the retries allow)."""


_SPACES: dict[str, Space] = {}        # fingerprint -> space (one spec per process, usually)
_VISIBLE: dict[tuple, bool] = {}      # (out, fingerprint) -> the results directory is here
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _maybe_crash() -> None:
    marker = os.environ.get(CRASH_ENV)
    if marker and os.path.exists(marker):
        try:
            os.remove(marker)
        except OSError:
            return
        os._exit(17)


def space_of(spec, space: Space | None = None) -> Space:
    """The numbered points of ``spec``, made once per process (``space``: one made already, kept
    for later calls; the coordinator hands its own to the workers it forks)."""
    fp = spec.fingerprint()
    sp = _SPACES.get(fp)
    if sp is None:
        if len(_SPACES) > 8:
            _SPACES.clear()
        sp = _SPACES[fp] = space or Space(spec)
    return sp


def warm_up(spec) -> None:
    """Load into this process what evaluating a shard needs besides its own layouts: the numbered
    space and the modules the evaluation imports. The coordinator does this once before it forks
    its workers, which start with it: otherwise each of 16 workers imports the same modules (and
    pays the page faults) on its first shard. For a Triton space the first point is evaluated in
    memory (a millisecond; it loads every module a shard uses, the adapter's lazily imported
    parts included); a template point may take long, so there only the task's modules and the
    adapters its first point names are imported."""
    space = space_of(spec)
    if not space.points:
        return
    g = next(iter(space.slices(0, 1)))[0]
    if g.share is not None:
        with _collector_paused():
            for _ in evaluate(space, 0, 1, Counts(spec.task)):
                pass
        return
    from layoutverify.adapters import adapter, split_spec
    if spec.task == "prove":
        import layoutverify.core.batch  # noqa: F401
    else:
        import layoutverify.apps.scan.triton_choice  # noqa: F401
        import layoutverify.core.conversion  # noqa: F401
    for text in g.layouts.values():
        try:
            adapter(split_spec(text)[0])
        except LayoutError:
            pass          # the point is an error: its worker says so


#: records per piece written (about 50 kB)
CHUNK_LINES = 256


def _chunks(lines):
    """The record lines as bytes, :data:`CHUNK_LINES` lines a piece."""
    buf = []
    for line in lines:
        buf.append(line)
        if len(buf) >= CHUNK_LINES:
            yield "".join(buf).encode()
            buf.clear()
    if buf:
        yield "".join(buf).encode()


def run_shard(spec, out: str, width: int, n: int, lo: int, hi: int, *, node: str | None = None) -> dict:
    """Evaluate and write shard ``n`` (points ``[lo, hi)``); its summary. When ``out`` holds no
    manifest of this spec here (a node that does not share the path), the summary carries the
    records instead, zlib-compressed, under ``records_z``."""
    _maybe_crash()
    c0, t0 = time.process_time(), time.perf_counter()
    fp = spec.fingerprint()
    counts = Counts(spec.task)
    visible = _VISIBLE.get((out, fp))
    if visible is None:
        m = read_json(os.path.join(out, MANIFEST))
        visible = _VISIBLE[(out, fp)] = bool(m) and m.get("fingerprint") == fp
    visible = visible and not os.environ.get(UNSHARED_ENV)
    lines = evaluate(space_of(spec), lo, hi, counts)
    if visible:
        with _collector_paused():
            write_records(out, n, width, _chunks(lines))
    else:
        z = zlib.compressobj(1)
        with _collector_paused():
            parts = [z.compress(chunk) for chunk in _chunks(lines)]
        parts.append(z.flush())
    summary = counts.as_dict()
    summary.update(fingerprint=fp, shard=n, lo=lo, hi=hi)
    summary["worker"] = {"host": socket.gethostname(), "pid": os.getpid(), **({"node": node} if node else {})}
    if not visible:
        summary["records_z"] = b"".join(parts)
    summary["cpu_seconds"] = round(time.process_time() - c0, 6)   # (the writing included)
    summary["seconds"] = round(time.perf_counter() - t0, 6)
    if visible:
        write_summary(out, n, width, summary)
    return summary


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off for one shard. Evaluating points makes no reference
    cycles (a shard's objects are freed by reference counting), but its allocations trigger
    collections that traverse the worker's whole heap (parsed layouts, normal forms, caches): 30%
    of a worker's CPU time on a 4096-point shard of Triton pairs (benchmarks/bench_sweep.py). Any
    cycle that does arise is collected after the shard, when the collector runs again."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class Counts:
    """What a shard's summary counts: points, errors by kind (the message up to its first colon)
    with the first error, and verdicts (``prove``) or mechanisms (``analyze``)."""

    def __init__(self, task: str):
        self.task = task
        self.points = 0
        self.errors: Counter = Counter()
        self.first_error: dict | None = None
        self.verdicts: Counter = Counter()
        self.mechanisms: Counter = Counter()
        self.triton: Counter = Counter()

    def error(self, i: int, msg: str) -> None:
        """Count an error at point ``i`` under its kind (``msg`` up to its first colon); the first is
        kept whole."""
        self.errors[msg.split(":")[0][:60]] += 1
        if self.first_error is None:
            self.first_error = {"i": i, "error": msg}

    def as_dict(self) -> dict:
        """The counts as the shard summary's JSON object."""
        d = {"points": self.points, "errors": sum(self.errors.values()), "error_kinds": dict(self.errors),
             "first_error": self.first_error}
        if self.task == "prove":
            d["verdicts"] = dict(self.verdicts)
        else:
            d["mechanisms"] = dict(self.mechanisms)
            d["triton_mechanisms"] = dict(self.triton)
        return d


def evaluate(space: Space, lo: int, hi: int, counts: Counts):
    """The record lines of the points ``[lo, hi)`` (see the module docstring), counted into
    ``counts``."""
    for g, k0, k1, i0 in space.slices(lo, hi):
        yield from _group_lines(g, k0, k1, i0, counts)


def _group_lines(g, k0: int, k1: int, i0: int, counts: Counts):
    """The lines of the group's points ``k0..k1-1`` (the space's ``i0...``): A-major, so the
    A layout, its JSON name and its id hash prefix are made once per row of B layouts."""
    nb = len(g.b)
    one_row = k0 // nb == (k1 - 1) // nb
    b_used = range(k0 % nb, (k1 - 1) % nb + 1) if one_row else range(nb)
    memo = _memo(g)
    side_b = {bi: _layout(g, g.shape_b, g.b[bi], memo) for bi in b_used}
    meta = _dumps(g.meta)[1:-1]
    tail = ("," + meta if meta else "") + ","
    heads, todo = [], []          # record heads ('{"i":..,..meta,'), pairs to evaluate (slot, A, B)
    i = i0
    for ai in range(k0 // nb, (k1 - 1) // nb + 1):
        a = g.a[ai]
        la, ja, _ = _layout(g, g.shape_a, a, memo)
        head_a = f',"a":{ja},"b":'
        hasher = hashlib.blake2b(f"{g.task}|{g.key}|{g.layouts[a]}|".encode(), digest_size=8)
        bad_a = g.error or (str(la) if isinstance(la, LayoutError) else None)
        for bi in range(max(0, k0 - ai * nb), min(nb, k1 - ai * nb)):
            lb, jb, bspec = side_b[bi]
            h = hasher.copy()
            h.update(bspec)
            heads.append(f'{{"i":{i},"id":"{h.hexdigest()}"{head_a}{jb}{tail}')
            if bad_a is not None:
                todo.append((i - i0, bad_a, None))
            elif isinstance(lb, LayoutError):
                todo.append((i - i0, str(lb), None))
            else:
                todo.append((i - i0, la, lb))
            i += 1
    bodies = _evaluate(g, todo, i0, counts)
    counts.points += len(heads)
    for head, body in zip(heads, bodies):
        yield head + body + "}\n"


#: the parse memos (:attr:`.space.Group.parsed`) of the shares this process used last, the most
#: recent last; an older one is emptied (its layouts stay in the adapters' parse cache a while)
_RECENT: list = []
RECENT_SHARES = 4


def _memo(g) -> dict | None:
    """The memo of the group's share, made the most recent; None for a group of no share."""
    if g.share is None:
        return None
    m = g.parsed
    if not (_RECENT and _RECENT[-1] is m):
        for k, x in enumerate(_RECENT):
            if x is m:
                del _RECENT[k]
                break
        _RECENT.append(m)
        if len(_RECENT) > RECENT_SHARES:
            _RECENT.pop(0).clear()
    return m


def _layout(g, shape, name: str, memo: dict | None) -> tuple:
    """(layout or its :class:`LayoutError`, the name as JSON, the spec text as bytes) of the
    group's layout ``name``, from the share's memo where it was made before: a dictionary look-up
    instead of the parse cache's (spelling split, options checked, key built, lock: about 10 us,
    some 130 times a shard)."""
    got = memo.get(name) if memo is not None else None
    if got is None:
        got = (_parse(g, shape, name), _dumps(name), g.layouts[name].encode())
        if memo is not None:
            memo[name] = got
    return got


def _parse(g, shape, name):
    from layoutverify.adapters import parse_spec, split_spec
    spec = g.layouts[name]
    opts = g.options
    if opts and split_spec(spec)[0] != "triton":
        opts = {k: v for k, v in opts.items() if k != "triton_version"}
    try:
        return parse_spec(spec, shape=shape, **opts)
    except LayoutError as e:
        return e


_PROVED: dict[tuple, str] = {}   # (verdict, method) -> '"verdict":...,"method":...'


def _evaluate(g, todo: list, i0: int, counts: Counts) -> list[str]:
    """The result part of each record of ``todo`` (``(slot, A, B)``, or ``(slot, message, None)``
    for a point that is an error already), in order."""
    out: list[str] = [""] * len(todo)
    live = [(s, a, b) for s, a, b in todo if b is not None]
    for s, msg, b in todo:
        if b is None:
            counts.error(i0 + s, msg)
            out[s] = '"error":' + _dumps(msg)
    if g.task == "prove":
        from layoutverify.core.batch import prove_many
        results = prove_many([(a, b) for _, a, b in live], errors="return")
        for (s, _, _), res in zip(live, results):
            if isinstance(res, Exception):
                counts.error(i0 + s, str(res))
                out[s] = '"error":' + _dumps(str(res))
                continue
            frag = _PROVED.get((res.verdict, res.method))
            if frag is None:
                frag = _PROVED[(res.verdict, res.method)] = \
                    _dumps({"verdict": res.verdict, "method": res.method})[1:-1]
            counts.verdicts[res.verdict] += 1
            out[s] = frag
        return out
    from layoutverify.apps.scan.triton_choice import triton_choice
    from layoutverify.core.conversion import analyze
    from .spec import ELEMENT_BITS
    bits = ELEMENT_BITS.get(g.element_type or "f16", 16)
    for s, la, lb in live:
        try:
            rep = analyze(la, lb, element_bits=bits)
            rec = {"mechanism": rep.mechanism, "elements_moved": rep.elements_moved, "vector_width": rep.vector_width}
            counts.mechanisms[rep.mechanism] += 1
            if la.kind == "register" and lb.kind == "register":
                rec["triton_mechanism"] = tm = triton_choice(la, lb).mechanism
                counts.triton[tm] += 1
            out[s] = _dumps(rec)[1:-1]
        except LayoutError as e:
            counts.error(i0 + s, str(e))
            out[s] = '"error":' + _dumps(str(e))
    return out
