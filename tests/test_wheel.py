"""The wheel: one top-level package, its run-time data, and a non-editable install that works
outside the checkout.

1. ``pip wheel`` builds the project from a copy of its sources (so the checkout stays clean).
2. The wheel holds only ``layoutverify/...`` and ``layoutverify-<version>.dist-info/...``; every
   package folder of the source tree (a folder with ``__init__.py``) is in it, and every data file
   the tool reads at run time (every non-Python file of the package folders: corpora, the CuTe atom
   catalogue) is in it.
3. The wheel is installed, not editable, into a fresh virtual environment that sees the base
   environment's dependencies (``--system-site-packages``) but must not see the base
   environment's editable install of this checkout: inside the venv ``layoutverify.__file__``
   must lie in the venv's site-packages.
4. From a temporary directory outside the checkout, the installed ``layoutverify atlas`` and
   ``layoutverify check`` run on the corpora found with ``importlib.resources`` in the installed
   package.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: source folder -> import path (pyproject.toml's package-dir)
PACKAGE_DIRS = {"verifier": "layoutverify", "adapters": "layoutverify.adapters", "corpora": "layoutverify.corpora"}
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")


def _source_packages_and_data() -> tuple[set[str], set[str]]:
    """Import paths of every package folder, and wheel paths of every data file, of the sources."""
    packages, data = set(), set()
    for folder, dotted in PACKAGE_DIRS.items():
        base = ROOT / folder
        for path in base.rglob("*"):
            rel = path.relative_to(base)
            if "__pycache__" in rel.parts or path.suffix == ".pyc":
                continue
            if path.is_dir() and (path / "__init__.py").exists():
                packages.add(".".join([dotted, *rel.parts]))
            elif path.is_file() and path.suffix != ".py":
                data.add("/".join([*dotted.split("."), *rel.parts]))
        packages.add(dotted)
    return packages, data


def _can_build_offline() -> bool:
    """Whether this Python's setuptools builds wheels by itself (pyproject.toml asks for >= 68;
    ``bdist_wheel`` is in setuptools from 70.1, before that in the ``wheel`` package). Otherwise
    pip builds in an isolated environment, which downloads setuptools."""
    try:
        import setuptools
        version = tuple(int(x) for x in setuptools.__version__.split(".")[:2])
    except (ImportError, ValueError):
        return False
    return version >= (70, 1) or (version >= (68, 0) and importlib.util.find_spec("wheel") is not None)


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for folder in PACKAGE_DIRS:
        shutil.copytree(ROOT / folder, src / folder, ignore=IGNORE)
    out = tmp_path_factory.mktemp("wheelhouse")
    cmd = [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q", "-w", str(out)]
    if _can_build_offline():
        cmd.insert(-4, "--no-build-isolation")     # build with the installed setuptools: no network needed
    r = _run(cmd)
    assert r.returncode == 0, r.stdout + r.stderr
    wheels = list(out.glob("layoutverify-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_wheel_holds_one_package_and_its_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    dist_info = [t for t in tops if t.endswith(".dist-info")]
    assert len(dist_info) == 1 and dist_info[0].startswith("layoutverify-"), tops
    assert tops == {"layoutverify", dist_info[0]}, f"unexpected top-level entries: {sorted(tops)}"

    packages, data = _source_packages_and_data()
    in_wheel = {n[:-len("/__init__.py")].replace("/", ".") for n in names if n.endswith("/__init__.py")}
    assert packages <= in_wheel, f"packages missing from the wheel (pyproject.toml packages): {sorted(packages - in_wheel)}"
    assert data <= set(names), f"data files missing from the wheel (package-data): {sorted(data - set(names))}"
    # the run-time data the issue names, spelled out
    for required in ("layoutverify/adapters/cute/atoms.toml", "layoutverify/corpora/conversions.toml",
                     "layoutverify/corpora/atlas/mma_sync.toml", "layoutverify/corpora/atlas/wgmma.toml"):
        assert required in names
    assert sum(n.startswith("layoutverify/corpora/atlas/") and n.endswith(".toml") for n in names) >= 5
    entry_points = zipfile.ZipFile(wheel).read(f"{dist_info[0]}/entry_points.txt").decode()
    assert "layoutverify = layoutverify.apps.cli:main" in entry_points


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    env_dir = tmp_path_factory.mktemp("venv") / "env"
    r = _run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)])
    assert r.returncode == 0, r.stderr
    py = env_dir / "bin" / "python"
    r = _run([str(py), "-m", "pip", "install", "--no-deps", "--force-reinstall", "-q", str(wheel)])
    assert r.returncode == 0, r.stdout + r.stderr
    return env_dir


def _outside(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("elsewhere")
    assert ROOT not in d.parents
    return d


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def test_installed_wheel_is_the_one_imported(venv, tmp_path_factory):
    cwd = _outside(tmp_path_factory)
    probe = ("import json, sysconfig, layoutverify, importlib.resources as r; "
             "print(json.dumps({'file': layoutverify.__file__, 'purelib': sysconfig.get_paths()['purelib'], "
             "'corpora': str(r.files('layoutverify.corpora')), 'atoms': str(r.files('layoutverify.adapters.cute') / 'atoms.toml')}))")
    r = _run([str(venv / "bin" / "python"), "-c", probe], cwd=cwd, env=_clean_env())
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    purelib = Path(got["purelib"]).resolve()
    for key in ("file", "corpora", "atoms"):
        path = Path(got[key]).resolve()
        assert purelib in path.parents, f"{key} comes from {path}, not from the venv's {purelib}"
        assert ROOT not in path.parents, f"{key} comes from the checkout: {path}"
    assert Path(got["atoms"]).is_file()


def test_installed_wheel_runs_atlas_and_check_outside_the_checkout(venv, tmp_path_factory):
    cwd = _outside(tmp_path_factory)
    py = str(venv / "bin" / "python")
    r = _run([py, "-c", "import importlib.resources as r; print(r.files('layoutverify.corpora'))"],
             cwd=cwd, env=_clean_env())
    assert r.returncode == 0, r.stderr
    corpora = Path(r.stdout.strip())
    assert ROOT not in corpora.parents and (corpora / "atlas").is_dir()
    exe = str(venv / "bin" / "layoutverify")

    r = _run([exe, "atlas", "--markdown", "atlas.md"], cwd=cwd, env=_clean_env())
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "mma.m16n8k16" in r.stdout and "fragments" in r.stdout
    assert (cwd / "atlas.md").read_text().count("|") > 100

    r = _run([exe, "check", str(corpora), "-q", "--json", "outcomes.json"], cwd=cwd, env=_clean_env())
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert " 0 failed" in r.stdout
    outcomes = json.loads((cwd / "outcomes.json").read_text())
    assert isinstance(outcomes, (list, dict)) and outcomes

    # a CuTe atom: the catalogue (atoms.toml) is read from the installed package
    r = _run([exe, "show", "cute:SM80_16x8x16_F32F16F16F32_TN.C", "--no-grid"], cwd=cwd, env=_clean_env())
    assert r.returncode == 0, r.stderr
    assert "register" in r.stdout and "lane" in r.stdout
