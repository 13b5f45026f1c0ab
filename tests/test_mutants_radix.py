"""Pairs and shapes for the survivors of module ``radix`` in the full mutation pass of issue 24
(``benchmarks/results/issue24/mutation_device.json``; the fragment ``docs/mutation_b.md`` lists
which mutant each test kills and why the others are equivalent).

Every expected verdict comes from the definitions (``layoutverify.testing.brute``), every
witness is re-checked by ``witness_problem``, and every digit form is checked against the
expressions' own evaluation (``Layout.element``): no expected value is read off the strategy.

The pairs reach the parts of :func:`compare_radix` the earlier tests did not: the per-thread
sets ``Q`` of registers whose digits overlap (bitmaps), the witness for thread strides that
differ at a place value other than the first, and the one where the larger translation is taken
(the element of ``Q`` that is largest in the differing dim).
"""
from __future__ import annotations

import numpy as np
import pytest

from layoutverify.core import expr as E
from layoutverify.core import radix as RADIX
from layoutverify.core import result as R
from layoutverify.core.compare import compare
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout
from layoutverify.testing.brute import brute_verdict, witness_problem


def radix_decides(a: Layout, b: Layout, want: str, thread_set_side: str | None = None):
    """``compare(method="radix")`` takes the pair (it raises ``UnsupportedError`` when it
    declines) and gives the brute-force verdict ``want``, names itself, and its witness re-checks.
    ``thread_set_side``: the witness must be an element of that side held by no register of the
    same thread on the other side (the only kind of witness when the per-thread sets differ but
    the location's two elements could be a register permutation), and the reason says so."""
    assert brute_verdict(a, b) == want
    res = compare(a, b, method="radix")
    assert res.verdict == want, (res.verdict, res.reason)
    assert res.method == "radix"
    assert witness_problem(a, b, res) is None, res.witness
    if thread_set_side is not None:
        assert f"{thread_set_side.upper()}'s element" in res.reason, res.reason
        assert "is in no register of thread" in res.reason, res.reason
    return res


def both_ways(a, b, want, sides=None):
    """``radix_decides`` on ``(a, b)`` and ``(b, a)``; ``sides`` the thread-set side of each."""
    sides = sides or (None, None)
    radix_decides(a, b, want, sides[0])
    radix_decides(b, a, want, sides[1])


def digits(dims, shape, ds, offset=None):
    return Layout.from_digits(dims, shape, ds, offset=offset)


# -- registers whose digits overlap: the sets Q as bitmaps ----------------------------------
# A: registers 0..3 read digits of stride 1 and 1 (Q_A = {0, 1, 2}); lanes add 0 or 3.
# B: registers of stride 2 and 2 (Q_B = {0, 2, 4}); lanes add 0 or 1.  C: strides 1 and 2
# (Q_C = {0, 1, 2, 3}); lanes add 0 or 2.  All three cover {0..5}; each pair differs per thread.
DIMS = [("register", 4), ("lane", 2)]
QA = digits(DIMS, [6], [("register", 1, 2, (1,)), ("register", 2, 2, (1,)), ("lane", 1, 2, (3,))])
QB = digits(DIMS, [6], [("register", 1, 2, (2,)), ("register", 2, 2, (2,)), ("lane", 1, 2, (1,))])
QC = digits(DIMS, [6], [("register", 1, 2, (1,)), ("register", 2, 2, (2,)), ("lane", 1, 2, (2,))])


def test_overlapping_register_digits_sets_differ_on_the_first_side():
    """Q_A and Q_B (bitmaps: A's register digits overlap) each hold an element the other lacks:
    the witness is A's (the first side's) element in no register of B's thread, both orders.
    Kills ``compare_radix`` 263, 265-267, 269-272, 275, 277-282, 284-290, 293-313, 315-318,
    ``_DimMask.__eq__`` 2-4 (equal coverage bitmaps taken as different), ``_mask_locate`` 11, 13."""
    both_ways(QA, QB, "not_equal", ("a", "a"))


def test_overlapping_register_digits_set_inside_the_other():
    """Q_A is inside Q_C: only C's side has an element the other lacks, so with A first the
    witness is B's element (the second loop), with C first it is A's. Kills ``compare_radix``
    245-247 (bitmaps when one side's Q is canonical), 266, 271, 273-276, 283, 314 (and most of
    the previous test's)."""
    both_ways(QA, QC, "not_equal", ("b", "a"))


# Q = {0, 2, 3, 5} (register digits of stride 2 and 3 overlap: a bitmap with holes) in both
# layouts; lanes translate by 6 and 12, in the two orders: same coverage, other thread sets.
DIMS_H = [("register", 4), ("lane", 4)]
REG_H = [("register", 1, 2, (2,)), ("register", 2, 2, (3,))]
HA = digits(DIMS_H, [24], REG_H + [("lane", 1, 2, (6,)), ("lane", 2, 2, (12,))])
HB = digits(DIMS_H, [24], REG_H + [("lane", 1, 2, (12,)), ("lane", 2, 2, (6,))])


def test_equal_register_bitmaps_thread_strides_differ():
    """Equal sets Q (bitmaps with holes), thread strides 6/12 against 12/6: with the larger
    stride first the witness is the largest element of Q (5, at registers 1 + 2) plus 12, which
    lane 1 of the other layout (Q + 6) lacks. Kills ``compare_radix`` 448, 451-453, 455-462,
    ``_DimMask.__init__`` 11, 14 (a bitmap longer than the set)."""
    both_ways(HA, HB, "not_equal", ("a", "a"))


# Q_A = {0, 1, 2} from register digits of stride 0, 1, 1; Q_B = {0, 1, 2} from 1, 1, 0: equal
# bitmaps from other register digits. Lanes: A 2 then 1, B 1 then 2.
DIMS_Z = [("register", 8), ("lane", 4)]
ZA = digits(DIMS_Z, [6], [("register", 1, 2, (0,)), ("register", 2, 2, (1,)), ("register", 4, 2, (1,)),
                          ("lane", 1, 2, (2,)), ("lane", 2, 2, (1,))])
ZB = digits(DIMS_Z, [6], [("register", 1, 2, (1,)), ("register", 2, 2, (1,)), ("register", 4, 2, (0,)),
                          ("lane", 1, 2, (1,)), ("lane", 2, 2, (2,))])


def test_largest_element_of_q_is_located_on_its_own_side():
    """The largest element of Q (2) is located among A's registers (6: digits 2 and 4), not
    B's (3), whose A element is 1: 1 + 2 = 3 is held by B's lane 1 (Q + 1). Kills
    ``compare_radix`` 463; with B first the witness is the smallest element (register 0). Also
    kills ``_mask_locate`` 11, 13 (two register digits of one witness)."""
    both_ways(ZA, ZB, "not_equal", ("a", "a"))


# -- canonical sets Q (no overlap), thread strides differ ------------------------------------
# Q = {0, 1, 2, 3}; lanes: A 2 then 1, B 1 then 2; both cover {0..6}.
DIMS_P = [("register", 4), ("lane", 4)]
PA = digits(DIMS_P, [7], [("register", 1, 4, (1,)), ("lane", 1, 2, (2,)), ("lane", 2, 2, (1,))])
PB = digits(DIMS_P, [7], [("register", 1, 4, (1,)), ("lane", 1, 2, (1,)), ("lane", 2, 2, (2,))])


def test_canonical_q_larger_translation_takes_the_largest_element():
    """A's lane 1 holds Q + 2 = {2..5}, B's Q + 1 = {1..4}: only 5 (the largest element of Q
    plus 2) is A's alone, and 1 is B's alone (the smallest plus 1). Kills ``compare_radix`` 434,
    436-438, 468, 473, 474, 479, 484, 489 and ``_thread_witness_ok`` 34 (the other side's thread
    0 checked instead of the witness's thread)."""
    both_ways(PA, PB, "not_equal", ("a", "a"))


def test_thread_strides_differ_at_a_later_place_value():
    """Lane digits at place 1 agree; at places 2 and 4 the strides (0,1) and (0,2) are swapped:
    the differing place value is not the first of the lane's chain, and no other thread dim
    differs. Kills ``compare_radix`` 406 (only the first place value looked at), 412 (the loop
    left at the first equal digit) and 179, 181 (the pointwise difference taken at the first
    place value, where A and B agree)."""
    dims = [("register", 2), ("lane", 8)]
    common = [("register", 1, 2, (1, 0)), ("lane", 1, 2, (2, 0))]
    a = digits(dims, [4, 4], common + [("lane", 2, 2, (0, 1)), ("lane", 4, 2, (0, 2))])
    b = digits(dims, [4, 4], common + [("lane", 2, 2, (0, 2)), ("lane", 4, 2, (0, 1))])
    both_ways(a, b, "not_equal", ("a", "a"))


def test_thread_strides_differ_in_thread_dims_of_size_two():
    """Lane and warp (2 each) swap their strides: every thread dim is of size 2, its one place
    value the last but one of its chain. Kills ``compare_radix`` 370 (dims of size 2 skipped:
    an ``equal_up_to_register_order``) and 407 (the last place value before the size skipped)."""
    dims = [("register", 2), ("lane", 2), ("warp", 2)]
    reg = [("register", 1, 2, (1, 0))]
    a = digits(dims, [2, 4], reg + [("lane", 1, 2, (0, 1)), ("warp", 1, 2, (0, 2))])
    b = digits(dims, [2, 4], reg + [("lane", 1, 2, (0, 2)), ("warp", 1, 2, (0, 1))])
    both_ways(a, b, "not_equal", ("a", "a"))


def test_canonical_q_one_inside_the_other():
    """Canonical sets Q_A = {0, 1} (a register digit of stride 0) inside Q_C = {0, 1, 2, 3},
    both covering {0..7} (lanes add {0, 2, 4, 6} and {0, 4}): with A first C's element 2 is the
    witness (the second side), with C first it is C's (the first side). Kills ``compare_radix``
    350, 359, 363, 364, 367."""
    dims = [("register", 4), ("lane", 4)]
    a = digits(dims, [8], [("register", 1, 2, (1,)), ("register", 2, 2, (0,)),
                           ("lane", 1, 2, (2,)), ("lane", 2, 2, (4,))])
    c = digits(dims, [8], [("register", 1, 2, (1,)), ("register", 2, 2, (2,)),
                           ("lane", 1, 2, (4,)), ("lane", 2, 2, (0,))])
    both_ways(a, c, "not_equal", ("b", "a"))


def test_canonical_q_differ_with_other_register_counts():
    """A (3 registers, an expression without ``%``: evaluated at a register it lacks it would
    give 3) against C (4 registers): Q_A = {0, 1, 2} inside Q_C = {0, 1, 2, 3}, both cover
    {0..5}. The witness is C's register 3 (which A lacks), whose element 3 the re-check must
    look for among A's 3 registers only. Kills ``_thread_witness_ok`` 25 (the other side's
    register count taken from side B) and 39 (only the witness's register index evaluated)."""
    r, l = E.Var("register"), E.Var("lane")
    a = Layout([("register", 3), ("lane", 2)], [("dim0", 6)], [r + l * 3])
    c = digits(DIMS, [6], [("register", 1, 2, (1,)), ("register", 2, 2, (2,)), ("lane", 1, 2, (2,))])
    both_ways(a, c, "not_equal")


# -- coverage, shape and pointwise -------------------------------------------------------------
def test_a_layout_reaching_exactly_its_size_leaves_its_shape():
    """A coordinate whose largest value equals the dim's size is outside the shape (valid
    coordinates are below the size). Kills ``compare_radix`` 20."""
    dims = [("lane", 4)]
    ok = digits(dims, [4], [("lane", 1, 4, (1,))])
    out = digits(dims, [4], [("lane", 1, 4, (1,))], offset=[1])
    with pytest.raises(LayoutError):
        compare(out, ok, method="radix")
    with pytest.raises(LayoutError):
        compare(ok, out, method="radix")


def test_coverage_differs_by_an_offset():
    """Images {0..3} and {1..4} (offsets 0 and 1): 0 is A's alone, 4 is B's alone; found by
    the canonical runs and re-checked by ``_in_image``. Kills ``_in_image`` 6, 9 (an element below
    the other's offset taken as held) and ``_locate`` 4 (the offset added instead of taken off)."""
    dims = [("lane", 4)]
    a = digits(dims, [5], [("lane", 1, 4, (1,))])
    b = digits(dims, [5], [("lane", 1, 4, (1,))], offset=[1])
    both_ways(a, b, "different_tensors")
    c = digits(dims, [6], [("lane", 1, 2, (1,)), ("lane", 2, 2, (2,))], offset=[1])
    d = digits(dims, [6], [("lane", 1, 2, (1,)), ("lane", 2, 2, (3,))], offset=[1])
    both_ways(c, d, "different_tensors")


def test_no_common_chain_difference_found_by_the_candidates():
    """Lane 6 split 2 x 3 in A (strides 3, 1) and 3 x 2 in B (strides 1, 3): same image {0..5},
    place values {1, 2, 6} and {1, 3, 6} refine to no common chain, the origin agrees and lane 1
    differs. Kills ``compare_radix`` 190 and ``_candidate_diff`` 7, 8, 15."""
    dims = [("lane", 6)]
    a = digits(dims, [6], [("lane", 1, 2, (3,)), ("lane", 2, 3, (1,))])
    b = digits(dims, [6], [("lane", 1, 3, (1,)), ("lane", 3, 2, (3,))])
    both_ways(a, b, "not_equal")


# -- bitmaps -----------------------------------------------------------------------------------
@pytest.mark.parametrize("radix", range(1, 17))
@pytest.mark.parametrize("stride", [1, 2, 3])
def test_spread_is_the_set_of_sums(radix, stride):
    """``_spread(cur, s, r)`` is ``{v + t s : v in cur, t < r}`` cut to the bitmap's length, for
    every radix up to 16 (those with three set bits included). Kills ``_spread`` 16."""
    cur = np.zeros(40, dtype=bool)
    cur[[0, 1, 5]] = True
    want = np.zeros(40, dtype=bool)
    for v in np.flatnonzero(cur):
        for t in range(radix):
            if v + t * stride < 40:
                want[v + t * stride] = True
    assert np.array_equal(RADIX._spread(cur, stride, radix), want)


def test_mask_limit_counts_values_times_layers(monkeypatch):
    """``MASK_LIMIT`` bounds (number of values) x (digits + 1) of one dim's layers, inclusive:
    digits of radix 2 stride 1 and radix 3 stride 2 span 6 values in 3 layers (18). Kills
    ``_DimMask.__init__`` 11 (a longer span), 16-19."""
    ds = [("k1", 2, 1), ("k2", 3, 2)]
    monkeypatch.setattr(RADIX, "MASK_LIMIT", 18)
    m = RADIX._DimMask(0, ds)
    assert len(m.mask) == 6 and np.flatnonzero(m.mask).tolist() == [0, 1, 2, 3, 4, 5]
    monkeypatch.setattr(RADIX, "MASK_LIMIT", 17)
    with pytest.raises(RADIX.NotDigitLinear):
        RADIX._DimMask(0, ds)


# -- the derivation ------------------------------------------------------------------------------
def _exact(lay: Layout):
    """The digit form exists and is the expressions' value at every location, and its maximum
    is the largest value."""
    df = RADIX.digit_form(lay)
    assert df is not None
    hw = lay.hardware_indices()
    vals = lay.apply(hw)
    for row, v in zip(hw.tolist(), vals.tolist()):
        assert df.at(dict(zip(lay.in_names, row))) == v
    assert df.maximum() == vals.max(axis=0).tolist()
    return df


def test_shifts_left_are_multiplications():
    """``x << k`` is ``x * 2**k``. Kills ``_forms`` 58-61."""
    r, l = E.Var("register"), E.Var("lane")
    lay = Layout([("register", 2), ("lane", 4)], [("dim0", 16)], [(l << 1) + (r << 3)])
    _exact(lay)


def test_unsimplified_multiplication_by_one_and_mod_one():
    """Expression nodes built directly (no simplification by the operators): ``Mul(x, 1)`` is
    ``x``, and ``Mod(x // 2, 1)`` is 0 with no window (a window would add a place value 2, which
    with 3 and 6 is no chain). Kills ``_Form.scale`` 2 and ``_window_form`` 1."""
    l = E.Var("lane")
    _exact(Layout([("lane", 6)], [("dim0", 6)], [E.Mul(l, 1)]))
    e = E.Add(E.Add(l % 3, E.Mul(l // 3, 3)), E.Mod(l // 2, 1))
    _exact(Layout([("lane", 6)], [("dim0", 6)], [e]))


def test_mod_of_a_window_whose_size_the_divisor_does_not_divide():
    """``(x % 5) % 2`` (x of size 10) is not the window ``x % 2`` (at x = 5 it is 0, not 1): the
    form is refused or exact. Kills ``_mod`` 8."""
    l = E.Var("lane")
    lay = Layout([("lane", 10)], [("dim0", 2)], [(l % 5) % 2])
    df = RADIX.digit_form(lay)
    if df is not None:
        _exact(lay)


def test_xor_of_parts_without_common_bits():
    """``a ^ b`` is ``a + b`` when no bit can be set in both: a window of radix 3 (bits 0-1)
    and a sum with a carry (``lane % 2 + warp % 2``, up to 2: bits 0-1) against ``register * 4``
    (bits 2-3). Kills ``_Form.bits`` 22, 32."""
    r, l, w = E.Var("register"), E.Var("lane"), E.Var("warp")
    dims = [("register", 4), ("lane", 6), ("warp", 2)]
    _exact(Layout(dims, [("dim0", 16)], [(l % 3) ^ (r * 4)]))
    _exact(Layout(dims, [("dim0", 16)], [((l % 2) + (w % 2)) ^ (r * 4)]))


def test_digit_form_at_a_location_missing_a_dim_reads_it_as_zero():
    """``DigitForm.at`` like ``Layout.element``: a dim missing from the location is 0. Kills
    ``DigitForm.at`` 7, 9, 10."""
    lay = Layout.from_modes([("register", 2), ("lane", 4)], [4, 2],
                            {"register": [(2, [0, 1])], "lane": [(4, [1, 0])]}, offset={"dim0": 0})
    df = RADIX.digit_form(lay)
    for loc in ({}, {"lane": 3}, {"register": 1}):
        assert df.at(loc) == lay.element(loc)


def test_pointwise_counterexample_is_the_first_differing_digit_of_the_common_chain():
    """A = 8 * warp and B = 8 * (lane // 4) (lane 8, warp 2): the same image {0, 8}. The module
    docstring's pointwise proof takes the first differing digit as the counterexample: over the
    common chain (lane: 1, 4, 8; warp: 1, 2), in the pair's dim order, that is lane's digit at 4
    (A 0, B 8), so the witness is lane = 4, warp = 0, both orders. A chain missing B's place value
    4 reads B's lane digit as 0 and names warp = 1 instead. Kills ``_common_chains`` 4, 6, 11."""
    dims = [("lane", 8), ("warp", 2)]
    a = digits(dims, [9], [("warp", 1, 2, (8,))])
    b = digits(dims, [9], [("lane", 4, 2, (8,))])
    for x, y in ((a, b), (b, a)):
        res = radix_decides(x, y, "not_equal")
        assert res.witness["hardware"] == {"lane": 4, "warp": 0}


def test_witness_indices_are_integers():
    """``(2 * lane + warp % 2) // 2`` is ``lane``: its digit stride comes from ``_split_for``
    (coefficient 2 over 2). Against ``lane + 1`` the images {0..3} and {1..4} differ: A's element
    0 at lane 0, located with that stride, is an integer hardware index (as JSON shows it), not
    0.0. Kills ``_split_for`` 16 (a true division)."""
    l, w = E.Var("lane"), E.Var("warp")
    dims = [("lane", 4), ("warp", 2)]
    a = Layout(dims, [("dim0", 5)], [(l * 2 + w % 2) // 2])
    b = Layout(dims, [("dim0", 5)], [l + 1])
    for x, y in ((a, b), (b, a)):
        res = radix_decides(x, y, "different_tensors")
        assert all(type(v) is int for v in res.witness["hardware"].values()), res.witness
        assert all(type(v) is int for v in res.witness["element"]), res.witness


def test_place_values_that_are_no_chain_are_not_read_as_one():
    """Lane 6 as 2 x 3 in A and 3 x 2 in B, every digit of stride 1: A(l) = l % 2 + l // 2 and
    B(l) = l % 3 + l // 3 both cover {0, 1, 2, 3}, but A(2) = 1 and B(2) = 2. Their place values
    {1, 2, 6} and {1, 3, 6} have no common chain ({1, 2, 3, 6} is none: 2 does not divide 3); read
    over it, both would have the digits (1: stride 1, 3: stride 1) and look equal. Kills
    ``_common_chains`` 18, 28 (a wrong ``equal``)."""
    dims = [("lane", 6)]
    a = digits(dims, [4], [("lane", 1, 2, (1,)), ("lane", 2, 3, (1,))])
    b = digits(dims, [4], [("lane", 1, 3, (1,)), ("lane", 3, 2, (1,))])
    both_ways(a, b, "not_equal")


def test_candidates_are_searched_in_their_documented_order():
    """Without a common chain the counterexample is searched among "the origin and the unit and
    top digits of each layout's own chain" (``_candidate_diff``), in that order: the origin, then
    for each digit of A's chain its unit ``p`` and its top ``p (r - 1)``, then B's. Lane 6 as 3 x 2
    (``l % 3 + l // 3``) against 2 x 3 (``l % 2 + l // 2``): the origin and lane 1 agree; with the
    3 x 2 side first its top digit at lane 2 differs (2 against 1); with the 2 x 3 side first its
    top digit is lane 1 again and its next unit is lane 2 (1 against 2). So the witness is lane 2
    both ways (a search that skips or moves the top digits names lane 3, also a valid witness:
    this pins the order). Kills ``_candidate_diff`` 9, 10, 11."""
    dims = [("lane", 6)]
    a = digits(dims, [4], [("lane", 1, 3, (1,)), ("lane", 3, 2, (1,))])
    b = digits(dims, [4], [("lane", 1, 2, (1,)), ("lane", 2, 3, (1,))])
    for x, y in ((a, b), (b, a)):
        res = radix_decides(x, y, "not_equal")
        assert res.witness["hardware"] == {"lane": 2}
