"""The fragment atlas: coverage, cells, findings, and its Markdown/HTML/JSON reports parsed back.

Expectations come from the PTX/AMD ISAs (every claim expects the framework's layout to *be* the
ISA fragment) and from the findings recorded with their evidence in the corpus: Triton's mma v2
operands at small K hold each value twice (tests/test_ptx.py), Triton's RDNA4 16-bit WMMA operand
with kWidth = 8 swaps K bits 2 and 3 (tests/test_amd_spec.py), and Tilus 0.2's wgmma D layout for
tf32/8-bit inputs (derived from inst_k) is not the ISA's D fragment. ``--native`` asks Triton,
Tilus and IREE themselves.
"""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from layoutverify.apps import atlas as A
from layoutverify.apps.cli import main

ROOT = Path(__file__).resolve().parents[1]
ATLAS = ROOT / "corpora" / "atlas"

#: fragments the atlas must cover (the issue's list), by canonical ISA name
REQUIRED = [
    "mma.m16n8k16.f16.A", "mma.m16n8k16.f16.B", "mma.m16n8k16.f32.C", "mma.m16n8k16.bf16.A",
    "mma.m16n8k16.bf16.B", "mma.m16n8k8.f16.A", "mma.m16n8k8.f16.B", "mma.m16n8k8.f32.C",
    "mma.m16n8k32.s8.A", "mma.m16n8k32.s8.B", "mma.m16n8k32.s32.C", "mma.m16n8k4.tf32.A", "mma.m16n8k4.tf32.B",
    "mma.m8n8k4.row.f16.A", "mma.m8n8k4.f32.C",
    "wgmma.m64n8k16.f32.D", "wgmma.m64n64k16.f32.D", "wgmma.m64n128k16.f32.D", "wgmma.m64n256k16.f32.D",
    "wgmma.m64n64k16.f16.A",
    "ldmatrix.x1", "ldmatrix.x2", "ldmatrix.x4", "ldmatrix.x1.trans", "ldmatrix.x2.trans", "ldmatrix.x4.trans",
    "v_mfma_f32_32x32x8_f16.A", "v_mfma_f32_32x32x8_f16.B", "v_mfma_f32_32x32x8_f16.C",
    "v_mfma_f32_16x16x16_f16.A", "v_mfma_f32_16x16x16_f16.B", "v_mfma_f32_16x16x16_f16.C",
    "rdna3.v_wmma_f32_16x16x16_f16.A", "rdna4.v_wmma_f32_16x16x16_f16.C",
    # issue 14: int4, sparse, tcgen05, CDNA4 f8f6f4
    "mma.m16n8k32.s4.A", "mma.m16n8k32.s4.B", "mma.m16n8k32.u4.A", "mma.m16n8k32.u4.B",
    "mma.sp.m16n8k16.f16.A", "wgmma.sp.m64n64k32.f16.A", "tcgen05.ld.32x32b.x1", "tcgen05.ld.16x64b.x1",
    "tcgen05.ld.16x128b.x1", "tcgen05.ld.16x256b.x1", "tcgen05.ld.16x32bx2.x1",
    "v_mfma_f32_16x16x128_f8f6f4.A", "v_mfma_scale_f32_32x32x64_f8f6f4.B", "v_smfmac_f32_16x16x32_f16.A",
    "rdna4.v_swmmac_f32_16x16x32_f16.A",
    "mma.sp.m16n8k16.f16.E", "mma.sp.m16n8k64.e4m3.E", "mma.sp.m16n8k32.f16.B", "mma.sp.m16n8k128.e2m1.B",
]

#: (fragment, framework) -> the category the atlas must show
EXPECTED_CELLS = {
    ("mma.m16n8k16.f16.A", "triton"): "equal",
    ("mma.m16n8k16.f16.A", "cute"): "equal",
    ("mma.m16n8k16.f16.A", "tilus"): "equal",
    ("mma.m16n8k8.f16.A", "triton"): "equal_up_to_register_order",     # finding: K broadcast
    ("mma.m16n8k16.s8.B", "triton"): "equal_up_to_register_order",
    ("rdna4.v_wmma_f32_16x16x16_f16.A", "triton"): "differs",          # finding: kWidth 8 K-bit swap
    ("wgmma.m64n64k32.f32.D", "tilus"): "differs",                     # finding: Tilus wgmma D for k32
    ("wgmma.m64n64k16.f32.D", "tilus"): "equal",
    ("ldmatrix.x4", "triton"): "inexpressible",
    ("mma.m8n8k4.row.f16.A", "triton"): "inexpressible",
    ("v_mfma_f32_32x32x8_f16.C", "cute"): "inexpressible",
    ("v_mfma_f32_32x32x8_f16.C", "iree"): "equal",
    ("tcgen05.ld.16x256b.x1", "tilus"): "equal",
    ("tcgen05.ld.16x64b.x1", "tilus"): "equal",
    ("v_mfma_f32_16x16x128_f8f6f4.A", "triton"): "equal",
    ("v_mfma_scale_f32_32x32x64_f8f6f4.C", "triton"): "equal",
    ("mma.m16n8k32.s4.B", "cute"): "differs",            # computed: CUTLASS 4.2.0 int4 B
    ("mma.m16n8k32.s4.B", "tilus"): "equal",
    ("mma.sp.m16n8k16.f16.A", "triton"): "inexpressible",
    ("mma.sp.m16n8k16.f16.E", "cute"): "inexpressible",
}


@pytest.fixture(scope="module")
def atlas():
    return A.build([ATLAS], jobs=2)


def test_atlas_covers_the_fragments(atlas):
    assert len(atlas.fragments) >= 30
    missing = [f for f in REQUIRED if f not in atlas.fragments]
    assert not missing, missing
    assert atlas.frameworks[:3] == ["triton", "cute", "tilus"] and "iree" in atlas.frameworks
    for frag in atlas.fragments:
        spec = atlas.spec[frag]
        assert spec == "" or spec.split(":", 1)[0] in ("ptx", "amd"), (frag, spec)
        assert spec in ("", "ptx:" + frag, "amd:" + frag)
        # every fragment row is an ISA fragment with at least one framework cell (a claim, or a note
        # saying why the framework cannot express it)
        assert spec, frag
        assert any(atlas.cell(frag, fw) is not None for fw in atlas.frameworks), frag


def test_every_atlas_claim_passes(atlas):
    bad = [(e.claim.id, e.outcome.status, e.outcome.message) for e in atlas.entries()
           if not e.outcome.passed and not e.computed]
    assert not bad, bad
    assert atlas.ok


def test_cutlass_int4_b_error_is_a_computed_finding(atlas):
    """CUTLASS 4.2.0's SM80 int4 k32 B layout overlaps itself (README Findings): the corpus claims
    only that CuTe's B is the ISA's, with no ``known`` label, and the atlas finds the difference."""
    from layoutverify.adapters import parse_spec
    computed = {(c.fragment, c.framework): e for c, e in atlas.findings() if e.computed}
    assert set(computed) == {("mma.m16n8k32.s4.B", "cute"), ("mma.m16n8k32.u4.B", "cute")}
    for (frag, _), e in computed.items():
        assert e.claim.known is None and e.category == "differs"
        w = e.outcome.witness
        assert w["held_by"] == "a"                   # an ISA element CUTLASS's B never holds
        cute = parse_spec(e.claim.b)
        held = {tuple(int(v) for v in x) for x in cute.table()}
        assert tuple(w["element"]) not in held
        isa = parse_spec(e.claim.a)
        assert tuple(isa.apply({k: [v] for k, v in w["hardware"].items()})[0]) == tuple(w["element"])
    md = A.markdown(atlas)
    assert "computed finding" in md and "mma.m16n8k32.s4.B / cute" in md
    # the A operands of the same atoms are the ISA's
    assert atlas.cell("mma.m16n8k32.s4.A", "cute").category == "equal"


@pytest.mark.parametrize("cell, category", sorted(EXPECTED_CELLS.items()))
def test_cells(atlas, cell, category):
    c = atlas.cell(*cell)
    assert c is not None and c.category == category, (cell, c and c.to_json())


def test_findings_carry_witness_and_note(atlas):
    finds = atlas.findings()
    ids = {e.claim.id for _, e in finds}
    assert "amd_wmma::rdna4.v_wmma_f32_16x16x16_f16.A/triton-kw8" in ids
    assert "mma_sync::mma.m16n8k8.f16.A/triton" in ids
    assert "wgmma::wgmma.m64n64k8.f32.D/tilus" in ids
    for _, e in finds:
        assert (e.outcome.status == "known" and e.claim.note) or e.computed, e.claim.id
        assert e.outcome.witness and "hardware" in e.outcome.witness
    # the RDNA4 witness shows the K-bit swap: a K index with bit 2 or 3 set lands at the other
    rdna = next(e for _, e in finds if e.claim.id.endswith("rdna4.v_wmma_f32_16x16x16_f16.A/triton-kw8"))
    ka, kb = rdna.outcome.witness["a"][1], rdna.outcome.witness["b"][1]
    swap = lambda k: (k & 3) | ((k >> 2 & 1) << 3) | ((k >> 3 & 1) << 2)   # noqa: E731
    assert kb == swap(ka) and ka != kb


class _TableParser(HTMLParser):
    """Collects the atlas table (rows by data-fragment, cells by data-framework) and list items."""

    def __init__(self):
        super().__init__()
        self.rows, self.headers, self.lists = {}, [], {}
        self._row = self._cell = self._list = None
        self._in_th = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "data-fragment" in a:
            self._row = self.rows.setdefault(a["data-fragment"], {})
        elif tag == "td" and self._row is not None and "data-framework" in a:
            self._cell = dict(a, text="")
            self._row[a["data-framework"]] = self._cell
        elif tag == "th" and self._row is None:
            self._in_th = True
            self.headers.append("")
        elif tag == "ul" and "id" in a:
            self._list = self.lists.setdefault(a["id"], [])
        elif tag == "li" and self._list is not None:
            self._list.append("")

    def handle_endtag(self, tag):
        if tag == "td":
            self._cell = None
        elif tag == "tr":
            self._row = None
        elif tag == "th":
            self._in_th = False
        elif tag == "ul":
            self._list = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell["text"] += data
        elif self._in_th:
            self.headers[-1] += data
        elif self._list is not None and self._list:
            self._list[-1] += data


def _markdown_table(text: str) -> tuple[list[str], dict]:
    lines = [ln for ln in text.splitlines() if ln.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for ln in lines[1:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", ln.strip().strip("|"))]
        rows[cells[0].strip("`")] = dict(zip(header[1:], cells[1:]))
    return header, rows


def test_reports_parse_back(atlas, tmp_path, capsys):
    md, page, js = tmp_path / "atlas.md", tmp_path / "atlas.html", tmp_path / "atlas.json"
    rc = main(["atlas", "--corpus", str(ATLAS), "--markdown", str(md), "--html", str(page), "--json", str(js),
               "-j", "2"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.splitlines()[0].split() == ["fragment"] + atlas.frameworks
    assert re.search(r"^mma\.m16n8k8\.f16\.A\s+~\*\s+=\s+=", out, re.M)

    # Markdown: one row per fragment, one column per framework, cells by category
    header, rows = _markdown_table(md.read_text())
    assert header == ["fragment"] + atlas.frameworks
    assert list(rows) == atlas.fragments
    word = {"equal": "✅ equal", "equal_up_to_register_order": "🔁 equal up to register order",
            "differs": "❌ differs", "inexpressible": "— not expressible"}
    for (frag, fw), cat in EXPECTED_CELLS.items():
        assert word[cat] in rows[frag][fw], (frag, fw, rows[frag][fw])
    assert "(finding)" in rows["mma.m16n8k8.f16.A"]["triton"]
    assert "kw8: ❌ differs (finding)" in rows["rdna4.v_wmma_f32_16x16x16_f16.A"]["triton"]
    assert "kw4: ✅ equal" in rows["rdna4.v_wmma_f32_16x16x16_f16.A"]["triton"]
    text = md.read_text()
    n_find = len(atlas.findings())
    assert f"## Findings ({n_find})" in text and text.count("  - witness: at ") >= n_find

    # HTML: same matrix through an HTML parser
    p = _TableParser()
    p.feed(page.read_text())
    assert p.headers[:2] == ["fragment", "spec"] and p.headers[2:] == atlas.frameworks
    assert list(p.rows) == atlas.fragments
    for (frag, fw), cat in EXPECTED_CELLS.items():
        assert p.rows[frag][fw]["data-category"] == cat
    assert "witness:" in p.rows["wgmma.m64n64k32.f32.D"]["tilus"]["title"]
    assert "ldmatrix" in p.rows["ldmatrix.x4"]["triton"]["title"]          # the inexpressible note
    assert len(p.lists["findings"]) == n_find
    assert len(p.lists["inexpressible"]) == sum(1 for c in atlas.cells.values() if c.inexpressible)

    # JSON agrees with the object
    doc = json.loads(js.read_text())
    assert doc["fragments"] == atlas.fragments and doc["ok"] is True
    cats = {(c["fragment"], c["framework"]): c["category"] for c in doc["cells"]}
    for cell, cat in EXPECTED_CELLS.items():
        assert cats[cell] == cat


NATIVE_CORPUS = '''
[[claim]]
name = "mma-C/triton"
fragment = "mma.m16n8k16.f32.C"
framework = "triton"
a = "ptx:mma.m16n8k16.f32.C"
b = "triton:tensor<16x8xf32, #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [1, 1], instrShape = [16, 8]}>>"
expect = "equal"

[[claim]]
name = "small-k/triton"
fragment = "mma.m16n8k8.f16.A"
framework = "triton"
a = "ptx:mma.m16n8k8.f16.A"
b = "triton:tensor<16x8xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [1, 1], instrShape = [16, 8]}>, kWidth = 2}>>"
expect = "equal"
known = "equal_up_to_register_order"
note = "small K"

[[claim]]
name = "mma-A/tilus"
fragment = "mma.m16n8k16.f16.A"
framework = "tilus"
a = "ptx:mma.m16n8k16.f16.A"
b = "tilus:column_local(2, 2).spatial(8, 4).local(1, 2)"
native = "mma_dot:m16n8k16v1_f16_f32:A"
expect = "equal"

[[claim]]
name = "wgmma-k32/tilus"
fragment = "wgmma.m64n64k32.f32.D"
framework = "tilus"
a = "ptx:wgmma.m64n64k32.f32.D"
b = "tilus:local(1, 1).column_spatial(4, 1).column_local(2, 4).spatial(8, 4).local(1, 4)"
native = "wgmma:64,64,64,64,32"
expect = "equal"
known = "not_equal"
note = "Tilus derives the D column run from inst_k"

[[claim]]
name = "ldmatrix/tilus"
fragment = "ldmatrix.x1"
framework = "tilus"
a = "ptx:ldmatrix.x1"
b = "tilus:spatial(8, 4).local(1, 2)"
native = "ldmatrix:2:false"
expect = "equal"

[[claim]]
name = "mfma-C/iree"
fragment = "v_mfma_f32_16x16x16_f16.C"
framework = "iree"
a = "amd:v_mfma_f32_16x16x16_f16.C"
b = "iree:#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], batch_tile = [1, 1], outer_tile = [1, 1], thread_tile = [4, 16], element_tile = [4, 1], subgroup_strides = [0, 0], thread_strides = [16, 1]>"
expect = "equal"

[[claim]]
name = "mma-C/cute"
fragment = "mma.m16n8k16.f32.C"
framework = "cute"
a = "ptx:mma.m16n8k16.f32.C"
b = "cute:SM80_16x8x16_F32F16F16F32_TN.C"
expect = "equal"
'''


def test_native_mode_asks_the_frameworks(tmp_path, capsys):
    pytest.importorskip("triton")
    pytest.importorskip("tilus")
    c = tmp_path / "native.toml"
    c.write_text(NATIVE_CORPUS)
    at = A.build([c], native=True, jobs=1)
    n = {e.claim.name: e.native for e in at.entries()}
    # Triton's own parse + toLinearLayout: equal to the ISA, and to our parse
    assert n["mma-C/triton"].status == "ok" and n["mma-C/triton"].verdict == "equal" and n["mma-C/triton"].agrees
    assert n["mma-C/triton"].source.startswith("triton ")
    assert n["small-k/triton"].verdict == "equal_up_to_register_order" and n["small-k/triton"].agrees
    # Tilus's own instruction modules
    assert n["mma-A/tilus"].verdict == "equal" and n["mma-A/tilus"].agrees
    assert n["mma-A/tilus"].source == "tilus mma_dot:m16n8k16v1_f16_f32:A"
    assert n["ldmatrix/tilus"].verdict == "equal" and n["ldmatrix/tilus"].agrees
    w = n["wgmma-k32/tilus"]
    assert w.verdict == "not_equal" and w.agrees and w.witness["hardware"]   # the finding, from Tilus itself
    # IREE's own distribution
    if n["mfma-C/iree"].status != "unavailable":
        assert n["mfma-C/iree"].verdict == "equal" and n["mfma-C/iree"].agrees
    # CuTe: the atom from CUTLASS's compiled C++ traits when a compiler and the headers are here;
    # otherwise said so, not silently skipped
    from layoutverify.adapters.cute import cpp
    cute = n["mma-C/cute"]
    if isinstance(cpp.toolchain(), str):
        assert cute.status == "unavailable" and "native" in cute.message
    else:
        assert cute.status == "ok" and "CUTLASS C++" in cute.source, cute
        assert cute.verdict == "equal" and cute.agrees
    assert at.ok
    md = A.markdown(at)
    assert "native ✅ equal" in md and "## Our adapters vs the installed frameworks (0 disagreements)" in md


def test_native_disagreement_is_shown_and_fails(tmp_path, capsys):
    """When the framework's own layout is not what our adapter reads from the text, both are shown
    and the atlas exits 1. (Here forced: the native reference names another Tilus config.)"""
    pytest.importorskip("tilus")
    c = tmp_path / "wrong.toml"
    c.write_text('''
[[claim]]
name = "mismatch/tilus"
fragment = "mma.m16n8k16.f16.B"
framework = "tilus"
a = "ptx:mma.m16n8k16.f16.B"
b = "tilus:local(2, 1).column_spatial(4, 8).local(2, 1)"
native = "mma_dot:m16n8k32v1_i8_i32:B"
expect = "equal"
''')
    md = tmp_path / "a.md"
    rc = main(["atlas", "--corpus", str(c), "--native", "--markdown", str(md), "-j", "1"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "=/x" in out
    text = md.read_text()
    assert "native ❌ differs ≠ our parse" in text
    assert "## Our adapters vs the installed frameworks (1 disagreements)" in text
    assert "our parse vs tilus mma_dot:m16n8k32v1_i8_i32:B: different_tensors" in text


def test_bad_input(tmp_path, capsys):
    rc = main(["atlas", "--corpus", str(tmp_path / "missing")])
    assert rc == 2
    c = tmp_path / "none.toml"
    c.write_text('[[claim]]\nname = "x"\na = "ptx:mma.m16n8k16.f32.C"\nb = "ptx:mma.m16n8k16.f32.C"\nexpect = "equal"\n')
    rc = main(["atlas", "--corpus", str(c)])
    assert rc == 2 and "no atlas claims" in capsys.readouterr().err
    from layoutverify.adapters import adapter
    with pytest.raises(Exception, match="unknown tilus native reference"):
        adapter("tilus").native("spatial(2)", reference="bogus:1")
    assert not hasattr(A, "tilus_instruction_layout") and not hasattr(A, "_import")   # no framework code in apps


def test_atlas_notes_tilus_flatten(atlas):
    """The atlas tells a Tilus user that flatten's code and docstring disagree (and how we read it)."""
    assert any("flatten" in n and "exclusive" in n for n in atlas.notes.get("tilus", []))
    md = A.markdown(atlas)
    assert "## Framework notes" in md and "flatten_documented" in md
    assert 'id="notes"' in A.render_html(atlas)
