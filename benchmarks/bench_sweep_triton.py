"""Throughput of a Triton sweep: pair proofs per second per core, text in, verdicts out.

A seeded set of distinct TTGIR encodings (blocked with random sizePerThread / threadsPerWarp /
warpsPerCTA / order, nvidia_mma v2/v3, their ``#ttg.linear`` spellings) at a few shapes; every
ordered pair of layouts of one shape is proved with :func:`layoutverify.apps.prove_text.prove_specs`
(each text parsed once, canonical forms compared first). Reported: pairs per second of CPU
time (this process, one core), parse time, verdict counts; a sample of pairs is re-proved with
``compare`` on freshly parsed layouts and must agree.

Usage::

    python benchmarks/bench_sweep_triton.py            # ~20k pairs
    python benchmarks/bench_sweep_triton.py --layouts 60 --shapes 64x64

Writes ``benchmarks/results/bench_sweep_triton.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from layoutverify import adapters  # noqa: E402
from layoutverify.apps.prove_text import prove_specs  # noqa: E402
from layoutverify.core.compare import compare  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def _split(rng, total, rank=2):
    out = [1] * rank
    for _ in range(total.bit_length() - 1):
        out[rng.randrange(rank)] *= 2
    return out


def encodings(rng, count):
    out = set()
    while len(out) < count:
        r = rng.random()
        if r < 0.7:
            spt = [1 << rng.randint(0, 2), 1 << rng.randint(0, 3)]
            tpw = _split(rng, 32)
            wpc = _split(rng, 1 << rng.randint(0, 3))
            order = rng.choice([[1, 0], [0, 1]])
            out.add(f"#ttg.blocked<{{sizePerThread = {spt}, threadsPerWarp = {tpw}, warpsPerCTA = {wpc}, "
                    f"order = {order}}}>")
        elif r < 0.85:
            wpc = _split(rng, 1 << rng.randint(0, 3))
            out.add(f"#ttg.nvidia_mma<{{versionMajor = 2, versionMinor = 0, warpsPerCTA = {wpc}, "
                    f"instrShape = [16, 8]}}>")
        else:
            w = 1 << rng.randint(2, 3)
            n = rng.choice([16, 32, 64])
            out.add(f"#ttg.nvidia_mma<{{versionMajor = 3, versionMinor = 0, warpsPerCTA = [{w}, 1], "
                    f"instrShape = [16, {n}, 16]}}>")
    return sorted(out)


def linear_text(lay) -> str:
    b = lay.f2_bases()
    return "#ttg.linear<{" + ", ".join(f"{n} = {[list(v) for v in b.get(n, [])]}"
                                       for n in ("register", "lane", "warp", "block")) + "}>"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layouts", type=int, default=100, help="distinct encodings per shape")
    ap.add_argument("--shapes", default="64x64,128x128")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--check", type=int, default=300, help="pairs re-proved with compare on fresh layouts")
    ap.add_argument("--note", default="machine shared with other jobs")
    ap.add_argument("--out", default=os.path.join(RESULTS, "bench_sweep_triton.json"))
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    pairs = []
    for shape in shapes:
        encs = encodings(rng, args.layouts)
        specs = []
        for e in encs:
            try:
                lay = adapters.adapter("triton").parse(e, shape=shape)
            except Exception:  # noqa: BLE001 - an encoding that does not fit this shape
                continue
            specs.append("triton:" + e)
            if rng.random() < 0.3:
                specs.append("triton:" + linear_text(lay))  # an equal spelling
        pairs += [(x, y, shape) for x in specs for y in specs]
    adapters.clear_parse_cache()
    c0, t0 = time.process_time(), time.perf_counter()
    results = prove_specs(pairs)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    verdicts = {}
    errors = 0
    for r in results:
        if isinstance(r, Exception):
            errors += 1
            continue
        verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
    # cross-check a sample with compare on freshly parsed layouts
    mismatches = []
    mod = adapters.adapter("triton")
    for k in random.Random(1).sample(range(len(pairs)), min(args.check, len(pairs))):
        a, b, shape = pairs[k]
        if isinstance(results[k], Exception):
            continue
        ref = compare(mod.parse(a.split(":", 1)[1], shape=shape), mod.parse(b.split(":", 1)[1], shape=shape))
        if ref.verdict != results[k].verdict:
            mismatches.append({"a": a, "b": b, "batch": results[k].verdict, "compare": ref.verdict})
    result = {"pairs": len(pairs), "distinct_layouts": len({(a, s) for a, _, s in pairs}), "cpu_s": cpu,
              "wall_s": wall, "pairs_per_cpu_s": len(pairs) / cpu, "verdicts": verdicts, "errors": errors,
              "checked": min(args.check, len(pairs)), "mismatches": mismatches, "note": args.note,
              "date": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()), "machine": {"python": platform.python_version(), "platform": platform.platform(),
                          "cpu_count": os.cpu_count()}}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"{len(pairs)} Triton pairs ({result['distinct_layouts']} distinct layouts, text in): "
          f"{result['pairs_per_cpu_s']:.0f} pairs per CPU second (wall {wall:.1f} s); verdicts {verdicts}; "
          f"errors {errors}; sample mismatches {len(mismatches)}; wrote {args.out}")
    return 0 if not mismatches else 1


if __name__ == "__main__":
    sys.exit(main())
