"""``#ttg.generic_linear`` (Triton 3.9's ``GenericLinearEncodingAttr``) and ``#ttg.linear`` without
a ``block`` key, against the installed Triton's own MLIR parser and verifier.

The oracle: each text is the encoding of a function argument's tensor type in a tiny TTGIR module
parsed by Triton (``ir.parse_mlir_module``, which runs the attribute's ``verify``), in a worker
process; Triton either refuses it or prints the module back, and the bases it prints are the
layout (a linear encoding *is* its bases). We must accept exactly what Triton accepts, with the
same bases, and refuse the rest with one line. The cases: hand-picked ones (swizzled warp bases,
repeated bases, zero bases, a swizzled lane basis, a missing ``block`` key, not surjective) and a
seeded random sweep over the same choices. Triton 3.6-3.8 do not know the attribute, and
``--triton-version 3.8`` refuses it.
"""
from __future__ import annotations

import json
import random
import re
import subprocess
import sys

import pytest

from layoutverify.adapters.triton import parse
from layoutverify.core.errors import LayoutError

pytest.importorskip("triton")
from triton_oracle import installed_version  # noqa: E402

pytestmark = pytest.mark.skipif(installed_version() != "3.9", reason="generic_linear is Triton 3.9's")

WORKER = r"""
import json, os, sys, tempfile
from triton._C.libtriton import ir
ctx = ir.context()
ir.load_dialects(ctx)
d = tempfile.mkdtemp()
path = os.path.join(d, "case.mlir")
for text, shape in json.loads(sys.stdin.read()):
    with open(path, "w") as fh:
        fh.write("module {\n  tt.func @f(%a: tensor<" + "x".join(map(str, shape)) + "xf16, " + text
                 + ">) {\n    tt.return\n  }\n}\n")
    try:
        mod = ir.parse_mlir_module(path, ctx)
        answer = {"printed": mod.str_nodebug()}
    except Exception as e:
        answer = {"error": str(e)[:300]}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
os._exit(0)
"""

_ATTR = re.compile(r"#ttg\.(?:generic_)?linear<\{(.*?)\}>", re.S)


def triton_answers(cases):
    """Triton's answer per case: ``{"printed": module}`` or ``{"error": why}``. Triton aborts the
    process on some layouts (``LLVM ERROR: Layout is expected to be surjective``): that case is
    refused, and the worker restarts after it."""
    out: list[dict] = []
    while len(out) < len(cases):
        rest = cases[len(out):]
        proc = subprocess.run([sys.executable, "-c", WORKER], input=json.dumps(rest), capture_output=True,
                              text=True, timeout=600)
        out += [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
        if proc.returncode != 0 and len(out) < len(cases):
            why = [ln for ln in proc.stderr.splitlines() if "ERROR" in ln or "error" in ln][:1]
            out.append({"error": "Triton aborted: " + (why[0] if why else f"exit {proc.returncode}")})
    return out


def printed_bases(printed: str) -> dict:
    """The four bases of the (one) linear attribute Triton printed."""
    body = _ATTR.search(printed).group(1)
    return json.loads("{" + re.sub(r"(\w+)\s*=", r'"\1":', body) + "}")


def text_of(bases: dict, kind: str = "generic_linear", keys=("register", "lane", "warp", "block")) -> str:
    return f"#ttg.{kind}<{{" + ", ".join(f"{k} = {json.dumps(bases[k])}" for k in keys) + "}>"


def natural_shape(bases: dict, rank: int = 2) -> tuple[int, ...]:
    every = [v for vs in bases.values() for v in vs]
    return tuple(max(1, 1 << max((v[d] for v in every), default=0).bit_length()) for d in range(rank))


BASE = {"register": [[0, 1]], "lane": [[1, 0], [2, 0], [4, 0], [8, 0], [0, 2]], "warp": [], "block": []}
HAND = [
    dict(BASE, warp=[[1, 1]]),                       # a swizzled warp basis: generic only
    dict(BASE, warp=[[16, 4]]),                      # swizzled into two new bits: 32x8 not covered, refused
    dict(BASE, warp=[[8, 0]]),                       # a repeated basis: not a bijection, still surjective
    dict(BASE, lane=[[1, 0], [2, 0], [4, 0], [8, 0], [0, 0]]),   # a broadcast lane
    dict(BASE, lane=[[1, 0], [2, 0], [4, 0], [8, 0], [1, 2]]),   # a swizzled lane basis: refused
    dict(BASE, register=[[1, 1]]),                   # a swizzled register basis: refused
    dict(BASE, lane=[[1, 0], [2, 0], [4, 0], [16, 0], [0, 2]]),  # dim0 value 8 never reached: refused
    dict(BASE, block=[[0, 4]]),
    dict(BASE, block=[[2, 2]]),                      # a swizzled block basis: refused
]


def random_case(rng: random.Random) -> dict:
    """Bases of a 2-D layout: mostly one-hot powers of two, with swizzles, repeats and zeros."""
    rows, cols = rng.choice([4, 8, 16, 32]), rng.choice([2, 4, 8, 16])
    bits = [[1 << i, 0] for i in range(rows.bit_length() - 1)] + [[0, 1 << i] for i in range(cols.bit_length() - 1)]
    rng.shuffle(bits)
    if rng.random() < 0.15 and bits:
        bits.pop()                                   # not surjective (unless something else covers it)
    out = {"register": [], "lane": [], "warp": [], "block": []}
    for b in bits:
        out[rng.choice(["register", "lane", "lane", "warp"])].append(b)
    for k in out:
        if rng.random() < 0.25:
            out[k].append([0, 0])
        if rng.random() < 0.15 and bits:
            out[k].append(list(rng.choice(bits)))    # a repeat
        if rng.random() < 0.3 and out[k]:
            a = rng.choice(bits) if bits else [1, 0]
            out[k][-1] = [x ^ y for x, y in zip(out[k][-1], a)]   # maybe swizzled
    return out


def ours(text: str):
    try:
        return parse(text)
    except LayoutError as e:
        return e


def test_generic_linear_agrees_with_triton_39():
    rng = random.Random(2039)
    all_bases = HAND + [random_case(rng) for _ in range(300)]
    cases = [(text_of(b), natural_shape(b)) for b in all_bases]
    theirs = triton_answers(cases)
    accepted = refused = 0
    problems = []
    for (text, shape), t in zip(cases, theirs):
        o = ours(text)
        if "error" in t:
            refused += 1
            if not isinstance(o, LayoutError):
                problems.append(f"Triton refuses, we read it: {text}: {t['error'][:120]}")
            continue
        accepted += 1
        if isinstance(o, LayoutError):
            problems.append(f"Triton reads it, we refuse: {text}: {o}")
            continue
        want = printed_bases(t["printed"])
        got = {k: [list(v) for v in vs] for k, vs in o.f2_bases().items()}
        want = {k: v for k, v in want.items()}
        if got != want or tuple(s for _, s in o.out_dims) != shape:
            problems.append(f"bases differ for {text}: ours {got} {o.out_dims}, Triton {want} {shape}")
    assert not problems, "\n".join(problems[:10])
    assert accepted >= 60 and refused >= 40, (accepted, refused)   # the sweep exercises both sides
    # the hand-picked cases, as Triton answered them
    verdicts = ["printed" in t for t in theirs[:len(HAND)]]
    assert verdicts == [True, False, True, True, False, False, False, True, False]


def test_linear_without_block_is_refused_as_triton_refuses_it():
    keys = ("register", "lane", "warp")
    texts = [text_of(BASE, kind, keys) for kind in ("linear", "generic_linear")]
    theirs = triton_answers([(t, (16, 4)) for t in texts])
    for text, t in zip(texts, theirs):
        assert "error" in t, t
        with pytest.raises(LayoutError, match="needs parameter block"):
            parse(text, shape=(16, 4))
        for spelling in (f"tensor<16x4xf16, {text}>", f"#ttg.slice<{{dim = 0, parent = {text}}}>"):
            with pytest.raises(LayoutError, match="block"):
                parse(spelling, shape=(16, 4) if spelling.startswith("tensor") else (4,))


def test_generic_linear_is_new_in_triton_39():
    text = text_of(dict(BASE, warp=[[1, 1]]))
    assert parse(text, triton_version="3.9").in_size("warp") == 2
    for release in ("3.6", "3.7", "3.8"):
        with pytest.raises(LayoutError, match="new in Triton 3.9"):
            parse(text, triton_version=release)


def test_cli_reads_generic_linear_and_refuses_linear_without_block(cli_env):
    ok = subprocess.run([sys.executable, "-m", "layoutverify.apps.cli", "show", "triton:" + text_of(dict(BASE, warp=[[1, 1]])),
                         "--no-grid"], capture_output=True, text=True, env=cli_env, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert "warp=2" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "layoutverify.apps.cli", "show",
                          "triton:" + text_of(BASE, "linear", ("register", "lane", "warp"))],
                         capture_output=True, text=True, env=cli_env, timeout=120)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "needs parameter block" in bad.stderr
