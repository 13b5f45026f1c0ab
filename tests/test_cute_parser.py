"""The CuTe text parser, the documented algebra examples and the canonical-form conventions.

Expected values come from CuTe's documentation (``media/docs/cpp/cute/02_layout_algebra.md``,
CUTLASS 4.x: "complement(4:2, 24) is (2,3):(1,8)" etc.) and from the definitions in
``include/cute/*.hpp``; the random sweep against CuTe C++ itself is ``test_cute_algebra_cpp.py``.
"""
from __future__ import annotations

import numpy as np
import pytest

from layoutverify.adapters.cute import evaluate, parse
from layoutverify.adapters.cute.swizzle import ComposedLayout, Swizzle
from layoutverify.core.errors import LayoutError, NotInvertibleError, ParseError


def ev(text):
    return str(evaluate(text))


# ---------------------------------------------------------------------------------------------
# syntax
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,expected", [
    ("((2,4),8):((1,16),2)", "((2,4),8):((1,16),2)"),
    ("((_2,_4),_8):((_1,_16),_2)", "((2,4),8):((1,16),2)"),          # CuTe's static integers
    ("  ( 4 , 8 ) : ( 8 , 1 )  ", "(4,8):(8,1)"),
    ("8:1", "8:1"),
    ("_8:_1", "8:1"),
    ("(8):(1)", "(8):(1)"),                                          # rank-1 tuple, as CuTe prints it
    ("cute::make_layout((4,8), LayoutRight)", "(4,8):(8,1)"),
    ("make_layout((4,8), (8,1))", "(4,8):(8,1)"),
    ("make_layout(4:1, 8:4)", "(4,8):(1,4)"),
    ("get<1>(((2,4),8):((1,16),2))", "8:2"),
    ("get<0,1>(((2,4),8):((1,16),2))", "4:16"),
    # C++ type spellings, as CUTLASS's traits write them
    ("Layout<Shape <Shape < _4,_8>,Shape < _2,_2,  _2>>, Stride<Stride<_32,_1>,Stride<_16,_8,_128>>>",
     "((4,8),(2,2,2)):((32,1),(16,8,128))"),
    ("Layout<Shape<_8,_64>>{}", "(8,64):(1,8)"),
    ("composition(Layout<Shape<_8,_8>,Stride<_8,_1>>, Tile<_2,_>)", "(2,8):(8,1)"),
    ("make_layout(Int<8>{})", "8:1"),
])
def test_layout_syntax(text, expected):
    assert ev(text) == expected


def test_shape_only_is_column_major_with_size_one_strides_zero():
    # CuTe's make_layout(shape) = LayoutLeft compact strides; a size-1 mode gets stride 0
    lay = evaluate("make_layout((2,1,4))")
    assert str(lay) == "(2,1,4):(1,0,2)"
    assert parse("(4,8)").f2_bases() == parse("(4,8):(1,4)").f2_bases()
    assert str(evaluate("make_layout(((2,3),4))")) == "((2,3),4):((1,2),6)"


def test_composed_layouts():
    c = evaluate("Sw<3,4,3> o _0 o (_8,_64):(_64,_1)")
    assert isinstance(c, ComposedLayout) and c.outer == Swizzle(3, 4, 3) and c.offset == 0
    assert str(evaluate("Sw<3,4,3> o (8,64):(64,1)")) == "Sw<3,4,3> o 0 o (8,64):(64,1)"
    s = evaluate("Sw<3,4,3> o smem_ptr[16b](unset) o (_8,_64):(_64,_1)")
    assert s.smem_bits == 16 and s.element_outer() == Swizzle(3, 3, 3)
    assert str(evaluate("GMMA::Layout_K_SW128_Atom<half_t>")) == str(s)
    assert str(evaluate("SM90::GMMA::Layout_MN_SW64_Atom<float>")) == "Sw<2,4,3> o smem_ptr[32b](unset) o (16,8):(1,16)"
    assert isinstance(evaluate("Swizzle<2,4,3>{}"), Swizzle)


def test_atom_syntax():
    a = parse("SM80_16x8x16_F32F16F16F32_TN.A")
    b = parse("mma_atom(SM80_16x8x16_F32F16F16F32_TN, A)")
    assert a.f2_bases() == b.f2_bases()
    assert parse("cute::SM80_16x8x16_F32F16F16F32_TN.D").shape == (16, 8)
    assert parse("copy_atom(SM75_U32x4_LDSM_N, Dst)").shape == (32, 8)
    assert parse("SM75_U32x4_LDSM_N.Dst", bits=32).shape == (32, 4)
    assert parse("tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2,2,1), C, tile=(32,32))").shape == (32, 32)


@pytest.mark.parametrize("text,token,column", [
    ("(2,4):(1,2", "(", 7),
    ("(2,4)):(1,2)", ")", 6),
    ("(2,4):", "end of text", 7),
    ("(2;4)", ";", 3),
    ("logical_divide((8,8):(8,1) (2,4))", "(", 28),
    ("frobnicate((2,4))", "frobnicate", 1),
    ("Sw<3,4> o (8,8)", "Sw", 1),
    ("SM80_16x8x16_F32F16F16F32_TN.Q", "Q", 30),
])
def test_parse_errors_name_token_and_column(text, token, column):
    with pytest.raises(ParseError) as e:
        evaluate(text)
    assert e.value.token == token
    assert e.value.column == column


# ---------------------------------------------------------------------------------------------
# documented examples (02_layout_algebra.md)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,expected", [
    ("coalesce((2,(1,6)):(1,(6,2)))", "12:1"),
    ("coalesce((2,(1,6)):(1,(6,2)), Step<_1,_1>)", "(2,6):(1,2)"),
    ("composition((6,2):(8,2), (4,3):(3,1))", "((2,2),3):((24,2),8)"),
    ("composition(20:2, (5,4):(4,1))", "(5,4):(8,2)"),
    ("composition((10,2):(16,4), (5,4):(1,5))", "(5,(2,2)):(16,(80,4))"),
    ("composition((12,(4,8)):(59,(13,1)), (3:4, 8:2))", "(3,(2,4)):(236,(26,1))"),
    ("composition((12,(4,8)):(59,(13,1)), (3,8))", "(3,(4,2)):(59,(13,1))"),
    ("complement(4:1, 24)", "6:4"),
    ("complement(6:4, 24)", "4:1"),
    ("complement((4,6):(1,4), 24)", "1:0"),
    ("complement(4:2, 24)", "(2,3):(1,8)"),
    ("complement((2,4):(1,6), 24)", "3:2"),
    ("complement((2,2):(1,6), 24)", "(3,2):(2,12)"),
    ("logical_divide((4,2,3):(2,1,8), 4:2)", "((2,2),(2,3)):((4,1),(2,8))"),
    ("logical_product((2,2):(4,1), 6:1)", "((2,2),(2,3)):((4,1),(2,8))"),
])
def test_documented_examples(text, expected):
    assert ev(text) == expected


def test_documented_composition_table():
    r = evaluate("composition((6,2):(8,2), (4,3):(3,1))")
    assert [r(i) for i in range(12)] == [0, 24, 2, 26, 8, 32, 10, 34, 16, 40, 18, 42]


def test_documented_2d_divide():
    a = "(9,(4,8)):(59,(13,1))"
    tiler = "(3:3, (2,4):(1,8))"
    ld = evaluate(f"logical_divide({a}, {tiler})")
    assert ld.shape[0][0] == 3 and ld.shape[0][1] == 3
    assert tuple(m.size() for m in ld.mode(1).modes()) == (8, 4)
    zd = evaluate(f"zipped_divide({a}, {tiler})")
    assert tuple(m.size() for m in zd.mode(0).modes()) == (3, 8)
    assert tuple(m.size() for m in zd.mode(1).modes()) == (3, 4)
    # "layout<0>(zipped_divide(a, b)) == composition(a, b)"; the tile is (3,(2,4)):(177,(13,2))
    assert str(zd.mode(0)) == str(evaluate(f"composition({a}, {tiler})")) == "(3,(2,4)):(177,(13,2))"


# ---------------------------------------------------------------------------------------------
# canonical form conventions
# ---------------------------------------------------------------------------------------------
def test_memory_view_first_mode_is_dim0():
    col = parse("(4,8):(1,4)")           # column-major: offset = row + 4*col
    row = parse("(4,8):(8,1)")           # row-major: offset = 8*row + col
    assert col.in_names == ("offset", "block") and col.shape == (4, 8)
    t = col.table()
    assert list(t[5]) == [1, 1] and list(t[4]) == [0, 1]
    t = row.table()
    assert list(t[9]) == [1, 1] and list(t[8]) == [1, 0]


def test_hierarchical_mode_is_one_logical_dim():
    # mode 0 = (2,2):(1,8) is one logical dim of size 4, CuTe's colex coordinate inside it
    lay = parse("((2,2),4):((1,8),2)")
    assert lay.shape == (4, 4)
    cute = evaluate("((2,2),4):((1,8),2)")
    t = lay.table()
    for r in range(4):
        for c in range(4):
            off = cute(r + 4 * c)
            assert list(t[off]) == [r, c]


def test_non_power_of_two_is_exact_and_not_f2():
    lay = parse("(4,3):(1,4)")
    assert lay.shape == (4, 3) and lay.in_size("offset") == 12
    assert not lay.is_f2_linear() and lay.f2_bases() is None
    assert [list(x) for x in lay.table()[[0, 5, 11]]] == [[0, 0], [1, 1], [3, 2]]
    assert parse("(4,8):(8,1)").is_f2_linear()


def test_not_invertible_names_the_witness():
    with pytest.raises(NotInvertibleError, match=r"coordinates \(1, 0\) and \(0, 1\) both map to offset 1"):
        parse("(2,2):(1,1)")
    with pytest.raises(NotInvertibleError, match=r"offset 2 is not the image of any coordinate"):
        parse("(2,2):(1,4)")
    with pytest.raises(NotInvertibleError, match="both map"):
        parse("(4,2):(1,0)")                # a broadcast mode
    # the function view has no such requirement
    f = parse("(2,2):(1,4)", as_="function")
    assert f.in_names == ("mode0", "mode1") and f.shape == (6,)
    assert list(f.table()[:, 0]) == [0, 1, 4, 5]


def test_shape_option_reinterprets_column_major():
    lay = parse("32:1", shape=(4, 8))
    assert lay.shape == (4, 8)
    assert list(lay.table()[9]) == [1, 2]     # 1-D index 9 = 1 + 4*2
    with pytest.raises(LayoutError):
        parse("32:1", shape=(4, 4))


def test_swizzle_formula():
    """Sw<B,M,S>: offset ^ ((offset >> S) & ((2^B - 1) << M)) for S > 0; shift left for S < 0."""
    lay = parse("Sw<3,4,3> o (8,64):(64,1)", as_="function")
    m0, m1 = np.meshgrid(np.arange(8), np.arange(64), indexing="ij")
    m0, m1 = m0.T.ravel(), m1.T.ravel()       # mode0 fastest
    x = m0 * 64 + m1
    expected = x ^ ((x >> 3) & (7 << 4))
    assert np.array_equal(lay.table()[:, 0], expected)
    neg = Swizzle(2, 1, -3)
    xs = np.arange(256)
    assert np.array_equal(neg(xs), xs ^ ((xs & (3 << 1)) << 3))
    # a swizzle is its own inverse
    for sw in (Swizzle(3, 4, 3), Swizzle(2, 0, -4), Swizzle(1, 2, 5)):
        assert np.array_equal(sw(sw(xs)), xs)


def test_swizzled_memory_layout_inverts_exactly():
    cute = evaluate("Sw<3,4,3> o (8,64):(64,1)")
    lay = parse("Sw<3,4,3> o (8,64):(64,1)")
    t = lay.table()
    for idx in range(0, 512, 37):
        off = cute(idx)
        assert list(t[off]) == [idx % 8, idx // 8]
    assert lay.is_f2_linear()


def test_gmma_smem_atom_is_element_level():
    """Sw<3,4,3> on bytes of 16-bit elements = Sw<3,3,3> on element offsets."""
    a = parse("GMMA::Layout_K_SW128_Atom<half_t>")
    b = parse("Sw<3,3,3> o (8,64):(64,1)")
    assert a.f2_bases() == b.f2_bases()


def test_tiler_alone_is_not_a_layout():
    with pytest.raises(LayoutError, match="tiler"):
        parse("(2:1, _)")
    with pytest.raises(LayoutError, match="swizzle"):
        parse("Sw<3,4,3>")
    with pytest.raises(LayoutError, match="name an operand"):
        parse("SM80_16x8x16_F32F16F16F32_TN")


def test_cli_show(cli_env):
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "layoutverify", "show", "cute:(4,8):(8,1)", "--no-grid"],
                         capture_output=True, text=True, env=cli_env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "offset" in out.stdout and "dim1=8" in out.stdout


def test_flat_layout_shortcut_gives_the_interpreters_value_and_errors():
    """``evaluate_text`` builds flat ``(s...):(d...)`` layouts directly; the parser and interpreter
    must agree on every one (value, type of every leaf, and the error where there is one)."""
    import random

    from layoutverify.adapters.cute.interp import evaluate, evaluate_text
    from layoutverify.adapters.cute.parser import parse_text as cute_parse_text

    rng = random.Random(20261125)
    texts = ["(4,8):(8,1)", " ( 4 , 8 ) : ( 1 , 4 ) ", "(3,5,7):(35,7,1)", "(2,0):(1,1)", "(4,8):(8,1,2)",
             "(1,1):(0,0)", "(123456789,2):(1,123456789)", "(4,8):(08,1)", "(4,8):(_8,1)", "(4,8):(8,-1)",
             "(4,8):(8,\u20031)", "(4,8):(8,\n1)", "(4,8):(8,1)\u00a0", "(\u0664,8):(8,1)", "(1234567890,2):(1,2)"]
    for _ in range(400):
        n = rng.randint(2, 5)
        shape = [rng.choice([0, 1, 2, 3, 4, 6, 8, 12, 16, 1 << rng.randint(0, 20)]) for _ in range(n)]
        stride = [rng.choice([0, 1, 2, 5, 16, 1 << rng.randint(0, 30)]) for _ in range(n + rng.choice([0, 0, 0, 1]))]
        sp = rng.choice(["", " ", "  "])
        texts.append(f"({(',' + sp).join(map(str, shape))}){sp}:{sp}({','.join(map(str, stride))})")
    # one level of nesting (``((2,32),64):((64,128),1)``), profiles that differ, singletons, tabs
    texts += ["((2,32),64):((64,128),1)", " ((2, 32),\t64) : ((64,128), 1) ", "((2,32),64):(64,128,1)",
              "((2,32),64):((64,128,2),1)", "((2,0),4):((1,2),4)", "((4),8):((1),4)", "(((2,2),2),4):(((1,2),4),8)",
              "((2,32),64):((64,128),1)\n", "((2,3),(4,5)):((1,2),(6,24))", "((2,3),(4,5)):((1,2),6)"]

    def rand_mode():
        if rng.random() < 0.5:
            return rng.choice([0, 1, 2, 3, 4, 8]), rng.choice([0, 1, 2, 6, 64])
        k = rng.randint(2, 3)
        return ([rng.choice([0, 1, 2, 3, 4]) if rng.random() < 0.05 else rng.choice([1, 2, 3, 4]) for _ in range(k)],
                [rng.choice([0, 1, 3, 8, 1 << rng.randint(0, 20)]) for _ in range(k + rng.choice([0, 0, 0, 1]))])

    def write(x):
        return "(" + ",".join(map(str, x)) + ")" if isinstance(x, list) else str(x)
    for _ in range(300):
        modes = [rand_mode() for _ in range(rng.randint(2, 3))]
        texts.append("(" + ",".join(write(s) for s, _ in modes) + "):(" + ",".join(write(d) for _, d in modes) + ")")

    from layoutverify.adapters.cute.layout import leaves

    def outcome(fn, text):
        try:
            v = fn(text)
        except LayoutError as e:
            return ("error", type(e).__name__, str(e))
        return ("value", type(v).__name__, str(v), repr(v.shape), repr(v.stride),
                [type(x).__name__ for x in (v.shape + v.stride)],
                [type(x).__name__ for x in leaves(v.shape) + leaves(v.stride)])

    from layoutverify.adapters.cute.interp import nested_layout, flat_layout
    for text in texts:
        assert outcome(evaluate_text, text) == outcome(lambda t: evaluate(cute_parse_text(t), t), text), text
    assert sum(flat_layout(t) is not None for t in texts) > 150
    assert sum(nested_layout(t) is not None for t in texts) > 100  # both shortcuts taken, not bypassed


def test_memory_layout_from_digits_is_the_inverse_written_out():
    """A compact CuTe layout's memory view is made from digits (offset digit ``(offset // d) % s``
    of each sorted leaf mode, weighted into its top-level mode); on seeded random nested layouts
    it must be the map the expressions route gives (``shape=`` the top-level sizes, which splits
    the same 1-D coordinate the same way), and the inverse of CuTe's own offsets."""
    import random

    import numpy as np

    from layoutverify.adapters.cute import canonical
    from layoutverify.adapters.cute.interp import evaluate_text

    rng = random.Random(7)
    for _ in range(300):
        nmodes = rng.randint(1, 3)
        leaves_ = [[rng.choice([1, 2, 3, 4, 5]) for _ in range(rng.randint(1, 2))] for _ in range(nmodes)]
        flat = [s for m in leaves_ for s in m]
        perm = list(range(len(flat)))
        rng.shuffle(perm)
        strides, place = [0] * len(flat), 1
        for j in perm:  # a compact system: strides are the place values of some leaf order
            strides[j] = place
            place *= flat[j]
        it = iter(strides)
        shape_t = "(" + ",".join("(" + ",".join(map(str, m)) + ")" if len(m) > 1 else str(m[0]) for m in leaves_) + ")"
        stride_t = "(" + ",".join("(" + ",".join(str(next(it)) for _ in m) + ")" if len(m) > 1 else str(next(it))
                                  for m in leaves_) + ")"
        value = evaluate_text(f"{shape_t}:{stride_t}")
        lay = canonical.memory_layout(value)
        assert type(lay.map).__name__ == "Digits"
        top = [int(np.prod(m)) for m in leaves_]
        by_exprs = canonical.memory_layout(value, shape=top)
        assert lay.out_dims == by_exprs.out_dims and lay.in_size() == by_exprs.in_size()
        assert np.array_equal(lay.table(), by_exprs.table()), f"{shape_t}:{stride_t}"
        # and it inverts CuTe: the coordinate at offset value(i) is the colex coordinate of i
        offs = value.offsets()
        coords = lay.table()[offs]
        idx = np.arange(len(offs))
        for k, s in enumerate(top):
            assert np.array_equal(coords[:, k], idx % s)
            idx = idx // s


def test_flat_layouts_read_by_the_pattern_are_the_general_paths():
    """``parse`` reads a plain ``shape:stride`` (flat or one level of nesting) with one pattern
    into the CuTe value (``evaluate_text``), then the value's canonical layout; on seeded random
    texts (compact or not, sizes of 1, zeros) it must give the parser-and-interpreter path's
    layout (dims, name, table) or its error."""
    import random

    import numpy as np

    from layoutverify.adapters.cute import canonical
    from layoutverify.adapters.cute.interp import evaluate, flat_layout, nested_layout, parse_text as _pt

    def general(text):
        value = evaluate(_pt(text), text)
        return canonical.memory_layout(value, None, name=text.strip())

    def outcome(fn, text):
        try:
            lay = fn(text)
        except LayoutError as e:
            return ("error", type(e).__name__, str(e))
        t = lay.table() if lay.in_size() <= 1 << 16 else None
        return ("layout", lay.in_dims, lay.out_dims, lay.name, None if t is None else t.tobytes())

    rng = random.Random(20261128)
    texts = ["(4,8):(8,1)", "(4,8):(1,4)", "(3,5):(5,1)", "(4,8):(2,8)", "(4,4):(1,1)", "(1,1):(0,0)", "(2,0):(1,1)",
             " ( 4 , 8 ) : ( 1 , 4 ) ", "(65536,65536,2):(1,65536,4294967296)"]
    for _ in range(500):
        n = rng.randint(2, 4)
        shape = [rng.choice([1, 1, 2, 3, 4, 5, 8]) for _ in range(n)]
        order = list(range(n))
        rng.shuffle(order)
        stride, place = [0] * n, 1
        for j in order:
            stride[j] = place
            place *= shape[j]
        if rng.random() < 0.3:  # not compact: a hole, a collision or a broadcast
            j = rng.randrange(n)
            stride[j] = rng.choice([0, stride[j] * 2, stride[j] + 1])
        texts.append(f"({','.join(map(str, shape))}):({','.join(map(str, stride))})")
    for _ in range(300):  # one level of nesting
        modes = [[rng.choice([1, 2, 3, 4]) for _ in range(rng.choice([1, 2, 3]))] for _ in range(rng.randint(2, 3))]
        flat_sizes = [s for m in modes for s in m]
        order = list(range(len(flat_sizes)))
        rng.shuffle(order)
        strides, place = [0] * len(flat_sizes), 1
        for j in order:
            strides[j] = place
            place *= flat_sizes[j]
        if rng.random() < 0.3:
            j = rng.randrange(len(strides))
            strides[j] = rng.choice([0, strides[j] * 2, strides[j] + 1])
        it = iter(strides)

        def write(m, vals):
            return "(" + ",".join(map(str, vals)) + ")" if len(m) > 1 else str(vals[0])
        sh = "(" + ",".join(write(m, m) for m in modes) + ")"
        st = "(" + ",".join(write(m, [next(it) for _ in m]) for m in modes) + ")"
        texts.append(f"{sh}:{st}")
    read = nested = 0
    for text in texts:
        flat = flat_layout(text) or nested_layout(text)
        read += flat is not None
        nested += flat is not None and flat_layout(text) is None
        assert outcome(parse, text) == outcome(general, text), text
    assert read > 700 and nested > 200, (read, nested)
