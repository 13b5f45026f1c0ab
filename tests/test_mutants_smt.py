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
    on and z3's reason. Kills ``_z3_compare`` 226–250 (but 234, 247: the seconds, which ``compare``
    sets) and ``_coverage`` 104, 210–215."""
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


# -- witnesses that do not re-evaluate -----------------------------------------------------------
def test_a_pointwise_witness_that_does_not_re_evaluate_is_unknown(monkeypatch):
    """When the location z3 gives does not hold different elements on re-evaluation (a solver or
    lowering fault, injected here by re-evaluating both sides to the same element), the result is
    ``unknown`` with that witness and the internal reason, never a verdict. Kills ``_z3_compare``
    101–103, 105–114, 116, 117."""
    a, b = PAIR_DIFF_THREADS
    monkeypatch.setattr(Pair, "location_witness", lambda self, loc: {"hardware": dict(loc), "a": [0, 0], "b": [0, 0]})
    res = z3(a, b)
    assert (res.verdict, res.method) == ("unknown", "z3")
    assert res.reason == "internal: z3 witness did not re-evaluate as a difference"
    assert res.witness["a"] == res.witness["b"] == [0, 0] and set(res.witness["hardware"]) == {"register", "lane"}


def test_a_thread_witness_that_does_not_re_evaluate_is_unknown(monkeypatch):
    """The same for the per-thread set query's witness (``_thread_witness_ok`` says no): ``unknown``
    with the location z3 gave, re-evaluated on both sides. Kills ``_z3_compare`` 177–179, 181–191,
    193, 194."""
    a, b = PAIR_DIFF_THREADS
    monkeypatch.setattr(SMT, "_thread_witness_ok", lambda pair, side, loc: False)
    res = z3(a, b)
    assert (res.verdict, res.method) == ("unknown", "z3")
    assert res.reason == "internal: z3 thread witness did not re-evaluate"
    assert location_witness_ok(a, b, res.witness)


def test_thread_witness_check_against_the_table():
    """``_thread_witness_ok(pair, side, loc)``: the element ``side`` holds at ``loc`` is held by
    no register of the same thread on the other side, by brute force; a location outside
    ``side`` is no witness. Kills ``_thread_witness_ok`` 17 (outside taken as a witness), 21 (only
    register 0 of the other side looked at), 48 (the element looked for in every register at
    once), 50 (nothing looked for)."""
    a = Layout([("register", 2), ("lane", 2)], [("dim0", 2), ("dim1", 2)], [lane, reg])
    b = Layout([("register", 2), ("lane", 2)], [("dim0", 2), ("dim1", 2)], [lane, (reg + lane) % 2])
    c = Layout([("register", 4), ("lane", 2)], [("dim0", 2), ("dim1", 2)], [lane, reg % 2])
    for x, y in ((a, b), (b, a), (a, c), (c, a), (b, c)):
        p = Pair(x, y)
        for side, other in (("a", "b"), ("b", "a")):
            sz = p.sizes(side)
            for r in range(sz["register"]):
                for l in range(sz["lane"]):
                    loc = {"register": r, "lane": l}
                    el = p.evaluate(side, loc)
                    held = {tuple(p.evaluate(other, {"register": r2, "lane": l}))
                            for r2 in range(p.sizes(other)["register"])}
                    assert SMT._thread_witness_ok(p, side, loc) == (tuple(el) not in held), (x, y, side, loc)
    p = Pair(a, c)
    assert SMT._thread_witness_ok(p, "a", {"register": 3, "lane": 0}) is False  # A has 2 registers


def test_a_coverage_witness_that_does_not_re_evaluate_is_unknown(monkeypatch):
    """A coverage witness is re-checked against the other layout's table: when z3's element turns
    out to be held there after all (injected: B's enumerated element set misses one element B
    holds), the answer is ``unknown`` naming that, not ``different_tensors``. Kills ``_coverage``
    226, 230, 233–236 and ``Query.__init__`` 29 (a sat query's reason, shown as ``unknown``)."""
    a, b = PAIR_DIFF_THREADS
    real = SMT._element_set
    monkeypatch.setattr(SMT, "_element_set", lambda lay: real(lay)[1:] if lay is b else real(lay))
    res = z3(a, b)
    assert (res.verdict, res.method) == ("unknown", "z3")
    assert res.reason == ("A and B differ (see witness), but z3 gave up on a coverage witness that did not "
                          "re-evaluate (unknown), so it is undecided whether they cover the same elements")


def test_coverage_witnesses_are_rechecked_up_to_the_table_limit_inclusive(monkeypatch):
    """``RECHECK_TABLE`` is inclusive: a layout of exactly that many locations is re-checked
    (``_not_held`` 1), and past it a witness is taken as it is, not refused (``_not_held`` 2)."""
    a, b = PAIR_DIFF_THREADS
    real = SMT._element_set
    monkeypatch.setattr(SMT, "_element_set", lambda lay: real(lay)[1:] if lay is b else real(lay))
    monkeypatch.setattr(SMT, "RECHECK_TABLE", b.in_size())
    assert z3(a, b).verdict == "unknown"
    monkeypatch.undo()
    monkeypatch.setattr(SMT, "RECHECK_TABLE", 0)
    a2 = Layout([("lane", 4)], [("dim0", 4)], [lane])
    b2 = Layout([("lane", 4)], [("dim0", 4)], [lane % 2])
    res = z3(a2, b2)
    assert res.verdict == "different_tensors" == brute_verdict(a2, b2) and witness_problem(a2, b2, res) is None


# -- the SMT-LIB2 export holds every query asked --------------------------------------------------
def record_queries(monkeypatch):
    asked = []

    class Q(SMT.Query):
        def __init__(self, label, *args, **kw):
            asked.append(label)
            super().__init__(label, *args, **kw)

    monkeypatch.setattr(SMT, "Query", Q)
    return asked


def exported(path):
    """The (label, query text) of each query of an exported file, in order."""
    out = []
    for chunk in path.read_text().split("\n; query ")[1:]:
        head, body = chunk.split("\n", 1)
        out.append((head.split(": ", 1)[1].rsplit("; z3 answered: ", 1)[0], body.split("(pop 1)")[0]))
    return out


def export_cases():
    """Fresh layouts (the solver's facts are kept per layout object) for every kind of query."""
    dims = [("register", 2), ("lane", 4)]
    l8 = [("lane", 8)]
    return [
        # a layout whose interval bound leaves its shape (range query), against a plain one
        (Layout(dims, [("dim0", 4)], [(lane ^ 3) + lane]), Layout(dims, [("dim0", 4)], [lane]), None),
        # per-thread sets and coverage by an enumerated set
        (*(Layout(x.in_dims, list(zip(x.out_names, x.out_sizes)), x.exprs) for x in PAIR_DIFF_THREADS), None),
        (Layout(l8, [("dim0", 8)], [lane]), Layout(l8, [("dim0", 8)], [lane % 4]), None),
        # past the enumeration limit: onto by counting (replication, injectivity), then by quantifier
        (Layout(l8, [("dim0", 4)], [lane % 4]), Layout(l8, [("dim0", 4)], [lane // 2]), 0),
        (Layout([("lane", 4)], [("dim0", 8)], [lane]), Layout(l8, [("dim0", 8)], [lane]), 0),
        (Layout(l8, [("dim0", 8)], [lane % 4]), Layout(l8, [("dim0", 8)], [lane]), 0),
    ]


def test_the_export_holds_every_query_asked(monkeypatch, tmp_path):
    """Every query asked in a comparison is written to its SMT-LIB2 file, in order (the module's
    promise: "every query can be written"), including those asked for the range check, the
    replication and injectivity facts, onto and image sizes, and coverage. Kills the mutants that
    hand the log on as ``None``: ``_z3_compare`` 26, 216; ``_check_in_range`` 30; ``image_size``
    51, 112; ``_onto`` 8; ``_coverage`` 22, 37, 69, 82, 127, 197; ``_membership_query`` 32."""
    kinds = set()
    for a, b, limit in export_cases():
        if limit is not None:
            monkeypatch.setattr(SMT, "ENUMERATE_LOCATIONS", limit)
        asked = record_queries(monkeypatch)
        path = tmp_path / "q.smt2"
        res = z3(a, b, smt2=str(path))
        assert res.verdict == brute_verdict(a, b)
        assert [lab for lab, _ in exported(path)] == asked, (a, b)
        kinds |= {lab.split(" ")[0].rstrip(":") for lab in asked}
        monkeypatch.undo()
    assert kinds >= {"in_range", "pointwise", "thread_set", "replication", "injective", "covered"}, kinds


def test_the_enumeration_limit_is_inclusive(monkeypatch, tmp_path):
    """Coverage enumerates the other layout's element set when it has at most
    ``ENUMERATE_LOCATIONS`` locations and elements (both; the limit inclusive), and otherwise
    counts and quantifies (``_coverage`` 1, 3, 4, 5; ``_membership_query`` 3, 4, 5). Read off the
    exported queries."""
    monkeypatch.setattr(SMT, "ENUMERATE_LOCATIONS", 4)
    four = [("lane", 4)]
    cases = [  # (A, B, enumerated?)
        (Layout(four, [("dim0", 4)], [lane]), Layout(four, [("dim0", 4)], [lane % 2]), True),
        (Layout(four, [("dim0", 8)], [lane]), Layout(four, [("dim0", 8)], [lane * 2]), False),
    ]
    for a, b, enum in cases:
        path = tmp_path / "q.smt2"
        res = z3(a, b, smt2=str(path))
        assert res.verdict == brute_verdict(a, b) == "different_tensors"
        labels = [lab for lab, _ in exported(path)]
        covered = [lab for lab in labels if lab.startswith("covered")]
        assert covered and all(("enumerated" in lab) == enum for lab in covered), labels
        assert any(lab.startswith("injective") for lab in labels) == (not enum), labels


def test_registers_are_unrolled_up_to_the_limit_inclusive(monkeypatch, tmp_path):
    """The other layout's registers are listed, not quantified, when there are at most
    ``UNROLL_REGISTERS`` of them (``_thread_set_query`` 32: ``<``)."""
    monkeypatch.setattr(SMT, "UNROLL_REGISTERS", 4)
    dims = [("register", 4), ("lane", 2)]
    a = Layout(dims, [("dim0", 2), ("dim1", 4)], [lane, reg])
    b = Layout(dims, [("dim0", 2), ("dim1", 4)], [lane, (reg + lane) % 4])
    path = tmp_path / "q.smt2"
    res = z3(a, b, smt2=str(path))
    assert res.verdict == brute_verdict(a, b)
    sets = [text for lab, text in exported(path) if lab.startswith("thread_set")]
    assert sets and not any("forall" in t for t in sets)


# -- coverage past the enumeration limit: onto and image sizes -----------------------------------
def coverage_cases():
    """Fresh layout pairs over ``lane < 4`` (shape 4; one over ``lane < 2``) whose element sets
    stand in every relation: one a strict subset of the other, equal sizes but different, and a
    layout with fewer locations than elements."""
    l4 = [("lane", 4)]
    mk = lambda e, dims=l4: Layout(dims, [("dim0", 4)], [e])  # noqa: E731
    return [
        (mk(lane % 2), mk(lane % 3)),      # {0,1} inside {0,1,2}: A's image 2, B's proved smaller (-1)
        (mk(lane % 3), mk(lane % 2)),
        (mk(lane % 2), mk(lane % 2 + 2)),  # {0,1} and {2,3}: equal image sizes, different sets
        (mk(lane % 2), mk(lane // 2)),     # {0,1} twice: same elements
        (mk(lane, [("lane", 2)]), mk(lane + 2, [("lane", 2)])),  # 2 locations, 4 elements: not onto
        (mk(lane, [("lane", 2)]), mk(lane % 2)),
    ]


@pytest.mark.parametrize("undecided", [(), ("replication A", "injective A"), ("replication B", "injective B")])
def test_coverage_by_counting_against_the_definitions(monkeypatch, undecided):
    """Past ``ENUMERATE_LOCATIONS`` (0 here) coverage is settled from what is proved about each
    side (onto, not onto, undecided, the image size) and then by quantified inclusions; with one
    side's counting facts left undecided (forced ``unknown``), too. Every verdict and witness
    against the definitions. Kills ``_onto`` 2 (fewer locations than elements taken as onto),
    ``_coverage`` 48, 49, 56, 57 (one inclusion checked where both are needed), 95 (one inclusion
    for different image sizes), 98, 99, 100 (the side of that one inclusion)."""
    monkeypatch.setattr(SMT, "ENUMERATE_LOCATIONS", 0)
    force_unknown(monkeypatch, *undecided) if undecided else None
    for a, b in coverage_cases():
        res = z3(a, b)
        assert res.verdict == brute_verdict(a, b), (a.exprs, b.exprs, undecided, res.reason)
        assert witness_problem(a, b, res) is None, (a.exprs, b.exprs, res.witness)


def test_quantified_coverage_uses_the_sides_own_sizes(monkeypatch):
    """The quantified inclusion "A in B" ranges over A's own locations (``_coverage`` 185: over
    B's): A has lanes 4..7, holding elements B (4 lanes) does not."""
    monkeypatch.setattr(SMT, "ENUMERATE_LOCATIONS", 0)
    a = Layout([("lane", 8)], [("dim0", 8)], [lane])
    b = Layout([("lane", 4)], [("dim0", 8)], [lane])
    res = z3(a, b)
    assert res.verdict == brute_verdict(a, b) == "different_tensors" and witness_problem(a, b, res) is None


def distinct(lay):
    return len({tuple(r) for r in lay.table().tolist()})


def test_image_size_and_onto_against_the_table():
    """``image_size``: the number of distinct elements (an ``int``), or -1 only when that is
    proved smaller than the tensor; the same on a second call (it is kept with the layout); and
    ``_onto`` decided whenever the size is. Against the table. Kills ``image_size`` 44, 46 (a
    wrong guess of unread digits taken as confirmed: ``lane % 4`` and ``(lane // 2) % 3`` read
    every digit of ``lane < 12``), 79 and ``_digit_count`` 3 (a float count), 140, 148, 151,
    152 (another value kept), 144–147, 153, 154 (-1 where not proved, or not given), and ``_onto``
    3, 14 (an image size known, onto left undecided or wrong)."""
    l = [("lane", 12)]
    cases = [  # (dims, shape, exprs, the image size image_size must prove)
        (l, [("dim0", 4), ("dim1", 3)], [lane % 4, (lane // 2) % 3], 12),
        ([("lane", 8)], [("dim0", 4)], [lane % 4], 4),
        ([("lane", 8)], [("dim0", 8)], [lane % 4], 4),
        ([("lane", 4)], [("dim0", 4)], [lane % 3], -1),
        ([("lane", 8)], [("dim0", 4)], [(lane + lane // 4) % 4], None),
        ([("register", 4), ("lane", 8)], [("dim0", 8), ("dim1", 4)], [lane // 2, reg % 2], 8),
    ]
    for dims, shape, exprs, want in cases:
        lay = Layout(dims, shape, exprs)
        w = SMT.width_for(Pair(lay, lay))
        n = distinct(lay)
        assert want in (n, None) or (want == -1 and n < lay.out_size())
        got = SMT.image_size(lay, "A", w, 20_000, None)
        if want is None:  # not provable by counting: nothing is claimed
            assert got in (None, n), (exprs, got)
        else:
            assert got == want and type(got) is int, (exprs, got, want)
        assert SMT.image_size(lay, "A", w, 20_000, None) == got, exprs
        onto = SMT._onto(lay, "A", w, 20_000, None)
        assert onto in (None, n == lay.out_size()), (exprs, onto)
        if got is not None:
            assert onto is (n == lay.out_size()), (exprs, onto)
    small = Layout([("lane", 2)], [("dim0", 4)], [lane])  # fewer locations than elements
    assert SMT._onto(small, "A", SMT.width_for(Pair(small, small)), 20_000, None) is False


def test_image_size_claims_nothing_on_undecided_queries(monkeypatch):
    """An undecided replication query ends ``image_size`` with ``None`` (no further query asked:
    ``image_size`` 68, 69 go on to an injectivity query); an undecided injectivity query gives
    ``None`` even when there are as many locations as elements (``image_size`` 143: taken as
    "proved smaller", -1)."""
    asked = force_unknown(monkeypatch, "replication")
    lay = Layout([("lane", 8)], [("dim0", 8)], [lane % 4])
    assert SMT.image_size(lay, "A", SMT.width_for(Pair(lay, lay)), 20_000, None) is None
    assert [x.split(" ")[0] for x in asked] == ["replication"]
    monkeypatch.undo()
    force_unknown(monkeypatch, "injective")
    lay = Layout([("lane", 4)], [("dim0", 4)], [lane % 3])
    assert SMT.image_size(lay, "A", SMT.width_for(Pair(lay, lay)), 20_000, None) is None


# -- unread digits, the decision tree, the thread-set reason -------------------------------------
def test_unread_digits_more_shapes():
    """``unread_digits`` on more shapes, against the definition: the expected largest unread
    digit ``[p, q)`` (``p | q``, ``q | size``), and changing that digit never changes any
    coordinate. Kills ``unread_digits`` 12, 13 (dims of size 2 skipped, or the dims after a
    size-1 dim), 36, 37 (a gap whose top does not divide the size), 41 (the gaps after an
    invalid one), ``_bits_read`` 8, 11, 12 (the bits a mask reads) and ``_mod_reads`` 3 (the
    window of ``(x // p) % m``)."""
    cases = [  # (dims, exprs, the digits wanted)
        ([("register", 2), ("lane", 4)], [lane], {"register": (1, 2)}),
        ([("register", 1), ("lane", 8)], [lane % 4 + reg], {"lane": (4, 8)}),
        ([("lane", 12)], [lane % 2, lane // 8], {}),
        ([("lane", 12)], [lane % 2, (lane // 3) % 2], {"lane": (6, 12)}),
        ([("lane", 32)], [(lane >> 1) & 3], {"lane": (8, 32)}),
        ([("lane", 8)], [lane & 5], {"lane": (2, 4)}),
        ([("lane", 8)], [lane & 3], {"lane": (4, 8)}),
        ([("lane", 8)], [(lane // 2) % 4], {"lane": (1, 2)}),
    ]
    for dims, exprs, want in cases:
        lay = Layout(dims, [(f"dim{i}", 16) for i in range(len(exprs))], exprs)
        got = dict(SMT.unread_digits(lay))
        assert got == want, (exprs, got)
        for n, (p, q) in got.items():
            size = dict(dims)[n]
            assert q % p == 0 and size % q == 0
            for x in range(size):
                assert lay.element({n: x}) == lay.element({n: x - ((x // p) % (q // p)) * p}), (exprs, n, x)


def test_the_membership_tree_reads_every_element_count():
    """``indicator(index, member, width)`` is ``member[index]`` for every index of the set, for
    element counts that are not powers of two (``indicator`` 9: too few index bits for 3, 5, 9
    elements)."""
    import z3 as Z
    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 5, 8, 9):
        member = rng.random(n) < 0.5
        for i in range(n):
            got = Z.simplify(SMT.indicator(Z.BitVecVal(i, 6), member, 6))
            assert Z.is_true(got) == bool(member[i]), (n, i)


def test_a_difference_of_thread_sets_says_so():
    """A ``not_equal`` found by the per-thread set query (same hardware sizes) says that the
    element is in no register of that thread on the other side (``_z3_compare`` 198, 268, 273:
    reported as a plain difference); the claim is checked by ``witness_problem``."""
    a = Layout([("register", 2), ("lane", 2)], [("dim0", 2), ("dim1", 2)], [lane, reg])
    b = Layout([("register", 2), ("lane", 2)], [("dim0", 2), ("dim1", 2)], [reg, lane])
    res = z3(a, b)
    assert res.verdict == brute_verdict(a, b) == "not_equal"
    assert "is in no register of thread" in res.reason and witness_problem(a, b, res) is None


@pytest.mark.parametrize("dims", [[("offset", 4096)], [("lane", 64), ("warp", 64)]])
def test_z3_never_proves_equal_through_a_wrapped_modulus(dims):
    """``x % 20000`` against ``x % 3616`` over 4096 locations: the first is the identity, the
    second is not, so the tensors differ (element 3616 is held by the first only). With widths
    sized without the constants, 20000 wrapped to 3616 in 13 bits and z3 proved them ``equal``:
    the verdict must be the brute-force one, and its witness must re-check."""
    x = E.Var(dims[0][0]) if len(dims) == 1 else E.Var("lane") + E.Var("warp") * 64
    a = Layout(dims, [("dim0", 4096)], [x % 20000])
    b = Layout(dims, [("dim0", 4096)], [x % 3616])
    res = compare(a, b, method="z3")
    assert res.verdict == brute_verdict(a, b) == "different_tensors"
    assert witness_problem(a, b, res) is None
