"""The int8 MMAv2-accumulator -> dot-operand-A conversion (triton-lang/triton issue #3580) and its
16-bit control, validated with every Triton release from 2.3 to 3.9 on sm_80: which releases
miscompile it. Writes ``benchmarks/results/validate_regression.json`` (machine, date, per release
and dtype the verdict, the first wrong element, how the PTX moves data).

    python benchmarks/validate_regression.py --out benchmarks/results/validate_regression.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

MMA = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 8]}>"
CASES = {"i8": 4, "f16": 2}   # dtype -> the operand's kWidth (32-bit registers of k elements)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--releases", nargs="+", default=["2.3", "3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6", "3.7",
                                                       "3.8", "3.9"])
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from layoutverify.apps.validation.conversion import Conversion, validate_many
    from layoutverify.apps.validation.releases import Interpreters, cache_root
    convs = [Conversion(f"triton:{MMA}", f"triton:#ttg.dot_op<{{opIdx = 0, parent = {MMA}, kWidth = {k}}}>",
                        (64, 64), dtype, 80, release)
             for release in args.releases for dtype, k in CASES.items()]
    results = validate_many(convs, interpreters=Interpreters(notice=lambda t: print(t, file=sys.stderr)),
                            cache_dir=str(cache_root() / "kernels"))
    rows = []
    for c, v in zip(convs, results):
        rows.append({"release": c.release, "triton": v.triton, "dtype": c.dtype, "verdict": v.verdict,
                     "n_wrong": v.n_wrong, "locations": v.locations, "register_order": v.register_order,
                     "ptx_class": v.ptx_class, "first_wrong": v.first_wrong, "reason": v.reason})
        print(f"Triton {v.triton or c.release} {c.dtype}: {v.verdict} ({v.n_wrong}/{v.locations} wrong, "
              f"{v.ptx_class})")
    doc = {"benchmark": "validate_regression", "issue": "https://github.com/triton-lang/triton/issues/3580",
           "a": convs[0].a, "b_i8": convs[0].b, "shape": [64, 64], "arch": "sm_80",
           "date": time.strftime("%Y-%m-%d %H:%M:%S"),
           "machine": {"node": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version()},
           "results": rows}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
