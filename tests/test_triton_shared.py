"""Triton shared-memory encodings (adapters/triton/shared.py) against the installed Triton and
against the formulas in Triton's and NVIDIA's documentation.

* Differential sweep (seeded): random swizzled_shared / nvmma_shared / shared_linear /
  padded_shared encodings and shapes; each case's offset/block bases must equal what Triton's
  ``GluonOpBuilder.to_linear_layout`` returns. Triton runs in one subprocess; cases that we
  reject (Triton is expected to abort on them) run in a forked child so that an abort costs one
  fork, and an unexpected abort restarts the worker. Every rejection is counted and reported.
* padded_shared has no linear layout in Triton (``to_linear_layout`` aborts): the oracle is
  Triton's own printer/parser (which form it prints, the bases it keeps) and its shared-memory
  allocator (the padded buffer size).
* Documentation formulas, independent of Triton's code: the swizzle tables of
  TritonGPUAttrDefs.td, the PTX shared-memory swizzle modes for nvmma_shared, the padding
  examples of the padded_shared docs.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from collections import Counter

import numpy as np
import pytest

from layoutverify.adapters.triton import shared as S
from layoutverify.adapters.triton import version
from layoutverify.adapters.triton.attr import ENCODINGS, Attr
from layoutverify.core.errors import LayoutError, UnsupportedError

SEED = 20250611

#: the release compared with: the installed Triton's (the oracle)
TV = version.default()
#: Triton 3.6's ``GluonOpBuilder.to_linear_layout`` wraps every result in a LinearEncodingAttr,
#: so it cannot return a shared layout (it fails "Expected input dimension 0 to be 'register'");
#: Triton 3.7 returns a SharedLinearLayout
NO_SHARED_LL = ("Triton 3.6's GluonOpBuilder.to_linear_layout converts only distributed layouts (shared ones "
                "fail 'Expected input dimension 0 to be register'), so there is no shared-layout oracle")
#: Gluon's PaddedSharedLayout: Triton 3.6 has ``block_bases`` in element units (builder and
#: reader); 3.7 takes ``cga_layout`` in CTA tiles but reads it back in elements (fixed by #10392
#: in 3.8); 3.8+ uses CTA tiles both ways
PADDED_BLOCK_IN_ELEMENTS = TV == "3.6"
PADDED_VIEW_IN_ELEMENTS = TV in ("3.6", "3.7")

# ---------------------------------------------------------------------------------------------
# The oracle worker (runs in a subprocess: Triton aborts the process on encodings it rejects).
# ---------------------------------------------------------------------------------------------
WORKER = r'''
import json, os, sys, tempfile
from triton._C.libtriton import ir, gluon_ir, passes
from triton.experimental.gluon.language import _layouts
# Gluon's Python wrapper refuses a layout with no offset bases (a 1-element tile per CTA), which
# Triton's C++ side produces and returns; read the fields without that check.
_layouts.SharedLinearLayout.__post_init__ = lambda self: None
ctx = ir.context(); ir.load_dialects(ctx); b = gluon_ir.GluonOpBuilder(ctx)
tmpdir = tempfile.mkdtemp()

def build(c):
    k = c["kind"]
    if k == "swizzled_shared":
        return b.get_swizzled_shared_layout(c["vec"], c["perPhase"], c["maxPhase"], c["order"], c["cga"])
    if k == "nvmma_shared":
        return b.get_nvmma_shared_layout(c["swizzle"], c["bits"], c["transposed"], c["fp4"], c["cga"], c["rank"])
    if k == "shared_linear":
        return b.get_shared_linear_layout(c["offset"], c["block"], 16)
    if k == "padded_shared":
        return b.get_padded_shared_layout([p[0] for p in c["pairs"]], [p[1] for p in c["pairs"]],
                                          c["offset"], c.get("block_elems", c["cga"]), c["shape"])
    raise ValueError(k)

def text_of(attr, shape):
    t = str(b.get_shared_mem_desc_ty(b.get_int8_ty(), shape, attr, shape))
    start = t.index("#ttg.")
    end = t.rindex(", #ttg.shared_memory")
    return t[start:end]

def alloc_size(text, shape):
    s = "x".join(map(str, shape))
    ty = "!ttg.memdesc<%sxi8, %s, #ttg.shared_memory, mutable>" % (s, text)
    src = ('module attributes {"ttg.num-warps" = 4 : i32, "ttg.num-ctas" = 1 : i32, '
           '"ttg.threads-per-warp" = 64 : i32, ttg.target = "hip:gfx950"} {\n'
           '  tt.func public @f() {\n'
           '    %%0 = ttg.local_alloc : () -> %s\n'
           '    ttg.local_dealloc %%0 : %s\n'
           '    tt.return\n  }\n}\n') % (ty, ty)
    path = os.path.join(tmpdir, "m.mlir")
    with open(path, "w") as f:
        f.write(src)
    m = ir.parse_mlir_module(path, ctx)
    m.context = ctx
    pm = ir.pass_manager(ctx)
    passes.ttgpuir.add_allocate_shared_memory(pm)
    pm.run(m, "alloc")
    return m.get_int_attr("ttg.shared")

def gluon_view(text, shape, n_ctas):
    """Triton's own parse of the printed text, read back as a gluon layout."""
    s = "x".join(map(str, shape))
    ty = "!ttg.memdesc<%sxi8, %s, #ttg.shared_memory, mutable>" % (s, text)
    src = ('module attributes {"ttg.num-warps" = 4 : i32, "ttg.num-ctas" = %d : i32, "ttg.threads-per-warp" = 32 : i32} {\n'
           '  tt.func public @f() {\n    %%0 = ttg.local_alloc : () -> %s\n    tt.return\n  }\n}\n') % (n_ctas, ty)
    path = os.path.join(tmpdir, "v.mlir")
    with open(path, "w") as f:
        f.write(src)
    m = ir.parse_mlir_module(path, ctx)
    ops = []
    m.walk(lambda op: ops.append(op))
    for op in ops:
        if op.get_name() == "ttg.local_alloc":
            lay = b.get_gluon_layout_from_memdesc(op.get_result(0))
            blocks = lay.cga_layout if hasattr(lay, "cga_layout") else lay.block_bases   # 3.6: block_bases
            return {"offset": [list(x) for x in lay.offset_bases], "block": [list(x) for x in blocks],
                    "pairs": [list(x) for x in lay.interval_padding_pairs], "shape": list(lay.shape)}
    raise RuntimeError("no local_alloc")

def run(c):
    attr = build(c)
    out = {"id": c["id"], "ok": True}
    if c.get("text"):
        out["text"] = text_of(attr, c["shape"])
    if c["kind"] == "padded_shared":
        out["view"] = gluon_view(out["text"], c["shape"], 1 << len(c["cga"]))
        if c.get("alloc"):
            out["alloc"] = alloc_size(out["text"], c["shape"])
        return out
    ll = b.to_linear_layout(attr, c["shape"])
    out["offset"] = [list(x) for x in ll.offset_bases]
    out["block"] = [list(x) for x in ll.block_bases]
    return out

def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    c = json.loads(line)
    if not c.get("risky"):
        try:
            emit(run(c))
        except Exception as e:
            emit({"id": c["id"], "ok": False, "why": "exception: " + str(e).splitlines()[0][:200]})
        continue
    # Expected to abort: run it in a forked child, report how it ended.
    r, w = os.pipe()
    errfile = os.path.join(tmpdir, "err.txt")
    pid = os.fork()
    if pid == 0:
        os.close(r)
        fd = os.open(errfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 2)
        try:
            data = json.dumps(run(c))
        except Exception as e:
            data = json.dumps({"id": c["id"], "ok": False, "why": "exception: " + str(e).splitlines()[0][:200]})
        os.write(w, data.encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        data += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if data:
        emit(json.loads(data))
    else:
        try:
            err = open(errfile).read().strip().splitlines()
        except OSError:
            err = []
        emit({"id": c["id"], "ok": False, "why": "abort: " + (err[0][:200] if err else "status %d" % status)})
'''


def run_oracle(cases: list[dict], timeout: float = 240.0) -> dict[int, dict]:
    """Run Triton on every case; an unexpected abort of the worker is recorded against the case
    it was working on and the worker restarts after it."""
    results: dict[int, dict] = {}
    pending = list(cases)
    while pending:
        with tempfile.TemporaryFile("w+") as err:
            proc = subprocess.run([sys.executable, "-c", WORKER], input="".join(json.dumps(c) + "\n" for c in pending),
                                  stdout=subprocess.PIPE, stderr=err, text=True, timeout=timeout)
            err.seek(0)
            err_lines = [ln for ln in err.read().splitlines() if ln.strip() and "leaked" not in ln]
        for line in proc.stdout.splitlines():
            r = json.loads(line)
            results[r["id"]] = r
        rest = [c for c in pending if c["id"] not in results]
        if not rest:
            break
        why = next((ln for ln in err_lines if "ERROR" in ln or "Error" in ln), err_lines[0] if err_lines else "")
        results[rest[0]["id"]] = {"id": rest[0]["id"], "ok": False, "why": f"abort (unexpected): {why[:200]}"}
        pending = rest[1:]
    return results


# ---------------------------------------------------------------------------------------------
# Case generation (seeded)
# ---------------------------------------------------------------------------------------------
def _pow2(rng, lo, hi):
    return 1 << rng.randint(lo, hi)


def _random_cga(rng, rank, n_bits):
    """``n_bits`` block bases; each splits one dim (next power of two of the tile) or copies."""
    counters = [0] * rank
    bases = []
    for _ in range(n_bits):
        if rng.random() < 0.2:
            bases.append([0] * rank)
            continue
        d = rng.randrange(rank)
        v = [0] * rank
        v[d] = 1 << counters[d]
        counters[d] += 1
        bases.append(v)
    return bases


def _ctas_bits(rng):
    return rng.choice([0, 0, 0, 1, 1, 2])          # 1, 2 or 4 CTAs


def _swizzled_case(rng, cid):
    rank = rng.choice([2, 2, 2, 3, 3, 1])
    cga = _random_cga(rng, rank, _ctas_bits(rng))
    shape = [_pow2(rng, 0 if rank == 3 else 1, 7 if rank < 3 else 5) for _ in range(rank)]
    return {"id": cid, "kind": "swizzled_shared", "vec": _pow2(rng, 0, 4), "perPhase": _pow2(rng, 0, 3),
            "maxPhase": _pow2(rng, 0, 4), "order": rng.sample(range(rank), rank), "cga": cga, "shape": shape,
            "rank": rank}


def _nvmma_case(rng, cid):
    rank = rng.choice([2, 2, 2, 3])
    swizzle = rng.choice(S.NVMMA_SWIZZLE_WIDTHS)
    bits = rng.choice([8, 16, 16, 32, 64, 4])
    fp4 = swizzle == 128 and bits == 8 and rng.random() < 0.4
    transposed = rng.random() < 0.4
    cga = _random_cga(rng, rank, _ctas_bits(rng))
    split = [1] * rank
    for v in cga:
        nz = [i for i, c in enumerate(v) if c]
        if nz:
            split[nz[0]] *= 2
    contig = 0 if transposed else rank - 1
    row_elems = 8 * max(swizzle, 16) // bits // (2 if fp4 else 1)
    shape = []
    for d in range(rank):
        if d == contig:
            # a multiple of the swizzle row (per CTA) mostly, sometimes smaller
            s = row_elems * split[d] * rng.choice([1, 1, 2, 4, 8]) if rng.random() < 0.96 else max(1, row_elems // 2)
        elif rank == 3 and d == (1 if transposed else 0) and not transposed:
            s = _pow2(rng, 0, 3)                        # batch dim
        else:
            s = _pow2(rng, 3, 9) * split[d] if rng.random() < 0.97 else _pow2(rng, 0, 2)
        shape.append(min(s, 1024))
    if _prod(shape) > 1 << 17:
        shape[rng.randrange(rank)] = max(1, shape[rng.randrange(rank)] // 8)
    return {"id": cid, "kind": "nvmma_shared", "swizzle": swizzle, "bits": bits, "transposed": transposed,
            "fp4": fp4, "cga": cga, "shape": shape, "rank": rank}


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def _random_bijective_bases(rng, shape):
    """A shuffle of the unit bases of ``shape`` (each moves one dim by a power of two)."""
    units = [[(1 << j) if i == d else 0 for i in range(len(shape))] for d, s in enumerate(shape)
             for j in range(s.bit_length() - 1)]
    rng.shuffle(units)
    return units


def _shared_linear_case(rng, cid):
    rank = rng.choice([1, 2, 3])
    shape = [_pow2(rng, 0, 5) for _ in range(rank)]
    if _prod(shape) == 1:
        shape[0] = 4
    units = _random_bijective_bases(rng, shape)
    n_block = min(rng.choice([0, 0, 1, 2]), len(units) - 1)
    block, offset = units[:n_block], units[n_block:]
    if rng.random() < 0.3 and offset:                 # a swizzle-like basis: not a unit vector
        i = rng.randrange(len(offset))
        j = rng.randrange(len(offset))
        if i != j:
            offset[i] = [a ^ c for a, c in zip(offset[i], offset[j])]
    if rng.random() < 0.2:
        block.append([0] * rank)                     # a copy across CTAs
    return {"id": cid, "kind": "shared_linear", "offset": offset, "block": block, "shape": shape, "rank": rank}


def _padded_case(rng, cid, alloc):
    rank = rng.choice([1, 2, 2, 3])
    shape = [_pow2(rng, 0, 6 if rank < 3 else 4) for _ in range(rank)]
    n_block = rng.choice([0, 0, 0, 1])
    if rng.random() < 0.5 or n_block:
        order = rng.sample(range(rank), rank)
        cga = _random_cga(rng, rank, n_block)
        cga = [v for v in cga if any(v)]               # padded layouts cannot copy across CTAs
        split = [1] * rank
        for v in cga:
            split[next(i for i, c in enumerate(v) if c)] *= 2
        if any(s < k for s, k in zip(shape, split)):
            cga = []
            split = [1] * rank
        per_cta = [s // k for s, k in zip(shape, split)]
        offset = [[(1 << j) if i == d else 0 for i in range(rank)] for d in order
                  for j in range(per_cta[d].bit_length() - 1)]
    else:
        offset = _random_bijective_bases(rng, shape)
        cga = []
    intervals = rng.sample([1, 2, 4, 8, 16, 32, 64, 128, 256], rng.choice([1, 1, 2, 3]))
    pairs = [[i, _pow2(rng, 0, 3)] for i in intervals]
    case = {"id": cid, "kind": "padded_shared", "pairs": pairs, "offset": offset, "cga": cga, "shape": shape,
            "rank": rank, "text": True, "alloc": alloc and not cga}
    if PADDED_BLOCK_IN_ELEMENTS:
        case["block_elems"] = _block_in_elements(case)
    return case


def _block_in_elements(c: dict) -> list[list[int]]:
    """A padded case's CGA bases (in CTA tiles) scaled to elements, as Triton prints them."""
    per_cta = [1] * c["rank"]
    for v in c["offset"]:
        d = next(i for i, x in enumerate(v) if x)
        per_cta[d] = max(per_cta[d], 2 * v[d])
    return [[x * per_cta[i] for i, x in enumerate(v)] for v in c["cga"]]


# ---------------------------------------------------------------------------------------------
# Our side
# ---------------------------------------------------------------------------------------------
def to_attr(c: dict) -> Attr:
    k = c["kind"]
    if k == "swizzled_shared":
        p = {"vec": c["vec"], "perPhase": c["perPhase"], "maxPhase": c["maxPhase"], "order": c["order"]}
    elif k == "nvmma_shared":
        p = {"swizzlingByteWidth": c["swizzle"], "transposed": c["transposed"], "elementBitWidth": c["bits"]}
        if c["fp4"]:
            p["fp4Padded"] = True
        if not c["cga"] and c["rank"] != 2:
            p["rank"] = c["rank"]
    elif k == "shared_linear":
        return Attr(k, {"offset": c["offset"], "block": c["block"]})
    else:
        raise ValueError(k)
    if c["cga"]:
        p["CGALayout"] = c["cga"]
    return Attr(k, p)


def ours(c: dict):
    """``(offset_bases, block_bases)`` or the LayoutError message (for the installed release)."""
    try:
        lay = ENCODINGS[c["kind"]](to_attr(c), c["shape"], triton_version=TV)
    except UnsupportedError as e:
        return "UNSUPPORTED: " + str(e)
    except LayoutError as e:
        return str(e)
    assert list(lay.out_sizes) == list(c["shape"]), (lay.out_dims, c["shape"])
    assert lay.kind == "memory"
    bases = lay.f2_bases()
    assert bases is not None
    return ([list(v) for v in bases["offset"]], [list(v) for v in bases.get("block", [])])


def _edge_cases(start):
    """Deterministic corners: every swizzle width x element width x transposed on shapes at,
    below and past one swizzle row / one TMA box (256), fp4Padded, rank 1, batch dims."""
    out = []

    def add(**kw):
        kw.setdefault("fp4", False)
        kw.setdefault("cga", [])
        kw["rank"] = len(kw["shape"])
        out.append(dict(kw, id=start + len(out), kind="nvmma_shared"))

    for swizzle in S.NVMMA_SWIZZLE_WIDTHS:
        for bits in (4, 8, 16, 32, 64):
            row = 8 * max(swizzle, 16) // bits
            for transposed in (False, True):
                shapes = [[8, row], [512, 2 * row], [16, 4 * row], [512, 512] if row <= 512 else [8, row]]
                for shp in shapes:
                    shp = shp[::-1] if transposed else shp
                    add(swizzle=swizzle, bits=bits, transposed=transposed, shape=shp)
                batch = [row, 4, 16] if transposed else [2, 8, row]
                if not (transposed and swizzle == 0):
                    add(swizzle=swizzle, bits=bits, transposed=transposed, shape=batch)
    for transposed in (False, True):
        for shp in ([8, 64], [128, 128], [64, 256], [2, 16, 64]):
            if transposed and len(shp) == 3:
                shp = [64, 2, 16]
            add(swizzle=128, bits=8, transposed=transposed, fp4=True, shape=shp[::-1] if transposed and len(shp) == 2 else shp)
    add(swizzle=0, bits=16, transposed=False, shape=[64])
    add(swizzle=0, bits=8, transposed=False, shape=[1024], cga=[[1]])
    add(swizzle=128, bits=16, transposed=False, shape=[64, 64], cga=[[1, 0], [0, 1]])
    add(swizzle=64, bits=16, transposed=True, shape=[64, 64], cga=[[0, 0], [0, 1]])
    for vec, pp, mp, shp, order, cga in [(8, 1, 8, [8, 8], [1, 0], []), (4, 2, 8, [64, 4], [0, 1], []),
                                         (1, 1, 1, [1, 1], [1, 0], [[0, 1]]), (2, 1, 4, [32], [0], [[1]]),
                                         (2, 4, 4, [4, 8, 16], [2, 0, 1], [[0, 0, 1], [1, 0, 0]]),
                                         (16, 1, 16, [256, 256], [1, 0], [[1, 0], [2, 0]])]:
        out.append({"id": start + len(out), "kind": "swizzled_shared", "vec": vec, "perPhase": pp,
                    "maxPhase": mp, "order": order, "cga": cga, "shape": shp, "rank": len(shp)})
    return out


def _sweep_cases():
    rng = random.Random(SEED)
    cases = []
    for _ in range(330):
        cases.append(_swizzled_case(rng, len(cases)))
    for _ in range(380):
        cases.append(_nvmma_case(rng, len(cases)))
    for _ in range(40):
        cases.append(_shared_linear_case(rng, len(cases)))
    for i in range(50):
        cases.append(_padded_case(rng, len(cases), alloc=i < 25))
    cases.extend(_edge_cases(len(cases)))
    # Ask Triton for its printed text of a sample, to test the text route (parser).
    for c in cases[::7]:
        c["text"] = True
    for c in cases:
        if c["kind"] != "padded_shared":
            c["ours"] = ours(c)
            c["risky"] = isinstance(c["ours"], str)
    return cases


@pytest.fixture(scope="module")
def sweep():
    pytest.importorskip("triton")
    try:
        from triton._C.libtriton import gluon_ir  # noqa: F401
    except Exception:
        pytest.skip("this Triton has no Gluon builder (needs Triton >= 3.5)")
    cases = _sweep_cases()
    if TV == "3.6":   # no shared-layout oracle there: ask only about padded layouts (printer, allocator)
        cases = [c for c in cases if c["kind"] == "padded_shared"]
    wire = [{k: v for k, v in c.items() if k != "ours"} for c in cases]
    results = run_oracle(wire)
    return cases, results


def _need_shared_ll():
    if TV == "3.6":
        pytest.skip(NO_SHARED_LL)


def _report(name, counter: Counter, total: int):
    lines = [f"{name}: {total} cases"] + [f"  {n:4d} x {why}" for why, n in counter.most_common()]
    print("\n".join(lines))


def _non_injective(r, c):
    """Triton's answer stores some element at several offsets (more offset bits than elements)."""
    per_cta_bits = sum(s.bit_length() - 1 for s in c["shape"]) - sum(1 for v in r["block"] if any(v))
    return any(not any(v) for v in r["offset"]) and len(r["offset"]) > per_cta_bits


def _differential(cases, results, kind):
    checked, agreed_reject, unsupported = 0, 0, 0
    triton_rejects: Counter = Counter()
    mismatches, we_reject_only, triton_reject_only = [], [], []
    for c in cases:
        if c["kind"] != kind:
            continue
        r = results[c["id"]]
        mine = c["ours"]
        if not r["ok"]:
            triton_rejects[r["why"].split(":")[0] + ": " + r["why"].split(":", 1)[-1].strip()[:90]] += 1
            if isinstance(mine, str):
                agreed_reject += 1
            else:
                triton_reject_only.append((c, r["why"]))
            continue
        if isinstance(mine, str) and mine.startswith("UNSUPPORTED") and _non_injective(r, c):
            unsupported += 1                          # documented: Triton's own answer is degenerate
            continue
        if isinstance(mine, str):
            we_reject_only.append((c, mine))
            continue
        checked += 1
        if mine != (r["offset"], r["block"]):
            mismatches.append((c, mine, (r["offset"], r["block"])))
    total = sum(1 for c in cases if c["kind"] == kind)
    _report(f"{kind}: {checked} equal-checked, {agreed_reject} rejected by both, {unsupported} refused by us "
            "(Triton's layout non-injective); Triton rejections", triton_rejects, total)
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[0]}"
    assert not we_reject_only, f"we reject what Triton accepts: {we_reject_only[:3]}"
    assert not triton_reject_only, f"Triton rejects what we accept: {triton_reject_only[:3]}"
    assert sum(triton_rejects.values()) <= 0.15 * total, triton_rejects
    return checked


def test_swizzled_shared_matches_triton(sweep):
    _need_shared_ll()
    cases, results = sweep
    n = _differential(cases, results, "swizzled_shared")
    assert n >= 300


def test_nvmma_shared_matches_triton(sweep):
    _need_shared_ll()
    cases, results = sweep
    n = _differential(cases, results, "nvmma_shared")
    assert n >= 300
    # every swizzle width x element width was exercised
    seen = {(c["swizzle"], c["bits"], c["transposed"]) for c in cases
            if c["kind"] == "nvmma_shared" and results[c["id"]]["ok"]}
    for w in S.NVMMA_SWIZZLE_WIDTHS:
        for b in (8, 16, 32):
            assert {(w, b, False), (w, b, True)} <= seen, (w, b)
    assert any(c["fp4"] and results[c["id"]]["ok"] for c in cases if c["kind"] == "nvmma_shared")


def test_shared_linear_matches_triton(sweep):
    _need_shared_ll()
    cases, results = sweep
    assert _differential(cases, results, "shared_linear") >= 30


def _parse_padded_text(text: str) -> Attr:
    """Test-only reader for Triton's printed padded_shared text (the project parser may not exist)."""
    import ast
    import re
    m = re.fullmatch(r"#ttg\.padded_shared<\[(.*?)\]\s*\{(.*)\}>", text)
    assert m, text
    pairs = [[int(x) for x in p.split(":+")] for p in m.group(1).split(",")]
    params = {"interval_padding_pairs": pairs}
    for key, val in re.findall(r"(\w+) = (\[[\[\]\d, ]*\])", m.group(2)):
        params[key] = ast.literal_eval(val)
    return Attr("padded_shared", params, text=text)


def test_padded_shared_against_triton_printer_and_allocator(sweep):
    cases, results = sweep
    n_alloc = n_short = 0
    for c in cases:
        if c["kind"] != "padded_shared":
            continue
        r = results[c["id"]]
        assert r["ok"], (c, r)
        attr = _parse_padded_text(r["text"])
        lay = S.padded_shared_layout(attr, c["shape"])
        # the bases we handed to Triton (offset; block in element units as Triton prints them)
        bases = lay.f2_bases()
        assert [list(v) for v in bases["offset"]] == [list(v) for v in r["view"]["offset"]], (c, r["text"])
        if "order" in attr.params:
            n_short += 1                              # Triton chose the identity short form
        # ... and the block bases: the CGA tiles, scaled to elements as Triton prints them
        want_block = _block_in_elements(c)
        assert [list(v) for v in bases.get("block", [])] == want_block, (c, r["text"])
        assert r["view"]["block"] == (want_block if PADDED_VIEW_IN_ELEMENTS else c["cga"])
        assert r["view"]["offset"] == c["offset"]
        assert lay.padding == tuple(tuple(p) for p in c["pairs"])
        if "alloc" in r:
            n_alloc += 1
            n_per_cta = 1 << len(c["offset"])
            assert S.padded_size(lay.padding, n_per_cta) == r["alloc"], (c, r)
            # the last element sits in the last slot
            last = int(np.asarray(S.E.evaluate(lay.physical_offset, {"offset": np.array([n_per_cta - 1])}))[0])
            assert last == r["alloc"] - 1
    assert n_alloc >= 20 and n_short >= 10


def test_text_route_through_parser(sweep):
    """Triton-printed text through the project's TTGIR parser (once it exists)."""
    try:
        from layoutverify.adapters import triton as T
        parse = T.parse
        import layoutverify.adapters.triton.parser  # noqa: F401
    except (ImportError, AttributeError):
        pytest.skip("layoutverify.adapters.triton.parser is not written yet")
    cases, results = sweep
    n = n_padded = 0
    for c in cases:
        r = results[c["id"]]
        if not r.get("ok") or "text" not in r:
            continue
        lay = parse(r["text"], shape=c["shape"], triton_version=TV)
        if c["kind"] == "padded_shared":
            assert [list(v) for v in lay.f2_bases()["offset"]] == c["offset"], r["text"]
            assert lay.padding == tuple(tuple(p) for p in c["pairs"])
            n_padded += 1
            continue
        bases = lay.f2_bases()
        assert ([list(v) for v in bases["offset"]], [list(v) for v in bases.get("block", [])]) == \
               (r["offset"], r["block"]), r["text"]
        n += 1
    assert n >= (0 if TV == "3.6" else 100) and n_padded >= 40


# ---------------------------------------------------------------------------------------------
# Documentation formulas (independent of Triton's code)
# ---------------------------------------------------------------------------------------------
def _memory_table(lay):
    """``t[offset] = flat logical index`` for a single-CTA layout."""
    return lay.flat_table()


# TritonGPUAttrDefs.td, SwizzledSharedEncodingAttr: memory rows; the tensor is [0, 1, ..., n-1].
SWIZZLE_DOC = [
    ((1, 1, 4), [[0, 1, 2, 3], [5, 4, 7, 6], [10, 11, 8, 9], [15, 14, 13, 12]]),
    ((1, 2, 4), [[0, 1, 2, 3], [4, 5, 6, 7], [9, 8, 11, 10], [13, 12, 15, 14]]),
    ((1, 1, 2), [[0, 1, 2, 3], [5, 4, 7, 6], [8, 9, 10, 11], [13, 12, 15, 14],
                 [16, 17, 18, 19], [21, 20, 23, 22], [24, 25, 26, 27], [29, 28, 31, 30]]),
    ((1, 2, 2), [[0, 1, 2, 3], [4, 5, 6, 7], [9, 8, 11, 10], [13, 12, 15, 14],
                 [16, 17, 18, 19], [20, 21, 22, 23], [25, 24, 27, 26], [29, 28, 31, 30]]),
    ((2, 1, 4), [[0, 1, 2, 3, 4, 5, 6, 7], [10, 11, 8, 9, 14, 15, 12, 13],
                 [20, 21, 22, 23, 16, 17, 18, 19], [30, 31, 28, 29, 26, 27, 24, 25]]),
]

# TritonGPUAttrDefs.td, AMDRotatingSharedEncodingAttr.
ROTATING_DOC = [
    ((1, 1, 2), [[0, 1, 2, 3], [5, 4, 7, 6], [9, 8, 11, 10], [12, 13, 14, 15],
                 [16, 17, 18, 19], [21, 20, 23, 22], [25, 24, 27, 26], [28, 29, 30, 31]]),
    ((1, 2, 2), [[0, 1, 2, 3], [4, 5, 6, 7], [9, 8, 11, 10], [13, 12, 15, 14],
                 [17, 16, 19, 18], [21, 20, 23, 22], [24, 25, 26, 27], [28, 29, 30, 31]]),
    ((1, 1, 4), [[0, 1, 2, 3], [5, 4, 7, 6], [10, 11, 8, 9], [15, 14, 13, 12],
                 [17, 16, 19, 18], [20, 21, 22, 23], [27, 26, 25, 24], [30, 31, 28, 29]]),
]


@pytest.mark.parametrize("kind,params,rows", [("swizzled_shared", p, r) for p, r in SWIZZLE_DOC]
                         + [("amd_rotating_shared", p, r) for p, r in ROTATING_DOC])
def test_documented_swizzle_tables(kind, params, rows):
    vec, per_phase, max_phase = params
    shape = [len(rows), len(rows[0])]
    lay = ENCODINGS[kind](Attr(kind, {"vec": vec, "perPhase": per_phase, "maxPhase": max_phase,
                                      "order": [1, 0]}), shape)
    assert _memory_table(lay).tolist() == [v for row in rows for v in row]


def test_swizzle_formula_random():
    """Memory (r, c) holds column ((c // vec) ^ ((r // perPhase) % maxPhase)) * vec + c % vec, and
    with order [0, 1] the roles of dim0 and dim1 swap."""
    rng = random.Random(SEED + 1)
    for _ in range(60):
        vec, per_phase, max_phase = _pow2(rng, 0, 3), _pow2(rng, 0, 3), _pow2(rng, 0, 3)
        ncols = vec * max_phase * _pow2(rng, 0, 2)
        nrows = _pow2(rng, 0, 6)
        transposed = rng.random() < 0.5
        shape = [ncols, nrows] if transposed else [nrows, ncols]
        lay = S.swizzled_shared_layout(Attr("swizzled_shared", {"vec": vec, "perPhase": per_phase,
                                                                "maxPhase": max_phase,
                                                                "order": [0, 1] if transposed else [1, 0]}), shape)
        off = np.arange(nrows * ncols)
        r, c = off // ncols, off % ncols
        col = ((c // vec) ^ ((r // per_phase) % max_phase)) * vec + c % vec
        want = np.stack([col, r], 1) if transposed else np.stack([r, col], 1)
        assert np.array_equal(lay.table(), want), (vec, per_phase, max_phase, shape)


def test_one_cta_swizzled_shared_is_the_general_construction():
    """The written-out one-CTA swizzled layout (``_swizzled_one_cta``) against Triton's
    construction (tile, then the CTA/CGA combine), for every small parameter choice: sizes below
    ``vec * maxPhase`` (the column wraps), dims of size 1, both orders."""
    sizes = [1, 2, 4, 8, 32, 128]
    n = 0
    for vec in (1, 2, 4, 8):
        for per_phase in (1, 2, 8):
            for max_phase in (1, 2, 4, 8):
                for order in ([1, 0], [0, 1]):
                    attr = Attr("swizzled_shared", {"vec": vec, "perPhase": per_phase, "maxPhase": max_phase,
                                                    "order": order})
                    for shape in ([a, b] for a in sizes for b in sizes):
                        fast = S.swizzled_shared_layout(attr, shape)
                        slow = S._swizzled_general(attr, vec, per_phase, max_phase, order, shape)
                        assert (fast.in_dims, fast.out_dims) == (slow.in_dims, slow.out_dims), (attr.params, shape)
                        assert fast.f2_bases() == slow.f2_bases(), (attr.params, shape)
                        n += 1
    assert n == 4 * 3 * 4 * 2 * 36


def _ptx_swizzle(byte_addr: np.ndarray, swizzle_bytes: int) -> np.ndarray:
    """PTX swizzling modes: 16-byte chunk bits [4, 4+log2(W/16)) XOR-ed with bits from 7 up."""
    if swizzle_bytes == 0:
        return byte_addr
    mask = swizzle_bytes // 16 - 1
    return byte_addr ^ (((byte_addr >> 7) & mask) << 4)


@pytest.mark.parametrize("swizzle", [32, 64, 128])
@pytest.mark.parametrize("bits", [8, 16, 32])
@pytest.mark.parametrize("transposed", [False, True])
def test_nvmma_matches_ptx_swizzle_modes(swizzle, bits, transposed):
    """One swizzle atom wide, several atoms tall: element at offset o (byte o*bits/8) is the
    logical element whose unswizzled byte address is the PTX swizzle of that byte address."""
    row = 8 * swizzle // bits                       # elements per swizzle row
    rows = 64
    shape = [row, rows] if transposed else [rows, row]
    lay = S.nvmma_shared_layout(Attr("nvmma_shared", {"swizzlingByteWidth": swizzle, "transposed": transposed,
                                                      "elementBitWidth": bits}), shape)
    off = np.arange(rows * row)
    byte = off * bits // 8
    lin = _ptx_swizzle(byte, swizzle) * 8 // bits + off % max(1, 8 // bits)
    r, c = lin // row, lin % row
    want = np.stack([c, r], 1) if transposed else np.stack([r, c], 1)
    assert np.array_equal(lay.table(), want)


def test_nvmma_unswizzled_is_row_major():
    lay = S.nvmma_shared_layout(Attr("nvmma_shared", {"swizzlingByteWidth": 0, "transposed": False,
                                                      "elementBitWidth": 16}), [16, 32])
    assert lay.flat_table().tolist() == list(range(16 * 32))


def test_padded_documented_examples():
    # TritonGPUAttrDefs.td: [2:+1, 4:+2] -> e0 e1 p e2 e3 p p p e4 e5 p e6 e7 p p p
    pairs = [(2, 1), (4, 2)]
    slots = [int(S.E.evaluate(S.physical_offset_expr(pairs), {"offset": np.array([i])})[0]) for i in range(8)]
    assert slots == [0, 1, 3, 4, 8, 9, 11, 12]
    # [2:+2] {offset = [[2], [1]]}: x0, x2, p0, p1, x1, x3, p2, p3
    attr = Attr("padded_shared", {"interval_padding_pairs": [[2, 2]], "offset": [[2], [1]], "block": []})
    addr = S.padded_address_layout(attr, [4])
    assert addr.table()[:, 0].tolist() == [0, 4, 1, 5]
    # [16:+1] {offset = [[0, 1], [0, 2], [2, 0], [4, 0], [1, 0]]}: rows 0, 2, 4, 6, pad, rows 1, 3, 5, 7
    attr = Attr("padded_shared", {"interval_padding_pairs": [[16, 1]],
                                  "offset": [[0, 1], [0, 2], [2, 0], [4, 0], [1, 0]], "block": []})
    lay = S.padded_shared_layout(attr, [8, 4])
    assert [r for r, _ in lay.table()[::4].tolist()] == [0, 2, 4, 6, 1, 3, 5, 7]
    addr = S.padded_address_layout(attr, [8, 4])
    row = lambda r: addr.apply({"dim0": np.full(4, r), "dim1": np.arange(4)})[:, 0].tolist()
    assert row(1) == [17, 18, 19, 20] and row(6) == [12, 13, 14, 15] and row(7) == [29, 30, 31, 32]
    assert S.padded_size(pairs, 16) == 16 + 8 * 1 + 4 * 2 - 1 - 2
    # the identity short form equals the explicit bases
    short = Attr("padded_shared", {"interval_padding_pairs": [[2, 2]], "order": [1, 0], "shape": [16, 32]})
    full = Attr("padded_shared", {"interval_padding_pairs": [[2, 2]], "block": [],
                                  "offset": [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [1, 0], [2, 0], [4, 0], [8, 0]]})
    assert S.padded_shared_layout(short, [16, 32]).f2_bases() == S.padded_shared_layout(full).f2_bases()


def test_padded_address_layout_is_injective_and_skips_padding():
    attr = Attr("padded_shared", {"interval_padding_pairs": [[8, 1], [32, 4]], "order": [0, 1], "shape": [16, 8]})
    addr = S.padded_address_layout(attr)
    slots = addr.table()[:, 0]
    assert len(set(slots.tolist())) == 128 and slots.max() == S.padded_size([(8, 1), (32, 4)], 128) - 1
    lay = S.padded_shared_layout(attr)
    phys = S.E.evaluate(lay.physical_offset, {"offset": np.arange(128)})
    # the element at dense offset i (coordinates lay(i)) has address phys(i)
    coords = lay.table()
    assert np.array_equal(addr.apply({"dim0": coords[:, 0], "dim1": coords[:, 1]})[:, 0], phys)
    # padding slots (8, 17, ...) hold nothing
    assert 8 not in set(slots.tolist()) and 17 not in set(slots.tolist())


def test_fp4_padded_replicates_padding_bytes():
    lay = S.nvmma_shared_layout(Attr("nvmma_shared", {"swizzlingByteWidth": 128, "transposed": False,
                                                      "elementBitWidth": 8, "fp4Padded": True}), [8, 64])
    assert lay.in_size("offset") == 8 * 128
    counts = lay.holder_counts()
    assert set(np.asarray(counts).ravel().tolist()) == {2}


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------
BAD = [
    ("nvmma_shared", {"swizzlingByteWidth": 48, "transposed": False, "elementBitWidth": 16}, [64, 64], "swizzlingByteWidth"),
    ("nvmma_shared", {"swizzlingByteWidth": 128, "transposed": False, "elementBitWidth": 12}, [64, 64], "elementBitWidth"),
    ("nvmma_shared", {"swizzlingByteWidth": 64, "transposed": False, "elementBitWidth": 8, "fp4Padded": True}, [64, 64], "fp4Padded"),
    ("nvmma_shared", {"swizzlingByteWidth": 128, "transposed": False, "elementBitWidth": 16}, [64, 32], "swizzle row"),
    ("nvmma_shared", {"swizzlingByteWidth": 128, "transposed": False, "elementBitWidth": 16}, [4, 64], "Illegal shared layout"),
    ("nvmma_shared", {"swizzlingByteWidth": 128, "transposed": "maybe", "elementBitWidth": 16}, [64, 64], "transposed"),
    ("swizzled_shared", {"vec": 3, "perPhase": 1, "maxPhase": 1, "order": [1, 0]}, [16, 16], "vec must be a power of two"),
    ("swizzled_shared", {"vec": 2, "perPhase": 0, "maxPhase": 1, "order": [1, 0]}, [16, 16], "perPhase"),
    ("swizzled_shared", {"vec": 2, "perPhase": 1, "maxPhase": 6, "order": [1, 0]}, [16, 16], "maxPhase"),
    ("swizzled_shared", {"vec": 2, "perPhase": 1, "maxPhase": 2, "order": [1, 1]}, [16, 16], "not a permutation"),
    ("swizzled_shared", {"vec": 2, "perPhase": 1, "maxPhase": 2, "order": [0, 2]}, [16, 16], "not a permutation"),
    ("swizzled_shared", {"vec": 2, "perPhase": 1, "maxPhase": 2, "order": [1, 0]}, [16, 16, 2], "rank"),
    ("swizzled_shared", {"vec": 2, "perPhase": 1, "maxPhase": 2, "order": [1, 0]}, [16, 12], "power-of-two"),
    ("swizzled_shared", {"vec": 2, "perPhase": 1, "maxPhase": 2, "order": [1, 0]}, None, "needs a tensor shape"),
    ("swizzled_shared", {"vec": 2, "perPhase": 1, "maxPhase": 2}, [16, 16], "order"),
    ("swizzled_shared", {"vec": 2, "perPhase": 1, "maxPhase": 2, "order": [1, 0], "CGALayout": [[0, 3]]}, [16, 16], "CGALayout"),
    ("swizzled_shared", {"vec": 2, "perPhase": 1, "maxPhase": 2, "order": [1, 0], "CGALayout": [[1]]}, [16, 16], "rank"),
    ("swizzled_shared", {"vec": 2, "perPhase": 1, "maxPhase": 2, "order": [1, 0]}, [1 << 40, 2], "2**31"),
    ("padded_shared", {"interval_padding_pairs": [[3, 1]], "order": [1, 0], "shape": [4, 4]}, None, "power"),
    ("padded_shared", {"interval_padding_pairs": [[4, 1], [4, 2]], "order": [1, 0], "shape": [4, 4]}, None, "repeat"),
    ("padded_shared", {"interval_padding_pairs": [[4, 1]], "offset": [[0, 1], [0, 1]], "block": []}, None, "bijection"),
    ("padded_shared", {"interval_padding_pairs": [[4, 1]], "offset": [[1, 1], [0, 2]], "block": []}, None, "one dim"),
    ("padded_shared", {"interval_padding_pairs": [[4, 1]], "order": [1, 0], "shape": [4, 4]}, [8, 4], "shape"),
    ("shared_linear", {"offset": [[0, 1], [0, 1]], "block": []}, None, "surjective"),
    ("shared", {"vec": 8, "perPhase": 1, "maxPhase": 8, "order": [1, 0], "hasLeadingOffset": True}, [64, 64], "element bit width"),
    ("shared", {"vec": 8, "perPhase": 2, "maxPhase": 2, "order": [1, 0], "hasLeadingOffset": True}, [64, 64], "perPhase, maxPhase"),
]


@pytest.mark.parametrize("kind,params,shape,needle", BAD)
def test_bad_input_is_a_clear_layout_error(kind, params, shape, needle):
    with pytest.raises(LayoutError) as e:
        ENCODINGS[kind](Attr(kind, params), shape)
    assert needle in str(e.value), str(e.value)
    assert "\n" not in str(e.value)


def test_non_power_of_two_shape_is_unsupported_not_wrong():
    with pytest.raises(UnsupportedError):
        S.swizzled_shared_layout(Attr("swizzled_shared", {"vec": 1, "perPhase": 1, "maxPhase": 1, "order": [1, 0]}),
                                 [48, 16])


# ---------------------------------------------------------------------------------------------
# Legacy #triton_gpu.shared (not oracle-tested: Triton 3.9 no longer parses it)
# ---------------------------------------------------------------------------------------------
def test_legacy_shared_without_leading_offset_is_swizzled():
    p = {"vec": 4, "perPhase": 2, "maxPhase": 4, "order": [1, 0]}
    old = S.legacy_shared_layout(Attr("shared", dict(p, hasLeadingOffset=False)), [32, 64])
    new = S.swizzled_shared_layout(Attr("swizzled_shared", p), [32, 64])
    assert old.f2_bases() == new.f2_bases()


@pytest.mark.parametrize("width,pp,mp", [(32, 4, 2), (64, 2, 4), (128, 1, 8)])
def test_legacy_leading_offset_equals_nvmma(width, pp, mp):
    """hasLeadingOffset = true with vec = 16 bytes is the same memory layout as nvmma_shared
    (for shapes inside one TMA box)."""
    bits = 16
    legacy = S.legacy_shared_layout(Attr("shared", {"vec": 128 // bits, "perPhase": pp, "maxPhase": mp,
                                                    "order": [1, 0], "hasLeadingOffset": True}),
                                    [64, 8 * width // bits * 2], element_type="f16")
    nvmma = S.nvmma_shared_layout(Attr("nvmma_shared", {"swizzlingByteWidth": width, "transposed": False,
                                                        "elementBitWidth": bits}), [64, 8 * width // bits * 2])
    assert legacy.f2_bases() == nvmma.f2_bases()


def test_legacy_cta_parameters_match_cga_bases():
    p = {"vec": 2, "perPhase": 1, "maxPhase": 4, "order": [1, 0]}
    old = S.swizzled_shared_layout(Attr("swizzled_shared", dict(p, CTAsPerCGA=[2, 2], CTASplitNum=[2, 1],
                                                                CTAOrder=[1, 0])), [32, 32])
    new = S.swizzled_shared_layout(Attr("swizzled_shared", dict(p, CGALayout=[[0, 0], [1, 0]])), [32, 32])
    assert old.f2_bases() == new.f2_bases()
    assert old.in_size("block") == 4
