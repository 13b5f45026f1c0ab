"""A deterministic snapshot of every verdict the tool gives on its corpora and on a seeded sweep.

Run before and after a refactoring that must not change behaviour, then diff the two files::

    python tools/behaviour_snapshot.py -o before.json.gz   # on the old checkout
    python tools/behaviour_snapshot.py -o after.json.gz    # on the new one
    python tools/behaviour_snapshot.py --diff before.json.gz after.json.gz

What is recorded (everything but timings), one JSON record per line, sorted by key:

* ``claim``: every claim of ``corpora/**/*.toml`` (the atlas included), both layouts parsed as
  ``check`` parses them: the fingerprints, and for verdict claims ``compare``'s verdict, method,
  witness and reason and ``prove_many``'s verdict, method and witness; for conversion claims the
  mechanism and its witness. A layout that does not parse records the error line.
* ``check``: ``layoutverify check FILE --json - -j 1`` per corpus file: the exit code and every
  outcome (status, verdict found, method, message, witness).
* ``lit``: every type of ``corpora/triton_lit/pairs.jsonl``: our fingerprint (or the error line),
  and ``compare`` against the previous type of the same shape and kind of storage.
* ``sweep``: a seeded sweep of layouts built through every constructor (F2 bases, digits, modes,
  expressions, tables, swizzles) and through the adapters' text (Triton, CuTe, Tilus), compared
  in pairs by ``compare`` and by ``prove_many``.
* ``cli``: ``layoutverify prove`` on a fixed list of pairs, bad input included: exit code and
  the JSON document.

The script uses only the package's public entry points, so it runs unchanged on both checkouts.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        return x.item()
    return x


def _result(res) -> dict:
    if isinstance(res, Exception):
        return {"error": f"{type(res).__name__}: {res}"}
    return {"verdict": res.verdict, "method": res.method, "witness": _jsonable(res.witness), "reason": res.reason}


def _compare(a, b, **kw) -> dict:
    from layoutverify.core.compare import compare
    from layoutverify.core.errors import LayoutError
    try:
        return _result(compare(a, b, **kw))
    except LayoutError as e:
        return _result(e)


def _many(pairs, **kw) -> list[dict]:
    from layoutverify.core.batch import prove_many
    return [_result(r) for r in prove_many(pairs, errors="return", **kw)]


def _fingerprint(lay) -> str:
    from layoutverify.core.errors import LayoutError
    try:
        return lay.fingerprint()
    except LayoutError as e:
        return f"error: {type(e).__name__}: {e}"


def _parse(spec, shape=None, **options):
    from layoutverify.adapters import parse_spec
    from layoutverify.core.errors import LayoutError
    try:
        return parse_spec(spec, shape=shape, **options)
    except LayoutError as e:
        return e


# -- corpora ------------------------------------------------------------------------------------
def claims(out: dict) -> None:
    from layoutverify.apps import corpus
    from layoutverify.core.conversion import analyze
    from layoutverify.core.errors import LayoutError
    c = corpus.load([ROOT / "corpora"])
    fresh = []
    for cl in c.claims:
        a = _parse(cl.a, cl.shape_a, **cl.options_a)
        b = _parse(cl.b, cl.shape_b, **cl.options_b)
        rec: dict = {"expect": cl.expect}
        if isinstance(a, Exception) or isinstance(b, Exception):
            rec["error"] = str(a if isinstance(a, Exception) else b)
        else:
            rec["fingerprints"] = [_fingerprint(a), _fingerprint(b)]
            if cl.kind == "verdict":
                rec["compare"] = _compare(a, b, timeout_ms=cl.timeout_ms)
                fresh.append((cl.id, a, b, cl.timeout_ms))
            else:
                try:
                    rep = analyze(a, b, timeout_ms=cl.timeout_ms)
                    rec["conversion"] = {"mechanism": rep.mechanism, "witness": _jsonable(rep.witness)}
                except LayoutError as e:
                    rec["conversion"] = {"error": str(e)}
        out[f"claim {cl.id}"] = rec
    for cid, a, b, t in fresh:  # the batch prover on freshly parsed layouts of every verdict claim
        out[f"claim {cid}"]["prove_many"] = _many([(a, b)], timeout_ms=t)[0]
    batch = _many([(a, b) for _, a, b, _ in fresh])
    for (cid, *_), r in zip(fresh, batch):
        out[f"claim {cid}"]["prove_many_batch"] = r


def check_files(out: dict, exe: list[str]) -> None:
    from layoutverify.apps import corpus
    for f in corpus.corpus_files([ROOT / "corpora"]):
        p = subprocess.run(exe + ["check", str(f), "--json", "-", "-j", "1"], capture_output=True, text=True,
                           cwd=ROOT, timeout=1800)
        rec: dict = {"exit": p.returncode}
        try:
            doc = json.loads(p.stdout)
            rec["outcomes"] = [{k: o.get(k) for k in ("id", "status", "got", "method", "message", "witness")}
                               for o in doc.get("outcomes", doc.get("claims", []))]
        except json.JSONDecodeError:
            rec["stdout"] = p.stdout[-2000:]
            rec["stderr"] = p.stderr[-2000:]
        out[f"check {f.relative_to(ROOT)}"] = rec


def lit(out: dict) -> None:
    from layoutverify.adapters import triton as T
    from layoutverify.core.errors import LayoutError
    lines = (ROOT / "corpora/triton_lit/pairs.jsonl").read_text().splitlines()
    last: dict = {}
    for i, ln in enumerate(lines[1:], 1):
        p = json.loads(ln)
        try:
            lay = T.parse(p["text"])
        except LayoutError as e:
            out[f"lit {i:05d}"] = {"text": p["text"], "error": f"{type(e).__name__}: {e}"}
            continue
        rec = {"text": p["text"], "fingerprint": _fingerprint(lay)}
        key = (tuple(lay.out_sizes), lay.kind)
        prev = last.get(key)
        if prev is not None:
            rec["vs"] = prev[0]
            rec["compare"] = _compare(prev[1], lay)
        last[key] = (i, lay)
        out[f"lit {i:05d}"] = rec


# -- the seeded sweep -----------------------------------------------------------------------------
def _f2_bases(rng, shape, dims):
    """Random F2 bases over ``dims`` (name, bits) into ``shape`` (powers of two)."""
    outs = []
    for d, s in enumerate(shape):
        outs += [(d, 1 << k) for k in range(s.bit_length() - 1)]
    bases = {}
    for n, bits in dims:
        vs = []
        for _ in range(bits):
            v = [0] * len(shape)
            for _ in range(rng.choice([0, 1, 1, 1, 2])):
                d, bit = rng.choice(outs)
                v[d] ^= bit
            vs.append(v)
        bases[n] = vs
    return bases


def _bijective_f2(rng, shape, dims):
    """A bijective F2 layout: a random permutation of the logical bits, optionally mixed."""
    outs = []
    for d, s in enumerate(shape):
        outs += [(d, 1 << k) for k in range(s.bit_length() - 1)]
    rng.shuffle(outs)
    bases, k = {}, 0
    for n, bits in dims:
        vs = []
        for _ in range(bits):
            d, bit = outs[k]
            v = [0] * len(shape)
            v[d] = bit
            vs.append(v)
            k += 1
        bases[n] = vs
    if rng.random() < 0.5:  # add a lower basis to a higher one (still bijective)
        flat = [(n, i) for n, vs in bases.items() for i in range(len(vs))]
        if len(flat) >= 2:
            (n1, i1), (n2, i2) = rng.sample(flat, 2)
            bases[n1][i1] = [x ^ y for x, y in zip(bases[n1][i1], bases[n2][i2])]
    return bases


def _mutate_bases(rng, bases):
    m = {n: [list(v) for v in vs] for n, vs in bases.items()}
    flat = [(n, i) for n, vs in m.items() for i in range(len(vs))]
    kind = rng.choice(["swap", "zero", "regswap", "xor"])
    if kind == "swap" and len(flat) >= 2:
        (n1, i1), (n2, i2) = rng.sample(flat, 2)
        m[n1][i1], m[n2][i2] = m[n2][i2], m[n1][i1]
    elif kind == "regswap" and len(m.get("register", [])) >= 2:
        r = m["register"]
        i, j = rng.sample(range(len(r)), 2)
        r[i], r[j] = r[j], r[i]
    elif kind == "xor" and len(flat) >= 2:
        (n1, i1), (n2, i2) = rng.sample(flat, 2)
        m[n1][i1] = [x ^ y for x, y in zip(m[n1][i1], m[n2][i2])]
    elif flat:
        n, i = rng.choice(flat)
        m[n][i] = [0] * len(m[n][i])
    return m


def _mode_recipe(rng):
    """A random mixed-radix register layout: modes of sizes 2..6 on two logical dims."""
    hw = {"register": [rng.choice([1, 2, 3, 4]) for _ in range(2)],
          "lane": rng.choice([[4, 8], [2, 16], [8, 4], [32]]),
          "warp": [rng.choice([1, 2, 3, 4])]}
    allm = [(k, j, s) for k, ms in hw.items() for j, s in enumerate(ms) if s > 1]
    owner = {m: rng.randrange(2) for m in allm}
    if rng.random() < 0.25 and allm:
        owner[rng.choice(allm)] = None
    strides, shape = {}, [1, 1]
    for d in range(2):
        mine = [m for m in allm if owner[m] == d]
        rng.shuffle(mine)
        place = 1
        for m in mine:
            strides[m] = place
            place *= m[2]
        shape[d] = place
    in_dims = []
    for k, ms in hw.items():
        n = 1
        for s in ms:
            n *= s
        in_dims.append((k, n))
    modes = {k: [(s, [strides[(k, j, s)] if owner.get((k, j, s)) == 0 else 0,
                      strides[(k, j, s)] if owner.get((k, j, s)) == 1 else 0]) if s > 1 else (1, [0, 0])
                 for j, s in enumerate(ms)] for k, ms in hw.items()}
    return in_dims, shape, modes


def _mutate_modes(rng, modes):
    m = {k: list(v) for k, v in modes.items()}
    flat = [(k, j) for k, ms in m.items() for j, (s, st) in enumerate(ms) if s > 1]
    kind = rng.choice(["swap", "regperm", "zero"])
    if kind == "regperm" and len([x for x in m["register"] if x[0] > 1]) >= 2:
        m["register"] = m["register"][::-1]
    elif kind == "swap" and len(flat) >= 2:
        (k1, j1), (k2, j2) = rng.sample(flat, 2)
        m[k1][j1], m[k2][j2] = (modes[k1][j1][0], modes[k2][j2][1]), (modes[k2][j2][0], modes[k1][j1][1])
    elif flat:
        k, j = rng.choice(flat)
        m[k][j] = (m[k][j][0], [0, 0])
    return m


def _digits_of_modes(modes):
    out = []
    for k, ms in modes.items():
        p = 1
        for s, st in ms:
            out.append((k, p, s, tuple(st)))
            p *= s
    return out


def _exprs_of_modes(in_dims, shape, modes):
    """The same map written ``(x % (p*s)) // p`` (not how from_modes writes it)."""
    from layoutverify.core import expr as E
    acc = [E.Const(0), E.Const(0)]
    for k, ms in modes.items():
        p = 1
        for s, st in ms:
            if s > 1:
                digit = (E.Var(k) % (p * s)) // p
                acc = [x + digit * c if c else x for x, c in zip(acc, st)]
            p *= s
    return acc


def _swizzle(rows, cols, kind, variant):
    from layoutverify.core import expr as E
    from layoutverify.core.layout import Layout
    off = E.Var("offset")
    r, c = off // cols, off % cols
    col = (c ^ ((r + variant) % 8)) if kind == "xor" else (c + r + variant) % cols
    return Layout([("offset", rows * cols)], [("dim0", rows), ("dim1", cols)], [r, col])


def _in_shape(lay) -> bool:
    from layoutverify.core import expr as E
    bounds = {k: s - 1 for k, s in lay.in_dims}
    return all(E.upper_bound(e, bounds) < s for e, s in zip(lay.exprs, lay.out_sizes))


def built_layouts(rng) -> list[tuple[str, object]]:
    """Groups of layouts over one logical shape, built through every constructor."""
    from layoutverify.core.layout import Layout
    groups = []
    for g in range(60):  # F2: bases, the same as a table, as expressions, mutants
        shape = [rng.choice([4, 8, 16, 32]), rng.choice([4, 8, 16, 32])]
        nbits = (shape[0] * shape[1]).bit_length() - 1
        reg = rng.randint(0, min(3, nbits))
        lane = min(5, nbits - reg)
        bijective = rng.random() < 0.6
        warp = nbits - reg - lane if bijective else max(0, nbits - reg - lane + rng.randint(-1, 1))
        dims = [("register", reg), ("lane", lane), ("warp", warp)]
        base = _bijective_f2(rng, shape, dims) if bijective else _f2_bases(rng, shape, dims)
        a = Layout.from_bases(base, shape)
        items = [("bases", a), ("table", Layout.from_table(a.in_dims, a.out_dims, a.table())),
                 ("table-nodetect", Layout.from_table(a.in_dims, a.out_dims, a.table(), detect_f2=False)),
                 ("exprs", Layout(a.in_dims, a.out_dims, a.exprs))]
        for k in range(3):
            m = _mutate_bases(rng, base)
            items.append((f"mutant{k}", Layout.from_bases(m, shape)))
        groups.append((f"f2-{g}", items))
    for g in range(80):  # mixed radix: modes, digits, other expressions, mutants, tables
        in_dims, shape, modes = _mode_recipe(rng)
        a = Layout.from_modes(in_dims, shape, modes)
        items = [("modes", a), ("digits", Layout.from_digits(in_dims, shape, _digits_of_modes(modes))),
                 ("exprs", Layout(in_dims, [("dim0", shape[0]), ("dim1", shape[1])],
                                  _exprs_of_modes(in_dims, shape, modes)))]
        if a.in_size() <= 4096:
            items.append(("table", Layout.from_table(a.in_dims, a.out_dims, a.table(), detect_f2=False)))
        for k in range(3):
            m = _mutate_modes(rng, modes)
            lay = Layout.from_modes(in_dims, shape, m)
            for _ in range(8 if k else 0):  # mutants 1 and 2 stay inside the shape where one is found
                if _in_shape(lay):
                    break
                m = _mutate_modes(rng, modes)
                lay = Layout.from_modes(in_dims, shape, m)
            items.append((f"mutant{k}", lay))
            if k == 0:
                items.append((f"mutant{k}-digits", Layout.from_digits(in_dims, shape, _digits_of_modes(m))))
        groups.append((f"radix-{g}", items))
    for rows, cols in ((8, 8), (16, 32), (32, 64)):  # swizzles (not digit-linear)
        items = [(f"{kind}{v}", _swizzle(rows, cols, kind, v)) for kind in ("xor", "rot") for v in (0, 1, 3)]
        a = items[0][1]
        items.append(("table", Layout.from_table(a.in_dims, a.out_dims, a.table(), detect_f2=False)))
        items.append(("exprs-copy", Layout(a.in_dims, a.out_dims, a.exprs)))
        groups.append((f"swizzle-{rows}x{cols}", items))
    return groups


def _triton_texts(rng, count):
    def split(total):
        out = [1, 1]
        for _ in range(total.bit_length() - 1):
            out[rng.randrange(2)] *= 2
        return out
    out = set()
    while len(out) < count:
        r = rng.random()
        if r < 0.6:
            spt = [1 << rng.randint(0, 2), 1 << rng.randint(0, 3)]
            out.add(f"#ttg.blocked<{{sizePerThread = {spt}, threadsPerWarp = {split(32)}, "
                    f"warpsPerCTA = {split(1 << rng.randint(0, 3))}, order = {rng.choice([[1, 0], [0, 1]])}}}>")
        elif r < 0.8:
            out.add(f"#ttg.nvidia_mma<{{versionMajor = 2, versionMinor = 0, warpsPerCTA = {split(1 << rng.randint(0, 3))}, "
                    f"instrShape = [16, 8]}}>")
        else:
            parent = (f"#ttg.nvidia_mma<{{versionMajor = 2, versionMinor = 0, warpsPerCTA = {split(4)}, "
                      f"instrShape = [16, 8]}}>")
            out.add(f"#ttg.dot_op<{{opIdx = {rng.randint(0, 1)}, parent = {parent}, kWidth = {rng.choice([2, 4])}}}>")
    return sorted(out)


def text_groups(rng) -> list[tuple[str, list[tuple[str, str, object]]]]:
    """Groups of layout texts (spec, shape) to be compared in pairs."""
    groups = []
    for shape in ((32, 32), (64, 64), (128, 64)):
        groups.append((f"triton-{shape[0]}x{shape[1]}", [(f"triton:{t}", shape) for t in _triton_texts(rng, 24)]))
    cute = []
    for _ in range(30):
        m, n = rng.choice([(4, 8), (8, 4), (2, 16), (16, 2)])
        texts = [f"({m},{n}):(1,{m})", f"({m},{n}):({n},1)", f"(({m // 2},2),{n}):((1,{m // 2 * n}),{m // 2})",
                 f"({n},{m}):({m},1)"]
        cute += [(f"cute:{t}", None) for t in rng.sample(texts, 2)]
    groups.append(("cute-32", sorted(set(cute))))
    cute_sw = [("cute:Sw<3,4,3> o (8,64):(64,1)", None), ("cute:Sw<2,4,3> o (8,64):(64,1)", None),
               ("cute:(8,64):(64,1)", None), ("cute:Sw<3,3,3> o (8,64):(64,1)", None),
               ("cute:(64,8):(1,64)", None)]
    groups.append(("cute-swizzle", cute_sw))
    tilus = set()
    for _ in range(30):
        a, b = rng.choice([(2, 1), (1, 2), (1, 1), (2, 2)]), rng.choice([(8, 4), (4, 8), (2, 16)])
        c = rng.choice([(1, 2), (2, 1), (1, 1)])
        tilus.add(f"tilus:local({a[0]}, {a[1]}).spatial({b[0]}, {b[1]}).local({c[0]}, {c[1]})")
        tilus.add(f"tilus:spatial({b[0]}, {b[1]}).local({a[0] * c[0]}, {a[1] * c[1]})")
        tilus.add(f"tilus:column_spatial({b[0]}, {b[1]}).local({a[0]}, {a[1]})")
    groups.append(("tilus", [(t, None) for t in sorted(tilus)]))
    groups.append(("cross", [("triton:#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], "
                              "instrShape = [16, 8]}>", (32, 32)),
                             ("cute:tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2,2,1), C, tile=(32,32))", None),
                             ("ptx:mma.m16n8k16.f32.C", None), ("tilus:local(2, 1).spatial(8, 4).local(1, 2)", None),
                             ("tilus:spatial(8, 4).local(2, 2)", None)]))
    return groups


def sweep(out: dict, seed: int) -> None:
    rng = random.Random(seed)
    for gname, items in built_layouts(rng):
        pairs, names = [], []
        for i, (na, a) in enumerate(items):
            for nb, b in items[i:]:
                pairs.append((a, b))
                names.append((na, nb))
        many = _many(pairs)
        for (na, nb), (a, b), m in zip(names, pairs, many):
            out[f"sweep {gname} {na} {nb}"] = {"compare": _compare(a, b), "prove_many": m,
                                               "fingerprints": [_fingerprint(a), _fingerprint(b)]}
        # strategies named explicitly on a few pairs of every group
        for na, a in items[:1]:
            for nb, b in items[1:]:
                for method in ("f2", "radix", "table"):
                    out[f"sweep {gname} {na} {nb} {method}"] = _compare(a, b, method=method)
    for gname, specs in text_groups(rng):
        lays = [(s, sh, _parse(s, sh)) for s, sh in specs]
        pairs, names = [], []
        for i, (sa, _, a) in enumerate(lays):
            for sb, _, b in lays[i:]:
                if isinstance(a, Exception) or isinstance(b, Exception):
                    out[f"sweep {gname} {sa} | {sb}"] = {"error": str(a if isinstance(a, Exception) else b)}
                    continue
                pairs.append((a, b))
                names.append((sa, sb))
        many = _many(pairs)
        for (sa, sb), (a, b), m in zip(names, pairs, many):
            out[f"sweep {gname} {sa} | {sb}"] = {"compare": _compare(a, b), "prove_many": m}


# -- the CLI --------------------------------------------------------------------------------------
CLI_PAIRS = [
    ["triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>",
     "triton:#ttg.linear<{register = [[0, 1], [0, 2]], lane = [[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]], "
     "warp = [[4, 0], [8, 0]], block = []}>", "--shape", "16x32"],
    ["triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>",
     "triton:#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>",
     "--shape", "64x64"],
    ["triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>",
     "triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>",
     "--shape", "64x64", "--shape-b", "32x64"],
    ["tilus:local(2, 1).spatial(8, 4).local(1, 2)", "tilus:local(1, 2).spatial(8, 4).local(2, 1)"],
    ["tilus:local(2, 1).spatial(8, 4).local(1, 2)", "tilus:spatial(8, 4).local(2, 2)"],
    ["tilus:local(2, 1).spatial(8, 4).local(1, 2)", "tilus:spatial(8, 4).local(2, 2)", "--strict"],
    ["cute:(4,8):(1,4)", "cute:(4,8):(8,1)"],
    ["cute:(4,8):(1,4)", "cute:((2,2),8):((1,2),4)", "--method", "radix"],
    ["cute:Sw<3,4,3> o (8,64):(64,1)", "cute:Sw<2,4,3> o (8,64):(64,1)"],
    ["cute:Sw<3,4,3> o (8,64):(64,1)", "cute:Sw<2,4,3> o (8,64):(64,1)", "--method", "z3"],
    ["ptx:mma.m16n8k16.f16.A", "ptx:mma.m16n8k16.f16.B"],
    ["ptx:mma.m16n8k16.f32.C", "cute:tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (1,1,1), C, tile=(16,8))"],
    ["triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>",
     "cute:(4,8):(1,4)", "--shape", "16x32"],
    ["triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>",
     "triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>",
     "--shape", "64x64", "--method", "table"],
    ["triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>",
     "triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1]}>", "--shape", "64x64"],
    ["cute:(4,8):(1,4", "cute:(4,8):(1,4)"],
    ["tilus:local(2, 1).spatial(8, 4).lokal(1, 2)", "tilus:spatial(8, 4).local(2, 2)"],
    ["nosuch:thing", "cute:(4,8):(1,4)"],
]


def cli(out: dict, exe: list[str]) -> None:
    for i, args in enumerate(CLI_PAIRS):
        for mode in (["--json"], ["--window", "8"]):
            p = subprocess.run(exe + ["prove"] + args + mode, capture_output=True, text=True, cwd=ROOT, timeout=600)
            rec: dict = {"exit": p.returncode, "stderr": p.stderr.strip()}
            if mode == ["--json"]:
                try:
                    doc = json.loads(p.stdout)
                    doc.pop("seconds", None)
                    rec["json"] = doc
                except json.JSONDecodeError:
                    rec["stdout"] = p.stdout
            else:  # the text, without the timing on the method line
                rec["stdout"] = [ln if not ln.startswith("method:") else ln.split("(")[0].rstrip()
                                 for ln in p.stdout.splitlines()]
            out[f"cli {i:02d} {' '.join(mode)} {' | '.join(args)}"] = rec


def snapshot(seed: int, parts: list[str]) -> dict:
    exe = [sys.executable, "-m", "layoutverify"]
    out: dict = {}
    if "claims" in parts:
        claims(out)
    if "check" in parts:
        check_files(out, exe)
    if "lit" in parts:
        lit(out)
    if "sweep" in parts:
        sweep(out, seed)
    if "cli" in parts:
        cli(out, exe)
    return out


def _open(path: str, mode: str):
    return gzip.open(path, mode + "t") if path.endswith(".gz") else open(path, mode)


def write(path: str, data: dict) -> None:
    with _open(path, "w") as f:
        for k in sorted(data):
            f.write(json.dumps({"key": k, "value": data[k]}, sort_keys=True) + "\n")


def read(path: str) -> dict:
    with _open(path, "r") as f:
        return {r["key"]: r["value"] for r in map(json.loads, f)}


def diff(before: dict, after: dict, ignore_methods: dict | None = None) -> list[str]:
    lines = []
    for k in sorted(set(before) | set(after)):
        if k not in after:
            lines.append(f"- only before: {k}")
        elif k not in before:
            lines.append(f"+ only after:  {k}")
        elif before[k] != after[k]:
            lines.append(f"! {k}\n    before: {json.dumps(before[k], sort_keys=True)[:600]}\n"
                         f"    after:  {json.dumps(after[k], sort_keys=True)[:600]}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", help="write the snapshot (JSON lines) here")
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--parts", default="claims,check,lit,sweep,cli")
    ap.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two snapshots; exit 1 if they differ")
    args = ap.parse_args(argv)
    if args.diff:
        lines = diff(read(args.diff[0]), read(args.diff[1]))
        print("\n".join(lines) if lines else "no differences")
        print(f"{len(lines)} differing records", file=sys.stderr)
        return 1 if lines else 0
    data = snapshot(args.seed, args.parts.split(","))
    write(args.out or "snapshot.json", data)
    print(f"{len(data)} records -> {args.out or 'snapshot.json'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
