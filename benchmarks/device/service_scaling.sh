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
# `own` (a socket per process, SO_REUSEPORT: what serve --processes now does on Linux) and
# `shared` (one socket all processes accept from: uvicorn's process manager, the code of the
# first device run). Each window (8 s) follows a warm-up; answers come from each process's memory
# (the store's CPU per request, printed, must be about 0).
#
# Expected: errors 0 in every row; "1 -> 2 processes (own sockets, load 8x4): X x" with X >= 1.6
# (the goal of issue 26); and in the rows, "server processes busy [...]": with own sockets every
# process about equally busy; with a shared socket under 8x1, one process busier than the others
# if the kernel hands new connections to whichever process wakes first (the cause found for 1.5x).
# Results: $OUT/bench_service_scaling.json (copy it to benchmarks/results/) and the log.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/lv-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/service_scaling.log") 2>&1
echo "cores: $(nproc); $(python3 --version); load: $(cat /proc/loadavg)"

# -- Python packages: the service extra, then layoutverify itself from this tree ------------------
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --no-cache-dir --target /tmp/lv .
export PYTHONPATH=/tmp/lv:/tmp/site
python3 -c "import layoutverify.apps.service.app, layoutverify; print('layoutverify', layoutverify.__version__)"

# -- PostgreSQL: Debian's binaries, unpacked in /opt/lvpg; their libraries only for them ----------
ver=$(cat .pg/VERSION)
rm -rf /opt/lvpg && mkdir -p /opt/lvpg/wrap && tar -C /opt/lvpg -xJf .pg/postgresql.tar.xz
libs=/opt/lvpg/usr/lib/x86_64-linux-gnu:/opt/lvpg/lib/x86_64-linux-gnu
for b in initdb pg_ctl createdb postgres; do
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$libs" "/opt/lvpg/usr/lib/postgresql/$ver/bin/$b" \
        > "/opt/lvpg/wrap/$b"
    chmod 755 "/opt/lvpg/wrap/$b"
done
export PATH=/opt/lvpg/wrap:$PATH
if LD_LIBRARY_PATH=$libs ldd "/opt/lvpg/usr/lib/postgresql/$ver/bin/postgres" | grep "not found"; then
    echo "PostgreSQL misses the libraries above"; exit 1
fi
[ -e /usr/share/zoneinfo/UTC ] || { mkdir -p /usr/share && cp -r /opt/lvpg/usr/share/zoneinfo /usr/share/; }
# the tests' PostgreSQL runs as the user 'postgres' when started by root (tests/service_harness.py)
id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
command -v runuser >/dev/null
chmod -R a+rX /opt/lvpg
initdb --version

# -- the benchmark ----------------------------------------------------------------------------------
PYTHONUNBUFFERED=1 python3 benchmarks/bench_service.py --scaling 1,2,4 --loads 8x1,8x4 --listen own,shared \
    --seconds 8 --warmup 2 --repeats 2 --workers 1 --out "$OUT/bench_service_scaling.json"
