"""Write ``benchmarks/README.md`` from the results in ``benchmarks/results/*.json``.

Every number in that page comes from a results file, read here; every section names its file,
the machine and the date the file records. The prose around the numbers says how each benchmark
measures (it is the same for every run) and never states a result the files do not hold.
``tests/test_benchmarks_readme.py`` checks that the committed page is what this script writes.

Usage::

    python benchmarks/make_readme.py            # rewrite benchmarks/README.md
    python benchmarks/make_readme.py --check    # exit 1 when benchmarks/README.md is not current
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
README = HERE / "README.md"


def load(name: str) -> dict | None:
    p = RESULTS / name
    return json.loads(p.read_text()) if p.exists() else None


def when(doc: dict) -> str:
    date = doc.get("date") or (doc.get("meta") or {}).get("when") or "not recorded"
    if doc.get("date_source"):
        date += f" ({doc['date_source']})"
    return date


def machine(doc: dict) -> str:
    m = doc.get("machine") or doc.get("meta") or {}
    if isinstance(m, str):
        return f"{m}, Python {doc.get('python', '?')}, {doc.get('cores', '?')} cores"
    cpus = m.get("cpu_count") or m.get("cpus") or m.get("logical_cpus") or doc.get("cores")
    out = f"{m.get('platform', '?')}, {cpus} cores"
    if m.get("python"):
        out += f", Python {m['python']}"
    return out


def table(head: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def f(x, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def header(title: str, files: list[str], doc: dict, *, note: str | None = None) -> list[str]:
    out = [f"## {title}", "", f"Results: {', '.join(f'`results/{x}`' for x in files)}; machine: {machine(doc)}; "
           f"date: {when(doc)}."]
    if note:
        out[-1] += f" Note recorded with the run: {note}."
    return out + [""]


# ---------------------------------------------------------------------------------------------
def prove_section() -> list[str]:
    d = load("bench_prove.json")
    if d is None:
        return []
    out = header("compare(): proofs per second", ["bench_prove.json"], d, note=d.get("note"))
    out += [f"`python benchmarks/bench_prove.py` proves a seeded corpus of {d['pairs']:,} pairs (seed {d['seed']}; "
            "F2 and non-F2, equal and near-miss) with `compare(method=\"auto\")` and, in the same process, with "
            "two baselines: the vectorised table comparison (`method=\"table\"`) on every pair and z3 alone "
            f"on every {d['z3_every']}th pair. Times are CPU time of the process per proof; every pair is rebuilt "
            "before each timed run, so no strategy profits from another's caches. (`--quick` runs 300 pairs as "
            "a smoke test; it reports what it saw and leaves the targets to this full run.)", ""]
    rows = []
    order = sorted(d["buckets"], key=lambda b: (not b.startswith("f2"), int(b.split("2^")[1].split()[0].rstrip(")"))))
    for b in order:
        r = d["buckets"][b]
        a, t, z = r["auto"], r["table"], r["z3_only"]
        rows.append([b, a["count"], f"{f(a['p50_ms'])} / {f(a['p99_ms'])} ms", f"{a['proofs_per_s']:,.0f}",
                     f"{f(t['p50_ms'])} ms", f"{f(z['p50_ms']) if z else '-'} ms" if z else "-",
                     f"{r['speedup_vs_table_mean']:.1f}x", f"{r['speedup_vs_z3_mean']:.1f}x" if r["speedup_vs_z3_mean"] else "-"])
    out += table(["pairs", "n", "auto p50 / p99", "auto proofs/s", "table p50", "z3 p50", "vs table (mean)",
                  "vs z3 (mean)"], rows)
    o, tg = d["overall"], d["targets"]
    out += ["", f"Overall: {o['auto']['proofs_per_s']:,.0f} proofs/s (table baseline {o['table']['proofs_per_s']:,.0f}/s, "
            f"z3 alone {o['z3_only']['proofs_per_s']:,.1f}/s); verdicts {_counts(d['verdicts'])}; `unknown`: "
            f"{d['unknown']}; disagreements with the table: {d['n_disagreements']}.", "",
            "Targets (set when the table baseline enumerated in Python; it has been vectorised since):", "",
            f"* F2 at 64x64 and above at least 10x faster than the table: smallest ratio "
            f"{tg['f2_min_speedup_vs_table_at_64x64_and_above']:.1f}x: "
            f"**{'met' if tg['f2_target_10x_met'] else 'not met'}**"
            + ("" if tg["f2_target_10x_met"] else _f2_met_from(d)) + ";",
            f"* non-F2 pairs up to 2^16 hardware locations under 100 ms at p99: "
            f"{tg['nonf2_p99_ms_up_to_2^16_locations']:.1f} ms: "
            f"**{'met' if tg['nonf2_target_100ms_p99_met'] else 'not met'}**.", ""]
    return out


def _f2_met_from(d: dict) -> str:
    met = [b for b in d["buckets"] if b.startswith("f2") and d["buckets"][b]["speedup_vs_table_mean"] >= 10]
    if not met:
        return ""
    smallest = min(met, key=lambda b: int(b.split("2^")[1].split()[0].rstrip(")")))
    return f" (met from {smallest.split()[1]} up)"


def _counts(c: dict) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in sorted(c.items(), key=lambda kv: -kv[1]))


# ---------------------------------------------------------------------------------------------
def peers_section() -> list[str]:
    d = load("bench_peers.json")
    if d is None:
        return []
    out = header("Side by side with the peers", ["bench_peers.json", "bench_peers.md"], d, note=d["meta"].get("note"))
    out += ["`pip install -e '.[bench]'`, then `python benchmarks/bench_peers.py` (`--full` for sizes up to "
            "2048x2048): the same pairs in one process through our `compare` (on layouts built with their normal "
            "form) and each peer starting from its own pre-built objects: Triton's `to_linear_layout` + equality, "
            "pycute enumeration, `tensor-layouts` F2 matrices, islpy `Map.is_equal`, tilus's `==` of canonical "
            "`RegisterLayout`s, and a numpy table; median wall time. Text-to-verdict is also timed cold (empty "
            "parse cache) and warm, against the framework's own objects-to-verdict. The full table is "
            "`results/bench_peers.md`.", ""]
    fams: dict[str, list[dict]] = {}
    for r in d["rows"]:
        fams.setdefault(r["family"], []).append(r)
    rows = []
    for fam, rs in fams.items():
        ratios = [r["ratio_compare"] for r in rs if r.get("ratio_compare") is not None]
        warm = [r["ratio_text_warm"] for r in rs if r.get("ratio_text_warm") is not None]
        cold = [r["ratio_text_cold"] for r in rs if r.get("ratio_text_cold") is not None]
        rows.append([fam, len(rs), f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-",
                     f"{sum(x <= 1 for x in ratios)} of {len(ratios)}",
                     f"{sum(x <= 1 for x in warm)} of {len(warm)}" if warm else "-",
                     f"{sum(x <= 1 for x in cold)} of {len(cold)}" if cold else "-"])
    out += table(["pairs", "rows", "ours / fastest peer", "compare no slower", "text warm no slower",
                  "text cold no slower"], rows)
    ratios = [r["ratio_compare"] for r in d["rows"] if r.get("ratio_compare") is not None]
    agree = sum(not r.get("mismatches") for r in d["rows"])
    out += ["", f"Our compare was no slower than the fastest peer on {sum(x <= 1 for x in ratios)} of {len(ratios)} "
            f"rows (highest ratio {max(ratios):.2f}); verdicts agreed with every peer on {agree} of {len(d['rows'])} "
            "rows. A ratio is our time over the fastest peer's: below 1 we are faster.", ""]
    return out


# ---------------------------------------------------------------------------------------------
def nonf2_section() -> list[str]:
    d = load("bench_sweep_nonf2.json")
    if d is None:
        return []
    out = header("Non-F2 sweep", ["bench_sweep_nonf2.json"], d, note=d.get("note"))
    c = d["cpu_ms"]
    out += [f"`python benchmarks/bench_sweep_nonf2.py`: {d['pairs']:,} seeded pairs up to {d['max_locations']:,} "
            "hardware locations (mixed-radix layouts against rewritten, refactored and near-miss versions; XOR and "
            "rotation swizzles over non-power-of-two row counts), each proved with `auto` and checked against the "
            "table method, the small ones also against a brute-force verdict from Python sets.", ""]
    out += table(["unknown", "CPU ms p50", "p99", "max", "over 100 ms", "methods", "disagreements",
                  "bad witnesses", "brute-force checked"],
                 [[d["unknown"], f(c["p50"]), f(c["p99"]), f(c["max"], 1), d["over_100ms"], _counts(d["methods"]),
                   d["n_disagreements"], d["n_bad_witnesses"], f"{d['brute_checked']:,}"]])
    out += ["", f"Peak memory of the 20 largest proofs: {d['peak_memory_mb_largest20']['max']:.2f} MB.", ""]
    return out


def triton_sweep_section() -> list[str]:
    d = load("bench_sweep_triton.json")
    if d is None:
        return []
    out = header("Triton sweep throughput", ["bench_sweep_triton.json"], d, note=d.get("note"))
    out += [f"`python benchmarks/bench_sweep_triton.py`: {d['pairs']:,} pairs of {d['distinct_layouts']} distinct "
            "Triton layouts (blocked, mma v2/v3 and their `#ttg.linear` spellings at 64x64 and 128x128), text in, "
            "through `prove_specs` (each text parsed once, canonical forms first), on one core; a sample is "
            "re-proved with `compare` on freshly parsed layouts.", ""]
    out += table(["pairs per CPU second", "CPU s", "verdicts", "errors", "re-proved", "mismatches"],
                 [[f"{d['pairs_per_cpu_s']:,.0f}", f(d["cpu_s"], 3), _counts(d["verdicts"]), d["errors"], d["checked"],
                   len(d["mismatches"])]])
    return out + [""]


def sweep_section() -> list[str]:
    out: list[str] = []
    d = load("bench_sweep_16core.json")
    if d is not None:
        out += header("Sweep scaling on 16 cores", ["bench_sweep_16core.json"], d)
        out += [f"`python benchmarks/bench_sweep.py --pairs {d['pairs_requested']} --no-ray --cores {d['max_workers']} "
                f"--hardware N --spin N --repeats {d['repeats']}` ({d['machine'].get('cpu_model', '?')}, "
                f"{d['machine'].get('physical_cores', '?')} cores, {d['machine'].get('threads_per_core', '?')} "
                f"thread per core): each worker count run {d['repeats']} times, interleaved; medians. Method: "
                f"{d['method']}. Goal: {d['goal']}.", ""]
        rows = [[r["workers"], f"{r['pairs_per_second_median']:,.0f}", f"{r['spread']:.2f}", f(r["scaling_efficiency"], 3),
                 f(r["cpu_efficiency"], 3), f(r["busy_fraction_median"], 3), f(r["coordinator_cpu_share_max"], 3)]
                for r in d["table"] if r["backend"] == "processes"]
        out += table(["workers", "pairs/s (median)", "spread", "scaling efficiency", "per CPU second vs one worker",
                      "busy", "coordinator CPU share (max)"], rows)
        spin = {r["processes"]: r["per_process_vs_one"] for r in d.get("spin_table") or []}
        hw = {r["processes"]: r["per_process_vs_one"] for r in d.get("hardware_table") or []}
        if spin or hw:
            out += ["", "The machine alone, with no sweep around it: per-process speed per CPU second with W processes "
                        "busy, against one (`--hardware`: the same evaluation in W processes, no coordinator; "
                        "`--spin`: a compute-only loop that shares no data).", ""]
            out += table(["processes", "evaluation only (--hardware)", "compute only (--spin)"],
                         [[w, f(hw.get(w), 3), f(spin.get(w), 3)] for w in sorted(set(spin) | set(hw))])
        met = d["goals"]["met"]
        out += ["", "Goals as the file judges them: " + "; ".join(
            f"{k}: {'not judged' if v is None else 'met' if v else 'not met'}" for k, v in met.items()) + ".", ""]
    d = load("bench_sweep.json")
    if d is not None:
        out += header("Sweep scaling, development machine", ["bench_sweep.json"], d)
        out += [f"`python benchmarks/bench_sweep.py`: {d['pairs_requested']:,} Triton encoding pairs with 1, 2, ... "
                f"workers. Load average before the run: {', '.join(f'{x:.2f}' for x in d['load_average_before'])} "
                "(a shared machine: wall-clock efficiency means little there; the coordinator's CPU share does).", ""]
        rows = [[r["backend"], r["workers"], f"{r['pairs_per_second']:,.0f}", f"{r['pairs_per_worker_cpu_second']:,.0f}",
                 f(r.get("busy_fraction"), 3), f(r.get("coordinator_cpu_share"), 3), r["errors"]] for r in d["runs"]]
        out += table(["backend", "workers", "pairs/s", "pairs per worker CPU s", "busy", "coordinator CPU share",
                      "errors"], rows)
        out += [""]
    return out


def service_section() -> list[str]:
    d = load("bench_service.json")
    if d is None:
        return []
    out = header("Service", ["bench_service.json"], d)
    g = d["goals"]
    out += [f"`python benchmarks/bench_service.py`: {d['clients']} clients x {d['requests_per_client']} mixed "
            "prove/analyze/show requests (half repeated; Triton blocked pairs up to 128x128) against "
            f"`layoutverify serve` with {d['workers']} workers, on SQLite and on a PostgreSQL it starts; then the "
            "server is killed with `kill -9` and restarted, and every acknowledged result must still be there. "
            f"Goals: cached p50 under {g['cached_p50_ms']} ms, uncached prove p99 under {g['cold_prove_p99_ms']} ms.", ""]
    rows = []
    for name, s in d["stores"].items():
        lat = s["latency_ms"]
        rows.append([name, f"{s['requests_per_s']:,.0f}", f"{f(lat['all_cached']['p50'], 1)} / {f(lat['all_cached']['p99'], 1)} ms",
                     f"{f(lat['prove_cold']['p50'], 1)} / {f(lat['prove_cold']['p99'], 1)} ms",
                     f"{s['errors']}, {s['lost_results']}",
                     f"{s['kill9']['acknowledged_before_kill']}, {s['kill9']['missing_after_restart']}"])
    out += table(["store", "requests/s", "cached p50 / p99", "uncached prove p50 / p99", "errors, lost",
                  "acknowledged before kill -9, missing after restart"], rows)
    return out + [""]


# ---------------------------------------------------------------------------------------------
def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def service_scaling_section() -> list[str]:
    d = load("bench_service_scaling.json")
    if d is None:
        return []
    doc = dict(d, date=(d.get("machine") or {}).get("date"))
    out = header("Service on several processes", ["bench_service_scaling.json"], doc)
    out += [f"`python benchmarks/bench_service.py --scaling 1,2,4 --loads 8x1,8x4 --listen shared,own` over "
            f"{d.get('store', 'PostgreSQL')}: {d['method']}. Goal: at least "
            f"{(d.get('goal') or {}).get('speedup_1_to_2', 1.6)}x the cached requests/s of one process with two.", ""]
    rows = [[t["processes"], t["listen"], t["load"], f"{t['requests_per_s_median']:,.0f}", f"{t['speedup']:.2f}",
             " ".join(f"{x:.2f}" for x in t["server_cpu_utilization"]), t["errors"]] for t in d["table"]]
    out += table(["processes", "listening", "load (clients x connections)", "cached requests/s (median)",
                  "x one process", "server processes busy", "errors"], rows)
    return out + [""]


def conversions_section() -> list[str]:
    files = sorted(p.name for p in RESULTS.glob("conversions_*.json"))
    bases = [n for n in files if "_run" not in n]
    out: list[str] = []
    for base in bases:
        d = load(base)
        dev = d["device"]
        repeats = [n for n in files if n.startswith(base[:-5] + "_run")]
        out += [f"## Conversions on {dev['name']}", "",
                f"Results: `results/{base}` (and its plot `results/{base[:-5]}.png`); device: {dev['name']}, "
                f"{dev['sms']} SMs, {dev['sm_clock_mhz_max']:.0f} MHz maximum SM clock, driver {dev['driver']}, "
                f"Triton {d['triton']}, torch {dev.get('torch', '?')}; date: {d['date']}.", "",
                "`python benchmarks/gpu_conversions.py` on a GPU: for each pair of "
                "`corpora/conversion_suite.toml`, every element is tagged, converted and read back; the PTX the GPU "
                "ran is executed on the PTX interpreter; the time is the slope over repetition counts of a loop of "
                "conversions in 64 CTAs per SM, per CTA and conversion; the fraction of the shared-memory bound "
                "(128 B per clock per SM) is given per useful byte (2 x tile) and per byte moved.", ""]
        rs = d["results"]
        out += [f"Pairs: {len(rs)}; readback correct: {sum(r['readback']['ok'] for r in rs)}; interpreter agrees with "
                f"the GPU: {sum(r['interpreter_agrees'] for r in rs)}; emitted mechanism predicted: "
                f"{sum(r['prediction_ok'] for r in rs)}; errors: {len(d['errors'])}.", ""]
        fams: dict[str, list[dict]] = {}
        for r in rs:
            fams.setdefault(r["pair"]["family"], []).append(r)
        rows = []
        for fam, xs in sorted(fams.items()):
            useful = [r["fraction_of_bound_useful"] for r in xs if r.get("fraction_of_bound_useful") is not None]
            moved = [r["fraction_of_bound_moved"] for r in xs if r.get("fraction_of_bound_moved") is not None]
            ns = [r["timing"]["ns_per_conversion"] for r in xs]
            rows.append([fam, len(xs), f"{min(ns):.1f}-{max(ns):.1f}",
                         f"{_pct(min(useful))}-{_pct(max(useful))}" if useful else "-",
                         f"{_pct(min(moved))}-{_pct(max(moved))}" if moved else "-"])
        out += table(["family", "pairs", "ns per conversion", "fraction of bound (useful bytes)",
                      "fraction of bound (bytes moved)"], rows)
        out += [""]
        for rep in repeats:
            out += _repeat(d, load(rep), rep)
    return out


def _repeat(base: dict, rep: dict, name: str) -> list[str]:
    """A repeat run against the first: per-pair differences, and the predictions it stores."""
    first = {r["pair"]["name"]: r["timing"]["ns_per_conversion"] for r in base["results"]}
    diffs, big = [], []
    for r in rep["results"]:
        a, b = first.get(r["pair"]["name"]), r["timing"]["ns_per_conversion"]
        if a:
            diffs.append(abs(b - a) / a)
            if a > 5:
                big.append(abs(b - a) / a)
    above = [r for r in rep["results"] if r["timing"]["ns_per_conversion"] > 5 and r.get("predicted_ns") is not None]
    misses = []
    for r in above:
        m = r["timing"]["ns_per_conversion"]
        err = (r["predicted_ns"] - m) / m
        if abs(err) > 0.2:
            misses.append(f"`{r['pair']['name']}` {100 * err:+.0f}%")
    dev = rep["device"]
    return [f"Repeat `results/{name}` ({dev['name']}, Triton {rep['triton']}, date {rep['date']}): "
            f"{len(rep['results'])} pairs; per pair it differs from the first run by a median of "
            f"{100 * statistics.median(diffs):.1f}% (at most {100 * max(big):.1f}% on pairs above 5 ns). "
            f"The prediction it records (`predicted_ns`) is within 20% of its measurement for "
            f"{len(above) - len(misses)} of its {len(above)} pairs above 5 ns"
            + (f"; the misses: {', '.join(misses)}." if misses else "."), ""]


# ---------------------------------------------------------------------------------------------
INTRO = [
    "# Benchmarks",
    "",
    "<!-- Written by benchmarks/make_readme.py from benchmarks/results/*.json: edit that script, not this page. -->",
    "",
    "Performance is measured here, never in timed tests: each script runs its work and its baselines in one",
    "process and writes a JSON file with the machine and the date into `benchmarks/results/`; this page is",
    "generated from those files (`python benchmarks/make_readme.py`), so it states only what they hold.",
    "The development machine has 2 cores shared with other jobs; each section says what its file recorded",
    "about the load.",
    "",
]


#: what the results files that no section above tabulates hold (listed with their machine and date)
OTHER_RESULTS = {
    "bench_shortcuts.json": "`bench_shortcuts.py`: each shortcut that remains after issue 24 against the general path "
                            "it stands for, end to end, in CPU time (docs/ARCHITECTURE.md)",
    "bench_sweep_32core_16workers.json": "`bench_sweep.py --cores 16 --spin` on a 32-core device machine: 16 "
                                         "workers with cores to spare (the compute-only loop still runs at 0.71 "
                                         "of one process's speed with 16 busy)",
    "bench_sweep_16core_nospin.json": "a 16-core sweep run of the same code before `--spin` existed",
    "bench_sweep_16core_run1.json": "the first 16-core run of the sharded sweep (before the locality order and the "
                                    "per-share parse memo)",
    "bench_sweep_16core_run2.json": "its repeat, back to back",
    "bench_sweep_before.json": "`bench_sweep_before.py`: the sweep before the sharded rework (296e415) against after, "
                               "interleaved, in CPU time",
    "bench_sweep_perf26.json": "`bench_sweep_before.py`: the locality order and per-share parse memo against the code "
                               "before them, in CPU time",
    "bench_validate_kernels.json": "`bench_validate_kernels.py`: whole-kernel validation time and memory per corpus "
                                   "kernel (docs/guides/validate-kernels.md)",
    "validate_regression.json": "`validate` of the int8 conversion of Triton issue #3580 on every release 2.3 - 3.9 "
                                "(docs/guides/validate-conversions.md)",
    "validate_suite.json": "`benchmarks/validate_suite.py`: the conversion suite validated with Triton 3.6 - 3.9 on "
                           "sm_80 and sm_90",
    "validate_suite_legacy.json": "the same with Triton 2.3 - 3.5",
}


def other_results_section(cited: str) -> list[str]:
    out = []
    for p in sorted(RESULTS.glob("*.json")):
        if f"results/{p.name}" in cited:
            continue
        d = json.loads(p.read_text())
        what = OTHER_RESULTS.get(p.name, d.get("kind") or d.get("benchmark") or "")
        out.append(f"- `results/{p.name}`: {what}; machine: {machine(d)}; date: {when(d)}.")
    return (["## Other results", ""] + out + [""]) if out else []


def render() -> str:
    parts = INTRO[:]
    for section in (prove_section, peers_section, nonf2_section, triton_sweep_section, sweep_section,
                    service_section, service_scaling_section, conversions_section):
        parts += section()
    parts += other_results_section("\n".join(parts))
    while parts and not parts[-1]:
        parts.pop()
    return "\n".join(parts) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when benchmarks/README.md is not current")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        if not README.exists() or README.read_text() != text:
            print("benchmarks/README.md is not current: run python benchmarks/make_readme.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(text)
    print(f"wrote {README}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
