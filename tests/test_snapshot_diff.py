"""Golden files and their semantic diff: the compiler-regression workflow.

1. ``snapshot --native`` records the layouts the *installed Triton* computes (Triton's parser and
   ``toLinearLayout``), all of them in one worker subprocess.
2. The same snapshot from our adapters is semantically identical (Triton as the oracle for the
   whole sweep: ``diff`` reports nothing).
3. One normal form is altered by hand, as a compiler change would: ``diff`` reports exactly that
   layout, with a witness that we re-evaluate here on both normal forms, independently of the
   prover.
"""
from __future__ import annotations

import copy
import json
import time

import numpy as np
import pytest

from layoutverify.apps.cli import main
from layoutverify.core.layout import Layout
from layoutverify.apps.snapshot import diff, load_golden

pytest.importorskip("triton")


def _run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture(scope="module")
def goldens(tmp_path_factory):
    """Native and adapter snapshots of the Triton sweep plus a small corpus (built once)."""
    import importlib
    import subprocess

    from layoutverify.adapters.triton.version import installed
    if installed() == "3.6":
        pytest.skip("the sweep includes shared layouts, and Triton 3.6's to_linear_layout converts only "
                    "distributed ones, so a --native snapshot of it cannot be made under 3.6")

    N = importlib.import_module("layoutverify.adapters.triton.native")   # the module (layoutverify.adapters.triton.native is also a function)
    d = tmp_path_factory.mktemp("golden")
    corpus = d / "c.toml"
    corpus.write_text('''
[[layout]]
name = "blocked"
spec = "triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
shape = [64, 64]

[[layout]]
name = "old-spelling"
spec = "triton:#triton_gpu.blocked<{sizePerThread = [2, 2], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1], CTAsPerCGA = [1, 1], CTASplitNum = [1, 1], CTAOrder = [1, 0]}>"
shape = [32, 64]

[[claim]]
name = "mma"
a = "ptx:mma.m16n8k16.f32.C"
b = "triton:#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [1, 1], instrShape = [16, 8]}>"
shape_b = [16, 8]
expect = "equal"
''')
    calls = []
    real_run = subprocess.run

    def counting_run(*a, **k):
        calls.append(a[0] if a else k.get("args"))
        return real_run(*a, **k)

    N.subprocess.run = counting_run
    try:
        t0 = time.perf_counter()
        rc = main(["snapshot", "--native", "--sweep", "triton", str(corpus), "-o", str(d / "native.json")])
        native_seconds = time.perf_counter() - t0
    finally:
        N.subprocess.run = real_run
    assert rc == 0
    rc = main(["snapshot", "--sweep", "triton", str(corpus), "-o", str(d / "adapter.json")])
    assert rc == 0
    return d, calls, native_seconds


def test_native_snapshot_is_one_batched_subprocess(goldens):
    d, calls, seconds = goldens
    doc = load_golden(d / "native.json")
    layouts = doc["layouts"]
    assert len(layouts) > 300                                 # the sweep plus the corpus
    triton = {k: v for k, v in layouts.items() if v["spec"].startswith("triton:")}
    assert triton and all(v["source"] == "native" for v in triton.values())
    assert layouts["c::mma::a"]["source"] == "adapter"           # ptx has no native: our adapter
    assert len(calls) == 1, f"expected one Triton worker for {len(triton)} layouts, got {len(calls)}"
    assert seconds < 120
    assert doc["versions"]["triton"]


def test_adapters_agree_with_installed_triton_on_the_sweep(goldens, capsys):
    """Triton as oracle: the snapshot from our parse and from Triton's own are semantically equal."""
    d, _, _ = goldens
    rc, out, _ = _run(capsys, "diff", str(d / "adapter.json"), str(d / "native.json"))
    assert rc == 0, out
    assert " 0 changed, 0 added, 0 removed" in out


def _edit(doc: dict, name: str, fn) -> dict:
    new = copy.deepcopy(doc)
    fn(new["layouts"][name]["normal_form"])
    return new


def _layout(entry) -> Layout:
    nf = entry["normal_form"]
    bases = {d: nf["bases"][d] for d, _ in nf["in_dims"]}      # JSON keys may come back in any order
    lay = Layout.from_bases(bases, [tuple(x) for x in nf["out_dims"]])
    assert [list(x) for x in lay.in_dims] == [list(x) for x in nf["in_dims"]]
    return lay


def _value_at(lay: Layout, loc: dict):
    sizes = dict(lay.in_dims)
    if any(int(v) >= sizes.get(k, 1) for k, v in loc.items()):
        return None
    return [int(x) for x in lay.apply({k: np.asarray([loc.get(k, 0)]) for k in lay.in_names})[0]]


def test_diff_reports_exactly_the_altered_layout(goldens, capsys, tmp_path):
    d, _, _ = goldens
    old = json.loads((d / "native.json").read_text())
    name = "sweep::dot0-k2-mma2-wpc2x2-32x64"

    def swap_lanes(nf):
        lane = nf["bases"]["lane"]
        lane[0], lane[2] = lane[2], lane[0]     # a "compiler change": lane bits 0 and 2 trade places

    new = _edit(old, name, swap_lanes)
    (tmp_path / "new.json").write_text(json.dumps(new))
    rc, out, _ = _run(capsys, "diff", str(d / "native.json"), str(tmp_path / "new.json"))
    assert rc == 1
    changed = [ln for ln in out.splitlines() if ln.startswith(("CHANGED", "ADDED", "REMOVED"))]
    assert changed == [f"CHANGED {name}: not_equal"]
    assert f"{len(old['layouts']) - 1} unchanged, 1 changed, 0 added, 0 removed" in out

    # the witness, re-checked here on both normal forms without the prover
    changes = diff(old, new)
    assert [c.name for c in changes] == [name]
    w = changes[0].witness
    la, lb = _layout(old["layouts"][name]), _layout(new["layouts"][name])
    got_a, got_b = _value_at(la, w["hardware"]), _value_at(lb, w["hardware"])
    assert got_a == w["a"] and got_b == w["b"] and got_a != got_b
    assert w["hardware"]["lane"] in (1, 4, 5)        # a lane whose bit 0 or 2 is set moved

    rc, out, _ = _run(capsys, "diff", "--json", str(d / "native.json"), str(tmp_path / "new.json"))
    doc = json.loads(out)
    assert [c["name"] for c in doc["changes"]] == [name] and doc["changes"][0]["witness"]["rechecked"] is True


def test_diff_register_order_and_added_removed(goldens, capsys, tmp_path):
    d, _, _ = goldens
    old = json.loads((d / "native.json").read_text())
    name = "sweep::mma2-wpc2x2-64x64"

    def swap_registers(nf):
        reg = nf["bases"]["register"]
        reg[0], reg[1] = reg[1], reg[0]

    new = _edit(old, name, swap_registers)
    removed = "c::blocked"
    del new["layouts"][removed]
    # a layout that was not asked for before: another shape is another key
    added = copy.deepcopy(old["layouts"]["c::old-spelling"])
    added["shape"], added["key"] = [64, 64], added["key"].replace("@32x64", "@64x64")
    new["layouts"]["c::brand-new"] = added
    # the same layout under another name (its corpus file renamed) is matched by its key: no report
    new["layouts"]["renamed::old-spelling"] = new["layouts"].pop("c::old-spelling")
    (tmp_path / "new.json").write_text(json.dumps(new))
    rc, out, _ = _run(capsys, "diff", str(d / "native.json"), str(tmp_path / "new.json"))
    assert rc == 1
    lines = sorted(ln for ln in out.splitlines() if ln.startswith(("CHANGED", "ADDED", "REMOVED")))
    assert lines == sorted([f"CHANGED {name}: equal_up_to_register_order",
                            f"REMOVED {removed}: {old['layouts'][removed]['spec']}",
                            f"ADDED c::brand-new: {old['layouts']['c::old-spelling']['spec']}"])


def test_equivalent_normal_form_rewrite_is_not_a_change(goldens):
    """A fingerprint change alone (e.g. a hand-reordered JSON) is re-proved, not reported."""
    d, _, _ = goldens
    old = json.loads((d / "native.json").read_text())
    name = "c::blocked"
    new = copy.deepcopy(old)
    new["layouts"][name]["fingerprint"] = "0" * 16
    nf = new["layouts"][name]["normal_form"]
    nf["bases"] = dict(reversed(list(nf["bases"].items())))       # key order, not meaning
    assert diff(old, new) == []


@pytest.mark.parametrize("text, needle", [
    ("not json", "not a JSON golden file"),
    ('{"format": 7, "layouts": {}}', "not a layoutverify golden file"),
])
def test_bad_golden_files_exit_2(capsys, tmp_path, goldens, text, needle):
    p = tmp_path / "bad.json"
    p.write_text(text)
    rc, _, err = _run(capsys, "diff", str(p), str(goldens[0] / "native.json"))
    assert rc == 2 and needle in err
    rc, _, err = _run(capsys, "diff", str(tmp_path / "missing.json"), str(goldens[0] / "native.json"))
    assert rc == 2 and "cannot read golden file" in err


def test_malformed_normal_form_exit_2(capsys, tmp_path, goldens):
    old = json.loads((goldens[0] / "native.json").read_text())
    new = copy.deepcopy(old)
    new["layouts"]["c::blocked"]["normal_form"] = {"in_dims": "nonsense"}
    new["layouts"]["c::blocked"]["fingerprint"] = "x"
    (tmp_path / "new.json").write_text(json.dumps(new))
    rc, _, err = _run(capsys, "diff", str(goldens[0] / "native.json"), str(tmp_path / "new.json"))
    assert rc == 2 and "c::blocked" in err and "malformed normal form" in err


def test_snapshot_bad_input(capsys, tmp_path):
    rc, _, err = _run(capsys, "snapshot", "-o", str(tmp_path / "x.json"))
    assert rc == 2 and "nothing to record" in err
    c = tmp_path / "c.toml"
    c.write_text('[[layout]]\nname = "bad"\nspec = "triton:#ttg.blocked<{sizePerThread = [1"\nshape = [4, 4]\n')
    rc, _, err = _run(capsys, "snapshot", str(c), "-o", str(tmp_path / "x.json"))
    assert rc == 2 and "'c::bad'" in err
    rc, out, err = _run(capsys, "snapshot", str(c), "--keep-going", "-o", str(tmp_path / "x.json"))
    assert rc == 0 and "skipped c::bad" in err and "(1 skipped)" in out
