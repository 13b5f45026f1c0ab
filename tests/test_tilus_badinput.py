"""Bad input to the Tilus adapter: every failure is a clear LayoutError (never eval, never a
RecursionError/MemoryError/hang), and syntax problems name the token and its column."""
from __future__ import annotations

import random
import time

import pytest

import layoutverify.adapters.tilus as T
from layoutverify.adapters import parse_spec
from layoutverify.core.errors import LayoutError, NotInvertibleError, ParseError, SizeLimitError


def err(text, cls=LayoutError, **opts):
    with pytest.raises(cls) as info:
        T.parse(text, **opts)
    return info.value


@pytest.mark.parametrize("text,column,token", [
    ("spatial(2).__class__", 12, "__class__"),
    ("spatial(2).__class__.__mro__", 22, "__mro__"),
    ("local(2).__dict__(1)", 10, "__dict__"),
    ("spatial(2).foo(1)", 12, "foo"),
    ("eval('spatial(2)')", 1, "eval"),
    ("__import__('os').system('true')", 18, "system"),   # the method name is checked first
    ("__import__('os')", 1, "__import__"),
    ("os.system('true')", 4, "system"),
    ("spatial(2.5)", 9, "2.5"),
    ("spatial(2, 1or 2)", 12, "1or"),           # Python would warn on stderr and read `1 or 2`
    ("local(2, 4if 1 else 2)", 10, "4if"),
    ("spatial('4')", 9, "'4'"),
    ("spatial(2) * ñ", 14, "ñ"),                # columns count characters, not UTF-8 bytes
    ("spatial(2)\n  .local(ñ)", 21, "ñ"),       # and run across lines
    ("spatial(2, rank=[0])", 17, "[0]"),
    ("flatten(local(2), 0, 0, 0)", 25, "0"),
    ("compose(spatial(2), 3)", 21, "3"),
    ("spatial(2) * 3", 14, "3"),
    ("spatial(2) + local(2)", 1, "spatial(2) + local(2)"),
    ("spatial(2)[0]", 1, "spatial(2)[0]"),
    ("lambda: spatial(2)", 1, "lambda: spatial(2)"),
    ("spatial(*[2])", 9, "*[2]"),
    ("spatial(2))", 11, ")"),
    ("spatial(2", 8, "("),
    ("spatial(1 << 4)", 9, "1 << 4"),
    ("local(2, 3).spatial(4)).local(2)", 23, ")"),
])
def test_parse_errors_name_token_and_column(text, column, token):
    e = err(text, ParseError)
    assert e.column == column, str(e)
    assert e.token == token, str(e)
    assert f"column {column}" in str(e)


@pytest.mark.parametrize("text", [
    "", "   ", "\n",
    "x = spatial(2)", "spatial(2); local(2)", "import os", "spatial(2) if 1 else local(2)",
    "[spatial(2) for _ in range(3)]", "f'{spatial}'", "spatial", "spatial(True)", "spatial(None)",
    "replicated(2)", "reduce(spatial(2, 2), [0], keepdims=1)", "local(2, ranks=[0, 0])",
    "permute(spatial(2, 3), [0, 0])", "squeeze(spatial(2), [0])", "unsqueeze(spatial(2), [5])",
    "concat(spatial(2), shared_row_major(2))", "shared_row_major(2) * spatial(2)",
    "RegisterLayout(shape=[4], mode_shape=[3], spatial_modes=[0], local_modes=[])",
    "RegisterLayout(shape=[4], mode_shape=[4], spatial_modes=[0], local_modes=[0])",
    "RegisterLayout(shape=[4], mode_shape=[4], spatial_modes=[5], local_modes=[])",
    "RegisterLayout(shape=[4], mode_shape=[2, 2], spatial_modes=[0, 1], local_modes=[], extra=[1])",
    "register_layout([4], [4], [0])",
    "spatial(-2)", "spatial(0)", "local(2, [1])",
    "divide(spatial(2), spatial(3))", "spatial(2) / local(2)", "left_divide(spatial(6), local(2))",
    "spatial(2).reduce_to([3])", "reduce_to(spatial(2, 3), [2, 3, 4])", "flatten(spatial(2, 3), 1, 0)",
    "auto_local_spatial(5, [2, 3])", "Swizzle(0, 1, 2)", "shared_row_major(4, 4).apply_swizzle(3)",
    "shared_row_major(4, 4).apply_swizzle(Swizzle(0, 1, 2)).apply_swizzle(Swizzle(0, 1, 2))",
    "shared_row_major(2, 3).transpose().transpose().prepend_dim(0)", "shared_row_major(2, 2, 2).transpose()",
    "shared_compose(shared_row_major(2), shared_row_major(2, 2))",
    "shared_compose(shared_row_major_swizzle([8, 64], 2), shared_row_major(1, 1))",
    "shared_row_major_swizzle([8], 2)", "shared_row_major_swizzle([8, 4], 2)", "shared_row_major_swizzle([8, 64], 3)",
    "Swizzle(0, -1, 3)",
])
def test_bad_layouts_are_layout_errors(text):
    err(text)


def test_mismatched_reshape_sizes():
    e = err("reshape(local(2, 3).spatial(4), [5, 5])")
    assert "24 elements" in str(e) and "25 elements" in str(e) and e.column == 1 and e.token.startswith("reshape(")
    # same size, but not a row-major regrouping of the modes
    e = err("reshape(local(4).spatial(3), [3, 4])")
    assert "straddles" in str(e)


def test_huge_sizes_are_size_errors_not_hangs():
    t0 = time.time()
    for text in ["spatial(1099511627776)", "spatial(1024, 1024, 1024, 1024)", "local(1 << 40)",
                 "spatial(65536, 65536).local(65536)", "replicated(4, num_workers=1099511627776)",
                 "spatial(99999999999999999999999999999999999)", "shared_row_major(1048576, 1048576)"]:
        with pytest.raises(LayoutError):
            T.parse(text)
    with pytest.raises(SizeLimitError):
        T.parse("spatial(1024, 1024, 1024, 1024)")
    # symbolic layout of 2^32 locations is fine to build, only tabulating it is refused
    big = T.parse("local(4096, 4096).spatial(256)", warp_size=32)
    assert big.in_size() == 1 << 32
    with pytest.raises(SizeLimitError):
        big.table()
    assert time.time() - t0 < 10


@pytest.mark.parametrize("text", [
    "compose(" * 10000 + "local(1)" + ")" * 10000,
    "local(1)" + ".local(1)" * 10000,
    "-" * 100000 + "1",
    "[" * 5000 + "]" * 5000,
    "compose(" * 40 + "local(1)" + ")" * 40,
    "local(1)" + ".local(1)" * 150,
    "spatial(" + "-" * 50 + "1)",
    "spatial(" + ", ".join(["1"] * 3000) + ")",
])
def test_deep_and_long_inputs_are_clear_errors(text):
    e = err(text, ParseError)
    assert any(w in str(e) for w in ("nested", "chained", "too long", "tokens", "sign")), str(e)


def test_options_and_shape_checks():
    with pytest.raises(LayoutError, match="48 threads"):
        T.parse("spatial(48)", warp_size=32)
    assert T.parse("spatial(48)", warp_size=16).in_size("warp") == 3
    assert T.parse("spatial(48)", warp_size=64).in_size("lane") == 48
    with pytest.raises(LayoutError, match="unknown Tilus option"):
        T.parse("spatial(4)", num_warps=4)
    for ws in (0, -32, True, 2.0):
        with pytest.raises(LayoutError):
            T.parse("spatial(4)", warp_size=ws)
    with pytest.raises(LayoutError, match="shape"):
        T.parse("spatial(4, 8)", shape=(8, 4))
    assert T.parse("spatial(4, 8)", shape=(4, 8)).out_sizes == (4, 8)
    with pytest.raises(LayoutError):
        T.parse(b"spatial(4)")


def test_shared_layouts_without_offset_form():
    with pytest.raises(NotInvertibleError, match="holes"):
        T.parse("shared_layout([4], [4], [2])")           # padded: every other offset unused
    with pytest.raises(NotInvertibleError):
        T.parse("shared_layout([2, 2], [2, 2], [1, 1])")  # overlapping strides
    with pytest.raises(NotInvertibleError):
        T.parse("shared_layout([4], [4], [0])")           # broadcast


def test_through_the_registry():
    assert parse_spec("tilus:local(2, 1).spatial(8, 4).local(1, 2)").out_sizes == (16, 8)
    assert parse_spec("spatial(8, 4).local(1, 2)").out_sizes == (8, 8)      # guessed framework
    with pytest.raises(ParseError):
        parse_spec("tilus:spatial(2).__class__")


def test_fuzzed_texts_never_escape_as_other_exceptions():
    """Random edits of valid expressions either parse or raise LayoutError; nothing else."""
    rng = random.Random(5)
    seeds = ["local(2, 1).spatial(8, 4).local(1, 2)", "reduce(spatial(3, 4), dims=[0])",
             "RegisterLayout(shape=[4], mode_shape=[4], spatial_modes=[-3, 0], local_modes=[])",
             "shared_row_major_swizzle([16, 64], 2).permute([1, 0])", "spatial(2, 3) / spatial(1, 3)",
             "flatten(reshape(local(4, 2), [2, 4]), 0, -1)", "replicated(2, 3, num_workers=4)"]
    alphabet = "()[],.=*/-_0123456789 abcdefghijklmnopqrstuvwxyz'\"\\ñ#:"
    outcomes = {"ok": 0, "error": 0}
    for _ in range(3000):
        t = list(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            op = rng.random()
            pos = rng.randrange(len(t) + 1)
            if op < 0.4 and t:
                del t[min(pos, len(t) - 1)]
            elif op < 0.8:
                t.insert(pos, rng.choice(alphabet))
            else:
                t.insert(pos, rng.choice(["__class__", ".local(3)", "(", ")", "99999999999", "-1", "*", "[0]"]))
        text = "".join(t)
        try:
            T.parse(text)
            outcomes["ok"] += 1
        except LayoutError:
            outcomes["error"] += 1
    assert outcomes["ok"] > 20 and outcomes["error"] > 1000, outcomes
