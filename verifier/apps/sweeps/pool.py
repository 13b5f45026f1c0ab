"""Sweeps on the local cores: one worker process per core, each fed shards of its own region
(:mod:`.schedule`) through its own pipe, two at a time so that it never waits for the next (one
at a time near the end, so that the last shards go to whichever worker is free).

A worker receives ``(n, lo, hi)`` and sends back the shard's summary (:func:`.work.run_shard`
writes the records); the coordinator waits on every worker's pipe and process at once. A worker
with nothing left to do exits at once. A worker that dies (its process sentinel fires) loses
only the shards it was sent and had not answered: they run again first, on any worker, at most
``retries`` times each, and a new worker takes its place. Workers are forked where the platform
allows it, so they start with the coordinator's imports, its numbered space and what
:func:`.work.warm_up` loaded.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections import Counter, deque
from multiprocessing.connection import wait

from .schedule import Regions
from .work import SweepFailed, run_shard

#: shards sent to a worker ahead of its answers (one computing, one waiting in its pipe) while
#: every worker can have that many; one near the end, where a shard waiting in one worker's pipe
#: could not go to another that has nothing left to do
DEPTH = 2


def _serve(job: tuple, conn) -> None:
    """A worker's loop: shards in, summaries out, until ``None``."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # the coordinator ends the workers
    try:
        while True:
            t = conn.recv()
            if t is None:
                conn.close()
                os._exit(0)       # nothing to tear down: the shards are written (and it is quicker)
            try:
                conn.send(run_shard(*job, *t))
            except Exception as e:  # a bug: reported, not a dead worker to retry
                conn.send({"failed": f"{type(e).__name__}: {e}", "shard": t[0]})
    except (EOFError, OSError):
        return


class _Worker:
    def __init__(self, ctx, job: tuple):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(job, child), daemon=True)
        self.started = time.perf_counter()
        self.proc.start()
        child.close()
        self.sent: deque = deque()
        self.first: float | None = None     # when its first shard began (coordinator's clock)


def run_local(job: tuple, todo: list, workers: int, retries: int, tally) -> dict:
    """Run the shards ``todo`` on ``workers`` local processes (see the module docstring); when
    things happened (:func:`timeline`). A worker with nothing left to do is told to exit at once,
    so that its exit overlaps the others' last shards."""
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    regions = Regions(todo, {k: 1 for k in range(workers)})
    live: dict[int, _Worker] = {}       # workers that may get shards
    done: list[_Worker] = []            # workers told to exit (or dead)
    tries: Counter = Counter()
    marks = {"forks": [], "starts": [], "idle": None, "last": None}

    def start(slot: int) -> None:
        w = live[slot] = _Worker(ctx, job)
        marks["forks"].append(w.started)

    def feed(slot: int) -> None:
        w = live[slot]
        while len(w.sent) < (DEPTH if len(regions) >= len(live) else 1):
            t = regions.next(slot)
            if t is None:
                break
            try:
                w.conn.send(t)
            except OSError:               # it died: its sentinel will say so
                regions.give_back(t)
                return
            w.sent.append(t)
        if not w.sent:                    # nothing left for it: it exits now
            if marks["idle"] is None:
                marks["idle"] = time.perf_counter()
            try:
                w.conn.send(None)
            except OSError:
                pass
            done.append(live.pop(slot))

    finished = False
    try:
        for k in range(min(workers, len(todo))):
            start(k)
            feed(k)
        while any(w.sent for w in live.values()):
            by_handle = {}
            for k, w in live.items():
                by_handle[w.conn] = k
                by_handle[w.proc.sentinel] = k
            for h in wait(list(by_handle)):
                k = by_handle[h]
                w = live.get(k)
                if w is None:                          # retired while this round's handles were read
                    continue
                if h is w.conn:
                    try:
                        while w.conn.poll():
                            s = w.conn.recv()
                            if "failed" in s:
                                raise SweepFailed(f"shard {s['shard']} failed in its worker: {s['failed']}")
                            w.sent.popleft()
                            now = marks["last"] = time.perf_counter()
                            if w.first is None:
                                w.first = now - (s.get("seconds") or 0.0)
                                marks["starts"].append(w.first - w.started)
                            tally.add(s, new=True)
                    except (EOFError, OSError):
                        pass                      # it died: its sentinel says so too
                    if w.proc.is_alive():
                        feed(k)
                        continue
                if w.proc.is_alive():
                    continue
                # the worker died: its unanswered shards run again first, on any worker
                w.proc.join()
                w.conn.close()
                del live[k]
                for t in w.sent:
                    tries[t[0]] += 1
                    if tries[t[0]] > retries:
                        raise SweepFailed(f"shard {t[0]} (points {t[1]}..{t[2] - 1}) killed its worker "
                                          f"{retries + 1} times")
                    regions.give_back(t)
                start(k)
                for j in list(live):
                    feed(j)
                break                              # the handles changed
        finished = True
    finally:
        # done: the workers are idle and exit when told; else (an error, Ctrl-C) they are killed
        # at once (a shard is written under a temporary name and renamed: none is left half-done)
        for w in live.values():
            try:
                w.conn.send(None) if finished else w.proc.kill()
            except OSError:
                pass
        for w in done + list(live.values()):
            if not finished:
                w.proc.kill()
            w.proc.join(timeout=10)
            if w.proc.is_alive():
                w.proc.kill()
                w.proc.join()
            w.conn.close()
    return marks


def timeline(marks: dict, t0: float, t1: float) -> dict:
    """Where the wall-clock time of a run on local processes went, in seconds from its start
    ``t0`` to its end ``t1``: ``setup`` (until the first worker was forked: numbering the space,
    loading modules, opening the results directory), ``forking`` (from the first fork to the
    last), ``first_shard_start`` (from a worker's fork to the start of its first shard: median
    and most), ``tail`` (from the moment a worker first found nothing left to do to the last
    shard's end) and ``teardown`` (from there to the end: the last workers' exit, the summary)."""
    forks, starts = marks["forks"], sorted(marks["starts"])
    if not forks or marks["last"] is None:
        return {}
    return {"setup": round(forks[0] - t0, 4), "forking": round(forks[-1] - forks[0], 4),
            "first_shard_start": {"median": round(starts[len(starts) // 2], 4), "max": round(starts[-1], 4)}
            if starts else None,
            "tail": round(max(0.0, marks["last"] - (marks["idle"] or marks["last"])), 4),
            "teardown": round(t1 - marks["last"], 4)}
