"""Sweeps on the local cores: one worker process per core, each fed shards of its own region
(:mod:`.schedule`) through its own pipe, two at a time so that it never waits for the next.

A worker receives ``(n, lo, hi)`` and sends back the shard's summary (:func:`.work.run_shard`
writes the records); the coordinator waits on every worker's pipe and process at once. A worker
that dies (its process sentinel fires) loses only the shards it was sent and had not answered:
they run again first, on any worker, at most ``retries`` times each, and a new worker takes its
place. Workers are forked where the platform allows it, so they start with the coordinator's
imports and its numbered space.
"""
from __future__ import annotations

import multiprocessing as mp
import os
from collections import Counter, deque
from multiprocessing.connection import wait

from .schedule import Regions
from .work import SweepFailed, run_shard

#: shards sent to a worker ahead of its answers (one computing, one waiting in its pipe)
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
        self.proc.start()
        child.close()
        self.sent: deque = deque()


def run_local(job: tuple, todo: list, workers: int, retries: int, tally) -> None:
    """Run the shards ``todo`` on ``workers`` local processes (see the module docstring)."""
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    regions = Regions(todo, {k: 1 for k in range(workers)})
    pool: dict[int, _Worker] = {}
    tries: Counter = Counter()

    def feed(slot: int) -> None:
        w = pool[slot]
        while len(w.sent) < DEPTH:
            t = regions.next(slot)
            if t is None:
                return
            try:
                w.conn.send(t)
            except OSError:               # it died: its sentinel will say so
                regions.give_back(t)
                return
            w.sent.append(t)

    finished = False
    try:
        for k in range(min(workers, len(todo))):
            pool[k] = _Worker(ctx, job)
            feed(k)
        while any(w.sent for w in pool.values()):
            by_handle = {}
            for k, w in pool.items():
                by_handle[w.conn] = k
                by_handle[w.proc.sentinel] = k
            for h in wait(list(by_handle)):
                k = by_handle[h]
                w = pool[k]
                if h is w.conn:
                    try:
                        while w.conn.poll():
                            s = w.conn.recv()
                            if "failed" in s:
                                raise SweepFailed(f"shard {s['shard']} failed in its worker: {s['failed']}")
                            w.sent.popleft()
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
                for t in w.sent:
                    tries[t[0]] += 1
                    if tries[t[0]] > retries:
                        raise SweepFailed(f"shard {t[0]} (points {t[1]}..{t[2] - 1}) killed its worker "
                                          f"{retries + 1} times")
                    regions.give_back(t)
                pool[k] = _Worker(ctx, job)
                for j in pool:
                    feed(j)
                break                              # the handles changed
        finished = True
    finally:
        # done: the workers are idle and exit when told; else (an error, Ctrl-C) they are killed
        # at once (a shard is written under a temporary name and renamed: none is left half-done)
        for w in pool.values():
            try:
                w.conn.send(None) if finished else w.proc.kill()
            except OSError:
                pass
        for w in pool.values():
            w.proc.join(timeout=10)
            if w.proc.is_alive():
                w.proc.kill()
                w.proc.join()
            w.conn.close()
