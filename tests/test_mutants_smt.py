"""Tests written for the surviving mutants of ``layoutverify.core.smt`` (issue 24, mutation pass
of 2026-11-28): each says which mutants (mutmut's names, under ``layoutverify.core.smt``) it
kills. Expected values come from the definitions (brute force over the tables with
:mod:`layoutverify.testing.brute`, or by hand), never from the strategy's own output. Layouts are
tiny so the z3 queries stay fast."""
from __future__ import annotations

import numpy as np
import pytest

from layoutverify.core import expr as E
from layoutverify.core import smt as SMT
from layoutverify.core.compare import compare
from layoutverify.core.layout import Layout
from layoutverify.core.result import Pair
from layoutverify.testing.brute import brute_verdict, witness_problem

reg, lane = E.Var("register"), E.Var("lane")


def z3(a, b, **kw):
    return compare(a, b, method="z3", timeout_ms=20_000, **kw)


# -- the bit-vector width ------------------------------------------------------------------------
def test_constant_operands_fit_the_width():
    """A BUG the width mutants led to: ``width_for`` sized the bit-vectors from the interval
    bounds of the expression nodes only, so a divisor, modulus or shift amount larger than every
    node wrapped (``lane // 64`` with ``lane < 8``: 64 in 4 bits is 0, and z3's ``UDiv(x, 0)`` is
    all ones), and equal layouts came back ``unknown`` ("internal: z3 witness did not
    re-evaluate"). Each layout here equals ``lane`` at every location."""
    b = Layout([("lane", 8)], [("dim0", 8)], [lane])
    for e in (lane + lane // 64, lane + lane // 17, lane % 20, lane + (lane >> 17)):
        a = Layout([("lane", 8)], [("dim0", 8)], [e])
        assert brute_verdict(a, b) == "equal"
        res = z3(a, b)
        assert res.verdict == "equal", (e, res.verdict, res.reason)


def test_the_width_holds_every_hardware_size_of_both_sides():
    """``width_for`` takes the hardware sizes of both sides (mutants ``width_for`` 6, 7): a dim
    that no expression reads (``lane``, 64 here) still bounds the domain ``lane < 64``, and a
    width too narrow for 64 turns that bound into ``lane < 0``, so the coverage query of that side
    finds nothing. Here the side with 64 lanes holds element 1, which the other does not:
    ``different_tensors`` in either order."""
    big = Layout([("register", 2), ("lane", 64)], [("dim0", 2)], [reg])
    small = Layout([("register", 2)], [("dim0", 2)], [E.Const(0) + reg * 0])
    for a, b in ((big, small), (small, big)):
        assert brute_verdict(a, b) == "different_tensors"
        res = z3(a, b)
        assert res.verdict == "different_tensors" and witness_problem(a, b, res) is None, res.reason


def test_node_bounds_use_the_largest_index_of_each_dim():
    """The interval bounds behind the width take ``size - 1`` as each hardware index's largest
    value (mutant ``width_for`` 22: ``size - 2``, which makes a dim of size 2 constant 0, so
    ``register*1000 + lane*1000 + warp*1000`` reaching 3000 is lowered to 11 bits and wraps). The
    two layouts are equal: the sum divided by 1000 is ``register + lane + warp``."""
    warp = E.Var("warp")
    dims = [("register", 2), ("lane", 2), ("warp", 2)]
    a = Layout(dims, [("dim0", 4)], [(reg * 1000 + lane * 1000 + warp * 1000) // 1000])
    b = Layout(dims, [("dim0", 4)], [reg + lane + warp])
    assert brute_verdict(a, b) == "equal"
    assert z3(a, b).verdict == "equal"


# -- z3 giving up: forced unknown answers --------------------------------------------------------
def force_unknown(monkeypatch, *prefixes, why="canceled"):
    """Make every query whose label starts with one of ``prefixes`` answer ``unknown`` (with
    ``why`` as z3's reason) without asking z3; returns the list of labels asked (all queries)."""
    asked = []

    class Q(SMT.Query):
        def __init__(self, label, assertions, timeout_ms, log, quantified=False):
            asked.append(label)
            if prefixes and label.startswith(prefixes):
                self.answer, self.model, self.why = "unknown", None, why
                return
            super().__init__(label, assertions, timeout_ms, log, quantified)

    monkeypatch.setattr(SMT, "Query", Q)
    return asked


def location_witness_ok(a, b, w):
    p = Pair(a, b)
    loc = w["hardware"]
    return set(loc) == set(p.names) and w["a"] == p.evaluate("a", loc) and w["b"] == p.evaluate("b", loc) \
        and w["a"] != w["b"]


# A and its transpose: the same elements, but lane 0 holds (0, 0), (0, 1) in A and (0, 0), (1, 0)
# in B: not_equal, found by the per-thread set queries, then coverage (equal) is asked.
PAIR_DIFF_THREADS = (Layout([("register", 2), ("lane", 2)], [("dim0", 2), ("dim1", 2)], [lane, reg]),
                     Layout([("register", 2), ("lane", 2)], [("dim0", 2), ("dim1", 2)], [reg, lane]))


@pytest.mark.parametrize("why", ["canceled", ""])
def test_an_undecided_pointwise_query_claims_nothing(monkeypatch, why):
    """``unknown`` from the first query: verdict ``unknown``, method ``z3``, no witness, and the
    reason names the question and z3's own reason (``unknown`` when z3 gives none). Kills
    ``_unknown`` 16, 17, 18 and ``_z3_compare`` 65, 70, 71."""
    force_unknown(monkeypatch, "pointwise", why=why)
    a, b = PAIR_DIFF_THREADS
    res = z3(a, b)
    assert (res.verdict, res.method, res.witness) == ("unknown", "z3", None)
    assert res.reason == f"z3 gave up on the pointwise comparison ({why or 'unknown'}); nothing is claimed"


@pytest.mark.parametrize("swap", [False, True])
def test_an_undecided_thread_set_query_keeps_the_differing_location(monkeypatch, swap):
    """``unknown`` from a per-thread set query: verdict ``unknown``, and the witness is the
    location where A and B differ (found before), with the side named in the reason. Kills
    ``_unknown`` 3 and ``_z3_compare`` 151–161 (the unknown answer taken as an answer, the
    question, query or witness dropped)."""
    a, b = PAIR_DIFF_THREADS
    if swap:
        a, b = b, a
    force_unknown(monkeypatch, "thread_set A")
    res = z3(a, b)
    assert (res.verdict, res.method) == ("unknown", "z3")
    assert res.reason == "z3 gave up on the per-thread set query (A in the other) (canceled); nothing is claimed"
    assert location_witness_ok(a, b, res.witness)


@pytest.mark.parametrize("why", ["canceled", ""])
def test_an_undecided_coverage_query_keeps_the_differing_location(monkeypatch, why):
    """``unknown`` from the coverage query once the pair is known to differ: verdict ``unknown``,
    the witness the differing location, the reason says they differ, which inclusion z3 gave up
    on and z3's reason. Kills ``_z3_compare`` 226–250 and ``_coverage`` 104, 210–215."""
    a, b = PAIR_DIFF_THREADS
    force_unknown(monkeypatch, "covered", why=why)
    res = z3(a, b)
    assert (res.verdict, res.method) == ("unknown", "z3")
    assert res.reason == (f"A and B differ (see witness), but z3 gave up on the coverage query (A in B) "
                          f"({why or 'unknown'}), "
                          "so it is undecided whether they cover the same elements")
    assert location_witness_ok(a, b, res.witness)


def test_a_real_timeout_gives_unknown_with_z3s_reason():
    """The time limit reaches z3 (``Query.__init__`` 11: the limit set under no name, so z3 runs
    to the end), and an ``unknown`` carries z3's own reason (``Query.__init__`` 26, 28: the reason
    dropped). A pointwise query on 1024 locations of a multiplicative hash: decided in tens of
    milliseconds, never within 1 ms."""
    dims = [("register", 4), ("lane", 32), ("warp", 8)]
    warp = E.Var("warp")
    x = reg + lane * 4 + warp * 128
    a = Layout(dims, [("dim0", 1024)], [(x * 40503 + (x // 7) * 3) % 1024])
    b = Layout(dims, [("dim0", 1024)], [(x * 40503 + (x // 7) * 3 + (x // 1001) % 2) % 1024])
    res = compare(a, b, method="z3", timeout_ms=1)
    assert res.verdict == "unknown"
    assert res.reason in ("z3 gave up on the pointwise comparison (timeout); nothing is claimed",
                          "z3 gave up on the pointwise comparison (canceled); nothing is claimed")


def test_an_undecided_range_check_is_not_remembered(monkeypatch):
    """A layout whose range check z3 did not decide is not marked in range: the next comparison
    asks again and refuses it (``_check_in_range`` 53, 54, 55 cache the unknown as proved)."""
    from layoutverify.core.errors import LayoutError
    bad = Layout([("lane", 4)], [("dim0", 4)], [lane + 1])  # lane 3 maps to 4, outside
    good = Layout([("lane", 4)], [("dim0", 4)], [lane])
    force_unknown(monkeypatch, "in_range")
    z3(bad, good)  # undecided range: the comparison goes on; its verdict is not the point here
    monkeypatch.undo()
    with pytest.raises(LayoutError):
        z3(bad, good)
