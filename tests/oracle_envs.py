"""The oracles the test environment cannot hold, installed once by pip into the cache.

The test environment (``pip install -e '.[test]'``) comes from PyPI alone and holds no torch and no
CUDA package (``tests/test_install.py`` checks this on a PyPI-only resolution). Two oracles would
bring them in:

* **tilus** requires torch, and PyPI's torch for Linux x86_64 is the CUDA build (with about 3 GB of
  ``nvidia-*`` packages, and it pins its own Triton). tilus's layout functions never use torch:
  :mod:`layoutverify.adapters.tilus.package` imports tilus without it.
* **CuTe**: pycute and CUTLASS's C++ headers come in the ``nvidia-cutlass`` wheel, which requires
  ``cuda-python``; CuTe's host code includes the CUDA runtime's headers (``cuda_runtime_api.h``,
  ``vector_types.h``, ...) and CCCL's ``cuda/std``, which come in ``nvidia-cuda-runtime`` (beside
  ``libcudart``, which nothing here loads), ``nvidia-cuda-crt`` and ``nvidia-cuda-cccl``.

Each oracle is one directory made by ``pip install --no-deps --target DIR`` with pinned versions
(:data:`ORACLES`, about 60 MB together), in the cache directory of the Triton releases
(:func:`triton_releases.cache_root`: ``LV_ORACLE_CACHE``, else ``LV_TRITON_CACHE``, else
``$XDG_CACHE_HOME/layoutverify`` or ``~/.cache/layoutverify``). A directory is made under a
temporary name and renamed when complete, under a file lock, so an interrupted install is never
used and two sessions do not install at once.

:func:`activate` (called by ``tests/conftest.py`` when the session starts) makes what is missing,
appends the directories to ``sys.path`` and to ``PYTHONPATH`` (for the CLI in subprocesses),
points ``CUTLASS_INCLUDE`` and ``LAYOUTVERIFY_CUDA_INCLUDE`` at their headers (unless already
set), and imports tilus. When a directory cannot be made (no network, ``LV_NO_DOWNLOADS=1``) its
tests skip, except under CI (``CI=true``), where ``tests/conftest.py`` turns every skip but a GPU
one into a failure.

``python tests/oracle_envs.py`` makes every oracle environment, the Triton releases' included,
and prints where they are and their sizes.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from triton_releases import Unavailable, cache_root, downloads_allowed, in_ci  # noqa: E402

INSTALL_TIMEOUT_S = 900


@dataclass(frozen=True)
class Oracle:
    name: str                      # the directory's name in the cache
    requirements: tuple[str, ...]  # installed with --no-deps: every requirement is pinned here
    probe: str                     # a file the complete directory holds (relative to it)
    what: str


ORACLES = {
    "tilus": Oracle(
        "tilus-0.2.0",
        ("tilus==0.2.0", "apache-tvm-ffi==0.1.15.post2", "tabulate==0.10.0", "tqdm==4.70.1", "filelock==4.3.1"),
        "tilus/ir/layout/__init__.py",
        "tilus 0.2.0 and the packages it imports, without torch"),
    "cute": Oracle(
        "cute-cutlass-4.2.0.0-cuda-13.0",
        ("nvidia-cutlass==4.2.0.0", "nvidia-cuda-cccl==13.0.85", "nvidia-cuda-crt==13.0.88",
         "nvidia-cuda-runtime==13.0.96"),
        "cutlass_library/source/include/cute/layout.hpp",
        "pycute and CUTLASS 4.2.0's C++ headers, with the CUDA 13.0 runtime and CCCL headers"),
}


def path_of(key: str, root: Path | None = None) -> Path:
    return (root or cache_root()) / ORACLES[key].name


def _complete(key: str, root: Path | None = None) -> bool:
    return (path_of(key, root) / ORACLES[key].probe).is_file()


def _tail(text: str, n: int = 3) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:])


def install(key: str, root: Path | None = None) -> Path:
    """The directory of oracle ``key``, made first when missing. Raises :class:`Unavailable`."""
    oracle = ORACLES[key]
    root = root or cache_root()
    final = path_of(key, root)
    if _complete(key, root):
        return final
    if not downloads_allowed():
        raise Unavailable(f"{final} is missing and LV_NO_DOWNLOADS is set")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{oracle.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _complete(key, root):                    # another session made it meanwhile
            return final
        tmp = root / f"{oracle.name}.partial"
        for stale in (tmp, final):
            shutil.rmtree(stale, ignore_errors=True)
        patience = [] if in_ci() else ["--retries", "1", "--timeout", "20"]
        cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-input", "--disable-pip-version-check",
               "--quiet", *patience, "--target", str(tmp), *oracle.requirements]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            shutil.rmtree(tmp, ignore_errors=True)
            raise Unavailable(f"pip install of {oracle.name} took over {INSTALL_TIMEOUT_S} s") from None
        if out.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise Unavailable(f"pip install {' '.join(oracle.requirements)} failed (exit {out.returncode}): "
                              f"{_tail(out.stderr or out.stdout)}")
        os.rename(tmp, final)
    if not _complete(key, root):
        raise Unavailable(f"{final} was installed but lacks {oracle.probe}")
    return final


#: oracle key -> why it is unavailable, filled by :func:`activate`
PROBLEMS: dict[str, str] = {}


def _append_path(directory: Path) -> None:
    d = str(directory)
    if d not in sys.path:
        sys.path.append(d)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if d not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join(parts + [d])


def cuda_include(directory: Path) -> Path:
    """The CUDA headers' folder inside the CuTe oracle directory (``nvidia/cu13/include``)."""
    return directory / "nvidia" / "cu13" / "include"


def activate() -> dict[str, str]:
    """Make every oracle directory available to this process and its subprocesses; returns
    :data:`PROBLEMS` (oracle -> why not), empty when all are there."""
    for key in ORACLES:
        try:
            directory = install(key)
        except (Unavailable, OSError) as e:
            PROBLEMS[key] = f"the {key} oracle ({ORACLES[key].what}) is unavailable: {e}"
            continue
        _append_path(directory)
        if key == "cute":
            os.environ.setdefault("CUTLASS_INCLUDE", str(directory / "cutlass_library" / "source" / "include"))
            os.environ.setdefault("LAYOUTVERIFY_CUDA_INCLUDE", str(cuda_include(directory)))
        if key == "tilus":
            try:
                from layoutverify.adapters.tilus.package import import_tilus
                import_tilus()
            except Exception as e:  # noqa: BLE001 - reported, and the tilus tests skip (fail under CI)
                PROBLEMS[key] = f"tilus from {directory} does not import: {type(e).__name__}: {e}"
    return PROBLEMS


def _size(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


def main() -> int:
    """Make every oracle environment now (the Triton releases' too) and say where and how large."""
    from triton_releases import Interpreters, RELEASES
    print(f"cache: {cache_root()}")
    bad = 0
    for key, oracle in ORACLES.items():
        try:
            d = install(key)
            print(f"  {oracle.name}: {_size(d) / 2**20:,.0f} MB ({oracle.what})")
        except Unavailable as e:
            bad += 1
            print(f"  {oracle.name}: unavailable: {e}")
    interpreters = Interpreters()
    for release in RELEASES:
        try:
            py = Path(interpreters.resolve(release))
        except Unavailable as e:
            bad += 1
            print(f"  Triton {release}: unavailable: {e}")
            continue
        env = py.parent.parent
        if cache_root() in env.parents:
            print(f"  Triton {release}: {_size(env) / 2**20:,.0f} MB ({env.name})")
        else:
            print(f"  Triton {release}: {py} (this environment's own)")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
