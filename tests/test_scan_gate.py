"""The ``scan --baseline`` gate on real caches (issue 22): no false failures, no false passes.

The kernels are tests/scan_tutorials.py's, compiled on the CPU by Triton 3.9 and 3.8 (cached,
tests/scan_cache.py). Modules worsened on purpose are real TTGIR from those caches, edited and
compiled again from the TTGIR stage by the installed Triton (``triton.compile`` on a ``.ttgir``
file), so every worsening is checked on the code the compiler emits for it.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scan_addresses import accesses, wavefronts  # noqa: E402
from scan_asm import class_counts  # noqa: E402

KEEP = (".ttgir", ".json", ".ptx", ".amdgcn")


def _cli(*args) -> int:
    from layoutverify.apps.cli import main
    return main([str(a) for a in args])


def _scan(path, out: Path, *extra) -> tuple[int, dict]:
    rc = _cli("scan", path, "--json", out, "--quiet", *extra)
    return rc, json.loads(out.read_text())


@pytest.fixture(scope="module")
def scanned(caches, tmp_path_factory):
    """``scanned(release)``: ``(path of the --json scan, its document)`` of a release's whole cache."""
    memo: dict = {}

    def get(release: str):
        if release not in memo:
            out = tmp_path_factory.mktemp("scan") / f"{release}.json"
            rc, doc = _scan(caches(release), out)
            assert rc == 0
            memo[release] = (out, doc)
        return memo[release]

    return get


@pytest.fixture(scope="module")
def caches(triton_python):
    """``caches(release)``: the tutorial kernels' cache folder compiled by that release."""
    from scan_cache import compiled_tutorials
    from triton_releases import cache_root, triton_version_of
    pytest.importorskip("triton")
    memo: dict = {}

    def get(release: str) -> Path:
        if release not in memo:
            py = triton_python(release)
            memo[release] = compiled_tutorials(py, triton_version_of(py), cache_root())[0]
        return memo[release]

    return get


def _copy(cache: Path, dest: Path, rename=None, kernels=None) -> Path:
    """A copy of the cache's modules, metadata and compiled code (``rename``: hash folder -> new
    name; ``kernels``: only the folders of these kernel names)."""
    dest.mkdir(parents=True)
    for d in sorted(p for p in cache.iterdir() if p.is_dir()):
        if kernels is not None and not any((d / f"{k}.ttgir").is_file() for k in kernels):
            continue
        target = dest / ((rename or {}).get(d.name, d.name))
        target.mkdir()
        for f in d.iterdir():
            if f.suffix in KEEP and not f.name.startswith("__grp__"):
                shutil.copy(f, target / f.name)
    return dest


def _rows(cmp: dict) -> list:
    return [(k["name"], kind, r["key"]) for k in cmp["kernels"] for kind in ("new", "removed", "costlier", "cheaper")
            for r in k.get(kind, [])]


def test_unchanged_cache_passes_and_identical_configs_in_swapped_folders_pass(caches, tmp_path):
    """The five autotune configurations of a kernel, byte for byte the same, in hash folders
    whose names are permuted (so that folder order pairs each with another configuration):
    every kernel pairs with itself by identity, nothing is reported, the gate passes."""
    cache = caches("3.9")
    a = _copy(cache, tmp_path / "a", kernels=("grouped_matmul",))
    groups: dict = {}
    for d in sorted(p for p in a.iterdir()):
        meta = json.loads(next(d.glob("*.json")).read_text())
        groups.setdefault((meta["name"], json.dumps(meta["target"])), []).append(d.name)
    rename = {}
    for names in groups.values():
        if len(names) > 1:
            rename.update(dict(zip(names, names[1:] + names[:1])))
    assert len(rename) >= 25   # the fp16 configurations and the fp8 kernel of every target
    b = _copy(cache, tmp_path / "b", rename, kernels=("grouped_matmul",))
    rc, old = _scan(a, tmp_path / "old.json")
    assert rc == 0
    rc, same = _scan(a, tmp_path / "same.json", "--baseline", tmp_path / "old.json")
    assert rc == 0 and not _rows(same["baseline"]) and same["baseline"]["counts"]["compared"] == len(old["kernels"])
    rc, new = _scan(b, tmp_path / "new.json", "--baseline", tmp_path / "old.json")
    cmp = new["baseline"]
    assert rc == 0 and cmp["worse"] is False, cmp["reasons"]
    assert cmp["counts"] == {"compared": len(old["kernels"]), "new": 0, "vanished": 0}
    assert not _rows(cmp)
    # the folders really moved: each renamed kernel now sits where another configuration was
    old_dirs = {Path(k["path"]).parent.name: k["identity_key"] for k in old["kernels"]}
    new_dirs = {Path(k["path"]).parent.name: k["identity_key"] for k in new["kernels"]}
    assert sum(1 for d in rename.values() if old_dirs[d] != new_dirs[d]) == len(rename)


def test_empty_folder_against_a_baseline_fails(scanned, tmp_path, capsys):
    base_json, base = scanned("3.9")
    shutil.copy(base_json, tmp_path / "base.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    for extra in ((), ("--allow-missing",)):
        junit = tmp_path / "j.xml"
        rc, doc = _scan(empty, tmp_path / "e.json", "--baseline", tmp_path / "base.json", "--junit", junit, *extra)
        assert rc == 1, extra
        assert doc["baseline"]["worse"] and "the scan found no kernel" in doc["baseline"]["reasons"][0]
        assert doc["baseline"]["counts"]["vanished"] == len(base["kernels"])
        assert "<failure" in junit.read_text()
    assert "no TTGIR module found" in capsys.readouterr().err


def test_vanished_kernel_fails_unless_allowed_and_new_kernels_pass(caches, tmp_path):
    cache = caches("3.9")
    full = _copy(cache, tmp_path / "full", kernels=("rotary", "layer_norm"))
    rc, base = _scan(full, tmp_path / "base.json")
    gone = next(k for k in base["kernels"] if k["name"] == "rotary" and k["target"] == "hip:gfx950")
    shutil.rmtree(Path(gone["path"]).parent)
    rc, doc = _scan(full, tmp_path / "v.json", "--baseline", tmp_path / "base.json")
    assert rc == 1
    (v,) = [k for k in doc["baseline"]["kernels"] if k["status"] == "vanished"]
    assert v["kernel"] == "rotary" and v["target"] == "hip:gfx950" and v["worse"]
    rc, doc = _scan(full, tmp_path / "v2.json", "--baseline", tmp_path / "base.json", "--allow-missing")
    assert rc == 0 and doc["baseline"]["counts"]["vanished"] == 1
    # the other way round the kernel is new: reported, not a failure
    rc, _ = _scan(full, tmp_path / "small.json")
    rc, doc = _scan(_copy(cache, tmp_path / "again", kernels=("rotary", "layer_norm")), tmp_path / "n.json",
                    "--baseline", tmp_path / "small.json")
    assert rc == 0
    (n,) = [k for k in doc["baseline"]["kernels"] if k["status"] == "new"]
    assert n["kernel"] == "rotary" and n["target"] == "hip:gfx950"


def test_triton_38_against_39_reports_only_real_differences(scanned, tmp_path):
    """The same kernels (autotuned ones included) compiled by Triton 3.8 and 3.9: every kernel
    pairs with itself (identities do not depend on the release); every reported difference is
    one in the compiled code (the instructions at the op's location, read independently of the
    scan, or the op itself); and a kernel pair whose code is the same at every layout op reports
    nothing."""
    from layoutverify.apps.scan.baseline import compare_scans
    old_json, old = scanned("3.8")
    new = scanned("3.9")[1]
    cmp = compare_scans(old, new)
    assert cmp["counts"] == {"compared": len(new["kernels"]), "new": 0, "vanished": 0}
    by_path_old = {k["path"]: k for k in old["kernels"]}
    by_path_new = {k["path"]: k for k in new["kernels"]}
    real = silent = 0
    for e in cmp["kernels"]:
        ko, kn = by_path_old[e["old_path"]], by_path_new[e["new_path"]]
        co = class_counts(ko["asm"].get("ptx") or ko["asm"]["amdgcn"])
        cn = class_counts(kn["asm"].get("ptx") or kn["asm"]["amdgcn"])
        ops_o = {o["key"]: o for o in ko["ops"]}
        ops_n = {o["key"]: o for o in kn["ops"]}

        def code_at(counts, op):
            if not op.get("loc"):
                return None
            f, line, col = op["loc"]["text"].rsplit(":", 2)
            d = counts.get((f, int(line), int(col)), {})
            return {c: v for c, v in d.items() if not isinstance(c, tuple)}

        for kind in ("costlier", "cheaper"):
            for row in e[kind]:
                a, b = ops_o[row["key"]], ops_n[row["key"]]
                differs = (code_at(co, a) != code_at(cn, b) or a.get("triton_mechanism") != b.get("triton_mechanism")
                           or a["cost"]["facts_from"] != b["cost"]["facts_from"])
                assert differs, (e["name"], kind, row)
                real += 1
        same_ops = sorted(ops_o) == sorted(ops_n)
        same_code = same_ops and all(code_at(co, ops_o[k]) == code_at(cn, ops_n[k])
                                     and ops_o[k].get("triton_mechanism") == ops_n[k].get("triton_mechanism")
                                     for k in ops_o)
        if same_code:
            assert not any(e[kind] for kind in ("new", "removed", "costlier", "cheaper")) and not e["worse"], e["name"]
            silent += 1
    print(f"\n3.8 -> 3.9: {len(cmp['kernels'])} kernels paired, {real} differences each confirmed in the compiled "
          f"code, {silent} kernels with the same code at every layout op and nothing reported")
    assert silent >= 20
    worse = [e["name"] for e in cmp["kernels"] if e["worse"]]
    assert cmp["worse"] == bool(worse)


def _column_major_store(ttgir: str, lanes: int, warps: int) -> str:
    """The kernel's epilogue store made column-major: its pointers, value and mask converted to a
    blocked layout whose threads own columns (order [0, 1]) while memory is row-major."""
    m = re.search(r"^(\s*)tt\.store (%[\w.]+), (%[\w.]+), (%[\w.]+) : tensor<(\d+)x(\d+)x!tt\.ptr<(\w+)>, "
                  r"(#[\w.]+)> (loc\(#\w+\))\s*$", ttgir, re.M)
    assert m, "no masked 2-D tt.store"
    ind, ptr, val, mask, rows, cols, elem, layout, loc = m.groups()
    tpw_rows = min(int(rows) // 8, lanes)
    col = (f"#lv_col = #ttg.blocked<{{sizePerThread = [8, 1], threadsPerWarp = [{tpw_rows}, {lanes // tpw_rows}], "
           f"warpsPerCTA = [1, {warps}], order = [0, 1]}}>\n")
    shape = f"{rows}x{cols}"
    new = (f"{ind}%lv_ptr = ttg.convert_layout {ptr} : tensor<{shape}x!tt.ptr<{elem}>, {layout}> -> "
           f"tensor<{shape}x!tt.ptr<{elem}>, #lv_col> {loc}\n"
           f"{ind}%lv_val = ttg.convert_layout {val} : tensor<{shape}x{elem}, {layout}> -> tensor<{shape}x{elem}, "
           f"#lv_col> {loc}\n"
           f"{ind}%lv_mask = ttg.convert_layout {mask} : tensor<{shape}xi1, {layout}> -> tensor<{shape}xi1, #lv_col> {loc}\n"
           f"{ind}tt.store %lv_ptr, %lv_val, %lv_mask : tensor<{shape}x!tt.ptr<{elem}>, #lv_col> {loc}")
    return col + ttgir[:m.start()] + new + ttgir[m.end():]


def _module(doc: dict, name: str, target: str, warps: int, stages: int, tile: str) -> dict:
    (k,) = [k for k in doc["kernels"] if k["name"] == name and k["target"] == target
            and k["identity"]["num_warps"] == warps and k["identity"]["num_stages"] == stages
            and tile in k["identity"]["tiles"] and "f16>" in k["identity"]["signature"][0]]
    return k


def _recompiled(triton_python, src: Path, text: str, target: str, stages: int, out: Path) -> Path:
    from scan_cache import recompile
    out.mkdir(parents=True)
    ttgir = out.parent / f"{out.name}.ttgir"
    ttgir.write_text(text)
    row = recompile(triton_python("3.9"), ttgir, target, stages, out / "cache")
    assert row.get("ok"), row
    return out / "cache"


@pytest.mark.parametrize("target,tname,lanes", [("cuda:90", "sm90", 32), ("hip:gfx942", "gfx942", 64)])
def test_store_made_column_major_fails_the_gate(caches, scanned, triton_python, tmp_path, target, tname, lanes):
    """The issue's case: the 64x128 fp16 epilogue store of the matmul made column-major. On
    sm_90 the compiled code stores 64 scalar ``st.global.b16`` per thread instead of 8
    ``st.global.v4``, with more barriers at the conversions; the gate fails on the costlier
    store and its finding names the lost vectorisation. The same module compiled again without
    the edit passes."""
    doc = scanned("3.9")[1]
    k = _module(doc, "grouped_matmul", target, 4, 4, "64x128")
    src = Path(k["path"]).read_text()
    same = _recompiled(triton_python, Path(k["path"]), src, tname, 4, tmp_path / "same")
    worse = _recompiled(triton_python, Path(k["path"]), _column_major_store(src, lanes, 4), tname, 4, tmp_path / "worse")
    rc, base = _scan(same, tmp_path / "base.json")
    assert rc == 0
    # an unchanged module, compiled again, is the same kernel with the same costs
    original = tmp_path / "original"
    original.mkdir()
    shutil.copytree(Path(k["path"]).parent, original / Path(k["path"]).parent.name)
    rc, again = _scan(original, tmp_path / "again.json", "--baseline", tmp_path / "base.json")
    assert rc == 0
    (pair,) = again["baseline"]["kernels"]
    assert not any(pair[kind] for kind in ("new", "removed", "costlier", "cheaper")) and not pair["worse"]
    rc, new = _scan(worse, tmp_path / "new.json", "--baseline", tmp_path / "base.json")
    assert rc == 1
    (e,) = new["baseline"]["kernels"]
    assert e["status"] == "compared" and e["worse"]
    (store,) = [o for o in new["kernels"][0]["ops"] if o["role"] == "global_store" and o["op"] == "tt.store"]
    (old_store,) = [o for o in base["kernels"][0]["ops"] if o["role"] == "global_store" and o["op"] == "tt.store"]
    # the conversions to the new layout are new ops that cost; on sm_90 the store itself is costlier
    assert any(r["score"] > 0 for r in e["new"])
    if target == "cuda:90":
        assert store["key"] in [r["key"] for r in e["costlier"]]
    f, line, col = store["loc"]["text"].rsplit(":", 2)
    asm = new["kernels"][0]["asm"]
    counts = class_counts(asm.get("ptx") or asm["amdgcn"])
    here = counts[(f, int(line), int(col))]["global_store"]
    assert store["cost"]["widths"]["global_store"] == {str(w): float(n) for w, n in sorted(here.items())}
    assert max(here) < max(int(w) for w in old_store["cost"]["widths"]["global_store"])
    assert sum(here.values()) > sum(old_store["cost"]["widths"]["global_store"].values())
    assert "global_access_not_vectorised" in [x["code"] for x in store["findings"]]
    if target == "cuda:90":
        assert here == {2: 64} and old_store["cost"]["widths"]["global_store"] == {"16": 8.0}
        bars = counts[(f, int(line), int(col))].get("barrier", {}).get(0, 0)
        old_counts = class_counts(base["kernels"][0]["asm"]["ptx"])
        assert bars > old_counts[(f, int(line), int(col))].get("barrier", {}).get(0, 0)


def test_shared_layout_unswizzled_on_gfx950_fails_the_gate(scanned, triton_python, tmp_path):
    """The A tile of the grouped GEMM on gfx950 read from shared memory without its swizzle: the
    64-bank model reports conflicts on the ``ds_read``s, the addresses of the compiled code have
    them, and the gate fails on the costlier loads."""
    doc = scanned("3.9")[1]
    (k,) = [k for k in doc["kernels"] if k["name"] == "grouped_gemm" and k["target"] == "hip:gfx950"]
    src = Path(k["path"]).read_text()
    m = re.search(r"^(#shared = #ttg\.swizzled_shared<\{vec = (\d+), perPhase = )\d+, maxPhase = \d+(.*)$", src, re.M)
    assert m, "the A tile's layout is no longer swizzled_shared"
    worse_text = src.replace(m.group(0), f"{m.group(1)}1, maxPhase = 1{m.group(3)}")
    stages = k["identity"]["num_stages"]
    same = _recompiled(triton_python, Path(k["path"]), src, "gfx950", stages, tmp_path / "same")
    worse = _recompiled(triton_python, Path(k["path"]), worse_text, "gfx950", stages, tmp_path / "worse")
    assert _scan(same, tmp_path / "base.json")[0] == 0
    rc, new = _scan(worse, tmp_path / "new.json", "--baseline", tmp_path / "base.json")
    assert rc == 1
    (e,) = new["baseline"]["kernels"]
    costlier = {r["key"] for r in e["costlier"]}
    kk = new["kernels"][0]
    conflicted = [o for o in kk["ops"] if o["key"] in costlier]
    assert conflicted and all(o["role"] == "load" for o in conflicted)
    acc = {a.line: a for a in accesses(Path(kk["asm"]["amdgcn"]).read_text(), "amdgcn", kk["num_warps"] * 64)}
    for o in conflicted:
        rep = next(iter(o["bank_conflicts"].values()))
        assert rep["banks"] == 64 and rep["conflict_ways"] > 1
        assert "bank_conflicts" in [f["code"] for f in o["findings"]]
        worst = [wavefronts(acc[x["line"]], w, 64, 64)[1] for x in o["compiled"]["lines"]
                 if x["line"] in acc and acc[x["line"]].kind == "load" and acc[x["line"]].addresses is not None
                 for w in range(kk["num_warps"])]
        assert worst and max(worst) == rep["conflict_ways"]


def test_costlier_lines_are_in_a_stable_order(caches, scanned, tmp_path):
    """The gate's text and JSON do not depend on folder names or listing order: the same
    comparison from caches whose hash folders are renamed reads the same, line for line."""
    import contextlib
    import io
    cache = caches("3.9")
    old_json = scanned("3.8")[0]
    outs = []
    for i, rename in enumerate((None, "reverse")):
        names = sorted(p.name for p in cache.iterdir() if p.is_dir())
        mapping = dict(zip(names, reversed(names))) if rename else None
        copy = _copy(cache, tmp_path / f"c{i}", mapping, kernels=("grouped_matmul", "grouped_gemm"))
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            _cli("scan", copy, "--baseline", old_json, "--quiet", "--allow-missing")
        outs.append(buf.getvalue())
    assert outs[0] == outs[1]
    assert "COSTLIER" in outs[0] or "CHEAPER" in outs[0]
