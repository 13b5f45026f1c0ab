"""The canonical form against independent oracles.

* Triton's own ``LinearLayout`` (its C++ class, exposed in ``triton._C.libtriton.linear_layout``)
  is the oracle for F2 layouts: evaluation, product, composition, inversion, injectivity,
  surjectivity, and the tensor view that our grid must reproduce cell by cell.
* Mixed-radix layouts are checked against a direct loop over the digits written in the test.
"""
from __future__ import annotations

import itertools
import random
import re
import subprocess
import sys

import numpy as np
import pytest

from layoutverify import Layout, LayoutError
from layoutverify.core import expr as E
from layoutverify.core.errors import NotInvertibleError

tll = pytest.importorskip("triton._C.libtriton.linear_layout")
TLL = tll.LinearLayout

IN_DIMS = ("register", "lane", "warp", "block")


def random_bases(rng: random.Random, shape, bits_per_dim, zero_prob=0.15):
    """Random F2 bases: each basis vector is a random coordinate (or zero: replication)."""
    bases = {}
    for name, nbits in zip(IN_DIMS, bits_per_dim):
        vecs = []
        for _ in range(nbits):
            if rng.random() < zero_prob:
                vecs.append([0] * len(shape))
            else:
                vecs.append([rng.randrange(s) for s in shape])
        bases[name] = vecs
    return bases


def distributed_bases(rng: random.Random, shape, n_zero):
    """Bases Triton accepts for a distributed layout: the non-zero ones form an invertible
    map onto the tensor (each element held), each a single bit of one dim, plus ``n_zero`` zero bases (replication)."""
    vecs = []
    for d, s in enumerate(shape):
        for b in range(s.bit_length() - 1):
            v = [0] * len(shape)
            v[d] = 1 << b
            vecs.append(v)
    rng.shuffle(vecs)  # Triton's tensor view accepts only single-bit bases here
    for _ in range(n_zero):
        vecs.insert(rng.randint(0, len(vecs)), [0] * len(shape))
    cuts = sorted(rng.randint(0, len(vecs)) for _ in range(3))
    parts = [vecs[:cuts[0]], vecs[cuts[0]:cuts[1]], vecs[cuts[1]:cuts[2]], vecs[cuts[2]:]]
    return dict(zip(IN_DIMS, parts))


def to_triton(bases, shape):
    return TLL.from_bases([(k, v) for k, v in bases.items()], [f"dim{i}" for i in range(len(shape))],
                          list(shape), False)


def triton_bases(ll):
    return {k: [list(v) for v in vs] for k, vs in ll.bases}


def cases(n, seed):
    rng = random.Random(seed)
    for _ in range(n):
        rank = rng.randint(1, 3)
        shape = [1 << rng.randint(0, 4) for _ in range(rank)]
        bits = [rng.randint(0, 3), rng.randint(0, 5), rng.randint(0, 2), rng.randint(0, 1)]
        yield rng, shape, random_bases(rng, shape, bits)


@pytest.mark.parametrize("seed", range(4))
def test_from_bases_evaluates_like_triton(seed):
    for rng, shape, bases in cases(40, seed):
        ours = Layout.from_bases(bases, shape)
        theirs = to_triton(bases, shape)
        hw = ours.hardware_indices()
        table = ours.table()
        for k in rng.sample(range(len(hw)), min(len(hw), 24)):
            got = theirs.apply({n: int(x) for n, x in zip(ours.in_names, hw[k])})
            assert [got[f"dim{d}"] for d in range(len(shape))] == table[k].tolist()


@pytest.mark.parametrize("seed", range(3))
def test_product_matches_triton(seed):
    for (rng, shape, b1), (_, shape2, b2) in zip(cases(30, seed), cases(30, seed + 100)):
        rank = min(len(shape), len(shape2))
        shape, shape2 = shape[:rank], shape2[:rank]
        b1 = {k: [v[:rank] for v in vs] for k, vs in b1.items()}
        b2 = {k: [v[:rank] for v in vs] for k, vs in b2.items()}
        ours = Layout.from_bases(b1, shape) * Layout.from_bases(b2, shape2)
        theirs = to_triton(b1, shape) * to_triton(b2, shape2)
        assert ours.f2_bases() == {k: [tuple(v) for v in vs] for k, vs in triton_bases(theirs).items()}
        assert list(ours.out_dims) == [tuple(x) for x in theirs.out_dims]


def test_then_is_triton_compose():
    """Our ``a.then(b)`` (b after a) is Triton's ``a.compose(b)``."""
    rng = random.Random(7)
    checked = 0
    for _ in range(60):
        shape = [1 << rng.randint(1, 3), 1 << rng.randint(1, 3)]
        bits = [rng.randint(0, 2), rng.randint(0, 3), rng.randint(0, 2), 0]
        a = random_bases(rng, shape, bits)
        # b: (dim0, dim1) -> (x, y)
        out2 = [1 << rng.randint(1, 3), 1 << rng.randint(1, 3)]
        b = {"dim0": [[rng.randrange(s) for s in out2] for _ in range(shape[0].bit_length() - 1)],
             "dim1": [[rng.randrange(s) for s in out2] for _ in range(shape[1].bit_length() - 1)]}
        ours = Layout.from_bases(a, shape).then(Layout.from_bases(b, out2))
        ta = to_triton(a, shape)
        tb = TLL.from_bases([(k, v) for k, v in b.items()], ["dim0", "dim1"], out2, False)
        theirs = ta.compose(tb)
        assert ours.f2_bases() == {k: [tuple(v) for v in vs] for k, vs in triton_bases(theirs).items()}
        checked += 1
    assert checked == 60


def test_inverse_matches_triton():
    rng = random.Random(11)
    inverted = 0
    for _ in range(200):
        shape = [1 << rng.randint(0, 3), 1 << rng.randint(0, 3)]
        n = sum(s.bit_length() - 1 for s in shape)
        # A random invertible GF(2) map: permute unit vectors, then xor in lower-triangular noise.
        units = [(d, 1 << b) for d, s in enumerate(shape) for b in range(s.bit_length() - 1)]
        rng.shuffle(units)
        vecs = []
        for d, v in units:
            vec = [0] * len(shape)
            vec[d] = v
            vecs.append(vec)
        for i in range(len(vecs)):
            for j in range(i):
                if rng.random() < 0.3:
                    vecs[i] = [x ^ y for x, y in zip(vecs[i], vecs[j])]
        split = rng.randint(0, n)
        bases = {"register": vecs[:split], "lane": vecs[split:]}
        ours = Layout.from_bases(bases, shape)
        theirs = to_triton(bases, shape)
        assert ours.is_injective() == theirs.is_injective()
        assert ours.is_surjective() == theirs.is_surjective()
        if theirs.is_invertible():
            inv = ours.inverse()
            assert inv.f2_bases() == {k: [tuple(v) for v in vs] for k, vs in triton_bases(theirs.invert()).items()}
            inverted += 1
    assert inverted > 50


def test_injective_surjective_like_triton():
    for rng, shape, bases in cases(150, 5):
        ours = Layout.from_bases(bases, shape)
        theirs = to_triton(bases, shape)
        assert ours.is_injective() == theirs.is_injective()
        assert ours.is_surjective() == theirs.is_surjective()


def _triton_view_cells(text: str) -> list[str]:
    body = text.replace("[", " ").replace("]", " ")
    return [c.strip() for c in body.replace("\n", ",").split(",") if c.strip()]


def test_grid_matches_triton_tensor_view():
    """Our grid cells are exactly the cells of Triton's ``format_tensor_view``."""
    gl = pytest.importorskip("triton.experimental.gluon.language")
    if not hasattr(gl.DistributedLinearLayout, "format_tensor_view"):
        pytest.skip("this Triton has no DistributedLinearLayout.format_tensor_view (added after 3.6)")
    rng = random.Random(3)
    drawn = 0
    for _ in range(60):
        shape = [1 << rng.randint(0, 3), 1 << rng.randint(0, 4)]
        bases = distributed_bases(rng, shape, rng.randint(0, 3))
        ours = Layout.from_bases(bases, shape)
        dl = gl.DistributedLinearLayout(bases["register"], bases["lane"], bases["warp"], bases["block"], shape)
        want = _triton_view_cells(dl.format_tensor_view(shape))
        grid = ours.render(max_holders=None)
        lines = grid.splitlines()[1:]  # drop the column header
        got = [c for line in lines for c in line.split(":", 1)[1].split()]
        # Triton pads holders inside a cell ("B0:T0:0| B0:T8:0"); compare without spaces.
        assert [c.replace(" ", "") for c in want] == got
        drawn += 1
    assert drawn >= 20


def test_mixed_radix_against_digit_loop():
    rng = random.Random(2)
    for _ in range(100):
        nm = rng.randint(1, 4)
        sizes = [rng.randint(1, 5) for _ in range(nm)]
        strides = [(rng.randint(0, 6), rng.randint(0, 6)) for _ in range(nm)]
        n = int(np.prod(sizes))
        out = (max(1, sum((s - 1) * a for s, (a, _) in zip(sizes, strides)) + 1),
               max(1, sum((s - 1) * b for s, (_, b) in zip(sizes, strides)) + 1))
        lay = Layout.from_modes([("register", n)], out, {"register": list(zip(sizes, strides))})
        for idx in range(n):
            rest, r0, r1 = idx, 0, 0
            for s, (a, b) in zip(sizes, strides):  # first mode fastest
                digit, rest = rest % s, rest // s
                r0 += digit * a
                r1 += digit * b
            assert lay.table()[idx].tolist() == [r0, r1]


def test_f2_detection_is_checked_not_assumed():
    # CuTe (4,3):(1,4): non-power-of-two, never F2.
    assert not Layout.from_modes([("offset", 12)], [12], {"offset": [(4, [1]), (3, [4])]}).is_f2_linear()
    # Power-of-two sizes but an integer add with carries: (a + b) % 4 is not XOR.
    carry = Layout([("register", 4), ("lane", 4)], [("dim0", 4)], [(E.Var("register") + E.Var("lane")) % 4])
    assert carry.all_pow2 and not carry.is_f2_linear()
    # A constant offset breaks linearity (L(0) != 0).
    shifted = Layout([("register", 4)], [("dim0", 8)], [E.Var("register") + 4])
    assert not shifted.is_f2_linear()
    # A swizzle is F2-linear: col ^ row over 8x8.
    sw = Layout([("offset", 64)], [("dim0", 8), ("dim1", 8)],
                [E.Var("offset") // 8, (E.Var("offset") % 8) ^ (E.Var("offset") // 8)])
    assert sw.is_f2_linear()
    assert sw.f2_bases()["offset"] == [(0, 1), (0, 2), (0, 4), (1, 1), (2, 2), (4, 4)]


def test_from_table_roundtrip_and_fingerprint():
    rng = random.Random(9)
    for _ in range(50):
        n = rng.randint(1, 40)
        shape = (rng.randint(1, 6), rng.randint(1, 6))
        table = np.array([[rng.randrange(shape[0]), rng.randrange(shape[1])] for _ in range(n)])
        lay = Layout.from_table([("register", n)], shape, table)
        assert np.array_equal(lay.table(), table)
        again = Layout.from_json(lay.to_json())
        assert np.array_equal(again.table(), table)
        assert again.fingerprint() == lay.fingerprint()
    a = Layout.from_bases({"register": [[0, 1]], "lane": [[1, 0]]}, [2, 2])
    b = Layout.from_table(a.in_dims, a.out_dims, a.table())
    c = Layout.from_bases({"register": [[1, 0]], "lane": [[0, 1]]}, [2, 2])
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()


def test_fingerprint_stable_across_processes():
    code = ("from layoutverify import Layout;"
            "print(Layout.from_bases({'register':[[0,1],[1,0]],'lane':[[0,2],[2,0]]},[4,4]).fingerprint())")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(2)}
    here = Layout.from_bases({"register": [[0, 1], [1, 0]], "lane": [[0, 2], [2, 0]]}, [4, 4]).fingerprint()
    assert outs == {here + "\n"}


def test_inverse_of_non_power_of_two_and_errors():
    lay = Layout.from_modes([("offset", 12)], [4, 3], {"offset": [(4, [1, 0]), (3, [0, 1])]})
    inv = lay.inverse()
    assert np.array_equal(lay.then(inv).table(), lay.hardware_indices())
    with pytest.raises(NotInvertibleError):
        Layout.from_bases({"register": [[0, 0]], "lane": [[1, 0]]}, [2, 1]).inverse()
    with pytest.raises(NotInvertibleError, match="no hardware location"):
        Layout.from_modes([("offset", 4)], [4], {"offset": [(2, [0]), (2, [1])]}).inverse()
    with pytest.raises(NotInvertibleError, match="4 hardware locations for 8 elements"):
        Layout.from_modes([("offset", 4)], [8], {"offset": [(4, [2])]}).inverse()


def test_bad_constructions_raise_layout_error():
    with pytest.raises(LayoutError):
        Layout.from_bases({"register": [[0, 4]]}, [2, 2])  # basis outside the shape
    with pytest.raises(LayoutError):
        Layout.from_bases({"register": [[0]]}, [2, 2])  # wrong basis length
    with pytest.raises(LayoutError):
        Layout.from_bases({"register": [[1]]}, [3])  # non-power-of-two F2 shape
    with pytest.raises(LayoutError):
        Layout.from_modes([("register", 6)], [6], {"register": [(4, [1])]})  # modes don't multiply
    with pytest.raises(LayoutError):
        Layout([("register", 0)], [("dim0", 1)], [E.Const(0)])
    with pytest.raises(LayoutError):
        Layout([("register", 2)], [("dim0", 2)], [E.Var("lane")])
    with pytest.raises(LayoutError):
        E.Var("x") // 0
    bad = Layout([("register", 4)], [("dim0", 2)], [E.Var("register")])
    with pytest.raises(LayoutError, match="outside"):
        bad.check_in_range()


def test_expression_z3_lowering_agrees_with_numpy():
    z3 = pytest.importorskip("z3")
    rng = random.Random(4)
    x, y = E.Var("x"), E.Var("y")

    def rand_expr(depth):
        if depth == 0:
            return rng.choice([x, y, E.Const(rng.randint(0, 9))])
        op = rng.randrange(8)
        a = rand_expr(depth - 1)
        c = rng.randint(1, 7)
        return [lambda: a + rand_expr(depth - 1), lambda: a * c, lambda: a // c, lambda: a % c,
                lambda: a ^ rand_expr(depth - 1), lambda: a & c, lambda: a >> (c % 3), lambda: a << (c % 3)][op]()

    for _ in range(200):
        e = rand_expr(rng.randint(1, 4))
        xs, ys = np.arange(16).repeat(16), np.tile(np.arange(16), 16)
        vals = np.broadcast_to(E.evaluate(e, {"x": xs, "y": ys}), xs.shape)
        ub = E.upper_bound(e, {"x": 15, "y": 15})
        assert vals.max() <= ub
        width = E.bit_width([e], {"x": 15, "y": 15})
        zx, zy = z3.BitVec("x", width), z3.BitVec("y", width)
        term = E.to_z3(e, {"x": zx, "y": zy}, width)
        for k in rng.sample(range(256), 6):
            got = z3.simplify(z3.substitute(term, (zx, z3.BitVecVal(int(xs[k]), width)),
                                            (zy, z3.BitVecVal(int(ys[k]), width)))).as_long()
            assert got == vals[k]


def test_symbolic_f2_check_past_the_table_limit(monkeypatch):
    """Past the table limit, linearity is proven by z3 (and refuted when false)."""
    import layoutverify.core.layout as VL
    monkeypatch.setattr(VL, "MAX_TABLE_LOCATIONS", 8)
    x = E.Var("offset")
    swz = Layout([("offset", 256)], [("dim0", 16), ("dim1", 16)], [x // 16, (x % 16) ^ ((x // 16) % 8)])
    assert swz.is_f2_linear()
    assert swz.f2_bases()["offset"][4] == (1, 1)
    carry = Layout([("offset", 256)], [("dim0", 16), ("dim1", 16)], [x // 16, (x % 16 + x // 16) % 16])
    assert not carry.is_f2_linear()
