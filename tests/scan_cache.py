"""The tutorial-style kernels of tests/scan_tutorials.py compiled by one Triton release, cached on
disk so that the scan tests compile them once per machine, not once per session.

:func:`compiled_tutorials` returns the Triton cache folder holding every case for every target
of :data:`scan_tutorials.TARGETS` compiled by ``python`` (an interpreter of that release, from
tests/triton_releases.py). The folder is
``<LV_TRITON_CACHE or ~/.cache/layoutverify>/scan-tutorials/<triton version>-<key>/cache``, where
the key hashes the kernels' source file: an edit of the kernels compiles afresh, anything else
reuses the folder (and a new folder replaces the release's older ones). It is built under a
temporary name and renamed when complete, under a file lock (as the release environments are),
so an interrupted compilation is never used and two sessions do not compile at once. ``rows.json`` beside it holds the compiler's per-case answers.
Compiling the 65 cases for five targets takes about a minute per release on two cores.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "scan_tutorials.py"
COMPILE_TIMEOUT_S = 1800


def _key() -> str:
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]


def compiled_tutorials(python: str, version: str, root: Path) -> tuple[Path, list[dict]]:
    """``(cache folder, rows)`` of the tutorial kernels compiled by Triton ``version`` run by
    ``python`` (see the module docstring)."""
    base = root / "scan-tutorials"
    final = base / f"{version}-{_key()}"
    rows_file = final / "rows.json"
    if rows_file.is_file():
        return final / "cache", json.loads(rows_file.read_text())
    base.mkdir(parents=True, exist_ok=True)
    with open(base / f".{final.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if rows_file.is_file():
            return final / "cache", json.loads(rows_file.read_text())
        tmp = base / f"{final.name}.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        env = dict(os.environ, TRITON_CACHE_DIR=str(tmp / "cache"), TRITON_DEFAULT_FP_FUSION="1",
                   PYTHONWARNINGS="ignore")
        p = subprocess.run([python, str(SOURCE), str(tmp / "cache")], env=env, capture_output=True, text=True,
                           timeout=COMPILE_TIMEOUT_S)
        rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
        if p.returncode != 0 or not rows:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError(f"compiling the tutorial kernels with Triton {version} failed (exit {p.returncode}): "
                               f"{p.stderr[-2000:]}")
        (tmp / "rows.json").write_text(json.dumps(rows))
        shutil.rmtree(final, ignore_errors=True)
        os.rename(tmp, final)
        for stale in base.glob(f"{version}-*"):   # compiled from an earlier version of the kernels
            if stale.is_dir() and stale.name != final.name and not stale.name.endswith(".partial"):
                shutil.rmtree(stale, ignore_errors=True)
    return final / "cache", rows


def recompile(python: str, ttgir: Path, target: str, num_stages: int, out: Path) -> dict:
    """Compile one TTGIR module (an edited one) for ``target`` into the Triton cache ``out``."""
    env = dict(os.environ, TRITON_CACHE_DIR=str(out), TRITON_DEFAULT_FP_FUSION="1", PYTHONWARNINGS="ignore")
    p = subprocess.run([python, str(SOURCE), str(out), "--ttgir", str(ttgir), target, str(num_stages)], env=env,
                       capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if not rows:
        return {"error": f"exit {p.returncode}: {p.stderr[-1500:]}"}
    return rows[0]
