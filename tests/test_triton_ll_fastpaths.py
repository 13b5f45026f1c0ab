"""The shortcuts of the Triton adapter's linear-layout algebra (``adapters/triton/ll.py``,
``cga.py``) give exactly what the plain definitions give, on seeded random layouts.

References here are written from the definitions (Triton's ``LinearLayout`` product and
``supremum`` of dim-name orders), step by step, with no shortcut: the product of two layouts
merges in and out dim names keeping each side's relative order; an in dim shared by both gets the
left operand's bases then the right's; the right operand's coordinates are scaled by the left's
out sizes; out sizes multiply. (The whole adapter is also checked against Triton itself by
test_triton_sweep and the other differential tests.)
"""
from __future__ import annotations

import random

from layoutverify.adapters.triton import cga as C
from layoutverify.adapters.triton.linear import one_cta_blocked_ll
from layoutverify.adapters.triton.ll import LL, supremum

INS = ["register", "lane", "warp", "block"]
OUTS = ["dim0", "dim1", "dim2"]


def merge_reference(x, y):
    """Triton's ``supremum`` of two name orders, both kept: take the common next name; else a next
    name the other order does not hold (``x``'s first); else the one whose place in the other
    order is earlier (``x``'s on a tie)."""
    out = []
    while True:
        rx = [n for n in x if n not in out]
        ry = [n for n in y if n not in out]
        if not rx and not ry:
            return out
        if rx and ry and rx[0] == ry[0]:
            out.append(rx[0])
        elif rx and rx[0] not in y:
            out.append(rx[0])
        elif ry and ry[0] not in x:
            out.append(ry[0])
        else:
            out.append(rx[0] if list(y).index(rx[0]) <= list(x).index(ry[0]) else ry[0])


def product_reference(a: LL, b: LL) -> LL:
    ins = merge_reference(list(a.bases), list(b.bases))
    outs = merge_reference([n for n, _ in a.outs], [n for n, _ in b.outs])
    sa, sb = dict(a.outs), dict(b.outs)
    bases = {}
    for i in ins:
        vs = []
        for v in a.bases.get(i, []):
            m = dict(zip(sa, v))
            vs.append([m.get(n, 0) for n in outs])
        for v in b.bases.get(i, []):
            m = dict(zip(sb, v))
            vs.append([m.get(n, 0) * sa.get(n, 1) for n in outs])
        bases[i] = vs
    return LL(bases, [(n, sa.get(n, 1) * sb.get(n, 1)) for n in outs])


def same(x: LL, y: LL) -> bool:
    """Equal bases and sizes, and the same order of in dims (Triton keeps it)."""
    return x == y and list(x.bases) == list(y.bases)


def random_ll(rng: random.Random) -> LL:
    outs = rng.sample(OUTS, rng.randint(0, 3))
    sizes = [1 << rng.randint(0, 3) for _ in outs]
    bases = {i: [[rng.randrange(s) for s in sizes] for _ in range(rng.randint(0, 3))]
             for i in rng.sample(INS, rng.randint(0, 4))}
    return LL(bases, list(zip(outs, sizes)))


def test_merge_of_names():
    rng = random.Random(1)
    for _ in range(5000):
        x = rng.sample("abcdef", rng.randint(0, 6))
        y = rng.sample("abcdef", rng.randint(0, 6))
        assert supremum(x, y) == merge_reference(x, y), (x, y)


def test_products_general_and_one_dim():
    rng = random.Random(2)
    for _ in range(3000):
        a = random_ll(rng)
        b = random_ll(rng) if rng.random() < 0.5 else (
            LL.identity1d(1 << rng.randint(0, 3), rng.choice(INS), rng.choice(OUTS)) if rng.random() < 0.7
            else LL.zeros1d(1 << rng.randint(0, 3), rng.choice(INS), rng.choice(OUTS)))
        assert same(a * b, product_reference(a, b)), (a, b)


def test_identity_chains_and_blocked_tiles():
    rng = random.Random(3)
    for _ in range(2000):
        a = random_ll(rng)
        factors = [(1 << rng.randint(0, 3), rng.choice(INS), rng.choice(OUTS)) for _ in range(rng.randint(0, 6))]
        want = a
        for f in factors:
            want = product_reference(want, LL.identity1d(*f))
        assert same(a.times_identities(factors), want), (a, factors)
        rank = rng.randint(1, 3)
        order = rng.sample(range(rank), rank)
        parts = [(n, [1 << rng.randint(0, 3) for _ in range(rank)]) for n in ("register", "lane", "warp")]
        want = LL.empty()
        for n, sizes in parts:
            one = LL.empty()
            for d in order:
                one = product_reference(one, LL.identity1d(sizes[d], n, f"dim{d}"))
            want = product_reference(want, one)
        assert same(LL.standard_nd_tiles(parts, order), want), (parts, order)


def test_one_cta_combine_equals_the_general_one():
    """``combine_cta_cga`` without CGA bases takes a short path; passing the default cut
    explicitly takes the general one (an empty ``block`` layout multiplied in)."""
    rng = random.Random(4)
    for _ in range(2000):
        rank = rng.randint(1, 3)
        order = rng.sample(range(rank), rank)
        cta = LL.standard_nd_tiles([(n, [1 << rng.randint(0, 3) for _ in range(rank)])
                                    for n in ("register", "lane", "warp")], order)
        shape = [1 << rng.randint(0, 6) for _ in range(rank)]
        fast = C.combine_cta_cga(cta, [], shape)
        general = C.combine_cta_cga(cta, [], shape, fit_cta=lambda ll, want: ll.not_larger(want))
        assert same(fast, general), (cta, shape)


def test_one_cta_blocked_equals_the_algebra():
    """The one-pass blocked layout equals the tiles multiplied out and combined by the general
    path, zero registers dropped or kept (Triton 3.9 / earlier)."""
    rng = random.Random(5)
    for _ in range(3000):
        rank = rng.randint(1, 4)
        order = rng.sample(range(rank), rank)
        spt, tpw, wpc = ([1 << rng.randint(0, 3) for _ in range(rank)] for _ in range(3))
        shape = [1 << rng.randint(0, 7) for _ in range(rank)]
        tiles = LL.empty()
        for n, sizes in (("register", spt), ("lane", tpw), ("warp", wpc)):
            for d in order:
                tiles = product_reference(tiles, LL.identity1d(sizes[d], n, f"dim{d}"))
        general = C.combine_cta_cga(tiles, [], shape, fit_cta=lambda ll, want: ll.not_larger(want))
        for drop in (False, True):
            want = general.drop_zero_registers() if drop else general
            got = one_cta_blocked_ll(spt, tpw, wpc, order, shape, drop_zero_registers=drop)
            assert same(got, want), (spt, tpw, wpc, order, shape, drop)


def test_standard_nd_and_not_smaller_equal_their_products():
    """``standard_nd`` and ``not_smaller`` are built in one pass; by definition they are products
    of one-dim identities (``identityStandardND``: the identities of the dims in ``order``;
    ``ensureLayoutNotSmallerThan``: ``self * identity1d(desired / actual, first in dim, out dim)``
    per short out dim, in the layout's out-dim order)."""
    rng = random.Random(6)
    for _ in range(2000):
        rank = rng.randint(1, 3)
        order = rng.sample(range(rank), rank)
        sizes = [1 << rng.randint(0, 3) for _ in range(rank)]
        in_dim = rng.choice(INS)
        want = LL.empty()
        for d in order:
            want = product_reference(want, LL.identity1d(sizes[d], in_dim, f"dim{d}"))
        assert same(LL.standard_nd(in_dim, sizes, order), want), (in_dim, sizes, order)
        a = random_ll(rng)
        if not a.bases:
            continue
        shape = {n: s << rng.randint(0, 2) for n, s in a.outs}
        want = a
        for n, actual in a.outs:
            if actual < shape[n]:
                want = product_reference(want, LL.identity1d(shape[n] // actual, list(a.bases)[0], n))
        assert same(a.not_smaller(shape), want), (a, shape)


def test_inferred_sizes_equal_the_definition():
    """``LL.inferred`` (and ``_sizes_inferred``) read the out sizes at C speed in the common case:
    each out size is the smallest power of two above every basis entry of that dim (1 if none);
    negative entries are refused."""
    rng = random.Random(7)
    for _ in range(3000):
        names = rng.sample(OUTS, rng.randint(1, 3))
        bases = {i: [[rng.choice([0, 0, 1, 2, 3, 5, 8, 12]) for _ in names] for _ in range(rng.randint(0, 3))]
                 for i in rng.sample(INS, rng.randint(1, 3))}
        want = []
        for d in range(len(names)):
            top = max([v[d] for vs in bases.values() for v in vs], default=0)
            want.append((names[d], 1 << top.bit_length() if top else 1))
        got = LL.inferred({k: [list(v) for v in vs] for k, vs in bases.items()}, names, require_surjective=False)
        assert got.outs == want, (bases, names)
        assert same(LL(bases, [(n, 64) for n in names])._sizes_inferred(), got)
        if any(v for vs in bases.values() for v in vs):
            neg = {k: [list(v) for v in vs] for k, vs in bases.items()}
            k = next(k for k, vs in neg.items() if vs)
            neg[k][0][0] = -1
            try:
                LL.inferred(neg, names, require_surjective=False)
            except Exception as e:  # noqa: BLE001 - the error type is the point
                assert type(e).__name__ == "LayoutError"
            else:
                raise AssertionError(f"negative entry accepted: {neg}")
