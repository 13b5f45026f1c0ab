"""Under ``CI=true`` a missing oracle fails the run instead of skipping it (``tests/conftest.py``).

A small test directory with this suite's ``conftest.py`` (and the modules it uses) is run by
pytest in a subprocess, with and without ``CI=true``: a test that skips because something is
missing, a module skipped at import (``pytest.importorskip``) and a GPU test. Out of CI all three
skip; in CI the first two fail the run, naming what is missing, and the GPU test still skips (CI
machines have no GPU).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

SAMPLE = '''
import pytest

def test_needs_an_oracle():
    pytest.skip("the frobnicator oracle is not installed")

@pytest.mark.gpu
def test_on_a_gpu():
    assert False, "never runs without a GPU"
'''
MODULE_SKIP = '''
import pytest
pytest.importorskip("no_such_oracle_module")

def test_never():
    pass
'''


def _run(tmp_path: Path, ci: bool) -> subprocess.CompletedProcess:
    for name in ("conftest.py", "oracle_envs.py", "triton_releases.py"):
        shutil.copy2(TESTS / name, tmp_path / name)
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    (tmp_path / "test_module_skip.py").write_text(MODULE_SKIP)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: needs a GPU\n")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["LV_NO_DOWNLOADS"] = "1"            # the guard is under test, not the oracle environments
    env["LV_ORACLE_CACHE"] = str(tmp_path / "empty-cache")
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_out_of_ci_missing_oracles_skip(tmp_path):
    r = _run(tmp_path, ci=False)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "3 skipped" in r.stdout, r.stdout[-3000:]


def test_in_ci_missing_oracles_fail_and_gpu_tests_skip(tmp_path):
    r = _run(tmp_path, ci=True)
    assert r.returncode != 0, r.stdout[-3000:]
    out = r.stdout
    # the test that skips fails; the module skipped whole fails the run at its end, after every other
    # test ran (a collection error would have stopped the run); the GPU test skips
    assert "1 failed" in out and "2 skipped" in out, out[-3000:]
    assert "skipped under CI=true" in out and "frobnicator" in out
    assert "FAILED test_module_skip.py: " in out and "no_such_oracle_module" in out
    assert "SKIPPED [1] test_sample.py:7: needs an NVIDIA GPU" in out
