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

import numpy as np

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


# -- grown for older Triton releases and replicated registers (issue 22) ------------------------------
_TINY = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(
\t.param .u64 k_param_0,
\t.param .u64 k_param_1
)
.reqntid 32
{
\t.reg .b32 \t%r<8>;
\t.reg .b64 \t%rd<8>;
\tld.param.u64 \t%rd1, [k_param_0];
\tmov.u32 \t%r1, %tid.x;
\tmul.wide.u32 \t%rd2, %r1, 4;
\tadd.s64 \t%rd3, %rd1, %rd2;
\tld.global.b32 \t%r2, [%rd3];
\tBODY
\tmov.b32 %r4, %r3; // lv-observe
\tret;
}
"""


def test_opcode_followed_by_a_tab():
    """Triton 2.x prints ``shfl.sync.idx.b32\\t%r1, ...``: the opcode ends at the tab."""
    prog = parse_ptx(_TINY.replace("BODY", "shfl.sync.idx.b32\t%r3, %r2, 1, 31, -1;"))
    ins = [i for i in prog.instructions if i.opcode.startswith("shfl")][0]
    assert ins.opcode == "shfl.sync.idx.b32" and ins.operands == ["%r3", "%r2", "1", "31", "-1"]
    from layoutverify.apps.ptxsim import run_conversion
    m = run_conversion(_TINY.replace("BODY", "shfl.sync.idx.b32\t%r3, %r2, 1, 31, -1;"), 1, 128, threads=32)
    # every lane received lane 1's word: elements 4..7
    assert (m.observed[0] == 256 + 8 * np.arange(4, 8)[None, :]).all()


def test_tab_separated_ptx_of_a_suite_pair(suite, suite_ptx):
    p, b, ptx = _pair(suite, ("3.9", suite_ptx("3.9")), "linear-shuffle-1-f32-16x32")
    tabbed = re.sub(r"\b(shfl\.sync\.\w+\.b32) +", "\\1\t", ptx)
    assert tabbed != ptx and check_conversion(tabbed, b, p.element_bytes).ok


def test_bit_field_insert_of_a_data_byte():
    """``bfi.b32 d, a, b, 8, 8`` moves byte 0 of ``a`` to byte 1 of ``b`` (Triton 3.0 packs 8-bit
    elements so); a non-byte position is refused, not guessed."""
    from layoutverify.apps.ptxsim import run_conversion
    m = run_conversion(_TINY.replace("BODY", "bfi.b32 \t%r3, %r2, 0, 8, 8;"), 1, 128, threads=32)
    word = m.observed[0]
    t = np.arange(32)
    assert (word[:, 1] == 256 + 8 * 4 * t).all() and (word[:, [0, 2, 3]] == 0).all()
    with pytest.raises(SimError, match="whole bytes"):
        run_conversion(_TINY.replace("BODY", "bfi.b32 \t%r3, %r2, 0, 4, 8;"), 1, 128, threads=32)


REPLICATED_B = ("triton:#ttg.linear<{register = [[0, 1], [0, 0], [0, 2], [0, 0]], lane = [[1, 0], [2, 0], [4, 0], "
                "[8, 0], [0, 0]], warp = [[0, 0], [0, 0]], block = []}>")


@pytest.mark.parametrize("release", version.SUPPORTED)
def test_destination_with_replicated_registers(triton_python, tmp_path, release):
    """B holds every element in 4 registers (two zero register bases): each replica of every
    thread is checked, and a kernel that observes a wrong register for one of them is caught."""
    from layoutverify.apps.measure.suite import Pair
    from layoutverify.apps.measure.validate import compile_suite
    pair = Pair("replicated-registers", "replicated",
                "triton:#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], "
                "order = [1, 0]}>", REPLICATED_B, (16, 4), "f16")
    b = layouts(pair, release)[1]
    assert b.in_size("register") == 16
    ptx = compile_suite([pair], python=triton_python(release), cache_dir=str(tmp_path))[0]["ptx"]
    run = check_conversion(ptx, b, pair.element_bytes)
    assert run.ok, (run.error, run.mismatches[:2])
    assert run.locations == 128 * 16
    # 3.6 observes all 8 words (replicas twice), later releases one per distinct register pair
    obs = re.findall(r"mov\.b32 (%r\d+), (%r\d+); // lv-observe", ptx)
    assert len(obs) in (2, 8)
    # swap two observed words of different sources: those registers (and replicas) go wrong
    (d0, s0) = obs[0]
    (d1, s1) = next(o for o in obs if o[1] != s0)
    bad = ptx.replace(f"mov.b32 {d0}, {s0}; // lv-observe", f"mov.b32 {d0}, {s1}; // lv-observe") \
             .replace(f"mov.b32 {d1}, {s1}; // lv-observe", f"mov.b32 {d1}, {s0}; // lv-observe")
    run = check_conversion(bad, b, pair.element_bytes)
    assert not run.ok and run.n_mismatches > 0
    wrong_regs = {m["location"]["register"] for m in run.mismatches}
    assert len(wrong_regs) > 1, "a replica is checked, not only its first register"
