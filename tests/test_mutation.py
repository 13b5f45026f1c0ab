"""Soundness by mutation.

Seeded *equal* pairs (a layout against the same layout built another way: from its bases, from
its explicit table, as a non-F2-looking expression, as an explicit Lookup table, and real Triton
encodings against the ``#ttg.linear`` form of Triton's own linear layout) must be proved
``equal``. Then one side is mutated (flip a basis bit, swap two strides, change a mode size, add
a replication, permute registers) and, with the truth decided independently by brute force over
all hardware locations (dicts and sets, written here from DESIGN.md §3):

* a mutant that truly differs gets ``not_equal`` / ``different_tensors`` (exactly the true one),
  with a witness that is RE-EVALUATED here on both layouts;
* no mutant is ever called ``equal`` unless it truly is;
* register permutations get ``equal_up_to_register_order`` (or ``equal`` when the permutation
  happens to change nothing).
"""
import json
import random
import subprocess
import sys
import textwrap
from collections import Counter

import numpy as np
import pytest

from layoutverify.core import expr as E
from layoutverify.core.compare import compare
from layoutverify.core.layout import Layout
from layout_forms import digits_form, lookup_form
from layoutverify.testing.random_layouts import mixed_radix_expr, mode_mutants, random_modes

pytest.importorskip("z3")

STRICT = ("equal", "equal_up_to_register_order", "not_equal", "different_tensors")


# -- independent oracle -----------------------------------------------------------------------
def keyed(lay, names, radix):
    """(location key, flat element) for every hardware location; the key encodes the location
    over the union of hardware dims (absent dims are 0), ``radix`` per dim."""
    hw = lay.hardware_indices()
    key = np.zeros(len(hw), dtype=np.int64)
    for n, r in zip(names, radix):
        col = hw[:, lay.in_names.index(n)] if n in lay.in_names else 0
        key = key * r + col
    return key, lay.flat_table()


def truth(a, b):
    """The strongest verdict of DESIGN.md §3, by brute force over every location."""
    if a.out_dims != b.out_dims:
        return "different_tensors"
    if not np.array_equal(np.unique(a.flat_table()), np.unique(b.flat_table())):
        return "different_tensors"
    names = list(dict.fromkeys(list(a.in_names) + list(b.in_names)))
    radix = [max(a.in_size(n), b.in_size(n)) for n in names]
    ka, ea = keyed(a, names, radix)
    kb, eb = keyed(b, names, radix)
    oa, ob = np.argsort(ka), np.argsort(kb)
    if np.array_equal(ka[oa], kb[ob]) and np.array_equal(ea[oa], eb[ob]):
        return "equal"
    if "register" in names:
        n_el = a.out_size()
        ri = names.index("register")
        # thread key: the location key with the register digit removed
        radix_t = radix[:ri] + radix[ri + 1:]

        def thread_sets(lay, key, el):
            digits = []
            for r in reversed(radix):
                digits.append(key % r)
                key = key // r
            digits = digits[::-1]
            t = np.zeros_like(el)
            for d, r in zip(digits[:ri] + digits[ri + 1:], radix_t):
                t = t * r + d
            return np.unique(t * n_el + el)

        if np.array_equal(thread_sets(a, ka, ea), thread_sets(b, kb, eb)):
            return "equal_up_to_register_order"
    return "not_equal"


def reeval(lay, loc):
    if any(loc.get(n, 0) >= lay.in_size(n) for n in loc) or any(n not in loc for n in lay.in_names):
        return None
    return lay.apply({n: np.array([loc[n]]) for n in lay.in_names})[0].tolist()


def check(a, b, method="auto", expect=None):
    """Compare, check against the oracle, re-evaluate the witness; returns the verdict."""
    want = truth(a, b) if expect is None else expect
    res = compare(a, b, method=method, timeout_ms=60_000)
    assert res.verdict in STRICT, res.reason
    assert res.verdict == want, (method, res.verdict, want, res.reason, a, b)
    w = res.witness
    if res.verdict in ("not_equal", "equal_up_to_register_order"):
        assert reeval(a, w["hardware"]) == w["a"] and reeval(b, w["hardware"]) == w["b"]
        assert w["a"] != w["b"]
    elif res.verdict == "different_tensors" and "element" in w:
        holder, other = (a, b) if w["held_by"] == "a" else (b, a)
        assert reeval(holder, w["hardware"]) == w["element"]
        assert not (other.table() == np.asarray(w["element"])).all(axis=1).any()
    return res.verdict


# -- F2 layouts and their equal forms -----------------------------------------------------------
def random_bases(rng):
    shape_bits = rng.choice([(2, 3), (3, 3), (4, 4), (3, 5), (4, 2), (5, 4)])
    unit = [tuple((1 << k) if d == dd else 0 for dd in range(len(shape_bits)))
            for d, nb in enumerate(shape_bits) for k in range(nb)]
    rng.shuffle(unit)
    reg, lane, warp = rng.randint(0, 3), rng.randint(1, 5), rng.randint(0, 2)
    vecs = []
    for i in range(reg + lane + warp):
        if i < len(unit) and rng.random() > 0.12:
            v = unit[i]
            if rng.random() < 0.15:  # XOR swizzle with another logical bit
                v = tuple(x ^ y for x, y in zip(v, rng.choice(unit)))
            vecs.append(v)
        else:
            vecs.append(tuple(0 for _ in shape_bits))
    bases = {"register": vecs[:reg], "lane": vecs[reg:reg + lane], "warp": vecs[reg + lane:]}
    return bases, [1 << b for b in shape_bits]


def f2_mutants(rng, bases, shape):
    """(kind, layout) mutants of an F2 layout given by bases."""
    out = []
    dims = [n for n in bases if bases[n]]
    nout = len(shape)
    # flip one bit of one basis vector (kept inside the shape)
    n = rng.choice(dims)
    k = rng.randrange(len(bases[n]))
    d = rng.randrange(nout)
    v = list(bases[n][k])
    v[d] ^= 1 << rng.randrange(shape[d].bit_length() - 1)
    out.append(("flip", {**bases, n: bases[n][:k] + [tuple(v)] + bases[n][k + 1:]}))
    # swap two basis vectors ("strides") across all hardware bits
    flat = [(n, i) for n in dims for i in range(len(bases[n]))]
    if len(flat) >= 2:
        (n1, i1), (n2, i2) = rng.sample(flat, 2)
        nb = {m: list(vs) for m, vs in bases.items()}
        nb[n1][i1], nb[n2][i2] = bases[n2][i2], bases[n1][i1]
        out.append(("swap", nb))
    # add a replication: one more zero basis, or a basis set to zero
    m = rng.choice(["register", "lane", "warp"])
    out.append(("replicate", {**bases, m: list(bases.get(m, [])) + [tuple(0 for _ in shape)]}))
    n = rng.choice(dims)
    k = rng.randrange(len(bases[n]))
    out.append(("zero", {**bases, n: bases[n][:k] + [tuple(0 for _ in shape)] + bases[n][k + 1:]}))
    # change a mode size: drop the last basis of a dim (the dim halves)
    n = rng.choice(dims)
    out.append(("shrink", {**bases, n: bases[n][:-1]}))
    # permute registers
    regs = list(bases["register"])
    if len(regs) >= 2:
        perm = regs[:]
        while perm == regs and len(set(regs)) > 1:
            rng.shuffle(perm)
        out.append(("register_permutation", {**bases, "register": perm}))
    return [(kind, Layout.from_bases(b, shape)) for kind, b in out]


def test_f2_equal_forms_and_mutants():
    rng = random.Random(20240611)
    equal_pairs = 0
    kinds = Counter()
    z3_checked = 0
    for i in range(260):
        bases, shape = random_bases(rng)
        lay = Layout.from_bases(bases, shape)
        forms = [Layout.from_bases({k: list(v) for k, v in bases.items()}, shape),
                 Layout.from_table(lay.in_dims, lay.out_dims, lay.table()),
                 digits_form(lay), lookup_form(lay)]
        for form in forms:
            assert check(lay, form, expect="equal") == "equal"
            equal_pairs += 1
        if i % 6 == 0:  # the z3 strategy on the non-base forms too
            for form in forms[2:]:
                assert check(lay, form, method="z3", expect="equal") == "equal"
                z3_checked += 1
        for kind, mutant in f2_mutants(rng, bases, shape):
            other = forms[i % len(forms)]
            v = check(other, mutant)
            kinds[(kind, v)] += 1
            if kind == "register_permutation":
                assert v in ("equal", "equal_up_to_register_order")
            if i % 6 == 0:
                check(other, mutant, method="z3")
                z3_checked += 1
    assert equal_pairs >= 1000
    assert kinds[("register_permutation", "equal_up_to_register_order")] > 50
    assert sum(c for (k, v), c in kinds.items() if v == "not_equal") > 100
    assert sum(c for (k, v), c in kinds.items() if v == "different_tensors") > 100


# -- mixed-radix (non-F2) layouts ---------------------------------------------------------------
def test_mixed_radix_equal_forms_and_mutants():
    rng = random.Random(777)
    equal_pairs = 0
    kinds = Counter()
    for i in range(45):
        in_dims, shape, modes = random_modes(rng)
        lay = Layout.from_modes(in_dims, shape, modes)
        forms = [mixed_radix_expr(in_dims, shape, modes), Layout.from_table(in_dims, shape, lay.table())]
        for form in forms:
            assert check(lay, form, expect="equal") == "equal"
            equal_pairs += 1
        for kind, dims2, m in mode_mutants(rng, in_dims, shape, modes):
            try:
                mutant = Layout.from_modes(dims2, shape, m)
                mutant.check_in_range()
            except Exception:
                continue  # the mutation left the tensor: not a layout of this shape
            v = check(forms[i % 2], mutant)
            kinds[(kind, v)] += 1
            if kind == "register_permutation":
                assert v in ("equal", "equal_up_to_register_order")
    assert equal_pairs >= 90
    assert kinds[("register_permutation", "equal_up_to_register_order")] >= 3
    assert sum(c for (k, v), c in kinds.items() if v in ("not_equal", "different_tensors")) >= 60


# -- real Triton encodings ---------------------------------------------------------------------
TRITON_SCRIPT = textwrap.dedent(r"""
    import json, random, sys
    from triton._C.libtriton import ir, gluon_ir
    from triton.experimental.gluon import language as gl
    ctx = ir.context(); ir.load_dialects(ctx); b = gluon_ir.GluonOpBuilder(ctx)
    rng = random.Random(int(sys.argv[1]))
    out = []
    def pow2(lo, hi): return 1 << rng.randint(lo, hi)
    def split(total):  # total = a * b, powers of two
        k = total.bit_length() - 1; i = rng.randint(0, k); return [1 << i, 1 << (k - i)]
    for _ in range(int(sys.argv[2])):
        spt = [pow2(0, 2), pow2(0, 2)]
        tpw = split(32)
        wpc = split(pow2(0, 2))
        order = rng.choice([[1, 0], [0, 1]])
        shape = [pow2(2, 6), pow2(2, 6)]
        enc = gl.BlockedLayout(spt, tpw, wpc, order)
        ll = b.to_linear_layout(enc._to_ir(b), shape)
        lin = gl.DistributedLinearLayout(ll.reg_bases, ll.lane_bases, ll.warp_bases, ll.block_bases, shape)
        ll2 = b.to_linear_layout(lin._to_ir(b), shape)
        out.append({"blocked": [spt, tpw, wpc, order], "shape": shape,
                    "bases": [ll.reg_bases, ll.lane_bases, ll.warp_bases, ll.block_bases],
                    "linear": [ll2.reg_bases, ll2.lane_bases, ll2.warp_bases, ll2.block_bases]})
    sys.stdout.write(json.dumps(out))
    sys.stdout.flush()
    import os; os._exit(0)
""")


def triton_batch(seed, count):
    pytest.importorskip("triton")
    r = subprocess.run([sys.executable, "-c", TRITON_SCRIPT, str(seed), str(count)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0 or not r.stdout.strip():
        pytest.skip(f"Triton's GluonOpBuilder unavailable: {r.stderr.strip()[-300:]}")
    return json.loads(r.stdout)


def from_triton(bases, shape):
    reg, lane, warp, block = bases
    return Layout.from_bases({"register": reg, "lane": lane, "warp": warp, "block": block}, shape)


def test_triton_blocked_vs_linear_encoding_and_mutants():
    rng = random.Random(99)
    rows = triton_batch(5, 160)
    equal_pairs = 0
    by_bases = {}
    kinds = Counter()
    for row in rows:
        shape = row["shape"]
        blocked = from_triton(row["bases"], shape)
        linear = from_triton(row["linear"], shape)
        # Triton's blocked encoding and the #ttg.linear encoding of its bases: equal
        assert check(blocked, linear, expect="equal") == "equal"
        equal_pairs += 1
        key = (tuple(shape), json.dumps(row["bases"]))
        by_bases.setdefault(key, []).append(row["blocked"])
        bases = {"register": [tuple(v) for v in row["bases"][0]], "lane": [tuple(v) for v in row["bases"][1]],
                 "warp": [tuple(v) for v in row["bases"][2]]}
        if not any(bases.values()) or not any(any(v) for vs in bases.values() for v in vs):
            continue
        for kind, mutant in f2_mutants(rng, bases, shape):
            mutant = Layout.from_bases({**mutant.f2_bases(), "block": []}, shape)
            v = check(linear, mutant)
            kinds[(kind, v)] += 1
    assert equal_pairs >= 150
    assert sum(kinds.values()) >= 400
    assert any(v == "not_equal" for (_, v) in kinds) and any(v == "different_tensors" for (_, v) in kinds)


def test_triton_encodings_that_triton_calls_identical_are_equal():
    """Different blocked parameters that Triton lowers to one linear layout (e.g. a tile larger
    than the tensor) are proved equal; different linear layouts are not."""
    rows = triton_batch(11, 200)
    groups = {}
    for row in rows:
        groups.setdefault((tuple(row["shape"]), json.dumps(row["bases"])), []).append(row)
    same = [g for g in groups.values() if len({json.dumps(r["blocked"]) for r in g}) > 1]
    for g in same:
        a, b = from_triton(g[0]["bases"], g[0]["shape"]), from_triton(g[1]["bases"], g[1]["shape"])
        assert check(a, b, expect="equal") == "equal"
    # neighbours with the same shape but different Triton layouts never come out equal
    by_shape = {}
    for row in rows:
        by_shape.setdefault(tuple(row["shape"]), []).append(row)
    n = 0
    for rs in by_shape.values():
        for r1, r2 in zip(rs, rs[1:]):
            if r1["bases"] != r2["bases"]:
                a, b = from_triton(r1["bases"], r1["shape"]), from_triton(r2["bases"], r2["shape"])
                assert check(a, b) != "equal"
                n += 1
    assert n >= 50
