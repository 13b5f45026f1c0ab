"""Measure every pair of corpora/conversion_suite.toml on the GPU (issue 13): readback, the PTX
interpreter on the PTX the GPU ran, timing and bounds. Writes JSON (and a PNG with matplotlib)
to --out (default benchmarks/results/). Usage: python benchmarks/gpu_conversions.py [--out DIR]
[--only SUBSTRING] [--samples N]"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
import traceback


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    ap.add_argument("--only", default="")
    ap.add_argument("--samples", type=int, default=15)
    ap.add_argument("--budget-s", type=float, default=480)
    ap.add_argument("--replot", metavar="JSON", help="no GPU: re-derive bounds and cost-model predictions of a "
                                                     "results file with the current code, rewrite it and its PNG")
    args = ap.parse_args()
    if args.replot:
        return replot(args.replot)
    from layoutverify.apps.measure.gpu_run import gpu_available
    why = gpu_available()
    if why is not None:     # as `layoutverify measure` says it: one line, exit 2
        print(f"gpu_conversions.py: error: needs an NVIDIA GPU: {why}", file=sys.stderr)
        return 2
    from layoutverify.apps.measure.bench import device, measure_pair
    from layoutverify.apps.measure.suite import load_suite
    os.makedirs(args.out, exist_ok=True)
    dev = device()
    print("device", dev, flush=True)
    pairs = [p for p in load_suite() if args.only in p.name]
    doc = {"device": dev, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "triton": dev["triton"], "results": [], "errors": []}
    tag = dev["name"].replace(" ", "_").replace("/", "_")
    path = os.path.join(args.out, f"conversions_{tag}.json")
    t0 = time.time()
    for p in pairs:
        if time.time() - t0 > args.budget_s:
            doc["errors"].append({"pair": p.name, "error": "time budget exhausted"})
            continue
        try:
            r = measure_pair(p, samples=args.samples)
            doc["results"].append(r)
            print(f"{p.name:34s} {r['ptx_class']:9s} rb={r['readback']['ok']} sim={r['interpreter']['ok']} "
                  f"agree={r['interpreter_agrees']} pred={r['prediction_ok']} "
                  f"ns={r['timing']['ns_per_conversion']:.1f} loop={r['timing']['ns_loop']:.1f} "
                  f"frac={r.get('fraction_of_bound_useful')} {r['seconds']}s", flush=True)
        except Exception as e:  # noqa: BLE001
            doc["errors"].append({"pair": p.name, "error": f"{type(e).__name__}: {e}",
                                  "trace": traceback.format_exc()[-2000:]})
            print("ERROR", p.name, e, flush=True)
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
    try:
        from layoutverify.apps.measure.report import plot
        plot(doc["results"], path[:-5] + ".png", dev)
    except ImportError as e:
        print("no plot:", e)
    n = len(doc["results"])
    print(f"pairs {n}; readback ok {sum(r['readback']['ok'] for r in doc['results'])}; interpreter agrees "
          f"{sum(r['interpreter_agrees'] for r in doc['results'])}; emitted predicted "
          f"{sum(r['prediction_ok'] for r in doc['results'])}; errors {len(doc['errors'])}")
    return 0 if not doc["errors"] else 1


def replot(path: str) -> int:
    from layoutverify.apps.measure.bench import derive, predict
    from layoutverify.apps.measure.report import plot
    with open(path) as f:
        doc = json.load(f)
    for r in doc["results"]:
        derive(r)
        p = r["pair"]
        t = r["interpreter"].get("traffic") or {}
        warps = r.get("num_warps") or _warps(p)
        r["num_warps"] = warps
        eb = {"fp8": 1, "f16": 2, "bf16": 2, "f32": 4}[p["dtype"]]
        predict(r, t, p["shape"], eb, warps)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    plot(doc["results"], path[:-5] + ".png", doc["device"])
    return 0


def _warps(p: dict) -> int:
    from layoutverify.apps.measure.suite import Pair, layouts
    a, b = layouts(Pair(p["name"], p["family"], p["a"], p["b"], tuple(p["shape"]), p["dtype"]))
    return max(a.in_size("warp"), b.in_size("warp"))


if __name__ == "__main__":
    sys.exit(main())
