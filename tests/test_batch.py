"""prove_many (core) and prove_specs (apps): the same verdicts as compare, layouts parsed once."""
from __future__ import annotations

import random

import pytest

from layoutverify.core.batch import canonical_key, prove_many
from layoutverify.core.compare import compare
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout
from layoutverify.testing.random_layouts import mixed_radix_expr, mode_mutants, random_modes


def _layouts(seed):
    rng = random.Random(seed)
    out = []
    for _ in range(12):
        in_dims, shape, modes = random_modes(rng)
        base = Layout.from_modes(in_dims, shape, modes)
        group = [base, mixed_radix_expr(in_dims, shape, modes)]
        for _kind, d2, m in mode_mutants(rng, in_dims, shape, modes):
            try:
                lay = Layout.from_modes(d2, shape, m)
                lay.check_in_range()
                group.append(lay)
            except LayoutError:
                pass
        out.append(group)
    return out


def test_prove_many_matches_compare_and_repeats_are_shared():
    pairs = []
    for group in _layouts(3):
        pairs += [(x, y) for x in group for y in group]
    pairs += pairs[:50]  # repeated pairs
    got = prove_many(pairs)
    for (a, b), res in zip(pairs, got):
        want = compare(a, b)
        assert (res.verdict, res.method) == (want.verdict, want.method)
        if res.verdict in ("not_equal", "equal_up_to_register_order"):
            loc = res.witness["hardware"]
            from layoutverify.core.result import Pair
            p = Pair(a, b)
            assert res.witness["a"] == p.evaluate("a", loc) and res.witness["b"] == p.evaluate("b", loc)


def test_identical_canonical_forms_are_equal_without_a_strategy():
    bases = {"register": [[0, 1], [1, 0]], "lane": [[0, 2], [0, 4], [2, 0], [4, 0], [0, 8]]}
    a = Layout.from_bases(bases, [8, 16])
    b = Layout.from_table(a.in_dims, a.out_dims, a.table())  # detected F2, another object
    assert canonical_key(a) == canonical_key(b)
    res, = prove_many([(a, b)])
    want = compare(a, b)
    assert (res.verdict, res.method, res.reason) == ("equal", "f2", want.reason) == (want.verdict, want.method,
                                                                                      want.reason)
    assert res.seconds == 0.0  # read off the normal forms: no strategy ran


def test_prove_many_agrees_with_compare_on_the_corpora_and_a_seeded_sweep():
    """Every entry point reports the same verdict and method (issue 24): every verdict claim of
    the shipped corpora, and a seeded sweep of mode layouts, their mutants and other spellings,
    each through prove_many (one batch, so repeated maps come from its memo) and compare."""
    from pathlib import Path

    from layoutverify.adapters import parse_spec
    from layoutverify.apps import corpus
    pairs = []
    for cl in corpus.load([Path(__file__).resolve().parents[1] / "corpora"]).claims:
        if cl.kind != "verdict":
            continue
        try:
            pairs.append((parse_spec(cl.a, shape=cl.shape_a, **cl.options_a),
                          parse_spec(cl.b, shape=cl.shape_b, **cl.options_b)))
        except LayoutError:
            continue
    for group in _layouts(11) + _layouts(12):
        pairs += [(x, y) for x in group for y in group]
    assert len(pairs) > 600
    got = prove_many(pairs, errors="return")
    for (a, b), res in zip(pairs, got):
        try:
            want = compare(a, b)
        except LayoutError as e:
            assert isinstance(res, LayoutError) and str(res) == str(e)
            continue
        assert (res.verdict, res.method) == (want.verdict, want.method), (a, b)


def test_errors_can_be_returned_per_pair():
    from layoutverify.core import expr as E
    bad = Layout([("lane", 4)], [("dim0", 3)], [E.Var("lane")])  # leaves its shape
    good = Layout([("lane", 4)], [("dim0", 3)], [E.Var("lane") % 3])
    out = prove_many([(good, good), (good, bad)], errors="return")
    assert out[0].verdict == "equal" and isinstance(out[1], LayoutError)
    with pytest.raises(LayoutError):
        prove_many([(good, bad)])


def test_prove_specs_parses_each_layout_once():
    pytest.importorskip("triton")
    from layoutverify import adapters
    from layoutverify.apps.prove_text import prove_specs
    blocked = "triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
    other = "triton:#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>"
    adapters.clear_parse_cache()
    before = dict(adapters._CACHE_STATS)
    out = prove_specs([(blocked, other, (64, 64)), (blocked, blocked, (64, 64)), (other, blocked, (64, 64)),
                       ("triton:#ttg.blocked<{}>", blocked, (64, 64))])
    assert adapters._CACHE_STATS["misses"] - before["misses"] == 3
    assert [getattr(r, "verdict", None) for r in out[:3]] == [compare(*p).verdict for p in (
        (adapters.parse_spec(blocked, shape=(64, 64)), adapters.parse_spec(other, shape=(64, 64))),
        (adapters.parse_spec(blocked, shape=(64, 64)),) * 2,
        (adapters.parse_spec(other, shape=(64, 64)), adapters.parse_spec(blocked, shape=(64, 64))))]
    assert isinstance(out[3], LayoutError)
