#!/usr/bin/env bash
# Fetch what benchmarks/device/service_scaling.sh needs on the device machine, which has Python
# 3.12 and no network: the service's Python packages as wheels (into .whl/) and Debian's
# PostgreSQL server with the shared libraries it links that another distribution may lack
# (the .deb files unpacked here with dpkg -x, pruned of documentation and JIT bitcode, packed as
# .pg/postgresql.tar.xz). Run here, in the repository root, on the Debian machine (it uses pip
# and apt-get download); then carry both folders:
#
#   bash benchmarks/device/fetch_service_deps.sh
#   run(command="bash benchmarks/device/service_scaling.sh", carry=[".whl", ".pg"], timeout_s=600)
#
# Both folders are ignored by git (.git/info/exclude). Together they stay under the device
# tool's 64 MiB (the script prints their size).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
exclude="$(git rev-parse --git-common-dir)/info/exclude"
for d in /.whl/ /.pg/; do grep -qxF "$d" "$exclude" 2>/dev/null || echo "$d" >> "$exclude"; done

# -- Python: the service extra and its dependencies, for CPython 3.12 on x86-64 Linux -------------
# (a layoutverify wheel made by fetch_wheels.sh stays: one .whl/ then serves sweep16.sh too)
mkdir -p .whl && find .whl -type f -name '*.whl' ! -name 'layoutverify-*' -delete
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl \
    "fastapi>=0.110" "uvicorn>=0.29" "psycopg[binary]>=3.1" "mcp>=2.0" "swagger-ui-bundle-v2>=5" \
    setuptools wheel
# the device has these already (torch's environment); two versions of one package stop the install.
# z3-solver (38 MB) is left out: the benchmark's questions are F2 proofs, which never load z3.
rm -f .whl/numpy-*.whl .whl/typing_extensions-*.whl

# -- PostgreSQL: Debian's server and client binaries, and the libraries they link -----------------
rm -rf .pg && mkdir -p .pg/debs
ver=$(ls /usr/lib/postgresql | sort -n | tail -1)
(cd .pg/debs && apt-get download "postgresql-$ver" "postgresql-client-$ver" libpq5 tzdata >/dev/null)
tmp=$(mktemp -d)
for f in .pg/debs/postgresql-*.deb; do dpkg -x "$f" "$tmp"; done
bins="$tmp/usr/lib/postgresql/$ver/bin"
# every shared library the binaries need, by the Debian package that holds it, except the C
# library's own (libc, libm, ...: any Linux has them, and a newer one runs older programs)
pkgs=$(for b in "$bins"/postgres "$bins"/initdb "$bins"/pg_ctl "$bins"/createdb; do ldd "$b"; done \
       | awk '/=> \// {print $3}' | sort -u | xargs -r -n1 readlink -f \
       | while read -r lib; do dpkg -S "$lib" 2>/dev/null || dpkg -S "${lib#/usr}" 2>/dev/null; done \
       | cut -d: -f1 | sort -u \
       | grep -v -x -E 'libc6|libgcc-s1|libstdc\+\+6|libpq5' || true)
(cd .pg/debs && apt-get download $pkgs >/dev/null)
for f in .pg/debs/*.deb; do dpkg -x "$f" "$tmp"; done
# what a server needs: binaries, modules (no JIT bitcode), share files, libraries, time zones
tar -C "$tmp" -cJf .pg/postgresql.tar.xz --exclude="usr/lib/postgresql/$ver/lib/bitcode" \
    "usr/lib/postgresql/$ver/bin" "usr/lib/postgresql/$ver/lib" "usr/share/postgresql/$ver" \
    usr/lib/x86_64-linux-gnu usr/share/zoneinfo $(cd "$tmp" && ls -d lib/x86_64-linux-gnu 2>/dev/null)
(cd .pg/debs && ls) > .pg/PACKAGES
rm -rf "$tmp" .pg/debs
echo "$ver" > .pg/VERSION
echo "wheels: $(ls .whl | wc -l) files, $(du -sh .whl | cut -f1); PostgreSQL $ver ($(wc -l < .pg/PACKAGES) packages): $(du -sh .pg | cut -f1)"
