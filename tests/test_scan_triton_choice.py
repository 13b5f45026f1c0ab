"""The model of Triton's ``convert_layout`` lowering (``layoutverify.adapters.triton.lowering``, which
the scan asks through ``layoutverify.apps.scan.triton_choice``) against Triton itself: our ``invert_and_compose`` and Triton's ``LinearLayout.invert_and_compose``
give the same decision (registers / shuffles / shared memory) on random surjective pairs, and
agree bit for bit wherever no broadcast bit is involved. (The decision rules themselves are checked
against Triton's PTX in tests/test_conversion_ptx.py and tests/test_scan.py.)"""
from __future__ import annotations

import random

import pytest

from layoutverify.adapters.triton.lowering import CLASS_MECHANISM, HW_DIMS as HW, decide, invert_and_compose
from layoutverify.apps.scan.triton_choice import triton_choice
from layoutverify.core.layout import Layout

N_PAIRS = 400


def _random_pair(rnd):
    shape = [1 << rnd.randint(2, 5), 1 << rnd.randint(2, 5)]
    units = [[1 << b if d == k else 0 for k in range(2)] for d, s in enumerate(shape) for b in range(s.bit_length() - 1)]

    def make():
        u = list(units)
        rnd.shuffle(u)
        lane, warp, reg = u[:5], u[5:7], u[7:]
        lane += [[0, 0]] * (5 - len(lane))
        warp += [[0, 0]] * (2 - len(warp))
        for _ in range(rnd.choice([0, 0, 1, 2])):
            reg.insert(rnd.randint(0, len(reg)), rnd.choice([[0, 0], list(rnd.choice(units))]))
        return {"register": reg, "lane": lane, "warp": warp, "block": []}

    a = make()
    if rnd.random() < 0.5:
        b = make()
    else:  # a perturbation of a: swap two bases between register/lane/warp
        b = {k: [list(x) for x in v] for k, v in a.items()}
        k1, k2 = rnd.sample(["register", "lane", "warp"], 2)
        if b[k1] and b[k2]:
            i, j = rnd.randrange(len(b[k1])), rnd.randrange(len(b[k2]))
            b[k1][i], b[k2][j] = b[k2][j], b[k1][i]
    return shape, a, b


def _cls(m):
    return "registers" if m in ("no_op", "register_permute") else m


def test_decisions_match_tritons_invert_and_compose():
    LL = pytest.importorskip("triton._C.libtriton.linear_layout").LinearLayout
    rnd = random.Random(20261125)
    compared = exact = 0
    seen = set()
    for _ in range(N_PAIRS * 3):
        if compared >= N_PAIRS:
            break
        shape, a, b = _random_pair(rnd)
        A, B = Layout.from_bases(a, shape), Layout.from_bases(b, shape)
        if not (A.is_surjective() and B.is_surjective()):
            continue  # Triton aborts on a non-surjective source
        names = ["dim0", "dim1"]
        comp = LL.from_bases(list(b.items()), names, shape).invert_and_compose(
            LL.from_bases(list(a.items()), names, shape))
        outs = comp.get_out_dim_names()
        theirs = {k: [{h: dict(zip(outs, v)).get(h, 0) for h in HW} for v in vs] for k, vs in comp.bases}
        mine = invert_and_compose(A, B)
        compared += 1
        same = _cls(CLASS_MECHANISM[decide(theirs, A.f2_bases())[0]])
        ours = _cls(triton_choice(A, B).mechanism)
        assert ours == same, (a, b, ours, same)
        seen.add(ours)
        broadcast = any(not any(v) for lay in (a, b) for vs in lay.values() for v in vs)
        if not broadcast:
            assert {k: v for k, v in mine.items() if v} == {k: v for k, v in theirs.items() if v}, (a, b)
            exact += 1
    assert compared >= N_PAIRS and exact >= 50
    assert seen == {"registers", "intra_warp", "intra_cta"}, seen


def test_memory_layouts_are_not_predicted():
    from layoutverify.adapters import parse_spec
    shared = parse_spec("triton:#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>",
                        shape=(64, 64))
    reg = parse_spec("triton:#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], "
                     "order = [1, 0]}>", shape=(64, 64))
    assert triton_choice(reg, shared).mechanism is None
    assert triton_choice(reg, reg).mechanism == "no_op"
