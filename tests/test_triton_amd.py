"""Triton's AMD encodings (amd_mfma, amd_wmma, dot_op on them) against Triton itself: the full
sweep against the installed release, a smaller one against every other supported release (each
in its own interpreter, cases drawn in that release's spelling).

The differential sweep draws seeded random (encoding, shape) cases, asks Triton's own
``GluonOpBuilder.to_linear_layout`` for each in a subprocess (a malformed case can abort Triton's
C++, so a crash only loses that case), and requires our bases to be *identical*. Cases Triton
rejects are counted, printed with Triton's reason, and must be a small fraction -- and we must
reject them too. Bad AMD parameters must give one-line :class:`LayoutError`s.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from collections import Counter

import pytest

from layoutverify.adapters.triton import amd, version
from layoutverify.adapters.triton.attr import Attr, DOT_OPERAND_PARENTS, ENCODINGS
from layoutverify.core.errors import LayoutError

SEED = 20240917
N_CASES = 720          # at least 600 are required; each costs ~1 ms in Triton and ~2 ms here

#: the release the sweep compares with: the installed Triton's (its oracle); Triton 3.6 writes
#: amd_wmma with warpsPerCTA/tilesPerWarp (Gluon ``AMDWMMALayout(version, transposed,
#: warps_per_cta, instr_shape, tiles_per_warp, cga_layout)``), 3.7+ with a ctaLayout (#8946)
TV = version.default()
LEGACY_WMMA = TV == "3.6"
#: the checks that do not ask Triton pin the newest release's semantics
V39 = {"triton_version": "3.9"}

# ------------------------------------------------------------------------------------------------
# The oracle: a worker process that reads JSON cases and prints one JSON line per case.
# ------------------------------------------------------------------------------------------------
WORKER = textwrap.dedent(r"""
    import json, sys
    from triton._C.libtriton import ir, gluon_ir
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.amd import AMDMFMALayout, AMDWMMALayout
    ctx = ir.context(); ir.load_dialects(ctx); b = gluon_ir.GluonOpBuilder(ctx)

    def mfma(p):
        return AMDMFMALayout(p["version"], p["instr"], p["transposed"], p["warps"],
                             element_bitwidth=p["ebw"], tiles_per_warp=p["tiles"], cga_layout=p["cga"])

    def wmma(p):
        if "warps" in p:   # Triton 3.6's API
            return AMDWMMALayout(p["version"], p["transposed"], p["warps"], instr_shape=p["instr"],
                                 tiles_per_warp=p["tiles"], cga_layout=p["cga"])
        return AMDWMMALayout(p["version"], p["transposed"], p["warp"], reg_bases=p["reg"],
                             instr_shape=p["instr"], cga_layout=p["cga"], rank=p["rank"])

    def build(c):
        if c["kind"] == "mfma":
            return mfma(c)
        if c["kind"] == "wmma":
            return wmma(c)
        parent = mfma(c["parent"]) if c["parent"]["kind"] == "mfma" else wmma(c["parent"])
        return gl.DotOperandLayout(c["op_idx"], parent, c["k_width"])

    def printed(text, shape, warps, lanes):
        # Triton's own print of an encoding attribute after parsing it inside a module
        import os, tempfile
        mod = (f"#enc = {text}\n"
               f'module attributes {{"ttg.num-warps" = {warps} : i32, "ttg.threads-per-warp" = {lanes} : i32, '
               f'"ttg.num-ctas" = 1 : i32}} {{\n'
               f"  tt.func @f(%a: tensor<{'x'.join(map(str, shape))}xf32, #enc>) {{ tt.return }}\n}}\n")
        fd, path = tempfile.mkstemp(suffix=".mlir")
        with os.fdopen(fd, "w") as f:
            f.write(mod)
        try:
            lines = str(ir.parse_mlir_module(path, ctx)).splitlines()
        finally:
            os.unlink(path)
        return next(ln.split(" = ", 1)[1] for ln in lines if " = #ttg.amd_" in ln)

    for line in sys.stdin:
        c = json.loads(line)
        try:
            ll = b.to_linear_layout(build(c)._to_ir(b), c["shape"])
            out = {"i": c["i"], "bases": {"register": ll.reg_bases, "lane": ll.lane_bases,
                                          "warp": ll.warp_bases, "block": ll.block_bases}}
            if "print" in c:
                out["printed"] = printed(*c["print"])
        except BaseException as e:  # Triton's verifier errors and Python asserts
            out = {"i": c["i"], "error": f"{type(e).__name__}: {e}".strip()[:300]}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
""")


def run_oracle(cases: list[dict], python: str = sys.executable) -> dict[int, dict]:
    """Triton's answer per case index (the Triton of ``python``); a case that kills the worker is
    answered ``{"error": "crash ..."}``."""
    answers: dict[int, dict] = {}
    todo = list(cases)
    while todo:
        proc = subprocess.run([python, "-c", WORKER], input="".join(json.dumps(c) + "\n" for c in todo),
                              capture_output=True, text=True, timeout=600)
        for line in proc.stdout.splitlines():
            if line.startswith("{"):
                a = json.loads(line)
                answers[a["i"]] = a
        rest = [c for c in todo if c["i"] not in answers]
        if rest and proc.returncode == 0:
            raise AssertionError(f"oracle worker skipped cases: {proc.stderr[-2000:]}")
        if rest:   # the first unanswered case crashed the worker: record it, carry on with the others
            tail = [ln for ln in proc.stderr.splitlines() if "leak" not in ln and ln.strip()][:3]
            why = f"crash (rc {proc.returncode}): {' | '.join(tail)[:300]}"
            answers[rest[0]["i"]] = {"i": rest[0]["i"], "error": why}
            rest = rest[1:]
        todo = rest
    return answers


# ------------------------------------------------------------------------------------------------
# Random cases (JSON-able), and the same case as our Attr and as Triton's printed text
# ------------------------------------------------------------------------------------------------
def _split_warps(rng: random.Random, rank: int, max_log2: int = 4) -> list[int]:
    """A power-of-two warp count (1..16) spread randomly over the dims."""
    w = [1] * rank
    for _ in range(rng.randint(0, max_log2)):
        w[rng.randrange(rank)] *= 2
    return w


def _cga(rng: random.Random, rank: int) -> list[list[int]]:
    """Usually no CGA; sometimes 1-2 block bases (a permutation of tensor bits, maybe a broadcast)."""
    if rng.random() < 0.8:
        return []
    nxt = [1] * rank
    bases = []
    for _ in range(rng.randint(1, 2)):
        if rng.random() < 0.15:
            bases.append([0] * rank)
            continue
        d = rng.randrange(rank)
        v = [0] * rank
        v[d] = nxt[d]
        nxt[d] *= 2
        bases.append(v)
    return bases


def _shape_dim(rng: random.Random) -> int:
    return rng.choice([1, 2, 4, 8, 16, 16, 32, 32, 64, 64, 128, 256]) if rng.random() < 0.97 else 512


def random_mfma(rng: random.Random, rank: int) -> dict:
    m, n = rng.choice([(32, 32), (32, 32), (16, 16), (16, 16), (64, 4), (4, 64)])
    k = {(32, 32): [8, 16, 64], (16, 16): [16, 32, 128], (64, 4): [4], (4, 64): [4]}[(m, n)]
    transposed = True if (m, n) == (64, 4) else rng.random() < 0.5
    tiles = [1] * rank
    if rng.random() < 0.35:
        tiles[-2] = rng.choice([1, 2, 4])
        tiles[-1] = rng.choice([1, 2])
    return {"kind": "mfma", "version": rng.randint(1, 4), "instr": [m, n, rng.choice(k)], "transposed": transposed,
            "warps": _split_warps(rng, rank), "ebw": rng.choice([32, 32, 64]), "tiles": tiles, "cga": _cga(rng, rank)}


def random_wmma(rng: random.Random, rank: int, tv: str = TV) -> dict:
    version = rng.randint(1, 3)
    instr = list(rng.choice(amd.wmma_instr_shapes(version, {"triton_version": tv})))
    if tv == "3.6":   # Triton 3.6: warpsPerCTA and tilesPerWarp
        tiles = [1] * rank
        if rng.random() < 0.35:
            tiles[-2] = rng.choice([1, 2, 4])
            tiles[-1] = rng.choice([1, 2])
        return {"kind": "wmma", "version": version, "transposed": rng.random() < 0.5,
                "warps": _split_warps(rng, rank), "tiles": tiles, "instr": instr, "cga": _cga(rng, rank),
                "rank": rank}
    # ctaLayout: warp and register bits, each moving one tensor dim to its next power of two
    nxt = [1] * rank
    warp, reg = [], []
    for _ in range(rng.randint(0, 4)):
        v = [0] * rank
        if rng.random() > 0.1:
            d = rng.randrange(rank)
            v[d] = nxt[d]
            nxt[d] *= 2
        warp.append(v)
    for _ in range(rng.choice([0, 0, 0, 1, 2])):
        d = rng.randrange(rank)
        v = [0] * rank
        v[d] = nxt[d]
        nxt[d] *= 2
        reg.append(v)
    if reg and warp and rng.random() < 0.08:   # a register repeat that duplicates a warp bit
        reg.append(list(rng.choice(warp)))
    # the bits were handed out in a random order, so warps and registers interleave over the dims
    return {"kind": "wmma", "version": version, "transposed": rng.random() < 0.5, "warp": warp, "reg": reg,
            "instr": instr, "cga": _cga(rng, rank), "rank": rank}


def random_case(rng: random.Random, i: int, tv: str = TV) -> dict:
    rank = 3 if rng.random() < 0.2 else 2
    shape = ([rng.choice([1, 2, 4])] if rank == 3 else []) + [_shape_dim(rng), _shape_dim(rng)]
    r = rng.random()
    if r < 0.3:
        case = random_mfma(rng, rank)
    elif r < 0.55:
        case = random_wmma(rng, rank, tv)
    else:
        parent = random_mfma(rng, rank) if rng.random() < 0.55 else random_wmma(rng, rank, tv)
        if parent["kind"] == "mfma":
            k_width = rng.choice([1, 2, 4, 4, 8, 8, 16, 32])
        elif rng.random() < 0.05 and parent["version"] < 3:   # a kWidth Triton's verifier refuses
            k_width = rng.choice({1: [2, 4, 32], 2: [2, 32]}[parent["version"]])
        else:
            k_width = rng.choice({1: [8, 16], 2: [4, 8, 16], 3: [2, 4, 8, 16]}[parent["version"]])
        case = {"kind": "dot", "op_idx": rng.randint(0, 1), "k_width": k_width, "parent": parent}
    acc = case if case["kind"] == "wmma" else None
    if acc is not None and version.before({"triton_version": tv}, "3.8") and rng.random() < 0.9:
        # Triton <= 3.7 aborts unless the accumulator's M and N are 1 or a whole instruction
        # (#9825 lifted that in 3.8): mostly draw shapes it accepts, keep a few it refuses
        m, n = acc["instr"][0], acc["instr"][1]
        shape[-2] = shape[-2] if shape[-2] in (1,) or shape[-2] >= m else m
        shape[-1] = shape[-1] if shape[-1] in (1,) or shape[-1] >= n else n
    case.update(i=i, shape=shape)
    return case


def to_attr(p: dict) -> Attr:
    """The case as the parsed TTGIR attribute the parser would hand us (Triton's parameter names)."""
    if p["kind"] == "mfma":
        params = {"version": p["version"], "warpsPerCTA": p["warps"], "instrShape": p["instr"],
                  "isTransposed": p["transposed"]}
        if p["cga"]:
            params["CGALayout"] = p["cga"]
        if any(t != 1 for t in p["tiles"]):
            params["tilesPerWarp"] = p["tiles"]
        if p["ebw"] != 32:
            params["elementBitWidth"] = p["ebw"]
        return Attr("amd_mfma", params)
    if p["kind"] == "wmma" and "warps" in p:
        params = {"version": p["version"], "isTranspose": p["transposed"], "warpsPerCTA": p["warps"],
                  "instrShape": p["instr"]}
        if p["cga"]:
            params["CGALayout"] = p["cga"]
        if any(t != 1 for t in p["tiles"]):
            params["tilesPerWarp"] = p["tiles"]
        return Attr("amd_wmma", params)
    if p["kind"] == "wmma":
        cta = {k: v for k, v in (("register", p["reg"]), ("warp", p["warp"])) if v}   # as Triton prints it
        params = {"version": p["version"], "isTranspose": p["transposed"], "ctaLayout": cta,
                  "instrShape": p["instr"]}
        if p["cga"]:
            params["CGALayout"] = p["cga"]
        return Attr("amd_wmma", params)
    parent = to_attr(p["parent"])
    return Attr("dot_op", {"opIdx": p["op_idx"], "parent": parent, "kWidth": p["k_width"]})


def _list(v) -> str:
    return "[" + ", ".join(_list(x) if isinstance(x, list) else str(x) for x in v) + "]"


def to_text(p: dict, *, parseable: bool = False) -> str:
    """The case in the spelling Triton 3.9 prints (checked by ``test_text_is_what_triton_prints``).

    Triton 3.9 prints an ``amd_wmma`` it cannot parse back: it drops an empty ``warp`` entry (one
    warp) and never prints ``rank``. ``parseable=True`` adds ``warp = []`` and ``rank = 3`` so that
    Triton's parser accepts the text; our parser reads both forms."""
    if p["kind"] == "mfma":
        s = (f"#ttg.amd_mfma<{{version = {p['version']}, warpsPerCTA = {_list(p['warps'])}, "
             f"instrShape = {_list(p['instr'])}, isTransposed = {str(p['transposed']).lower()}")
        if p["cga"]:
            s += f", CGALayout = {_list(p['cga'])}"
        if any(t != 1 for t in p["tiles"]):
            s += f", tilesPerWarp = {_list(p['tiles'])}"
        if p["ebw"] != 32:
            s += f", elementBitWidth = {p['ebw']}"
        return s + "}>"
    if p["kind"] == "wmma" and "warps" in p:   # Triton 3.6's printer
        s = (f"#ttg.amd_wmma<{{version = {p['version']}, isTranspose = {str(p['transposed']).lower()}, "
             f"warpsPerCTA = {_list(p['warps'])}")
        if p["cga"]:
            s += f", CGALayout = {_list(p['cga'])}"
        if any(t != 1 for t in p["tiles"]):
            s += f", tilesPerWarp = {_list(p['tiles'])}"
        if tuple(p["instr"]) != amd.WMMA_DEFAULT_INSTR_SHAPE:
            s += f", instrShape = {_list(p['instr'])}"
        return s + "}>"
    if p["kind"] == "wmma":
        cta = ", ".join(f"{k} = {_list(v)}" for k, v in (("register", p["reg"]), ("warp", p["warp"]))
                        if v or (parseable and k == "warp"))
        s = f"#ttg.amd_wmma<{{version = {p['version']}, isTranspose = {str(p['transposed']).lower()}"
        if parseable and p["rank"] == 3:
            s += ", rank = 3"
        s += f", ctaLayout = {{{cta}}}"
        if p["cga"]:
            s += f", CGALayout = {_list(p['cga'])}"
        if tuple(p["instr"]) != amd.WMMA_DEFAULT_INSTR_SHAPE:
            s += f", instrShape = {_list(p['instr'])}"
        return s + "}>"
    return (f"#ttg.dot_op<{{opIdx = {p['op_idx']}, parent = {to_text(p['parent'], parseable=parseable)}, "
            f"kWidth = {p['k_width']}}}>")


def ours(case: dict, tv: str = TV):
    """Our layout for the case, following Triton release ``tv`` (default: the installed one)."""
    attr = to_attr(case)
    if attr.kind == "dot_op":
        parent = attr.params["parent"]
        return DOT_OPERAND_PARENTS[parent.kind](attr, parent, case["shape"], triton_version=tv)
    return ENCODINGS[attr.kind](attr, case["shape"], triton_version=tv)


def _bases_of(layout) -> dict:
    f2 = layout.f2_bases()
    return {d: [list(v) for v in f2[d]] for d in ("register", "lane", "warp", "block")}


# ------------------------------------------------------------------------------------------------
# The sweep
# ------------------------------------------------------------------------------------------------
PRINT_EVERY = 3   # every third case also has Triton parse and print our text of its MFMA/WMMA attribute


@pytest.fixture(scope="module")
def sweep():
    pytest.importorskip("triton")
    pytest.importorskip("triton.experimental.gluon.language.amd")
    rng = random.Random(SEED)
    cases = [random_case(rng, i) for i in range(N_CASES)]
    for c in cases[::PRINT_EVERY]:
        p = c if c["kind"] != "dot" else c["parent"]
        c["print"] = [to_text(p, parseable=True), c["shape"], _n_warps(c), 64 if p["kind"] == "mfma" else 32]
    return cases, run_oracle(cases)


def test_registered():
    assert ENCODINGS["amd_mfma"] is amd.mfma_encoding
    assert ENCODINGS["amd_wmma"] is amd.wmma_encoding
    assert DOT_OPERAND_PARENTS["amd_mfma"] is amd.amd_dot_operand
    assert DOT_OPERAND_PARENTS["amd_wmma"] is amd.amd_dot_operand


def test_sweep_matches_triton(sweep):
    cases, answers = sweep
    mismatches, rejected, we_only = [], [], []
    kinds = Counter()
    for c in cases:
        a = answers[c["i"]]
        try:
            got = ours(c)
            err = None
        except LayoutError as e:
            got, err = None, str(e)
        if "error" in a:
            rejected.append((c, a["error"], err))
            continue
        kinds[c["kind"] if c["kind"] != "dot" else "dot/" + c["parent"]["kind"]] += 1
        if err is not None:
            we_only.append((c, err))
            continue
        assert got.in_names == ("register", "lane", "warp", "block")
        assert list(got.out_sizes) == c["shape"]
        if _bases_of(got) != a["bases"]:
            mismatches.append((c, _bases_of(got), a["bases"]))
    print(f"\n{len(cases)} cases; Triton accepted {len(cases) - len(rejected)} ({dict(kinds)}); "
          f"rejected {len(rejected)}")
    for c, why, ours_err in rejected:
        print(f"  Triton rejects {to_text(c)} shape={c['shape']}: {why}\n      ours: {ours_err or 'ACCEPTED'}")
    assert not we_only, f"{len(we_only)} cases Triton accepts but we reject, e.g. {we_only[:3]}"
    if mismatches:
        c, got, want = mismatches[0]
        raise AssertionError(f"{len(mismatches)} mismatches, first: {to_text(c)} shape={c['shape']}\n"
                             f" ours   {got}\n triton {want}")
    assert len(rejected) <= 0.05 * len(cases), f"{len(rejected)} of {len(cases)} cases rejected by Triton"
    # where Triton refuses a case we must refuse it too (no layout for something Triton calls invalid)
    accepted_by_us = [(to_text(c), why) for c, why, ours_err in rejected if ours_err is None]
    assert not accepted_by_us, f"we build layouts Triton rejects: {accepted_by_us[:3]}"
    assert min(kinds.values()) >= 60 and len(kinds) == 4, kinds


#: cases of the per-release sweep (the installed release has the full sweep above)
N_RELEASE_CASES = 240


@pytest.mark.parametrize("release", [r for r in version.SUPPORTED if r != TV])
def test_sweep_matches_each_other_release(release, triton_python):
    """The same differential sweep, smaller, against every other supported Triton release, each in
    its own interpreter (``triton_python``) and each drawn in that release's spelling: our layout
    with ``triton_version=release`` has that release's bases, and we refuse what it refuses."""
    python = triton_python(release)
    rng = random.Random(SEED + int(release.replace(".", "")))
    cases = [random_case(rng, i, release) for i in range(N_RELEASE_CASES)]
    answers = run_oracle(cases, python)
    mismatches, we_only, they_only = [], [], []
    kinds = Counter()
    for c in cases:
        a = answers[c["i"]]
        try:
            got, err = _bases_of(ours(c, release)), None
        except LayoutError as e:
            got, err = None, str(e)
        if "error" in a:
            if err is None:
                they_only.append((to_text(c), c["shape"], a["error"]))
            continue
        kinds[c["kind"] if c["kind"] != "dot" else "dot/" + c["parent"]["kind"]] += 1
        if err is not None:
            we_only.append((to_text(c), c["shape"], err))
        elif got != a["bases"]:
            mismatches.append((to_text(c), c["shape"], got, a["bases"]))
    assert not mismatches, f"Triton {release}: {len(mismatches)} mismatches, first: {mismatches[0]}"
    assert not we_only, f"Triton {release} accepts what we refuse: {we_only[:3]}"
    assert not they_only, f"Triton {release} refuses what we build: {they_only[:3]}"
    assert sum(kinds.values()) >= 0.9 * N_RELEASE_CASES and len(kinds) == 4, kinds


def test_sweep_covers_the_parameter_space(sweep):
    """The seeded sweep really reaches every option the task names (not a vacuous pass)."""
    cases, answers = sweep
    ok = [c for c in cases if "error" not in answers[c["i"]]]
    params = [c if c["kind"] != "dot" else c["parent"] for c in ok]
    mf = [p for p in params if p["kind"] == "mfma"]
    wm = [p for p in params if p["kind"] == "wmma"]
    assert {p["version"] for p in mf} == {1, 2, 3, 4}
    assert {tuple(p["instr"][:2]) for p in mf} == set(amd.MFMA_TILES)
    assert {p["transposed"] for p in mf} == {True, False} and {p["ebw"] for p in mf} == {32, 64}
    assert any(p["tiles"][-1] > 1 for p in mf) and any(p["tiles"][-2] > 1 for p in mf)
    assert any(p["cga"] for p in mf) and any(p["cga"] for p in wm)
    assert {p["version"] for p in wm} == {1, 2, 3} and {p["transposed"] for p in wm} == {True, False}
    assert {p["rank"] for p in wm} == {2, 3}
    assert any(p["reg"] for p in wm) if not LEGACY_WMMA else any(max(p["tiles"]) > 1 for p in wm)
    if version.at_least({"triton_version": TV}, "3.8"):   # the 32x16 shapes came with Triton 3.8
        assert any(tuple(p["instr"][:2]) == (32, 16) for p in wm)
    dots = [c for c in ok if c["kind"] == "dot"]
    assert {(c["parent"]["kind"], c["op_idx"]) for c in dots} == {(k, o) for k in ("mfma", "wmma") for o in (0, 1)}
    assert {c["k_width"] for c in dots} >= {1, 2, 4, 8, 16}
    assert {len(c["shape"]) for c in ok} == {2, 3}
    assert {1, 2, 4, 8, 16} <= {_n_warps(c) for c in ok}
    # shapes both smaller than one instruction tile (replication) and larger (repetition)
    assert any(c["shape"][-1] < 16 for c in ok) and any(c["shape"][-1] >= 128 for c in ok)


def _n_warps(c: dict) -> int:
    p = c if c["kind"] != "dot" else c["parent"]
    if p["kind"] == "mfma":
        n = 1
        for w in p["warps"]:
            n *= w
        return n
    if "warps" in p:
        n = 1
        for w in p["warps"]:
            n *= w
        return n
    return 1 << len(p["warp"])


def test_expressions_agree_with_bases(sweep):
    """Independent of the declared bases: evaluating the layout's expressions gives Triton's bases."""
    cases, answers = sweep
    checked = 0
    for c in cases[:120]:
        a = answers[c["i"]]
        if "error" in a:
            continue
        lay = ours(c)
        evaluated = {d: [list(v) for v in vs] for d, vs in lay.candidate_bases().items()}
        assert evaluated == a["bases"], to_text(c)
        checked += 1
    assert checked >= 100


def test_text_is_what_triton_prints(sweep):
    """Our rendering of each MFMA/WMMA attribute is exactly what Triton prints after parsing it,
    so the text-level tests below feed the parser Triton's own spelling."""
    cases, answers = sweep
    n = 0
    for c in cases:
        a = answers[c["i"]]
        if "print" in c and "printed" in a:
            p = c if c["kind"] != "dot" else c["parent"]
            assert a["printed"] == to_text(p)
            n += 1
    assert n >= 200


def test_sweep_through_text(sweep):
    """The same cases pasted as Triton prints them go through the TTGIR parser unchanged."""
    try:
        from layoutverify.adapters.triton import parse
    except ImportError:
        pytest.skip("layoutverify.adapters.triton.parse is not there yet")
    cases, answers = sweep
    n = 0
    for c in cases[::3]:
        a = answers[c["i"]]
        if "error" in a:
            continue
        printed, parseable = to_text(c), to_text(c, parseable=True)
        assert _bases_of(parse(printed, shape=c["shape"], triton_version=TV)) == a["bases"], printed
        if n % 2:   # the whole type (shape from the type) and Triton-parseable spelling too
            typed = f"tensor<{'x'.join(map(str, c['shape']))}xf16, {parseable}>"
            assert _bases_of(parse(typed, triton_version=TV)) == a["bases"], typed
        n += 1
    assert n >= 200


# ------------------------------------------------------------------------------------------------
# Spellings of older Triton releases, and hand-checked layouts from the AMD instruction tables
# ------------------------------------------------------------------------------------------------
def test_mfma_32x32_tile_matches_the_isa_table():
    """v_mfma_f32_32x32x8f16 D layout (AMD matrix instruction calculator): lane l, register r holds
    row 8*(r//4) + 4*(l//32) + r%4, column l%32 -- independent of Triton."""
    lay = ENCODINGS["amd_mfma"](Attr("amd_mfma", {"version": 3, "warpsPerCTA": [1, 1], "instrShape": [32, 32, 8],
                                                  "isTransposed": False}), [32, 32], **V39)
    t = lay.table().reshape(64, 16, 2)   # [lane, register] since the register index is fastest
    t = t.transpose(1, 0, 2)
    for lane in range(64):
        for r in range(16):
            assert tuple(t[r, lane]) == (8 * (r // 4) + 4 * (lane // 32) + r % 4, lane % 32)


def test_mfma_16x16_tile_matches_the_isa_table():
    """v_mfma_f32_16x16x16f16 D: lane l, register r holds row 4*(l//16) + r, column l%16; the
    transposed layout swaps rows and columns."""
    for transposed in (False, True):
        lay = ENCODINGS["amd_mfma"](Attr("amd_mfma", {"version": 3, "warpsPerCTA": [1, 1], "instrShape": [16, 16, 16],
                                                      "isTransposed": transposed}), [16, 16], **V39)
        t = lay.table().reshape(64, 4, 2).transpose(1, 0, 2)
        for lane in range(64):
            for r in range(4):
                row, col = 4 * (lane // 16) + r, lane % 16
                assert tuple(t[r, lane]) == ((col, row) if transposed else (row, col))


def test_wmma_v2_tile_matches_the_isa_table():
    """RDNA4 WMMA 16x16 f32 accumulator: lane l, VGPR r holds row 8*(l//16) + r, column l%16."""
    lay = ENCODINGS["amd_wmma"](Attr("amd_wmma", {"version": 2, "isTranspose": False, "ctaLayout": {}}), [16, 16], **V39)
    t = lay.table().reshape(32, 8, 2).transpose(1, 0, 2)
    for lane in range(32):
        for r in range(8):
            assert tuple(t[r, lane]) == (8 * (lane // 16) + r, lane % 16)


def test_wmma_v1_tile_matches_the_isa_table():
    """RDNA3 WMMA 16x16 f32 accumulator: lane l, VGPR r holds row 2*r + l//16, column l%16."""
    lay = ENCODINGS["amd_wmma"](Attr("amd_wmma", {"version": 1, "isTranspose": False, "ctaLayout": {}}), [16, 16], **V39)
    t = lay.table().reshape(32, 8, 2).transpose(1, 0, 2)
    for lane in range(32):
        for r in range(8):
            assert tuple(t[r, lane]) == (2 * r + lane // 16, lane % 16)


def test_legacy_spellings_equal_the_current_ones():
    """versionMajor/CTAsPerCGA (MFMA) and warpsPerCTA/tilesPerWarp (WMMA, Triton 3.6's spelling),
    read with Triton 3.9's semantics, mean what Triton 3.9 spells with version/CGALayout and
    ctaLayout (the translation of #8946)."""
    enc, shape = ENCODINGS, [128, 64]
    new = enc["amd_mfma"](Attr("amd_mfma", {"version": 3, "warpsPerCTA": [2, 2], "instrShape": [32, 32, 8],
                                            "isTransposed": True, "CGALayout": [[0, 1]]}), shape, **V39)
    old = enc["amd_mfma"](Attr("amd_mfma", {"versionMajor": 3, "versionMinor": 0, "warpsPerCTA": [2, 2],
                                            "instrShape": [32, 32], "isTransposed": True, "CTAsPerCGA": [1, 2],
                                            "CTASplitNum": [1, 2], "CTAOrder": [1, 0]}), shape, **V39)
    assert new.f2_bases() == old.f2_bases()
    new = enc["amd_wmma"](Attr("amd_wmma", {"version": 2, "isTranspose": False,
                                            "ctaLayout": {"register": [[0, 1]], "warp": [[0, 2], [1, 0]]}}), shape, **V39)
    old = enc["amd_wmma"](Attr("amd_wmma", {"version": 2, "isTranspose": False, "warpsPerCTA": [2, 2],
                                            "tilesPerWarp": [1, 2]}), shape, **V39)
    assert new.f2_bases() == old.f2_bases()


# ------------------------------------------------------------------------------------------------
# Bad input
# ------------------------------------------------------------------------------------------------
MFMA_OK = {"version": 3, "warpsPerCTA": [2, 2], "instrShape": [32, 32, 8], "isTransposed": False}
WMMA_OK = {"version": 2, "isTranspose": False, "ctaLayout": {"warp": [[1, 0]]}}


def _mfma(**changes):
    p = dict(MFMA_OK, **changes)
    return Attr("amd_mfma", {k: v for k, v in p.items() if v is not None})


def _wmma(**changes):
    p = dict(WMMA_OK, **changes)
    return Attr("amd_wmma", {k: v for k, v in p.items() if v is not None})


def test_mfma_without_version_and_with_unknown_keys_as_triton_reads_them():
    """Triton 3.9's parser gives version 0 to an amd_mfma without one and skips keys it does not
    know (a misspelled ``isTranspose`` leaves isTransposed false): seen in its lit tests
    (optimize_epilogue.mlir) and checked against it by tests/test_triton_lit.py. We read them the
    same way and name the ignored key."""
    plain = ENCODINGS["amd_mfma"](_mfma(isTransposed=False), [64, 64], **V39)
    odd = ENCODINGS["amd_mfma"](_mfma(version=None, isTransposed=None, isTranspose=True), [64, 64], **V39)
    assert odd.f2_bases() == plain.f2_bases()
    assert "'isTranspose'" in odd.name and "ignores" in odd.name


@pytest.mark.parametrize("attr, shape, words", [
    (_mfma(instrShape=[8, 8, 4]), [64, 64], ["instrShape", "8x8", "32x32"]),
    (_mfma(instrShape=[32]), [64, 64], ["instrShape", "[M, N, K]"]),
    (_mfma(warpsPerCTA=[3, 2]), [64, 64], ["warpsPerCTA", "3", "power of two"]),
    (_mfma(version=5), [64, 64], ["version 5", "gfx950"]),
    (_mfma(elementBitWidth=16), [64, 64], ["elementBitWidth", "32 or 64"]),
    (_mfma(instrShape=[64, 4, 4]), [64, 64], ["64x4", "isTransposed"]),
    (_mfma(tilesPerWarp=[2, 2, 2]), [64, 64], ["tilesPerWarp", "3 entries, expected 2"]),
    (_mfma(CGALayout=[[1, 1]]), [64, 64], ["CGALayout", "permutation matrix", "[1, 1]"]),
    (_mfma(), [64, 64, 2], ["rank 3", "rank 2"]),
    (_mfma(), [48, 64], ["48", "power of two"]),
    (_mfma(), None, ["needs a tensor shape"]),
    (_mfma(), [1 << 20, 1 << 20], ["elements"]),
    (_wmma(version=4), [64, 64], ["version 4", "WMMA"]),
    (_wmma(version=1, instrShape=[16, 16, 32]), [64, 64], ["instrShape", "v1", "[16, 16, 16]"]),
    (_wmma(ctaLayout={"warp": [[1, 1]]}), [64, 64], ["ctaLayout", "surjective"]),
    (_wmma(ctaLayout={"warp": [[0, 2]]}), [64, 64], ["ctaLayout", "surjective"]),
    (_wmma(ctaLayout={"lanes": []}), [64, 64], ["unknown key 'lanes'"]),
    (_wmma(ctaLayout=[[1, 0]]), [64, 64], ["dictionary"]),
    (_wmma(warpsPerCTA=[2, 3], ctaLayout=None), [64, 64], ["warpsPerCTA", "power of two"]),
    (_wmma(ctaLayout=None), [64, 64], ["ctaLayout"]),
    (_wmma(rank=3), [64, 64], ["basis", "3"]),
    (_wmma(ctaLayout={"warp": 3}), [64, 64], ["ctaLayout.warp", "list of bases"]),
])
def test_bad_amd_parameters(attr, shape, words):
    with pytest.raises(LayoutError) as e:
        ENCODINGS[attr.kind](attr, shape, **V39)
    msg = str(e.value)
    assert "\n" not in msg and f"#ttg.{attr.kind}" in msg
    for w in words:
        assert w in msg, (w, msg)


@pytest.mark.parametrize("parent, dot, words", [
    (_mfma(), {"opIdx": 2, "kWidth": 4}, ["opIdx 2"]),
    (_mfma(), {"opIdx": 0}, ["kWidth", "mandatory"]),
    (_mfma(), {"opIdx": 0, "kWidth": 3}, ["kWidth 3", "power of two"]),
    (_wmma(version=1, instrShape=[16, 16, 16]), {"opIdx": 1, "kWidth": 4}, ["kWidth 4", "v1", "8 or 16"]),
    (_wmma(), {"opIdx": 1, "kWidth": 2}, ["kWidth 2", "v2"]),
    (_mfma(), {"opIdx": 0, "kWidth": 4, "kwidth": 4}, ["no parameter 'kwidth'", "kWidth"]),
    (_mfma(version=7), {"opIdx": 0, "kWidth": 4}, ["version 7"]),
])
def test_bad_dot_operands(parent, dot, words):
    attr = Attr("dot_op", dict(dot, parent=parent))
    with pytest.raises(LayoutError) as e:
        DOT_OPERAND_PARENTS[parent.kind](attr, parent, [64, 64], **V39)
    msg = str(e.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg, (w, msg)


_JUNK = [-1, 0, 3, 5, 64, True, "x", [], [0], [3, 2], [1, 2, 3], [[]], [[1, 0, 0]], [[0, 3]], [[-1, 0]],
         {"warp": 3}, {"warp": [[1, 0]], "register": [[0, 0]]}, {"a": 1}, [2, 2], [16, 16, 16], [64, 4], 1 << 40]


@pytest.mark.parametrize("seed", range(4))
def test_junk_parameters_give_layout_errors(seed):
    """Any value in any parameter: a layout or a LayoutError, never another exception."""
    rng = random.Random(seed)
    bases = [dict(MFMA_OK), dict(WMMA_OK), dict(MFMA_OK, instrShape=[64, 4, 4], isTransposed=True),
             dict(WMMA_OK, version=3, instrShape=[32, 16, 64])]
    keys = list(amd._MFMA_KEYS + amd._WMMA_KEYS) + ["bogus"]
    outcomes = Counter()
    for _ in range(150):
        i = rng.randrange(len(bases))
        params = dict(bases[i])
        for _ in range(rng.randint(1, 2)):
            params[rng.choice(keys)] = rng.choice(_JUNK)
        parent = Attr("amd_mfma" if i % 2 == 0 else "amd_wmma", params)
        shape = rng.choice([[64, 64], [16, 8], [2, 32, 32], None, [0, 4], [64, -1]])
        try:
            if rng.random() < 0.5:
                ENCODINGS[parent.kind](parent, shape, **V39)
            else:
                dot = Attr("dot_op", {"opIdx": rng.choice([0, 1, 2]), "parent": parent,
                                      "kWidth": rng.choice([4, 8, 3, -2, "x"])})
                DOT_OPERAND_PARENTS[parent.kind](dot, parent, shape, **V39)
            outcomes["layout"] += 1
        except LayoutError as e:
            assert "\n" not in str(e)
            outcomes["error"] += 1
    assert outcomes["error"] > 50, outcomes


def test_warp_size_option():
    assert ENCODINGS["amd_mfma"](_mfma(), [64, 64], warp_size=64, **V39).in_size("lane") == 64
    assert ENCODINGS["amd_wmma"](_wmma(), [64, 64], warp_size=32, **V39).in_size("lane") == 32
    with pytest.raises(LayoutError, match="64 threads per warp"):
        ENCODINGS["amd_mfma"](_mfma(), [64, 64], warp_size=32, **V39)
