"""``validate`` on the conversion suite for Triton releases and targets: the full matrix.

For each release (``--releases``, default 3.6 3.7 3.8 3.9) and target (``--archs``, default 80 90)
every pair of the suite (``corpora/conversion_suite.toml``; fp8 pairs only on sm_90) is compiled
by that release in its own environment (:mod:`layoutverify.apps.validation.releases`) and
validated on the PTX interpreter (:mod:`layoutverify.apps.validation.conversion`). Writes a JSON
result (machine, date, per release and target the verdict counts, the wrong and unsupported
pairs with the first wrong element or the reason) to ``--out`` and prints one line per cell.

    python benchmarks/validate_suite.py --out benchmarks/results/validate_suite.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--releases", nargs="+", default=["3.6", "3.7", "3.8", "3.9"])
    ap.add_argument("--archs", nargs="+", type=int, default=[80, 90])
    ap.add_argument("--out", default=None, help="JSON result file")
    ap.add_argument("--cache", default=None, help="kernel cache folder (default ~/.cache/layoutverify/kernels)")
    args = ap.parse_args(argv)

    from layoutverify.apps.measure.suite import load_suite
    from layoutverify.apps.validation.conversion import Conversion, validate_many
    from layoutverify.apps.validation.releases import Interpreters, cache_root

    suite = load_suite()
    interpreters = Interpreters(notice=lambda t: print(t, file=sys.stderr, flush=True))
    cache = args.cache or str(cache_root() / "kernels")
    cells = []
    status = 0
    for release in args.releases:
        for arch in args.archs:
            pairs = [p for p in suite if not (p.dtype == "fp8" and arch < 89)]
            convs = [Conversion(p.a, p.b, tuple(p.shape), p.dtype, arch, release) for p in pairs]
            t0 = time.perf_counter()
            results = validate_many(convs, interpreters=interpreters, cache_dir=cache)
            counts: dict = {}
            for v in results:
                counts[v.verdict] = counts.get(v.verdict, 0) + 1
            cell = {"release": release, "triton": next((v.triton for v in results if v.triton), None),
                    "arch": f"sm_{arch}", "pairs": len(pairs), "verdicts": counts,
                    "seconds": round(time.perf_counter() - t0, 1),
                    "not_correct": [{"pair": p.name, "verdict": v.verdict, "reason": v.reason,
                                     "first_wrong": v.first_wrong, "n_wrong": v.n_wrong}
                                    for p, v in zip(pairs, results) if v.verdict != "correct"]}
            cells.append(cell)
            if counts.get("wrong"):
                status = 1
            print(f"Triton {cell['triton']} sm_{arch}: {counts} ({cell['seconds']} s)", flush=True)
    doc = {"benchmark": "validate_suite", "date": time.strftime("%Y-%m-%d %H:%M:%S"),
           "machine": {"node": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version()},
           "cells": cells}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
