"""The mixed-radix derivation and images against evaluation, on expression shapes the mode
layouts of the other tests do not write: constant offsets, ``(c*x + k) // c`` and ``% c`` of
sums, shifts and masks, digits that overlap, images with offsets (found by the mutation pass of
issue 24, docs/mutation.md: these shapes are where a wrong rule would go unseen).

Rules checked:

* whenever the digit form exists it is exact: ``at(loc)`` is the expression's value at every
  location and ``maximum()`` is the largest value of every logical dim;
* shapes that are digit-linear by construction are recognised (the form exists);
* ``compare`` on pairs with overlapping digits and offsets gives the brute-force verdict, with a
  witness that re-checks.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from layoutverify.core import expr as E
from layoutverify.core import radix as RADIX
from layoutverify.core.compare import compare
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout
from layoutverify.testing.brute import brute_verdict, witness_problem

SIZES = [("register", 6), ("lane", 8), ("warp", 4)]


def _window(rng, name, size):
    """``(x // p) % r`` of a divisor chain of ``size``, written one of several ways."""
    divs = [d for d in range(1, size + 1) if size % d == 0]
    p = rng.choice(divs)
    rs = [r for r in divs if size % (p * r) == 0 and r > 1] or [1]
    r = rng.choice(rs)
    x = E.Var(name)
    form = rng.choice(["divmod", "moddiv", "shift"])
    if form == "shift" and p & (p - 1) == 0 and r & (r - 1) == 0:
        return (x >> (p.bit_length() - 1)) & (r - 1), p, r
    if form == "moddiv":
        return (x % (p * r)) // p, p, r
    return (x // p) % r if p * r < size else x // p, p, r


def random_digit_expr(rng):
    """A sum of scaled windows plus a constant, then maybe ``(c*e + k) // c`` or ``% c``."""
    e = E.Const(rng.choice([0, 0, 1, 3]))
    for _ in range(rng.randint(1, 3)):
        name, size = rng.choice(SIZES)
        w, _, _ = _window(rng, name, size)
        e = e + w * rng.choice([1, 2, 3, 5])
    kind = rng.choice(["plain", "plain", "div", "mod", "both", "scaled", "split"])
    c = rng.choice([2, 3, 4])
    k = rng.randrange(c)
    if kind == "scaled":               # a coefficient that is no multiple of c: the window splits
        e = (e * rng.choice([1, 2, 3, 6])) // c if rng.random() < 0.5 else (e * rng.choice([1, 2, 3, 6])) % c
    elif kind == "split":              # c * (one part) + (a part below c)
        name, size = rng.choice(SIZES)
        low = E.Var(name) % c
        e = (e * c + low) // c if rng.random() < 0.5 else (e * c + low) % c
    elif kind == "div":
        e = (e * c + k) // c                # exactly e
    elif kind == "mod":
        e = (e * c + k) % c                 # exactly k
    elif kind == "both":
        e = (e * c + k) // c + (e * c + k) % c
    return e


def _layout(exprs):
    bounds = {n: s - 1 for n, s in SIZES}
    tops = [E.upper_bound(e, bounds) + 1 for e in exprs]
    return Layout(SIZES, [(f"dim{d}", t) for d, t in enumerate(tops)], exprs)


def test_the_digit_form_is_exact_wherever_it_exists():
    rng = random.Random(2411)
    found = 0
    for _ in range(400):
        lay = _layout([random_digit_expr(rng) for _ in range(rng.randint(1, 2))])
        df = RADIX.digit_form(lay)
        if df is None:
            continue
        found += 1
        table = lay.table()
        for k, row in enumerate(lay.hardware_indices()):
            assert df.at(dict(zip(lay.in_names, map(int, row)))) == table[k].tolist(), lay
        assert df.maximum() == table.max(axis=0).tolist(), lay
    assert found > 300, found


def test_digit_linear_shapes_are_recognised():
    """Sums of windows with a constant, and ``(c*e + k) // c`` of them, always have a digit form
    (the rules split the sum exactly); ``(c*e + k) % c`` is the constant ``k``."""
    rng = random.Random(2412)
    chains = {"register": [[1, 2, 6], [1, 3, 6]], "lane": [[1, 2, 4, 8]], "warp": [[1, 2, 4]]}
    for _ in range(300):
        e = E.Const(rng.choice([0, 2]))
        chain = {n: rng.choice(cs) for n, cs in chains.items()}  # the place values of each dim chain
        for _ in range(rng.randint(1, 3)):
            name, size = rng.choice(SIZES)
            i, j = sorted(rng.sample(range(len(chain[name])), 2))
            p, q = chain[name][i], chain[name][j]
            x = E.Var(name)
            w = rng.choice([(x % q) // p, (x // p) % (q // p) if q < size else x // p])
            e = e + w * rng.choice([1, 2, 4])
        c, k = rng.choice([2, 3, 4]), rng.randrange(4)
        k %= c
        for expr in (e, (e * c + k) // c):
            lay = _layout([expr])
            assert RADIX.digit_form(lay) is not None, expr
        const = _layout([(e * c + k) % c])
        df = RADIX.digit_form(const)
        assert df is not None and df.offset == (k,) and not df.own_digits() or df.maximum() == [k]


def test_rules_on_single_windows():
    x = E.Var("lane")
    lay = Layout([("lane", 8)], [("dim0", 8), ("dim1", 4), ("dim2", 2)], [x, (x // 2) % 4, (x >> 2) & 1])
    df = RADIX.digit_form(lay)
    assert df is not None
    for v in range(8):
        assert df.at({"lane": v}) == [v, (v // 2) % 4, (v >> 2) & 1]
    assert df.maximum() == [7, 3, 1]
    # a window divided past its top is 0; taken modulo a multiple of its top, itself
    z = Layout([("lane", 8)], [("dim0", 1), ("dim1", 4)], [(x % 4) // 4, (x % 4) % 8])
    dz = RADIX.digit_form(z)
    assert dz is not None and all(dz.at({"lane": v}) == [0, v % 4] for v in range(8))


def test_not_digit_linear_shapes_are_refused():
    x = E.Var("lane")
    for e in ((x * 3) % 8, (x * 3) % 5, x ^ (x // 2), x & 5):
        lay = Layout([("lane", 8)], [("dim0", 8)], [e])
        assert RADIX.digit_form(lay) is None, e


def _overlap_layout(rng):
    """Digits that overlap (their sums collide), an offset, several logical dims."""
    digits = []
    for n, size in (("register", 4), ("lane", 8)):
        p = 1
        while p < size:
            r = min(rng.choice([2, 4]), size // p)
            digits.append((n, p, r, (rng.choice([0, 1, 2, 3]), rng.choice([0, 1, 2]))))
            p *= r
    off = (rng.choice([0, 1, 2]), rng.choice([0, 1]))
    top = [off[d] + sum((r - 1) * s[d] for _, _, r, s in digits) + 1 for d in range(2)]
    return Layout.from_digits([("register", 4), ("lane", 8)], top, digits, offset=off)


@pytest.mark.parametrize("seed", range(4))
def test_overlapping_digits_with_offsets_against_the_definitions(seed):
    rng = random.Random(3000 + seed)
    n = 0
    while n < 40:
        a = _overlap_layout(rng)
        b = _overlap_layout(rng)
        if a.out_dims != b.out_dims:
            b = Layout.from_table(b.in_dims, a.out_dims, np.minimum(b.table(), np.array(a.out_sizes) - 1),
                                  detect_f2=False) if rng.random() < 0.3 else a
        for x, y in ((a, b), (b, a)):
            want = brute_verdict(x, y)
            for method in ("auto", "table"):
                try:
                    res = compare(x, y, method=method)
                except LayoutError:
                    continue
                assert res.verdict == want, (method, x, y)
                assert witness_problem(x, y, res) is None, (method, res.witness)
            try:
                res = compare(x, y, method="radix")
            except LayoutError:
                continue
            assert res.verdict == want
            assert witness_problem(x, y, res) is None
        n += 1


def test_masks_with_offsets():
    """Images of overlapping digits are bitmaps (``_DimMask``) shifted by the offset: membership,
    the smallest missing element and the digits that sum to an element, against enumeration."""
    rng = random.Random(2413)
    for _ in range(200):
        digits = [((("lane", i)), rng.choice([2, 3, 4]), rng.choice([1, 2, 3, 5])) for i in range(rng.randint(1, 3))]
        off = rng.choice([0, 1, 4, 7])
        m = RADIX._DimMask(off, digits)
        values = {off}
        for _, r, st in digits:
            values = {v + t * st for v in values for t in range(r)}
        for v in range(off - 3, off + 40):
            assert m.contains(v) == (v in values), (digits, off, v)
            if v in values:
                ts = m.locate(v)
                assert ts is not None and off + sum(ts[k] * st for k, _, st in digits) == v
        other = RADIX._DimMask(rng.choice([0, 2, 3]), digits[:-1] or digits)
        ovals = {other.offset}
        for _, r, st in other.digits:
            ovals = {v + t * st for v in ovals for t in range(r)}
        missing = sorted(values - ovals)
        assert m.first_missing(other) == (missing[0] if missing else None)
