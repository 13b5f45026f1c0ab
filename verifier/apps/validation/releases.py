"""A Python interpreter per Triton release, for compiling conversion kernels with that release.

Where the interpreter for release ``X.Y`` (the newest patch of it, :data:`WHEELS`) comes from:

1. ``LV_TRITON_PYTHONS`` (comma-separated interpreter paths): an interpreter whose Triton is an
   ``X.Y`` release serves ``X.Y``;
2. this interpreter, when its own Triton is ``X.Y``;
3. otherwise a virtual environment in the cache directory (``LV_ORACLE_CACHE``, else
   ``LV_TRITON_CACHE``, default ``$XDG_CACHE_HOME/layoutverify`` or ``~/.cache/layoutverify``;
   the test oracles of ``tests/oracle_envs.py`` live there too) named
   ``triton-<wheel>-py<major><minor>``, made once, on demand: ``python -m venv --without-pip`` and
   ``pip install --no-deps --target <its site-packages> triton==<wheel>`` plus the few packages
   that release imports at start-up (:data:`IMPORT_NEEDS`). Triton's wheels declare no runtime
   dependencies that compiling to PTX on the CPU needs beyond those: the compile workers import
   only Triton and the standard library. The venv is built under a temporary name and renamed
   when complete, under a file lock, so an interrupted install is never used and two processes do
   not install at once.

With ``LV_NO_DOWNLOADS=1`` nothing is installed. When the install fails or is not allowed (no
network, say) :class:`Unavailable` carries pip's message. The tests
skip then, except under CI (``CI`` set to ``true``/``1``/``yes``), where they fail
(``tests/conftest.py``); the ``validate`` command reports it in one line.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

#: major.minor -> the wheel installed for it (the newest patch release on PyPI)
WHEELS = {"2.1": "2.1.0", "2.2": "2.2.0", "2.3": "2.3.1", "3.0": "3.0.0", "3.1": "3.1.0", "3.2": "3.2.0",
          "3.3": "3.3.1", "3.4": "3.4.0", "3.5": "3.5.1", "3.6": "3.6.0", "3.7": "3.7.1", "3.8": "3.8.0",
          "3.9": "3.9.0"}
#: the releases whose layouts the Triton adapter reproduces (``adapters/triton/version.py``)
SUPPORTED = ("3.6", "3.7", "3.8", "3.9")
#: every release an environment can be made for, oldest first
RELEASES = tuple(WHEELS)
#: what a release imports at start-up besides Triton and the standard library (pinned: pure Python,
#: or wheels for CPython 3.11 and 3.12): before 3.6, ``triton.runtime.build`` imports setuptools
#: (and 3.0-3.5 filelock); 2.x's interpreter module imports numpy.
IMPORT_NEEDS = {**{r: ("setuptools==70.3.0", "filelock==3.16.1") for r in ("3.0", "3.1", "3.2", "3.3", "3.4", "3.5")},
                **{r: ("setuptools==70.3.0", "filelock==3.16.1", "numpy==1.26.4") for r in ("2.1", "2.2", "2.3")}}
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


def major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def release_of(text: str) -> str:
    """``"3.7"`` for ``"3.7"``, ``"3.7.1"``, ``"v3.7"``; :class:`KeyError` naming the choices when
    no environment can be made for it."""
    t = str(text).strip().lstrip("v")
    r = major_minor(t)
    if r not in WHEELS:
        raise KeyError(f"no Triton release {text!r} to compile with; one of {', '.join(RELEASES)}")
    return r


def default_release() -> str:
    """The installed Triton's ``X.Y`` (from its package metadata) when an environment can be made
    for it, else 3.9."""
    from importlib import metadata
    try:
        v = major_minor(metadata.version("triton"))
    except metadata.PackageNotFoundError:
        return "3.9"
    return v if v in WHEELS else "3.9"


def triton_version_of(python: str) -> str | None:
    """The full version of the Triton that ``python`` imports (from its package metadata), or ``None``."""
    try:
        out = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('triton'))"],
                             capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


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


def venv_path(release: str, root: Path | None = None) -> Path:
    return (root or cache_root()) / f"triton-{WHEELS[release]}-py{sys.version_info[0]}{sys.version_info[1]}"


def _usable(path: Path, wheel: str) -> bool:
    """The venv imports Triton ``wheel`` and everything it needs at start-up."""
    py = venv_python(path)
    if not py.exists():
        return False
    try:
        out = subprocess.run([str(py), "-c", "import triton; print(triton.__version__)"],
                             capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == wheel


def install(release: str, root: Path | None = None, notice=None) -> str:
    """The interpreter of the cached venv holding Triton ``WHEELS[release]``, installing it first
    when it is missing or broken (``notice(text)`` is told before a download starts). Raises
    :class:`Unavailable` with pip's message on failure."""
    wheel = WHEELS[release]
    final = venv_path(release, root)
    root = final.parent
    if triton_version_of(str(venv_python(final))) == wheel:
        return str(venv_python(final))
    if not downloads_allowed():
        raise Unavailable(f"{final} is missing and LV_NO_DOWNLOADS is set")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{final.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if triton_version_of(str(venv_python(final))) == wheel:  # another process made it meanwhile
            return str(venv_python(final))
        if notice:
            notice(f"installing Triton {wheel} into {final} (once; downloads a few hundred MB from PyPI)")
        tmp = root / f"{final.name}.partial"
        for stale in (tmp, final):
            shutil.rmtree(stale, ignore_errors=True)
        _run([sys.executable, "-m", "venv", "--without-pip", str(tmp)], "venv")
        site = _run([str(venv_python(tmp)), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    "venv").strip()
        # out of CI a machine without network should fail soon, not after pip's default retries
        patience = [] if in_ci() else ["--retries", "1", "--timeout", "20"]
        try:
            _run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-input", "--disable-pip-version-check",
                  "--quiet", *patience, "--target", site, f"triton=={wheel}", *IMPORT_NEEDS.get(release, ())],
                 f"pip install triton=={wheel}")
            if not _usable(tmp, wheel):
                raise Unavailable(f"the new venv {tmp} does not import Triton {wheel}")
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
    """``release -> interpreter path``, resolved once per release (see the module docstring);
    ``notice`` is passed to :func:`install`."""

    def __init__(self, notice=None):
        self._env: dict[str, str] | None = None
        self._done: dict[str, str | Unavailable] = {}
        self.notice = notice

    def resolve(self, release: str) -> str:
        """The Python interpreter that has Triton ``release`` (from the environment, this interpreter,
        or installed); raises :class:`Unavailable` (again for later calls) when there is none, and
        ``KeyError`` for a release this tool does not support."""
        if release not in WHEELS:
            raise KeyError(f"unsupported Triton release {release!r}; one of {', '.join(RELEASES)}")
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
            return install(release, notice=self.notice)
        except OSError as e:  # an unwritable cache directory, a full disk
            raise Unavailable(f"installing Triton {WHEELS[release]} into {cache_root()}: {e}") from None
