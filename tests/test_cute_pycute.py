"""The CuTe adapter against pycute (the Python CuTe in the ``nvidia-cutlass`` wheel).

Our algebra follows CuTe **C++** (checked case by case in ``test_cute_algebra_cpp.py``); pycute
agrees with C++ on most, but not all, inputs. This file

* runs the same seeded sweep through pycute and asserts agreement wherever pycute and C++ are
  known to agree (``coalesce``, ``filter``, ``make_layout`` fully; ``composition``, the divides,
  ``right_inverse`` and the products on inputs free of the triggers listed below), and
* lists the known differences, each asserted: for every case in
  ``cute_cpp.cases.KNOWN_PYCUTE_DIFFERENCES`` our answer is C++'s (the C++ run checks it) and
  pycute's is not.

Known triggers of pycute/C++ differences (pycute 4.2):

1. an integer tiler in ``logical_product`` (pycute calls ``logical_divide``: a bug);
2. pycute asserts the *strong* divisibility condition in ``composition``; C++ the weak one;
3. a left layout of size 1 (pycute coalesces it to ``1:0``, C++'s ``coalesce_x`` keeps its stride);
4. a ``composition`` tiler with ``_`` or fewer modes than the layout (C++ drops the modes the
   tiler does not reach, pycute keeps them);
5. a shape as ``complement``'s cotarget (pycute takes integers only);
6. ``right_inverse`` with a stride that breaks the run (pycute stops, C++ skips it);
7. ``left_inverse`` (a different algorithm: same function on the image, different elsewhere);
8. ``logical_divide`` complements the tiler against ``shape(coalesce(A))`` in C++, ``size(A)`` in pycute;
9. an integer tile 1 is ``1:0`` in C++ and ``1:1`` in pycute (same function, different print);
10. pycute has no ``flat_divide``, ``flat_product``, ``blocked_product``, ``raked_product``.
"""
from __future__ import annotations

import pytest

from layoutverify.adapters.cute import evaluate
from layoutverify.adapters.cute.layout import CuteLayout, Underscore, is_tuple, leaves
from cute_cpp.cases import KNOWN_PYCUTE_DIFFERENCES, Case, algebra_cases, known_cases, pycute_value

pycute = pytest.importorskip("pycute")

CASES = [c for c in algebra_cases() if c.op != "layout"]


def _trigger_free_cases(seed: int = 7, per_op: int = 25) -> list[Case]:
    """Extra seeded cases for the comparable operations, drawn without the triggers below
    (no size-1 modes, tilers made of layouts only), and accepted by our (= C++) algebra."""
    import random
    from cute_cpp.cases import _accepts, compact_layout
    rng = random.Random(seed)

    def layout(max_size=256, gaps=False):
        while True:
            l = compact_layout(rng, max_size, gaps)
            if 1 not in leaves(l.shape):
                return l
    out = []
    for op in ("composition", "logical_divide", "zipped_divide", "tiled_divide", "logical_product",
               "zipped_product", "tiled_product"):
        n = tries = 0
        while n < per_op and tries < per_op * 60:
            tries += 1
            a = layout(gaps=rng.random() < 0.3)
            if rng.random() < 0.5:
                t = layout(max(2, a.size() if "divide" in op or op == "composition" else 16))
                tiler_args = ()
            else:
                r = rng.randint(1, a.rank())
                t = tuple(layout(max(2, a.mode(i).size())) for i in range(r))
                tiler_args = (1,)
            c = Case(f"{op}-tf{n}", op, (a, t), tiler_args)
            if _accepts(c):
                out.append(c)
                n += 1
    return out


CASES += _trigger_free_cases()

OPS = {
    "coalesce": "coalesce", "filter": "filter", "composition": "composition", "complement": "complement",
    "right_inverse": "right_inverse", "left_inverse": "left_inverse", "logical_divide": "logical_divide",
    "zipped_divide": "zipped_divide", "tiled_divide": "tiled_divide", "logical_product": "logical_product",
    "zipped_product": "zipped_product", "tiled_product": "tiled_product", "make_layout": "make_layout",
}


def _fmt(x):
    if isinstance(x, tuple):
        return "(" + ",".join(_fmt(e) for e in x) + ")"
    return str(x)


def run_pycute(case):
    """pycute's (structure, table) for a case, or the exception it raised."""
    fn = getattr(pycute, OPS[case.op])
    try:
        r = fn(*[pycute_value(a) for a in case.args])
        return f"{_fmt(r.shape)}:{_fmt(r.stride)}", [int(r(i)) for i in range(r.size())]
    except Exception as e:          # pycute asserts or fails with TypeError on inputs C++ accepts
        return e


def ours(case):
    v = evaluate(case.text)
    return str(v), [int(x) for x in v.offsets()]


def _tiler_items(t):
    if is_tuple(t):
        for e in t:
            yield from _tiler_items(e)
    else:
        yield t


def _has_trigger(case) -> bool:
    """Inputs that meet one of the documented triggers (module docstring)."""
    a = case.args[0]
    if isinstance(a, CuteLayout) and (1 in leaves(a.shape)):
        return True                                            # 3 (and 9 through size-1 modes)
    rest = case.args[1:]
    for r in rest:
        for item in _tiler_items(r):
            if isinstance(item, Underscore) or isinstance(item, int):
                return True                                    # 1, 4, 9
            if isinstance(item, CuteLayout) and 1 in leaves(item.shape):
                return True
    if case.op == "right_inverse" and 0 in leaves(a.stride):
        return True                                            # 6
    if case.op == "composition" and is_tuple(case.args[1]) and len(case.args[1]) < a.rank():
        return True                                            # 4
    return False


FULL = {"coalesce", "filter", "make_layout"}
FUNCTION = {"composition", "logical_divide", "zipped_divide", "tiled_divide", "right_inverse",
            "logical_product", "zipped_product", "tiled_product"}


@pytest.mark.parametrize("op", sorted(FULL | FUNCTION))
def test_pycute_agrees_where_expected(op):
    checked = 0
    for case in CASES:
        if case.op != op:
            continue
        theirs = run_pycute(case)
        mine = ours(case)
        if op in FULL:
            assert not isinstance(theirs, Exception), (case.text, theirs)
            assert theirs == mine, f"{case.text}: pycute {theirs[0]} vs C++/ours {mine[0]}"
            checked += 1
            continue
        if _has_trigger(case) or isinstance(theirs, Exception):
            continue
        if op == "right_inverse":
            # pycute stops at the first gap (trigger 6); where it continues the run it must agree
            if len(theirs[1]) != len(mine[1]):
                continue
        if op == "logical_divide" or op.endswith("_divide"):
            if len(theirs[1]) != len(mine[1]):
                continue                                       # trigger 8: a different rest size
        assert theirs[1] == mine[1], f"{case.text}: pycute {theirs[0]} vs C++/ours {mine[0]}"
        checked += 1
    assert checked >= 5, f"only {checked} {op} cases were comparable"


def test_left_inverse_agrees_on_the_image():
    """Trigger 7: both are left inverses (L(R(L(i))) == L(i)) even where the tables differ."""
    n = 0
    for case in CASES:
        if case.op != "left_inverse":
            continue
        lay = case.args[0]
        theirs = run_pycute(case)
        assert not isinstance(theirs, Exception), (case.text, theirs)
        r_ours = evaluate(case.text)
        r_py = pycute.left_inverse(pycute_value(lay))
        for i in range(lay.size()):
            assert lay(r_ours(lay(i))) == lay(i)
            assert lay(r_py(lay(i))) == lay(i)
        n += 1
    assert n >= 10


@pytest.mark.parametrize("entry", KNOWN_PYCUTE_DIFFERENCES, ids=[e[0] for e in KNOWN_PYCUTE_DIFFERENCES])
def test_known_differences(entry):
    cid, op, args, tiler_args, why = entry
    case = next(c for c in known_cases() if c.id == cid)
    mine = ours(case)                 # == CuTe C++ (asserted by test_cute_algebra_cpp.py)
    theirs = run_pycute(case)
    if isinstance(theirs, Exception):
        return                        # pycute rejects what C++ accepts
    assert theirs != mine, f"{cid}: pycute now agrees with C++ ({why}); remove it from the list"


def test_known_differences_expected_answers():
    """The C++ answers, as CuTe C++ printed them (static integers), for the listed cases."""
    expected = {
        "pycute-int-product": "(6,8):(1,6)",
        "pycute-weak-divisibility": "(3,(2,3)):(12,(24,3))",
        "pycute-size1-lhs": "4:2",
        "pycute-underscore-drops": "(2,3):(1,4)",
        "pycute-shape-cotarget": "2:24",
        "pycute-rinv-stride0": "(2,4):(1,10)",
        "pycute-rinv-gap": "(4,2):(1,12)",
        "pycute-linv": "(2,4):(0,1)",
        "pycute-divide-divisibility": "(3,(2,2)):(1,(3,0))",
        "pycute-divide-cotarget": "(2,(2,4)):(4,(8,1))",
        "pycute-unit-tile": "(1,3):(0,1)",
    }
    for case in known_cases():
        assert str(evaluate(case.text)) == expected[case.id], case.id


def test_native_is_pycute():
    """``layoutverify.adapters.cute.native`` (``show --native``) is pycute's answer in the same canonical form."""
    from layoutverify.adapters.cute import native, parse
    from layoutverify.core.errors import NativeError, UnsupportedError
    for text in ("((2,4),8):((1,16),2)", "logical_divide((8,8):(8,1), (2,4))", "Sw<3,4,3> o 0 o (8,64):(64,1)",
                 "coalesce((2,(1,6)):(1,(6,2)))"):
        assert native(text).fingerprint() == parse(text).fingerprint(), text
    assert native("complement(4:2, 24)", as_="function").fingerprint() == \
        parse("complement(4:2, 24)", as_="function").fingerprint()
    # a known difference shows up as a different layout
    assert native("logical_product(6:1, 8)", as_="function").shape != parse("logical_product(6:1, 8)", as_="function").shape
    with pytest.raises(NativeError):
        native("composition(((3,3),4):((1,12),3), (3,6):(3,6))", as_="function")
    # atoms are not pycute's: they come from CUTLASS's compiled C++ traits (tests/test_cute_native_cpp.py),
    # or, without a C++ toolchain, are unsupported
    from layoutverify.adapters.cute import cpp
    if isinstance(cpp.toolchain(), str):
        with pytest.raises(UnsupportedError):
            native("SM80_16x8x16_F32F16F16F32_TN.C")
    else:
        assert native("SM80_16x8x16_F32F16F16F32_TN.C").name.startswith("cute-cpp:")
    with pytest.raises(UnsupportedError):
        native("blocked_product(2:1, 4:1)")     # pycute has no blocked_product
