"""Sweep scaling: Triton encoding pairs proved per second with 1, 2, 4, ... and all cores, the
scaling efficiency per worker count, and the coordinator's share of the CPU time.

The space is blocked x {nvidia_mma, dot_op, slice, linear} over shapes, num_warps, element
types and Triton versions (``layoutverify sweep``'s Triton families); ``--pairs`` points of it
(default 1,000,000) are proved by ``run_sweep`` into a results directory (removed afterwards)
with each worker count, on a local process pool (one worker included: the same path), then, unless
``--no-ray``, on a local Ray instance of that many CPUs (started before the clock starts). Every
run must answer every point with the same verdicts.

Per run: pairs/s, pairs/s per worker, **scaling efficiency** (pairs/s per worker over the
one-worker run's, same backend, same process), pairs per CPU second of the workers, the busy
fraction (wall-clock pairs/s per worker over that: 1.0 when no worker ever waited), and the
**coordinator's CPU share** (CPU seconds of the coordinating process, its threads included, over
the workers'; the goal is at most 0.10). The load average at each run says how quiet the machine
was.

A second table separates the machine from the sweep: ``--hardware`` runs the same evaluation in
W forked processes with no coordinator, no pool and no output (each evaluates its own slice of
points in memory), so the fall of per-process CPU throughput with W is the hardware's (shared
caches, memory bandwidth, SMT siblings, clock under all-core load), not the sweep's.

    python benchmarks/bench_sweep.py                          # 1,000,000 pairs, all cores
    python benchmarks/bench_sweep.py --pairs 1000000 --no-ray --cores 16
    python benchmarks/bench_sweep.py --pairs 50000 --no-ray   # a quick run

Results: ``benchmarks/results/bench_sweep.json`` (``-o``), with machine (CPU model, logical CPUs,
cores, threads per core), date and commit. Goal on a quiet 16-core machine: efficiency >= 0.8 at
16 workers and >= 600,000 pairs/s.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

SPEC = """
task = "prove"
[[triton]]
a = ["blocked"]
b = ["nvidia_mma", "dot_op", "slice", "linear"]
shapes = [[32, 32], [64, 64], [128, 128], [64, 128], [128, 64], [256, 64]]
num_warps = [4, 8]
element_types = ["f16", "f32"]
versions = ["3.8", "3.9"]
limit = {pairs}
[triton.linear]
linear_count = 16
"""
GOAL_EFFICIENCY = 0.8
GOAL_PAIRS_PER_SECOND = 600_000
GOAL_COORDINATOR_SHARE = 0.10


def worker_counts(cores: int) -> list[int]:
    out, w = [], 1
    while w < cores:
        out.append(w)
        w *= 2
    return out + [cores]


def machine() -> dict:
    """What the numbers ran on: CPU model, logical CPUs, physical cores and SMT (from
    /proc/cpuinfo; ``None`` where it does not say), the CPUs this process may use."""
    info = {"platform": platform.platform(), "python": platform.python_version(), "logical_cpus": os.cpu_count(),
            "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "cpu_model": None, "physical_cores": None, "threads_per_core": None}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return info
    cores, model = set(), None
    phys = core = None
    for line in text.splitlines() + [""]:
        k, _, v = line.partition(":")
        k, v = k.strip(), v.strip()
        if k == "model name":
            model = v
        elif k == "physical id":
            phys = v
        elif k == "core id":
            core = v
        elif not line.strip():
            if core is not None:
                cores.add((phys, core))
            phys = core = None
    info["cpu_model"] = model
    if cores:
        info["physical_cores"] = len(cores)
        info["threads_per_core"] = round((os.cpu_count() or 0) / len(cores), 2)
    return info


def commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                              cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def run_one(spec, workers: int, ray: bool, tmp_root: str) -> dict:
    """One sweep; for Ray the instance (``workers`` CPUs) is started before the clock starts and
    stopped after it stops, so the time is the sweep's, as for the process pool (whose start is
    part of its run)."""
    from layoutverify.apps.sweeps.run import run_sweep
    tmp = tempfile.mkdtemp(prefix="bench_sweep_", dir=tmp_root)
    started = False
    try:
        if ray:
            import ray as raylib
            raylib.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False)
            started = True
        t0 = time.perf_counter()
        s = run_sweep(spec, os.path.join(tmp, "r"), workers=workers, ray_address="local" if ray else None,
                      resume=False, pool=True)
        wall = time.perf_counter() - t0
    finally:
        if started:
            raylib.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    per_cpu = s["points_per_worker_cpu_second"]
    return {"backend": "ray" if ray else "processes", "workers": workers, "pairs": s["points"],
            "errors": s["errors"], "verdicts": s.get("verdicts", {}), "shards": s["shards"],
            "worker_processes": s["worker_processes"],
            "seconds": round(wall, 3), "pairs_per_second": round(s["points"] / wall, 1),
            "pairs_per_second_per_worker": round(s["points"] / wall / workers, 1),
            "worker_cpu_seconds": s["worker_cpu_seconds"], "pairs_per_worker_cpu_second": per_cpu,
            "busy_fraction": round(s["points"] / wall / workers / per_cpu, 3) if per_cpu else None,
            "numbering_seconds": s["numbering_seconds"], "first_shard_seconds": s["first_shard_seconds"],
            "coordinator_cpu_seconds": s["coordinator_cpu_seconds"],
            "coordinator_cpu_share": s["coordinator_cpu_share"],
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def _evaluate_slice(spec, lo: int, hi: int, conn) -> None:
    """In a forked process: evaluate points [lo, hi) in memory (as a shard does, without writing),
    send back (points, CPU seconds)."""
    from layoutverify.apps.sweeps.work import Counts, _collector_paused, evaluate, space_of
    c0 = time.process_time()
    counts = Counts(spec.task)
    with _collector_paused():
        n = sum(1 for _ in evaluate(space_of(spec), lo, hi, counts))
    conn.send((n, time.process_time() - c0))
    conn.close()


def hardware_run(spec, procs: int, per_process: int) -> dict:
    """``procs`` forked processes, each evaluating its own ``per_process`` points (no coordinator,
    no output); per-process CPU throughput and wall-clock total."""
    import multiprocessing as mp
    from layoutverify.apps.sweeps.work import space_of
    points = space_of(spec).points
    ctx = mp.get_context("fork")
    pipes, jobs = [], []
    t0 = time.perf_counter()
    for k in range(procs):
        lo = (k * per_process) % max(1, points - per_process)
        a, b = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_evaluate_slice, args=(spec, lo, lo + per_process, b))
        p.start()
        pipes.append(a)
        jobs.append(p)
    got = [a.recv() for a in pipes]
    for p in jobs:
        p.join()
    wall = time.perf_counter() - t0
    n = sum(x for x, _ in got)
    cpu = sum(c for _, c in got)
    return {"processes": procs, "pairs": n, "seconds": round(wall, 3), "pairs_per_second": round(n / wall, 1),
            "pairs_per_process_cpu_second": round(n / cpu, 1), "load_average": [round(x, 2) for x in os.getloadavg()]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=1_000_000)
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="largest worker count (default: all)")
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--hardware", type=int, default=0, metavar="N",
                    help="also the coordinator-free reference: N pairs per process, 1..cores processes")
    ap.add_argument("--tmp", default=None, help="where results directories go (default: the system's temp dir)")
    ap.add_argument("-o", "--out", default=str(Path(__file__).parent / "results" / "bench_sweep.json"))
    args = ap.parse_args(argv)
    from layoutverify.apps.sweeps.spec import parse_spec_text
    spec = parse_spec_text(SPEC.format(pairs=args.pairs), "bench_sweep")
    available = spec.count()
    if available < args.pairs:
        print(f"the space has only {available} points", file=sys.stderr)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    load_before = os.getloadavg()
    runs = []
    backends = [False] + ([] if args.no_ray else [True])
    for ray in backends:
        if ray:
            try:
                import ray as _  # noqa: F401
            except ImportError:
                print("ray is not installed: skipping the Ray runs", file=sys.stderr)
                continue
        for w in worker_counts(args.cores):
            r = run_one(spec, w, ray, args.tmp)
            base = next((x for x in runs if x["backend"] == r["backend"] and x["workers"] == 1), r)
            r["scaling_efficiency"] = round(r["pairs_per_second_per_worker"] / base["pairs_per_second_per_worker"], 3)
            runs.append(r)
            print(f"{r['backend']:9s} {w:3d} workers: {r['pairs']} pairs in {r['seconds']:.1f} s = "
                  f"{r['pairs_per_second']:.0f} pairs/s ({r['pairs_per_second_per_worker']:.0f} per worker, "
                  f"efficiency {r['scaling_efficiency']:.2f}; {r['pairs_per_worker_cpu_second']} per worker CPU "
                  f"second, busy {r['busy_fraction']}; coordinator {100 * r['coordinator_cpu_share']:.1f}% of the "
                  f"workers' CPU; load {r['load_average'][0]})", flush=True)
    verdicts = {json.dumps(r["verdicts"], sort_keys=True) for r in runs}
    assert len(verdicts) == 1 and all(r["errors"] == 0 and r["pairs"] == min(available, args.pairs) for r in runs), \
        "runs disagree"
    hardware = []
    if args.hardware:
        for w in worker_counts(args.cores):
            h = hardware_run(spec, w, args.hardware)
            h["per_process_vs_one"] = round(h["pairs_per_process_cpu_second"] /
                                            (hardware[0] if hardware else h)["pairs_per_process_cpu_second"], 3)
            hardware.append(h)
            print(f"hardware  {w:3d} processes: {h['pairs_per_second']:.0f} pairs/s, "
                  f"{h['pairs_per_process_cpu_second']:.0f} per process CPU second "
                  f"({h['per_process_vs_one']:.2f} of one process's)", flush=True)
    top = [r for r in runs if r["backend"] == "processes" and r["workers"] == args.cores]
    goals = {"efficiency_at_max_workers": top[0]["scaling_efficiency"] if top else None,
             "pairs_per_second_at_max_workers": top[0]["pairs_per_second"] if top else None,
             "max_coordinator_cpu_share": max((r["coordinator_cpu_share"] or 0) for r in runs) if runs else None}
    sixteen = bool(top) and args.cores >= 16      # the scaling goals are stated for 16 workers
    goals["met"] = {
        "efficiency >= 0.8 at 16 workers": (goals["efficiency_at_max_workers"] or 0) >= GOAL_EFFICIENCY if sixteen else None,
        "pairs/s >= 600k at 16 workers": (goals["pairs_per_second_at_max_workers"] or 0) >= GOAL_PAIRS_PER_SECOND
        if sixteen else None,
        "coordinator share <= 0.10": (goals["max_coordinator_cpu_share"] or 0) <= GOAL_COORDINATOR_SHARE}
    out = {"schema": "layoutverify/1", "kind": "bench_sweep", "date": datetime.datetime.now().astimezone().isoformat(
        timespec="seconds"), "commit": commit(), "machine": machine(), "pairs_requested": args.pairs,
        "space_points": available, "max_workers": args.cores,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "goal": "scaling efficiency >= 0.8 at 16 workers and >= 600k pairs/s on a quiet 16-core machine; "
                "coordinator CPU share <= 0.10 on any machine", "goals": goals, "runs": runs, "hardware": hardware}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    for k, ok in goals["met"].items():
        print(f"{k}: {'not judged (fewer than 16 workers)' if ok is None else 'met' if ok else 'NOT MET'}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
