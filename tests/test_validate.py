"""``layoutverify validate A B`` (:mod:`layoutverify.apps.validation`) and ``scan --validate``.

The oracle is the PTX that the real Triton compiles, executed on the PTX interpreter, against
``B``'s canonical form from the adapters. The conversion suite (73 pairs) is validated for every
supported release (3.6 - 3.9) on sm_90 and on the sm_80 subset of ``test_ptxsim.py`` (the
compiled kernels are shared with that file through the session's kernel cache); the full
release x target matrix is ``benchmarks/validate_suite.py`` (result in
``benchmarks/results/validate_suite.json``). A wrong verdict carries a counterexample that is
re-checked here against the layouts' own tables.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from layoutverify.adapters.triton import version
from layoutverify.apps.cli import main
from layoutverify.apps.measure.suite import load_suite
from layoutverify.apps.validation.conversion import Conversion, check, compile_case, layouts, validate_many

BLOCKED_A = "triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
BLOCKED_B = "triton:#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>"
LINEAR_A = ("triton:#ttg.linear<{register = [[0, 1]], lane = [[0, 2], [0, 4], [0, 8], [1, 0], [2, 0]], "
            "warp = [], block = []}>")
LINEAR_B = ("triton:#ttg.linear<{register = [[1, 0]], lane = [[0, 1], [0, 2], [0, 4], [0, 8], [2, 0]], "
            "warp = [], block = []}>")


class _Fixture:
    """``validate_many``'s interpreters, from the ``triton_python`` fixture (skips or fails under CI)."""

    def __init__(self, triton_python):
        self.resolve = triton_python


@pytest.fixture(scope="session")
def kernel_cache(tmp_path_factory):
    # the folder of conftest's suite_ptx: kernels compiled by test_ptxsim.py are reused, and back
    return str(tmp_path_factory.getbasetemp() / "lv_suite_ptx")


def _run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def recheck(first: dict, a, b, *, register_order: bool = True) -> None:
    """A reported wrong element, re-checked on the layouts' tables: ``B`` puts ``expected`` at
    ``b_location`` (or, up to register order, in that thread), ``A`` holds ``expected`` (and
    ``received``) where the report says, and the location did not receive ``expected``."""
    def holder(layout, loc):
        hw = layout.hardware_indices()
        names = layout.in_names
        row = np.all([hw[:, names.index(k)] == v for k, v in loc.items() if k in names], axis=0)
        return {int(e) for e in layout.flat_table()[row]}

    flat = lambda coords: int(np.ravel_multi_index(tuple(coords), b.out_sizes))  # noqa: E731
    loc = first["b_location"]
    if register_order:
        assert holder(b, loc) == {flat(first["expected"])}
    else:
        thread = {k: v for k, v in loc.items() if k != "register"}
        assert flat(first["expected"]) in holder(b, thread)
    assert flat(first["expected"]) in holder(a, first["expected_held_in_a_at"])
    assert first["received"] != first["expected"]
    if first["received_held_in_a_at"] is not None:
        assert flat(first["received"]) in holder(a, first["received_held_in_a_at"])


@pytest.mark.parametrize("release", version.SUPPORTED)
def test_suite_is_correct_on_sm90(triton_python, kernel_cache, release):
    suite = load_suite()
    convs = [Conversion(p.a, p.b, tuple(p.shape), p.dtype, 90, release) for p in suite]
    results = validate_many(convs, interpreters=_Fixture(triton_python), cache_dir=kernel_cache)
    bad = [(p.name, v.verdict, v.reason, v.first_wrong) for p, v in zip(suite, results) if v.verdict != "correct"]
    assert not bad, bad[:5]
    assert len(results) == 73
    assert all(v.triton.startswith(release + ".") for v in results)
    assert all(v.output_ok and v.register_order and v.locations > 0 for v in results)


@pytest.mark.parametrize("release", version.SUPPORTED)
def test_suite_subset_is_correct_on_sm80(triton_python, kernel_cache, release):
    # the pairs of test_ptxsim.test_sm80_subset (fp8 needs sm_89); the full sm_80 suite is in the benchmark
    picked = [p for p in load_suite() if p.family in ("blocked-transpose", "mma-dot", "linear-shuffle")
              and p.dtype != "fp8"][:10]
    convs = [Conversion(p.a, p.b, tuple(p.shape), p.dtype, 80, release) for p in picked]
    results = validate_many(convs, interpreters=_Fixture(triton_python), cache_dir=kernel_cache)
    assert [v.verdict for v in results] == ["correct"] * 10, [(p.name, v.reason) for p, v in zip(picked, results)]


def test_cli_correct(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("LV_TRITON_CACHE", str(tmp_path))
    rc, out, err = _run(capsys, "validate", BLOCKED_A, BLOCKED_B, "--shape", "64x64", "--triton-version", "3.9")
    assert rc == 0, err
    assert out.startswith("correct: Triton 3.9") and "4096 locations" in out and "shared memory" in out
    rc, out, _ = _run(capsys, "validate", LINEAR_A, LINEAR_B, "--shape", "4x16", "--dtype", "f32",
                      "--triton-version", "3.9", "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["kind"] == "validation" and doc["verdict"] == "correct"
    assert doc["conversion"]["shape"] == [4, 16] and doc["conversion"]["arch"] == "sm_90"
    assert doc["locations"] == 32 * 2 and doc["n_wrong"] == 0 and doc["first_wrong"] is None
    assert doc["ptx_class"] == "shuffle"
    assert list((tmp_path / "kernels").glob("*.json")), "the compiled kernel is cached"


def _compiled(c: Conversion) -> tuple[dict, dict]:
    from layoutverify.apps.validation.compile import compile_cases
    case = compile_case(c, 0)
    return case, compile_cases([case], python=sys.executable, version=__import__("triton").__version__)[0]


def test_wrong_shuffle_lane_names_the_first_wrong_element():
    """A conversion by warp shuffles whose PTX is corrupted (one source lane changed): wrong, and
    the counterexample holds on the layouts."""
    p = next(p for p in load_suite() if p.name == "linear-shuffle-1-f32-16x32")
    c = Conversion(p.a, p.b, tuple(p.shape), p.dtype, 90, version.installed() or "3.9")
    case, answer = _compiled(c)
    assert check(c, answer, compiled_case=case).verdict == "correct"
    ptx = answer["ptx"]
    m = re.search(r"(shfl\.sync\.\w+\.b32\s+[^,]+,\s*[^,]+,\s*)(\d+)(,)", ptx)
    assert m, "the shuffle conversion's PTX has a shuffle with an immediate lane"
    bad = dict(answer, ptx=ptx[:m.start(2)] + str(int(m.group(2)) ^ 1) + ptx[m.end(2):])
    v = check(c, bad, compiled_case=case)
    assert v.verdict == "wrong" and v.exit_code == 1 and v.n_wrong > 0
    a, b = layouts(c)
    recheck(v.first_wrong, a, b)
    assert set(v.first_wrong["b_location"]) == {"register", "lane", "warp", "block"}


def test_missing_barrier_is_wrong():
    c = Conversion(BLOCKED_A, BLOCKED_B, (64, 64), "f16", 90, version.installed() or "3.9")
    case, answer = _compiled(c)
    v = check(c, dict(answer, ptx=re.sub(r"\bbar\.sync\s+0;", "", answer["ptx"])), compiled_case=case)
    assert v.verdict == "wrong" and "race" in v.reason


def test_unknown_instruction_is_not_validated():
    c = Conversion(BLOCKED_A, BLOCKED_B, (64, 64), "f16", 90, version.installed() or "3.9")
    case, answer = _compiled(c)
    bad = re.sub(r"(\bbar\.sync\s+0;)", r"tanh.approx.f32 %f1, %f2;\n\t\1", answer["ptx"], count=1)
    v = check(c, dict(answer, ptx=bad), compiled_case=case)
    assert v.verdict == "unsupported" and v.exit_code == 2 and "tanh.approx.f32" in v.reason


@pytest.mark.parametrize("argv, needle", [
    (["validate", "triton:#ttg.blocked<{sizePerThread = [1]}>", BLOCKED_B, "--shape", "64x64"], "blocked"),
    (["validate", BLOCKED_A, BLOCKED_B], "shape"),
    (["validate", BLOCKED_A, BLOCKED_B, "--shape", "64x64", "--triton-version", "1.0"], "1.0"),
    (["validate", BLOCKED_A, BLOCKED_B, "--shape", "64x64", "--dtype", "fp8", "--arch", "sm_80"], "sm_89"),
    (["validate", BLOCKED_A, BLOCKED_B, "--shape", "64x64", "--arch", "sm_70"], "sm_70"),
    (["validate", BLOCKED_A, "cute:(4,8):(8,1)", "--shape", "64x64"], "4096"),
    (["validate", BLOCKED_A, "no-such-file.ttgir"], "no-such-file.ttgir"),
    (["validate", BLOCKED_A, BLOCKED_A, BLOCKED_B, "--shape", "64x64"], "3 inputs"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, needle):
    rc, out, err = _run(capsys, *argv)
    assert rc == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and needle in err and "Traceback" not in err


def test_paths_form_is_the_kernel_validation(capsys, tmp_path):
    """Paths go to whole-kernel validation (tests/test_validate_kernels.py), whose bad input is
    one line too: a lone TTGIR file is not a kernel's TTIR and PTX."""
    (tmp_path / "k.ttgir").write_text("module {}\n")
    rc, out, err = _run(capsys, "validate", tmp_path / "k.ttgir")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "one .ttir and one .ptx" in err, err


def test_no_network_is_one_clear_line(tmp_path, cli_env):
    """A release that must be installed, with pip unable to reach an index: a notice, then one
    error line, exit 2 (the cache folder is empty, so nothing is reused)."""
    env = dict(cli_env, LV_TRITON_CACHE=str(tmp_path), PIP_NO_INDEX="1", PIP_FIND_LINKS="", LV_TRITON_PYTHONS="")
    env.pop("CI", None)
    out = subprocess.run([sys.executable, "-m", "layoutverify.apps.cli", "validate", BLOCKED_A, BLOCKED_B,
                          "--shape", "64x64", "--triton-version", "2.1"], capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert lines[0].startswith("layoutverify: installing Triton 2.1.0 into ")
    assert len(lines) == 2 and lines[1].startswith("layoutverify: error: no environment with Triton 2.1:")
    assert not any(p.name.endswith(".partial") for p in tmp_path.iterdir())


def test_scan_validate(capsys, repo_root, monkeypatch, tmp_path):
    """Every distinct convert_layout of the Triton 3.9 scan fixtures (sm_90 and sm_100), validated
    once per (A, B, shape, dtype, target, release)."""
    monkeypatch.setenv("LV_TRITON_CACHE", str(tmp_path))
    rc, out, err = _run(capsys, "scan", repo_root / "tests/data/scan/triton-3.9", "--validate", "--json", "-")
    assert rc == 0, err
    v = json.loads(out)["validation"]
    assert v["verdicts"] == {"correct": v["distinct"], "wrong": 0, "unsupported": 0} and v["distinct"] >= 4
    keys = {(json.dumps(e["conversion"], sort_keys=True)) for e in v["results"]}
    assert len(keys) == v["distinct"], "one entry per distinct conversion"
    assert v["ops"] > v["distinct"], "equal conversions of several ops are validated once"
    assert {e["conversion"]["arch"] for e in v["results"]} == {"sm_90", "sm_100"}
    assert all(e["triton"] == "3.9.0" for e in v["results"])
    rc, out, err = _run(capsys, "scan", repo_root / "tests/data/scan/triton-3.9", "--validate", "--quiet")
    assert rc == 0 and re.search(r"validate: \d+ distinct conversions \(\d+ ops\): \d+ correct, 0 wrong", out)
