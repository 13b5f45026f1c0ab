"""``scan --baseline``: Triton 3.8 against 3.9 on the same kernel, and the gate on deliberately
worsened modules (issue 15). The modules are real TTGIR from Triton's caches
(tests/data/scan/README.md)."""
from __future__ import annotations

import json
import re
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "scan"


def _cli(*args) -> int:
    from layoutverify.apps.cli import main
    return main([str(a) for a in args])


def _scan(path, out: Path, *extra) -> tuple[int, dict]:
    rc = _cli("scan", path, "--json", out, "--quiet", *extra)
    return rc, json.loads(out.read_text())


def _convert_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "ttg.convert_layout" in line]


def test_triton_38_to_39_removes_conversions(tmp_path):
    """Triton 3.9 no longer converts the 64x1 row statistics (``m_new``, ``alpha``) of the
    attention kernel between its two ``nvidia_mma`` layouts; 3.8 does (2 such ops on sm_90, 3 on
    sm_100, counted here straight from the two TTGIR texts). The baseline reports exactly those
    as removed, nothing new or costlier, and the gate passes; the reverse direction reports them
    as new, free (register moves only), so the gate passes too."""
    old_rc, old = _scan(DATA / "triton-3.8", tmp_path / "old.json")
    assert old_rc == 0
    rc, new = _scan(DATA / "triton-3.9", tmp_path / "new.json", "--baseline", tmp_path / "old.json")
    assert rc == 0
    cmp = new["baseline"]
    assert cmp["kind"] == "scan_baseline" and cmp["worse"] is False
    for target, tname in (("cuda:90", "sm90"), ("cuda:100", "sm100")):
        t38 = (DATA / "triton-3.8" / f"attention-{tname}" / "attention.ttgir").read_text()
        t39 = (DATA / "triton-3.9" / f"attention-{tname}" / "attention.ttgir").read_text()
        gone = len(_convert_lines(t38)) - len(_convert_lines(t39))
        assert gone in (2, 3)
        (k,) = [k for k in cmp["kernels"] if k.get("kernel") == "attention" and k["target"] == target]
        assert k["status"] == "compared"
        assert not k["new"] and not k["costlier"] and not k["worse"]
        removed = [r for r in k["removed"] if r["key"].startswith("ttg.convert_layout")]
        assert len(removed) == gone
        # each removed op is, in the 3.8 text, a convert_layout of a 64x1 tensor between two layouts
        (k38,) = [x for x in old["kernels"] if x["target"] == target]
        by_key = {o["key"]: o for o in k38["ops"]}
        lines = t38.splitlines()
        for r in removed:
            op = by_key[r["key"]]
            text = lines[op["module_line"] - 1]
            assert re.search(r"tensor<64x1xf32, #\w+> -> tensor<64x1xf32, #\w+>", text), text
            assert op["triton_mechanism"] in ("no_op", "register_permute")
    # the 3.8 folder holds only the attention kernels: the other two kernels of the 3.9 scan vanish,
    # which fails the gate unless --allow-missing accepts it
    rc, back = _scan(DATA / "triton-3.8", tmp_path / "back.json", "--baseline", tmp_path / "new.json")
    assert rc == 1
    gone = sorted(k["kernel"] for k in back["baseline"]["kernels"] if k["status"] == "vanished")
    assert gone == ["cvt_one_swap", "matmul"] and back["baseline"]["counts"]["vanished"] == 2
    rc, back = _scan(DATA / "triton-3.8", tmp_path / "back.json", "--baseline", tmp_path / "new.json",
                     "--allow-missing")
    assert rc == 0
    news = [r for k in back["baseline"]["kernels"] for r in k.get("new", [])]
    assert len(news) == 5 and all(r["score"] == 0 for r in news)


def test_gate_fires_when_a_conversion_needs_shared_memory(tmp_path):
    """The Gluon kernel's conversion swaps one register and one lane basis (Triton shuffles);
    worsened to swap two, Triton goes through shared memory: costlier whatever the threshold."""
    src = DATA / "triton-3.9" / "cvt_one_swap-sm90"
    text = (src / "cvt_one_swap.ttgir").read_text()
    one = "#linear1 = #ttg.linear<{register = [[0, 4], [0, 2]], lane = [[0, 1], [0, 8], [1, 0], [2, 0], [4, 0]]"
    two = "#linear1 = #ttg.linear<{register = [[0, 4], [0, 8]], lane = [[0, 1], [0, 2], [1, 0], [2, 0], [4, 0]]"
    assert one in text
    worse = tmp_path / "worse" / "cvt_one_swap.ttgir"
    worse.parent.mkdir()
    worse.write_text(text.replace(one, two))
    (worse.parent / "cvt_one_swap.json").write_text((src / "cvt_one_swap.json").read_text())
    assert _scan(src, tmp_path / "old.json")[0] == 0
    for threshold in ("0", "1000"):
        rc, doc = _scan(worse.parent, tmp_path / "new.json", "--baseline", tmp_path / "old.json",
                        "--threshold", threshold)
        assert rc == 1
        (k,) = doc["baseline"]["kernels"]
        (row,) = k["costlier"]
        assert row["old"]["triton_mechanism"] == "intra_warp" and row["new"]["triton_mechanism"] == "intra_cta"
    # unchanged: the gate passes
    assert _scan(src, tmp_path / "same.json", "--baseline", tmp_path / "old.json")[0] == 0


def test_gate_threshold_on_bank_conflicts(tmp_path):
    """The matmul's A tile loaded and stored column-wise into an unswizzled shared layout: the
    store keeps its mechanism but takes more wavefronts (bank conflicts), and the global load of
    the tile touches a 128-byte line per lane (uncoalesced). The gate fires unless the threshold
    tolerates the largest growth."""
    src = DATA / "triton-3.9" / "matmul-sm90"
    text = (src / "matmul.ttgir").read_text()
    a = "threadsPerWarp = [1, 32], warpsPerCTA = [4, 1]"
    assert a in text and "swizzlingByteWidth = 64," in text
    worse = tmp_path / "worse" / "matmul.ttgir"
    worse.parent.mkdir()
    worse.write_text(text.replace(a, "threadsPerWarp = [32, 1], warpsPerCTA = [1, 4]")
                     .replace("swizzlingByteWidth = 64,", "swizzlingByteWidth = 0,"))
    assert _scan(src, tmp_path / "old.json")[0] == 0
    rc, doc = _scan(worse.parent, tmp_path / "new.json", "--baseline", tmp_path / "old.json")
    assert rc == 1
    (k,) = doc["baseline"]["kernels"]
    assert sorted(r["new"]["triton_mechanism"] for r in k["costlier"]) == ["global_load", "shared_store"]
    (row,) = [r for r in k["costlier"] if r["new"]["triton_mechanism"] == "shared_store"]
    assert row["old"]["triton_mechanism"] == "shared_store" and row["new"]["score"] > 2 * row["old"]["score"]
    (store,) = [o for o in doc["kernels"][0]["ops"] if o["key"] == row["key"]]
    assert "bank_conflicts" in [f["code"] for f in store["findings"]]
    (load,) = [o for o in doc["kernels"][0]["ops"] if o["role"] == "global_load" and o["key"].split("@")[1] ==
               row["key"].split("@")[1]]
    assert load["cost"]["lines_per_access"]["global_load"] == {"2": 32.0}   # every lane its own line
    growth = max(r["new"]["score"] / r["old"]["score"] - 1 for r in k["costlier"])
    assert _scan(worse.parent, tmp_path / "x.json", "--baseline", tmp_path / "old.json",
                 "--threshold", str(growth * 1.01))[0] == 0
    assert _scan(worse.parent, tmp_path / "y.json", "--baseline", tmp_path / "old.json",
                 "--threshold", str(growth * 0.99))[0] == 1


def test_each_release_predictions_match_its_ptx(tmp_path):
    """The PTX each release compiled from these modules (kept beside them): every conversion whose
    location holds no other layout, dot or reduction op is emitted with the mechanism the scan
    predicts under that release's rules (read from the cache metadata's ``triton_version``)."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from scan_asm import classes_for

    from layoutverify.apps.scan.module import read_module
    from layoutverify.apps.scan.ops import role_of
    side = ("tt.reduce", "tt.scan", "tt.dot", "ttng.warp_group_dot", "ttng.tc_gen5_mma", "ttng.tmem_load",
            "ttng.tmem_store")
    checked = {}
    for release in ("triton-3.8", "triton-3.9"):
        _, doc = _scan(DATA / release, tmp_path / f"{release}.json")
        for k in doc["kernels"]:
            if not k["asm"].get("ptx"):
                continue
            assert k["triton_version"].startswith(release[-3:])
            got_at = classes_for(k["asm"]["ptx"])
            mod = read_module(Path(k["path"]).read_text())
            names = {}
            for op in mod.ops:
                loc = mod.locations.resolve(op.loc_text)
                if loc is not None:
                    names.setdefault(loc.short(), []).append(op.name)
            for o in k["ops"]:
                if o["role"] != "convert":
                    continue
                here = list(names[o["loc"]["text"]])
                here.remove(o["op"])
                if any(n in side or role_of(n) not in (None, "global_load", "global_store") for n in here):
                    continue
                f, line, col = o["loc"]["text"].rsplit(":", 2)
                got = got_at.get((f, int(line), int(col)), {})
                emitted = "intra_cta" if got.get("shared") else "intra_warp" if got.get("shuffle") else "registers"
                predicted = o["triton_mechanism"]
                predicted = "registers" if predicted in ("no_op", "register_permute") else predicted
                assert predicted == emitted, (release, k["target"], o["key"], o["triton_mechanism"], got)
                checked[release] = checked.get(release, 0) + 1
    print(f"\nconversions checked against each release's PTX: {checked}")
    assert checked.get("triton-3.8", 0) >= 5 and checked.get("triton-3.9", 0) >= 2, checked


def test_a_baseline_of_the_old_schema_is_refused(tmp_path, capsys):
    """Scores of schema 1 (an instruction count) and 2 (model cycles from the compiled code) do
    not compare: a version-1 baseline is bad input (exit 2, one line), not a silent pass."""
    rc, doc = _scan(DATA / "triton-3.9" / "matmul-sm90", tmp_path / "new.json")
    assert rc == 0 and doc["schema"] == "layoutverify/2"
    doc["schema"] = "layoutverify/1"
    (tmp_path / "old.json").write_text(json.dumps(doc))
    capsys.readouterr()
    assert _cli("scan", DATA / "triton-3.9" / "matmul-sm90", "--baseline", tmp_path / "old.json", "--quiet") == 2
    err = capsys.readouterr().err
    assert "layoutverify/1" in err and err.count("\n") == 1 and "Traceback" not in err
