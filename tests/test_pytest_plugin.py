"""The pytest plugin, loaded through its ``pytest11`` entry point in a fresh pytest process.

The generated test file never imports layoutverify: the fixtures must come from the installed
entry point. Layout facts: the PTX m16n8k16 accumulator equals Triton's mma v2 accumulator; a
blocked layout's ``order`` decides which dim lanes walk first (Triton's docs); a ``#ttg.linear``
with its register bases swapped holds the same elements per thread in another order.
"""
from __future__ import annotations

from importlib.metadata import entry_points

import pytest

pytest_plugins = ["pytester"]

MMA = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [1, 1], instrShape = [16, 8]}>"
BLOCKED = "#ttg.blocked<{{sizePerThread = [2, 2], threadsPerWarp = [8, 4], warpsPerCTA = [1, 1], order = {order}}}>"
LINEAR_SWAPPED = ("#ttg.linear<{register = [[1, 0], [0, 1]], lane = [[0, 2], [0, 4], [2, 0], [4, 0], [8, 0]], "
                  "warp = [], block = []}>")

TESTS = f'''
def test_equal_layouts(assert_layouts_equal):
    res = assert_layouts_equal("ptx:mma.m16n8k16.f32.C", "triton:{MMA}", shape_b=(16, 8))
    assert res.verdict == "equal"


def test_unequal_layouts(assert_layouts_equal):
    assert_layouts_equal("triton:{BLOCKED.format(order="[1, 0]")}", "triton:{BLOCKED.format(order="[0, 1]")}",
                         shape=(16, 8))


def test_register_order_fails_strictly(assert_layouts_equal):
    assert_layouts_equal("triton:{BLOCKED.format(order="[1, 0]")}", "triton:{LINEAR_SWAPPED}", shape=(16, 8))


def test_register_order_allowed(assert_layouts_equal, assert_layouts_equivalent):
    a, b = "triton:{BLOCKED.format(order="[1, 0]")}", "triton:{LINEAR_SWAPPED}"
    assert assert_layouts_equal(a, b, shape=(16, 8), allow_register_order=True).verdict == \\
        "equal_up_to_register_order"
    assert_layouts_equivalent(a, b, shape=(16, 8))


def test_layout_objects(assert_layouts_equal):
    from layoutverify.adapters import parse_spec
    a = parse_spec("cute:SM80_16x8x16_F32F16F16F32_TN.C")
    assert_layouts_equal(a, "ptx:mma.m16n8k16.f32.C")
'''


def test_entry_point_is_declared():
    eps = [e for e in entry_points(group="pytest11") if e.value == "layoutverify.apps.pytest_plugin"]
    assert eps, "the pytest11 entry point of layoutverify is not installed (pip install -e .)"


@pytest.fixture(scope="module")
def run_result(tmp_path_factory):
    """One subprocess pytest run of the generated tests (shared by the checks below)."""
    import subprocess
    import sys
    d = tmp_path_factory.mktemp("plugin")
    (d / "test_generated.py").write_text(TESTS)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "-q",
                           "test_generated.py"], cwd=d, capture_output=True, text=True, timeout=300)
    return proc


def _outcomes(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        for word in ("PASSED", "FAILED", "ERROR"):
            if line.startswith(word + " "):
                name = line.split()[1].split("::")[-1]
                out[name] = word
    return out


def test_fixture_via_entry_point(run_result):
    res = _outcomes(run_result.stdout)
    assert res == {"test_equal_layouts": "PASSED", "test_unequal_layouts": "FAILED",
                   "test_register_order_fails_strictly": "FAILED", "test_register_order_allowed": "PASSED",
                   "test_layout_objects": "PASSED"}, run_result.stdout[-3000:]
    assert run_result.returncode == 1


def test_failure_message_carries_the_witness(run_result):
    text = run_result.stdout
    block = text.split("test_unequal_layouts", 1)[1]
    assert "AssertionError: layouts are not equal: not_equal" in block
    assert "witness: {'hardware': {'register': " in block
    assert "'a': [" in block and "'b': [" in block
    assert "T0:0" in block                     # the grids of both layouts are drawn
    strict = text.split("test_register_order_fails_strictly", 1)[1]
    assert "layouts are not equal: equal_up_to_register_order" in strict


def test_plugin_can_be_disabled(pytester):
    """Without the plugin the fixture does not exist: the fixture really comes from the entry point."""
    pytester.makepyfile(test_x="def test_x(assert_layouts_equal):\n    pass\n")
    res = pytester.runpytest_subprocess("-p", "no:layoutverify", "-p", "no:cacheprovider")
    res.assert_outcomes(errors=1)
    assert "fixture 'assert_layouts_equal' not found" in res.stdout.str()


def test_direct_import_raises_assertion_with_witness():
    from layoutverify.apps.pytest_plugin import assert_layouts_equal
    with pytest.raises(AssertionError, match=r"witness: \{'hardware'"):
        assert_layouts_equal("triton:" + BLOCKED.format(order="[1, 0]"), "triton:" + BLOCKED.format(order="[0, 1]"),
                             shape=(16, 8))
    assert assert_layouts_equal("ptx:mma.m16n8k16.f32.C", "triton:" + MMA, shape_b=(16, 8)).verdict == "equal"
