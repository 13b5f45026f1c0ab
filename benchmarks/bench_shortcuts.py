"""What each remaining shortcut buys, end to end: text (or built layouts) to verdict, with the
shortcut and with it switched off (the general path it stands for), in one process.

A shortcut stays only where a differential test holds it to the general path and it is more than
2x faster end to end (issue 24; the table in docs/ARCHITECTURE.md). Each case below names the
shortcut, how it is switched off (the function replaced by the general path), and a workload:

* adapters, cold (parse caches emptied, both texts parsed, the normal forms built, ``compare``):
  Triton's one-pass parser, one-CTA blocked layouts, one-CTA swizzled shared layouts; CuTe's
  ``shape:stride`` pattern; Tilus's chain pattern; Tilus register layouts from digits;
* the core, on layouts built before timing (their derived data emptied by rebuilding them):
  digit forms read off declared digits; F2 spans of unit-vector bases without elimination;
  Triton's equality of two layouts given by the same bases (no normal form built); the table
  strategy's broadcast grid of a digit-linear layout.

Times are medians of CPU time (``time.process_time``, which other jobs on the machine do not
bend) over repetitions. Writes ``benchmarks/results/bench_shortcuts.json``.

Usage::

    python benchmarks/bench_shortcuts.py
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from layoutverify import adapters  # noqa: E402
from layoutverify.core import compare as C  # noqa: E402
from layoutverify.core.layout import Layout  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

BLOCKED = [
    "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>",
    "#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>",
    "#ttg.blocked<{sizePerThread = [2, 2], threadsPerWarp = [2, 16], warpsPerCTA = [2, 2], order = [1, 0]}>",
]
MMA = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>"
SWIZZLED = ["#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>",
            "#ttg.swizzled_shared<{vec = 4, perPhase = 2, maxPhase = 4, order = [1, 0]}>"]
CUTE = ["(4,8):(1,4)", "(4,8):(8,1)", "((2,32),64):((64,128),1)", "((2,32),64):((1,2),64)", "(12,20):(20,1)",
        "(12,20):(1,12)"]
TILUS = ["local(2, 1).spatial(8, 4).local(1, 2)", "spatial(8, 4).local(2, 2)",
         "column_spatial(4, 8).local(2, 2)", "local(1, 2).spatial(8, 4).local(2, 1)"]


def _pairs(specs, shape=None):
    return [(a, b, shape) for a in specs for b in specs]


def text_to_verdict(pairs):
    """Cold: caches emptied, then every pair parsed and compared."""
    def run():
        for a, b, shape in pairs:
            adapters.clear_parse_cache()
            C.compare(adapters.parse_spec(a, shape=shape), adapters.parse_spec(b, shape=shape))
    return run


def compare_built(make_pairs, method="auto"):
    """Compare on layouts built anew for each repetition (no derived data yet)."""
    def run():
        for a, b in make_pairs():
            C.compare(a, b, method=method)
    return run


@contextlib.contextmanager
def patched(obj, name, value):
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


# -- the general paths, each standing in for a shortcut ------------------------------------------
def _general_blocked(spt, tpw, wpc, order, shape, *, drop_zero_registers):
    from layoutverify.adapters.triton.cga import combine_cta_cga
    from layoutverify.adapters.triton.ll import LL
    cta = LL.standard_nd_tiles([("register", spt), ("lane", tpw), ("warp", wpc)], order)
    ll = combine_cta_cga(cta, [], shape, fit_cta=lambda ll, want: ll.not_larger(want))
    return ll.drop_zero_registers() if drop_zero_registers else ll


def _general_swizzled(vec, per_phase, max_phase, order, shape, name):
    from layoutverify.adapters.triton import shared as S
    from layoutverify.adapters.triton.attr import Attr
    cga = S._cga_from_attr(Attr("swizzled_shared", {}), 2)
    tile = S._swizzled_tile(vec, per_phase, max_phase, order, cga.shape_per_cta(shape))
    return S._to_layout(S._combine_cta_cga(tile, cga, shape), name)


def _digit_form_by_expressions(cls, lay, declared):
    from layoutverify.core import radix as R
    return R.DigitForm(lay, R._forms(lay))


def _f2_rest_by_elimination(self):
    from layoutverify.core import f2 as F2
    from layoutverify.core import normalform as NF
    src = self._src
    if src is None:
        return self.span
    threads, ref = src
    lay = ref()
    data = NF.f2_data(lay)
    b = data.bases
    reg_rows = F2.pivot_rows(b.get("register", ()))
    rows = F2.pivot_rows((v for n, vs in b.items() if n != "register" for v in vs), reg_rows)
    reg = F2.rref(reg_rows)
    self.reg = NF._intern(tuple(reg))
    self.tred = NF._intern(tuple((n, tuple(F2.reduce(v, reg) for v in b.get(n, ()))) for n, _ in threads))
    self.span = NF._intern(tuple(F2.rref(rows)))
    self._src = None
    return self.span


class _NotABasesMap:  # stands in for F2Bases in compare: the declared-bases equality never applies
    pass


def cases():
    from layoutverify.adapters import cute as CU
    from layoutverify.adapters import tilus as TI
    from layoutverify.adapters.cute import interp
    from layoutverify.adapters.tilus import register as REG
    from layoutverify.adapters.triton import linear as LIN
    from layoutverify.adapters.triton import parser as TP
    from layoutverify.adapters.triton import shared as SH
    from layoutverify.core import normalform as NF
    from layoutverify.core import radix as RADIX
    from layoutverify.core import table as TABLE

    tri = [("triton:" + a, "triton:" + b, s) for a in BLOCKED + [MMA] for b in BLOCKED + [MMA] for s in [(64, 64)]]
    sw = [("triton:" + a, "triton:" + b, (64, 64)) for a in SWIZZLED for b in SWIZZLED]
    cute = [("cute:" + a, "cute:" + b, None) for a in CUTE for b in CUTE]
    tilus = [("tilus:" + a, "tilus:" + b, None) for a in TILUS for b in TILUS]

    def digit_pairs():
        return [(CU.parse(a), CU.parse(b)) for a in CUTE for b in CUTE]

    def unit_pairs():
        return [(adapters.adapter("triton").parse(a, shape=(64, 64)), adapters.adapter("triton").parse(b, shape=(64, 64)))
                for a in BLOCKED for b in BLOCKED if a != b]

    def equal_pairs():
        return [(adapters.adapter("triton").parse(a, shape=(64, 64)), adapters.adapter("triton").parse(a, shape=(64, 64)))
                for a in BLOCKED + [MMA]]

    def table_pairs():
        return [(CU.parse(a), CU.parse(b)) for a in CUTE[-2:] for b in CUTE[-2:]]

    return [
        ("triton one-pass parser (parser.fast_parse)", text_to_verdict(tri),
         lambda: patched(TP, "fast_parse", lambda text: None)),
        ("triton one-CTA blocked layout (linear.one_cta_blocked_ll)", text_to_verdict(tri),
         lambda: patched(LIN, "one_cta_blocked_ll", _general_blocked)),
        ("triton one-CTA swizzled shared layout (shared._swizzled_one_cta)", text_to_verdict(sw),
         lambda: patched(SH, "_swizzled_one_cta", _general_swizzled)),
        ("cute shape:stride pattern (interp.flat_layout / nested_layout)", text_to_verdict(cute),
         lambda: _both(patched(interp, "flat_layout", lambda t: None), patched(interp, "nested_layout", lambda t: None))),
        ("tilus chain pattern (tilus._chain_calls + register.chain)", text_to_verdict(tilus),
         lambda: patched(TI, "_chain_calls", lambda t: None)),
        ("tilus register layouts from digits (RegisterModes._digit_layout)", text_to_verdict(tilus),
         lambda: patched(REG.RegisterModes, "_digit_layout", lambda self, *a: None)),
        ("digit form read off declared digits (DigitForm.of_digits)", compare_built(digit_pairs),
         lambda: patched(RADIX.DigitForm, "of_digits", classmethod(_digit_form_by_expressions))),
        ("F2 spans of unit-vector bases (F2Part._unit_vectors)", compare_built(unit_pairs),
         lambda: patched(NF.F2Part, "rest", _f2_rest_by_elimination)),
        ("equal declared bases without normal forms (compare step 1)", compare_built(equal_pairs),
         lambda: patched(C, "F2Bases", _NotABasesMap)),
        ("table strategy's broadcast grid of digit layouts (table.flat_grid)", compare_built(table_pairs, "table"),
         lambda: patched(TABLE, "digit_form", lambda lay: None)),
    ]


@contextlib.contextmanager
def _both(c1, c2):
    with c1, c2:
        yield


def measure(run, reps: int, budget: float) -> float:
    run()  # warm the code paths (not the data: the workloads rebuild it)
    times = []
    t_end = time.process_time() + budget
    while len(times) < reps and (len(times) < 3 or time.process_time() < t_end):
        t0 = time.process_time()
        run()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--budget", type=float, default=4.0, help="CPU seconds per measurement")
    ap.add_argument("--out", default=os.path.join(RESULTS, "bench_shortcuts.json"))
    args = ap.parse_args(argv)
    rows = []
    for name, run, switch_off in cases():
        on = measure(run, args.reps, args.budget)
        with switch_off():
            off = measure(run, args.reps, args.budget)
        on2 = measure(run, args.reps, args.budget)  # again, after: the order does not favour one side
        on = min(on, on2)
        rows.append({"shortcut": name, "with_s": on, "without_s": off, "speedup": off / on})
        print(f"{off / on:6.2f}x  {on * 1e3:9.2f} ms with, {off * 1e3:9.2f} ms without  {name}")
    doc = {"meta": {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "platform": platform.platform(),
                    "python": platform.python_version(), "cpu_count": os.cpu_count(),
                    "timer": "process_time (CPU seconds of this process)"},
           "rows": rows}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
