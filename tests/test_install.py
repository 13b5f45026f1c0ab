"""The README's install steps, resolved from PyPI alone, give the environment the tests need: Triton
3.9 and no torch and no CUDA package.

How: a fresh virtual environment (no system site packages) runs each ``pip install`` of the
README's test command as ``pip install --isolated --dry-run --ignore-installed --report R.json``:
``--isolated`` ignores every pip configuration file and ``PIP_*`` variable (this workplace's pip
configuration adds a local wheel folder with a CPU build of torch, and a local index), so the
resolution is the one any Linux machine with PyPI and nothing else gets. Nothing is installed.
The project is resolved from a copy of its sources.

"No CUDA package" means: no distribution that ships the CUDA runtime or toolkit libraries or
binds to them, that is none named ``nvidia-*`` or ``cuda-*`` (``nvidia-cuda-runtime``,
``nvidia-cublas``, ``cuda-toolkit``, ``cuda-bindings``, ...), no ``cupy-*``, and no ``torch``
(PyPI's Linux x86_64 torch is the CUDA build, and it pins its own Triton). The header-only wheels
:data:`HEADER_ONLY` would be acceptable (headers, no libraries); the oracles that need them get
them in their own cached directory instead (``tests/oracle_envs.py``).

Needs network access to PyPI; without it the tests skip, and under ``CI=true`` a skip fails.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEADER_ONLY = {"nvidia-cuda-cccl", "nvidia-cuda-crt"}
FORBIDDEN = re.compile(r"^(nvidia-|cuda-|cupy|torch$|torchvision$|torchaudio$|jax-cuda)")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def cuda_packages(names) -> list[str]:
    """The names that are CUDA packages by the module docstring's definition."""
    return sorted(n for n in map(_normal, names) if FORBIDDEN.match(n) and n not in HEADER_ONLY)


def readme_pip_installs() -> list[list[str]]:
    """The arguments of every ``pip install`` in the README's test command."""
    text = (ROOT / "README.md").read_text()
    line = next(ln for ln in text.splitlines() if "pip install" in ln and "python -m pytest" in ln)
    out = []
    for part in line.split("&&"):
        words = shlex.split(part.strip())
        if words[:2] == ["pip", "install"]:
            out.append(words[2:])
    return out


def _pypi_reachable() -> bool:
    try:
        with urllib.request.urlopen("https://pypi.org/simple/pip/", timeout=20) as r:
            return r.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    if not _pypi_reachable():
        pytest.skip("PyPI is not reachable from here (the resolution needs it)")
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for folder in ("verifier", "adapters", "corpora"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    venv = tmp_path_factory.mktemp("venv") / "env"
    r = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    installs = readme_pip_installs()
    assert installs, "the README's test command has no pip install"
    merged = {"install": []}
    for n, args in enumerate(installs):
        out = tmp_path_factory.mktemp("report") / f"r{n}.json"
        cmd = [str(venv / "bin" / "python"), "-m", "pip", "install", "--isolated", "--dry-run", "--ignore-installed",
               "--quiet", "--disable-pip-version-check", "--report", str(out), *args]
        r = subprocess.run(cmd, cwd=src, capture_output=True, text=True, timeout=1200)
        assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stdout[-2000:]}{r.stderr[-3000:]}"
        merged["install"] += json.loads(out.read_text())["install"]
    return merged


def _installed(report: dict) -> dict[str, str]:
    return {_normal(i["metadata"]["name"]): i["metadata"]["version"] for i in report["install"]}


def test_readme_command_installs_no_torch_first():
    for args in readme_pip_installs():
        assert not any(a.split("=")[0].split("<")[0].split(">")[0] == "torch" for a in args), args


def test_pypi_only_resolution_has_triton_39(report):
    got = _installed(report)
    assert got.get("triton", "").startswith("3.9."), got.get("triton")


def test_pypi_only_resolution_has_no_cuda_package(report):
    got = _installed(report)
    assert cuda_packages(got) == [], cuda_packages(got)


def test_pypi_only_resolution_comes_from_pypi(report):
    for item in report["install"]:
        url = item["download_info"]["url"]
        if item["metadata"]["name"] == "layoutverify":
            continue                                   # the project itself, from the copy of its sources
        assert url.startswith("https://files.pythonhosted.org/"), url


def test_pypi_only_resolution_has_every_test_oracle(report):
    """What the tests import from the test environment (the others come from oracle_envs)."""
    got = _installed(report)
    for name in ("pytest", "hypothesis", "iree-base-compiler", "z3-solver", "numpy", "fastapi", "uvicorn",
                 "psycopg", "mcp", "playwright", "ray", "rich", "pyyaml", "mkdocs", "mkdocs-material",
                 "mkdocstrings-python", "build", "twine", "scipy"):
        assert name in got, name


def test_the_definition_of_a_cuda_package():
    assert cuda_packages(["nvidia-cublas-cu12", "nvidia_cuda_runtime", "cuda-toolkit", "cuda_bindings", "torch",
                          "cupy-cuda12x"]) == ["cuda-bindings", "cuda-toolkit", "cupy-cuda12x", "nvidia-cublas-cu12",
                                               "nvidia-cuda-runtime", "torch"]
    assert cuda_packages(["nvidia-cuda-cccl", "triton", "numpy", "torchmetrics"]) == []
