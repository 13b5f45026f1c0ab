"""Running a sweep: the coordinator hands out shards (ranges of point indices) and merges the
summaries that come back; workers enumerate, evaluate and write their own points (:mod:`.work`).

* The results directory (:mod:`.store`) fixes the shard plan in its manifest; shards already done
  are skipped (resuming), a directory of another spec is refused.
* Backends: ``inline`` (one worker, in this process), ``processes`` (:mod:`.pool`: one process
  per worker, forked after the coordinator has loaded what a shard needs (:func:`.work.warm_up`,
  from :data:`WARM_UP_WORKERS` workers on), each fed the shards of its own region of the space; the shards of a worker that dies run
  again, at most ``retries`` times each) and ``ray`` (:mod:`.cluster`: each shard a Ray task,
  which Ray reruns when its worker dies). The shards go out in the locality order
  (:mod:`.schedule`), so that a worker's shards use the same layouts.
* What crosses between coordinator and workers is a task ``(shard, lo, hi)`` and a summary back
  (counts and CPU seconds), whatever the number of points in a shard, so the coordinator's CPU
  time stays a small fraction of the workers' (``coordinator_cpu_share`` in the summary).
* The summary (``OUT/summary.json``, schema ``layoutverify/1``, kind ``sweep``) counts the
  records of every shard done, errors, and the throughput of this run: wall-clock points per
  second (per worker), and points per CPU second the workers spent, which other load on the
  machine does not bend.
"""
from __future__ import annotations

import json
import os
import resource
import time
from collections import Counter
from pathlib import Path

from layoutverify.core.errors import LayoutError

from .spec import Spec
from .store import SCHEMA, SUMMARY, ResultsDir, plan
from .schedule import locality_order
from .work import SweepFailed, run_shard, space_of, warm_up

#: most points in a shard: proofs of Triton pairs (about 7 us each; the records, about 200 bytes
#: each, are built in memory before writing), and the slower points (analyses, about 10 ms each;
#: template points, each parsing its own layouts), so that a shard takes seconds, not minutes
MAX_SHARD_POINTS = 4096
MAX_SLOW_SHARD_POINTS = 256
#: fewest points in a shard (smaller ones cost more to hand out than to evaluate)
MIN_SHARD_POINTS = 16
#: shards per worker a sweep aims at: the last shard a worker runs, while others may have nothing
#: left, is then about 1/32 of its work (a shard costs about 0.3 ms to write and hand out, however
#: small: 1024-point shards of Triton pairs take as much CPU per point as 4096-point ones)
SHARDS_PER_WORKER = 32
#: fewest worker processes for which the coordinator loads the evaluation modules before forking
#: them (:func:`.work.warm_up`: 10 to 70 ms of CPU, the most where modules are compiled from
#: source): then it saves at least two workers that work, and the coordinator's CPU share, which
#: counts it, stays small; with one or two workers each loads what it uses, as before
WARM_UP_WORKERS = 3


def default_shard_points(spec: Spec, points: int, workers: int) -> int:
    """About :data:`SHARDS_PER_WORKER` shards per worker (so that they finish together), within
    [:data:`MIN_SHARD_POINTS`, :data:`MAX_SHARD_POINTS`] (:data:`MAX_SLOW_SHARD_POINTS` for
    analyses and template spaces)."""
    slow = spec.task != "prove" or any(kind != "triton" for kind, _ in spec.spaces)
    top = MAX_SLOW_SHARD_POINTS if slow else MAX_SHARD_POINTS
    return max(MIN_SHARD_POINTS, min(top, -(-points // (SHARDS_PER_WORKER * max(1, workers)))))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Tally:
    """The summaries of finished shards, merged; calls ``progress(done, total, evaluated, seconds)``
    (points done in all, in the space, evaluated by this run, seconds this run took so far)."""

    def __init__(self, task: str, total: int, progress=None):
        self.task, self.total, self.progress = task, total, progress
        self.points = self.errors = 0
        self.kinds: Counter = Counter()
        self.verdicts: Counter = Counter()
        self.mechanisms: Counter = Counter()
        self.triton: Counter = Counter()
        self.first_error = None
        self.evaluated = 0
        self.cpu = 0.0
        self.processes: set = set()   # (host, pid) of the workers that ran this run's shards
        self.nodes: set = set()       # Ray node ids among them
        self.t0 = time.perf_counter()
        self.first = None             # seconds until the first shard of this run finished

    def add(self, s: dict, *, new: bool) -> None:
        """Merge the summary ``s`` of a finished shard; ``new``: evaluated by this run (not read back
        from an earlier one), so it also counts towards this run's time, workers and progress."""
        self.points += s["points"]
        self.errors += s["errors"]
        self.kinds.update(s.get("error_kinds") or {})
        self.verdicts.update(s.get("verdicts") or {})
        self.mechanisms.update(s.get("mechanisms") or {})
        self.triton.update(s.get("triton_mechanisms") or {})
        fe = s.get("first_error")
        if fe and (self.first_error is None or fe["i"] < self.first_error["i"]):
            self.first_error = fe
        if new:
            if not self.evaluated:
                self.first = time.perf_counter() - self.t0
            self.evaluated += s["points"]
            self.cpu += s.get("cpu_seconds") or 0.0
            w = s.get("worker") or {}
            self.processes.add((w.get("host"), w.get("pid")))
            if w.get("node"):
                self.nodes.add(w["node"])
            if self.progress:
                self.progress(self.points, self.total, self.evaluated, time.perf_counter() - self.t0)

    def counts(self) -> dict:
        """The merged counts: points, errors (the ten most frequent kinds, the first error), and
        verdicts (``prove``) or mechanisms and Triton's mechanisms (``analyze``)."""
        out = {"points": self.points, "errors": self.errors,
               "error_kinds": dict(sorted(self.kinds.items(), key=lambda kv: (-kv[1], kv[0]))[:10]),
               "first_error": self.first_error}
        if self.task == "prove":
            out["verdicts"] = dict(sorted(self.verdicts.items()))
        else:
            out["mechanisms"] = dict(sorted(self.mechanisms.items()))
            out["triton_mechanisms"] = dict(sorted(self.triton.items()))
        return out


def run_sweep(spec: Spec, out: str, *, workers: int | None = None, ray_address: str | None = None,
              shard_points: int | None = None, resume: bool = True, progress=None, retries: int = 3,
              pool: bool | None = None) -> dict:
    """Run ``spec`` into the results directory ``out`` (see the module docstring); the summary.
    ``pool``: use a process pool even for one worker (default: one worker runs in this process).
    ``progress`` is called as shards finish (see :class:`Tally`)."""
    c0, t0 = _cpu(), time.perf_counter()
    if shard_points is not None and shard_points < 1:
        raise LayoutError(f"shard size must be positive, got {shard_points}")
    space = space_of(spec)
    numbering = time.perf_counter() - t0
    if space.points == 0:
        raise LayoutError(f"{spec.source}: the spec's spaces have no points (no layout of a family fits its "
                          f"shapes and num_warps)")
    workers = workers or os.cpu_count() or 1
    if ray_address is not None:
        from .cluster import check_address
        check_address(ray_address)
    rd = ResultsDir(out)
    manifest = rd.open(spec, space.points, shard_points or default_shard_points(spec, space.points, workers),
                       fresh=not resume)
    cluster = None
    try:
        done = rd.done(manifest)
        tally = Tally(spec.task, space.points, progress)
        for s in done.values():
            tally.add(s, new=False)
        skipped = tally.points
        todo = locality_order([t for t in plan(manifest) if t[0] not in done], space)
        job = (spec, str(rd.path), manifest["name_width"])
        inline_cpu = 0.0
        marks = None
        if ray_address is not None:
            from .cluster import run_on_ray
            backend = "ray"
            cluster = run_on_ray(ray_address, workers, job, todo, retries, tally)
            workers = cluster["cpus"]
        elif workers == 1 and not pool:
            backend = "inline"
            for n, lo, hi in todo:
                tally.add(run_shard(*job, n, lo, hi), new=True)
            inline_cpu = tally.cpu
        else:
            from .pool import run_local
            backend = "processes"
            if todo and min(workers, len(todo)) >= WARM_UP_WORKERS:
                warm_up(spec)      # once here, not in every worker (they are forked from here)
            marks = run_local(job, todo, workers, retries, tally)
        seconds = time.perf_counter() - t0
        coord = max(0.0, _cpu() - c0 - inline_cpu)
        summary = {"schema": SCHEMA, "kind": "sweep", **tally.counts(), "space_points": space.points,
                   "complete": tally.points == space.points, "task": spec.task, "spec": spec.source,
                   "fingerprint": manifest["fingerprint"], "out": str(rd.path), "shards": manifest["shards"],
                   "shard_points": manifest["shard_points"], "backend": backend, "workers": workers}
        if cluster is not None:
            summary["cluster"] = dict(cluster, nodes_used=len(tally.nodes))
        summary["worker_processes"] = len(tally.processes)
        summary["skipped_done"] = skipped
        summary.update(_throughput(tally, workers, seconds, numbering, t0, coord))
        if marks is not None:
            from .pool import timeline
            summary["timeline"] = timeline(marks, t0, time.perf_counter())
        (rd.path / SUMMARY).write_text(json.dumps(summary, indent=1) + "\n")
    finally:
        rd.close()
    return summary


def _throughput(tally: Tally, workers: int, seconds: float, numbering: float, t0: float, coord: float) -> dict:
    """This run's part of the summary: points evaluated, wall-clock and CPU throughput, where the
    time went (numbering the space, until the first shard finished), the coordinator's CPU."""
    n, cpu = tally.evaluated, tally.cpu
    return {"evaluated": n, "seconds": round(seconds, 3),
            "points_per_second": round(n / seconds, 1) if seconds > 0 else None,
            "points_per_second_per_worker": round(n / seconds / workers, 1) if seconds > 0 else None,
            "worker_cpu_seconds": round(cpu, 3),
            "points_per_worker_cpu_second": round(n / cpu, 1) if cpu > 0 else None,
            "numbering_seconds": round(numbering, 3),
            "first_shard_seconds": None if tally.first is None else round(tally.first + tally.t0 - t0, 3),
            "coordinator_cpu_seconds": round(coord, 3),
            "coordinator_cpu_share": round(coord / cpu, 4) if cpu > 0 else None}


def results_path(spec_path: str) -> str:
    """The default results directory of a spec file: ``SPEC.results`` beside it."""
    return str(Path(spec_path).with_suffix("")) + ".results"
