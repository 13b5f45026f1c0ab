"""Release packaging: ``python -m build`` makes an sdist and, from it, a wheel; ``twine check``
accepts both; the wheel holds one top-level package and its run-time data, and installs and runs
in a clean virtual environment, outside the checkout.

1. ``python -m build`` builds from a copy of the sources (so the checkout stays clean): the sdist
   first, then the wheel from the unpacked sdist, so a file missing from the sdist shows. With
   setuptools >= 77 installed (the ``test`` extra) it builds without network (``--no-isolation``).
2. ``twine check --strict`` passes on both (metadata, the README as the long description).
3. The wheel holds only ``layoutverify/...`` and ``layoutverify-<version>.dist-info/...``; every
   package folder of the source tree (a folder with ``__init__.py``) is in it, and every data file
   the tool reads at run time (every non-Python file of the package folders: corpora, the CuTe atom
   catalogue) is in it; the sdist holds the sources, the README and the licence.
4. The version is written once (``layoutverify.__version__``): the wheel's metadata, the installed
   ``layoutverify --version`` and the newest ``CHANGELOG.md`` entry say the same.
5. The wheel is installed, with its dependencies, into a fresh virtual environment without the
   system's site packages (pip resolves ``numpy``, ``z3-solver`` and Triton from its index):
   inside it ``layoutverify.__file__`` lies in the venv's site-packages, and from a temporary
   directory outside the checkout the installed ``layoutverify atlas``, ``check`` (on the corpora
   found with ``importlib.resources``) and ``show`` run. When pip cannot reach its index the
   install tests skip, and under ``CI=true`` a skip fails.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
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
    """Whether this Python's setuptools meets pyproject.toml's build requirement (>= 77), so that
    ``python -m build --no-isolation`` needs no network. Otherwise build makes an isolated
    environment, which downloads setuptools."""
    try:
        import setuptools
        version = tuple(int(x) for x in setuptools.__version__.split(".")[:2])
    except (ImportError, ValueError):
        return False
    return version >= (77, 0)


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> tuple[Path, Path]:
    """(sdist, wheel) built by ``python -m build`` from a copy of the sources."""
    pytest.importorskip("build")
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    for folder in PACKAGE_DIRS:
        shutil.copytree(ROOT / folder, src / folder, ignore=IGNORE)
    out = tmp_path_factory.mktemp("dist")
    cmd = [sys.executable, "-m", "build", "--outdir", str(out), str(src)]
    if _can_build_offline():
        cmd.insert(3, "--no-isolation")     # build with the installed setuptools: no network needed
    r = _run(cmd)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    sdists, wheels = list(out.glob("layoutverify-*.tar.gz")), list(out.glob("layoutverify-*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, list(out.iterdir())
    return sdists[0], wheels[0]


@pytest.fixture(scope="module")
def wheel(dists) -> Path:
    return dists[1]


def test_twine_accepts_both(dists):
    pytest.importorskip("twine")
    r = _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dists)])
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("PASSED") == 2, r.stdout


def test_sdist_holds_the_sources(dists):
    sdist = dists[0]
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for name in ("pyproject.toml", "README.md", "LICENSE", "PKG-INFO"):
        assert name in names, name
    for folder in PACKAGE_DIRS:
        for path in (ROOT / folder).rglob("*"):
            rel = path.relative_to(ROOT).as_posix()
            if path.is_file() and "__pycache__" not in rel and path.suffix != ".pyc":
                assert rel in names, f"{rel} is missing from the sdist"


def test_one_version(dists):
    """``layoutverify.__version__`` is the wheel's version and the newest changelog entry's."""
    import layoutverify
    wheel = dists[1]
    meta = zipfile.ZipFile(wheel).read(f"layoutverify-{layoutverify.__version__}.dist-info/METADATA").decode()
    assert f"\nVersion: {layoutverify.__version__}\n" in meta
    assert wheel.name.startswith(f"layoutverify-{layoutverify.__version__}-")
    newest = re.search(r"^## (\d+\.\d+\.\d+)", (ROOT / "CHANGELOG.md").read_text(), re.M).group(1)
    assert newest == layoutverify.__version__


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
    """A fresh virtual environment (no system site packages) with the wheel and its dependencies."""
    env_dir = tmp_path_factory.mktemp("venv") / "env"
    r = _run([sys.executable, "-m", "venv", str(env_dir)])
    assert r.returncode == 0, r.stderr
    py = env_dir / "bin" / "python"
    r = _run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)])
    if r.returncode != 0:
        pytest.skip(f"pip could not install the wheel's dependencies here: {(r.stderr or r.stdout)[-600:]}")
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

    # the version it reports is the one written in the package, and a proof runs
    import layoutverify
    r = _run([exe, "--version"], cwd=cwd, env=_clean_env())
    assert r.returncode == 0 and r.stdout.strip() == f"layoutverify {layoutverify.__version__}", r.stdout + r.stderr
    r = _run([exe, "prove", "ptx:mma.m16n8k16.f32.C", "cute:SM80_16x8x16_F32F16F16F32_TN.C"], cwd=cwd, env=_clean_env())
    assert r.returncode == 0 and r.stdout.startswith("verdict: equal"), r.stdout + r.stderr
