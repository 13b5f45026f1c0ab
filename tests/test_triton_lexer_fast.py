"""The Triton lexer's one-regex fast path produces exactly the tokens (and errors) of the
character-by-character scanner it shortcuts."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from layoutverify.adapters.triton import parser as P
from layoutverify.core.errors import LayoutError

ALPHABET = list("#!<>{}[](),=:+?*-x0123456789abfAFz_.$ \n\t\"/\\") + ["ttg.blocked", "0x1F", "64x64xf16", "// c\n"]


def _tokens(text, slow: bool):
    lx = P._Lexer(text)
    out = []
    try:
        while True:
            tok = lx._scan_slow() if slow else lx._scan()
            out.append((tok.kind, tok.value, tok.start, tok.end, tok.text))
            if tok.kind == "eof" or len(out) > 200:
                return out
    except LayoutError as e:
        return out + [("error", str(e))]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(ALPHABET), max_size=30).map("".join))
def test_fast_and_slow_scanners_agree(text):
    assert _tokens(text, False) == _tokens(text, True)


def test_typical_attributes_agree():
    for text in ["#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>",
                 "tensor<64x64xf16, #blocked>", "!ttg.memdesc<2x64x64xf16, #shared, #smem, mutable>",
                 "#ttg.padded_shared<[32:+4] {order = [1, 0], shape = [64, 64]}>", "4 : i32", "-12", "0x1fZ"]:
        assert _tokens(text, False) == _tokens(text, True)
