"""The PTX interpreter (``layoutverify.apps.ptxsim``) runs Triton's own conversion code.

Every suite pair's conversion kernel, compiled on the CPU for sm_90 (and a subset for sm_80) by
every supported Triton release (3.6 - 3.9; the ``triton_python`` fixture of ``conftest.py``
provides an interpreter per release, installing it once when needed), is executed for every
thread of the CTA with every element tagged by its logical index; afterwards every register of
``B`` must hold the element ``B``'s canonical form (from the adapters, read with that release's
semantics) puts there, and the stored tile must be the input. Deliberately corrupted PTX (one
wrong shuffle lane, one wrong shared-memory offset, a missing barrier) of each release must be
caught.
"""
from __future__ import annotations

import re

import pytest

from layoutverify.adapters.triton import version
from layoutverify.apps.measure.suite import layouts, load_suite
from layoutverify.apps.measure.validate import check_pairs
from layoutverify.apps.ptxsim import SimError, check_conversion, parse_ptx
from layoutverify.core.errors import LayoutError


@pytest.fixture(scope="session")
def suite():
    return load_suite()


@pytest.fixture(params=version.SUPPORTED)
def compiled_sm90(request, suite_ptx):
    """``(release, the suite compiled for sm_90 by it)`` for every supported release (the
    corruption tests run on each release's PTX)."""
    return request.param, suite_ptx(request.param, 90)


def _pair(suite, compiled, name):
    release, ptx_of = compiled
    i = [p.name for p in suite].index(name)
    p = suite[i]
    return p, layouts(p, release)[1], ptx_of[i]["ptx"]


@pytest.mark.parametrize("release", version.SUPPORTED)
def test_every_register_holds_what_b_says(suite, suite_ptx, release):
    """Every pair, every thread, every register of ``B`` (read with ``release``'s semantics), for the
    PTX that ``release`` compiles."""
    compiled = suite_ptx(release)
    bad, ran = [], 0
    for i, p in enumerate(suite):
        r = compiled[i]
        assert "ptx" in r, (p.name, r.get("error"))
        assert r["triton"].startswith(release + "."), (p.name, r["triton"])
        run = check_conversion(r["ptx"], layouts(p, release)[1], p.element_bytes)
        ran += 1
        if not run.ok:
            bad.append((p.name, run.error, run.mismatches[:2], run.output_errors[:2]))
    assert not bad, (release, bad[:5])
    assert ran == len(suite)


@pytest.mark.parametrize("release", version.SUPPORTED)
def test_sm80_subset(suite, suite_ptx, release):
    # (fp8e4nv needs sm_89 or later)
    picked = [p for p in suite if p.family in ("blocked-transpose", "mma-dot", "linear-shuffle")
              and p.dtype != "fp8"][:10]
    assert len(picked) == 10
    compiled = suite_ptx(release, 80, picked)
    for i, p in enumerate(picked):
        assert "ptx" in compiled[i], (p.name, compiled[i].get("error"))
        assert "sm_80" in compiled[i]["ptx"]
        run = check_conversion(compiled[i]["ptx"], layouts(p, release)[1], p.element_bytes)
        assert run.ok, (release, p.name, run.error, run.mismatches[:2])
    # the emitted mechanism is predicted for sm_80 too (no stmatrix there; same class)
    checks = check_pairs(picked, compiled, simulate=False, triton_version=release)
    assert all(c.prediction_ok for c in checks), [(c.pair.name, c.emitted_class, c.ptx_class) for c in checks
                                                  if not c.prediction_ok]


def test_traffic_is_counted(suite, compiled_sm90):
    p, b, ptx = _pair(suite, compiled_sm90, "blocked-transpose-1-f16-64x64")
    run = check_conversion(ptx, b, p.element_bytes)
    t = run.traffic
    # a 64x64 f16 tile stored once and loaded once, conflict-free: 8192 B each way, 64 wavefronts
    assert t.shared_store_bytes == 8192 and t.shared_load_bytes == 8192
    assert t.store_wavefronts == 8192 // 128 and t.load_wavefronts == 8192 // 128
    assert t.barriers >= 1


def test_wrong_shuffle_lane_is_caught(suite, compiled_sm90):
    p, b, ptx = _pair(suite, compiled_sm90, "linear-shuffle-1-f32-16x32")
    assert check_conversion(ptx, b, p.element_bytes).ok
    m = re.search(r"(shfl\.sync\.\w+\.b32\s+[^,]+,\s*[^,]+,\s*)(\d+)(,)", ptx)
    assert m, "the shuffle pair's PTX has a shuffle with an immediate lane operand"
    lane = int(m.group(2))
    bad = ptx[:m.start(2)] + str(lane ^ 2) + ptx[m.end(2):]
    run = check_conversion(bad, b, p.element_bytes)
    assert not run.ok and run.n_mismatches > 0
    assert {"register", "lane", "warp"} <= set(run.mismatches[0]["location"])


def test_wrong_shared_offset_is_caught(suite, compiled_sm90):
    p, b, ptx = _pair(suite, compiled_sm90, "blocked-transpose-3-f32-64x64")
    assert check_conversion(ptx, b, p.element_bytes).ok
    m = re.search(r"ld\.shared(?:::cta)?\.v4\.b32\s+\{[^}]*\},\s*\[\s*(%r\d+)\s*(?:\+\s*(\d+))?\s*\]", ptx)
    assert m
    off = int(m.group(2) or 0) + 16
    bad = ptx[:m.start()] + ptx[m.start():m.end()].replace(m.group(0)[m.group(0).index("["):], f"[{m.group(1)}+{off}]") \
        + ptx[m.end():]
    run = check_conversion(bad, b, p.element_bytes)
    assert not run.ok and (run.n_mismatches > 0 or run.error)


def test_missing_barrier_is_a_race(suite, compiled_sm90):
    p, b, ptx = _pair(suite, compiled_sm90, "blocked-transpose-3-f32-64x64")
    bad = re.sub(r"\bbar\.sync\s+0;", "", ptx)
    run = check_conversion(bad, b, p.element_bytes)
    assert not run.ok and "race" in (run.error or "")


def test_unknown_instruction_is_named(suite, compiled_sm90):
    p, b, ptx = _pair(suite, compiled_sm90, "blocked-transpose-3-f32-64x64")
    bad = ptx.replace("bar.sync \t0;", "tanh.approx.f32 %f1, %f2;\n\tbar.sync \t0;", 1)
    if bad == ptx:
        bad = re.sub(r"(\bbar\.sync\s+0;)", r"tanh.approx.f32 %f1, %f2;\n\t\1", ptx, count=1)
    run = check_conversion(bad, b, p.element_bytes)
    assert not run.ok and "tanh.approx.f32" in run.error


def test_arithmetic_on_data_is_refused(suite, compiled_sm90):
    p, b, ptx = _pair(suite, compiled_sm90, "blocked-transpose-3-f32-64x64")
    m = re.search(r"st\.shared(?:::cta)?\.v4\.b32\s+\[[^\]]*\],\s*\{\s*(%r\d+)", ptx)
    reg = m.group(1)
    bad = ptx[:m.start()] + f"add.s32 {reg}, {reg}, 1;\n\t" + ptx[m.start():]
    run = check_conversion(bad, b, p.element_bytes)
    assert not run.ok and "data" in run.error


def test_parser_errors():
    with pytest.raises(LayoutError):
        parse_ptx("no kernel here")
    prog = parse_ptx(".visible .entry k(\n.param .u64 k_param_0\n)\n.reqntid 32\n{\n\tmov.u32 %r1, %tid.x;\n\tret;\n}\n")
    assert prog.params == ["k_param_0"] and prog.threads == 32 and prog.instructions[0].opcode == "mov.u32"
    assert issubclass(SimError, LayoutError)
