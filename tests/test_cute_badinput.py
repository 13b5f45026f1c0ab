"""Bad CuTe input gives a clear LayoutError (never a traceback, RecursionError, hang or
MemoryError), and the CLI prints one line and exits 2."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from layoutverify.adapters.cute import evaluate, parse
from layoutverify.apps.cli import main
from layoutverify.core.errors import LayoutError, NotInvertibleError, ParseError, SizeLimitError, UnsupportedError

DEEP = "(" * 10_000 + "1" + ")" * 10_000
DEEP_CALLS = "coalesce(" * 10_000 + "8:1" + ")" * 10_000
DEEP_TEMPLATE = "Layout<" + "Shape<" * 10_000 + "_2" + ">" * 10_001
DEEP_SHAPE = "(" * 10_000 + "2" + ")" * 10_000 + ":" + "(" * 10_000 + "1" + ")" * 10_000
BIG = "(1048576,1048576):(1,1048576)"            # 2^40 elements

BAD = [
    # (text, exception type, a phrase of the message)
    ("((2,4):(1,2)", ParseError, "unbalanced '('"),
    ("(2,4)):(1,2)", ParseError, "unbalanced ')'"),
    ("(2,4):(1,2", ParseError, "unbalanced '('"),
    ("(2,4):(1,2,3)", LayoutError, "same profile"),
    ("((2,4),8):(1,2)", LayoutError, "same profile"),
    ("(2,(4,2)):(1,(2,8,16))", LayoutError, "same profile"),
    ("(0,4):(1,1)", LayoutError, "sizes must be positive"),
    ("(2,-4):(1,2)", ParseError, "sizes must be positive"),      # negative strides are fine, shapes not
    ("(2,4):(1,-2)", UnsupportedError, "negative strides"),
    ("(4,2):(--1,2)", ParseError, "one sign per integer"),
    ("()", ParseError, "empty tuple"),
    ("", ParseError, "empty"),
    (DEEP, ParseError, "nesting deeper than"),
    (DEEP_CALLS, ParseError, "nesting deeper than"),
    (DEEP_SHAPE, ParseError, "nesting deeper than"),
    (DEEP_TEMPLATE, ParseError, "nesting deeper than"),
    ("Layout<Shape<_2,_4>, Stride<_1>>", LayoutError, "same profile"),
    ("Layout<Shape<_2,quux>>", LayoutError, "unknown C++ type"),
    (BIG, SizeLimitError, "2^32"),
    ("(1099511627776):(1)", SizeLimitError, "2^32"),
    ("(1048576,1048576,1048576,1048576):(1,1,1,1)", SizeLimitError, "2^48"),
    ("123456789012345678901234567890123", ParseError, "integer too large"),
    ("(2,2):(1,1)", NotInvertibleError, "both map to offset"),
    ("(2,2):(1,4)", NotInvertibleError, "not the image of any coordinate"),
    ("composition((4,3):(3,1), 5:2)", LayoutError, "divisibility"),
    ("complement((2,2):(1,1), 8)", LayoutError, "not injective"),
    ("left_inverse((3,2,2):(1,4,6))", LayoutError, "divisibility"),
    ("logical_divide((8,8):(8,1), (2,4,2))", LayoutError, "tiler"),
    ("Sw<1,2,0> o (8,8):(8,1)", LayoutError, "|S| must be at least B"),
    ("Sw<3,4,3> o 3 o 5", LayoutError, ""),
    ("SM80_99x8x16_F32F16F16F32_TN.A", ParseError, "unknown name"),
    ("SM90_64x64x16_F32F16F16_SS.A", UnsupportedError, "shared memory"),
    ("GMMA::Layout_K_SW128_Atom<quux_t>", ParseError, "unknown element type"),
    ("tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2,2,1,2), C)", LayoutError, "more than 3"),
    ("make_layout(1:0, _)", LayoutError, "make_layout"),
    ("logical_divide(8:1)", LayoutError, "takes 2"),
    ("upcast<3>(8:1)", LayoutError, "power of two"),
    ("8:1 @", ParseError, "unexpected character"),
    ("(2,4):(1,2) extra", ParseError, "unexpected token after the layout"),
]


@pytest.mark.parametrize("text,exc,phrase", BAD, ids=[t[:40] for t, _, _ in BAD])
def test_bad_input_raises_layout_error(text, exc, phrase):
    t0 = time.perf_counter()
    with pytest.raises(exc) as e:
        parse(text)
    assert time.perf_counter() - t0 < 5
    assert phrase in str(e.value)
    assert "\n" not in str(e.value)
    if isinstance(e.value, ParseError) and e.value.column is not None:
        assert 1 <= e.value.column <= len(text) + 1


def test_parse_error_names_token_and_column():
    with pytest.raises(ParseError) as e:
        parse("(2,4):(1,2 x")
    assert e.value.token == "x" and e.value.column == 12


def test_deep_nesting_is_not_a_recursion_error():
    for text in (DEEP, DEEP_CALLS, DEEP_SHAPE, DEEP_TEMPLATE):
        try:
            evaluate(text)
        except RecursionError:  # pragma: no cover - the failure this test guards against
            pytest.fail("RecursionError")
        except LayoutError:
            pass


def test_2_to_40_elements_do_not_hang_or_exhaust_memory():
    t0 = time.perf_counter()
    lay = evaluate(BIG)          # the algebra is symbolic: a 2^40-element layout is fine to hold
    assert lay.size() == 1 << 40
    assert str(evaluate(f"coalesce({BIG})")) == "1099511627776:1"
    with pytest.raises(SizeLimitError):
        parse(BIG)
    with pytest.raises(SizeLimitError):
        parse(BIG, as_="function")
    assert time.perf_counter() - t0 < 5


@pytest.mark.parametrize("text", [t for t, _, _ in BAD if t])
def test_cli_exits_2_with_one_line(text, capsys):
    rc = main(["show", f"cute:{text}"])
    out = capsys.readouterr()
    assert rc == 2, out
    lines = [l for l in out.err.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("layoutverify: error:"), out.err
    assert "Traceback" not in out.err and "internal error" not in out.err


def test_cli_subprocess(cli_env):
    for text in ("((2,4):(1,2)", DEEP):
        p = subprocess.run([sys.executable, "-m", "layoutverify", "show", f"cute:{text}"],
                           capture_output=True, text=True, env=cli_env, timeout=60)
        assert p.returncode == 2
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
