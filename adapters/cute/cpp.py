"""Compile and run small host-only CuTe C++ programs: the real CuTe (CUTLASS's headers) as an oracle.

Used by :mod:`.cutlass_traits` (the CuTe column of the atlas in ``--native`` mode: MMA/copy atoms
from CUTLASS's own ``MMA_Traits``/``Copy_Traits``) and by the tests' differential sweeps
(``tests/cute_cpp``). One generated program evaluates many cases and prints, per case, one line::

    ID|<CuTe's print of the result>|<offset of 1-D coordinate 0> <1> ... <size-1>

The CuTe headers come from the ``nvidia-cutlass`` wheel (``cutlass_library/source/include``).
CuTe includes ``cuda_runtime_api.h`` and ``cuda/std/*`` even for host code, so a CUDA toolkit's
include directory (with CCCL) is needed too: ``$CUDA_HOME``, ``/usr/local/cuda*``, or
``$LAYOUTVERIFY_CUDA_INCLUDE``. When g++, the CuTe headers or the CUDA headers are missing,
:func:`toolchain` says why (callers skip or report "unavailable").

Binaries are cached under ``$TMPDIR/layoutverify-cute-cpp/<hash of source, flags and compiler>/``,
so a program is compiled once; several translation units compile in parallel.
"""
from __future__ import annotations

import glob
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

CXXFLAGS = ["-std=c++17", "-O0", "-w"]

PRELUDE = r"""
#include <cstdio>
#include <cute/layout.hpp>
#include <cute/layout_composed.hpp>
#include <cute/swizzle_layout.hpp>
#include <cute/pointer_flagged.hpp>
using namespace cute;
#define I(n) Int<n>{}
#define S(...) make_shape(__VA_ARGS__)
#define L(s, d) make_layout(s, d)
#define T(...) make_tile(__VA_ARGS__)
template <class P, class F>
void emit2(const char* id, P const& printed, F const& fn) {
  printf("%s|", id); print(printed); printf("|");
  for (int i = 0; i < int(size(fn)); ++i) printf(" %d", int(fn(i)));
  printf("\n");
}
template <class F>
void emit(const char* id, F const& fn) { emit2(id, fn, fn); }
#define E(id, ...) { auto r_ = __VA_ARGS__; emit(id, r_); }
"""


@dataclass(frozen=True)
class Toolchain:
    """The C++ compiler and CUTLASS include folders used to compile CuTe programs (the C++ oracle)."""
    cxx: str
    includes: tuple[str, ...]

    def flags(self) -> list[str]:
        """The compiler flags: the standard and warning options and ``-I`` for every include folder."""
        return CXXFLAGS + [f"-I{d}" for d in self.includes]


def _cutlass_include() -> str | None:
    env = os.environ.get("CUTLASS_INCLUDE")
    cands = [env] if env else []
    spec = importlib.util.find_spec("cutlass_library")
    if spec and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            cands.append(os.path.join(loc, "source", "include"))
    for c in cands:
        if c and os.path.isfile(os.path.join(c, "cute", "layout.hpp")):
            return c
    return None


def _cuda_includes() -> list[str] | None:
    roots = []
    env = os.environ.get("LAYOUTVERIFY_CUDA_INCLUDE")
    if env:
        roots.append(env)
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots.append(os.path.join(os.environ[var], "include"))
    roots.append("/usr/local/cuda/include")
    roots += sorted(glob.glob("/usr/local/cuda-*/include"), reverse=True)
    for r in roots:
        if not os.path.isfile(os.path.join(r, "cuda_runtime_api.h")):
            continue
        for std in (r, os.path.join(r, "cccl")):
            if os.path.isfile(os.path.join(std, "cuda", "std", "utility")):
                return [r] if std == r else [r, std]
    return None


_TOOLCHAIN: Toolchain | str | None = None


def toolchain() -> Toolchain | str:
    """The toolchain, or a sentence saying what is missing."""
    global _TOOLCHAIN
    if _TOOLCHAIN is not None:
        return _TOOLCHAIN
    cxx = os.environ.get("CXX") or shutil.which("g++")
    if not cxx:
        _TOOLCHAIN = "g++ is not installed"
        return _TOOLCHAIN
    cute = _cutlass_include()
    if not cute:
        _TOOLCHAIN = "the CuTe headers (nvidia-cutlass wheel, cutlass_library/source/include) are not installed"
        return _TOOLCHAIN
    cuda = _cuda_includes()
    if not cuda:
        _TOOLCHAIN = ("CuTe's host code needs CUDA toolkit headers (cuda_runtime_api.h and CCCL cuda/std); "
                      "none found (set CUDA_HOME or LAYOUTVERIFY_CUDA_INCLUDE)")
        return _TOOLCHAIN
    _TOOLCHAIN = Toolchain(cxx, (cute, *cuda))
    return _TOOLCHAIN


def _cache_dir() -> Path:
    d = Path(tempfile.gettempdir()) / "layoutverify-cute-cpp"
    d.mkdir(parents=True, exist_ok=True)
    return d


def build(sources: dict[str, str], tc: Toolchain) -> dict[str, Path]:
    """Compile each ``name -> C++ source`` into a binary (cached); compiles run in parallel."""
    try:
        version = subprocess.run([tc.cxx, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        version = ""
    out: dict[str, Path] = {}
    jobs = []
    for name, src in sources.items():
        key = hashlib.sha256("\0".join([src, " ".join(tc.flags()), version]).encode()).hexdigest()[:20]
        d = _cache_dir() / key
        exe = d / "prog"
        out[name] = exe
        if exe.exists():
            continue
        d.mkdir(parents=True, exist_ok=True)
        cpp = d / "prog.cpp"
        cpp.write_text(src)
        tmp_exe = d / f"prog.tmp{os.getpid()}"
        proc = subprocess.Popen([tc.cxx, *tc.flags(), str(cpp), "-o", str(tmp_exe)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        jobs.append((name, proc, tmp_exe, exe, cpp))
    errors = []
    for name, proc, tmp_exe, exe, cpp in jobs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            lines = [l for l in err.splitlines() if "error" in l][:8]
            errors.append(f"{name} ({cpp}):\n" + "\n".join(lines or err.splitlines()[:20]))
            continue
        os.replace(tmp_exe, exe)
    if errors:
        raise RuntimeError("CuTe C++ program failed to compile:\n" + "\n\n".join(errors))
    return out


def run(exe: Path, timeout: float = 120) -> dict[str, tuple[str, list[int]]]:
    """Run a program and parse its ``ID|print|table`` lines."""
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"{exe} exited with {res.returncode}: {res.stderr[:500]}")
    out = {}
    for line in res.stdout.splitlines():
        if "|" not in line:
            continue
        cid, printed, table = line.rsplit("|", 2)
        out[cid] = (printed, [int(x) for x in table.split()])
    return out


_STATIC = re.compile(r"(?<![A-Za-z0-9])_(\d)")


def plain(printed: str) -> str:
    """CuTe's print without the ``_`` of static integers: ``(_8,_4):(_1,_8)`` -> ``(8,4):(1,8)``."""
    return _STATIC.sub(r"\1", printed)


def program(cases: list[tuple[str, str]], extra_headers: str = "") -> str:
    """A program that emits ``E(id, expr)`` for each ``(id, C++ statement)``; a statement that is
    not an expression can be given whole by starting it with ``{``."""
    body = []
    for cid, stmt in cases:
        if stmt.lstrip().startswith("{"):
            body.append(stmt)
        else:
            body.append(f'E("{cid}", {stmt});')
    # one function per 40 cases keeps each function small for the compiler
    funcs, calls = [], []
    for k in range(0, len(body), 40):
        fname = f"part{k // 40}"
        funcs.append(f"void {fname}() {{\n" + "\n".join(body[k:k + 40]) + "\n}")
        calls.append(f"  {fname}();")
    return PRELUDE + extra_headers + "\n" + "\n".join(funcs) + "\nint main() {\n" + "\n".join(calls) + "\n  return 0;\n}\n"
