"""The Triton parser's fast path (``parser.fast_parse``) gives exactly the full parser's result,
or declines (``None``) and leaves the text, and any error, to the full parser.

The full parser (``parser._Parser``) is the reference: it is what the error-message tests
(test_triton_parser, test_triton_badinput, test_hostile) pin down. Here every text of a corpus
(the benchmark's families, seeded random encodings of every distributed kind, whole tensor
types, alias preludes) and random mutations of them are read both ways.
"""
from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

import triton_oracle as O
from layoutverify.adapters.triton import parser as P
from layoutverify.core.errors import LayoutError

BLOCKED = "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
MMA2 = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>"
COMMON = [
    BLOCKED, MMA2,
    "#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 16, 16]}>",
    "#ttg.amd_mfma<{version = 3, warpsPerCTA = [2, 2], instrShape = [16, 16, 16], isTransposed = true}>",
    f"#ttg.dot_op<{{opIdx = 0, parent = {MMA2}, kWidth = 2}}>",
    f"#ttg.slice<{{dim = 1, parent = {BLOCKED}}}>",
    "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>",
    "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>",
    "#ttg.linear<{register = [[0, 1], [0, 2], [8, 0]], lane = [[0, 4], [0, 8], [1, 0], [2, 0], [4, 0]], "
    "warp = [[16, 0], [0, 16]], block = []}>",
    "#ttg.linear<{register = [], lane = [], warp = [], block = []}>",
    "#triton_gpu.mma<{versionMajor = 2, warpsPerCTA = [2, 2]}>",
    "#ttg.blocked<{}>",
    f"tensor<64x32xf16, {BLOCKED}>",
    f"  tensor< 16 x 8 x bf16 , {MMA2} >  ",
    f"#mma = {MMA2}\n#blocked = {BLOCKED}\ntensor<64x64xf16, #ttg.dot_op<{{opIdx = 1, parent = #mma, kWidth = 2}}>>",
    f"#mma = {MMA2}\n#blocked = {BLOCKED}",
    f"#mma = {MMA2}\n#mma",
]
#: texts the fast path leaves to the full parser (each still parses, or fails, there)
DECLINED = [
    "#ttg.blocked<{\n  sizePerThread = [1, 4], // per thread\n  order = [1, 0]\n}>",
    '#ttg.amd_wmma<{version = 3 : i32, isTranspose = true, flag, name = "x y", warpsPerCTA = [2, 2]}>',
    "#ttg.padded_shared<[32:+4, 64:+8] {order = [1, 0], shape = [64, 64]}>",
    "#ttg.shared_linear<{offset = [[0, 1], [1, 0]]}, alignment = 16>",
    "!ttg.memdesc<2x64x64xf16, #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>, "
    "#ttg.shared_memory, mutable>",
    "#ttg<linear<{register = [], lane = [], warp = [], block = []}>>",
    "#ttng.tensor_memory_encoding<{blockM = 128, blockN = 128, colStride = 1}>",
    "#ttg.blocked<{order = [0x1, 0]}>",
    "#ttg.blocked<{order = [01, 0]}>",
    "#ttg.blocked<{order = [1, 0], order = [0, 1]}>",
    "#ttg.blocked<{order = [1, 99999999999]}>",
    f"tensor<128x!tt.ptr<f32>, {BLOCKED}>",
    f"tensor<64x?xf16, {BLOCKED}>",
    "#ttg.linear<{register = [[[0]]]}>",
    "#ttg.slice<{dim = 0, parent = " * 12 + BLOCKED + "}>" * 12,
    f"#loc = loc(\"x.mlir\":1:1)\n#mma = {MMA2}\n#mma",
]


def _full(text):
    """The full parser's answer: a Parsed, or the error it raises (type and message)."""
    try:
        return P._Parser(text).parse()
    except LayoutError as e:
        return (type(e).__name__, str(e))


def _agree(text):
    fast = P.fast_parse(text)
    full = _full(text)
    if fast is not None:
        assert not isinstance(full, tuple), f"fast path accepted what the parser rejects: {text!r}: {full}"
        assert fast == full, text
    # parse_text always answers as the full parser does
    try:
        got = P.parse_text(text)
    except LayoutError as e:
        got = (type(e).__name__, str(e))
    assert got == full, text
    return fast


def test_common_texts_take_the_fast_path_with_the_same_result():
    for text in COMMON:
        fast = _agree(text)
        assert fast is not None, text
        assert fast.attr.text and fast.attr.column >= 1


def test_declined_texts_go_to_the_full_parser():
    for text in DECLINED:
        assert P.fast_parse(text) is None, text
        _agree(text)


def test_seeded_random_encodings_agree():
    """Every kind the Triton sweep draws, bare and as whole tensor types; nearly all go fast."""
    rng = random.Random(7)
    cases = O.sweep_cases(20250611, 60)
    fast = 0
    for kind, text, shape in cases:
        for t in (text, f"tensor<{'x'.join(map(str, shape))}xf16, {text}>"):
            fast += _agree(t) is not None
    assert fast >= 0.95 * 2 * len(cases)
    # and with aliases for the parents, as a printed module writes them
    for kind, text, shape in rng.sample(cases, 40):
        _agree(f"#a0 = {BLOCKED}\n#a1 = {MMA2}\ntensor<{'x'.join(map(str, shape))}xf16, {text}>")


_PIECES = list("#<>{}[](),=:+-x0123456789 \n\t\"/") + ["ttg.", "blocked", "parent", "true", "#a", "[[", "]]", "0x1",
                                                    "// c\n", "tensor<", " : i32", "9999999999"]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(COMMON + DECLINED), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 3),
                                                              st.sampled_from(_PIECES)), max_size=3))
def test_mutated_texts_agree(text, edits):
    """Insertions, deletions and replacements anywhere: the fast path answers as the full parser
    does, or declines."""
    for at, cut, piece in edits:
        at %= len(text) + 1
        text = text[:at] + piece + text[at + cut:]
    _agree(text)


def test_a_tensor_of_very_many_dims_is_a_parse_error():
    """The element count of 100,000 dims of 2 has more digits than Python prints by default:
    the error names the bound it passed instead (once a ValueError, an internal error)."""
    import pytest
    from layoutverify.core.errors import ParseError
    with pytest.raises(ParseError, match="more than 8589934592 elements is too large"):
        P.parse_text("tensor<" + "2x" * 100_000 + "f16, #ttg.blocked<{}>>")
