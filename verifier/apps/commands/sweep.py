"""``layoutverify sweep SPEC.toml``: prove or analyse every point of a parameter space
(see :mod:`layoutverify.apps.sweeps`)."""
from __future__ import annotations

import json
import os
import sys

from .common import output_path, positive_int


def register(sub) -> None:
    p = sub.add_parser("sweep", help="prove/analyse every point of a parameter space (local cores or Ray)",
                       description="Enumerate the space of SPEC.toml (Triton encodings x shapes x num_warps x "
                                   "element types x Triton versions, or templates such as CuTe atoms x tilers), "
                                   "prove or analyse every point, stream results into a JSON-lines file "
                                   "(resumable) and write a summary. Exit codes: 0 done, 2 bad input.")
    p.add_argument("spec", metavar="SPEC.toml")
    p.add_argument("-o", "--out", default=None, type=output_path("results file"), help="results file (JSON lines; default: SPEC.results.jsonl)")
    p.add_argument("-j", "--workers", type=positive_int, default=None, help="local worker processes (default: all cores)")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="run on a Ray cluster at ADDRESS (host:port or 'auto'); without ADDRESS start a local one")
    p.add_argument("--chunk", type=positive_int, default=256, help="points per task (default 256)")
    p.add_argument("--fresh", action="store_true", help="start over instead of resuming an existing results file")
    p.add_argument("--count", action="store_true", help="only count the points")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from layoutverify.apps.sweeps.run import run_sweep
    from layoutverify.apps.sweeps.spec import load_spec
    from layoutverify.core.errors import LayoutError

    spec = load_spec(args.spec)
    if args.count:
        n = spec.count()
        print(json.dumps({"schema": "layoutverify/1", "kind": "sweep_count", "points": n}) if args.json else n)
        return 0
    if args.workers is not None and args.workers < 1:
        raise LayoutError(f"--workers must be at least 1, got {args.workers}")
    out = args.out or os.path.splitext(args.spec)[0] + ".results.jsonl"
    show = sys.stderr.isatty() and not args.json
    progress = None
    if show:
        def progress(n):
            print(f"\r{n} points", end="", file=sys.stderr, flush=True)
    summary = run_sweep(spec, out, workers=args.workers, ray_address=args.ray, chunk_size=args.chunk,
                        resume=not args.fresh, progress=progress)
    if show:
        print(file=sys.stderr)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        counts = summary.get("verdicts") or summary.get("mechanisms") or {}
        print(f"{summary['points']} points in {out} ({summary['evaluated']} now, {summary['skipped_done']} resumed); "
              + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
              + (f"; {summary['errors']} errors" if summary["errors"] else ""))
        print(f"{summary['backend']}, {summary['workers']} workers: {summary['points_per_second']} points/s")
    return 0
