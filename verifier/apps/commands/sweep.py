"""``layoutverify sweep SPEC.toml``: prove or analyse every point of a parameter space
(see :mod:`layoutverify.apps.sweeps`)."""
from __future__ import annotations

import json
import sys
import time

from .common import positive_int

EXIT_CODES = ("Exit codes: 0 every point evaluated, at least one without error (the summary counts the errors); "
              "2 bad input: a bad spec, a results directory of another spec (or another sweep writing it), "
              "or a sweep whose every point is an error; 70 a shard kept killing its worker; "
              "130 interrupted (run again to resume).")


def register(sub) -> None:
    """The ``sweep`` subcommand's arguments."""
    p = sub.add_parser("sweep", help="prove/analyse every point of a parameter space (local cores or Ray)",
                       description="Enumerate the space of SPEC.toml (Triton encodings x shapes x num_warps x "
                                   "element types x Triton versions, or templates such as CuTe atoms x tilers), "
                                   "prove or analyse every point and write the records into a results directory, "
                                   "one shard per range of points (workers write their own shards; running "
                                   "again resumes), with a merged summary. " + EXIT_CODES)
    p.add_argument("spec", metavar="SPEC.toml")
    p.add_argument("-o", "--out", default=None, metavar="DIR",
                   help="results directory (default: SPEC.results beside the spec); cat DIR/shards/*.jsonl "
                        "gives every record in order")
    p.add_argument("-j", "--workers", type=positive_int, default=None,
                   help="local worker processes, or the CPUs of the local Ray instance (default: all cores)")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="run on the Ray cluster at ADDRESS (host:port, or 'auto' for the one `ray start` "
                        "began on this host); without ADDRESS start a Ray instance for this sweep")
    p.add_argument("--chunk", "--shard", dest="shard", type=positive_int, default=None, metavar="N",
                   help="points per shard (default: about 8 shards per worker, at most 4096, or 256 for "
                        "analyses and template spaces; a resumed sweep keeps its first run's)")
    p.add_argument("--fresh", action="store_true", help="start over, replacing the results in the directory")
    p.add_argument("--count", action="store_true", help="only count the points")
    p.add_argument("--progress", action="store_true",
                   help="report progress on stderr (default: when stderr is a terminal)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    """Run ``layoutverify sweep``: count or evaluate the spec's points into the results directory
    and print the summary; the exit code as :data:`EXIT_CODES` says (0, 2 every point an error,
    70 a shard kept killing its worker)."""
    from layoutverify.apps.sweeps.run import results_path, run_sweep
    from layoutverify.apps.sweeps.work import SweepFailed
    from layoutverify.apps.sweeps.spec import load_spec

    spec = load_spec(args.spec)
    if args.count:
        n = spec.count()
        print(json.dumps({"schema": "layoutverify/1", "kind": "sweep_count", "points": n}) if args.json else n)
        return 0
    out = args.out if args.out is not None else results_path(args.spec)
    tty = sys.stderr.isatty()
    show = args.progress or (tty and not args.json)
    progress = _progress(tty) if show else None
    try:
        summary = run_sweep(spec, out, workers=args.workers, ray_address=args.ray, shard_points=args.shard,
                            resume=not args.fresh, progress=progress)
    except SweepFailed as e:
        print(f"layoutverify sweep: {e}", file=sys.stderr)
        return 70
    finally:
        if show and tty:
            print(file=sys.stderr)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        counts = summary.get("verdicts") or summary.get("mechanisms") or {}
        print(f"{summary['points']} points in {out} ({summary['evaluated']} now, {summary['skipped_done']} resumed); "
              + ", ".join(f"{k} {v}" for k, v in counts.items())
              + (f"; {summary['errors']} errors" if summary["errors"] else ""))
        if summary["evaluated"]:
            print(f"{summary['backend']}, {summary['workers']} workers: {summary['points_per_second']} points/s")
        else:
            print("nothing left to evaluate")
    if summary["points"] and summary["errors"] == summary["points"]:
        fe = summary["first_error"]
        print(f"layoutverify sweep: every one of the {summary['points']} points is an error; the first "
              f"(point {fe['i']}): {fe['error']}", file=sys.stderr)
        return 2
    return 0


def _progress(tty: bool):
    """A progress reporter: on a terminal one line rewritten in place, else a line every 10 s."""
    last = [0.0]

    def report(done: int, total: int, evaluated: int, seconds: float) -> None:
        now = time.perf_counter()
        if not tty and now - last[0] < 10 and done < total:
            return
        last[0] = now
        rate = evaluated / seconds if seconds > 0 else 0.0
        eta = f", {(total - done) / rate:.0f} s left" if rate > 0 and done < total else ""
        line = f"{done}/{total} points ({100 * done / total:.1f}%), {rate:.0f} points/s{eta}"
        print(("\r" + line) if tty else line, end="" if tty else "\n", file=sys.stderr, flush=True)
    return report
