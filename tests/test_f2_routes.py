"""The one route to a layout's F2 bases (``Layout._derive_f2``), against the definition, on a
seeded sweep (issue 24).

Before the F2 derivation was made one route, bases were read four ways: ``Layout.f2_bases``
(``L(2**i)`` by evaluation, checked against the whole table or proved by z3),
``f2.linearize`` (symbolically, bit by bit), ``table.f2_bases`` (the flat grid) and
``Layout.from_table``'s detection (``_bases_from_table``). This test first held those four to
one another and to the definition evaluated by brute force, on layouts built every way (F2
bases, expressions of F2 maps, XOR swizzles, digits of powers of two, tables, non-linear maps),
on the code before the change (commit 7a84e26), where it passed. Now it holds the one route, and
each of its steps (the symbolic reading, the table reading, ``from_table``'s detection), to the
definition.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from layoutverify.core import expr as E
from layoutverify.core import f2 as F2
from layoutverify.core.layout import Layout, _f2_of_table, _table_from_bases


def _brute_bases(lay: Layout):
    """The definition: ``L(2**i)`` per hardware bit, and ``L(x) == XOR`` of them at every ``x``."""
    if not lay.all_pow2:
        return None
    t = lay.apply(lay.hardware_indices())
    if (t < 0).any() or any((t[:, d] >= s).any() for d, s in enumerate(lay.out_sizes)):
        return "out of range"
    if t[0].any():
        return None
    bases, stride = {}, 1
    for n, s in lay.in_dims:
        bases[n] = [tuple(int(c) for c in t[stride << b]) for b in range(s.bit_length() - 1)]
        stride *= s
    ok = np.array_equal(_table_from_bases(lay.in_dims, bases, len(lay.out_dims)), t)
    return bases if ok else None


def _layouts(seed: int):
    rng = random.Random(seed)
    out = []
    for _ in range(40):
        shape = [rng.choice([2, 4, 8, 16]), rng.choice([4, 8, 32])]
        bits = [(d, 1 << k) for d, s in enumerate(shape) for k in range(s.bit_length() - 1)]
        dims = [("register", rng.randint(0, 2)), ("lane", rng.randint(1, 5)), ("warp", rng.randint(0, 2))]
        bases = {}
        for n, k in dims:
            vs = []
            for _ in range(k):
                v = [0, 0]
                for _ in range(rng.choice([0, 1, 1, 2])):
                    d, b = rng.choice(bits)
                    v[d] ^= b
                vs.append(tuple(v))
            bases[n] = vs
        lay = Layout.from_bases(bases, shape)
        out.append(lay)
        out.append(Layout(lay.in_dims, lay.out_dims, lay.exprs))   # the same map as expressions
        out.append(Layout.from_table(lay.in_dims, lay.out_dims, lay.table(), detect_f2=False))
        # a non-linear neighbour: one location moved
        t = lay.table().copy()
        t[-1] = (t[-1] + 1) % np.array(shape)
        out.append(Layout.from_table(lay.in_dims, lay.out_dims, t, detect_f2=False))
    for rows, cols in ((8, 8), (16, 32), (4, 64)):
        off = E.Var("offset")
        r, c = off // cols, off % cols
        out.append(Layout([("offset", rows * cols)], [("dim0", rows), ("dim1", cols)], [r, c ^ (r % 8)]))
        out.append(Layout([("offset", rows * cols)], [("dim0", rows), ("dim1", cols)], [r, (c + r) % cols]))
        out.append(Layout([("offset", rows * cols)], [("dim0", rows), ("dim1", cols)], [r, c ^ ((r + 1) % 8)]))
    for _ in range(30):  # digits of powers of two (mixed-radix chains with power-of-two radices)
        lane, reg = rng.choice([(32, 4), (16, 2), (8, 8)])
        digits = []
        for n, size in (("register", reg), ("lane", lane)):
            p = 1
            while p < size:
                r = rng.choice([2, 4])
                r = min(r, size // p)
                digits.append((n, p, r, (rng.choice([0, 1, 2, 4, 8]), rng.choice([0, 1, 2, 4, 8, 16]))))
                p *= r
        shape = (64, 64)
        lay = Layout.from_digits([("register", reg), ("lane", lane)], shape, digits)
        out.append(lay)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_f2_routes_agree(seed):
    checked = linear = symbolic = 0
    for lay in _layouts(seed):
        want = _brute_bases(lay)
        if want == "out of range":
            continue
        checked += 1
        got = lay.f2_bases()
        assert (got is None) == (want is None), lay
        if want is None:
            continue
        linear += 1
        assert {n: list(v) for n, v in got.items()} == want
        sym = F2.linearize(lay.exprs, lay.in_dims, lay.out_sizes)
        if sym is not None:  # exact when it answers
            symbolic += 1
            assert sym == want
        assert _f2_of_table(lay.in_dims, lay.table()) == want
        detected = Layout.from_table(lay.in_dims, lay.out_dims, lay.table())
        assert detected.f2_bases() == want and type(detected.map).__name__ == "F2Bases"
    assert checked > 150 and linear > 100 and symbolic > 60
