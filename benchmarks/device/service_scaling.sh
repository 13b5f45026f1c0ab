#!/usr/bin/env bash
# Horizontal service on the 16-core device machine: `bench_service.py --scaling 1,2,4` (cached
# requests/s of `layoutverify serve --processes P` over one PostgreSQL store). That machine has
# Python 3.12 and no network, so first, here:
#
#   bash benchmarks/device/fetch_service_deps.sh          # fills .whl/ and .pg/ (about 40 MB)
#
# then, with the device tool:
#
#   run(command="bash benchmarks/device/service_scaling.sh", carry=[".whl", ".pg"], timeout_s=600)
#
# It measures, two rounds, each P in {1, 2, 4} under two loads: 8x1 (8 client processes with one
# connection each: the load of the first device run) and 8x4 (32 connections: every server
# process kept busy however the connections are spread), and for P > 1 both ways of listening:
# `own` (a socket per process, SO_REUSEPORT: LAYOUTVERIFY_SERVE_OWN_SOCKETS=1) and `shared` (one
# socket all processes accept from: what serve --processes does, measured the better of the two). Each window (8 s) follows a warm-up; answers come from each process's memory
# (the store's CPU per request, printed, must be about 0).
#
# Expected: errors 0 in every row; "1 -> 2 processes (shared socket, load 8x4): X x" with X >= 1.6
# (the goal of issue 26); and in the rows, "server processes busy [...]": with own sockets every
# process about equally busy; with a shared socket under 8x1, one process busier than the others
# if the kernel hands new connections to whichever process wakes first (the cause found for 1.5x).
# Results: $OUT/bench_service_scaling.json (copy it to benchmarks/results/) and the log.
# (PROCS, LOADS, LISTEN, WINDOW, WARMUP, REPEATS, SITE, LV and PGROOT override 1,2,4, 8x1,8x4,
# own,shared, 8, 2, 2, /tmp/site, /tmp/lv and /opt/lvpg for a dry run elsewhere.)
set -euo pipefail
cd "$(dirname "$0")/../.."
PROCS=${PROCS:-1,2,4} LOADS=${LOADS:-8x1,8x4} LISTEN=${LISTEN:-shared,own}
WINDOW=${WINDOW:-8} WARMUP=${WARMUP:-2} REPEATS=${REPEATS:-2}
SITE=${SITE:-/tmp/site} LV=${LV:-/tmp/lv} PGROOT=${PGROOT:-/opt/lvpg}
OUT=${OUT:-/tmp/lv-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/service_scaling.log") 2>&1
echo "cores: $(nproc); $(python3 --version); load: $(cat /proc/loadavg)"

# -- Python packages: the service extra, then layoutverify itself from this tree ------------------
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl
export PYTHONPATH=$SITE
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --no-cache-dir --target "$LV" .
export PYTHONPATH=$LV:$SITE
python3 -c "import layoutverify.apps.service.app, layoutverify; print('layoutverify', layoutverify.__version__)"

# -- PostgreSQL: Debian's binaries, unpacked in $PGROOT; their libraries only for them ----------
ver=$(cat .pg/VERSION)
rm -rf "$PGROOT" && mkdir -p "$PGROOT/wrap" && tar -C "$PGROOT" -xJf .pg/postgresql.tar.xz
libs=$PGROOT/usr/lib/x86_64-linux-gnu:$PGROOT/lib/x86_64-linux-gnu
for b in initdb pg_ctl createdb postgres; do
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$libs" "$PGROOT/usr/lib/postgresql/$ver/bin/$b" \
        > "$PGROOT/wrap/$b"
    chmod 755 "$PGROOT/wrap/$b"
done
export PATH="$PGROOT/wrap:$PATH"
if LD_LIBRARY_PATH=$libs ldd "$PGROOT/usr/lib/postgresql/$ver/bin/postgres" | grep "not found"; then
    echo "PostgreSQL misses the libraries above"; exit 1
fi
[ -e /usr/share/zoneinfo/UTC ] || { mkdir -p /usr/share && cp -r "$PGROOT/usr/share/zoneinfo" /usr/share/; }
# the tests' PostgreSQL runs as the user 'postgres' when started by root (tests/service_harness.py)
id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
command -v runuser >/dev/null
chmod -R a+rX "$PGROOT"
initdb --version

# -- the benchmark ----------------------------------------------------------------------------------
PYTHONUNBUFFERED=1 python3 benchmarks/bench_service.py --scaling "$PROCS" --loads "$LOADS" --listen "$LISTEN" \
    --seconds "$WINDOW" --warmup "$WARMUP" --repeats "$REPEATS" --workers 1 --out "$OUT/bench_service_scaling.json"
