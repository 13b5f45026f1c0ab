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
from layoutverify.core.errors import LayoutError, UnsupportedError
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


def test_the_bits_of_a_form_cover_every_value_and_are_exact_without_carries():
    """``_Form.bits`` (used to accept ``a ^ b`` as ``a + b`` when no bit can be set on both sides)
    covers every value the form takes; for power-of-two windows and coefficients whose bits do not
    meet it is exactly the OR of the values, so disjoint XORs are recognised."""
    F = RADIX._Form
    sizes = {"x": 16, "y": 12}
    cases = [(F(), True), (F(4), True), (F(0, {("x", 1, 4): 1}), True), (F(0, {("x", 4, 16): 8}), True),
             (F(1, {("x", 2, 8): 2}), True), (F(3, {("x", 1, 4): 4}), True),
             (F(0, {("x", 1, 4): 1, ("x", 4, 16): 4}), True), (F(0, {("x", 1, 4): 3}), False),
             (F(0, {("y", 1, 3): 1}), False), (F(0, {("y", 3, 12): 2}), False), (F(1, {("x", 1, 2): 1}), False),
             (F(0, {("x", 1, 4): 1, ("x", 4, 16): 2}), False), (F(2, {("x", 1, 4): 2, ("y", 1, 4): 1}), False)]
    for form, exact in cases:
        names = sorted({n for n, _, _ in form.terms})
        ranges = [range(sizes[n]) for n in names]
        seen = 0
        for point in np.ndindex(*[len(r) for r in ranges]) if names else [()]:
            env = dict(zip(names, point))
            seen |= form.const + sum(c * ((env[n] % q) // p) for (n, p, q), c in form.terms.items())
        bits = form.bits()
        assert seen & ~bits == 0, (form.const, form.terms, bin(seen), bin(bits))
        if exact:
            assert bits == seen, (form.const, form.terms, bin(seen), bin(bits))
        else:
            assert bits < 1 << form.max().bit_length(), (form.const, form.terms)  # up to the largest value


@pytest.mark.parametrize("seed", range(3))
def test_xor_of_overlapping_bits_against_the_definitions(seed):
    """``a ^ b`` is digit-linear only when no bit can be set on both sides; random XORs of
    windows, some overlapping, against the definitions."""
    rng = random.Random(300 + seed)
    x, y = E.Var("lane"), E.Var("register")
    for _ in range(12):
        sh_a, sh_b = rng.randrange(3), rng.randrange(3)
        ea = ((x % 4) * (1 << sh_a)) ^ ((y % 2) * (1 << sh_b))
        eb = ((x % 4) * (1 << rng.randrange(3))) + ((y % 2) * (1 << rng.randrange(3)))
        a = Layout([("register", 2), ("lane", 4)], [("dim0", 32)], [ea])
        b = Layout([("register", 2), ("lane", 4)], [("dim0", 32)], [eb])
        meet = sh_a <= sh_b <= sh_a + 1  # bits sh_a, sh_a + 1 of x % 4 against bit sh_b of y % 2
        for method in ("radix", "auto"):
            try:
                res = compare(a, b, method=method)
            except UnsupportedError:  # radix declines XORs whose bits can meet, and only those
                assert method == "radix" and meet
                continue
            assert method == "auto" or not meet
            assert res.verdict == brute_verdict(a, b), (ea, eb, method, res)
            assert witness_problem(a, b, res) is None


def _canonical_set(rng, off=None, prefix=()):
    """A random canonical set of one dim: an offset and merged runs ``(stride, steps)`` (each
    stride at least twice the reach of the runs below it, so no two runs merge), optionally
    starting with the runs ``prefix``."""
    runs = list(prefix)
    s = runs[-1][0] * runs[-1][1] * rng.choice([2, 3]) if runs else rng.choice([1, 1, 2, 3])
    for _ in range(rng.randrange(4)):
        n = rng.choice([2, 2, 3, 4])
        runs.append((s, n))
        s = s * n * rng.choice([2, 3])
    return (rng.randrange(3) if off is None else off), tuple(runs)


def _elements(cs):
    off, runs = cs
    out = {off}
    for s, n in runs:
        out = {v + t * s for v in out for t in range(n)}
    return out


def test_a_missing_element_of_one_dim_is_found_constructively():
    """``radix._missing_in_dim`` (no enumeration) against the enumerated sets: for two different
    canonical sets it names the side holding an element the other lacks, and that element; and
    ``_missing_element`` finds one of the first image outside the second whenever the differing
    dim's witness is on that side."""
    rng = random.Random(77)
    checked = 0
    while checked < 400:
        x, y = _canonical_set(rng), _canonical_set(rng)
        if rng.random() < 0.3:  # share the offset and a prefix of the runs
            y = _canonical_set(rng, x[0], x[1][:rng.randrange(len(x[1]) + 1)])
        if x == y:
            continue
        ex, ey = _elements(x), _elements(y)
        side, v = RADIX._missing_in_dim(x, y)
        assert side in ("x", "y") and v in (ex if side == "x" else ey) - (ey if side == "x" else ex), (x, y, side, v)
        el = RADIX._missing_element([x, (0, ())], [y, (0, ())])
        assert (el == [v, 0]) if side == "x" else el is None, (x, y, el)
        checked += 1


def test_div_and_mod_of_scaled_windows_systematically():
    """``(a * window + b * window' + k) // c`` and ``% c`` for every small window of a dim of 12
    (including place values that divide neither ``c`` nor the window's top), coefficients and
    divisors: wherever a digit form exists it is exact, and the plain cases are recognised."""
    x = E.Var("x")
    size = 12
    windows = [(p, q) for p in (1, 2, 3, 4, 6) for q in (2, 3, 4, 6, 12) if q > p and q % p == 0]
    found = total = 0
    for (p, q), (p2, q2) in [(w, w2) for w in windows for w2 in windows]:
        win = (x % q) // p if q < size else x // p
        win2 = (x % q2) // p2 if q2 < size else x // p2
        for a, b, k, c in ((1, 0, 0, 4), (3, 0, 1, 4), (2, 0, 0, 3), (5, 0, 2, 6), (1, 2, 0, 2), (3, 4, 1, 4),
                           (4, 2, 0, 4), (6, 1, 1, 3), (1, 2, 0, 4), (2, 1, 0, 4)):
            base = win * a + (win2 * b if b else E.Const(0)) + k
            for e in (base // c, base % c):
                total += 1
                lay = Layout([("x", size)], [("dim0", E.upper_bound(e, {"x": size - 1}) + 1)], [e])
                df = RADIX.digit_form(lay)
                if df is None:
                    continue
                found += 1
                for v in range(size):
                    assert df.at({"x": v}) == [lay.element({"x": v})[0]], (e, v)
    assert found >= 880, (found, total)  # recognised: 890 of 2880 when written
