"""Differential sweep: CuTe's dynamic integers (also in ``complement``, the divides and the
products, ``filter``, ``upcast``/``downcast`` and ``tile_to_shape``), negative strides and ``make_swizzle`` against
compiled CuTe C++ (the nvidia-cutlass wheel's headers, g++; one program for all cases).

For every seeded case (``tests/cute_cpp/dynamic_cases.py``, >= 500) our value must print exactly
as CuTe C++ prints it (``_N`` static, ``N`` dynamic: the mode structure C++'s static/dynamic rules
give) and compute the same offsets for every 1-D coordinate."""
from __future__ import annotations

import pytest

from cute_cpp import harness
from cute_cpp.dynamic_cases import dynamic_cases
from layoutverify.adapters.cute.interp import evaluate_text

CASES = dynamic_cases()


@pytest.fixture(scope="module")
def cpp():
    tc = harness.toolchain()
    if isinstance(tc, str):
        pytest.skip(tc)
    exe = harness.build({"dynamic": harness.program([(c.id, c.cpp) for c in CASES])}, tc)["dynamic"]
    return harness.run(exe)


def test_sweep_is_large_enough():
    ops = {c.op for c in CASES}
    assert len(CASES) >= 500
    assert {"layout", "coalesce", "right_inverse", "left_inverse", "make_layout", "make_swizzle",
            "right_inverse_swizzled", "left_inverse_swizzled", "composition", "complement"} <= ops
    for family in ("divide", "product"):                 # each of logical/zipped/tiled/flat_<family>
        assert all(sum(c.op == f"{k}_{family}" for c in CASES) >= 10 for k in ("logical", "zipped", "tiled", "flat"))
    assert sum(c.op == "complement" for c in CASES) >= 50
    assert sum(c.op in ("blocked_product", "raked_product") for c in CASES) >= 40
    assert all(sum(c.op == op for c in CASES) >= 40 for op in ("filter", "upcast", "downcast", "tile_to_shape"))
    texts = " ".join(c.text for c in CASES)
    assert ":_-" in texts or ",_-" in texts or "(_-" in texts       # static negative strides
    assert any(ch.isdigit() for ch in texts.replace("_", " "))          # dynamic integers


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_cute_cpp(cpp, case):
    assert case.id in cpp, f"C++ printed nothing for {case.id}"
    printed, table = cpp[case.id]
    ours = evaluate_text(case.text, dynamic=True)     # the texts follow C++'s print: bare N is dynamic
    assert ours.cpp_str() == printed, f"{case.text}\n  C++:  {printed}\n  ours: {ours.cpp_str()}"
    assert [int(x) for x in ours.offsets()] == table, f"{case.text}: offsets differ"


def test_swizzle_inverses_cute_cannot_build_are_refused():
    """Draws whose inverse CuTe's make_swizzle rejects at compile time (mask images that are not one
    swizzle's fields, or a swizzle with |S| < B) are refused by us with a LayoutError naming CuTe's
    static_assert, not answered."""
    from cute_cpp.dynamic_cases import REFUSED
    from layoutverify.core.errors import LayoutError
    for text in REFUSED[:50]:
        with pytest.raises(LayoutError, match="make_swizzle|SShift"):   # CuTe's static_asserts
            evaluate_text(text, dynamic=True)


def test_readings_without_cplusplus():
    """What the C++ static_asserts and the DSL's print mean for a user of the parser."""
    from layoutverify.adapters.cute import evaluate, parse
    from layoutverify.core.errors import LayoutError, ParseError, UnsupportedError
    with pytest.raises(LayoutError, match="static strides"):          # C++: static_assert
        evaluate("left_inverse((_4,_2):(2,_1))")
    with pytest.raises(UnsupportedError, match="dynamic"):            # not modelled: refused, not guessed
        evaluate("filter_zeros((_2,2):(_1,_2))")
    with pytest.raises(LayoutError, match="static block shape"):     # C++: CUTE_STATIC_ASSERT_V on a dynamic
        evaluate("tile_to_shape((_2,2):(_1,_2), (_4,_4))")
    with pytest.raises(LayoutError, match="static stride-1"):         # C++: has_int1 static_assert
        evaluate("downcast<2>((_4,2):(1,_4))")
    with pytest.raises(LayoutError, match="rank-1"):                  # C++: static_assert (dynamic strides)
        evaluate("complement((_4,_2):(2,_8))")
    with pytest.raises(LayoutError, match="zero"):                    # C++ would divide by zero at run time
        evaluate("complement(_4:0)")
    with pytest.raises(ParseError, match="dynamic integer") as e:     # the CuTe DSL's print of a run-time int
        evaluate("(4,8):(?,1)")
    assert e.value.column == 8
    assert str(evaluate("S<3,4,3> o 0 o (8,64):(64,1)")) == "Sw<3,4,3> o 0 o (8,64):(64,1)"   # DSL swizzle
    assert str(evaluate("make_swizzle<0b1000, 0b0100>()".replace("0b1000", "8").replace("0b0100", "4"))) == "Sw<1,2,1>"
    with pytest.raises(UnsupportedError, match="negative strides"):   # algebra yes, canonical form no
        parse("(4,2):(-1,4)")
    assert evaluate("(4,2):(-1,4)").cpp_str() == "(_4,_2):(_-1,_4)"
    # without any _N the text is layoutverify's/pycute's plain print: every integer static
    assert evaluate("coalesce((4,2):(1,4))").cpp_str() == "_8:_1"
    assert evaluate("coalesce((_4,2):(_1,_4))").cpp_str() == "(_4,2):(_1,_4)"


def test_cute_dsl_printed_types():
    """Layouts as the CuTe DSL (cutlass.cute) prints them in its MLIR types, e.g. in CUTLASS's DSL
    examples: ``!cute.composed_layout<"S<3,4,3> o 0 o ((128,8),1,4):((32,1),0,8)">`` and
    ``!cute.memref<bf16, smem, align<1024>, "S<3,4,3> o 0 o ...">``: the same layout as our text."""
    from layoutverify.adapters.cute import parse
    from layoutverify.core.errors import ParseError
    same = [('!cute.composed_layout<"S<3,4,3> o 0 o ((128,8),1,4):((32,1),0,8)">',
             "Sw<3,4,3> o 0 o ((128,8),1,4):((32,1),0,8)"),
            ('!cute.memref<bf16, smem, align<1024>, "S<3,4,3> o 0 o ((8,8),(64,2)):((64,512),(1,4096))">',
             "Sw<3,4,3> o 0 o ((8,8),(64,2)):((64,512),(1,4096))"),
            ('!cute.layout<"((1),1,1,1):((0),0,0,0)">', "((1),1,1,1):((0),0,0,0)")]
    for dsl, ours in same:
        assert parse(dsl).fingerprint() == parse(ours).fingerprint(), dsl
    with pytest.raises(ParseError, match="dynamic integer"):
        parse('!cute.layout<"(?,8):(8,1)">')
