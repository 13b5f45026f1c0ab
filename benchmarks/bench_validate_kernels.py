"""Whole-kernel validation: time and peak memory per kernel of the corpus, on one core.

Every kernel of ``tests/kernel_corpus.py`` (compiled by the installed Triton into the cached
Triton cache of ``tests/kernel_cache.py``) is validated in its own child process pinned to one
core, ``--repeat`` times; the child reports the validation's time, and its peak resident memory
is read from the operating system. The baseline, measured in the same child, is reading the
kernel (parsing its TTIR and PTX): the ratio says how much the symbolic execution costs beyond
reading the text. Peak memory is the child's maximum resident set (Python, numpy and Triton's
imports included).

The bound the issue sets: the 128x128x64 fp16 matmul CTA (``matmul_128``, 8 warps) under 10 s on
one core and 2 GB.

    python benchmarks/bench_validate_kernels.py [--repeat 3] [--out benchmarks/results/bench_validate_kernels.json]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
from kernel_corpus import LAUNCH
from layoutverify.apps.kernels.folder import find_kernels
from layoutverify.apps.kernels.ttir import parse_ttir
from layoutverify.apps.ptxsim import parse_ptx
from layoutverify.apps.kernels.validate import Launch, validate_kernel
name, folder = sys.argv[2], sys.argv[3]
kf, = find_kernels([folder])
ttir, ptx, meta, _ = kf.read()
t0 = time.perf_counter(); parse_ttir(ttir); parse_ptx(ptx); base = time.perf_counter() - t0
t0 = time.perf_counter()
out = validate_kernel(ttir, ptx, meta, Launch.from_json(LAUNCH[name]), name=name)
took = time.perf_counter() - t0
import resource
print(json.dumps({"verdict": out.verdict, "seconds": took, "parse_seconds": base, "elements": out.elements,
                  "instructions": out.instructions, "reason": out.reason[:200],
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_child(name: str, folder: str) -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / "tests"), name, folder], capture_output=True,
                       text=True, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"{name}: {r.stderr[-1500:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kernels", nargs="*", help="NAME:ARCH items (default: all)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bench_validate_kernels.json"))
    args = ap.parse_args()
    import triton

    from kernel_cache import corpus_folders
    from kernel_corpus import KERNELS
    release = ".".join(triton.__version__.split(".")[:2])
    items = args.kernels or [f"{n}:{a}" for n, s in KERNELS.items() for a in s["archs"]]
    folders = corpus_folders(sys.executable, release, items)
    rows = []
    for (name, arch), folder in sorted(folders.items()):
        runs = [run_child(name, folder) for _ in range(args.repeat)]
        secs = [r["seconds"] for r in runs]
        row = {"kernel": name, "arch": f"sm_{arch}", "verdict": runs[0]["verdict"],
               "median_seconds": round(statistics.median(secs), 3), "min_seconds": round(min(secs), 3),
               "parse_seconds": round(statistics.median(r["parse_seconds"] for r in runs), 4),
               "ratio_to_parse": round(statistics.median(secs) / max(1e-9, statistics.median(
                   r["parse_seconds"] for r in runs)), 1),
               "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs), 1),
               "elements": runs[0]["elements"], "instructions": runs[0]["instructions"]}
        rows.append(row)
        print(f"{name:24s} sm_{arch}  {row['verdict']:11s} {row['median_seconds']:7.2f} s  "
              f"(x{row['ratio_to_parse']} parsing)  {row['peak_rss_mb']:7.1f} MB", flush=True)
    doc = {"benchmark": "validate_kernels", "date": datetime.datetime.now().isoformat(timespec="seconds"),
           "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                       "cpus": os.cpu_count(), "python": platform.python_version()},
           "triton": triton.__version__, "one_core": True, "repeat": args.repeat, "kernels": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    big = [r for r in rows if r["kernel"] == "matmul_128"]
    for r in big:
        ok = r["median_seconds"] < 10 and r["peak_rss_mb"] < 2048
        print(f"128x128x64 fp16 matmul CTA ({r['arch']}): {r['median_seconds']} s, {r['peak_rss_mb']} MB -> "
              f"{'within' if ok else 'OUTSIDE'} the bound (10 s, 2 GB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
