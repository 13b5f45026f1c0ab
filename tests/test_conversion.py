"""Conversion classes, witnesses and numbers (verifier/core/conversion.py), re-checked by a naive,
independent evaluation of the definitions over the explicit tables: plain Python sets of the
elements each thread / warp / block holds in A.

Layouts are seeded random: F2 layouts (Triton-style bases with zero bases for replication),
mixed-radix layouts with non-power-of-two sizes, explicit random tables, and layouts B derived
from A by permuting hardware locations inside a thread, a warp, a block or the grid, so that
every class is reached.
"""
from __future__ import annotations

import random
from collections import defaultdict

import numpy as np
import pytest

from layoutverify.core.conversion import LEVELS, MECHANISMS, analyze, contiguity
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout

DIMS = ("register", "lane", "warp", "block")


# ---------------------------------------------------------------------------------------------
# the naive reference
_LOCATIONS: dict[int, tuple] = {}


def locations(lay: Layout) -> dict[tuple, tuple]:
    """(register, lane, warp, block) -> element coordinates, by evaluating every location."""
    hit = _LOCATIONS.get(id(lay))
    if hit is not None and hit[0] is lay:
        return hit[1]
    out = {}
    for hw, el in zip(lay.hardware_indices(), lay.table()):
        d = dict(zip(lay.in_names, (int(x) for x in hw)))
        out[tuple(d.get(n, 0) for n in DIMS)] = tuple(int(x) for x in el)
    if len(_LOCATIONS) >= 4:  # keep only the latest few layouts
        _LOCATIONS.pop(next(iter(_LOCATIONS)))
    _LOCATIONS[id(lay)] = (lay, out)
    return out


def reference(a: Layout, b: Layout):
    la, lb = locations(a), locations(b)
    thread, warp, block, anywhere = defaultdict(set), defaultdict(set), defaultdict(set), set()
    for (r, l, w, k), e in la.items():
        thread[(l, w, k)].add(e)
        warp[(w, k)].add(e)
        block[k].add(e)
        anywhere.add(e)
    levels = {}
    for (r, l, w, k), e in lb.items():
        if e in thread[(l, w, k)]:
            levels[(r, l, w, k)] = 0
        elif e in warp[(w, k)]:
            levels[(r, l, w, k)] = 1
        elif e in block[k]:
            levels[(r, l, w, k)] = 2
        elif e in anywhere:
            levels[(r, l, w, k)] = 3
        else:
            levels[(r, l, w, k)] = 4
    sizes_equal = all(a.in_size(n) == b.in_size(n) for n in DIMS)
    equal = sizes_equal and la == lb
    worst = max(levels.values())
    mech = "no_op" if equal else ["register_permute", "intra_warp", "intra_cta", "cross_cta", "impossible"][worst]
    return mech, levels, la, lb, (thread, warp, block, anywhere)


def naive_vector_ok(lay: Layout, v: int) -> bool:
    """Every thread's registers k*v .. k*v+v-1 hold v consecutive, aligned elements of one row."""
    nreg, last = lay.in_size("register"), lay.out_sizes[-1]
    if nreg % v or last % v:
        return False
    loc = locations(lay)
    for t in {k[1:] for k in loc}:
        for k in range(0, nreg, v):
            base = loc[(k,) + t]
            if base[-1] % v:
                return False
            for i in range(v):
                e = loc[(k + i,) + t]
                if e[:-1] != base[:-1] or e[-1] != base[-1] + i:
                    return False
    return True


def naive_contiguity(lay: Layout) -> int:
    return max(v for v in range(1, lay.in_size("register") + 1) if naive_vector_ok(lay, v))


# ---------------------------------------------------------------------------------------------
# random layouts
def random_f2(rnd: random.Random, shape, nreg_bits, nlane_bits, nwarp_bits, nblock_bits=0, zeros=0.15):
    units = [[1 << b if d == k else 0 for k in range(len(shape))]
             for d, s in enumerate(shape) for b in range(s.bit_length() - 1)]
    rnd.shuffle(units)
    slots = {"register": nreg_bits, "lane": nlane_bits, "warp": nwarp_bits, "block": nblock_bits}
    bases = {}
    for name, n in slots.items():
        vs = []
        for _ in range(n):
            if units and rnd.random() > zeros:
                vs.append(units.pop())
            else:
                vs.append([0] * len(shape))
        bases[name] = vs
    bases["register"] += units  # cover the rest of the tensor with registers
    if rnd.random() < 0.3 and len(bases["register"]) >= 2:  # an XOR swizzle
        i, j = rnd.sample(range(len(bases["register"])), 2)
        bases["register"][i] = [x ^ y for x, y in zip(bases["register"][i], bases["register"][j])]
    return Layout.from_bases(bases, shape)


def permuted(a: Layout, scope: str, rnd: random.Random) -> Layout:
    """B(x) = A(pi(x)) with pi a random permutation of the locations inside each thread / warp /
    block, or of all locations (``scope`` = register, lane, warp, block)."""
    hw = a.hardware_indices()
    cols = {n: hw[:, i] for i, n in enumerate(a.in_names)}
    z = np.zeros(len(hw), dtype=np.int64)
    group_by = {"register": ("lane", "warp", "block"), "lane": ("warp", "block"), "warp": ("block",), "block": ()}[scope]
    key = [tuple(int(cols.get(n, z)[i]) for n in group_by) for i in range(len(hw))]
    groups = defaultdict(list)
    for i, k in enumerate(key):
        groups[k].append(i)
    src = np.arange(len(hw))
    for idx in groups.values():
        perm = idx[:]
        rnd.shuffle(perm)
        src[idx] = perm
    return Layout.from_table(a.in_dims, a.out_dims, a.table()[src])


def random_case(rnd: random.Random):
    kind = rnd.random()
    if kind < 0.45:
        shape = [1 << rnd.randint(1, 5), 1 << rnd.randint(1, 5)]
        nw, nb = rnd.randint(0, 2), rnd.choice([0, 0, 1])
        a = random_f2(rnd, shape, rnd.randint(0, 2), rnd.randint(2, 5), nw, nb)
        if rnd.random() < 0.5:
            b = random_f2(rnd, shape, rnd.randint(0, 2), a.in_size("lane").bit_length() - 1, nw, nb)
        else:
            b = permuted(a, rnd.choice(["register", "lane", "warp", "block"]), rnd)
    elif kind < 0.75:  # mixed radix, non-power-of-two sizes
        m, n = rnd.choice([3, 4, 6]), rnd.choice([5, 8, 10])
        dims = [("register", n), ("lane", 8), ("warp", m)]
        a = Layout.from_modes(dims, [m * 2, n * 4],
                              {"register": [(n, [0, 4])], "lane": [(4, [0, 1]), (2, [1, 0])],
                               "warp": [(m, [2, 0])]})
        b = permuted(a, rnd.choice(["register", "lane", "warp"]), rnd)
    else:  # explicit random tables, possibly partial
        shape = [rnd.choice([3, 4, 6]), rnd.choice([4, 5])]
        dims = [("register", rnd.choice([2, 3])), ("lane", 4), ("warp", rnd.choice([1, 2, 3])), ("block", rnd.choice([1, 2]))]
        n = int(np.prod([s for _, s in dims]))
        rows = rnd.sample(range(shape[0] * shape[1]), min(n, shape[0] * shape[1]))
        flat = [rows[i % len(rows)] if rnd.random() < 0.8 else rnd.randrange(shape[0] * shape[1]) for i in range(n)]
        table = np.stack(np.divmod(np.array(flat), shape[1]), axis=1)
        a = Layout.from_table(dims, shape, table)
        b = permuted(a, rnd.choice(["register", "lane", "warp", "block"]), rnd)
        if rnd.random() < 0.3:
            flat2 = [rnd.randrange(shape[0] * shape[1]) for _ in range(n)]
            b = Layout.from_table(dims, shape, np.stack(np.divmod(np.array(flat2), shape[1]), axis=1))
    if rnd.random() < 0.08:  # the same layout, rebuilt from its table
        b = Layout.from_table(a.in_dims, a.out_dims, a.table())
    return a, b


# ---------------------------------------------------------------------------------------------
def check_report(a: Layout, b: Layout):
    rep = analyze(a, b)
    mech, levels, la, lb, (thread, warp, block, anywhere) = reference(a, b)
    assert rep.mechanism == mech, (rep.mechanism, mech)
    counts = [0] * 5
    for v in levels.values():
        counts[v] += 1
    assert rep.moved_by_level == dict(zip(LEVELS, counts))
    assert rep.elements_moved == sum(counts[1:])
    assert rep.destinations == len(lb)
    assert rep.thread_elements_moved == len({(k[1:], lb[k]) for k, v in levels.items() if v >= 1})
    # every mechanism cheaper than the answer is ruled out by a witness that really rules it out
    cheaper = MECHANISMS[:MECHANISMS.index(rep.mechanism)]
    assert set(rep.witnesses) == set(cheaper)
    assert rep.witness == (rep.witnesses[cheaper[-1]] if cheaper else None)
    for m, w in rep.witnesses.items():
        loc = tuple(w["location"][n] for n in DIMS)
        if m == "no_op" and "element_in_b" in w:
            ea = la.get(loc)
            eb = lb.get(loc)
            assert (list(ea) if ea else None) == w["element_in_a"]
            assert (list(eb) if eb else None) == w["element_in_b"]
            assert ea != eb or any(a.in_size(n) != b.in_size(n) for n in DIMS)
            continue
        e = tuple(w["element"])
        assert lb[loc] == e, "the witness location does not hold the witness element in B"
        r, l, wp, k = loc
        scope = {"no_op": thread[(l, wp, k)], "register_permute": thread[(l, wp, k)],
                 "intra_warp": warp[(wp, k)], "intra_cta": block[k], "cross_cta": anywhere}[m]
        assert e not in scope, f"witness for {m} does not rule it out"
        if w.get("nearest_holder_in_a") is not None:
            h = w["nearest_holder_in_a"]
            assert la[tuple(h[n] for n in DIMS)] == e
        else:
            assert e not in anywhere
    assert rep.contiguity_a == naive_contiguity(a) and rep.contiguity_b == naive_contiguity(b)
    assert rep.vector_width == max(v for v in range(1, min(rep.contiguity_a, rep.contiguity_b) + 1)
                                   if naive_vector_ok(a, v) and naive_vector_ok(b, v))
    return rep


def test_random_layouts_against_the_naive_reference():
    rnd = random.Random(1234)
    seen = defaultdict(int)
    for _ in range(260):
        a, b = random_case(rnd)
        rep = check_report(a, b)
        seen[rep.mechanism] += 1
    # the sweep reaches every class
    assert set(seen) == set(MECHANISMS), dict(seen)


def test_no_op_agrees_with_the_checker():
    from layoutverify.core.compare import compare
    rnd = random.Random(99)
    for _ in range(60):
        a, b = random_case(rnd)
        rep = analyze(a, b)
        verdict = compare(a, b).verdict
        assert (rep.mechanism == "no_op") == (verdict == "equal"), (rep.mechanism, verdict)
        if verdict == "equal_up_to_register_order":
            assert rep.mechanism == "register_permute"


def test_known_conversions():
    # blocked sizePerThread [1, 4] x threadsPerWarp [4, 8] x warps [4, 1] on 16 x 32 (Triton's bases)
    a = Layout.from_bases({"register": [[0, 1], [0, 2]], "lane": [[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]],
                           "warp": [[4, 0], [8, 0]]}, [16, 32])
    # the same with the two register bases swapped: a register permutation
    b = Layout.from_bases({"register": [[0, 2], [0, 1]], "lane": [[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]],
                           "warp": [[4, 0], [8, 0]]}, [16, 32])
    rep = analyze(a, b)
    assert rep.mechanism == "register_permute" and rep.elements_moved == 0
    assert rep.witness["rules_out"] == "no_op"
    assert (rep.contiguity_a, rep.contiguity_b, rep.vector_width) == (4, 1, 1)
    # lane 0 <-> register 0 swapped: shuffles; half of all elements move
    c = Layout.from_bases({"register": [[0, 4], [0, 2]], "lane": [[0, 1], [0, 8], [0, 16], [1, 0], [2, 0]],
                           "warp": [[4, 0], [8, 0]]}, [16, 32])
    rep = analyze(a, c)
    assert rep.mechanism == "intra_warp" and rep.elements_moved == 16 * 32 // 2
    # a warp basis exchanged with a lane basis: shared memory
    d = Layout.from_bases({"register": [[0, 1], [0, 2]], "lane": [[0, 4], [0, 8], [0, 16], [1, 0], [4, 0]],
                           "warp": [[2, 0], [8, 0]]}, [16, 32])
    rep = analyze(a, d)
    assert rep.mechanism == "intra_cta" and rep.witness["rules_out"] == "intra_warp"
    assert rep.witness["nearest_holder_in_a"]["warp"] != rep.witness["location"]["warp"]
    # the same tile split over two blocks the other way round: another CTA's data
    e2 = Layout.from_bases({"register": [[0, 1], [0, 2]], "lane": [[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]],
                            "warp": [[4, 0]], "block": [[8, 0]]}, [16, 32])
    f2 = Layout.from_bases({"register": [[0, 1], [0, 2]], "lane": [[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]],
                            "warp": [[8, 0]], "block": [[4, 0]]}, [16, 32])
    rep = analyze(e2, f2)
    assert rep.mechanism == "cross_cta" and rep.witness["rules_out"] == "intra_cta"
    assert rep.moved_by_level["other_cta"] == 16 * 32 // 2


def test_replicated_source_serves_every_warp():
    # A: every warp holds the whole tile (zero warp bases); B: warps split it. Each warp finds its
    # part in its own warp of A: shuffles suffice although the holders Triton's inverse picks may
    # sit in warp 0.
    a = Layout.from_bases({"register": [[0, 1], [0, 2], [1, 0], [2, 0]], "lane": [[0, 4], [0, 8], [4, 0], [8, 0], [0, 0]],
                           "warp": [[0, 0], [0, 0]]}, [16, 16])
    b = Layout.from_bases({"register": [[0, 1]], "lane": [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]],
                           "warp": [[0, 8], [8, 0]]}, [16, 16])
    rep = analyze(a, b)
    assert rep.mechanism == "intra_warp"


def test_partial_source_is_impossible():
    a = Layout.from_bases({"register": [[0, 1]], "lane": [[0, 0], [1, 0]]}, [4, 2])  # rows 0, 1 only
    b = Layout.from_bases({"register": [[0, 1]], "lane": [[1, 0], [2, 0]]}, [4, 2])
    rep = analyze(a, b)
    assert rep.mechanism == "impossible"
    assert rep.witness["rules_out"] == "cross_cta" and rep.witness["element"][0] >= 2
    assert rep.witness["nearest_holder_in_a"] is None
    assert rep.moved_by_level["nowhere"] > 0


def test_bank_conflicts_are_reported_with_a_shared_layout():
    from layoutverify.core.banks import bank_conflicts
    a = Layout.from_bases({"register": [[0, 1], [0, 2]], "lane": [[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]]}, [4, 32])
    b = Layout.from_bases({"register": [[1, 0], [2, 0]], "lane": [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16]]}, [4, 32])
    shared = Layout.from_bases({"offset": [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [1, 0], [2, 0]]}, [4, 32])
    rep = analyze(a, b, shared=shared, element_bits=32)
    assert rep.bank_conflicts["store_a"].to_json() == bank_conflicts(a, shared, 32).to_json()
    assert rep.bank_conflicts["load_b"].to_json() == bank_conflicts(b, shared, 32).to_json()
    assert "bank_conflicts" in rep.to_json() and "bank conflicts" in rep.render()


def test_bad_input():
    a = Layout.from_bases({"register": [[0, 1]], "lane": [[1, 0], [2, 0]]}, [4, 2])
    with pytest.raises(LayoutError):
        analyze(a, Layout.from_bases({"register": [[0, 1]], "lane": [[1, 0], [2, 0]]}, [4, 4]))
    with pytest.raises(LayoutError):
        analyze(a, Layout.from_bases({"register": [[0, 1]], "lane": [[1, 0], [2, 0], [0, 0]]}, [4, 2]))
    with pytest.raises(LayoutError):
        analyze(a, a, element_bits=7)
    mem = Layout.from_bases({"offset": [[0, 1], [1, 0], [2, 0]]}, [4, 2])
    with pytest.raises(LayoutError):
        analyze(mem, a)
    with pytest.raises(LayoutError):
        analyze(a, a, shared=Layout.from_bases({"offset": [[0, 1], [1, 0]]}, [2, 2]))


def test_contiguity_examples():
    # four consecutive columns per thread, aligned: 4; registers that step by 2: 1
    a = Layout.from_bases({"register": [[0, 1], [0, 2]], "lane": [[0, 4], [1, 0]]}, [2, 8])
    assert contiguity(a) == 4
    b = Layout.from_bases({"register": [[0, 2], [0, 1]], "lane": [[0, 4], [1, 0]]}, [2, 8])
    assert contiguity(b) == 1
    # non-power-of-two: 3 consecutive columns per thread
    c = Layout.from_modes([("register", 3), ("lane", 4)], [2, 6],
                          {"register": [(3, [0, 1])], "lane": [(2, [0, 3]), (2, [1, 0])]})
    assert contiguity(c) == 3
