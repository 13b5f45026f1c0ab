"""The mixed-radix proof path (layoutverify.core.radix) and the vectorised table
(layoutverify.core.table) against the brute-force oracle :mod:`layoutverify.testing.brute`.

The oracle enumerates every hardware location with Python integers (``Layout.apply``, the numpy
evaluator, not the code under test), builds per-thread element sets, and derives the verdict
from the definitions in compare's docstring. Every witness is re-evaluated.
"""
from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from layoutverify.core import expr as E
from layoutverify.core import radix as RADIX
from layoutverify.core.layout import Digits
from layoutverify.testing.brute import brute_verdict, witness_problem
from layoutverify.core.compare import Pair, compare
from layoutverify.core.errors import LayoutError, UnsupportedError
from layoutverify.core.layout import Layout
from layoutverify.testing.random_layouts import mixed_radix_expr

REG = "register"


# -- oracle --------------------------------------------------------------------------------------
oracle = brute_verdict


def check_witness(a: Layout, b: Layout, res) -> None:
    problem = witness_problem(a, b, res)
    assert problem is None, f"{problem}: {res.reason}"


# -- generators ----------------------------------------------------------------------------------
def random_digit_layout(rng, shape=None, regs=None):
    """A random digit-linear layout: modes of sizes 1..6 on register/lane/warp, each with a stride
    vector that is a place value (bijective part), zero (replication), or arbitrary (overlaps,
    diagonals), plus an occasional offset. Returns (in_dims, shape, modes, offset) or None."""
    hw = {REG: regs or [rng.choice([1, 2, 3, 4, 6]) for _ in range(rng.randint(1, 2))],
          "lane": rng.choice([[2, 3], [4], [3, 2], [8], [2, 2, 2]]),
          "warp": [rng.choice([1, 2, 3])]}
    allm = [(k, j, s) for k, ms in hw.items() for j, s in enumerate(ms) if s > 1]
    rng.shuffle(allm)
    place = [1, 1]
    strides = {}
    for m in allm:
        r = rng.random()
        if r < 0.12:
            strides[m] = [0, 0]
        elif r < 0.2:
            strides[m] = [rng.randint(0, 3), rng.randint(1, 3)]
        else:
            d = rng.randrange(2)
            s = [0, 0]
            s[d] = place[d]
            place[d] *= m[2]
            strides[m] = s
    offset = [rng.choice([0, 0, 0, 1]), 0]
    modes = {k: [(s, strides.get((k, j, s), [0, 0])) for j, s in enumerate(ms)] for k, ms in hw.items()}
    in_dims = [(k, int(np.prod(ms))) for k, ms in hw.items()]
    lay_max = [offset[d] + sum((s - 1) * strides.get((k, j, s), [0, 0])[d]
                               for k, ms in hw.items() for j, s in enumerate(ms)) for d in range(2)]
    if shape is None:
        shape = [lay_max[0] + 1 + rng.choice([0, 0, 0, 1]), lay_max[1] + 1]
    elif lay_max[0] >= shape[0] or lay_max[1] >= shape[1]:
        return None
    return in_dims, list(shape), modes, offset


def mode_layout(recipe, form="modes"):
    """The recipe's layout made three ways: ``modes`` (:meth:`Layout.from_modes`), ``digits``
    (:meth:`Layout.from_digits`: the normal form read off the digits) or ``expr`` (expressions
    written otherwise, read back by the expression analysis)."""
    in_dims, shape, modes, offset = recipe
    if form == "modes":
        return Layout.from_modes(in_dims, shape, modes, offset={"dim0": offset[0], "dim1": offset[1]})
    if form == "digits":
        digits = []
        for k, ms in modes.items():
            place = 1
            for size, strides in ms:  # fastest first
                digits.append((k, place, size, strides))
                place *= size
        return Layout.from_digits(in_dims, shape, digits, offset=offset)
    return mixed_radix_expr(in_dims, shape, modes, offset)


def mutate(rng, recipe):
    in_dims, shape, modes, offset = recipe
    m = {k: list(v) for k, v in modes.items()}
    kind = rng.choice(["same", "form", "regrev", "swap", "zero", "refine", "offset", "regs"])
    flat = [(k, j) for k, ms in m.items() for j, (s, _) in enumerate(ms) if s > 1]
    if kind == "regrev" and len(m[REG]) >= 2:
        m[REG] = m[REG][::-1]
    elif kind == "swap" and len(flat) >= 2:
        (k1, j1), (k2, j2) = rng.sample(flat, 2)
        m[k1][j1], m[k2][j2] = (modes[k1][j1][0], modes[k2][j2][1]), (modes[k2][j2][0], modes[k1][j1][1])
    elif kind == "zero" and flat:
        k, j = rng.choice(flat)
        m[k][j] = (m[k][j][0], [0, 0])
    elif kind == "refine":  # split a mode of size 4 or 6 into two with the same map
        cands = [(k, j) for k, j in flat if m[k][j][0] in (4, 6)]
        if cands:
            k, j = rng.choice(cands)
            s, stv = m[k][j]
            a = 2
            m[k][j:j + 1] = [(a, stv), (s // a, [c * a for c in stv])]
    elif kind == "offset":
        offset = [offset[0] ^ 1, offset[1]]
    elif kind == "regs":  # one more register, replicating
        m[REG] = m[REG] + [(2, [0, 0])]
        in_dims = [(k, s * 2 if k == REG else s) for k, s in in_dims]
    return kind, (in_dims, shape, m, offset)


def pairs(seed, count):
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        ra = random_digit_layout(rng)
        kind, rb = mutate(rng, ra)
        form = "expr" if kind == "form" or rng.random() < 0.3 else "modes"
        # every third pair made from digits (by count, not by a draw: the seeded pairs stay as they were)
        if form == "modes" and len(out) % 3 == 1:
            form = "digits"
        try:
            a, b = mode_layout(ra, "digits" if len(out) % 3 == 2 else "modes"), mode_layout(rb, form)
            a.check_in_range()
            b.check_in_range()
        except LayoutError:
            continue
        out.append((kind, a, b))
    return out


# -- tests ---------------------------------------------------------------------------------------
def test_radix_agrees_with_the_oracle_on_random_pairs():
    verdicts, methods = Counter(), Counter()
    for kind, a, b in pairs(11, 400):
        want = oracle(a, b)
        for method in ("auto", "table"):
            res = compare(a, b, method=method)
            assert res.verdict == want, (kind, method, a, b, res.reason)
            check_witness(a, b, res)
        methods[compare(a, b).method] += 1
        try:
            res = compare(a, b, method="radix")
        except UnsupportedError:
            continue
        assert res.verdict == want, (kind, a, b, res.reason)
        check_witness(a, b, res)
        verdicts[want] += 1
    # the radix path decides most pairs and every verdict occurs
    assert sum(verdicts.values()) > 250, (verdicts, methods)  # pairs method="radix" decides
    for v in ("equal", "equal_up_to_register_order", "not_equal", "different_tensors"):
        assert verdicts[v] >= 10, verdicts


def test_radix_agrees_with_z3():
    pytest.importorskip("z3")
    n = 0
    for kind, a, b in pairs(23, 60):
        try:
            r = compare(a, b, method="radix")
        except UnsupportedError:
            continue
        z = compare(a, b, method="z3", timeout_ms=20_000)
        if z.verdict != "unknown":
            assert z.verdict == r.verdict, (kind, a, b, r.reason, z.reason)
            n += 1
    assert n >= 30


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_radix_hypothesis(seed):
    rng = random.Random(seed)
    ra = random_digit_layout(rng)
    kind, rb = mutate(rng, ra)
    try:
        a, b = mode_layout(ra), mode_layout(rb, rng.choice(["modes", "expr"]))
        a.check_in_range()
        b.check_in_range()
    except LayoutError:
        return
    want = oracle(a, b)
    res = compare(a, b)
    assert res.verdict == want
    check_witness(a, b, res)


def test_digit_form_is_exact():
    """The derived strides evaluate to the expression's table at every location."""
    rng = random.Random(5)
    checked = 0
    for _ in range(200):
        r = random_digit_layout(rng)
        lay = mode_layout(r, rng.choice(["modes", "expr"]))
        df = RADIX.digit_form(lay)
        assert df is not None
        dg = df.own_digits()
        hw = lay.hardware_indices()
        vals = np.tile(np.asarray(df.offset, dtype=np.int64), (len(hw), 1))
        for (n, p), (radix, s) in dg.items():
            digit = (hw[:, lay.in_names.index(n)] // p) % radix
            vals += digit[:, None] * np.asarray(s, dtype=np.int64)[None, :]
        assert np.array_equal(vals, lay.table())
        checked += 1
    assert checked == 200


def test_not_digit_linear_is_refused_not_guessed():
    off = E.Var("offset")
    swz = Layout([("offset", 24 * 8)], [("dim0", 24), ("dim1", 8)], [off // 8, (off % 8) ^ ((off // 8) % 8)])
    assert RADIX.digit_form(swz) is None
    odd = Layout([("lane", 6)], [("dim0", 6)], [E.Var("lane") * 5 % 6])  # a permutation, not digits
    assert RADIX.digit_form(odd) is None
    res = compare(odd, Layout([("lane", 6)], [("dim0", 6)], [E.Var("lane")]))
    assert res.verdict == "not_equal" and res.method == "table"


def test_tilus_pair_from_the_issue_is_decided_fast():
    pytest.importorskip("tilus")
    from layoutverify.adapters import parse_spec
    a = parse_spec("tilus:local(4, 3).column_local(1, 8).local(2, 8)")
    b = parse_spec("tilus:column_local(1, 8).local(4, 3).local(2, 8)")
    res = compare(a, b)
    assert res.verdict == oracle(a, b)
    assert res.verdict != "unknown" and res.seconds < 1.0
    check_witness(a, b, res)


def test_cute_non_power_of_two_pairs():
    from layoutverify.adapters import parse_spec
    cases = [("cute:(3,5):(5,1)", "cute:(3,5):(1,3)"), ("cute:(3,5):(5,1)", "cute:(3,5):(5,1)"),
             ("cute:((2,3),(4,5)):((1,8),(2,24))", "cute:((2,3),(4,5)):((1,8),(2,24))"),
             ("cute:((2,3),(4,5)):((1,8),(2,24))", "cute:((2,3),(4,5)):((3,1),(6,24))"),
             ("cute:(12,20):(20,1)", "cute:((3,4),20):((80,20),1)")]
    for sa, sb in cases:
        a, b = parse_spec(sa), parse_spec(sb)
        res = compare(a, b)
        assert res.verdict == oracle(a, b), (sa, sb, res.reason)
        assert res.method in ("radix", "shape", "identical"), res.method
        check_witness(a, b, res)


def test_table_memory_and_agreement_at_4m_locations():
    """The vectorised table handles 2^22 locations within a bounded amount of memory."""
    import tracemalloc
    in_dims = [("register", 3), ("lane", 32), ("warp", 4), ("block", 1 << 13)]
    shape = [3 * 4 * 32, 1 << 13]
    modes = {"register": [(3, [1, 0])], "lane": [(32, [3, 0])], "warp": [(4, [96, 0])], "block": [(1 << 13, [0, 1])]}
    a = Layout.from_modes(in_dims, shape, modes)
    b = mode_layout((in_dims, shape, {**modes, "warp": [(2, [192, 0]), (2, [96, 0])]}, [0, 0]), "expr")
    tracemalloc.start()
    res = compare(a, b, method="table")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert res.verdict == "not_equal"
    w = res.witness
    assert w["a"] == Pair(a, b).evaluate("a", w["hardware"]) != w["b"] == Pair(a, b).evaluate("b", w["hardware"])
    assert compare(a, b).verdict == "not_equal"
    assert peak < 150 * 2**20, peak


def test_digit_form_of_declared_digits_is_the_one_read_off_the_expressions():
    """``DigitForm.of_digits`` (a layout made from digits) against the expression analysis of the
    same layout's expressions, and the expressions against the modes' table."""
    rng = random.Random(23)
    n = 0
    while n < 300:
        recipe = random_digit_layout(rng)
        lay = mode_layout(recipe, "digits")
        assert type(lay.map) is Digits and "exprs" not in vars(lay)  # expressions: built on first use only
        fast = RADIX.DigitForm.of_digits(lay, lay.map)
        slow = RADIX.DigitForm(lay, RADIX._forms(lay))
        assert (fast.offset, fast.windows, fast.cuts) == (slow.offset, slow.windows, slow.cuts)
        assert fast.own_digits() == slow.own_digits()
        if max(recipe[1]) <= 64:
            assert np.array_equal(lay.table(), mode_layout(recipe, "modes").table())
        n += 1
    # digits with gaps between them, places that are no chain, zero strides: against the same
    # layout's expressions
    for _ in range(400):
        size = rng.choice([12, 16, 24, 30, 36])
        divs = [d for d in range(1, size + 1) if size % d == 0]
        digits = []
        for _ in range(rng.randint(1, 3)):
            p = rng.choice(divs)
            r = rng.choice([d for d in divs if size % (p * d) == 0] if any(size % (p * d) == 0 for d in divs) else [1])
            digits.append(("lane", p, r, (rng.choice([0, 1, 1, 2]), rng.choice([0, 1, 3]))))
        lay = Layout.from_digits([("lane", size)], [64, 64], digits)
        fast = RADIX.DigitForm.of_digits(lay, lay.map)
        slow = RADIX.DigitForm(lay, RADIX._forms(lay))
        assert (fast.offset, fast.windows, fast.cuts) == (slow.offset, slow.windows, slow.cuts), digits
        assert fast.own_digits() == slow.own_digits(), digits


@pytest.mark.parametrize("digits,needle", [
    ([("thread", 1, 2, [1])], "unknown hardware dim 'thread'"),
    ([("lane", 1, 3, [1])], "does not divide the size 8"),
    ([("lane", 0, 2, [1])], "positive integers"),
    ([("lane", 1, True, [1])], "positive integers"),
    ([("lane", 1, 2, [1, 2])], "strides must be 1 non-negative"),
    ([("lane", 1, 2, [-1])], "strides must be 1 non-negative"),
    ([("lane", 1, 2, [1.5])], "strides must be 1 non-negative"),
    ([("lane", 1, 2, [False])], "strides must be 1 non-negative"),
    ([("lane", 1, 2, 3)], "strides must be 1 non-negative"),
    ([("lane", 1.0, 2, [1])], "positive integers"),
    ([(3, 1, 2, [1])], "unknown hardware dim 3"),
    ([("lane", 1)], "a digit is (in_dim, place, radix, strides)"),
])
def test_from_digits_names_what_is_wrong(digits, needle):
    with pytest.raises(LayoutError) as e:
        Layout.from_digits([("lane", 8)], [8], digits)
    assert needle in str(e.value)


def test_from_digits_layout_survives_pickling_and_rebuilds_its_forms():
    import pickle
    lay = Layout.from_digits([("register", 4), ("lane", 6)], [6, 4], [("register", 1, 4, [0, 1]), ("lane", 1, 6, [1, 0])])
    other = Layout.from_digits([("register", 4), ("lane", 6)], [6, 4], [("register", 1, 2, [0, 1]),
                                                                          ("register", 2, 2, [0, 2]),
                                                                          ("lane", 1, 6, [1, 0])])
    assert compare(lay, other).verdict == "equal"   # digits refined differently: one map
    RADIX.digit_form(lay)
    back = pickle.loads(pickle.dumps(lay))
    assert "digit_form" not in vars(back)   # the digit form (derived data) is dropped, not carried
    assert RADIX.digit_form(back).own_digits() == RADIX.digit_form(lay).own_digits()
    assert np.array_equal(back.table(), lay.table())
    swapped = Layout.from_digits([("register", 4), ("lane", 6)], [6, 4], [("register", 1, 4, [0, 1]),
                                                                            ("lane", 1, 2, [3, 0]), ("lane", 2, 3, [1, 0])])
    res = compare(back, swapped)
    assert res.verdict == "not_equal"
    check_witness(back, swapped, res)
