"""``layoutverify measure`` and the cost model.

CPU: without a GPU ``measure`` says so in one line and exits 2; the committed H100 results
(``benchmarks/results/``) are complete and consistent (every pair read back correctly, the
interpreter agreeing with the GPU on the PTX the GPU ran, Triton's mechanism predicted); the
cost model's constants are data and re-fitting them from those results reproduces the recorded
held-out error. GPU (marked ``gpu``): ``measure`` on a transposition.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from layoutverify.adapters import parse_spec
from layoutverify.core.cost import (ConversionFacts, constants, estimate_facts, facts_from_traffic,
                                    predicted_conversion_ns, predicted_ns)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "conversions_NVIDIA_H100_80GB_HBM3.json"
B1 = "triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
B2 = "triton:#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>"


def _has_gpu() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.skipif(_has_gpu(), reason="this machine has a GPU")
def test_measure_without_gpu_exits_2():
    p = subprocess.run([sys.executable, "-m", "layoutverify", "measure", B1, B2, "--shape", "64x64"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "GPU" in lines[0] and "Traceback" not in p.stderr


def test_measure_bad_input_exits_2():
    p = subprocess.run([sys.executable, "-m", "layoutverify", "measure", B1, "triton:#ttg.blocked<{oops", "--shape",
                        "64x64"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_committed_results_are_complete():
    doc = json.loads(RESULTS.read_text())
    assert doc["device"]["name"].startswith("NVIDIA H100") and doc["device"]["sms"] == 132
    assert doc["triton"] and doc["date"]
    res = doc["results"]
    assert len(res) >= 60 and not doc["errors"]
    for r in res:
        name = r["pair"]["name"]
        assert r["readback"]["ok"], name
        assert r["interpreter"]["ok"] and r["interpreter_agrees"], name
        assert r["prediction_ok"], name
        t = r["timing"]
        assert t["ctas"] >= 8 * t["sms"] and t["reps"][1] > t["reps"][0]
    # a transposition through shared memory moves exactly 2 x tile bytes
    tr = next(r for r in res if r["pair"]["name"] == "blocked-transpose-1-f16-64x64")
    assert tr["smem_bytes_moved"] == 2 * tr["tile_bytes"] == 16384
    assert 0.3 < tr["fraction_of_bound_useful"] <= 1.05


def test_cost_constants_are_data():
    c = constants("H100")
    assert c["gpu"].startswith("NVIDIA H100") and c["triton"] and c["date"]
    assert set(c["cycles"]) == {"wavefront", "alu", "shuffle", "barrier", "local", "constant"}
    h = constants("NVIDIA H200")
    assert "H200" in h["gpu"]


def test_held_out_error_reproduces():
    """Refitting from the committed results gives the recorded constants' held-out error."""
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fit_cost_model.py"), str(RESULTS)],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    line = next(x for x in out.stdout.splitlines() if x.startswith("held-out:"))
    stats = json.loads(line.split(":", 1)[1])
    recorded = constants("H100")["held_out"]
    assert abs(stats["median_abs_error"] - recorded["median_abs_error"]) < 1e-6
    assert stats["held_out_pairs"] >= 30


def test_held_out_misses_are_flagged_lower_bounds():
    """The recorded held-out error: every held-out pair the model misses by more than 20% is one
    whose loop is spill-dominated (where the prediction is stated to be a lower bound), and each
    such pair's prediction is below its measurement."""
    doc = json.loads(RESULTS.read_text())
    by_name = {r["pair"]["name"]: r for r in doc["results"]}
    held = constants("H100")["held_out"]
    assert held["within_20_percent"] >= 0.9
    for name in held["over_20_percent"]:
        r = by_name[name]
        assert r["predicted_lower_bound"] and r["predicted_ns"] < r["timing"]["ns_per_conversion"], name


def test_results_record_the_kernel_that_ran():
    """Every measured pair records the registers, spills and loop SASS counts of the kernel that ran."""
    doc = json.loads(RESULTS.read_text())
    for r in doc["results"]:
        k = r["timing"]["kernel"]
        assert k["n_regs"] > 0 and k["n_spills"] >= 0 and k["loop"]["total"] > 0, r["pair"]["name"]
        shared = k["loop"]["shared_stores"] + k["loop"]["shared_loads"]
        # a conversion the PTX shows going through shared memory has shared accesses in its loop
        assert (shared > 0) == (r["ptx_class"] == "shared"), r["pair"]["name"]


def test_prediction_grows_with_traffic():
    base = ConversionFacts(warps=4, elements=4096, element_bytes=2)
    shared = facts_from_traffic({"store_wavefronts": 64, "load_wavefronts": 64, "barriers": 2,
                                 "shared_store_bytes": 8192, "shared_load_bytes": 8192}, (64, 64), 2, 4)
    conflicted = facts_from_traffic({"store_wavefronts": 512, "load_wavefronts": 64, "barriers": 2}, (64, 64), 2, 4)
    assert predicted_conversion_ns(base) == 0
    assert 0 < predicted_ns(shared) < predicted_ns(conflicted)
    assert predicted_ns(shared, "H200") > 0


def test_estimated_facts_rank_mechanisms():
    a = parse_spec(B1, shape=(64, 64))
    b = parse_spec(B2, shape=(64, 64))
    ns = {m: predicted_conversion_ns(estimate_facts(a, b, m, 16)) for m in
          ("register_permute", "intra_warp", "intra_cta")}
    assert ns["register_permute"] <= ns["intra_warp"] <= ns["intra_cta"]
    f = estimate_facts(a, b, "intra_cta", 16)
    assert f.shared_store_bytes == f.shared_load_bytes == 8192


@pytest.mark.gpu
def test_measure_on_gpu(tmp_path):
    if not _has_gpu():
        pytest.skip("no CUDA GPU")
    png = tmp_path / "m.png"
    p = subprocess.run([sys.executable, "-m", "layoutverify", "measure", B1, B2, "--shape", "64x64", "--json",
                        "--plot", str(png)], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, TRITON_DEFAULT_FP_FUSION="1"))
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads(p.stdout)
    assert r["readback"]["ok"] and r["interpreter_agrees"] and r["timing"]["ns_per_conversion"] > 0
    assert png.stat().st_size > 1000
