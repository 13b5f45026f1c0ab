"""``layoutverify scan`` on tutorial-style kernels compiled on the CPU (issue 22).

Thirteen cases of eight kernels in the style of the Triton tutorials (grouped matmul fp16 in five
autotune configurations and fp8, FlashAttention-2 forward, layer norm, persistent matmul with
tensor descriptors, grouped GEMM, W8A8 scaled matmul, transpose + reduce, rotary embedding;
tests/scan_tutorials.py) are compiled for sm_80, sm_90, sm_100, gfx942 and gfx950 by Triton 3.9
and 3.8 (cached on disk per release, tests/scan_cache.py), and every fact the scan reports is
checked against the compiled code:

* the instructions it attributes to each op (class, width, count) are the instructions that an
  independent reading of the PTX/AMDGCN line tables (tests/scan_asm.py) finds at the op's source
  location;
* every store and load through a shared layout (the bank model's instruction, conflicts and the
  bank count of its target: 32 banks on NVIDIA and gfx942, 64 on gfx950, padding of
  ``padded_shared`` applied) agrees with the addresses the compiled code computes for every
  thread (tests/scan_addresses.py);
* the estimate from the layouts alone is within 20% of the cost from the compiled facts on at
  least 90% of the kernels' layout-op locations and of the conversion suite.
"""
from __future__ import annotations

import collections
import json
import statistics
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scan_addresses import accesses, wavefronts  # noqa: E402
from scan_asm import class_counts  # noqa: E402

RELEASES = ("3.9", "3.8")
TARGETS = {"cuda:80", "cuda:90", "cuda:100", "hip:gfx942", "hip:gfx950"}
#: layout-op roles whose facts the compiled code gives, and the classes each may own
ROLE_CLASSES = {"convert": ("shared_store", "shared_load", "ldmatrix", "stmatrix", "shuffle", "barrier"),
                "store": ("shared_store", "stmatrix", "barrier"),
                "load": ("shared_load", "ldmatrix", "barrier"),
                "global_load": ("global_load",), "global_store": ("global_store",)}


def _cli(*args) -> int:
    from layoutverify.apps.cli import main
    return main([str(a) for a in args])


@pytest.fixture(scope="module")
def tutorials(triton_python, tmp_path_factory):
    """``tutorials(release)``: ``{"cache", "rows", "doc"}`` of the kernels compiled by that release."""
    from scan_cache import compiled_tutorials
    from triton_releases import cache_root, triton_version_of

    pytest.importorskip("triton")
    memo: dict = {}

    def get(release: str) -> dict:
        if release not in memo:
            py = triton_python(release)
            cache, rows = compiled_tutorials(py, triton_version_of(py), cache_root())
            out = tmp_path_factory.mktemp("tut") / f"scan-{release}.json"
            assert _cli("scan", cache, "--json", out, "--quiet") == 0
            memo[release] = {"cache": cache, "rows": rows, "doc": json.loads(out.read_text()), "python": py}
        return memo[release]

    return get


@pytest.mark.parametrize("release", RELEASES)
def test_every_case_compiles_and_each_kernel_has_its_own_identity(tutorials, release):
    from scan_tutorials import TARGETS as COMPILED, cases
    t = tutorials(release)
    errors = [r for r in t["rows"] if "error" in r]
    assert not errors, errors
    doc = t["doc"]
    n_cases = sum(len(cases(tg)) for tg in COMPILED)
    assert len(doc["kernels"]) == n_cases == len(t["rows"])
    assert {k["target"] for k in doc["kernels"]} == TARGETS
    assert doc["summary"]["errors"] == 0, [o.get("error") for k in doc["kernels"] for o in k["ops"] if o.get("error")]
    keys = [k["identity_key"] for k in doc["kernels"]]
    assert len(set(keys)) == len(keys), collections.Counter(keys).most_common(3)
    for k in doc["kernels"]:
        meta = json.loads(Path(k["path"]).with_suffix(".json").read_text())
        ident = k["identity"]
        assert (ident["num_warps"], ident["num_stages"], ident["num_ctas"]) == \
            (meta["num_warps"], meta["num_stages"], meta["num_ctas"])
        assert k["facts_from"] == "compiled"
    # the five autotune configurations of the fp16 matmul are five kernels per target, told apart
    for target in TARGETS:
        fp16 = [k for k in doc["kernels"] if k["name"] == "grouped_matmul" and k["target"] == target
                and "f16>" in k["identity"]["signature"][0]]
        assert len(fp16) == 5, (target, [k["specialisation"] for k in fp16])


def _owned(op: dict) -> tuple:
    """Instruction classes an op owns (an async copy: the copy, AMD's fill of ``other``, barriers)."""
    if op["op"].endswith(("async_copy_global_to_local", "buffer_load_to_local")):
        return ("async_copy", "shared_store", "barrier")
    return ROLE_CLASSES[op["role"]]


def _ops_by_location(k: dict) -> dict:
    out: dict = {}
    for o in k["ops"]:
        if o.get("loc") and o["role"] in ROLE_CLASSES and "error" not in o:
            out.setdefault(o["loc"]["text"], []).append(o)
    return out


@pytest.mark.parametrize("release", RELEASES)
def test_reported_facts_are_the_instructions_at_each_location(tutorials, release):
    """For every source location with layout ops whose facts come from the compiled code: per
    instruction class the ops' reported counts add up to the instructions an independent reading
    of the listing finds there, with the same widths; the listed instruction lines are exactly
    those instructions."""
    doc = tutorials(release)["doc"]
    checked = classes_checked = 0
    for k in doc["kernels"]:
        asm = k["asm"].get("ptx") or k["asm"]["amdgcn"]
        oracle = class_counts(asm)
        for where, ops in _ops_by_location(k).items():
            compiled = [o for o in ops if o["cost"]["facts_from"] in ("compiled", "mixed")]
            if not compiled:
                continue
            file, line, col = where.rsplit(":", 2)
            here = oracle.get((file, int(line), int(col)), {})
            estimated = {n.split(":", 1)[0] for o in compiled for n in o["cost"].get("notes", [])
                         if "estimated from the layouts (" in n}
            classes = {c for o in compiled for c in _owned(o)} - estimated
            for cls in classes:
                reported: dict = collections.Counter()
                for o in compiled:
                    for w, n in o["cost"]["widths"].get(cls, {}).items():
                        reported[int(w)] += n
                got = {w: n for w, n in reported.items() if n > 0.001}
                want = dict(here.get(cls, {}))
                # the JSON rounds each op's share to 3 decimals
                assert set(got) == set(want) and all(abs(got[w] - want[w]) <= 0.002 * len(compiled) for w in want), \
                    (release, k["name"], k["target"], where, cls, got, want)
                classes_checked += 1
            lines = {x["line"] for o in compiled for x in (o.get("compiled") or {}).get("lines", [])}
            want_lines = {ln for cls in classes for ln in here.get(("lines", cls), ())}
            capped = any(len((o.get("compiled") or {}).get("lines", [])) == 48 for o in compiled)
            assert lines <= want_lines and (lines == want_lines or capped), (k["name"], where)
            checked += 1
    print(f"\nTriton {release}: {checked} locations, {classes_checked} (location, class) facts checked")
    assert checked >= 150 and classes_checked >= 300


def _shared_accesses(k: dict):
    asm = k["asm"].get("ptx") or k["asm"]["amdgcn"]
    kind = "ptx" if asm.endswith(".ptx") else "amdgcn"
    lanes = k["threads_per_warp"]
    return {a.line: a for a in accesses(Path(asm).read_text(), kind, k["num_warps"] * lanes)}


@pytest.mark.parametrize("release", RELEASES)
def test_bank_model_agrees_with_the_addresses_of_the_compiled_code(tutorials, release):
    """Every location whose stores (or loads) all go through one shared layout: the conflict
    degree the scan reports (and so its ``bank_conflicts`` finding, or its absence) is the worst
    phase of the compiled instructions there, their addresses computed for every thread, under
    the bank count of the module's target (64 on gfx950)."""
    doc = tutorials(release)["doc"]
    from layoutverify.apps.scan.compiled import read_compiled
    agree, unknown, findings_checked, by_target = 0, 0, 0, collections.Counter()
    for k in doc["kernels"]:
        acc = _shared_accesses(k)
        code = read_compiled(k["asm"].get("ptx") or k["asm"]["amdgcn"])
        banks = 64 if k["target"] == "hip:gfx950" else 32
        lanes, warps = k["threads_per_warp"], k["num_warps"]
        for where, ops in _ops_by_location(k).items():
            if any(o["role"] == "convert" for o in ops):
                continue   # a conversion's scratch buffer shares the location
            file, line, col = where.rsplit(":", 2)
            for role in ("store", "load"):
                rs = [o for o in ops if o["role"] == role and o.get("bank_conflicts")]
                if not rs:
                    continue
                reports = {(next(iter(o["bank_conflicts"].values()))["conflict_ways"],
                            next(iter(o["bank_conflicts"].values()))["banks"]) for o in rs}
                assert len(reports) == 1, (k["name"], where, reports)
                ways, nbanks = reports.pop()
                assert nbanks == banks, (k["target"], nbanks)
                lines = [i.line for i in code.at(file, int(line), int(col)) if i.line in acc and acc[i.line].kind == role]
                worst = [wavefronts(acc[n], w, lanes, banks)[1] for n in lines if acc[n].addresses is not None
                         for w in range(warps)]
                if not worst:
                    unknown += 1
                    continue
                assert max(worst) == ways, (release, k["name"], k["target"], where, role, ways, max(worst))
                agree += 1
                by_target[k["target"]] += 1
                findings_checked += sum(1 for o in rs for f in o["findings"] if f["code"] == "bank_conflicts")
    print(f"\nTriton {release}: {agree} locations agree with the compiled addresses ({dict(by_target)}), "
          f"{unknown} with addresses not computable, {findings_checked} bank_conflicts findings among them")
    assert agree >= 100 and agree >= 2 * unknown
    assert set(by_target) == TARGETS and by_target["hip:gfx950"] >= 10


def test_gfx950_and_padded_shared_findings_hold(tutorials):
    """The modules the issue found 16 false bank-conflict findings in: gfx950 (64 banks) and
    ``padded_shared`` layouts. Every bank finding left on them is confirmed by the compiled
    addresses (the test above), and the padded layouts are read with their padding (a padded
    layout's bank report differs from the same layout unpadded wherever the padding matters)."""
    from layoutverify.adapters import parse_spec
    from layoutverify.core.banks import bank_conflicts
    doc = tutorials("3.9")["doc"]
    padded = 0
    for k in doc["kernels"]:
        if not k["target"].startswith("hip:"):
            continue
        for o in k["ops"]:
            mem = (o["source"] if o["role"] == "load" else o.get("target") or {}).get("spec") or ""
            reg = (o.get("target") if o["role"] == "load" else o["source"]) or {}
            if "padded_shared" not in mem or not o.get("bank_conflicts") or o["role"] not in ("store", "load"):
                continue
            rep = next(iter(o["bank_conflicts"].values()))
            if rep.get("instruction"):
                continue
            m = parse_spec(mem)
            assert getattr(m, "padding", None), mem
            r = parse_spec(reg["spec"])
            if r.out_sizes != m.out_sizes:
                continue
            arch = "cdna4" if k["target"] == "hip:gfx950" else "cdna3"
            assert bank_conflicts(r, m, o["element_bits"], arch=arch).to_json()["conflict_ways"] == rep["conflict_ways"]
            padded += 1
    assert padded >= 5


def _location_errors(doc: dict) -> list[float]:
    """Relative difference of the estimate from the layouts and the cost from the compiled facts,
    per source location of layout ops (ops sharing a location compared as their sum: the compiled
    code can only be attributed per location)."""
    groups: dict = {}
    for k in doc["kernels"]:
        for o in k["ops"]:
            c = o["cost"]
            if c.get("facts_from") in ("compiled", "mixed") and "estimate" in c:
                g = groups.setdefault((k["path"], o["loc"]["text"] if o.get("loc") else o["key"]), [0.0, 0.0])
                g[0] += c["cycles"]
                g[1] += c["estimate"]["cycles"]
    return [abs(e - a) / a if a > 0 else (0.0 if e == 0 else 1.0) for a, e in groups.values()]


@pytest.mark.parametrize("release", RELEASES)
def test_layout_estimate_within_20_percent_of_compiled_facts_on_real_kernels(tutorials, release):
    errs = _location_errors(tutorials(release)["doc"])
    within = sum(e <= 0.2 for e in errs) / len(errs)
    print(f"\nTriton {release}, {len(errs)} locations of layout ops on 5 targets: estimate within 20% of the "
          f"compiled facts on {within:.1%}, median error {statistics.median(errs):.1%}")
    assert len(errs) >= 200 and within >= 0.9


def test_layout_estimate_within_20_percent_of_compiled_facts_on_the_conversion_suite(suite_ptx):
    """The conversion suite compiled for sm_90 by the installed Triton: the estimate of each
    conversion from its two layouts against the cost of the PTX's instructions."""
    from layoutverify.apps.measure.suite import layouts, load_suite
    from layoutverify.apps.scan.compiled import parse_compiled
    from layoutverify.apps.scan.facts import add, cost_of, estimate_counts, rename_or_select
    from layoutverify.apps.scan.target import target_of
    from layoutverify.apps.scan.triton_choice import triton_choice
    from layoutverify.apps.measure.validate import triton_release
    from layoutverify.core.conversion import analyze
    release = ".".join(triton_release().split(".")[:2])
    compiled = suite_ptx(release)
    target = target_of("cuda:90")
    errs = []
    for i, p in enumerate(load_suite()):
        a, b = layouts(p, release)
        code = parse_compiled(compiled[i]["ptx"], "ptx")
        got: dict = {}
        for ins in [x for v in code.by_location.values() for x in v] + code.unlocated:
            if ins.cls in ROLE_CLASSES["convert"]:
                add(got, ins.cls, ins.width, 1)
        move = rename_or_select(a, b) if analyze(a, b).mechanism == "register_permute" else None
        est, _ = estimate_counts("convert", "ttg.convert_layout", src=a, dst=b, element_bytes=p.element_bytes,
                                 mechanism=triton_choice(a, b, release).mechanism, move=move)
        kw = dict(warps=max(a.in_size("warp"), b.in_size("warp")), elements=a.out_size(), element_bytes=p.element_bytes)
        c, e = cost_of(got, target, **kw)["cycles"], cost_of(est, target, **kw)["cycles"]
        errs.append(abs(e - c) / c if c > 0 else (0.0 if e == 0 else 1.0))
    within = sum(x <= 0.2 for x in errs) / len(errs)
    print(f"\nconversion suite, {len(errs)} pairs, Triton {release} sm_90: estimate within 20% of the compiled "
          f"facts on {within:.1%}, median error {statistics.median(errs):.1%}")
    assert len(errs) == 73 and within >= 0.9


# ---------------------------------------------------------------------------------------------
# findings
def test_required_no_op_is_info_and_no_replicated_register_noise(tutorials):
    """A conversion to a matrix instruction's register operand between equal layouts is required
    by the IR: info, not a JUnit failure. No tensor with a size-1 dim (the 128x1 row statistics
    of MFMA/MMA kernels) gets ``replicated_registers``."""
    doc = tutorials("3.9")["doc"]
    required = [o for k in doc["kernels"] for o in k["ops"]
                for f in o["findings"] if f["code"] == "required_no_op_conversion"]
    assert required
    for o in required:
        assert "dot_op" in o["target"]["spec"] and o["verdict"] == "equal"
        (f,) = [f for f in o["findings"] if f["code"] == "required_no_op_conversion"]
        assert f["severity"] == "info" and not f["fixable"]
    for k in doc["kernels"]:
        for o in k["ops"]:
            for f in o["findings"]:
                if f["code"] == "replicated_registers":
                    shapes = [o["source"].get("shape") or [], (o.get("target") or {}).get("shape") or []]
                    assert not any(1 in s for s in shapes), (k["name"], o["key"])


def test_wording_names_rename_select_or_shuffle():
    """``shared_where_cheaper_suffices`` says what suffices in the words of the mechanism: a
    register rename (one register map for every lane), a lane-dependent select, or warp
    shuffles. The pairs: ``B`` swaps ``A``'s two register bases (thread t's register 1 of B is
    its register 2 of A in every lane: a rename); ``B`` moves lane bit 0 to column 5 = 4 xor 1
    (Triton 3.6 accepts that basis), so each lane keeps its columns but which register holds a
    column depends on the lane: a select."""
    from layoutverify.adapters import parse_spec
    from layoutverify.apps.scan.facts import rename_or_select
    from layoutverify.apps.scan.findings import cheaper_message
    from layoutverify.core.conversion import analyze

    def lin(reg, lane0, **kw):
        return parse_spec(f"triton:#ttg.linear<{{register = {reg}, lane = [{lane0}, [0, 8], [1, 0], [2, 0], [4, 0]], "
                          f"warp = [[8, 0], [16, 0]], block = []}}>", shape=(32, 16), **kw)

    a = lin("[[0, 1], [0, 2]]", "[0, 4]")
    renamed = lin("[[0, 2], [0, 1]]", "[0, 4]")
    selected = lin("[[0, 1], [0, 2]]", "[0, 5]", triton_version="3.6")
    assert analyze(a, renamed).mechanism == analyze(a, selected).mechanism == "register_permute"
    # 32-bit elements: each register is a word, any uniform map is a rename; 16-bit elements are
    # packed two to a word, and swapping registers 1 and 2 splits both words: a byte permute
    assert rename_or_select(a, renamed, 4) == "rename"
    assert rename_or_select(a, renamed, 2) == "permute"
    assert rename_or_select(a, lin("[[0, 1], [0, 2]]", "[0, 4]"), 2) == "rename"
    assert rename_or_select(a, selected, 4) == "select"
    ta, ts = a.table(), selected.table()
    # lane 0 keeps registers in place, lane 1 swaps registers 0/1 and 2/3: a lane-dependent select
    assert (ta[0] == ts[0]).all() and (ta[4 * 1 + 1] == ts[4 * 1 + 0]).all()
    assert "renaming registers suffices" in cheaper_message("intra_cta", "r", "rename")
    assert "lane-dependent register select" in cheaper_message("intra_warp", "r", "select")
    assert "byte permute within each thread" in cheaper_message("intra_warp", "r", "permute")
    assert "warp shuffles suffice" in cheaper_message("intra_cta", "r", "intra_warp")


@pytest.fixture(scope="module")
def reports(tutorials, tmp_path_factory):
    """Markdown, JUnit and HTML of the Triton 3.9 scan, written by one command."""
    t = tutorials("3.9")
    root = tmp_path_factory.mktemp("reports")
    md, xml, html = root / "s.md", root / "s.xml", root / "html"
    assert _cli("scan", t["cache"], "--markdown", md, "--junit", xml, "--html", html, "--quiet") == 0
    return {"md": md, "xml": xml, "html": html, "doc": t["doc"]}


def test_reports_name_target_and_specialisation(reports):
    md, xml, html, doc = reports["md"], reports["xml"], reports["html"], reports["doc"]
    root = ET.parse(xml).getroot()
    suites = root.findall("testsuite")
    assert len(suites) == len(doc["kernels"])
    names = [s.get("name") for s in suites]
    assert len(set(names)) == len(names)
    for s, k in zip(suites, doc["kernels"]):
        assert k["target"] in s.get("name") and k["specialisation"] in s.get("name")
    # failures only for what a compiler change can fix
    failing = sum(1 for s in suites for c in s.findall("testcase") if c.find("failure") is not None)
    fixable = sum(1 for k in doc["kernels"] for o in k["ops"]
                  if any(f["fixable"] and f["severity"] in ("warning", "error") for f in o["findings"]))
    assert failing == fixable
    text = md.read_text()
    for k in doc["kernels"][:5]:
        assert k["target"] in text and k["specialisation"] in text
    page = (html / "index.html").read_text()
    assert "hip:gfx950" in page and "warps=" in page


def test_html_report_leads_with_what_costs(reports):
    """A kernel page: findings, then the costliest ops (each with its compiled instructions and
    grids), then the annotated Python source, then the ops, trivial ones folded; sortable by a
    script in the page; nothing fetched from elsewhere."""
    html = reports["html"]
    k = max((k for k in reports["doc"]["kernels"] if k["target"] == "cuda:90"), key=lambda k: k["totals"]["score"])
    page = next(p for p in html.iterdir() if p.name.startswith(f"{k['name']}-cuda_90")).read_text()
    order = [page.index(h) for h in ("<h2>Findings", "<h2>Costliest ops", "<h2>Source", "<h2>All ops")]
    assert order == sorted(order)
    assert "lvSort" in page and "<script>" in page and "http" not in page.replace(k["path"], "")
    top = max(k["ops"], key=lambda o: o["cost"]["score"])
    first = page.index("<h2>Costliest ops")
    assert page.index(top["key"], first) < page.index("<h2>Source")
    assert "at this location" in page   # the compiled instructions
    src = (HERE / "scan_tutorials.py").read_text().splitlines()
    line = top["loc"]["line"]
    import html as H
    assert H.escape(src[line - 1]) in page
    trivial = sum(1 for o in k["ops"] if o["role"] in ("view", "operand") and not o["findings"])
    if trivial:
        assert "trivial ops" in page
