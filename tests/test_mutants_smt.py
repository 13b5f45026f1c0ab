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
