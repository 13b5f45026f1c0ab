"""A Python interpreter per supported Triton release, for the tests that compile conversion kernels
with every release (``tests/test_lowering.py``, ``tests/test_ptxsim.py``).

Where each interpreter comes from, for release ``3.x`` (the newest patch of it, :data:`WHEELS`):

1. ``LV_TRITON_PYTHONS`` (comma-separated interpreter paths): an interpreter whose Triton is a
   ``3.x`` release serves ``3.x``;
2. this interpreter, when its own Triton is ``3.x``;
3. otherwise a virtual environment in the cache directory (``LV_ORACLE_CACHE``, else
   ``LV_TRITON_CACHE``, default ``$XDG_CACHE_HOME/layoutverify`` or ``~/.cache/layoutverify``; the
   oracles of ``tests/oracle_envs.py`` live there too) named
   ``triton-<release>-py<major><minor>``, made once: ``python -m venv --without-pip`` and
   ``pip install --no-deps --target <its site-packages> triton==<release>``. Triton's wheels
   declare no runtime dependencies (``Requires-Dist`` only for Python < 3.10 and for the
   ``build``/``tests``/``tutorials`` extras), and compiling to PTX on the CPU needs nothing else:
   the compile worker imports only Triton and the standard library. The venv is built under a
   temporary name and renamed when complete, under a file lock, so an interrupted install is
   never used and two sessions do not install at once.

With ``LV_NO_DOWNLOADS=1`` nothing is installed. When the install fails or is not allowed (no
network, say), the tests of that release skip with pip's message,
except under CI (``CI`` set to ``true``/``1``/``yes``), where they fail: CI must check every
release.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

#: supported major.minor -> the wheel installed for it (the newest patch release on PyPI)
WHEELS = {"3.6": "3.6.0", "3.7": "3.7.1", "3.8": "3.8.0", "3.9": "3.9.0"}
RELEASES = tuple(WHEELS)
INSTALL_TIMEOUT_S = 900


class Unavailable(Exception):
    """No interpreter with this release could be provided (the message says why)."""


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def downloads_allowed() -> bool:
    """False when ``LV_NO_DOWNLOADS`` is set (to anything but ``0``/``false``/``no``/empty)."""
    return os.environ.get("LV_NO_DOWNLOADS", "").strip().lower() in ("", "0", "false", "no")


def cache_root() -> Path:
    for var in ("LV_ORACLE_CACHE", "LV_TRITON_CACHE"):
        if os.environ.get(var):
            return Path(os.environ[var])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "layoutverify"


def triton_version_of(python: str) -> str | None:
    """The full version of the Triton that ``python`` imports (from its package metadata, the
    same source as :func:`layoutverify.apps.measure.validate.triton_release`), or ``None``."""
    try:
        out = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('triton'))"],
                             capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _from_env() -> dict[str, str]:
    found = {}
    for py in filter(None, (s.strip() for s in os.environ.get("LV_TRITON_PYTHONS", "").split(","))):
        v = triton_version_of(py)
        if v is None:
            raise Unavailable(f"LV_TRITON_PYTHONS names {py}, which does not import a Triton")
        found.setdefault(major_minor(v), py)
    return found


def _tail(text: str, n: int = 3) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:])


def venv_python(path: Path) -> Path:
    return path / "bin" / "python"


def install(release: str, root: Path | None = None) -> str:
    """The interpreter of the cached venv holding Triton ``WHEELS[release]``, installing it first
    when it is missing or broken. Raises :class:`Unavailable` with pip's message on failure."""
    wheel = WHEELS[release]
    root = root or cache_root()
    name = f"triton-{wheel}-py{sys.version_info[0]}{sys.version_info[1]}"
    final = root / name
    if triton_version_of(str(venv_python(final))) == wheel:
        return str(venv_python(final))
    if not downloads_allowed():
        raise Unavailable(f"{final} is missing and LV_NO_DOWNLOADS is set")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if triton_version_of(str(venv_python(final))) == wheel:  # another session made it meanwhile
            return str(venv_python(final))
        tmp = root / f"{name}.partial"
        for stale in (tmp, final):
            shutil.rmtree(stale, ignore_errors=True)
        _run([sys.executable, "-m", "venv", "--without-pip", str(tmp)], "venv")
        site = _run([str(venv_python(tmp)), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    "venv").strip()
        # out of CI a machine without network should skip soon, not after pip's default retries
        patience = [] if in_ci() else ["--retries", "1", "--timeout", "20"]
        try:
            _run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-input", "--disable-pip-version-check",
                  "--quiet", *patience, "--target", site, f"triton=={wheel}"], f"pip install triton=={wheel}")
        except Unavailable:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        os.rename(tmp, final)
    got = triton_version_of(str(venv_python(final)))
    if got != wheel:
        raise Unavailable(f"the venv {final} imports Triton {got}, not {wheel}")
    return str(venv_python(final))


def _run(cmd: list[str], what: str) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"{what} took over {INSTALL_TIMEOUT_S} s") from None
    if out.returncode != 0:
        raise Unavailable(f"{what} failed (exit {out.returncode}): {_tail(out.stderr or out.stdout)}")
    return out.stdout


class Interpreters:
    """``release -> interpreter path``, resolved once per release (see the module docstring)."""

    def __init__(self):
        self._env: dict[str, str] | None = None
        self._done: dict[str, str | Unavailable] = {}

    def resolve(self, release: str) -> str:
        if release not in WHEELS:
            raise KeyError(f"unsupported Triton release {release!r}; supported: {', '.join(RELEASES)}")
        if release not in self._done:
            try:
                self._done[release] = self._find(release)
            except Unavailable as e:
                self._done[release] = e
        got = self._done[release]
        if isinstance(got, Unavailable):
            raise got
        return got

    def _find(self, release: str) -> str:
        if self._env is None:
            self._env = _from_env()
        if release in self._env:
            return self._env[release]
        mine = triton_version_of(sys.executable)
        if mine and major_minor(mine) == release:
            return sys.executable
        try:
            return install(release)
        except OSError as e:  # an unwritable cache directory, a full disk
            raise Unavailable(f"installing Triton {WHEELS[release]} into {cache_root()}: {e}") from None
