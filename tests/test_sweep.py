"""``layoutverify sweep SPEC.toml`` on the local cores (issue 15): enumeration, verdicts checked
against Triton's own layouts, analysis, resuming after an interruption, a worker that dies."""
from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

SPEC = """
task = "{task}"
[[triton]]
a = ["blocked"]
b = ["nvidia_mma", "dot_op", "slice", "linear", "blocked"]
shapes = [[64, 64], [32, 32]]
num_warps = [4]
element_types = ["f16"]
versions = ["3.9"]
[triton.blocked]
size_per_thread = [[1, 4], [2, 2]]
threads_per_warp = [[4, 8], [8, 4], [1, 32]]
[triton.linear]
linear_count = 4
"""


def _cli(*args) -> int:
    from layoutverify.apps.cli import main
    return main([str(a) for a in args])


def _records(path: Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        assert r["id"] not in out, "a point recorded twice"
        out[r["id"]] = r
    return out


def _spec(tmp_path, task="prove", text=SPEC) -> Path:
    p = tmp_path / f"{task}.toml"
    p.write_text(text.format(task=task))
    return p


def test_enumeration_counts(tmp_path):
    """The space is the product the spec describes: per shape, 2 x 3 x 3 x 2 = 36 blocked
    layouts (sizePerThread x threadsPerWarp x the 3 warp splits of 4 x order) against every B."""
    from layoutverify.apps.sweeps.spec import load_spec
    spec = load_spec(str(_spec(tmp_path)))
    groups = list(spec.groups())
    assert [g.meta["shape"] for g in groups] == [[64, 64], [32, 32]]
    for g in groups:
        a = {x for x, _ in g.pairs}
        assert len(a) == 2 * 3 * 3 * 2
        assert len(g.pairs) == len(a) * len({y for _, y in g.pairs})
        ids = {g.point_id(x, y) for x, y in g.pairs}
        assert len(ids) == len(g.pairs)
    assert _cli("sweep", _spec(tmp_path), "--count") == 0


def test_local_sweep_verdicts_agree_with_triton(tmp_path):
    """Every point is proved; a random sample of pairs is checked against the installed Triton's
    own layouts (``to_linear_layout`` of both encodings, in a subprocess): ``equal`` exactly when
    Triton's two layouts are the same map."""
    pytest.importorskip("triton")
    spec = _spec(tmp_path)
    out = tmp_path / "r.jsonl"
    assert _cli("sweep", spec, "-o", out, "-j", "2", "--chunk", "64") == 0
    recs = _records(out)
    from layoutverify.apps.sweeps.spec import load_spec
    groups = list(load_spec(str(spec)).groups())
    assert len(recs) == sum(len(g.pairs) for g in groups)
    summary = json.loads((tmp_path / "r.jsonl.summary.json").read_text())
    assert summary["kind"] == "sweep" and summary["points"] == len(recs) and summary["errors"] == 0
    assert set(summary["verdicts"]) <= {"equal", "not_equal", "equal_up_to_register_order"}

    from layoutverify.adapters import adapter
    triton = adapter("triton")
    rnd = random.Random(7)
    cases, expect = [], []
    for g in groups:
        pairs = rnd.sample(g.pairs, 12)
        # and every pair the sweep found equal
        pairs += [(a, b) for a, b in g.pairs if recs[g.point_id(a, b)]["verdict"] == "equal"][:8]
        for a, b in pairs:
            cases += [(g.layouts[a][len("triton:"):], g.shape_a), (g.layouts[b][len("triton:"):], g.shape_b)]
            expect.append(recs[g.point_id(a, b)]["verdict"])
    natives = triton.native_many([{"text": t, "shape": s} for t, s in cases])
    checked = equal_seen = 0
    import numpy as np
    for k, verdict in enumerate(expect):
        na, nb = natives[2 * k], natives[2 * k + 1]
        if isinstance(na, Exception) or isinstance(nb, Exception):
            continue
        same = _same_map(na, nb, np)
        assert (verdict == "equal") == same, (cases[2 * k], cases[2 * k + 1], verdict)
        checked += 1
        equal_seen += same
    assert checked >= 30 and equal_seen >= 1


def _same_map(a, b, np) -> bool:
    """Same element at every hardware location (dims of size 1 ignored)."""
    def table(lay):
        names = [n for n, s in lay.in_dims if s > 1]
        hw = lay.hardware_indices()
        keep = [i for i, (n, s) in enumerate(lay.in_dims) if s > 1]
        order = np.lexsort(hw[:, keep].T[::-1]) if keep else np.arange(len(hw))
        return names, [s for _, s in lay.in_dims if s > 1], lay.flat_table()[order]
    na, sa, ta = table(a)
    nb, sb, tb = table(b)
    return na == nb and sa == sb and a.out_sizes == b.out_sizes and bool(np.array_equal(ta, tb))


def test_analyze_sweep_records_mechanisms(tmp_path):
    """``task = "analyze"``: the cheapest mechanism and Triton's; Triton's is never cheaper."""
    from layoutverify.apps.scan.analysis import RANK
    text = SPEC.replace('shapes = [[64, 64], [32, 32]]', 'shapes = [[64, 64]]\nlimit = 150')
    out = tmp_path / "a.jsonl"
    assert _cli("sweep", _spec(tmp_path, "analyze", text), "-o", out, "-j", "1") == 0
    recs = list(_records(out).values())
    assert len(recs) == 150
    kinds = set()
    for r in recs:
        assert "error" not in r, r
        kinds.add(r["mechanism"])
        if r["mechanism"] != "impossible":
            assert RANK[r["triton_mechanism"]] >= RANK[r["mechanism"]] or r["mechanism"] == "no_op", r
    assert {"intra_cta"} <= kinds


def test_resume_after_interruption(tmp_path):
    """A results file cut in the middle of a line (an interrupted run) is resumed: the cut line is
    dropped, the finished points are skipped, and the result equals an uninterrupted run."""
    spec = _spec(tmp_path)
    full = tmp_path / "full.jsonl"
    assert _cli("sweep", spec, "-o", full, "-j", "1") == 0
    lines = full.read_text().splitlines(keepends=True)
    part = tmp_path / "part.jsonl"
    keep = len(lines) // 3
    part.write_text("".join(lines[:keep]) + lines[keep][: len(lines[keep]) // 2])
    assert _cli("sweep", spec, "-o", part, "-j", "2", "--json") == 0
    summary = json.loads((tmp_path / "part.jsonl.summary.json").read_text())
    assert summary["skipped_done"] == keep and summary["evaluated"] == len(lines) - keep
    a, b = _records(full), _records(part)
    assert a.keys() == b.keys()
    for k in a:
        assert a[k]["verdict"] == b[k]["verdict"]


def test_a_dying_worker_is_replaced(tmp_path, monkeypatch):
    """A worker process that dies (the crash marker makes the first chunk exit its process) takes
    the pool down; the lost chunks run again and every point is answered once."""
    from layoutverify.apps.sweeps.work import CRASH_ENV
    marker = tmp_path / "crash-once"
    marker.write_text("")
    monkeypatch.setenv(CRASH_ENV, str(marker))
    out = tmp_path / "c.jsonl"
    assert _cli("sweep", _spec(tmp_path), "-o", out, "-j", "2", "--chunk", "50") == 0
    assert not marker.exists()  # a worker did die
    monkeypatch.delenv(CRASH_ENV)
    ref = tmp_path / "ref.jsonl"
    assert _cli("sweep", _spec(tmp_path), "-o", ref, "-j", "1") == 0
    a, b = _records(out), _records(ref)
    assert a.keys() == b.keys() and all(a[k]["verdict"] == b[k]["verdict"] for k in a)


def test_template_space_cute_atoms_x_tilers(tmp_path):
    """A template space (CuTe tiled MMAs x tilers against Triton's mma v2 layouts): every point's
    verdict is the one ``layoutverify prove`` gives for the same two specs."""
    text = """
task = "prove"
[[template]]
a = "cute:tiled_mma(SM80_16x8x16_F32F16F16F32_TN, $tiler, C, tile=$tile)"
b = "triton:#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = $warps, instrShape = [16, 8]}>"
shape_b = "$shape"
[template.vars]
zip = [["tiler", "tile", "warps", "shape"]]
tiler = ["(2,2,1)", "(4,1,1)", "(1,4,1)", "(2,2,1)"]
tile = ["(32,16)", "(64,8)", "(16,32)", "(64,64)"]
warps = ["[2, 2]", "[4, 1]", "[1, 4]", "[2, 2]"]
shape = ["32x16", "64x8", "16x32", "64x64"]
"""
    spec = tmp_path / "cute.toml"
    spec.write_text(text)
    out = tmp_path / "cute.jsonl"
    assert _cli("sweep", spec, "-o", out, "-j", "1") == 0
    recs = list(_records(out).values())
    assert len(recs) == 4
    from layoutverify.apps.commands.prove import register  # noqa: F401  (the CLI's prove exists)
    import subprocess
    import sys
    for r in recs:
        p = subprocess.run([sys.executable, "-m", "layoutverify", "prove", r["a_spec"], r["b_spec"], "--shape-b",
                            r["vars"]["shape"], "--json"], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PYTHONWARNINGS="ignore"))
        assert json.loads(p.stdout)["verdict"] == r["verdict"], (r, p.stdout[-300:])


@pytest.mark.parametrize("text, word", [
    ("task = 'nope'\n[[triton]]\na=['blocked']\nb=['blocked']\nshapes=[[8,8]]\n", "task"),
    ("[[triton]]\na=['blocked']\nb=['mystery']\nshapes=[[8,8]]\n", "mystery"),
    ("[[triton]]\na=['blocked']\nb=['blocked']\nshapes=[[8,8]]\nnum_warps=[3]\n", "num_warps"),
    ("[[template]]\na='cute:$x'\nb='cute:(4):(1)'\n", "placeholders"),
    ("[[triton]]\na=['blocked']\nb=['blocked']\nshapes=[[1048576, 1048576]]\n", "2^24"),
    ("[[triton]]\na=['blocked']\nb=['blocked']\nshapes=[[true, 8]]\n", "bad shape"),
    ("task = \n", "TOML"),
    ("", "no [[triton]]"),
])
def test_bad_specs(tmp_path, capsys, text, word):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    assert _cli("sweep", p, "-o", tmp_path / "x.jsonl") == 2
    err = capsys.readouterr().err
    assert word in err and "Traceback" not in err and err.count("\n") == 1
