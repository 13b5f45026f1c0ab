"""Malformed Triton layout text: a clear one-line error from ``parse`` and exit code 2 from the CLI.

Each case names what the error must mention. The CLI runs as a real subprocess
(``python -m layoutverify show triton:@FILE``, the text read from a file so that 10,000-deep nesting
fits in argv) and must exit 2 with one ``layoutverify: error:`` line and no traceback. Cases
that make Triton itself abort are also handed to ``native_many``: each must come back as a
``NativeError`` while our process lives on.
"""
from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from layoutverify.adapters.triton import parse
from layoutverify.core.errors import LayoutError, NativeError

B_SPT, B_TPW, B_WPC, B_ORD = "[1, 4]", "[4, 8]", "[4, 1]", "[1, 0]"


def blocked(spt=B_SPT, tpw=B_TPW, wpc=B_WPC, order=B_ORD, extra=""):
    return (f"#ttg.blocked<{{sizePerThread = {spt}, threadsPerWarp = {tpw}, warpsPerCTA = {wpc}, "
            f"order = {order}{extra}}}>")


MMA2 = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>"
MMA3 = "#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 64, 16]}>"
LANES = "[[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]]"

# (text, shape or None, what the message must mention (regex, case-insensitive))
CASES = [
    # unknown attributes and kinds
    ("#ttg.bogus<{a = 1}>", "64x64", r"#ttg\.bogus"),
    ("#ttg.blocked_v2<{order = [0]}>", "64", r"blocked_v2"),
    ("#nvgpu.blocked<{order = [0]}>", "64", r"nvgpu\.blocked"),
    ("#ttg.shared_memory", "64", r"memory space"),
    # missing / unknown parameters
    (blocked().replace(", order = [1, 0]", ""), "64x64", r"needs parameter order"),
    (blocked(extra=", foo = 3"), "64x64", r"no parameter 'foo'"),
    ("#ttg.nvidia_mma<{versionMajor = 2, instrShape = [16, 8]}>", "64x64", r"warpsPerCTA"),
    ("#ttg.dot_op<{opIdx = 0, kWidth = 2}>", "64x64", r"parent"),
    ("#ttg.slice<{parent = " + blocked() + "}>", "64", r"needs parameter dim"),
    ("#ttg.linear<{register = [], lane = [[1]], warp = []}>", "64", r"block"),
    # wrong list lengths
    (blocked(tpw="[4, 8, 1]"), "64x64", r"threadsPerWarp.*3 entries"),
    (blocked(wpc="[4]"), "64x64", r"warpsPerCTA.*1 entries"),
    (blocked(order="[1, 0, 2]"), "64x64", r"order.*3 entries"),
    (blocked(spt="[]"), "64x64", r"rank"),
    (blocked(extra=", CGALayout = [[1]]"), "64x64", r"2 \(the layout's rank\)|entries"),
    ("#ttg.linear<{register = [[0, 1]], lane = [[1, 0, 0]], warp = [], block = []}>", "4x4", r"entries"),
    # values of the wrong kind
    (blocked(spt='"x"'), "64x64", r"sizePerThread must be a list of integers"),
    (blocked(spt="[[1], [4]]"), "64x64", r"list of integers"),
    (blocked(spt="[1, -4]"), "64x64", r"sizePerThread"),
    ("#ttg.dot_op<{opIdx = 0, parent = 3, kWidth = 2}>", "64x64", r"parent must be a layout attribute"),
    (blocked(order="[1, 1]"), "64x64", r"permutation"),
    (blocked(order="[0, 2]"), "64x64", r"permutation"),
    # powers of two where Triton needs them
    (blocked(spt="[1, 3]"), "64x64", r"sizePerThread must be a power of two"),
    (blocked(tpw="[3, 8]"), "64x64", r"threadsPerWarp must be a power of two"),
    (blocked(wpc="[3, 1]"), "64x64", r"warpsPerCTA must be a power of two"),
    (blocked(), "64x48", r"power-of-two tensor sizes.*48"),
    (blocked(), "96x64", r"power-of-two tensor sizes.*96"),
    (MMA2.replace("[16, 8]", "[16, 12]"), "64x64", r"instrShape"),
    (f"#ttg.dot_op<{{opIdx = 0, parent = {MMA2}, kWidth = 3}}>", "64x64", r"kWidth = 3 must be a power of two"),
    (blocked(extra=", CGALayout = [[2, 0]]"), "64x64", r"permutation matrix|surjective"),
    (blocked(extra=", CGALayout = [[1, 1]]"), "64x64", r"permutation matrix"),
    (blocked(extra=", CTAsPerCGA = [2, 1], CTASplitNum = [4, 1], CTAOrder = [1, 0]"), "64x64", r"not a multiple"),
    (blocked(extra=", CTAsPerCGA = [2, 1]"), "64x64", r"CTASplitNum"),
    (blocked(extra=", CGALayout = [[1, 0]], CTAsPerCGA = [2, 1]"), "64x64", r"both CGALayout"),
    ("#ttg.linear<{register = [[0, 1], [0, 4]], lane = [], warp = [], block = []}>", None, r"surjective"),
    ("#ttg.linear<{register = [[0, 1]], lane = [[1, 1]], warp = [], block = []}>", None, r"more than one dimension"),
    ("#ttg.linear<{register = [], lane = [], warp = [], block = []}>", None, r"no bases"),
    # shapes that do not fit
    (blocked(), "64", r"rank 1.*rank 2"),
    (blocked(), "4x4x4", r"rank 3.*rank 2"),
    (blocked(), None, r"needs a tensor shape"),
    ("tensor<64x64xf16>", None, r"no encoding"),
    (f"tensor<64x64xf16, {blocked()}>", "32x32", r"disagrees"),
    ("tensor<0x64xf16, " + blocked() + ">", None, r"positive"),
    # semantic rules of the kinds
    ("#ttg.nvidia_mma<{versionMajor = 7, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>", "64x64",
     r"versionMajor = 7"),
    ("#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1, 1], instrShape = [16, 64, 16]}>",
     "4x64x64", r"rank 2"),
    (f"#ttg.dot_op<{{opIdx = 1, parent = {MMA3}, kWidth = 2}}>", "64x64", r"opIdx must be 0 for a Hopper"),
    (f"#ttg.dot_op<{{opIdx = 2, parent = {MMA2}, kWidth = 2}}>", "64x64", r"opIdx must be 0 .* or 1"),
    (f"#ttg.dot_op<{{opIdx = 0, parent = {MMA2}}}>", "64x64", r"kWidth is required"),
    (f"#ttg.dot_op<{{opIdx = 0, parent = {blocked()}, kWidth = 2}}>", "64x64", r"kWidth must be 0"),
    (f"#ttg.dot_op<{{opIdx = 0, parent = #ttg.slice<{{dim = 0, parent = {MMA2}}}>, kWidth = 2}}>", "64x64",
     r"slice parent is not supported"),
    (f"#ttg.slice<{{dim = 5, parent = {blocked()}}}>", "64", r"dim = 5"),
    # sizes past the limits (2^40 elements, 2^40 registers)
    (f"tensor<1099511627776xf16, {blocked()}>", None, r"too large"),
    (f"tensor<1048576x1048576xf16, {blocked()}>", None, r"elements is too large"),
    ("#ttg.linear<{register = [" + ", ".join(["[0, 1]"] * 40) + "], lane = [], warp = [], block = []}>", None,
     r"2\^40"),
    (blocked(spt="[99999999999, 4]"), "64x64", r"too large"),
    # nesting 10,000 deep
    ("#ttg.slice<{dim = 0, parent = " * 10_000, "64", r"nesting deeper"),
    (blocked(spt="[" * 10_000 + "]" * 10_000), "64x64", r"nesting deeper"),
    ("#ttg.x<{p = {q = " * 10_000, "64", r"nesting deeper"),
    # unbalanced brackets
    (blocked()[:-1], "64x64", r"missing '>'"),
    (blocked()[:-2], "64x64", r"missing '}'|expected ',' or '}'"),
    (blocked() + ">", "64x64", r"unexpected text after"),
    (blocked(spt="[1, 4"), "64x64", r"expected ',' or '\]'"),
    (f"tensor<64x64xf16, {blocked()}", None, r"expected '>'"),
    # garbage
    ("hello world", "64x64", r"expected an attribute"),
    ("\x00\x01\x02", "64x64", r"unexpected character"),
    ("ω≠λ", "64x64", r"unexpected character"),
    ("#ttg.", "64", r"name"),
    ("# ttg.blocked", "64", r"name after '#'"),
    ("tensor<64x?xf16, #blocked>", None, r"dynamic"),
    ("tensor<64x64xf16, #blocked>", None, r"unknown alias #blocked"),
    (f"#a = {blocked()}\n#a = {blocked()}\n#a", "64x64", r"defined twice"),
    (blocked(extra=", order = [1, 0]"), "64x64", r"given twice"),
    ('#ttg.blocked<{name = "oops}>', "64", r"unterminated string"),
    ("#ttg.blocked<{order = [0x]}>", "64", r"malformed number|expected"),
]

#: cases the installed Triton aborts on (LLVM ERROR / assertion) or rejects; native must survive them
NATIVE_CASES = [
    (blocked(), "64x48"),
    (blocked(extra=", CGALayout = [[2, 0]]"), "64x64"),
    ("#ttg.linear<{register = [[0, 1], [0, 4]], lane = [], warp = [], block = []}>", None),
    ("#ttg.bogus<{a = 1}>", "64x64"),
    (blocked(spt="[1, 3]"), "64x64"),
    (f"#ttg.dot_op<{{opIdx = 1, parent = {MMA3}, kWidth = 2}}>", "64x64"),
    ("#ttg.amd_wmma<{version = 2, isTranspose = false, ctaLayout = {register = [[0, 32]], warp = [[0, 1], [1, 0]]}}>",
     "64x64"),
]


def _shape(s):
    return None if s is None else tuple(int(x) for x in s.split("x"))


def test_enough_cases():
    assert len(CASES) >= 50


@pytest.mark.parametrize("text, shape, mention", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_parse_gives_one_clear_line(text, shape, mention):
    import re
    with pytest.raises(LayoutError) as ei:
        parse(text, shape=_shape(shape))
    msg = str(ei.value)
    assert "\n" not in msg and 0 < len(msg) <= 600, msg
    assert re.search(mention, msg, re.I), msg


def test_cli_exits_2_without_traceback(tmp_path, cli_env):
    runs = []
    for i, (text, shape, _) in enumerate(CASES):
        path = tmp_path / f"case{i}.txt"
        path.write_text(text)
        argv = [sys.executable, "-m", "layoutverify", "show", f"triton:@{path}", "--no-grid"]
        if shape:
            argv += ["--shape", shape]
        runs.append((i, argv))
    # the 2^40-element shape given on the command line
    runs.append((len(CASES), [sys.executable, "-m", "layoutverify", "show", "triton:" + blocked(), "--shape",
                              "1048576x1048576"]))

    def run(item):
        i, argv = item
        p = subprocess.run(argv, capture_output=True, text=True, env=cli_env, timeout=120)
        return i, p

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run, runs))
    bad = []
    for i, p in results:
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        ok = (p.returncode == 2 and "Traceback" not in p.stderr and len(lines) == 1
              and lines[0].startswith("layoutverify: error:"))
        if not ok:
            bad.append((i, p.returncode, p.stderr[-300:]))
    assert not bad, bad


def test_native_survives_what_triton_aborts_on():
    pytest.importorskip("triton")
    from layoutverify.adapters.triton import native_many
    res = native_many([(t, _shape(s)) for t, s in NATIVE_CASES])
    assert len(res) == len(NATIVE_CASES)
    for (text, _), r in zip(NATIVE_CASES, res):
        assert isinstance(r, NativeError), (text, r)
        assert "\n" not in str(r)
    # and a good case after the crashes still works in the same batch
    good = native_many([(NATIVE_CASES[0][0], (64, 64))])[0]
    assert not isinstance(good, Exception)


# -- parameter fuzz: any integers in any slot give a layout or a LayoutError, nothing else ------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_INTS = st.one_of(st.integers(-3, 70), st.sampled_from([0, 1, 2, 4, 8, 16, 32, 1 << 20, (1 << 31) - 1]))
_LISTS = st.lists(_INTS, min_size=0, max_size=4)
_TEMPLATES = [
    "#ttg.blocked<{{sizePerThread = {l0}, threadsPerWarp = {l1}, warpsPerCTA = {l2}, order = {l3}}}>",
    "#ttg.blocked<{{sizePerThread = {l0}, threadsPerWarp = {l1}, warpsPerCTA = {l2}, order = {l3}, "
    "CGALayout = [{l4}]}}>",
    "#ttg.blocked<{{sizePerThread = {l0}, threadsPerWarp = {l1}, warpsPerCTA = {l2}, order = {l3}, "
    "CTAsPerCGA = {l4}, CTASplitNum = {l1}, CTAOrder = {l3}}}>",
    "#ttg.nvidia_mma<{{versionMajor = {i0}, versionMinor = {i1}, warpsPerCTA = {l0}, instrShape = {l1}}}>",
    "#ttg.dot_op<{{opIdx = {i0}, parent = #ttg.nvidia_mma<{{versionMajor = {i1}, versionMinor = 0, "
    "warpsPerCTA = {l0}, instrShape = {l1}}}>, kWidth = {i2}}}>",
    "#ttg.dot_op<{{opIdx = {i0}, parent = #ttg.blocked<{{sizePerThread = {l0}, threadsPerWarp = {l1}, "
    "warpsPerCTA = {l2}, order = {l3}}}>}}>",
    "#ttg.slice<{{dim = {i0}, parent = #ttg.blocked<{{sizePerThread = {l0}, threadsPerWarp = {l1}, "
    "warpsPerCTA = {l2}, order = {l3}}}>}}>",
    "#ttg.linear<{{register = [{l0}, {l1}], lane = [{l2}], warp = [{l3}], block = [{l4}]}}>",
]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(_TEMPLATES), st.lists(_LISTS, min_size=5, max_size=5), st.lists(_INTS, min_size=3, max_size=3),
       st.lists(st.sampled_from([1, 2, 4, 8, 16, 64, 3, 1 << 16]), min_size=1, max_size=4))
def test_fuzzed_parameters_give_layouts_or_layout_errors(template, lists, ints, shape):
    text = template.format(**{f"l{i}": str(v) for i, v in enumerate(lists)}, **{f"i{i}": v for i, v in enumerate(ints)})
    try:
        parse(text, shape=tuple(shape))
    except LayoutError as e:
        assert "\n" not in str(e)
