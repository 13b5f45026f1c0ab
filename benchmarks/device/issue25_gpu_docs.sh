#!/usr/bin/env bash
# Issue 25 on a GPU machine (Python 3.12, torch, Triton 3.6 preinstalled; no z3): the GPU commands
# the documentation shows (docs/guides/gpu-measurement.md, the block marked "# needs a GPU") run
# as written, and benchmarks/gpu_conversions.py still measures when a GPU is there.
#
# Carry: .whl/ holding a z3-solver wheel for Python 3.12 (prepare it here with
#   pip download --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
#       --no-deps -d .whl z3-solver
# ), run from the repository root:  bash benchmarks/device/issue25_gpu_docs.sh
# Expected: both commands exit 0; the first prints "readback: every element where B puts it";
# the second prints "pairs 1; readback ok 1; interpreter agrees 1; emitted predicted 1; errors 0"
# and writes measured/conversions_<GPU>.json; nothing says "needs an NVIDIA GPU".
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -m pip install --no-index --no-deps -q .whl/z3_solver-*.whl
# the package without installing it: its folders laid out under its own name (as the docs build does)
python3 - <<'PY'
import os
from pathlib import Path
root = Path.cwd(); stage = root / "build" / "api-src"
import shutil; shutil.rmtree(stage, ignore_errors=True)
for package, folder in {"layoutverify": "verifier", "layoutverify/adapters": "adapters", "layoutverify/corpora": "corpora"}.items():
    t = stage / package; t.mkdir(parents=True, exist_ok=True)
    for e in (root / folder).iterdir():
        if e.name != "__pycache__" and not (t / e.name).exists():
            os.symlink(e, t / e.name)
PY
export PYTHONPATH="$PWD/build/api-src"
mkdir -p bin && printf '#!/bin/sh\nexec python3 -m layoutverify.apps.cli "$@"\n' > bin/layoutverify && chmod +x bin/layoutverify
export PATH="$PWD/bin:$PATH"
nvidia-smi -L
set -x
layoutverify measure 'triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>' \
    'triton:#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>' --shape 64x64
python3 benchmarks/gpu_conversions.py --only blocked-transpose-1 --out measured
ls measured
