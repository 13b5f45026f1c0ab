"""Verdicts decided on normal forms (layoutverify.core.normalform) against the strategies and the
brute-force oracle.

``compare(a, b)`` answers most pairs from the layouts' memoised normal forms without running a
strategy and defers the counterexample. These tests check, on the pair families of the other
test files plus adapter pairs, that (1) the verdict is the one the brute-force oracle
(:func:`layoutverify.testing.brute.brute_verdict`, enumeration of the definitions) gives, (2) it is
the verdict and method of the strategy path (``_early`` + ``_decide``, run without normal forms),
and (3) the deferred witness, built on access, re-checks on both layouts.
"""
from __future__ import annotations

import random

import pytest

from layoutverify import adapters
from layoutverify.core import compare as C
from layoutverify.core import f2 as F2
from layoutverify.core import normalform as NF
from layoutverify.testing.brute import brute_verdict, witness_problem
from layoutverify.core.layout import Layout
from layoutverify.core.result import Pair, Result

import test_compare
import test_radix

#: methods of the strategy path that the normal forms never name (their fallbacks)
FALLBACKS = {"identical", "table", "z3"}


def strategy_path(a: Layout, b: Layout):
    """The verdict without normal forms: the pre-strategy checks, then the ``auto`` strategies."""
    return C._early(a, b, "auto") or C._decide(Pair(a, b), "auto", 30_000, None)


def check(a: Layout, b: Layout, oracle: bool = True) -> Result:
    fast = C.compare(a, b)
    slow = strategy_path(a, b)
    assert fast.verdict == slow.verdict, (fast.method, slow.method)
    if slow.method not in FALLBACKS:
        assert fast.method == slow.method, (fast.verdict, fast.method, slow.method)
    if oracle:
        assert fast.verdict == brute_verdict(a, b), fast.method
    problem = witness_problem(a, b, fast)
    assert problem is None, f"{problem}: {fast.reason}"
    assert fast.to_json()["verdict"] == fast.verdict
    return fast


def test_radix_family_pairs_against_oracle_and_strategies():
    n = 0
    for seed in (11, 12):
        for _kind, a, b in test_radix.pairs(seed, 300):
            check(a, b)
            n += 1
    assert n == 600


@pytest.mark.parametrize("name,a,b", test_compare.F2_PAIRS + test_compare.NONF2_PAIRS,
                         ids=[p[0] for p in test_compare.F2_PAIRS + test_compare.NONF2_PAIRS])
def test_compare_family_pairs(name, a, b):
    if a.out_dims != b.out_dims or a.kind != b.kind:
        return
    try:
        strategy_path(a, b)
    except Exception as e:  # noqa: BLE001 - a pair the strategies refuse must be refused the same way
        with pytest.raises(type(e)):
            C.compare(a, b)
        return
    check(a, b, oracle=a.in_size() * b.in_size() <= 1 << 22)


CUTE = [("(16,16):(16,1)", "((2,8),16):((16,32),1)"), ("(16,16):(16,1)", "(16,16):(1,16)"),
        ("(12,20):(20,1)", "((3,4),20):((20,60),1)"), ("(12,20):(20,1)", "(12,20):(1,12)"),
        ("(48,80):(80,1)", "(48,80):(1,48)"), ("(6,10):(10,1)", "(6,10):(1,6)"),
        ("(4,6):(6,1)", "((2,2),(2,3)):((12,6),(3,1))"), ("(4,6):(6,1)", "((2,2),(3,2)):((6,12),(1,3))"),
        ("(3,5):(5,1)", "(3,5):(1,3)"), ("(2,3,5):(15,5,1)", "(2,3,5):(1,2,6)")]
TILUS = [("local(3, 5).spatial(2, 4)", "local(3, 1).local(1, 5).spatial(2, 4)"),
         ("local(3, 5).spatial(2, 4)", "local(3, 5).column_spatial(2, 4)"),
         ("local(2, 2).spatial(4, 8)", "spatial(4, 8).local(2, 2)"),
         ("local(2, 3).spatial(2, 4)", "column_local(2, 3).spatial(2, 4)"),
         ("local(4, 3).column_local(1, 8).local(2, 8)", "column_local(1, 8).local(4, 3).local(2, 8)")]


@pytest.mark.parametrize("fw,x,y", [("cute", x, y) for x, y in CUTE] + [("tilus", x, y) for x, y in TILUS])
def test_adapter_pairs(fw, x, y):
    a, b = adapters.parse_spec(f"{fw}:{x}"), adapters.parse_spec(f"{fw}:{y}")
    if a.out_dims != b.out_dims:
        return
    res = check(a, b, oracle=a.in_size() <= 1 << 14)
    check(b, a, oracle=False)
    # fresh objects, normal forms built before comparing: the same answer
    pa, pb = C.prepare(adapters.adapter(fw).parse(x)), C.prepare(adapters.adapter(fw).parse(y))
    assert C.compare(pa, pb).verdict == res.verdict


def test_triton_pairs():
    pytest.importorskip("triton")
    bl = "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
    bl_t = "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>"
    mma2 = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>"
    mma3 = "#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 16, 16]}>"
    texts = [bl, bl_t, mma2, mma3, f"#ttg.dot_op<{{opIdx = 0, parent = {mma2}, kWidth = 2}}>",
             "#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [0, 1]}>",
             "#ttg.blocked<{sizePerThread = [2, 2], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"]
    for shape in ((16, 16), (32, 64)):
        lays = [adapters.parse_spec("triton:" + t, shape=shape) for t in texts]
        for a in lays:
            for b in lays:
                check(a, b, oracle=shape == (16, 16))


def test_coalesced_digits_are_one_key_for_one_map():
    a = adapters.parse_spec("cute:(64,64):(64,1)")
    for spelling in ("((2,32),64):((64,128),1)", "((2,2,16),(4,16)):((64,128,256),(1,4))"):
        b = adapters.parse_spec("cute:" + spelling)
        assert NF.of(a).key == NF.of(b).key
        res = C.compare(a, b)
        assert res.verdict == "equal" and res.method == "radix"


def test_place_values_without_a_common_chain():
    # 48 and 80 do not divide each other: no common refinement; a difference at a place value
    # still decides, and the deferred witness re-checks
    a, b = adapters.parse_spec("cute:(48,80):(80,1)"), adapters.parse_spec("cute:(48,80):(1,48)")
    res = check(a, b, oracle=True)
    assert res.verdict == "not_equal" and res.method == "radix"


def test_random_layouts_from_modes_and_expressions():
    rng = random.Random(5)
    n = 0
    while n < 150:
        recipe = test_radix.random_digit_layout(rng)
        kind, other = test_radix.mutate(rng, recipe)
        try:
            a, b = test_radix.mode_layout(recipe, "expr"), test_radix.mode_layout(other)
            a.check_in_range()
            b.check_in_range()
        except Exception:  # noqa: BLE001 - layouts that leave their shape are not this test's subject
            continue
        check(a, b)
        n += 1


def test_normal_form_is_built_once_and_kept_on_the_layout():
    lay = adapters.adapter("cute").parse("(16,16):(16,1)")
    assert C.prepare(lay) is lay
    nf = NF.of(lay)
    assert NF.of(lay) is nf
    C.compare(lay, lay)
    assert NF.of(lay) is nf


def test_deferred_witness_must_reach_the_same_verdict():
    ok = Result.proved("not_equal", "radix", lambda: Result("not_equal", "radix", {"hardware": {}}, 0.0, "why"))
    assert ok.witness == {"hardware": {}} and ok.reason == "why"
    bad = Result.proved("not_equal", "radix", lambda: Result("equal", "radix", None, 0.0, "same"))
    with pytest.raises(AssertionError):
        bad.witness


def test_errors_are_raised_as_before():
    from layoutverify.core import expr as E
    from layoutverify.core.errors import LayoutError
    bad = Layout([("lane", 4)], [("dim0", 3)], [E.Var("lane")])  # leaves its shape
    good = Layout([("lane", 4)], [("dim0", 3)], [E.Var("lane") % 3])
    with pytest.raises(LayoutError):
        C.compare(good, bad)
    with pytest.raises(LayoutError):
        C.compare("not a layout", good)


def test_pickled_and_copied_layouts_rebuild_their_normal_form():
    import copy
    import pickle
    a = C.prepare(adapters.adapter("cute").parse("(12,20):(20,1)"))
    b = C.prepare(adapters.adapter("cute").parse("(12,20):(1,12)"))
    for a2, b2 in ((pickle.loads(pickle.dumps(a)), pickle.loads(pickle.dumps(b))), (copy.deepcopy(a), copy.copy(b))):
        res = C.compare(a2, b2)
        assert res.verdict == "not_equal" and res.method == "radix"
        assert witness_problem(a2, b2, res) is None
        assert NF.of(a2) is not NF.of(a)


def test_equal_values_share_one_token_while_any_normal_form_holds_it():
    # verdicts compare interned parts with ``is``: that is sound only if two live normal forms
    # never hold different tokens of one value
    import gc
    import threading
    x = C.prepare(adapters.adapter("cute").parse("(12,20):(20,1)"))
    y = C.prepare(adapters.adapter("cute").parse("((3,4),20):((20,60),1)"))  # the same map, other text
    assert NF.of(x).key is NF.of(y).key
    value = NF.of(x).key.value
    del x, y
    adapters.clear_parse_cache()
    gc.collect()
    ref = NF._TOKENS.get(value)
    assert ref is None or ref() is None  # no normal form holds it: the token died with the last one
    NF._purge()
    assert value not in NF._TOKENS  # ... and a sweep drops its entry
    z = C.prepare(adapters.adapter("cute").parse("(12,20):(20,1)"))
    w = adapters.adapter("cute").parse("(12,20):(1,12)")
    assert C.compare(z, C.prepare(adapters.adapter("cute").parse("((3,4),20):((20,60),1)"))).verdict == "equal"
    assert check(z, w).verdict == "not_equal"
    got, values = [], [("thread-test", i) for i in range(200)]

    def intern_all():
        got.append([NF._intern(tuple(v)) for v in values])
    threads = [threading.Thread(target=intern_all) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(all(a is b for a, b in zip(got[0], g)) for g in got[1:])

def test_token_table_stays_within_twice_its_live_size(monkeypatch):
    import gc
    monkeypatch.setattr(NF, "_PURGE_AT", [64])
    NF._purge()
    monkeypatch.setattr(NF, "_PURGE_AT", [max(64, 2 * len(NF._TOKENS))])
    keep = [NF._intern(("kept", i)) for i in range(10)]
    for i in range(1000):  # tokens that die at once
        NF._intern(("gone", i))
    gc.collect()
    assert len(NF._TOKENS) <= max(64, NF._PURGE_AT[0]) + 1
    assert all(NF._intern(("kept", i)) is keep[i] for i in range(10))


def test_f2_spans_read_off_unit_and_full_rank_bases_are_those_of_the_elimination():
    """The short cuts of ``F2Part`` (bases that are each 0 or one logical bit; a span of every
    bit) against the plain elimination: the same canonical span, register span and reduced
    thread bases, token for token."""
    rng = random.Random(31)
    seen = {"unit": 0, "full": 0, "other": 0}
    for _ in range(600):
        shape = [1 << rng.randint(0, 4), 1 << rng.randint(0, 4)]
        bits = shape[0].bit_length() + shape[1].bit_length() - 2
        style = rng.choice(["unit", "full", "other"])
        order = list(range(bits))
        rng.shuffle(order)
        bases = {}
        for dim in ("register", "lane", "warp"):
            vecs = []
            for _ in range(rng.randint(0, 3)):
                if style == "unit" or not bits:
                    v = 0 if (not bits or rng.random() < 0.2) else 1 << rng.randrange(bits)
                elif style == "full" and order:
                    v = 1 << order.pop()
                    v ^= rng.getrandbits(bits) & ((v << 1) - 1) & ~v  # lower bits mixed in: still full rank
                else:
                    v = rng.getrandbits(bits)
                vecs.append(v)
            bases[dim] = vecs
        if style == "full":
            bases["warp"] += [1 << b for b in order]  # whatever is left: every bit reached
        lo = shape[0].bit_length() - 1
        unpacked = {k: [(v & (shape[0] - 1), v >> lo) for v in vs] for k, vs in bases.items()}
        lay = Layout.from_bases(unpacked, shape)
        nf = NF.of(lay)
        part, b = nf.f2, NF.f2_data(lay).bases
        part.rest()  # (the spans are built by the first verdict on two different keys)
        reg_rows = F2.pivot_rows(b.get("register", ()))
        span = tuple(F2.rref(F2.pivot_rows((v for n, vs in b.items() if n != "register" for v in vs), reg_rows)))
        reg = F2.rref(reg_rows)
        tred = tuple((n, tuple(F2.reduce(v, reg) for v in b.get(n, ()))) for n, _ in nf.threads)
        assert (part.span.value, part.reg.value, part.tred.value) == (span, tuple(reg), tred), unpacked
        unit = all(v & (v - 1) == 0 for vs in b.values() for v in vs)
        seen["unit" if unit else "full" if len(span) == bits and bits else "other"] += 1
    assert min(seen.values()) >= 50, seen


def test_chains_combine_is_the_divisibility_chain_test():
    """``_chains_combine`` (with its short cuts: the same place values, or powers of two on both
    sides) against its definition: the union of both forms' place values and the size is one
    divisibility chain, on every dim."""
    rng = random.Random(41)

    def part(cuts, sizes):
        p = NF.RadixPart.__new__(NF.RadixPart)
        p.cuts = cuts
        p.p2dims = frozenset(n for n, s in sizes if s & (s - 1) == 0 and all(c & (c - 1) == 0 for c in cuts[n]))
        p.pow2 = len(p.p2dims) == len(sizes)
        return p

    def chain(size):  # the place values of a form: a divisibility chain from 1 below the size
        divs = [d for d in range(1, size + 1) if size % d == 0]
        c = [1]
        while c[-1] != size:
            c.append(rng.choice([d for d in divs if d > c[-1] and d % c[-1] == 0]))
        return tuple(p for p in c[:-1] if p == 1 or rng.random() < 0.7)
    seen = {True: 0, False: 0}
    for _ in range(3000):
        sizes = tuple((n, rng.choice([6, 8, 12, 16, 30, 36, 64])) for n in ("lane", "register"))
        ca = {n: chain(s) for n, s in sizes}
        cb = {n: (ca[n] if rng.random() < 0.3 else chain(s)) for n, s in sizes}
        want = True
        for n, s in sizes:
            ps = sorted(set(ca[n]) | set(cb[n]) | {s})
            want &= all(y % x == 0 for x, y in zip(ps, ps[1:]))
        assert NF._chains_combine(part(ca, sizes), part(cb, sizes), sizes) == want, (sizes, ca, cb)
        seen[want] += 1
    assert min(seen.values()) > 300, seen


def test_chain_memo_answers_as_the_chain_test():
    """``_one_chain`` (one token, or the memo per pair of cut tokens) answers as
    ``_chains_combine`` on the layouts' own place values, whether or not the memo holds the pair,
    and whether the memo was filled by another pair of one side."""
    rng = random.Random(43)
    sizes = {"register": 36, "lane": 12}
    places = {36: (1, 2, 3, 4, 6, 9, 12, 18), 12: (1, 2, 3, 4, 6)}

    def layout(place_sets):
        digits = []
        for n, ps in place_sets.items():
            for p, q in zip(ps, ps[1:] + (sizes[n],)):
                digits.append((n, p, q // p, (rng.randrange(1, 9), rng.randrange(1, 9))))
        return Layout.from_digits(tuple(sizes.items()), (("m", 4096), ("n", 4096)), digits)

    def chain(size):
        c = [1]
        while True:
            nxt = [d for d in places[size] + (size,) if d > c[-1] and d % c[-1] == 0]
            pick = rng.choice(nxt)
            if pick == size:
                return tuple(c)
            c.append(pick)
    first = layout({n: chain(s) for n, s in sizes.items()})
    ra = NF.of(first).radix
    ra.rest()  # (the parts a verdict on different keys reads)
    seen = {True: 0, False: 0}
    NF._COMBINE.clear()
    for _ in range(400):
        b = layout({n: chain(s) for n, s in sizes.items()})
        nb = NF.of(b)
        rb = nb.radix
        rb.rest()
        for dims, ta, tb in ((nb.sizes, ra.cut_token, rb.cut_token), (nb.threads, ra.tcut_token, rb.tcut_token)):
            want = NF._chains_combine(ra, rb, dims)
            assert NF._one_chain(ta, tb, ra, rb, dims) == want  # filled now, or a hit
            assert NF._one_chain(ta, tb, ra, rb, dims) == want  # a hit
            seen[want] += 1
    assert min(seen.values()) > 50, seen


def test_radix_parts_for_different_keys_are_built_by_the_first_such_verdict():
    """Equal keys decide without the images; the first verdict on different keys builds them,
    once, and threads racing to build them get the same tokens."""
    import threading
    a = adapters.parse_spec("cute:(12,20):(20,1)")
    same = adapters.parse_spec("cute:((3,4),20):((20,60),1)")
    other = adapters.parse_spec("cute:(12,20):(1,12)")
    assert C.compare(a, same).verdict == "equal"
    ra = NF.of(a).radix
    assert ra.image is NF._UNSET and NF.of(same).radix.image is NF._UNSET
    assert C.compare(a, other).verdict == "not_equal"
    image = ra.image
    assert image is not NF._UNSET and image is NF.of(other).radix.image
    assert ra.rest() is image  # built once
    shared = NF.of(adapters.adapter("cute").parse("(12,20):(1,12)")).radix
    parts = [shared] * 4 + [NF.of(adapters.adapter("cute").parse("(12,20):(1,12)")).radix for _ in range(4)]
    got, start = [], threading.Barrier(len(parts))

    def build(p):
        start.wait()
        got.append((p.rest(), p.q, p.tkey, p.cut_token))
    threads = [threading.Thread(target=build, args=(p,)) for p in parts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and all(all(x is y for x, y in zip(g, got[0])) for g in got)
    assert got[0][0] is image
