#!/usr/bin/env bash
# Fill .whl/ (at the repository root, ignored by git) with the wheels that
# benchmarks/device/sweep16.sh installs on the device machine, which has Python 3.12, numpy
# and Triton but no network and none of our other dependencies:
#
#   layoutverify-<version>-py3-none-any.whl   this checkout, built here (pure Python)
#   z3_solver-5.4.1.0-py3-none-manylinux_2_27_x86_64.whl   only with WITH_Z3=1 (38 MB): the
#       benchmark's points are all decided without z3 (F2 and normal forms; bench_sweep.py
#       fails if any point errors), so it is left out by default to keep the carried tree small
#
# numpy (2.x) is preinstalled there and is the only other module the sweep imports.
#
#   bash benchmarks/device/fetch_wheels.sh            # then run sweep16.sh with carry [".whl"]
#   WITH_Z3=1 bash benchmarks/device/fetch_wheels.sh
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
exclude="$(git rev-parse --git-path info/exclude)"
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.whl/' "$exclude" 2>/dev/null || echo '/.whl/' >> "$exclude"
mkdir -p .whl
rm -f .whl/layoutverify-*.whl                      # one version of each wheel
python3 -m pip wheel --no-deps --no-build-isolation -q -w .whl . \
  || python3 -m pip wheel --no-deps -q -w .whl .
if [ "${WITH_Z3:-0}" = 1 ]; then
  rm -f .whl/z3_solver-*.whl
  python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl z3-solver==5.4.1.0
fi
ls -l .whl
