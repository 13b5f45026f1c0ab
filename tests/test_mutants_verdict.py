"""Tests written for survivors of the full mutation pass of issue 24 (``docs/mutation.md``,
fragment ``docs/mutation_a.md``): the modules ``table``, ``compare`` and ``normalform``.

Every expected value here comes from the definitions (brute force over the layouts' tables in
``layoutverify.testing.brute``, or a row-major index computed by hand in Python integers), never
from the strategies' own output. Each test's docstring names the mutants (by function) it kills.
"""
from __future__ import annotations

import numpy as np
import pytest

from layoutverify.core import expr as E
from layoutverify.core.compare import compare
from layoutverify.core.layout import Layout
from layoutverify.testing.brute import brute_verdict, witness_problem

from test_verdict_kernel import check_pair, table_layout

LANE, WARP, REG = E.Var("lane"), E.Var("warp"), E.Var("register")


def _row_major_flat(elements, sizes):
    """Row-major flat index of each logical coordinate tuple, in exact Python integers."""
    out = []
    for el in elements:
        f = 0
        for c, s in zip(el, sizes):
            f = f * s + c
        out.append(f)
    return out


# -- table --------------------------------------------------------------------------------------
def test_table_digit_grid_on_three_logical_dims():
    """The digit-linear (broadcast) tabulation uses row-major place values over three logical
    dims: ``(d0, d1, d2)`` of a 2x2x2 tensor is ``4*d0 + 2*d1 + d2``. A layout and the one with
    d0 and d1 swapped are ``not_equal`` (lanes 2 and 4 hold other elements); a place value of 2
    instead of 4 for d0 makes both tables identical.

    Kills ``table._row_major`` 5 (``mult = s`` for ``mult *= s``)."""
    from layoutverify.core import table as TABLE
    out = [("d0", 2), ("d1", 2), ("d2", 2)]
    a = Layout([("lane", 8)], out, [LANE // 4, (LANE // 2) % 2, LANE % 2])
    b = Layout([("lane", 8)], out, [(LANE // 2) % 2, LANE // 4, LANE % 2])
    els = [tuple(a.element({"lane": t})) for t in range(8)]
    assert TABLE.flat_grid(a, ["lane"], {"lane": 8}).tolist() == _row_major_flat(els, [2, 2, 2])
    check_pair(a, b, "not_equal")


def _big_digit_layout():
    """Lane t -> (60000 + t, 20000 * t) in a 65535 x 65536 tensor (between 2^31 and 2^32
    elements): digit-linear, flat indices past 2^31."""
    return Layout([("lane", 4)], [("d0", (1 << 16) - 1), ("d1", 1 << 16)], [LANE + 60000, LANE * 20000])


def _big_expr_layout():
    """Lane t -> (2^30 - 8 + (3t + 5(t div 2)) mod 7, 2*(t xor 1) + 1) in a 2^30 x 2^30 tensor:
    tabulated by the expression evaluator (no digit form), odd flat indices near 2^60 (past
    float64's 2^53)."""
    sq = (LANE * 3 + (LANE // 2) * 5) % 7  # not digit-linear
    return Layout([("lane", 4)], [("d0", 1 << 30), ("d1", 1 << 30)],
                  [sq + ((1 << 30) - 8), (LANE ^ 1) * 2 + 1])


def test_table_grid_past_int32_and_float64():
    """``flat_grid`` is the exact row-major flat index of every location for logical tensors of
    2^31 elements and more (int64 then), by broadcasting and by the evaluator; it is int32 where
    the tensor fits (the module's memory promise: one int32 per location and layout).

    Kills ``table._dtype`` 1, 2, 4, 5, 6 (int64 always / int32 always / the bound moved to 0 or
    2^32), ``table.flat_grid`` 37, 40, 62, 64 (the broadcast grid built without the chosen dtype:
    int64), 98, 100 (the evaluator's accumulator in float64: inexact past 2^53)."""
    from layoutverify.core import table as TABLE
    from layoutverify.core.radix import digit_form
    big_d, big_e = _big_digit_layout(), _big_expr_layout()
    mid_e = Layout([("lane", 4)], [("d0", (1 << 31) + 8)], [(LANE * 3 + (LANE // 2) * 5) % 7 + (1 << 31)])
    assert digit_form(big_d) is not None and digit_form(big_e) is None and digit_form(mid_e) is None
    for lay in (big_d, big_e, mid_e):
        els = [tuple(lay.element({"lane": t})) for t in range(4)]
        want = _row_major_flat(els, lay.out_sizes)
        got = TABLE.flat_grid(lay, ["lane"], {"lane": 4})
        assert max(want) >= 1 << 31
        assert got.dtype == np.int64 and got.tolist() == want
    # just under 2^31 elements: int32 holds every flat index
    edge_d = Layout([("lane", 4)], [("d0", (1 << 31) - 1)], [LANE * 1000 + (1 << 30)])
    edge_e = Layout([("lane", 4)], [("d0", (1 << 31) - 1)], [(LANE * 3 + (LANE // 2) * 5) % 7 + (1 << 30)])
    for lay in (edge_d, edge_e):
        got = TABLE.flat_grid(lay, ["lane"], {"lane": 4})
        assert got.dtype == np.int32
        assert got.tolist() == [lay.element({"lane": t})[0] for t in range(4)]
    for lay in (Layout([("lane", 8)], [("d0", 8)], [LANE]), Layout([("lane", 8)], [("d0", 8)], [(LANE * 3 + 1) % 8])):
        assert TABLE.flat_grid(lay, ["lane"], {"lane": 8}).dtype == np.int32


def test_table_pointwise_witness_inside_the_common_box():
    """Layouts without registers over other hardware sizes (lanes 8 and 4, two warps): the first
    pointwise difference inside the common box (lane 1 of warp 1) is the witness, its flat index
    read with the box's sizes, not with A's.

    Kills ``table.compare_table`` 111 (the box index read with A's sizes)."""
    a = table_layout([("lane", 8), ("warp", 2)], [8],
                     [[v] for v in [0, 1, 2, 3, 4, 5, 6, 7, 4, 6, 5, 7, 0, 1, 2, 3]])
    b = table_layout([("lane", 4), ("warp", 2)], [8], [[v] for v in range(8)])
    for x, y in ((a, b), (b, a)):
        check_pair(x, y, "not_equal")
        res = compare(x, y, method="table")
        assert res.witness["hardware"] == {"lane": 1, "warp": 1}


def test_first_missing_is_exact_for_large_tensors():
    """``table._first_missing`` on keys ``thread * n_el + element`` past 2^53 (a tensor of 2^60
    elements): thread 1 holds element 1 in one table and element 0 in the other, which float64
    keys cannot tell apart.

    Kills ``table._first_missing`` 2, 39 (the keys in float64). Such keys need a tensor of at
    least 2^29 elements and 2^24 threads in ``compare_table`` (two bitmaps of 512 MiB), so the
    helper is called directly, within its contract (elements below ``n_el``)."""
    from layoutverify.core import table as TABLE
    n_el = 1 << 60
    rx = np.array([[5], [1], [7]], dtype=np.int64)
    ry = np.array([[5], [0], [7]], dtype=np.int64)
    assert TABLE._first_missing(rx, ry, n_el) == (1, 0)
    assert TABLE._first_missing(ry, rx, n_el) == (1, 0)
    assert TABLE._first_missing(rx, rx.copy(), n_el) is None
