"""The verdict logic, pair by pair, on hand-made pairs that each break one step of it: every
strategy (``f2``, ``radix``, ``table``, ``z3``, ``auto`` on the normal forms) against the
definitions (DESIGN.md §3, evaluated here by brute force), every witness re-checked.

These pairs were written for the mutation pass over ``compare``, ``normalform``, ``radix``,
``table`` and ``smt`` (issue 24, ``docs/mutation.md``): each one tells apart a correct strategy
from one that skips a check, e.g. the per-thread element sets checked in one direction only
(A's sets inside B's, but not B's inside A's), the coverage checked one way only, or a register
count taken for a thread count. The suite is small and fast, so the mutation runs use it first.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from layoutverify.core import expr as E
from layoutverify.core.compare import compare
from layoutverify.core.errors import LayoutError, UnsupportedError
from layoutverify.core.layout import Layout
from layoutverify.testing.brute import brute_verdict, witness_problem

REG4 = [("register", 2), ("lane", 2)]


def table_layout(in_dims, shape, rows):
    """A layout given by its table, kept as a table (no F2 detection: the non-F2 paths run)."""
    return Layout.from_table(in_dims, shape, np.array(rows), detect_f2=False)


def strategies(a: Layout, b: Layout, must=()):
    """Every strategy that takes the pair (``f2`` and ``radix`` only where they apply; those in
    ``must`` have to)."""
    out = {"table": compare(a, b, method="table"), "auto": compare(a, b)}
    try:
        out["z3"] = compare(a, b, method="z3", timeout_ms=20_000)
    except ImportError:  # pragma: no cover - z3 is a test dependency
        pass
    for m in ("f2", "radix"):
        try:
            out[m] = compare(a, b, method=m)
        except UnsupportedError:
            assert m not in must, f"the {m} strategy declined the pair"
    return out


EQUAL_HOW = {"table": "explicit tables identical", "f2": "identical F2 bases",
             "radix": "identical mixed-radix digit strides", "z3": "no differing location exists: pointwise query unsat"}


def check_pair(a: Layout, b: Layout, want: str, must=(), auto=None):
    """Every strategy against the definitions: the verdict, a witness that re-checks, the method
    each names, how it proved ``equal``; ``must`` lists the strategies that have to take the pair,
    ``auto`` the method ``auto`` has to report, decided on the normal forms when it is ``f2`` or
    ``radix``."""
    assert brute_verdict(a, b) == want
    if auto in ("f2", "radix"):
        from layoutverify.core import normalform as NF
        na, nb = NF.of(a), NF.of(b)
        assert NF.decide(na, nb) == (want, auto), NF.decide(na, nb)
    if auto is not None:
        assert compare(a, b).method == auto
    for method, res in strategies(a, b, must).items():
        assert res.verdict == want, (method, res.verdict, want)
        assert witness_problem(a, b, res) is None, (method, res.witness)
        if method != "auto":  # each strategy names itself, and says how it proved equal
            assert res.method == method, (method, res.method)
            if want == "equal":
                assert res.reason == f"every hardware location holds the same element ({EQUAL_HOW[method]})"
        else:
            assert res.method in ("f2", "radix", "table", "z3", "identical", "shape", "kinds")
        if want in ("not_equal", "equal_up_to_register_order"):
            w = res.witness
            assert w["a"] != w["b"], method


# -- the per-thread element sets, both ways -----------------------------------------------------
# thread = lane; A: lane 0 holds {0, 0} (one element twice), lane 1 holds {1, 1};
# B: lane 0 holds {0, 1}, lane 1 holds {1, 1}: the same elements overall, A's sets inside B's,
# but lane 0 of B holds 1, which lane 0 of A does not: not_equal.
A_DUP = [[0], [0], [1], [1]]
B_MORE = [[0], [1], [1], [1]]


@pytest.mark.parametrize("swap", [False, True])
def test_per_thread_sets_are_compared_both_ways(swap):
    a = table_layout(REG4, [2], A_DUP)
    b = table_layout(REG4, [2], B_MORE)
    if swap:
        a, b = b, a
    check_pair(a, b, "not_equal")
    res = compare(a, b, method="table")
    assert "in no register" in res.reason  # the witness is an element missing from a thread


@pytest.mark.parametrize("swap", [False, True])
def test_per_thread_sets_both_ways_on_expressions(swap):
    """The same pair as expressions (``register`` ignored by A, read by B): radix and z3 too."""
    reg, lane = E.Var("register"), E.Var("lane")
    a = Layout(REG4, [("dim0", 2)], [lane])                      # thread t holds {t, t}
    b = Layout(REG4, [("dim0", 2)], [(lane + reg + 1) // 2])     # lane 0 holds {0, 1}, lane 1 {1, 1}
    assert b.table().ravel().tolist() == [0, 1, 1, 1]
    if swap:
        a, b = b, a
    check_pair(a, b, "not_equal")


def test_equal_per_thread_sets_in_another_register_order():
    a = table_layout(REG4, [2, 2], [[0, 0], [0, 1], [1, 0], [1, 1]])
    b = table_layout(REG4, [2, 2], [[0, 1], [0, 0], [1, 1], [1, 0]])
    check_pair(a, b, "equal_up_to_register_order")


def test_more_registers_repeating_a_threads_elements_are_up_to_order():
    a = table_layout([("register", 2), ("lane", 2)], [2], [[0], [0], [1], [1]])
    b = table_layout([("register", 1), ("lane", 2)], [2], [[0], [1]])
    check_pair(a, b, "equal_up_to_register_order")


# -- coverage, both ways --------------------------------------------------------------------------
@pytest.mark.parametrize("swap", [False, True])
def test_coverage_is_compared_both_ways(swap):
    a = table_layout([("lane", 4)], [4], [[0], [1], [2], [2]])   # misses 3
    b = table_layout([("lane", 4)], [4], [[0], [1], [2], [3]])
    if swap:
        a, b = b, a
    check_pair(a, b, "different_tensors")
    res = compare(a, b, method="table")
    assert res.witness["held_by"] == ("a" if swap else "b")


def test_same_elements_other_holders_is_not_equal():
    a = table_layout([("lane", 4)], [4], [[0], [1], [2], [3]])
    b = table_layout([("lane", 4)], [4], [[1], [0], [2], [3]])
    check_pair(a, b, "not_equal")


def test_threads_of_other_sizes_are_not_equal_even_with_the_same_sets():
    a = table_layout([("register", 2), ("lane", 2)], [4], [[0], [1], [2], [3]])
    b = table_layout([("register", 1), ("lane", 4)], [4], [[0], [1], [2], [3]])
    check_pair(a, b, "not_equal")


def test_memory_layouts_have_no_register_order():
    a = table_layout([("offset", 4)], [2, 2], [[0, 0], [0, 1], [1, 0], [1, 1]])
    b = table_layout([("offset", 4)], [2, 2], [[0, 1], [0, 0], [1, 0], [1, 1]])
    check_pair(a, b, "not_equal")


# -- F2 and mixed radix, each check of the span / image / thread digits ---------------------------
def test_f2_register_span_differs_but_thread_cosets_agree():
    # A: register basis (0,1), lane (1,0); B: register basis (1,1), lane (1,0): per thread
    # A holds {(t,0),(t,1)}, B holds {(t,0),(t^1,1)}: different sets
    a = Layout.from_bases({"register": [[0, 1]], "lane": [[1, 0]]}, [2, 2])
    b = Layout.from_bases({"register": [[1, 1]], "lane": [[1, 0]]}, [2, 2])
    check_pair(a, b, "not_equal", must=("f2",), auto="f2")


def test_f2_thread_bases_reduced_modulo_the_register_span():
    # the lane bases differ by a register basis: the same sets per thread
    a = Layout.from_bases({"register": [[0, 1]], "lane": [[1, 0]]}, [2, 2])
    b = Layout.from_bases({"register": [[0, 1]], "lane": [[1, 1]]}, [2, 2])
    check_pair(a, b, "equal_up_to_register_order", must=("f2",), auto="f2")


def test_f2_span_inclusion_both_ways():
    a = Layout.from_bases({"lane": [[1, 0], [0, 0]]}, [2, 2])
    b = Layout.from_bases({"lane": [[1, 0], [0, 1]]}, [2, 2])
    check_pair(a, b, "different_tensors", must=("f2",), auto="f2")
    check_pair(b, a, "different_tensors", must=("f2",), auto="f2")


def test_f2_spans_of_equal_rank_that_differ():
    a = Layout.from_bases({"lane": [[1, 0], [0, 0]]}, [2, 2])
    b = Layout.from_bases({"lane": [[0, 0], [0, 1]]}, [2, 2])
    check_pair(a, b, "different_tensors", must=("f2",), auto="f2")
    check_pair(b, a, "different_tensors", must=("f2",), auto="f2")


def test_f2_against_a_layout_without_registers_or_with_other_threads():
    """The f2 strategy on pairs whose hardware dims differ: one side without a register dim (a
    missing dim reads as size 1), and threads of other sizes."""
    a = Layout.from_bases({"register": [[0, 1]], "lane": [[1, 0]]}, [2, 2])
    no_reg = Layout.from_bases({"lane": [[1, 0]]}, [2, 2])
    no_reg_same = Layout.from_bases({"register": [], "lane": [[1, 0]]}, [2, 1])
    wider = Layout.from_bases({"register": [[0, 1]], "lane": [[1, 0], [0, 0]]}, [2, 2])
    for x, y in ((a, no_reg), (no_reg, a), (a, wider), (wider, a),
                 (no_reg_same, Layout.from_bases({"lane": [[1, 0]]}, [2, 1]))):
        check_pair(x, y, brute_verdict(x, y), must=("f2",), auto="f2")


def test_the_f2_strategy_names_the_side_that_is_not_f2():
    f2 = Layout.from_bases({"lane": [[1], [2]]}, [4])
    mod3 = Layout([("lane", 4)], [("dim0", 4)], [(E.Var("lane") * 3) % 4 + E.Var("lane") // 3])
    assert NF_f2_data(mod3) is None
    for x, y, who in ((f2, mod3, "B is not"), (mod3, f2, "A is not"), (mod3, mod3, "A and B is not")):
        with pytest.raises(UnsupportedError, match=f"the f2 method needs F2-linear layouts; {who}"):
            compare(x, y, method="f2")


def NF_f2_data(lay):
    from layoutverify.core import normalform as NF
    return NF.f2_data(lay)


def test_radix_images_registers_and_threads():
    """Mixed radix (sizes 3 and 6): a register permutation is up to order; a thread-digit swap and
    a stride that leaves a hole are not equal / other tensors; each against the original, both
    ways, every strategy."""
    dims = [("register", 3), ("lane", 6)]
    a = Layout.from_modes(dims, [3, 6], {"register": [(3, [0, 1])], "lane": [(2, [0, 3]), (3, [1, 0])]})
    same = Layout.from_digits(dims, [3, 6], [("register", 1, 3, (0, 1)), ("lane", 1, 2, (0, 3)), ("lane", 2, 3, (1, 0))])
    regs = Layout.from_modes(dims, [3, 6], {"register": [(3, [1, 0])], "lane": [(2, [0, 3]), (3, [0, 1])]})
    swap = Layout.from_modes(dims, [3, 6], {"register": [(3, [0, 1])], "lane": [(2, [0, 1]), (3, [1, 0])]})
    check_pair(a, same, "equal", must=("radix",), auto="radix")
    for other in (regs, swap):
        for x, y in ((a, other), (other, a)):
            check_pair(x, y, brute_verdict(x, y), must=("radix",))
    assert {brute_verdict(a, regs), brute_verdict(a, swap)} >= {"not_equal"}


def test_swizzle_against_its_table_and_a_neighbour():
    off = E.Var("offset")
    r, c = off // 8, off % 8
    a = Layout([("offset", 64)], [("dim0", 8), ("dim1", 8)], [r, c ^ r])
    b = Layout.from_table(a.in_dims, a.out_dims, a.table(), detect_f2=False)
    check_pair(a, b, "equal")
    t = a.table().copy()
    t[[5, 6]] = t[[6, 5]]
    c2 = Layout.from_table(a.in_dims, a.out_dims, t, detect_f2=False)
    check_pair(a, c2, "not_equal")


def test_a_layout_leaving_its_shape_is_refused_by_every_strategy():
    bad = Layout([("lane", 4)], [("dim0", 3)], [E.Var("lane")])
    good = Layout([("lane", 4)], [("dim0", 3)], [E.Var("lane") % 3])
    for method in ("auto", "table", "z3"):
        with pytest.raises(LayoutError):
            compare(good, bad, method=method)


# -- the core's own shortcuts against the paths they stand for ----------------------------------
def test_table_grid_of_digit_layouts_is_the_evaluated_one(monkeypatch):
    """The table strategy tabulates a digit-linear layout by broadcasting its digits
    (``table.flat_grid``); it must equal the expressions evaluated everywhere, on seeded mode
    layouts (sizes 2 to 6, offsets, broadcasts) in the pair's own dim order."""
    from layoutverify.core import table as TABLE
    from layoutverify.testing.random_layouts import modes_recipe
    rng = random.Random(31)
    for _ in range(60):
        in_dims, shape, modes = modes_recipe(rng, 1 << 12)
        lay = Layout.from_modes(in_dims, shape, modes, offset={"dim0": rng.randint(0, 2)})
        names = [n for n, _ in in_dims]
        rng.shuffle(names)
        sizes = dict(in_dims)
        try:
            fast = TABLE.flat_grid(lay, names, sizes)
        except LayoutError as e:
            fast = str(e)
        with monkeypatch.context() as mp:
            mp.setattr(TABLE, "digit_form", lambda lay: None)
            try:
                slow = TABLE.flat_grid(lay, names, sizes)
            except LayoutError as e:
                slow = str(e)
        if isinstance(fast, str) or isinstance(slow, str):
            assert isinstance(fast, str) and isinstance(slow, str)
        else:
            assert np.array_equal(fast, slow)


def test_equal_bases_need_no_normal_form(monkeypatch):
    """Two layouts given by the same bases over the same dims are ``equal`` (method ``f2``) before
    any normal form is built, as the normal forms would say."""
    from layoutverify.core import compare as C
    from layoutverify.core import normalform as NF
    rng = random.Random(32)
    for _ in range(100):
        bits = [(d, 1 << k) for d in range(2) for k in range(3)]
        bases = {n: [[0, 0] for _ in range(rng.randint(0, 3))] for n in ("register", "lane", "warp")}
        for vs in bases.values():
            for v in vs:
                d, b = rng.choice(bits)
                v[d] ^= b
        a, b = Layout.from_bases(bases, [8, 8]), Layout.from_bases(bases, [8, 8])
        fast = compare(a, b)
        assert (fast.verdict, fast.method) == ("equal", "f2")
        with monkeypatch.context() as mp:
            mp.setattr(C, "F2Bases", type("NotBases", (), {}))
            slow = compare(Layout.from_bases(bases, [8, 8]), Layout.from_bases(bases, [8, 8]))
        assert (slow.verdict, slow.method, slow.reason) == (fast.verdict, fast.method, fast.reason)
        assert NF.of(a).key is NF.of(b).key


# -- the table strategy on pairs of different hardware sizes and in several chunks ---------------
def test_table_strategy_on_different_hardware_sizes():
    """A location that exists in one layout only is compared on the common box first: the
    witness of a pointwise difference inside the box, else the first location outside it."""
    a = table_layout([("register", 2), ("lane", 4)], [8], [[0], [1], [2], [3], [4], [5], [6], [7]])
    b = table_layout([("register", 4), ("lane", 4)], [8], [[0], [1], [0], [1], [2], [3], [2], [3],
                                                           [4], [5], [4], [5], [6], [7], [7], [6]])
    res = compare(a, b, method="table")
    assert res.verdict == brute_verdict(a, b) == "equal_up_to_register_order"
    assert witness_problem(a, b, res) is None
    assert res.witness["hardware"]["register"] == 2  # the box agrees: the first location outside it
    inside = table_layout([("register", 4), ("lane", 4)], [8], [[0], [1], [0], [1], [2], [3], [2], [3],
                                                                [4], [5], [4], [5], [7], [6], [6], [7]])
    res = compare(a, inside, method="table")
    assert res.verdict == brute_verdict(a, inside) == "equal_up_to_register_order"
    assert witness_problem(a, inside, res) is None
    assert res.witness["hardware"] == {"register": 0, "lane": 3}  # inside the common box, found first


def test_table_per_thread_sets_in_the_last_chunk():
    """Threads in chunks (``table.CHUNK`` locations at a time): the thread whose set differs is
    in the last chunk only, in either layout."""
    from layoutverify.core import table as TABLE
    regs, lanes, warps = 64, 32, 2 * TABLE.CHUNK // (64 * 32) + 1
    n = regs * lanes * warps
    rows = (np.arange(n) // regs % lanes) * regs + np.arange(n) % regs
    a = table_layout([("register", regs), ("lane", lanes), ("warp", warps)], [regs * lanes], rows[:, None])
    last = rows.copy()
    k = n - regs  # the last thread: register 0 holds an element of lane 0 instead
    last[k], last[k + 1] = last[k + 1], last[k]
    last[k] = 0
    b = table_layout(a.in_dims, a.out_dims, last[:, None])
    for x, y in ((a, b), (b, a)):
        res = compare(x, y, method="table")
        assert res.verdict == brute_verdict(x, y) == "not_equal"
        assert witness_problem(x, y, res) is None
        assert res.witness["hardware"]["warp"] == warps - 1


# -- normal forms: place values that do not chain, the token table, deep expressions -------------
def test_a_difference_at_a_place_value_is_found_without_a_common_chain():
    """Two radix forms over one size whose place values refine to no common chain (2 and 3 of 6):
    ``_differ_at_a_cut`` says whether the maps differ at the origin or at a place value of
    either, by evaluation (``RadixPart.at``), as the definitions say; ``compare`` then proves
    ``not_equal`` there, or leaves the pair to a strategy, and is right either way."""
    from layoutverify.core import normalform as NF
    rng = random.Random(41)
    seen = {True: 0, False: 0}
    for _ in range(300):
        s1 = (rng.choice([0, 1, 2]), rng.choice([0, 1, 3]))
        s2 = (rng.choice([0, 1, 2]), rng.choice([0, 1, 3]))
        t1 = (rng.choice([0, 1, 2]), rng.choice([0, 1, 3]))
        t2 = (rng.choice([0, 1, 2]), rng.choice([0, 1, 3]))
        if rng.random() < 0.4:  # the same map split at other place values: equal at every cut
            s1, s2, t2 = t1, tuple(2 * c for c in t1), tuple(3 * c for c in t1)
        off = (rng.choice([0, 1]), 0)
        a = Layout.from_digits([("lane", 6)], [12, 12], [("lane", 1, 2, s1), ("lane", 2, 3, s2)], offset=off)
        b = Layout.from_digits([("lane", 6)], [12, 12], [("lane", 1, 3, t1), ("lane", 3, 2, t2)],
                               offset=off if rng.random() < 0.7 else (1 - off[0], 0))
        na, nb = NF.of(a), NF.of(b)
        ra, rb = na.radix, nb.radix
        if ra is None or rb is None:
            continue
        ra.rest(), rb.rest()
        for part, lay in ((ra, a), (rb, b)):
            for x in range(6):
                assert list(part.at("lane", x)) == lay.element({"lane": x})
        cuts = {0} | set(ra.cuts["lane"]) | set(rb.cuts["lane"])
        want = any(a.element({"lane": x}) != b.element({"lane": x}) for x in cuts if x < 6)
        got = NF._differ_at_a_cut(ra, rb, na.sizes)
        assert got == want, (a, b)
        seen[got] += 1
        res = compare(a, b)
        assert res.verdict == brute_verdict(a, b)
        assert witness_problem(a, b, res) is None
    assert min(seen.values()) > 20, seen


def test_the_token_table_stays_within_twice_its_live_size():
    from layoutverify.core import normalform as NF
    keep = [NF._intern(("test-token", i)) for i in range(10)]
    with NF._TOKENS_LOCK:
        NF._purge()
    live = sum(1 for ref in NF._TOKENS.values() if ref() is not None)
    assert len(NF._TOKENS) == live and NF._PURGE_AT[0] == max(1 << 16, 2 * live)
    assert all(NF._intern(("test-token", i)) is t for i, t in enumerate(keep))


def test_expressions_too_deep_to_compare_are_left_to_a_strategy():
    """Deep expression trees (6000 levels) that differ at the root: a strategy decides
    ``not_equal`` with a witness that re-checks. (Trees equal down to a depth past the recursion
    limit, where comparing them raises ``RecursionError``, are in
    ``tests/test_mutants_verdict.py::test_expressions_too_deep_to_compare_are_not_taken_as_identical``:
    under pytest the limit here may be raised, so this test need not reach that path.)"""
    lane = E.Var("lane")
    ea = eb = lane
    for _ in range(3000):
        ea = (ea ^ lane) ^ lane
        eb = (eb ^ lane) ^ lane
    a = Layout([("lane", 4)], [("dim0", 4)], [ea])
    b = Layout([("lane", 4)], [("dim0", 4)], [(eb + 1) % 4])
    res = compare(a, b)
    assert res.verdict == "not_equal" and res.method != "identical"
    assert witness_problem(a, b, res) is None



def test_table_on_three_logical_dims_and_other_register_counts():
    """Row-major flat indices of three logical dims; a thread-set witness on either side when the
    register counts differ (each side's location read with its own sizes)."""
    dims = [("register", 2), ("lane", 4)]
    rows = [[i // 4, (i // 2) % 2, i % 2] for i in range(8)]
    a = table_layout(dims, [2, 2, 2], rows)
    b = table_layout(dims, [2, 2, 2], rows[::-1])
    check_pair(a, b, brute_verdict(a, b))
    c = table_layout(dims, [2, 2, 2], [rows[(i + 2) % 8] for i in range(8)])
    check_pair(a, c, brute_verdict(a, c))
    small = table_layout([("register", 2), ("lane", 2)], [4], [[0], [1], [2], [3]])
    more = table_layout([("register", 4), ("lane", 2)], [4], [[0], [1], [0], [2], [2], [3], [2], [1]])
    for x, y in ((small, more), (more, small)):
        for method in ("table", "z3"):
            res = compare(x, y, method=method)
            assert res.verdict == brute_verdict(x, y) == "not_equal"
            assert witness_problem(x, y, res) is None


def test_table_limit_is_inclusive(monkeypatch):
    from layoutverify.core import table as TABLE
    monkeypatch.setattr(TABLE, "MAX_TABLE_LOCATIONS", 8)
    lay = table_layout([("lane", 8)], [8], [[i] for i in range(8)])
    assert TABLE.flat_grid(lay, ["lane"], {"lane": 8}).tolist() == list(range(8))
    with pytest.raises(LayoutError):
        TABLE.flat_grid(table_layout([("lane", 9)], [9], [[i] for i in range(9)]), ["lane"], {"lane": 9})


@pytest.mark.parametrize("seed", range(2))
def test_z3_coverage_by_quantifier_and_by_counting(monkeypatch, seed):
    """Past ``ENUMERATE_LOCATIONS`` the z3 strategy describes the other layout's elements by a
    quantifier and proves a layout onto its tensor by counting (replicated digits found by
    ``unread_digits``, confirmed, then injectivity); here the limit is 0, so small pairs take
    that path, against the definitions."""
    from layoutverify.core import smt as SMT
    monkeypatch.setattr(SMT, "ENUMERATE_LOCATIONS", 0)
    rng = random.Random(50 + seed)
    reg, lane = E.Var("register"), E.Var("lane")
    forms = [lambda: [lane % 4, reg], lambda: [lane // 2, reg], lambda: [(lane >> 1) & 1, reg % 2],
             lambda: [lane % 4, E.Const(0) + reg * 0], lambda: [(lane + reg) % 4, reg]]
    dims = [("register", 2), ("lane", 8)]
    for _ in range(6):
        fa, fb = rng.sample(forms, 2)
        a = Layout(dims, [("dim0", 4), ("dim1", 2)], fa())
        b = Layout(dims, [("dim0", 4), ("dim1", 2)], fb())
        res = compare(a, b, method="z3", timeout_ms=30_000)
        assert res.verdict == brute_verdict(a, b), (a, b)
        assert res.method == "z3" and witness_problem(a, b, res) is None


def test_unread_digits_are_the_digits_no_coordinate_depends_on():
    """``smt.unread_digits`` (a guess the z3 strategy then proves) on common shapes: the largest
    digit ``[p, q)`` of each dim that no expression reads, and, by the definition, changing that
    digit never changes any coordinate."""
    from layoutverify.core import smt as SMT
    lane, reg = E.Var("lane"), E.Var("register")
    dims = [("register", 4), ("lane", 32)]
    # (the largest unread gap of each dim, by the ratio of its place values)
    cases = [([lane % 4, reg], {"lane": (4, 32)}), ([(lane // 8) % 2, reg], {"lane": (1, 8)}),
             ([(lane >> 2) & 3, reg % 2], {"lane": (1, 4), "register": (2, 4)}),
             ([lane & 1, reg // 2], {"lane": (2, 32), "register": (1, 2)}), ([lane, reg], {})]
    for exprs, want in cases:
        lay = Layout(dims, [("dim0", 32), ("dim1", 4)], exprs)
        got = dict(SMT.unread_digits(lay))
        assert got == want, (exprs, got)
        for n, (p, q) in got.items():  # unread indeed: the digit's values give the same elements
            size = dict(dims)[n]
            for x in range(size):
                base = x - ((x // p) % (q // p)) * p
                assert lay.element({n: x}) == lay.element({n: base})


def test_kinds_differ_even_for_one_location():
    """A register layout and a memory layout are ``different_tensors`` (method ``kinds``) however
    small: their canonical keys name the kind, so one location of each is never ``equal``."""
    reg = Layout.from_bases({"register": [], "lane": []}, [1])
    mem = Layout.from_bases({"offset": []}, [1])
    for x, y in ((reg, mem), (mem, reg)):
        res = compare(x, y)
        assert (res.verdict, res.method) == ("different_tensors", "kinds")


# -- the z3 strategy's own facts ------------------------------------------------------------------
def test_an_unknown_says_z3_gave_up_and_claims_nothing():
    """A query that runs out of time: ``unknown``, method ``z3``, a reason naming the question it
    gave up on; never ``equal``."""
    reg, lane, warp = E.Var("register"), E.Var("lane"), E.Var("warp")
    dims = [("register", 64), ("lane", 128), ("warp", 128)]
    x = reg + lane * 64 + warp * 8192
    a = Layout(dims, [("dim0", 1 << 20)], [(x * 40503 + (x // 7) * 3) % (1 << 20)])
    b = Layout(dims, [("dim0", 1 << 20)], [(x * 40503 + (x // 7) * 3 + (x // 1001) % 2) % (1 << 20)])
    res = compare(a, b, method="z3", timeout_ms=1)
    assert res.verdict != "equal" and res.method == "z3"
    if res.verdict == "unknown":
        assert res.reason.startswith("z3 gave up on ") and res.reason.endswith("; nothing is claimed")
        assert res.to_json()["verdict"] == "unknown"


def test_image_sizes_by_counting():
    """``smt.image_size``: the number of distinct elements, proved by finding the digits the map
    ignores and then injectivity on the rest; ``-1`` when it is proved smaller than the tensor
    without a count; against the table."""
    from layoutverify.core import smt as SMT
    from layoutverify.core.result import Pair
    lane, reg = E.Var("lane"), E.Var("register")
    dims = [("register", 4), ("lane", 8)]
    cases = [[lane, reg], [lane % 4, reg], [lane // 2, reg % 2], [(lane >> 1) & 3, reg], [lane % 2, reg // 2],
             [E.Const(0) + lane * 0, reg]]
    counted = 0
    for exprs in cases:
        lay = Layout(dims, [("dim0", 8), ("dim1", 4)], exprs)
        w = SMT.width_for(Pair(lay, lay))
        n = SMT.image_size(lay, "A", w, 20_000, None)
        distinct = len({tuple(r) for r in lay.table().tolist()})
        assert n in (None, -1, distinct), (exprs, n, distinct)
        if n == -1:
            assert distinct < lay.out_size()
        counted += n == distinct
        onto = SMT._onto(lay, "A", w, 20_000, None)
        assert onto in (None, distinct == lay.out_size()), (exprs, onto)
    assert counted >= 5


def test_digit_counts():
    from layoutverify.core import smt as SMT
    for s in (6, 8, 12, 16):
        for p in (d for d in range(1, s + 1) if s % d == 0):
            for q in (d for d in range(p, s * 2 + 1) if d % p == 0 and (s % d == 0 or d >= s)):
                want = sum(1 for x in range(s) if (x // p if q >= s else (x // p) % (q // p)) == 0)
                assert SMT._digit_count(s, p, q) == want, (s, p, q)


def test_coverage_witnesses_are_rechecked_against_the_other_table():
    from layoutverify.core import smt as SMT
    lay = table_layout([("lane", 4)], [4], [[0], [1], [2], [2]])
    assert SMT._not_held(lay, [3]) and not SMT._not_held(lay, [2])


@pytest.mark.parametrize("swap", [False, True])
def test_z3_thread_sets_by_quantifier(monkeypatch, tmp_path, swap):
    """Past ``UNROLL_REGISTERS`` registers the per-thread set query quantifies over the other
    layout's register instead of unrolling it; here the limit is 0, so small pairs take that path
    (and the exported query says so), against the definitions."""
    from layoutverify.core import smt as SMT
    reg, lane = E.Var("register"), E.Var("lane")
    pairs = [(Layout(REG4, [("dim0", 2)], [lane]), Layout(REG4, [("dim0", 2)], [(lane + reg + 1) // 2])),
             (Layout(REG4, [("dim0", 2), ("dim1", 2)], [lane, reg]),
              Layout(REG4, [("dim0", 2), ("dim1", 2)], [lane, (reg + lane) % 2])),
             (Layout(REG4, [("dim0", 2), ("dim1", 2)], [lane, reg]),
              Layout([("register", 1), ("lane", 2)], [("dim0", 2), ("dim1", 2)], [lane, reg + 1])),
             (Layout(REG4, [("dim0", 2), ("dim1", 2)], [lane, reg]),
              Layout([("lane", 2)], [("dim0", 2), ("dim1", 2)], [lane, lane * 0 + 1]))]
    for unroll in (SMT.UNROLL_REGISTERS, 0):
        monkeypatch.setattr(SMT, "UNROLL_REGISTERS", unroll)
        for a, b in pairs:
            if swap:
                a, b = b, a
            path = tmp_path / "q.smt2"
            res = compare(a, b, method="z3", smt2=str(path))
            assert res.verdict == brute_verdict(a, b) and witness_problem(a, b, res) is None, (a, b, res)
            queries = [q.split("(pop 1)")[0] for q in path.read_text().split("; query ")[1:]]
            thread_sets = [q for q in queries if q.split(": ", 1)[1].startswith("thread_set")]
            assert thread_sets and (len(thread_sets) == 2 or res.verdict != "equal_up_to_register_order")
            for q in thread_sets:
                other = (b if q.split(": ", 1)[1].startswith("thread_set A") else a)
                assert ("forall" in q) == (unroll == 0 and "register" in other.in_names), (unroll, q)
