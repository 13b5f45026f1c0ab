"""The TTGIR text parser (``layoutverify.adapters.triton.parser``) and spec-derived conversions.

Parser expectations are the text itself (what each parameter says); conversion expectations come
from the PTX ISA fragment tables (``mma.m16n8k16``) and Triton's documented examples, not from
our implementation.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutverify.adapters.triton import parse
from layoutverify.adapters.triton.attr import Attr
from layoutverify.adapters.triton.parser import MAX_DEPTH, parse_text
from layoutverify.core.errors import LayoutError, ParseError

BLOCKED = ("#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], "
           "order = [1, 0]}>")
MMA = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>"


# -- what parses, and to what -------------------------------------------------------------------
def test_blocked_attribute():
    p = parse_text(BLOCKED)
    assert p.attr.kind == "blocked"
    assert p.attr.params == {"sizePerThread": [1, 4], "threadsPerWarp": [4, 8], "warpsPerCTA": [4, 1],
                             "order": [1, 0]}
    assert p.attr.column == 1 and p.attr.text == BLOCKED
    assert p.shape is None and p.container is None


def test_nested_parent_and_kwidth():
    p = parse_text(f"#ttg.dot_op<{{opIdx = 0, parent = {MMA}, kWidth = 2}}>")
    assert p.attr.kind == "dot_op"
    parent = p.attr.params["parent"]
    assert isinstance(parent, Attr) and parent.kind == "nvidia_mma"
    assert parent.params["instrShape"] == [16, 8]
    assert parent.column == len("#ttg.dot_op<{opIdx = 0, parent = ") + 1
    assert p.attr.params["kWidth"] == 2


def test_values_bools_typed_ints_units_dicts_strings():
    p = parse_text('#ttg.amd_wmma<{version = 3 : i32, isTranspose = true, flag, name = "x y", '
                   'ctaLayout = {warp = [[0, 1], [1, 0]]}, instrShape = [16, 16, 32]}>')
    assert p.attr.params == {"version": 3, "isTranspose": True, "flag": True, "name": "x y",
                             "ctaLayout": {"warp": [[0, 1], [1, 0]]}, "instrShape": [16, 16, 32]}
    assert parse_text("#ttg.amd_mfma<{isTransposed = false}>").attr.params == {"isTransposed": False}


def test_tensor_type_gives_shape_and_element_type():
    p = parse_text(f"tensor<64x32xf16, {BLOCKED}>")
    assert p.shape == (64, 32) and p.element_type == "f16" and p.container == "tensor"
    assert p.attr.kind == "blocked"
    p = parse_text(f"tensor<128x!tt.ptr<f32>, #ttg.slice<{{dim = 1, parent = {BLOCKED}}}>>")
    assert p.shape == (128,) and p.element_type == "!tt.ptr<f32>" and p.attr.kind == "slice"
    p = parse_text("tensor< 16 x 8 x bf16 , #ttg.linear<{register = [], lane = [[1, 0]], warp = [], block = []}> >")
    assert p.shape == (16, 8) and p.element_type == "bf16"


def test_memdesc_type():
    p = parse_text("!ttg.memdesc<2x64x64xf16, #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, "
                   "order = [1, 0]}>, #ttg.shared_memory, mutable, 2x64x64>")
    assert p.container == "memdesc" and p.shape == (2, 64, 64) and p.alloc_shape == (2, 64, 64)
    assert p.attr.kind == "swizzled_shared" and p.memory_space.kind == "shared_memory"


def test_padded_and_shared_linear_syntax():
    p = parse_text("#ttg.padded_shared<[32:+4, 64:+8] {order = [1, 0], shape = [64, 64]}>")
    assert p.attr.params == {"intervals": [32, 64], "paddings": [4, 8], "order": [1, 0], "shape": [64, 64]}
    p = parse_text("#ttg.shared_linear<{offset = [[0, 1], [1, 0]]}, alignment = 16>")
    assert p.attr.params == {"offset": [[0, 1], [1, 0]], "alignment": 16}


def test_old_spellings_are_renamed():
    assert parse_text("#triton_gpu.blocked<{order = [0]}>").attr.kind == "blocked"
    assert parse_text("#triton_gpu.mma<{versionMajor = 2}>").attr.kind == "nvidia_mma"
    assert parse_text("#ttg.mma<{versionMajor = 2}>").attr.kind == "nvidia_mma"
    assert parse_text("#triton_gpu.mfma<{versionMajor = 2}>").attr.kind == "amd_mfma"
    assert parse_text("#triton_gpu.shared<{vec = 1}>").attr.kind == "shared"
    assert parse_text("#ttng.tensor_memory_encoding<{blockM = 128}>").attr.kind == "ttng.tensor_memory_encoding"


def test_aliases_as_in_a_printed_module():
    text = (f"#loc = loc(\"x.mlir\":1:1)\n#mma = {MMA}\n#blocked = {BLOCKED}\n"
            "tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>>")
    p = parse_text(text)
    assert set(p.aliases) == {"mma", "blocked"}
    assert p.attr.params["parent"].params["warpsPerCTA"] == [2, 2]
    assert p.prelude.startswith("#loc") and p.main.startswith("tensor<")
    # definitions alone mean the last one
    assert parse_text(f"#mma = {MMA}\n#blocked = {BLOCKED}").attr.kind == "blocked"
    # and the layout is the same as written inline
    inline = parse(f"tensor<64x64xf16, #ttg.dot_op<{{opIdx = 1, parent = {MMA}, kWidth = 2}}>>")
    assert parse(text).f2_bases() == inline.f2_bases()


def test_comments_and_newlines_are_whitespace():
    p = parse_text("#ttg.blocked<{\n  sizePerThread = [1, 4], // per thread\n  threadsPerWarp = [4, 8],\n"
                   "  warpsPerCTA = [4, 1],\n  order = [1, 0]\n}>")
    assert p.attr.params["order"] == [1, 0]


# -- errors: clear, with the token and column -----------------------------------------------
@pytest.mark.parametrize("text, column, token", [
    ("#ttg.blocked<{sizePerThread = [1, 4}>", 36, "}"),
    ("#ttg.blocked<{sizePerThread = [1, 4]", 37, "end of text"),
    ("#ttg.blocked<{sizePerThread = [1, 4]}>>", 39, ">"),
    ("#ttg.blocked<{sizePerThread [1, 4]}>", 29, "["),
    ("#ttg.blocked<{sizePerThread = [1, 4], sizePerThread = [1]}>", 39, "sizePerThread"),
    ("#ttg.blocked<{sizePerThread = [1, @]}>", 35, "@"),
    ("#ttg.blocked<{order = [1, 99999999999]}>", 27, "99999999999"),
    ("tensor<64x64xf16, #blocked>", 19, "#blocked"),
    ("tensor<64x?xf16, #blocked>", 11, "?"),
    ("blocked<{order = [0]}>", 1, "blocked"),
    ("", 1, "end of text"),
    ('#ttg.x<{a = "unterminated}>', 13, '"unterminate'),
])
def test_parse_errors_name_token_and_column(text, column, token):
    with pytest.raises(ParseError) as ei:
        parse_text(text)
    assert ei.value.column == column, str(ei.value)
    assert ei.value.token == token, str(ei.value)
    assert f"column {column}" in str(ei.value) and "\n" not in str(ei.value)


def test_multiline_errors_say_the_line():
    with pytest.raises(ParseError) as ei:
        parse_text(f"#mma = {MMA}\n#blocked = #ttg.blocked<{{order = [0}}>\n#blocked")
    assert "line 2" in str(ei.value) and ei.value.column == 36


def test_deep_nesting_is_a_clear_error():
    for text in ["[" * 10_000, "#ttg.slice<{dim = 0, parent = " * 10_000,
                 "#ttg.linear<{register = " + "[" * 10_000 + "]" * 10_000 + "}>",
                 "#ttg.x<{p = {q = " * 5000]:
        with pytest.raises(ParseError) as ei:
            parse(text, shape=(4, 4))
        assert "nest" in str(ei.value) or "expected" in str(ei.value)
    with pytest.raises(ParseError, match=f"nesting deeper than {MAX_DEPTH}"):
        parse_text("#ttg.slice<{dim = 0, parent = " * 40 + BLOCKED + "}>" * 40)


def test_nesting_within_the_limit_works():
    text = BLOCKED
    for _ in range(3):
        text = f"#ttg.slice<{{dim = 0, parent = {text}}}>"
    p = parse_text(text)
    assert p.attr.params["parent"].params["parent"].params["parent"].kind == "blocked"


def test_size_limits():
    with pytest.raises(ParseError, match="too large"):
        parse_text(f"tensor<1099511627776xf16, {BLOCKED}>")
    with pytest.raises(ParseError, match="elements is too large"):
        parse_text(f"tensor<1048576x1048576xf16, {BLOCKED}>")
    with pytest.raises(ParseError, match="too large"):
        parse_text("#ttg.blocked<{order = [" + "9" * 400 + "]}>")
    with pytest.raises(LayoutError, match="too long"):
        parse_text("#ttg.blocked<{order = [" + "0, " * 400_000 + "0]}>")


GARBAGE_ALPHABET = st.sampled_from(list("#ttg.<>{}[](),:=+x0123456789 abcdefgiklmnoprsuvwxyzACGLNOPST\"!-_\n"))


@settings(max_examples=300, deadline=None)
@given(st.text(GARBAGE_ALPHABET, max_size=80))
def test_garbage_gives_only_layout_errors(text):
    try:
        parse(text, shape=(16, 16))
    except LayoutError as e:
        assert "\n" not in str(e)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 200), st.integers(0, 200), st.sampled_from(["", "[", "]", "<", ">", "{", "}", ",", "=", "-1",
                                                                  "0", "3", "#ttg.x", "true", "#a"]))
def test_mutated_valid_text_gives_only_layout_errors(cut, length, insert):
    text = f"tensor<64x64xf16, #ttg.dot_op<{{opIdx = 0, parent = {MMA}, kWidth = 2}}>>"
    cut = cut % len(text)
    mutated = text[:cut] + insert + text[cut + length % 7:]
    try:
        parse(mutated)
    except LayoutError as e:
        assert "\n" not in str(e)


# -- conversions with spec-derived expectations -----------------------------------------------
def test_design_doc_blocked_example():
    """DESIGN.md §2: Gluon's BlockedLayout([2, 2], [8, 4], [1, 2], [1, 0]) over [16, 16]."""
    lay = parse("#ttg.blocked<{sizePerThread = [2, 2], threadsPerWarp = [8, 4], warpsPerCTA = [1, 2], "
                "order = [1, 0]}>", shape=(16, 16))
    b = lay.f2_bases()
    assert b["register"] == [(0, 1), (1, 0)]
    assert b["lane"] == [(0, 2), (0, 4), (2, 0), (4, 0), (8, 0)]
    assert b["warp"] == [(0, 8)]
    assert b["block"] == []


def test_mma_v2_accumulator_is_the_ptx_c_fragment():
    """PTX ISA, mma.m16n8k16 (f16/f32 accumulators): c0,c1 at (groupID, 2*tig + i), c2,c3 at row + 8,
    with groupID = lane >> 2 and tig = lane % 4."""
    lay = parse(MMA.replace("[2, 2]", "[1, 1]"), shape=(16, 8))
    b = lay.f2_bases()
    assert b["register"] == [(0, 1), (8, 0)]
    assert b["lane"] == [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]


def test_mma_v2_operands_are_the_ptx_a_and_b_fragments():
    """PTX ISA, mma.m16n8k16 .f16: a0,a1 at (groupID, 2*tig + i), a2,a3 at row + 8, a4..a7 at col + 8;
    b0,b1 at (k = 2*tig + i, n = groupID), b2,b3 at k + 8."""
    one = MMA.replace("[2, 2]", "[1, 1]")
    a = parse(f"#ttg.dot_op<{{opIdx = 0, parent = {one}, kWidth = 2}}>", shape=(16, 16)).f2_bases()
    assert a["register"] == [(0, 1), (8, 0), (0, 8)]
    assert a["lane"] == [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]
    b = parse(f"#ttg.dot_op<{{opIdx = 1, parent = {one}, kWidth = 2}}>", shape=(16, 8)).f2_bases()
    assert b["register"] == [(1, 0), (8, 0)]
    assert b["lane"] == [(2, 0), (4, 0), (0, 1), (0, 2), (0, 4)]


def test_hopper_warps_go_down_m_first():
    """wgmma: a warp group's 4 warps cover 4 x 16 rows of the 64-row accumulator."""
    lay = parse("#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], "
                "instrShape = [16, 64, 16]}>", shape=(64, 64))
    assert lay.f2_bases()["warp"] == [(16, 0), (32, 0)]


def test_shape_is_required_and_checked():
    with pytest.raises(LayoutError, match="needs a tensor shape"):
        parse(BLOCKED)
    with pytest.raises(LayoutError, match="rank"):
        parse(BLOCKED, shape=(64,))
    with pytest.raises(LayoutError, match="power-of-two"):
        parse(BLOCKED, shape=(64, 48))
    with pytest.raises(LayoutError, match="disagrees"):
        parse(f"tensor<64x64xf16, {BLOCKED}>", shape=(32, 32))
    with pytest.raises(LayoutError, match="lanes per warp"):
        parse(BLOCKED, shape=(64, 64), warp_size=64)
    # a linear layout carries its own shape
    assert parse("#ttg.linear<{register = [[0, 1]], lane = [[1, 0]], warp = [], block = []}>").shape == (2, 2)


def test_unknown_and_missing_parameters_are_named():
    with pytest.raises(LayoutError, match="no parameter 'foo'"):
        parse(BLOCKED.replace("order", "foo = 1, order"), shape=(16, 16))
    with pytest.raises(LayoutError, match="needs parameter order"):
        parse(BLOCKED.replace(", order = [1, 0]", ""), shape=(16, 16))
    with pytest.raises(LayoutError, match="#ttg.bogus"):
        parse("#ttg.bogus<{a = 1}>", shape=(16, 16))
