#!/usr/bin/env bash
# The 16-core sweep benchmark of issue 26 on the device machine (16 CPU cores; Python 3.12 with
# numpy, no network, none of our other dependencies).
#
# Wheels carried in .whl/ (made here by benchmarks/device/fetch_wheels.sh):
#   layoutverify-<version>-py3-none-any.whl   required (this checkout)
#   z3_solver-5.4.1.0-...manylinux_2_27_x86_64.whl   optional (WITH_Z3=1 there): not used by it
#
# Run from the repository root, on the device, with carry [".whl"]:
#   bash benchmarks/device/sweep16.sh
#
# It installs the wheels into /tmp/site, records the machine (lscpu, /proc/cpuinfo), and runs
#   python3 benchmarks/bench_sweep.py --pairs 1000000 --no-ray --cores 16 --hardware 100000 --repeats 5
# once: every worker count (1, 2, 4, 8, 16) five times, interleaved (ascending, descending,
# ...), and the coordinator-free hardware reference likewise. The JSON (bench_sweep_16core.json:
# every run, and per worker count the median pairs/s, spread, scaling efficiency against the median
# one-worker run, pairs per worker CPU second, busy fraction, coordinator CPU share, and the median
# timeline of a run) and the log go to $OUT (or ./device-out when $OUT is unset).
# The goals: median scaling efficiency >= 0.8 at 16 workers, median >= 600,000 pairs/s, coordinator
# <= 10% in every run.
# (PAIRS, CORES, REPEATS, HARDWARE and SITE override 1000000, 16, 5, 100000 and /tmp/site for a
# dry run elsewhere.)
set -uo pipefail
PAIRS="${PAIRS:-1000000}" CORES="${CORES:-16}" REPEATS="${REPEATS:-5}" HARDWARE="${HARDWARE:-100000}"
SITE="${SITE:-/tmp/site}"
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 RAY_USAGE_STATS_ENABLED=0
ls .whl/layoutverify-*.whl >/dev/null 2>&1 || { echo "no .whl/layoutverify-*.whl: run benchmarks/device/fetch_wheels.sh and carry .whl" >&2; exit 2; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl || exit 1
export PYTHONPATH="$SITE"
# byte-compile once (the install is --no-compile): else 16 workers compile the same modules at once
python3 -m compileall -q "$SITE/layoutverify" >/dev/null || exit 1
python3 -c 'import layoutverify, numpy, sys; print("layoutverify from", layoutverify.__file__, "numpy", numpy.__version__, "python", sys.version.split()[0])' || exit 1
{ nproc; lscpu; echo; head -30 /proc/cpuinfo; echo; uptime; } > "$OUT/machine.txt" 2>&1
tmp=/tmp
if [ -d /dev/shm ] && [ -w /dev/shm ]; then tmp=/dev/shm; fi
python3 benchmarks/bench_sweep.py --pairs "$PAIRS" --no-ray --cores "$CORES" --hardware "$HARDWARE" \
  --spin "${SPIN:-10000000}" --repeats "$REPEATS" --tmp "$tmp" -o "$OUT/bench_sweep_16core.json" 2>&1 | tee "$OUT/bench_sweep_16core.log"
