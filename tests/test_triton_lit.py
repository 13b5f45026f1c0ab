"""Every (encoding, shape) pair of Triton's own MLIR lit tests, against the installed Triton.

The corpus ``corpora/triton_lit/pairs.jsonl`` is extracted by ``tools/extract_triton_lit.py``
from ``test/**/*.mlir`` of triton-lang/triton at the commit named in its first line. Each pair is
a whole ``tensor<...>`` / ``!ttg.memdesc<...>`` type, aliases expanded. The oracle is the
installed Triton (its MLIR parser and verifier, then ``GluonOpBuilder.to_linear_layout``), run in
one batched subprocess (``native_many(..., lenient=True)``: Gluon's Python-side argument checks
skipped, see ``native._relax_gluon_checks``). Rules checked:

* a pair Triton reads, we read, with exactly Triton's bases (for TMEM: ``row``/``col``; for
  ``partitioned_shared``: ``offset``/``block``, the dims Gluon's result object keeps; for
  ``padded_shared``: the linear component, Triton's ``getLinearComponent``);
* a pair Triton rejects, we reject with a :class:`LayoutError` (a message, no traceback);
* where Triton rejects only the *element type* of the type (``!tt.ptr<i32,1>``), the pair is
  asked again with ``f16`` and compared as above;
* pairs with no Triton answer by construction are counted apart, with the reason: Gluon cannot
  represent ``amd_rotating_shared`` ("Unhandled encoding"), and ``toLinearLayout`` refuses a
  ``partitioned_shared`` that wraps a ``padded_shared`` (Triton answers with ``paddedLinearLayout``
  there, which Gluon does not expose).
"""
from __future__ import annotations

import json
import re
from collections import Counter
from functools import lru_cache
from importlib import resources

import pytest

from layoutverify.adapters import triton as T
from layoutverify.adapters.triton import memdesc as M
from layoutverify.adapters.triton.parser import parse_text
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout

from triton_oracle import have_triton

from layoutverify.adapters.triton import version as _version

pytestmark = [
    pytest.mark.skipif(not have_triton(), reason="needs the installed Triton (with Gluon) as the oracle"),
    # the corpus is Triton's tests between 3.7 and 3.8 in 3.9's syntax; older Gluon APIs differ too
    pytest.mark.skipif(_version.installed() not in (None, "3.9"), reason="the lit corpus is checked against Triton 3.9"),
]


def load_pairs() -> tuple[dict, list[dict]]:
    text = resources.files("layoutverify.corpora").joinpath("triton_lit/pairs.jsonl").read_text()
    lines = [json.loads(ln) for ln in text.splitlines() if ln.strip()]
    return lines[0]["meta"], lines[1:]


def _no_oracle(pair: dict) -> str | None:
    if pair["kind"] == "amd_rotating_shared":
        return "Gluon cannot represent amd_rotating_shared (Unhandled encoding)"
    if pair["kind"] == "partitioned_shared" and "#ttg.padded_shared" in pair["encoding"]:
        return "toLinearLayout refuses partitioned(padded) by design (paddedLinearLayout)"
    return None


def _theirs(raw) -> Layout | str:
    """A Layout from the worker's raw answer (or the error text)."""
    if isinstance(raw, Exception):
        return str(raw)
    shape = raw["shape"]
    if raw.get("tmem"):
        return Layout.from_bases({"row": raw["row"], "col": raw["col"]}, shape)
    if "offset" in raw:
        return Layout.from_bases({"offset": raw["offset"], "block": raw["block"]}, shape)
    return Layout.from_bases({k: raw[k] for k in ("register", "lane", "warp", "block")}, shape)


def _ours_one_buffer(pair: dict) -> Layout:
    """Our layout over the shape Triton's toLinearLayout sees (one buffer of a multi-buffered memdesc)."""
    parsed = parse_text(pair["text"])
    if parsed.container != "memdesc":
        return T.parse(pair["text"])
    full = T.parse(pair["text"])
    if not getattr(full, "buffers", ()):
        return full
    inner = tuple(full.layout_shape[len(full.buffers):])
    return T.convert(parsed.attr, inner)


def _restrict(ours: Layout, theirs: Layout) -> tuple:
    """Both sides' bases over the hardware dims Triton's answer has."""
    a, b = ours.f2_bases(), theirs.f2_bases()
    if a is None or b is None:
        return ("not F2", ours.out_dims), ("F2" if b else "not F2", theirs.out_dims)
    keep = [k for k in theirs.in_names]
    return ({k: list(a.get(k, [])) for k in keep}, ours.out_dims), ({k: list(b[k]) for k in keep}, theirs.out_dims)


@lru_cache(maxsize=1)
def run_corpus():
    """Run every pair; returns (meta, Counter of outcomes, {outcome: [(pair, ours, theirs)]})."""
    meta, pairs = load_pairs()
    todo = [p for p in pairs if not _no_oracle(p)]
    raw = T.native_many([(p["text"], None) for p in todo], raw=True, lenient=True)
    retry = [i for i, r in enumerate(raw) if isinstance(r, Exception) and "rejected the text" in str(r)
             and todo[i]["element"] != "f16"]
    if retry:
        again = T.native_many([(todo[i]["text"].replace("x" + todo[i]["element"] + ",", "xf16,", 1), None)
                               for i in retry], raw=True, lenient=True)
        for i, r in zip(retry, again):
            if not isinstance(r, Exception):
                raw[i] = r
    counts: Counter = Counter()
    cases: dict[str, list] = {}

    def put(what, pair, ours, theirs):
        counts[what] += 1
        cases.setdefault(what, []).append((pair, ours, theirs))

    for p in pairs:
        why = _no_oracle(p)
        if why:
            try:
                T.parse(p["text"])
                put("read, no oracle", p, why, None)
            except LayoutError as e:
                put("refused, no oracle", p, str(e), why)
    for p, r in zip(todo, raw):
        theirs = _theirs(r)
        try:
            ours = _ours_one_buffer(p)
        except LayoutError as e:
            put("both reject" if isinstance(theirs, str) else "we refuse, Triton reads", p, str(e), theirs)
            continue
        except Exception as e:  # noqa: BLE001  (a bug of ours: reported, never hidden)
            put("crash", p, f"{type(e).__name__}: {e}", theirs)
            continue
        if isinstance(theirs, str):
            put("we read, Triton rejects", p, ours, theirs)
            continue
        a, b = _restrict(ours, theirs)
        put("agree" if a == b else "disagree", p, a, b)
    return meta, counts, cases


def _show(cases, what, n=5) -> str:
    out = []
    for pair, ours, theirs in cases.get(what, [])[:n]:
        out.append(f"{pair['origin']}: {pair['text'][:300]}\n    ours:   {str(ours)[:300]}\n    Triton: {str(theirs)[:300]}")
    return "\n".join(out)


def test_corpus_meta():
    meta, pairs = load_pairs()
    assert re.fullmatch(r"[0-9a-f]{40}", meta["commit"])
    assert meta["pairs"] == len(pairs) > 3000
    assert all(re.fullmatch(r"test/.+\.mlir:\d+", p["origin"]) for p in pairs)


def test_every_pair_triton_reads_agrees():
    _, counts, cases = run_corpus()
    assert counts["agree"] > 3500, counts
    for what in ("disagree", "crash", "we refuse, Triton reads"):
        assert counts[what] == 0, f"{counts}\n{what}:\n{_show(cases, what)}"


def test_every_pair_triton_rejects_we_reject():
    _, counts, cases = run_corpus()
    assert counts["we read, Triton rejects"] == 0, f"{counts}\n{_show(cases, 'we read, Triton rejects')}"
    for pair, ours, _ in cases.get("both reject", []):
        assert isinstance(ours, str) and len(ours) > 10 and "Traceback" not in ours, pair


def test_pairs_without_an_oracle():
    """amd_rotating_shared pairs: no Triton answer, but we read them all. partitioned(padded) pairs:
    read, unless the padded layout's own ``shape`` does not fit the pieces (Triton's
    ``paddedLinearLayout`` then covers another shape than the tensor's), which we refuse saying so."""
    _, counts, cases = run_corpus()
    assert counts["read, no oracle"] >= 5
    for pair, ours, _ in cases.get("refused, no oracle", []):
        assert pair["kind"] == "partitioned_shared" and "pieces cover" in ours, (pair, ours)


def test_multi_buffered_memdesc_is_buffers_of_one():
    """Buffer b of a multi-buffered memdesc is buffer 0's layout, offset by b buffer sizes."""
    _, pairs = load_pairs()
    seen = 0
    for p in pairs:
        if p["container"] != "memdesc":
            continue
        try:
            full = T.parse(p["text"])
        except LayoutError:
            continue
        if not full.buffers or full.in_size() > 1 << 16:
            continue
        one = _ours_one_buffer(p)
        hw = "col" if "row" in full.in_names else "offset"
        per = dict(one.in_dims)[hw]
        idx = full.hardware_indices()
        tab = full.table()
        k = len(full.buffers)
        col = full.in_names.index(hw)
        inner_idx = idx.copy()
        inner_idx[:, col] %= per
        want_inner = one.apply({n: inner_idx[:, i] for i, n in enumerate(one.in_names)})
        assert (tab[:, k:] == want_inner).all(), p["origin"]
        flat_buf = idx[:, col] // per
        got_buf = 0
        for d, s in enumerate(full.buffers):
            got_buf = got_buf * s + tab[:, d]
        assert (got_buf == flat_buf).all(), p["origin"]
        seen += 1
    assert seen >= 10
