"""Fit the conversion cost model (verifier/core/cost.py) on measured conversions and report the
error on held-out pairs. Usage: python benchmarks/fit_cost_model.py RESULTS.json [--write]

Pairs alternate between the fit half (even positions in the suite) and the held-out half (odd).
Facts: the interpreter's traffic (wavefronts, shuffles, barriers) and the SASS counts of the loop
kernel that ran on the GPU (``timing.kernel.loop``: ALU instructions, local-memory accesses),
as ``measure`` records them. Pairs under NOISE_NS are scored by absolute error; every other
held-out pair counts, spilling ones included.
The fit is least squares on relative error with non-negative constants."""
from __future__ import annotations

import datetime
import json
import sys

import numpy as np
from scipy.optimize import least_squares

from layoutverify.core.cost import CONSTANTS, cycles, facts_from_traffic


NOISE_NS = 5.0  # pairs faster than this are within the timing noise (spread of the medians)


def rows(doc):
    out = []
    for r in doc["results"]:
        t = r["interpreter"].get("traffic")
        if not t:
            continue
        p = r["pair"]
        eb = {"fp8": 1, "f16": 2, "bf16": 2, "f32": 4}[p["dtype"]]
        loop = (r["timing"].get("kernel") or {}).get("loop")
        if loop is None:
            sys.exit(f"{p['name']}: no loop SASS counts in the results (measured before they were recorded)")
        f = facts_from_traffic(t, p["shape"], eb, r.get("num_warps") or _warps(r), loop=loop)
        out.append((p["name"], f, r["timing"]["ns_per_conversion"]))
    return out


def _warps(r):
    from layoutverify.apps.measure.suite import Pair, layouts
    p = r["pair"]
    a, b = layouts(Pair(p["name"], p["family"], p["a"], p["b"], tuple(p["shape"]), p["dtype"]),
                   r.get("triton_version"))
    return max(a.in_size("warp"), b.in_size("warp"))


def fit(data, clock_mhz):
    """Least squares on relative error, constants >= 0."""
    def resid(p):
        k = dict(zip(CONSTANTS, p))
        return [(cycles(f, k) / (clock_mhz / 1000.0) - ns) / ns for _, f, ns in data]
    best = None
    for x0 in (1.0, 0.5, 0.1):  # a few starts: the max() makes the surface non-smooth
        res = least_squares(resid, x0=[x0] * len(CONSTANTS), bounds=(0, np.inf))
        if best is None or res.cost < best.cost:
            best = res
    return dict(zip(CONSTANTS, best.x.tolist()))


def predict(c, f, clock_mhz):
    return cycles(f, c) / (clock_mhz / 1000.0)


def main():
    doc = json.load(open(sys.argv[1]))
    clock = doc["device"]["clock_mhz"]
    data = rows(doc)
    fit_half = [d for i, d in enumerate(data) if i % 2 == 0]
    held = [d for i, d in enumerate(data) if i % 2 == 1]
    c = fit([d for d in fit_half if d[2] >= NOISE_NS], clock)
    errs, table, tiny = [], [], []
    for name, f, ns in held:
        pred = predict(c, f, clock)
        e = (pred - ns) / ns if ns > 0 else float("nan")
        table.append((name, ns, pred, e))
        if ns < NOISE_NS:  # below the timing noise: absolute error only
            tiny.append(abs(pred - ns))
        else:
            errs.append(abs(e))
    errs = np.array(errs)
    for name, ns, pred, e in table:
        print(f"{name:34s} measured {ns:9.1f} ns  predicted {pred:8.1f} ns  error {e:+.0%}")
    stats = {"held_out_pairs": len(errs), "below_noise_pairs": len(tiny),
             "below_noise_max_abs_error_ns": float(max(tiny)) if tiny else 0.0, "noise_ns": NOISE_NS, "median_abs_error": float(np.median(errs)),
             "mean_abs_error": float(errs.mean()), "within_20_percent": float((errs <= 0.2).mean()),
             "over_20_percent": [name for name, ns, pred, e in table if ns >= NOISE_NS and abs(e) > 0.2]}
    print("held-out:", json.dumps(stats))
    print("cycles:", {k: round(v, 3) for k, v in c.items()})
    if "--write" in sys.argv:
        out = {"gpu": doc["device"]["name"], "triton": doc["triton"], "date": doc["date"][:10],
               "fitted": datetime.date.today().isoformat(), "clock_mhz": clock, "sms": doc["device"]["sms"],
               "cycles": c, "model": "max(wavefront*wavefronts, alu*alu_instructions) + shuffle*shuffles"
                                         " + barrier*barriers + local*local_accesses + constant (SM cycles)",
               "fit": "benchmarks/fit_cost_model.py on benchmarks/results/" + sys.argv[1].split("/")[-1],
               "held_out": stats,
               "h200": {"gpu": "NVIDIA H200 (derived: the H100's SM, 132 SMs, 1980 MHz; not measured)",
                        "clock_mhz": 1980.0, "sms": 132}}
        with open("verifier/core/cost_h100.json", "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
