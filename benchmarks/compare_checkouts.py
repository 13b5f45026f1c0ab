"""Before/after speed of two checkouts of layoutverify, measured back to back, interleaved.

Each round runs every benchmark once on the *before* checkout and once on the *after* checkout
(alternating which goes first), each in a fresh process that imports that checkout's code (the
package ``layoutverify`` mapped onto its ``verifier/``, ``adapters/`` and ``corpora/`` folders,
whatever is installed in the interpreter) and runs that checkout's own benchmark script. Per
measured row the best (smallest) time over the rounds is kept for each side, and the report gives
``after / before``: above 1 is slower.

Benchmarks and the times compared:

* ``peers`` (``benchmarks/bench_peers.py``, ``--full`` with ``--full``): per row (family, size,
  relation) ``ours_compare_s`` (compare on pre-built layouts), ``ours_text_cold_s`` and
  ``ours_text_warm_s`` (text to verdict);
* ``sweep_triton`` (``benchmarks/bench_sweep_triton.py``): CPU seconds per proved pair.

Usage::

    git worktree add --detach ../base <base-commit>
    python benchmarks/compare_checkouts.py ../base . --rounds 2 --full
    python benchmarks/compare_checkouts.py ../base . --benches sweep_triton --rounds 3

Writes ``benchmarks/results/compare_checkouts.json`` (both sides' raw results, the ratios and
the machine) and prints the ratio table, worst first.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

#: run a script with ``layoutverify`` imported from one checkout (argv: checkout, script, args...)
BOOT = r"""
import importlib.abc, importlib.util, os, runpy, sys
root = os.path.abspath(sys.argv[1])
MAP = {"layoutverify": "verifier", "layoutverify.adapters": "adapters", "layoutverify.corpora": "corpora"}
class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name not in MAP:
            return None
        folder = os.path.join(root, MAP[name])
        return importlib.util.spec_from_file_location(name, os.path.join(folder, "__init__.py"),
                                                      submodule_search_locations=[folder])
sys.meta_path.insert(0, Finder())
script = os.path.abspath(sys.argv[2])
sys.argv = [script] + sys.argv[3:]
sys.path.insert(0, os.path.dirname(script))
runpy.run_path(script, run_name="__main__")
"""

BENCHES = {
    "peers": ("benchmarks/bench_peers.py", []),
    "sweep_triton": ("benchmarks/bench_sweep_triton.py", []),
}


def run_one(checkout: str, bench: str, full: bool, extra: list[str]) -> dict:
    script, args = BENCHES[bench]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        argv = [sys.executable, "-c", BOOT, checkout, os.path.join(checkout, script)] + args + extra
        if bench == "peers":
            argv += ["--out", out] + (["--full"] if full else [])
            path = out + ".json"
        else:
            argv += ["--out", out + ".json"]
            path = out + ".json"
        t0 = time.time()
        p = subprocess.run(argv, capture_output=True, text=True, cwd=checkout)
        if p.returncode != 0:
            raise SystemExit(f"{bench} on {checkout} failed ({p.returncode}):\n{p.stderr[-3000:]}")
        with open(path) as f:
            doc = json.load(f)
        doc["_wall"] = time.time() - t0
        return doc


def times(bench: str, doc: dict) -> dict[str, float]:
    """Row name -> seconds (smaller is faster)."""
    out = {}
    if bench == "peers":
        for r in doc["rows"]:
            key = f"{r['family']} {r['size']} {r['relation']}"
            for f in ("ours_compare_s", "ours_text_cold_s", "ours_text_warm_s"):
                if r.get(f) is not None:
                    out[f"{key} {f[5:-2]}"] = r[f]
    else:
        out["sweep cpu s/pair"] = doc["cpu_s"] / max(1, doc["pairs"])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before", help="checkout of the base commit")
    ap.add_argument("after", help="checkout with the change")
    ap.add_argument("--benches", default="peers,sweep_triton")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--full", action="store_true", help="bench_peers --full")
    ap.add_argument("--families", default=None, help="bench_peers --families")
    ap.add_argument("--note", default="machine shared with other jobs")
    ap.add_argument("--out", default=os.path.join(RESULTS, "compare_checkouts.json"))
    args = ap.parse_args(argv)
    benches = args.benches.split(",")
    raw: dict = {b: {"before": [], "after": []} for b in benches}
    for rnd in range(args.rounds):
        order = ("before", "after") if rnd % 2 == 0 else ("after", "before")
        for b in benches:
            extra = ["--families", args.families] if (b == "peers" and args.families) else []
            for side in order:
                doc = run_one(getattr(args, side), b, args.full, extra)
                raw[b][side].append(doc)
                print(f"round {rnd + 1} {b} {side}: {doc['_wall']:.0f} s", file=sys.stderr)
    ratios = {}
    for b in benches:
        best = {}
        for side in ("before", "after"):
            acc: dict = {}
            for doc in raw[b][side]:
                for k, v in times(b, doc).items():
                    acc[k] = min(v, acc.get(k, v))
            best[side] = acc
        for k in best["before"]:
            if k in best["after"] and best["before"][k] > 0:
                ratios[f"{b}: {k}"] = {"before_s": best["before"][k], "after_s": best["after"][k],
                                       "ratio": best["after"][k] / best["before"][k]}
    doc = {"meta": {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "platform": platform.platform(),
                    "python": platform.python_version(), "cpu_count": os.cpu_count(), "note": args.note,
                    "rounds": args.rounds, "full": args.full, "before": os.path.abspath(args.before),
                    "after": os.path.abspath(args.after)},
           "ratios": ratios, "raw": raw}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    rows = sorted(ratios.items(), key=lambda kv: -kv[1]["ratio"])
    for k, v in rows:
        print(f"{v['ratio']:6.2f}  {v['before_s'] * 1e6:12.2f} us -> {v['after_s'] * 1e6:12.2f} us  {k}")
    worst = rows[0][1]["ratio"] if rows else 0
    print(f"{len(rows)} rows; worst ratio {worst:.2f}; rows slower than 1.25x: "
          f"{sum(1 for _, v in rows if v['ratio'] > 1.25)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
