"""Sweep throughput: Triton encoding pairs proved per second per core, local processes and Ray.

The space is blocked x {nvidia_mma, dot_op, slice, linear} over shapes, num_warps, element
types and Triton versions (``layoutverify sweep``'s Triton families); ``--pairs`` points of it
(default 1,000,000) are proved with 1, 2, 4, ... and all cores, first on a local process pool
(one worker included: the same path), then on a local Ray cluster of that many CPUs started for
each run (outside the timed part). Every run writes its JSON-lines
results into a temporary folder (removed afterwards) and must answer every point.

    python benchmarks/bench_sweep.py                 # the full 1,000,000 pairs
    python benchmarks/bench_sweep.py --pairs 20000   # a quick run
    python benchmarks/bench_sweep.py --no-ray

Results: ``benchmarks/results/bench_sweep.json`` (per backend and worker count: pairs, seconds,
pairs/s, pairs/s per core, scaling efficiency against one worker; pairs per CPU second of the
workers and the busy fraction (wall-clock throughput per worker over that), which say what the
wall clock cannot on a shared machine; the load average at each run).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

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


def worker_counts(cores: int) -> list[int]:
    out, w = [], 1
    while w < cores:
        out.append(w)
        w *= 2
    return out + [cores]


def run_one(spec_path: str, workers: int, ray: bool, chunk: int) -> dict:
    """One sweep; for Ray the cluster (``workers`` CPUs) is started before the clock starts and
    stopped after it stops, so the time is the sweep's, as for the process pool (whose start is
    part of its run)."""
    from layoutverify.apps.sweeps.run import run_sweep
    from layoutverify.apps.sweeps.spec import load_spec
    tmp = tempfile.mkdtemp(prefix="bench_sweep_")
    started = False
    try:
        spec = load_spec(spec_path)
        if ray:
            import ray as raylib
            raylib.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
            started = True
        t0 = time.perf_counter()
        summary = run_sweep(spec, os.path.join(tmp, "r.jsonl"), workers=workers,
                            ray_address="local" if ray else None, chunk_size=chunk, resume=False, pool=True)
        wall = time.perf_counter() - t0
    finally:
        if started:
            raylib.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    return {"backend": "ray" if ray else "processes", "workers": workers, "pairs": summary["points"],
            "errors": summary["errors"], "verdicts": summary.get("verdicts", {}),
            "seconds": round(wall, 3), "pairs_per_second": round(summary["points"] / wall, 1),
            "pairs_per_second_per_core": round(summary["points"] / wall / workers, 1),
            "worker_cpu_seconds": summary.get("worker_cpu_seconds"),
            "pairs_per_worker_cpu_second": summary.get("points_per_worker_cpu_second"),
            # wall-clock parallel efficiency against the workers' own CPU throughput: 1.0 when every
            # worker computed all the time; less when it waited (for the main process or other load)
            "busy_fraction": round(summary["points"] / wall / workers / summary["points_per_worker_cpu_second"], 3)
            if summary.get("points_per_worker_cpu_second") else None,
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=1_000_000)
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="largest worker count (default: all)")
    ap.add_argument("--chunk", type=int, default=512)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("-o", "--out", default=str(Path(__file__).parent / "results" / "bench_sweep.json"))
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="bench_sweep_spec_")
    spec_path = os.path.join(tmp, "spec.toml")
    Path(spec_path).write_text(SPEC.format(pairs=args.pairs))
    from layoutverify.apps.sweeps.spec import load_spec
    available = load_spec(spec_path).count()
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
            r = run_one(spec_path, w, ray, args.chunk)
            runs.append(r)
            print(f"{r['backend']:9s} {w:3d} workers: {r['pairs']} pairs in {r['seconds']:.1f} s = "
                  f"{r['pairs_per_second']:.0f} pairs/s ({r['pairs_per_second_per_core']:.0f} per core; "
                  f"{r['pairs_per_worker_cpu_second']} per worker CPU second; load {r['load_average'][0]})", flush=True)
    for r in runs:
        base = next(x for x in runs if x["backend"] == r["backend"] and x["workers"] == 1)
        r["scaling_efficiency"] = round(r["pairs_per_second_per_core"] / base["pairs_per_second_per_core"], 3)
    shutil.rmtree(tmp, ignore_errors=True)
    out = {"schema": "layoutverify/1", "kind": "bench_sweep", "pairs_requested": args.pairs,
           "space_points": available, "cores": os.cpu_count(), "max_workers": args.cores,
           "date": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()), "machine": platform.platform(), "python": platform.python_version(),
           "load_average_before": [round(x, 2) for x in load_before],
           "load_average_after": [round(x, 2) for x in os.getloadavg()],
           "goal": "scaling efficiency >= 0.8 at all cores", "runs": runs}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
