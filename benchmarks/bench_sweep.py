"""Sweep scaling: Triton encoding pairs proved per second with 1, 2, 4, ... and all cores, the
scaling efficiency per worker count, and the coordinator's share of the CPU time.

The space is blocked x {nvidia_mma, dot_op, slice, linear} over shapes, num_warps, element
types and Triton versions (``layoutverify sweep``'s Triton families); ``--pairs`` points of it
(default 1,000,000) are proved by ``run_sweep`` into a results directory (removed afterwards)
with each worker count, on a local process pool (one worker included: the same path), then, unless
``--no-ray``, on a local Ray instance of that many CPUs (started before the clock starts). Every
run must answer every point with the same verdicts.

**Method.** Each worker count runs ``--repeats`` times (default 3), interleaved: round r runs the
counts in ascending order when r is even and descending when odd, so that a drift of the machine
over the minutes of the benchmark (other tenants of a virtual machine, clock under load) falls on
every count alike. Every run is recorded (``runs``); per count the table gives the **median**
pairs/s with the spread (min, max, (max - min) / median), and the **scaling efficiency** is the
median pairs/s per worker over the median of the one-worker runs (each run's own efficiency
against that median is listed too, as the range). One single one-worker run is not a baseline:
on the 16-core machine two of them, minutes apart, gave 110k and 140k pairs/s.

What each run's summary says about itself is kept: pairs per CPU second of the workers, the
**busy fraction** (wall-clock pairs/s per worker over that: 1.0 when no worker ever waited), the
**coordinator's CPU share** (CPU seconds of the coordinating process, its threads included, over
the workers'; the goal is at most 0.10) and the ``timeline`` of the run (setup, forking,
first-shard start, tail, teardown: where the wall clock went besides the shards). One-time costs
of the coordinating process (numbering the space, loading the evaluation modules before forking
workers) fall on the first run that needs them, as in any long-running coordinator; the load
average at each run says how quiet the machine was.

A second table separates the machine from the sweep: ``--hardware`` runs the same evaluation in
W forked processes with no coordinator, no pool and no output (each evaluates its own slice of
points in memory), ``--repeats`` times interleaved likewise, so the fall of per-process CPU
throughput with W is the hardware's (shared caches, memory bandwidth, SMT siblings, clock under
all-core load), not the sweep's. ``--spin`` goes one step further: W processes run a
compute-only loop that shares no data, so its fall with W is the cores' own speed under load
(clock, the host's other tenants), which no program running W processes can beat.

    python benchmarks/bench_sweep.py                          # 1,000,000 pairs, all cores
    python benchmarks/bench_sweep.py --pairs 1000000 --no-ray --cores 16 --hardware 100000 --spin 20000000
    python benchmarks/bench_sweep.py --pairs 50000 --no-ray --repeats 1   # a quick run

Results: ``benchmarks/results/bench_sweep.json`` (``-o``), with machine (CPU model, logical CPUs,
cores, threads per core), date and commit. Goal on a quiet 16-core machine: median efficiency
>= 0.8 at 16 workers and median >= 600,000 pairs/s; coordinator CPU share <= 0.10 in every run.
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
            "timeline": s.get("timeline"),
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


def _spin(iterations: int, conn) -> None:
    """In a forked process: a pure-Python integer loop with a working set of a few cache lines;
    send back its CPU seconds."""
    c0 = time.process_time()
    x = 0
    for i in range(iterations):
        x = (x * 1103515245 + i) & 0xFFFFFFFF
    conn.send(time.process_time() - c0)
    conn.close()


def spin_run(procs: int, iterations: int) -> dict:
    """``procs`` forked processes each running :func:`_spin`: how fast one core computes while
    ``procs`` cores are busy, with no shared data at all (clock under all-core load, a host's
    other tenants). Per-process iterations per CPU second."""
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    pipes, jobs = [], []
    for _ in range(procs):
        a, b = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_spin, args=(iterations, b))
        p.start()
        pipes.append(a)
        jobs.append(p)
    cpu = [a.recv() for a in pipes]
    for p in jobs:
        p.join()
    return {"processes": procs, "iterations_per_process_cpu_second": round(iterations * procs / sum(cpu), 1)}


def rounds(counts: list[int], repeats: int):
    """``(round, count)`` in the interleaved order: ascending counts in even rounds, descending in
    odd ones."""
    for r in range(repeats):
        for w in (counts if r % 2 == 0 else counts[::-1]):
            yield r, w


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def _timeline_median(runs: list[dict]) -> dict | None:
    tls = [r["timeline"] for r in runs if r.get("timeline")]
    if not tls:
        return None
    out = {}
    for k in ("setup", "forking", "tail", "teardown"):
        out[k] = round(median([t.get(k) for t in tls]), 4)
    out["first_shard_start_median"] = round(median([(t.get("first_shard_start") or {}).get("median")
                                                    for t in tls]) or 0.0, 4)
    return out


def table(runs: list[dict]) -> list[dict]:
    """Per backend and worker count: medians, spread and efficiency against the median of that
    backend's one-worker runs (see the module docstring)."""
    rows = []
    for backend in dict.fromkeys(r["backend"] for r in runs):
        mine = [r for r in runs if r["backend"] == backend]
        one = [r for r in mine if r["workers"] == 1]
        base = median([r["pairs_per_second"] for r in one])
        base_cpu = median([r["pairs_per_worker_cpu_second"] for r in one])
        for w in sorted({r["workers"] for r in mine}):
            rs = [r for r in mine if r["workers"] == w]
            pps = [r["pairs_per_second"] for r in rs]
            med = median(pps)
            row = {"backend": backend, "workers": w, "runs": len(rs),
                   "pairs_per_second_median": round(med, 1), "pairs_per_second_min": min(pps),
                   "pairs_per_second_max": max(pps), "spread": round((max(pps) - min(pps)) / med, 3),
                   "scaling_efficiency": round(med / w / base, 3) if base else None,
                   "scaling_efficiency_runs": sorted(round(x / w / base, 3) for x in pps) if base else None,
                   "pairs_per_worker_cpu_second_median": round(median([r["pairs_per_worker_cpu_second"] for r in rs]), 1),
                   "busy_fraction_median": round(median([r["busy_fraction"] for r in rs]), 3),
                   "coordinator_cpu_share_median": round(median([r["coordinator_cpu_share"] for r in rs]), 4),
                   "coordinator_cpu_share_max": max((r["coordinator_cpu_share"] or 0) for r in rs),
                   "timeline_median": _timeline_median(rs)}
            row["cpu_efficiency"] = round(row["pairs_per_worker_cpu_second_median"] / base_cpu, 3) if base_cpu else None
            rows.append(row)
    return rows


def hardware_table(hw: list[dict]) -> list[dict]:
    base = median([h["pairs_per_process_cpu_second"] for h in hw if h["processes"] == 1])
    rows = []
    for p in sorted({h["processes"] for h in hw}):
        hs = [h for h in hw if h["processes"] == p]
        per = median([h["pairs_per_process_cpu_second"] for h in hs])
        rows.append({"processes": p, "runs": len(hs), "pairs_per_second_median": round(median(
            [h["pairs_per_second"] for h in hs]), 1), "pairs_per_process_cpu_second_median": round(per, 1),
            "per_process_vs_one": round(per / base, 3) if base else None,
            "per_process_vs_one_runs": sorted(round(h["pairs_per_process_cpu_second"] / base, 3) for h in hs)
            if base else None})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=1_000_000)
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="largest worker count (default: all)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each worker count, interleaved (default 3)")
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--hardware", type=int, default=0, metavar="N",
                    help="also the coordinator-free reference: N pairs per process, 1..cores processes")
    ap.add_argument("--spin", type=int, default=0, metavar="N",
                    help="also a compute-only reference: N loop iterations per process, 1..cores processes "
                         "(no data shared: the machine's per-core speed under all-core load)")
    ap.add_argument("--tmp", default=None, help="where results directories go (default: the system's temp dir)")
    ap.add_argument("-o", "--out", default=str(Path(__file__).parent / "results" / "bench_sweep.json"))
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.cores < 1 or args.pairs < 1:
        ap.error("--pairs, --cores and --repeats must be positive")
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
    counts = worker_counts(args.cores)
    for ray in backends:
        if ray:
            try:
                import ray as _  # noqa: F401
            except ImportError:
                print("ray is not installed: skipping the Ray runs", file=sys.stderr)
                continue
        for rnd, w in rounds(counts, args.repeats):
            r = run_one(spec, w, ray, args.tmp)
            r["round"] = rnd
            runs.append(r)
            tl = r.get("timeline") or {}
            print(f"round {rnd} {r['backend']:9s} {w:3d} workers: {r['pairs']} pairs in {r['seconds']:.3f} s = "
                  f"{r['pairs_per_second']:.0f} pairs/s ({r['pairs_per_worker_cpu_second']} per worker CPU second, "
                  f"busy {r['busy_fraction']}; coordinator {100 * (r['coordinator_cpu_share'] or 0):.1f}% of the "
                  f"workers' CPU; tail {tl.get('tail')} s; load {r['load_average'][0]})", flush=True)
    verdicts = {json.dumps(r["verdicts"], sort_keys=True) for r in runs}
    assert len(verdicts) == 1 and all(r["errors"] == 0 and r["pairs"] == min(available, args.pairs) for r in runs), \
        "runs disagree"
    rows = table(runs)
    print("medians of the runs (efficiency: median pairs/s per worker over the median one-worker run's):")
    for row in rows:
        print(f"{row['backend']:9s} {row['workers']:3d} workers: {row['pairs_per_second_median']:.0f} pairs/s "
              f"[{row['pairs_per_second_min']:.0f}..{row['pairs_per_second_max']:.0f}, spread {row['spread']:.2f}], "
              f"efficiency {row['scaling_efficiency']} {row['scaling_efficiency_runs']}, per CPU second "
              f"{row['cpu_efficiency']} of one worker's, busy {row['busy_fraction_median']}, coordinator "
              f"{100 * (row['coordinator_cpu_share_max'] or 0):.1f}% at most", flush=True)
    hardware = []
    if args.hardware:
        for rnd, w in rounds(counts, args.repeats):
            h = hardware_run(spec, w, args.hardware)
            h["round"] = rnd
            hardware.append(h)
            print(f"round {rnd} hardware {w:3d} processes: {h['pairs_per_second']:.0f} pairs/s, "
                  f"{h['pairs_per_process_cpu_second']:.0f} per process CPU second", flush=True)
    hw_rows = hardware_table(hardware) if hardware else []
    for h in hw_rows:
        print(f"hardware  {h['processes']:3d} processes: median {h['pairs_per_process_cpu_second_median']:.0f} per "
              f"process CPU second ({h['per_process_vs_one']} of one process's; runs {h['per_process_vs_one_runs']})")
    spin, spin_rows = [], []
    if args.spin:
        for rnd, w in rounds(counts, args.repeats):
            h = spin_run(w, args.spin)
            h["round"] = rnd
            spin.append(h)
        one = median([h["iterations_per_process_cpu_second"] for h in spin if h["processes"] == 1])
        for w in counts:
            m = median([h["iterations_per_process_cpu_second"] for h in spin if h["processes"] == w])
            spin_rows.append({"processes": w, "iterations_per_process_cpu_second_median": m,
                              "per_process_vs_one": round(m / one, 3)})
            print(f"spin      {w:3d} processes: {spin_rows[-1]['per_process_vs_one']} of one process's speed per "
                  f"CPU second (compute only, nothing shared)")
    top = [r for r in rows if r["backend"] == "processes" and r["workers"] == args.cores]
    goals = {"efficiency_at_max_workers": top[0]["scaling_efficiency"] if top else None,
             "efficiency_runs_at_max_workers": top[0]["scaling_efficiency_runs"] if top else None,
             "pairs_per_second_at_max_workers": top[0]["pairs_per_second_median"] if top else None,
             "max_coordinator_cpu_share": max((r["coordinator_cpu_share"] or 0) for r in runs) if runs else None}
    sixteen = bool(top) and args.cores >= 16      # the scaling goals are stated for 16 workers
    goals["met"] = {
        "median efficiency >= 0.8 at 16 workers": (goals["efficiency_at_max_workers"] or 0) >= GOAL_EFFICIENCY
        if sixteen else None,
        "median pairs/s >= 600k at 16 workers": (goals["pairs_per_second_at_max_workers"] or 0) >= GOAL_PAIRS_PER_SECOND
        if sixteen else None,
        "coordinator share <= 0.10 in every run": (goals["max_coordinator_cpu_share"] or 0) <= GOAL_COORDINATOR_SHARE}
    out = {"schema": "layoutverify/1", "kind": "bench_sweep", "date": datetime.datetime.now().astimezone().isoformat(
        timespec="seconds"), "commit": commit(), "machine": machine(), "pairs_requested": args.pairs,
        "space_points": available, "max_workers": args.cores, "repeats": args.repeats,
        "method": "each worker count run --repeats times, interleaved (ascending, descending, ...); medians; "
                  "efficiency = median pairs/s / workers / median one-worker pairs/s",
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "goal": "median scaling efficiency >= 0.8 at 16 workers and median >= 600k pairs/s on a quiet 16-core "
                "machine; coordinator CPU share <= 0.10 on any machine", "goals": goals, "table": rows,
        "runs": runs, "hardware_table": hw_rows, "hardware": hardware, "spin_table": spin_rows, "spin": spin}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    for k, ok in goals["met"].items():
        print(f"{k}: {'not judged (fewer than 16 workers)' if ok is None else 'met' if ok else 'NOT MET'}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
