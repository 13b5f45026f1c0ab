"""Shared pytest configuration.

* The oracles the test environment cannot hold (tilus, pycute and the CuTe C++ headers) are made
  available when the session starts, installed once into the cache (``tests/oracle_envs.py``).
* The ``gpu`` marker skips cleanly on machines without a GPU.
* Under CI (``CI=true``) a skip is a failure, except for GPU tests and :data:`ALLOWED_SKIPS`: a
  missing oracle (Triton release, tilus, pycute, CuTe C++, IREE, Ray, PostgreSQL, Chromium, ...)
  must fail CI, never pass it silently.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


#: skips that are not a missing oracle, allowed under CI too: (reason pattern, why)
ALLOWED_SKIPS = (
    (r"\bGPU\b", "GPU tests: CI machines have no GPU"),
    (r"^root writes read-only files", "tests/test_hostile.py: read-only targets cannot be made for root"),
)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def pytest_configure(config):
    from oracle_envs import activate
    activate()


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _allowed_skip(reason: str, keywords=()) -> bool:
    import re
    return "gpu" in keywords or any(re.search(pattern, reason.removeprefix("Skipped: "))
                                    for pattern, _ in ALLOWED_SKIPS)


def _ci_failure(report, reason: str) -> None:
    from oracle_envs import PROBLEMS
    report.outcome = "failed"
    report.longrepr = (f"skipped under CI=true, where every oracle must be present: {reason}"
                       + "".join(f"\n  {p}" for p in PROBLEMS.values()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and in_ci() and not hasattr(report, "wasxfail"):
        reason = _skip_reason(report)
        if not _allowed_skip(reason, item.keywords):
            _ci_failure(report, reason)


#: modules skipped whole at collection under CI (``importorskip`` at module level): (module, reason)
_CI_SKIPPED_MODULES: list[tuple[str, str]] = []


def pytest_collectreport(report):
    """A module skipped whole is recorded here, not failed at collection (a collection error
    would stop the whole run); :func:`pytest_sessionfinish` fails the run for it."""
    if report.skipped and in_ci():
        reason = _skip_reason(report)
        if not _allowed_skip(reason):
            _CI_SKIPPED_MODULES.append((report.nodeid, reason))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if _CI_SKIPPED_MODULES:
        from oracle_envs import PROBLEMS
        terminalreporter.section("skipped under CI=true, where every oracle must be present", red=True)
        for nodeid, reason in _CI_SKIPPED_MODULES:
            terminalreporter.write_line(f"FAILED {nodeid}: {reason}")
        for problem in PROBLEMS.values():
            terminalreporter.write_line(f"  {problem}")


def pytest_sessionfinish(session, exitstatus):
    if _CI_SKIPPED_MODULES and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _have_gpu() -> bool:
    try:
        import torch  # noqa: F401
    except Exception:
        return False
    try:
        return bool(torch.cuda.is_available())
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _have_gpu():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU with torch (none here)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture
def cli_env():
    """Environment for running the CLI in a subprocess (no debug tracebacks)."""
    env = dict(os.environ)
    env.pop("LAYOUTVERIFY_DEBUG", None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture(scope="session")
def triton_python():
    """``triton_python(release)``: an interpreter whose Triton is ``release`` (``"3.6"`` .. ``"3.9"``),
    from ``LV_TRITON_PYTHONS``, this interpreter, or a cached venv installed once
    (``tests/triton_releases.py``). When none can be had the calling test skips, or fails under
    CI (``CI=true``), where every release must be checked."""
    from triton_releases import Interpreters, Unavailable

    interpreters = Interpreters()

    def get(release: str) -> str:
        try:
            return interpreters.resolve(release)
        except Unavailable as e:
            msg = f"no interpreter with Triton {release}: {e}"
        if in_ci():
            pytest.fail(msg + " (CI must check every supported Triton release)", pytrace=False)
        pytest.skip(msg + " (set LV_TRITON_PYTHONS, or allow pip to reach PyPI)")

    return get


@pytest.fixture(scope="session")
def suite_ptx(triton_python, tmp_path_factory):
    """``suite_ptx(release, arch=90, pairs=None)``: the conversion suite (or ``pairs`` of it) compiled
    on the CPU by Triton ``release`` for ``sm_<arch>``, ``{index: compile-worker answer}``; each
    kernel compiled once per session (``validate.compile_suite``'s cache)."""
    from layoutverify.apps.measure.suite import load_suite
    from layoutverify.apps.measure.validate import compile_suite

    cache = str(tmp_path_factory.getbasetemp() / "lv_suite_ptx")
    memo: dict = {}

    def get(release: str, arch: int = 90, pairs=None):
        pairs = load_suite() if pairs is None else pairs
        key = (release, arch, tuple(p.name for p in pairs))
        if key not in memo:
            memo[key] = compile_suite(pairs, arch=arch, python=triton_python(release), cache_dir=cache)
        return memo[key]

    return get
