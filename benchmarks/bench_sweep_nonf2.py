"""Seeded sweep of non-F2 pairs up to 2^22 hardware locations: unknowns, proof times, soundness.

Pairs (default 5,000, seed 2026): random mixed-radix layouts (register/lane/warp/block modes of
sizes 1-6, scaled up to 2^22 locations by a block mode), each against an equal form written
differently (``x % (p*s) // p`` digits), a refined factorisation, or a near miss (swapped
strides, reversed registers, a replicating mode); plus XOR and rotation swizzles over
non-power-of-two row counts, which are not digit-linear (the table or z3 decides those).

For every pair ``compare(method="auto")`` is timed (CPU time of this process) and checked:

* no ``unknown``;
* the verdict equals the vectorised table's (``method="table"``), and, up to 2^14 locations, a
  brute-force verdict computed here from ``Layout.table()`` with Python sets;
* every witness re-evaluated: a ``not_equal`` location holds different elements in A and B,
  a ``different_tensors`` element is held by its side (at the given location) and by no
  location of the other.

Peak memory (``tracemalloc``) is measured for the 20 largest pairs.

Usage::

    python benchmarks/bench_sweep_nonf2.py --quick     # 300 pairs, up to 2^18 locations
    python benchmarks/bench_sweep_nonf2.py             # 5,000 pairs, up to 2^22 locations

Writes ``benchmarks/results/bench_sweep_nonf2.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from layoutverify.testing.brute import brute_verdict, witness_problem  # noqa: E402
from layoutverify.core.compare import compare  # noqa: E402
from layoutverify.core.errors import LayoutError  # noqa: E402
from layoutverify.core.layout import Layout  # noqa: E402
from layoutverify.testing.random_layouts import (  # noqa: E402
    in_shape, mixed_radix_expr, modes_near_miss, modes_recipe, swizzle_layout)

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def scaled_recipe(rng, max_locations):
    """A mode recipe, its block dim grown (a bijective mode along dim1, or replicating) until
    a random target size up to ``max_locations``."""
    in_dims, shape, modes = modes_recipe(rng, min(max_locations, 1 << 14))
    n = int(np.prod([s for _, s in in_dims]))
    target = 1 << rng.randint(max(10, n.bit_length()), max_locations.bit_length() - 1)
    grow = max(1, target // n)
    if grow > 1:
        radix = rng.choice([2, 3, 4, 5, 6, 8, 16])
        k = 1
        while k * radix <= grow:
            k *= radix
        if k > 1:
            replicate = rng.random() < 0.2
            bsize = dict(in_dims)["block"]
            modes = {**modes, "block": list(modes["block"]) + [(k, [0, 0] if replicate else [0, shape[1]])]}
            in_dims = [(d, s * k if d == "block" else s) for d, s in in_dims]
            if not replicate:
                shape = [shape[0], shape[1] * k]
            assert dict(in_dims)["block"] == bsize * k
    return in_dims, shape, modes


def refined(in_dims, shape, modes):
    """The same map with a mode of size 4 or 6 split into two (a different factorisation)."""
    out = {}
    for k, ms in modes.items():
        new = []
        for s, st in ms:
            if s in (4, 6):
                new += [(2, st), (s // 2, [c * 2 for c in st])]
            else:
                new.append((s, st))
        out[k] = new
    return Layout.from_modes(in_dims, shape, out)




def make_pair(rng, max_locations):
    r = rng.random()
    if r < 0.85:
        in_dims, shape, modes = scaled_recipe(rng, max_locations)
        a = Layout.from_modes(in_dims, shape, modes)
        kind = rng.choice(["expr", "refined", "near", "near", "near"])
        if kind == "expr":
            b = mixed_radix_expr(in_dims, shape, modes)
        elif kind == "refined":
            b = refined(in_dims, shape, modes)
        else:
            other = modes_near_miss(rng, in_dims, shape, modes)
            if not in_shape(in_dims, shape, other):
                return None
            b = Layout.from_modes(in_dims, shape, other)
        return "modes/" + kind, a, b
    rows = rng.choice([24, 40, 48, 96, 192, 384, 768, 1536, 3072])
    cols = rng.choice([8, 16, 32, 64, 128, 256])
    if rows * cols > max_locations:
        return None
    kind = rng.choice(["xor", "rot"])
    return "swizzle/" + kind, swizzle_layout(rows, cols, kind), swizzle_layout(rows, cols, kind, rng.choice([0, 1, 2]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=5000)
    ap.add_argument("--max-log2", type=int, default=22)
    ap.add_argument("--quick", action="store_true", help="300 pairs up to 2^18 locations")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--brute-limit", type=int, default=1 << 14)
    ap.add_argument("--note", default="machine shared with other jobs")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.quick:
        args.pairs, args.max_log2 = 300, 18
    out_path = args.out or os.path.join(RESULTS, "bench_sweep_nonf2" + ("_quick" if args.quick else "") + ".json")
    rng = random.Random(args.seed)
    maxloc = 1 << args.max_log2
    pairs = []
    while len(pairs) < args.pairs:
        try:
            p = make_pair(rng, maxloc)
        except LayoutError:
            p = None
        if p is not None:
            pairs.append(p)

    times, methods, verdicts = [], {}, {}
    unknown, disagree, bad_witness, brute_checked = 0, [], [], 0
    t_start = time.time()
    for i, (kind, a, b) in enumerate(pairs):
        c0 = time.process_time()
        res = compare(a, b)
        dt = time.process_time() - c0
        times.append((dt, a.in_size(), kind, res.method))
        methods[res.method] = methods.get(res.method, 0) + 1
        verdicts[res.verdict] = verdicts.get(res.verdict, 0) + 1
        if res.verdict == "unknown":
            unknown += 1
            continue
        ref = compare(a, b, method="table").verdict
        if ref != res.verdict:
            disagree.append({"pair": i, "kind": kind, "auto": res.verdict, "table": ref})
        if a.in_size() <= args.brute_limit and b.in_size() <= args.brute_limit:
            brute_checked += 1
            bv = brute_verdict(a, b)
            if bv != res.verdict:
                disagree.append({"pair": i, "kind": kind, "auto": res.verdict, "brute": bv})
        if witness_problem(a, b, res) is not None:
            bad_witness.append({"pair": i, "kind": kind, "verdict": res.verdict})
        if (i + 1) % 500 == 0:
            print(f"  {i + 1}/{len(pairs)} pairs, {time.time() - t_start:.0f} s", file=sys.stderr, flush=True)

    largest = sorted(range(len(pairs)), key=lambda k: -pairs[k][1].in_size())[:20]
    peaks = []
    for k in largest:
        kind, a, b = pairs[k]
        a2, b2 = Layout(a.in_dims, a.out_dims, a.exprs), Layout(b.in_dims, b.out_dims, b.exprs)  # no cached data
        tracemalloc.start()
        compare(a2, b2)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    cpu = np.asarray([t[0] for t in times])
    slowest = sorted(times, key=lambda t: -t[0])[:10]
    result = {
        "pairs": len(pairs), "seed": args.seed, "max_locations": maxloc, "note": args.note,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpu_count": os.cpu_count()},
        "unknown": unknown, "disagreements": disagree[:50], "n_disagreements": len(disagree),
        "bad_witnesses": bad_witness[:50], "n_bad_witnesses": len(bad_witness), "brute_checked": brute_checked,
        "methods": methods, "verdicts": verdicts,
        "cpu_ms": {"p50": float(np.percentile(cpu, 50) * 1e3), "p99": float(np.percentile(cpu, 99) * 1e3),
                   "max": float(cpu.max() * 1e3), "mean": float(cpu.mean() * 1e3)},
        "over_100ms": int((cpu > 0.1).sum()),
        "slowest": [{"ms": t[0] * 1e3, "locations": t[1], "kind": t[2], "method": t[3]} for t in slowest],
        "peak_memory_mb_largest20": {"max": max(peaks) / 2**20 if peaks else 0.0,
                                     "locations": [pairs[k][1].in_size() for k in largest]},
        "wall_s": time.time() - t_start,
    }
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"{len(pairs)} non-F2 pairs up to 2^{args.max_log2} locations: unknown {unknown}, "
          f"disagreements {len(disagree)} (brute-force checked {brute_checked}), bad witnesses {len(bad_witness)}")
    print(f"CPU per proof: p50 {result['cpu_ms']['p50']:.2f} ms, p99 {result['cpu_ms']['p99']:.2f} ms, "
          f"max {result['cpu_ms']['max']:.1f} ms; over 100 ms: {result['over_100ms']}; methods {methods}")
    print(f"peak memory (20 largest): {result['peak_memory_mb_largest20']['max']:.1f} MB; wrote {out_path}")
    return 0 if not (unknown or disagree or bad_witness) else 1


if __name__ == "__main__":
    sys.exit(main())
