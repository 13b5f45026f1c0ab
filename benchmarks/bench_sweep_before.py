"""The sweep before and after issue 26, on one machine, runs interleaved: CPU seconds per pair of
the workers and of the coordinator, for the same points of ``bench_sweep.py``'s space.

The code before is a commit of this repository, unpacked as an importable ``layoutverify``
(``verifier/`` with ``adapters/`` and ``corpora/`` inside) into a temporary folder; each run is a
fresh interpreter with that folder or this checkout first on ``sys.path``. Per run: pairs per CPU
second of the workers (as each version's summary reports it) and the coordinator's CPU seconds
(``RUSAGE_SELF`` of the coordinating process, threads included) over the workers'. CPU time,
unlike the wall clock, is little bent by other load on a shared machine.

    python benchmarks/bench_sweep_before.py --commit 296e415 --pairs 300000 --workers 1 2 --repeat 2

Writes ``benchmarks/results/bench_sweep_before.json``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_sweep import SPEC, machine  # noqa: E402

#: one run in a fresh interpreter: argv = spec path, results path, workers; prints a JSON line
RUN = r"""
import json, resource, sys, time
from layoutverify.apps.sweeps.spec import load_spec
from layoutverify.apps.sweeps.run import run_sweep
spec, out, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = load_spec(spec)
r0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.perf_counter()
summ = run_sweep(s, out, workers=workers, resume=False, pool=True)
wall = time.perf_counter() - t0
r1 = resource.getrusage(resource.RUSAGE_SELF)
coord = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(json.dumps({"pairs": summ["points"], "verdicts": summ.get("verdicts"), "seconds": round(wall, 3),
                  "worker_cpu_seconds": summ["worker_cpu_seconds"],
                  "pairs_per_worker_cpu_second": summ["points_per_worker_cpu_second"],
                  "coordinator_cpu_seconds": round(coord, 3),
                  "coordinator_cpu_share": round(coord / summ["worker_cpu_seconds"], 4)}))
"""


def unpack(commit: str, dest: Path) -> None:
    """``commit``'s package as an importable ``layoutverify`` under ``dest``."""
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "verifier", "adapters", "corpora"],
                         capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=tar, check=True)
    (dest / "verifier").rename(dest / "layoutverify")
    for sub in ("adapters", "corpora"):
        (dest / sub).rename(dest / "layoutverify" / sub)


def run(path: Path, spec: str, out: str, workers: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(path))
    p = subprocess.run([sys.executable, "-c", RUN, spec, out, str(workers)], capture_output=True, text=True,
                       env=env, timeout=3600, cwd=tempfile.gettempdir())
    if p.returncode:
        raise RuntimeError(p.stderr[-2000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commit", required=True, help="the code before (a commit of this repository)")
    ap.add_argument("--pairs", type=int, default=300_000)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("-o", "--out", default=str(ROOT / "benchmarks" / "results" / "bench_sweep_before.json"))
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench_sweep_before_"))
    try:
        before = tmp / "before"
        before.mkdir()
        unpack(args.commit, before)
        # this checkout, importable the same way (the editable install may point elsewhere)
        after = tmp / "after"
        after.mkdir()
        shutil.copytree(ROOT / "verifier", after / "layoutverify")
        shutil.copytree(ROOT / "adapters", after / "layoutverify" / "adapters")
        shutil.copytree(ROOT / "corpora", after / "layoutverify" / "corpora")
        spec = tmp / "spec.toml"
        spec.write_text(SPEC.format(pairs=args.pairs))
        runs = []
        for rep in range(args.repeat):
            for w in args.workers:
                for name, path, out in (("before", before, tmp / "r.jsonl"), ("after", after, tmp / "r")):
                    r = dict(run(path, str(spec), str(out), w), code=name, workers=w, repeat=rep,
                             load_average=[round(x, 2) for x in os.getloadavg()])
                    runs.append(r)
                    print(f"{name:6s} {w} workers: {r['pairs_per_worker_cpu_second']:>9} pairs per worker CPU s, "
                          f"coordinator {100 * r['coordinator_cpu_share']:.1f}% of the workers' CPU "
                          f"(load {r['load_average'][0]})", flush=True)
                    shutil.rmtree(out, ignore_errors=True) if out.is_dir() else out.unlink(missing_ok=True)
                    Path(str(out) + ".summary.json").unlink(missing_ok=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert len({json.dumps(r["verdicts"], sort_keys=True) for r in runs}) == 1, "before and after disagree"
    best = {}
    for r in runs:
        k = (r["code"], r["workers"])
        if k not in best or r["pairs_per_worker_cpu_second"] > best[k]["pairs_per_worker_cpu_second"]:
            best[k] = r
    table = [{"workers": w, "before_pairs_per_worker_cpu_second": best[("before", w)]["pairs_per_worker_cpu_second"],
              "after_pairs_per_worker_cpu_second": best[("after", w)]["pairs_per_worker_cpu_second"],
              "speedup": round(best[("after", w)]["pairs_per_worker_cpu_second"] /
                               best[("before", w)]["pairs_per_worker_cpu_second"], 2),
              "before_coordinator_cpu_share": best[("before", w)]["coordinator_cpu_share"],
              "after_coordinator_cpu_share": best[("after", w)]["coordinator_cpu_share"]} for w in args.workers]
    for t in table:
        print(t)
    doc = {"schema": "layoutverify/1", "kind": "bench_sweep_before",
           "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "machine": machine(),
           "before_commit": args.commit, "pairs": args.pairs, "best_of_repeats": table, "runs": runs}
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
