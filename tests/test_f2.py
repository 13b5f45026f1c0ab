"""GF(2) routines of layoutverify.core.f2 against brute force over small spaces.

Every expected value is computed by enumeration (all 2^k combinations of the vectors, or all
inputs of a map), never by the routine under test.
"""
import itertools
import random

import numpy as np
import pytest

from layoutverify.core import f2 as F2


def span_brute(vectors):
    out = {0}
    for v in vectors:
        out |= {x ^ v for x in out}
    return out


def random_vectors(rng, n, bits):
    # mix of random, zero and duplicated vectors so dependent sets are common
    vs = []
    for _ in range(n):
        r = rng.random()
        if r < 0.15:
            vs.append(0)
        elif r < 0.3 and vs:
            a, b = rng.choice(vs), rng.choice(vs)
            vs.append(a ^ b)
        else:
            vs.append(rng.getrandbits(bits))
    return vs


CASES = [(seed, n, bits) for seed in range(60) for n, bits in [(3, 4), (5, 5), (6, 8), (8, 6), (10, 10)]]


@pytest.mark.parametrize("seed,n,bits", CASES)
def test_rank_span_solve_kernel_against_brute_force(seed, n, bits):
    rng = random.Random(seed * 1000 + n * 10 + bits)
    vs = random_vectors(rng, n, bits)
    span = span_brute(vs)
    # rank: |span| = 2^rank
    r = F2.rank(vs)
    assert 1 << r == len(span)
    # row_reduce spans the same space, is independent and canonical
    rr = F2.row_reduce(vs)
    assert span_brute(rr) == span and len(rr) == r
    shuffled = vs[:]
    rng.shuffle(shuffled)
    assert F2.row_reduce(shuffled) == rr
    # membership and solve for every vector of the ambient space
    ech = F2.Echelon(vs)
    for x in range(1 << bits):
        assert ech.contains(x) == (x in span) == F2.in_span(x, vs)
        combo = ech.solve(x)
        if x in span:
            assert combo is not None
            assert F2.apply(vs, combo) == x
        else:
            assert combo is None
    # kernel: exactly the combinations mapping to zero
    ker = F2.kernel(vs)
    zero_combos = {c for c in range(1 << n) if F2.apply(vs, c) == 0}
    assert span_brute(ker) == zero_combos
    assert len(ker) == n - r
    # image of the whole domain and of a subspace
    assert span_brute(F2.image(vs)) == span
    sub = random_vectors(rng, 3, n)
    assert span_brute(F2.image(vs, sub)) == {F2.apply(vs, c) for c in span_brute(sub)}


@pytest.mark.parametrize("seed", range(40))
def test_inverse_and_compose(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 6)
    cols = [rng.getrandbits(n) for _ in range(n)]
    inv = F2.inverse(cols)
    bijective = len({F2.apply(cols, x) for x in range(1 << n)}) == 1 << n
    assert (inv is not None) == bijective
    if inv is not None:
        for x in range(1 << n):
            assert F2.apply(inv, F2.apply(cols, x)) == x
            assert F2.apply(F2.compose(inv, cols), x) == x


def test_inverse_rejects_non_square_image():
    assert F2.inverse([0b100, 0b010]) is None  # a column outside the 2-bit space
    assert F2.inverse([1, 1]) is None


def test_same_span():
    assert F2.same_span([1, 2], [3, 1])
    assert not F2.same_span([1, 2], [1, 4])
    assert F2.same_span([], [0, 0])


@pytest.mark.parametrize("sizes", [(16, 16), (1, 8), (4, 2, 32), (2,)])
def test_packing_roundtrip_and_linearity(sizes):
    p = F2.Packing(sizes)
    coords = list(itertools.product(*(range(s) for s in sizes)))
    packed = {p.pack(c) for c in coords}
    assert len(packed) == len(coords) and max(packed) < 1 << p.width
    rng = random.Random(len(sizes))
    for _ in range(50):
        a, b = rng.choice(coords), rng.choice(coords)
        assert p.unpack(p.pack(a)) == list(a)
        assert p.pack([x ^ y for x, y in zip(a, b)]) == p.pack(a) ^ p.pack(b)


def test_negative_vector_rejected():
    with pytest.raises(ValueError):
        F2.Echelon([-1])


# -- symbolic linearizer ----------------------------------------------------------------------
from layoutverify.core import expr as E  # noqa: E402
from layoutverify.core.layout import Layout, table_from_bases  # noqa: E402


def random_expr(rng, names, depth):
    if depth == 0 or rng.random() < 0.25:
        return E.Var(rng.choice(names)) if rng.random() < 0.8 else E.Const(rng.randrange(4))
    op = rng.choice(["xor", "add", "and", "shr", "shl", "div", "mod", "mul"])
    a = random_expr(rng, names, depth - 1)
    if op == "xor":
        return a ^ random_expr(rng, names, depth - 1)
    if op == "add":
        return a + random_expr(rng, names, depth - 1)
    if op == "and":
        return a & rng.randrange(1, 16)
    if op == "shr":
        return a >> rng.randrange(0, 3)
    if op == "shl":
        return a << rng.randrange(0, 3)
    if op == "div":
        return a // rng.choice([1, 2, 3, 4, 8])
    if op == "mod":
        return a % rng.choice([2, 3, 4, 8, 16])
    return a * rng.choice([1, 2, 3, 4, 5, 8])


@pytest.mark.parametrize("seed", range(300))
def test_linearize_is_exact_when_it_answers(seed):
    """Whenever linearize returns bases, XOR of bases reproduces the expressions everywhere."""
    rng = random.Random(seed)
    in_dims = [("register", rng.choice([1, 2, 4])), ("lane", rng.choice([2, 4, 8])), ("warp", rng.choice([1, 2]))]
    names = [n for n, s in in_dims]
    out_sizes = [rng.choice([4, 8, 16, 32]), rng.choice([2, 8, 16])]
    exprs = [random_expr(rng, names, 3) % s if rng.random() < 0.5 else random_expr(rng, names, 3)
             for s in out_sizes]
    bases = F2.linearize(exprs, in_dims, out_sizes)
    lay = Layout(in_dims, [("dim0", out_sizes[0]), ("dim1", out_sizes[1])], exprs)
    tab = lay.table()
    if bases is not None:
        assert np.array_equal(table_from_bases(in_dims, bases, 2), tab)
        assert (tab < np.array(out_sizes)).all()


@pytest.mark.parametrize("seed", range(60))
def test_linearize_recognises_f2_constructions(seed):
    """Bases, XORed digits and power-of-two mixed-radix modes are all recognised exactly."""
    rng = random.Random(seed)
    unit = [(1 << k, 0) for k in range(3)] + [(0, 1 << k) for k in range(4)]
    rng.shuffle(unit)
    vecs = [u if rng.random() > 0.2 else (0, 0) for u in unit]
    if seed % 2:
        vecs[0] = (vecs[0][0] ^ 1, vecs[0][1] ^ 2)  # a swizzle
    bases = {"register": vecs[:2], "lane": vecs[2:7]}
    lay = Layout.from_bases(bases, [8, 16])
    assert F2.linearize(lay.exprs, lay.in_dims, lay.out_sizes) == lay.f2_bases()
    acc = [E.Const(0), E.Const(0)]
    for n, vs in bases.items():
        for i, v in enumerate(vs):
            digit = (E.Var(n) // (1 << i)) % 2
            acc = [x ^ (digit * c) if c else x for x, c in zip(acc, v)]
    assert F2.linearize(acc, lay.in_dims, lay.out_sizes) == lay.f2_bases()
    m = Layout.from_modes([("register", 4), ("lane", 32)], [16, 8],
                          {"register": [(2, [0, 1]), (2, [8, 0])], "lane": [(4, [0, 2]), (8, [1, 0])]})
    assert F2.linearize(m.exprs, m.in_dims, m.out_sizes) == m.f2_bases()


def test_linearize_declines_what_it_cannot_prove():
    L = E.Var("lane")
    dims = [("lane", 8)]
    assert F2.linearize([(L * 3) % 8], dims, [8]) is None        # a carry
    assert F2.linearize([L + 1], dims, [16]) is None             # constant term: L(0) != 0
    assert F2.linearize([L], dims, [4]) is None                  # leaves the tensor
    assert F2.linearize([L], [("lane", 6)], [8]) is None         # not a power of two
    assert F2.linearize([E.Lookup(L, np.arange(8))], dims, [8]) is None
    assert F2.linearize([(L % 4) + (L // 4) * 4], dims, [8]) == {"lane": [(1,), (2,), (4,)]}
