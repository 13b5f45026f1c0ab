"""``validate`` finds a conversion that released Triton really miscompiled, and sees it fixed.

The bug (triton-lang/triton issue #3580, "Chained INT8 dot produces incorrect result"): for
8-bit elements, ``convert_layout`` from the MMAv2 accumulator layout to the dot-operand A layout
of the same parent (``kWidth = 4``) was lowered as a register-only "mma -> dot operand shortcut",
correct for 16-bit elements only: each thread keeps the accumulator's elements, where the
``m16n8k32`` A fragment wants four consecutive ``k`` elements per 32-bit register. Releases 2.3.1,
3.0.0, 3.1.0 and 3.2.0 compile it so (``benchmarks/results/validate_regression.json``); from 3.3
the conversion goes through linear layouts (warp shuffles) and is right.

Before 3.3 Triton cannot store a tensor in a dot-operand layout, and numbers such a tensor's
registers by an older convention, so the check there is per thread, up to register order (a
16-bit control of the same conversion passes it); from 3.3 it is the full register-order check
with the stored tile. Each release runs in its own environment (``tests/triton_releases.py``):
without network these tests skip, except under CI, where they fail.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from layoutverify.apps.cli import main
from layoutverify.apps.validation.conversion import Conversion, layouts

MMA = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 8]}>"
ACC = f"triton:{MMA}"
OPERAND_A = "triton:#ttg.dot_op<{{opIdx = 0, parent = {mma}, kWidth = {k}}}>"


def _validate(capsys, monkeypatch, triton_python, release: str, dtype: str, k_width: int):
    monkeypatch.setenv("LV_TRITON_PYTHONS", triton_python(release))
    argv = ["validate", ACC, OPERAND_A.format(mma=MMA, k=k_width), "--shape", "64x64", "--dtype", dtype,
            "--arch", "sm_80", "--triton-version", release]
    rc_text = main(argv)
    text, _ = capsys.readouterr()
    rc = main(argv + ["--json"])
    out, err = capsys.readouterr()
    assert rc == rc_text, err
    return rc, text, json.loads(out)


def _thread_elements(layout, loc):
    hw = layout.hardware_indices()
    names = layout.in_names
    row = np.all([hw[:, names.index(k)] == v for k, v in loc.items() if k in names and k != "register"], axis=0)
    return {int(e) for e in layout.flat_table()[row]}


def test_int8_accumulator_to_operand_a_was_miscompiled_by_3_2(capsys, monkeypatch, triton_python):
    rc, text, doc = _validate(capsys, monkeypatch, triton_python, "3.2", "i8", 4)
    assert rc == 1 and doc["verdict"] == "wrong" and doc["triton"] == "3.2.0"
    assert text.startswith("WRONG: Triton 3.2.0 (sm_80, i8, 64x64) miscompiles A -> B")
    assert "first wrong: lane " in text and "misses element" in text and "up to register order" in text
    assert doc["register_order"] is False and doc["output_ok"] is None
    assert doc["ptx_class"] == "registers", "the shortcut moves nothing between threads"
    # the counterexample, re-checked on the layouts: the thread at b_location is owed `expected`
    # (B gives it that element), A held it elsewhere, and the thread received an element B does
    # not give it
    c = Conversion(ACC, OPERAND_A.format(mma=MMA, k=4), (64, 64), "i8", 80, "3.2")
    a, b = layouts(c)
    f = doc["first_wrong"]
    owed = _thread_elements(b, f["b_location"])
    flat = lambda xy: int(np.ravel_multi_index(tuple(xy), (64, 64)))  # noqa: E731
    assert flat(f["expected"]) in owed
    assert flat(f["received"]) not in owed
    held = f["expected_held_in_a_at"]
    assert {k: held[k] for k in ("lane", "warp")} != {k: f["b_location"][k] for k in ("lane", "warp")} or \
        flat(f["expected"]) not in _thread_elements(a, f["b_location"])
    assert flat(f["expected"]) in _thread_elements(a, held)
    assert doc["n_wrong"] > doc["locations"] // 2


def test_16bit_control_passes_on_3_2(capsys, monkeypatch, triton_python):
    """The same conversion for f16 (kWidth 2), where the shortcut is right: correct, so the
    per-thread check of the old releases does not flag a right conversion."""
    rc, text, doc = _validate(capsys, monkeypatch, triton_python, "3.2", "f16", 2)
    assert rc == 0 and doc["verdict"] == "correct" and doc["triton"] == "3.2.0", text


def test_fixed_in_3_3(capsys, monkeypatch, triton_python):
    rc, text, doc = _validate(capsys, monkeypatch, triton_python, "3.3", "i8", 4)
    assert rc == 0 and doc["verdict"] == "correct" and doc["triton"] == "3.3.1", text
    assert doc["register_order"] is True and doc["output_ok"] is True
    assert doc["ptx_class"] == "shuffle"


def test_scan_validate_finds_it_in_a_3_2_cache(capsys, monkeypatch, triton_python, tmp_path):
    """A Triton 3.2 cache entry holding the conversion (TTGIR + metadata): ``scan --validate``
    compiles it with 3.2, says wrong, exit 1."""
    monkeypatch.setenv("LV_TRITON_PYTHONS", triton_python("3.2"))
    monkeypatch.setenv("LV_TRITON_CACHE", str(tmp_path / "cache"))
    kernel = tmp_path / "triton" / "abc123"
    kernel.mkdir(parents=True)
    (kernel / "chained.json").write_text(json.dumps({"name": "chained", "triton_version": "3.2.0",
                                                     "target": {"backend": "cuda", "arch": 80, "warp_size": 32},
                                                     "num_warps": 4}))
    dot = OPERAND_A.format(mma=MMA, k=4)[len("triton:"):].replace("#ttg.", "#triton_gpu.")
    mma = MMA.replace("#ttg.", "#triton_gpu.")
    (kernel / "chained.ttgir").write_text(
        f"#mma = {mma}\n"
        f'module attributes {{"triton_gpu.num-ctas" = 1 : i32, "triton_gpu.num-warps" = 4 : i32, '
        f'triton_gpu.target = "cuda:80", "triton_gpu.threads-per-warp" = 32 : i32}} {{\n'
        f"  tt.func public @chained(%arg0: tensor<64x64xi8, #mma>) {{\n"
        f"    %0 = triton_gpu.convert_layout %arg0 : tensor<64x64xi8, #mma> -> tensor<64x64xi8, {dot}>\n"
        f"    tt.return\n  }}\n}}\n")
    rc = main(["scan", str(kernel.parent), "--validate", "--json", "-"])
    out, err = capsys.readouterr()
    assert rc == 1, err
    v = json.loads(out)["validation"]
    assert v["verdicts"]["wrong"] == 1 and v["wrong"] is True
    e = v["results"][0]
    assert e["verdict"] == "wrong" and e["triton"] == "3.2.0" and e["conversion"]["dtype"] == "i8"
    assert e["ops"][0]["kernel"] == "chained"
