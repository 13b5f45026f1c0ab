"""Running a sweep: chunks of points on a local process pool or a Ray cluster, results streamed
into a JSON-lines file, resumable.

* The output file gets one JSON record per point, appended and flushed as chunks finish. On
  start the file is read: points whose ``id`` is already there are skipped (``resume``), and a
  last line cut off by an interruption is dropped first.
* Local backend: a :class:`~concurrent.futures.ProcessPoolExecutor` with a bounded number of
  chunks in flight (the space is enumerated lazily, so a million points never sit in memory at
  once); a worker that dies takes its pool down: the pool is rebuilt and the lost chunks run
  again (at most ``retries`` times each).
* Ray backend (``ray_address``: an address, or ``"local"`` to start a local cluster of
  ``workers`` CPUs): each chunk is a Ray task (``max_retries``: Ray reruns a task whose worker
  died), scheduled by Ray; results come back through Ray's object store.
* The summary (``<out>.summary.json``, schema ``layoutverify/1``, kind ``sweep``) counts the
  verdicts or mechanisms of every record in the file, errors, and the throughput of this run:
  wall-clock points per second (per worker), and points per CPU second the workers spent,
  which other load on the machine does not bend.
"""
from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

from layoutverify.core.errors import LayoutError

from .spec import Spec
from .work import evaluate_chunk_lines

SCHEMA = "layoutverify/1"


def read_done(path: Path) -> set[str]:
    """Ids already in ``path``; a truncated last line is cut off the file."""
    done: set[str] = set()
    if not path.exists():
        return done
    with open(path, "rb+") as f:
        data = f.read()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            f.truncate(end)
        for line in data[:end].splitlines():
            try:
                done.add(json.loads(line)["id"])
            except (ValueError, KeyError, TypeError):
                continue
    return done


def chunks(spec: Spec, done: set[str], chunk_size: int):
    """Chunks (see :mod:`.work`) of the points not in ``done``, group by group. Without anything
    done the workers compute the point ids (the main process only enumerates names)."""
    for g in spec.groups():
        if done:
            pending = [[pid, a, b] for a, b in g.pairs if (pid := g.point_id(a, b)) not in done]
        else:
            pending = [[None, a, b] for a, b in g.pairs]
        for i in range(0, len(pending), chunk_size):
            part = pending[i:i + chunk_size]
            names = {x for _, a, b in part for x in (a, b)}
            yield {"task": g.task, "key": g.key, "shape_a": g.shape_a, "shape_b": g.shape_b, "options": g.options,
                   "element_type": g.element_type, "meta": g.meta,
                   "layouts": {n: g.layouts[n] for n in names}, "pairs": part}


class _Writer:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.f = open(path, "a")
        self.count = 0
        self.cpu = 0.0

    def write(self, result) -> None:
        """``(count, text, cpu seconds)`` from :func:`.work.evaluate_chunk_lines`."""
        count, text, cpu = result
        self.f.write(text)
        self.f.flush()
        self.count += count
        self.cpu += cpu

    def close(self) -> None:
        self.f.close()


def run_sweep(spec: Spec, out: str, *, workers: int | None = None, ray_address: str | None = None,
              chunk_size: int = 256, resume: bool = True, progress=None, retries: int = 3,
              pool: bool | None = None) -> dict:
    """Run ``spec`` into ``out`` (see the module docstring); the summary dict. ``pool``: use a
    process pool even for one worker (default: one worker runs in this process)."""
    path = Path(out)
    if not resume and path.exists():
        path.unlink()
    done = read_done(path)
    workers = workers or os.cpu_count() or 1
    if chunk_size < 1:
        raise LayoutError(f"chunk size must be positive, got {chunk_size}")
    writer = _Writer(path)
    t0 = time.perf_counter()
    try:
        todo = chunks(spec, done, chunk_size)
        if ray_address is not None:
            backend = "ray"
            _run_ray(todo, writer, ray_address, workers, retries, progress)
        elif workers == 1 and not pool:
            backend = "inline"
            for ch in todo:
                writer.write(evaluate_chunk_lines(ch))
                if progress:
                    progress(writer.count)
        else:
            backend = "processes"
            _run_pool(todo, writer, workers, retries, progress)
    finally:
        writer.close()
    seconds = time.perf_counter() - t0
    summary = summarize(path)
    summary.update({"backend": backend, "workers": workers, "skipped_done": len(done),
                    "evaluated": writer.count, "seconds": round(seconds, 3),
                    "points_per_second": round(writer.count / seconds, 1) if seconds > 0 else None,
                    "points_per_second_per_worker": round(writer.count / seconds / workers, 1) if seconds > 0 else None,
                    "worker_cpu_seconds": round(writer.cpu, 3),
                    "points_per_worker_cpu_second": round(writer.count / writer.cpu, 1) if writer.cpu > 0 else None,
                    "task": spec.task, "spec": spec.source, "out": str(path)})
    Path(str(path) + ".summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _run_pool(todo, writer, workers, retries, progress) -> None:
    import concurrent.futures as cf
    from concurrent.futures.process import BrokenProcessPool

    window = 2 * workers
    tries: dict[int, int] = {}
    pending_chunks: dict = {}
    exhausted = False
    it = iter(todo)
    pool = cf.ProcessPoolExecutor(max_workers=workers)
    try:
        while True:
            while not exhausted and len(pending_chunks) < window:
                ch = next(it, None)
                if ch is None:
                    exhausted = True
                    break
                pending_chunks[pool.submit(evaluate_chunk_lines, ch)] = ch
            if not pending_chunks:
                break
            finished, _ = cf.wait(list(pending_chunks), return_when=cf.FIRST_COMPLETED)
            broken = []
            for fut in finished:
                ch = pending_chunks.pop(fut)
                try:
                    writer.write(fut.result())
                except BrokenProcessPool:
                    broken.append(ch)
                if progress:
                    progress(writer.count)
            if broken:
                # a worker died: every chunk in flight is lost with the pool; run them again
                lost = broken + list(pending_chunks.values())
                pending_chunks.clear()
                pool.shutdown(cancel_futures=True)
                pool = cf.ProcessPoolExecutor(max_workers=workers)
                for ch in lost:
                    k = id(ch)
                    tries[k] = tries.get(k, 0) + 1
                    if tries[k] > retries:
                        raise RuntimeError(f"a sweep chunk killed its worker {retries + 1} times")
                    pending_chunks[pool.submit(evaluate_chunk_lines, ch)] = ch
    finally:
        pool.shutdown(cancel_futures=True)


def _run_ray(todo, writer, address, workers, retries, progress) -> None:
    try:
        import ray
    except ImportError:
        raise LayoutError("--ray needs the 'ray' package: pip install 'layoutverify[ray]'") from None
    started = False
    if not ray.is_initialized():
        if address in ("local", ""):
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                     runtime_env={"env_vars": _worker_env()})
        else:
            ray.init(address=address, log_to_driver=False, runtime_env={"env_vars": _worker_env()})
        started = True
    try:
        task = ray.remote(max_retries=retries)(evaluate_chunk_lines)
        cpus = int(ray.cluster_resources().get("CPU", workers))
        window = 2 * max(1, cpus)
        inflight = []
        it = iter(todo)
        exhausted = False
        while True:
            while not exhausted and len(inflight) < window:
                ch = next(it, None)
                if ch is None:
                    exhausted = True
                    break
                inflight.append(task.remote(ch))
            if not inflight:
                break
            ready, inflight = ray.wait(inflight, num_returns=1)
            for ref in ready:
                writer.write(ray.get(ref))
            if progress:
                progress(writer.count)
    finally:
        if started:
            ray.shutdown()


def _worker_env() -> dict:
    """Environment the Ray workers need: the crash marker of the retry test, if set."""
    from .work import CRASH_ENV
    env = {}
    if os.environ.get(CRASH_ENV):
        env[CRASH_ENV] = os.environ[CRASH_ENV]
    return env


def summarize(path: Path) -> dict:
    """Counts over every record of the results file."""
    verdicts, mechanisms, triton, errors = Counter(), Counter(), Counter(), Counter()
    points = 0
    with open(path) as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            points += 1
            if "error" in r:
                errors[r["error"].split(":")[0][:60]] += 1
            if "verdict" in r:
                verdicts[r["verdict"]] += 1
            if "mechanism" in r:
                mechanisms[r["mechanism"]] += 1
            if r.get("triton_mechanism"):
                triton[r["triton_mechanism"]] += 1
    out = {"schema": SCHEMA, "kind": "sweep", "points": points, "errors": sum(errors.values()),
           "error_kinds": dict(errors.most_common(10))}
    if verdicts:
        out["verdicts"] = dict(verdicts)
    if mechanisms:
        out["mechanisms"] = dict(mechanisms)
    if triton:
        out["triton_mechanisms"] = dict(triton)
    return out
