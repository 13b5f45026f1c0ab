"""Conversion classes against the instructions Triton emits (DESIGN.md §3, §4).

For 520 seeded pairs of Triton layouts (blocked x blocked, blocked x nvidia_mma v2/v3,
nvidia_mma / blocked x dot_op (mma v2 operands, the wgmma A operand), slice, linear, and linear
perturbations built to reach every class), a Gluon kernel loads a tile in layout A,
converts it to B with ``gl.convert_layout`` and stores it. It is compiled for ``GPUTarget("cuda", 90, 32)`` on
the CPU down to PTX (the pipeline stops at the ``ptx`` stage: no GPU, no ptxas). The PTX says
which mechanism Triton used:

* neither shared memory (``st/ld.shared``, ``stmatrix``, ``ldmatrix``) nor ``shfl.sync``: registers
  only (our ``no_op`` / ``register_permute``);
* ``shfl.sync`` without shared memory: shuffles (our ``intra_warp``);
* shared memory: our ``intra_cta`` (one CTA per kernel here, so never ``cross_cta``).

Our canonical layouts come from Triton itself (``GluonOpBuilder.to_linear_layout``), so this test
checks the classifier, not the Triton adapter. Assertions:

* soundness, always: Triton never moves data with a cheaper mechanism than the cheapest one we
  say suffices;
* Triton's rules as read from its sources and headers (``triton_decision``, computed from
  Triton's own ``invert_and_compose``) predict the PTX class of every pair (Triton 3.9 only);
* where Triton is costlier than necessary, the rule responsible is named, and without replicated
  data it can only be one of the two register<->lane rules; the counts are printed.

Compiling goes through the package (``layoutverify.adapters.triton.lowering.compile_conversions``
and its ``compile_worker``): two worker subprocesses (a malformed layout can abort Triton's C++),
each fed half of the pairs; a worker that dies is restarted after the pair it died on. The PTX
class is ``lowering.ptx_class``, the one the suite tests use.
"""
from __future__ import annotations

import random
import time

import pytest

N_PAIRS = 520
SEED = 20240917
WORKERS = 2

#: this sweep's dtype names -> the compile worker's
WORKER_DTYPE = {"fp16": "f16", "fp32": "f32"}
RANK_OF = {"no_op": 0, "register_permute": 0, "intra_warp": 1, "intra_cta": 2, "cross_cta": 3}
PTX_CLASS = ("registers", "shuffle", "shared")


# ---------------------------------------------------------------------------------------------
# case generation (plain JSON specs, built into Gluon layouts by the worker)
def _split(total: int, rnd: random.Random, rank: int = 2) -> list[int]:
    """A random factorization of a power of two into ``rank`` powers of two."""
    bits = total.bit_length() - 1
    cuts = sorted(rnd.randint(0, bits) for _ in range(rank - 1))
    parts, prev = [], 0
    for c in cuts + [bits]:
        parts.append(1 << (c - prev))
        prev = c
    rnd.shuffle(parts)
    return parts


def _blocked(rnd, nw, rank=2, max_spt=8):
    return {"kind": "blocked", "spt": [1 << rnd.randint(0, max_spt.bit_length() - 1) for _ in range(rank)],
            "tpw": _split(32, rnd, rank), "wpc": _split(nw, rnd, rank),
            "order": rnd.sample(range(rank), rank)}


def _mma_v2(rnd, nw):
    return {"kind": "mma", "version": [2, 0], "warps": _split(nw, rnd), "instr": [16, 8]}


def _mma_v3(rnd, nw):
    n = rnd.choice([8, 16, 32, 64])
    return {"kind": "mma", "version": [3, 0], "warps": [nw, 1] if nw == 4 or rnd.random() < .5 else [4, nw // 4],
            "instr": [16, n, 16]}


def _linear_from(rnd, shape, nw, zero_regs=0):
    """A random surjective F2 distributed layout: the tensor's unit bases shuffled over
    register/lane/warp slots, lane and warp slots beyond the tensor filled with zeros (broadcast),
    and a few extra zero registers. (Bases mixing two tensor dims are left out: the kernel's
    ``arange`` in a slice of such a layout aborts inside Triton.)"""
    units = [[1 << b if d == k else 0 for k in range(len(shape))]
             for d, s in enumerate(shape) for b in range(s.bit_length() - 1)]
    rnd.shuffle(units)
    nl, nwb = 5, nw.bit_length() - 1
    lane = units[:nl]
    warp = units[nl:nl + nwb]
    reg = units[nl + nwb:]
    lane += [[0] * len(shape) for _ in range(nl - len(lane))]
    warp += [[0] * len(shape) for _ in range(nwb - len(warp))]
    for _ in range(zero_regs):
        reg.insert(rnd.randint(0, len(reg)), [0] * len(shape))
    return {"kind": "linear", "reg": reg, "lane": lane, "warp": warp, "block": []}


def _perturb(rnd, lin, how):
    """B from linear A: permute registers (register-only), swap a register and a lane basis
    (shuffles), swap a lane and a warp basis (shared memory)."""
    reg, lane, warp = [list(x) for x in lin["reg"]], [list(x) for x in lin["lane"]], [list(x) for x in lin["warp"]]
    if how == "reg_perm" and len(reg) >= 2:
        rnd.shuffle(reg)
    elif how == "reg_lane" and reg:
        i, j = rnd.randrange(len(reg)), rnd.randrange(len(lane))
        reg[i], lane[j] = lane[j], reg[i]
    elif how == "lane_perm":
        rnd.shuffle(lane)
    elif how == "lane_warp" and warp:
        i, j = rnd.randrange(len(lane)), rnd.randrange(len(warp))
        lane[i], warp[j] = warp[j], lane[i]
    elif how == "reg_warp" and warp and reg:
        i, j = rnd.randrange(len(reg)), rnd.randrange(len(warp))
        reg[i], warp[j] = warp[j], reg[i]
    return {"kind": "linear", "reg": reg, "lane": lane, "warp": warp, "block": []}


def _cap(shape, nw, mins, per_thread=16):
    """Shrink the tile (largest dim first, not below ``mins``) to at most ``per_thread`` elements
    per thread: compile time grows with the registers per thread."""
    shape = [max(s, m) for s, m in zip(shape, mins + [1] * len(shape))]
    while shape and _prod(shape) > per_thread * 32 * nw:
        order = sorted(range(len(shape)), key=lambda i: -shape[i])
        for i in order:
            if shape[i] // 2 >= (mins[i] if i < len(mins) else 1):
                shape[i] //= 2
                break
        else:
            break
    return shape


def _prod(xs):
    out = 1
    for x in xs:
        out *= x
    return out


def make_cases(n: int = N_PAIRS, seed: int = SEED) -> list[dict]:
    rnd = random.Random(seed)
    cases = []
    families = ["blocked", "blocked_mma", "mma_dot", "slice", "linear_perturb", "linear_random", "same"]
    weights = [0.22, 0.14, 0.12, 0.08, 0.32, 0.06, 0.06]
    while len(cases) < n:
        fam = rnd.choices(families, weights)[0]
        nw = rnd.choice([1, 2, 4, 4, 8])
        dtype = rnd.choice(["fp16", "fp16", "fp32"])
        shape = [1 << rnd.randint(3, 6), 1 << rnd.randint(3, 6)]
        mins = [8, 8]
        if fam == "blocked":
            a, b = _blocked(rnd, nw), _blocked(rnd, nw)
            if rnd.random() < 0.4:  # same threads, different per-thread tiling or order
                b = dict(a, spt=[1 << rnd.randint(0, 3) for _ in range(2)])
        elif fam == "blocked_mma":
            if rnd.random() < 0.35 and nw in (4, 8):
                m = _mma_v3(rnd, nw)
                mins = [64, m["instr"][1]]
            else:
                m = _mma_v2(rnd, nw)
                mins = [16, 8]
            a, b = _blocked(rnd, nw), m
            if rnd.random() < 0.5:
                a, b = b, a
        elif fam == "mma_dot":
            dtype = "fp16"
            nwd = rnd.choice([1, 2, 4, 8])
            nw = nwd
            m = _mma_v2(rnd, nw)
            op = rnd.randint(0, 1)
            mins = [16, 16]
            d = {"kind": "dot", "op": op, "parent": m, "k_width": rnd.choice([1, 2, 4])}
            if nw in (4, 8) and rnd.random() < 0.3:  # wgmma: the A operand in registers
                m, op = _mma_v3(rnd, nw), 0
                mins = [64, max(16, m["instr"][1])]
                d = {"kind": "dot", "op": 0, "parent": m, "k_width": 2}
            other = rnd.choice(["mma", "blocked", "dot"])
            if other == "mma":
                a, b = m, d
            elif other == "blocked":
                a, b = _blocked(rnd, nw), d
            else:
                a, b = d, {"kind": "dot", "op": op, "parent": _mma_v2(rnd, nw), "k_width": rnd.choice([1, 2, 4])}
            if rnd.random() < 0.5:
                a, b = b, a
        elif fam == "slice":
            if rnd.random() < 0.5:  # 1-D: slice of a 2-D parent vs a 1-D blocked or another slice
                shape = [1 << rnd.randint(4, 8)]
                p = _blocked(rnd, nw) if rnd.random() < 0.7 else _mma_v2(rnd, nw)
                a = {"kind": "slice", "dim": rnd.randint(0, 1), "parent": p}
                b = _blocked(rnd, nw, rank=1) if rnd.random() < 0.6 else \
                    {"kind": "slice", "dim": rnd.randint(0, 1), "parent": _blocked(rnd, nw)}
            else:  # 2-D: slice of a 3-D blocked parent vs a 2-D blocked
                p = _blocked(rnd, nw, rank=3, max_spt=4)
                a = {"kind": "slice", "dim": rnd.randint(0, 2), "parent": p}
                b = _blocked(rnd, nw)
            if rnd.random() < 0.5:
                a, b = b, a
        elif fam == "linear_perturb":
            shape = _cap(shape, nw, mins)
            a = _linear_from(rnd, shape, nw, zero_regs=rnd.choice([0, 0, 1]))
            b = _perturb(rnd, a, rnd.choice(["reg_perm", "reg_lane", "lane_perm", "lane_warp", "reg_warp"]))
            if rnd.random() < 0.3:
                b = _perturb(rnd, b, rnd.choice(["reg_perm", "reg_lane", "lane_perm"]))
        elif fam == "linear_random":
            shape = _cap(shape, nw, mins)
            a, b = _linear_from(rnd, shape, nw), _linear_from(rnd, shape, nw)
        else:  # the same layout twice, or a blocked layout and its own linear form
            a = _blocked(rnd, nw)
            b = dict(a) if rnd.random() < 0.5 else {"kind": "as_linear", "of": a}
        shape = _cap(shape, nw, mins)
        cases.append({"id": len(cases), "family": fam, "shape": shape, "num_warps": nw, "dtype": WORKER_DTYPE[dtype],
                      "arch": 90, "a": a, "b": b})
    return cases


def ptx_class(counts: dict) -> str:
    from layoutverify.adapters.triton.lowering import ptx_class as classify
    return classify(counts)


# ---------------------------------------------------------------------------------------------
def _layout(bases: dict, shape):
    from layoutverify.core.layout import Layout
    return Layout.from_bases({k: v for k, v in bases.items()}, shape)


def triton_decision(cvt: dict, a_bases: dict, release: str = "3.9") -> tuple[str, str]:
    """Triton ``release``'s choice by the package's model of its lowering rules
    (``layoutverify.adapters.triton.lowering.decide``: ``minimalCvtLayout``, ``cvtNeedsWarpShuffle``,
    ``getWarpLayoutConvertDecomposition``), applied to Triton's own ``dst.invertAndCompose(src)``
    (``cvt``: dst location -> the src location it reads). Returns (``registers`` | ``shuffle`` |
    ``shared``, the rule that decided)."""
    from layoutverify.adapters.triton.lowering import decide
    outs = list(cvt["out"])
    locs = {k: [dict(zip(outs, v)) for v in vs] for k, vs in cvt["bases"]}
    return decide(locs, a_bases, release)


def _has_broadcast(a, b) -> bool:
    """A zero lane or warp basis in either layout: replicated data, where Triton's pseudo-inverse
    may read a remote copy although a nearer one exists."""
    return any(not any(v) for lay in (a, b) for k in ("lane", "warp") for v in lay.f2_bases().get(k, []))


@pytest.fixture(scope="module")
def compiled():
    pytest.importorskip("triton")
    try:
        from triton.experimental.gluon import language  # noqa: F401
        from triton.backends.compiler import GPUTarget  # noqa: F401
    except ImportError:
        pytest.skip("this Triton has no Gluon")
    from layoutverify.adapters.triton.lowering import compile_conversions, ptx_counts
    cases = make_cases()
    t0 = time.perf_counter()
    res = compile_conversions(cases, workers=WORKERS, timeout=600)
    for r in res.values():
        if "ptx" in r:
            r["counts"] = ptx_counts(r.pop("ptx"))
    return cases, res, time.perf_counter() - t0


def _mispredicted(cases, res, release):
    wrong = []
    for c in cases:
        r = res.get(c["id"], {})
        if "counts" in r and triton_decision(r["cvt"], r["a_bases"], release)[0] != ptx_class(r["counts"]):
            wrong.append((c, triton_decision(r["cvt"], r["a_bases"], release), r["counts"]))
    return wrong


def test_triton_rules_predict_ptx(compiled):
    """Our reading of Triton's rules (``triton_decision``, for the installed release) predicts the
    PTX of every pair, so the disagreements below are explained by those rules, not guessed."""
    from layoutverify.adapters.triton import version
    release = version.installed()
    if release not in version.SUPPORTED:
        pytest.skip(f"the rules are those of Triton {', '.join(version.SUPPORTED)}, this is {release}")
    cases, res, _ = compiled
    wrong = _mispredicted(cases, res, release)
    assert not wrong, f"{len(wrong)} pairs where Triton's rules as read do not predict its PTX: {wrong[:3]}"


OTHER_RELEASE_STRIDE = 4


def _other_releases() -> list[str]:
    from layoutverify.adapters.triton import version
    return [v for v in version.SUPPORTED if v != version.installed()]


@pytest.mark.parametrize("release", _other_releases())
def test_triton_rules_predict_ptx_of_other_releases(release, compiled, triton_python):
    """The same with the other supported releases, each in its own interpreter (``conftest.py``'s
    ``triton_python``), on every ``OTHER_RELEASE_STRIDE``-th pair plus every pair whose predicted
    class differs between releases (by the rules applied to the installed release's
    ``invert_and_compose``), to keep the run short; the release's own ``invert_and_compose`` and
    PTX decide."""
    from layoutverify.adapters.triton import version
    from layoutverify.adapters.triton.lowering import compile_conversions, ptx_counts
    python = triton_python(release)
    cases, res_installed, _ = compiled
    sensitive = {c["id"] for c in cases if "cvt" in res_installed.get(c["id"], {})
                 and len({triton_decision(res_installed[c["id"]]["cvt"], res_installed[c["id"]]["a_bases"], v)[0]
                          for v in version.SUPPORTED}) > 1}
    picked = [c for c in cases if c["id"] % OTHER_RELEASE_STRIDE == 0 or c["id"] in sensitive]
    res = compile_conversions(picked, python=python, workers=WORKERS, timeout=600)
    compiled_ok = 0
    for r in res.values():
        if "ptx" in r:
            assert r["triton"].startswith(release + "."), r["triton"]
            r["counts"] = ptx_counts(r.pop("ptx"))
            compiled_ok += 1
    assert compiled_ok >= 0.95 * len(picked), [r.get("error") for r in res.values() if "error" in r][:3]
    assert sensitive and sensitive <= {c["id"] for c in picked}
    wrong = _mispredicted(picked, res, release)
    assert not wrong, f"Triton {release}: {len(wrong)} of {compiled_ok} pairs mispredicted: {wrong[:3]}"


def test_conversion_classes_match_triton_ptx(compiled):
    """Ours is never costlier than what Triton emits (soundness); where Triton is costlier, the
    reason is one of Triton's rules, and without replicated data only the register<->lane rules."""
    from layoutverify.core.conversion import analyze

    cases, res, seconds = compiled
    ok_cases = [c for c in cases if "counts" in res.get(c["id"], {})]
    errors = [res.get(c["id"], {}).get("error", "missing") for c in cases if c not in ok_cases]
    # Triton must accept nearly all generated pairs, else the sweep tests little
    assert len(ok_cases) >= 500, f"only {len(ok_cases)} pairs compiled; errors: {errors[:5]}"
    agree, costlier, unsound, unexplained = 0, {}, [], []
    table = {}
    for c in ok_cases:
        r = res[c["id"]]
        a, b = _layout(r["a_bases"], c["shape"]), _layout(r["b_bases"], c["shape"])
        ours = analyze(a, b)
        tcls = ptx_class(r["counts"])
        table[(ours.mechanism, tcls)] = table.get((ours.mechanism, tcls), 0) + 1
        mine, theirs = RANK_OF[ours.mechanism], PTX_CLASS.index(tcls)
        if mine == theirs:
            agree += 1
        elif mine > theirs:
            unsound.append((c, ours.mechanism, tcls, r["counts"]))
        else:
            decision, rule = triton_decision(r["cvt"], r["a_bases"])
            replicated = _has_broadcast(a, b)
            if decision != tcls or (not replicated and rule not in (
                    ">= 2 register<->lane exchanges", "warp selects a source register")):
                unexplained.append((c, ours.mechanism, tcls, decision, rule))
            key = f"{ours.mechanism} -> {tcls}: {rule}{' (replicated data)' if replicated else ''}"
            costlier[key] = costlier.get(key, 0) + 1
    print(f"\n{len(ok_cases)} pairs compiled in {seconds:.1f}s ({len(errors)} rejected by Triton); "
          f"agree {agree}; Triton costlier {sum(costlier.values())}:")
    for k, v in sorted(costlier.items(), key=lambda kv: -kv[1]):
        print(f"  {v:4d}  {k}")
    print("  (ours, triton):", dict(sorted(table.items())))
    assert not unsound, f"Triton used a cheaper mechanism than we say is needed: {unsound[:3]}"
    assert not unexplained, f"unexplained disagreements: {unexplained[:3]}"
    # every class is exercised, each on both sides
    for mech in ("no_op", "register_permute", "intra_warp", "intra_cta"):
        assert any(m == mech for m, _ in table), f"no pair classified {mech}"
    for t in PTX_CLASS:
        assert any(x == t for _, x in table), f"Triton never used {t}"
