"""``--json`` on every subcommand: one schema (``layoutverify/1``, docs/json-schema.md), a ``kind``
per document, and errors as JSON objects on stdout with exit 2.

Also the golden-file workflow's stable keys: two snapshots of the same corpus written from files
with different names, read under two Triton releases, show CHANGED (with the releases' known
differences, tabled in adapters/triton/__init__.py), not REMOVED + ADDED.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from layoutverify.apps.cli import main

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "layoutverify/1"
BLOCKED = ("triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], "
           "order = [1, 0]}>")
OTHER = ("triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], "
         "order = [1, 0]}>")
DOC_KINDS = ("layout", "proof", "conversion", "properties", "check", "snapshot", "diff", "atlas", "list", "error")


def _run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _doc(out: str, kind: str) -> dict:
    doc = json.loads(out)
    assert list(doc)[:2] == ["schema", "kind"], list(doc)[:2]
    assert doc["schema"] == SCHEMA and doc["kind"] == kind, (doc["schema"], doc["kind"])
    return doc


def test_schema_document_names_every_kind():
    text = (ROOT / "docs" / "json-schema.md").read_text()
    assert SCHEMA in text
    for kind in DOC_KINDS:
        assert re.search(rf"^## `{kind}`", text, re.M), kind


#: subcommands without a JSON document: ``serve`` runs a server (its API answers JSON itself)
NO_JSON = {"serve"}


def test_every_subcommand_takes_json():
    import argparse

    from layoutverify.apps.cli import build_parser
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert {"show", "prove", "analyze", "check", "snapshot", "diff", "atlas", "list"} <= set(sub.choices)
    for name, parser in sub.choices.items():
        if name in NO_JSON:
            continue
        assert any("--json" in a.option_strings for a in parser._actions), f"{name} has no --json"


def test_show_prove_analyze(capsys):
    rc, out, err = _run(capsys, "show", BLOCKED, "--shape", "16x16", "--json")
    doc = _doc(out, "layout")
    assert rc == 0 and not err and doc["layout_kind"] == "register" and doc["f2_linear"] is True
    assert doc["layout"]["in_dims"][0][0] == "register" and len(doc["fingerprint"]) == 16

    rc, out, _ = _run(capsys, "prove", BLOCKED, OTHER, "--shape", "16x16", "--json")
    doc = _doc(out, "proof")
    assert rc == 1 == doc["exit"] and doc["verdict"] == "not_equal"
    for key in ("verdict", "method", "seconds", "witness", "reason", "fingerprints", "tool_version"):
        assert key in doc, key
    assert set(doc["fingerprints"]) == {"a", "b"} and doc["fingerprints"]["a"] != doc["fingerprints"]["b"]
    from layoutverify import __version__
    assert doc["tool_version"] == __version__

    rc, out, _ = _run(capsys, "analyze", BLOCKED, OTHER, "--shape", "64x64", "--json")
    doc = _doc(out, "conversion")
    assert rc == 0 and doc["mechanism"] == "intra_cta"
    rc, out, _ = _run(capsys, "analyze", BLOCKED, OTHER, "--shape", "64x64", "--properties", "--json")
    doc = _doc(out, "properties")
    assert rc == 0 and set(doc["layouts"]) == {"A", "B"} and doc["layouts"]["B"]["layout_kind"] == "register"


def test_check_and_atlas_json_to_stdout_and_file(capsys, tmp_path):
    corpus = ROOT / "corpora" / "conversions.toml"
    rc, out, _ = _run(capsys, "check", corpus, "--json", "-", "-j", "1")
    doc = _doc(out, "check")
    assert rc == 0 and doc["passed"] is True and doc["summary"]["total"] == len(doc["claims"]) > 0
    rc, out, _ = _run(capsys, "check", corpus, "--json", tmp_path / "c.json", "-j", "1", "-q")
    assert rc == 0 and "passed" in out
    _doc((tmp_path / "c.json").read_text(), "check")

    atlas = ROOT / "corpora" / "atlas" / "mma_sync.toml"
    rc, out, _ = _run(capsys, "atlas", "--corpus", atlas, "--json", "-", "-j", "1")
    doc = _doc(out, "atlas")
    assert rc == (0 if doc["ok"] else 1) and doc["cells"] and "mma.m16n8k16.f16.A" in doc["fragments"]


def test_list_json(capsys):
    rc, out, _ = _run(capsys, "list", "atoms", "--json")
    doc = _doc(out, "list")
    assert rc == 0 and doc["count"] == len(doc["items"]) > 100


@pytest.mark.parametrize("argv, code", [
    (["show", "cute:((4,8):(1,4)", "--json"], "parse_error"),
    (["prove", "ptx:mma.m16n8k16.f16.A", "nosuch:xyz", "--json"], "bad_input"),
    (["prove", "ptx:mma.m16n8k16.f16.A", "--json"], "usage"),
    (["analyze", BLOCKED, "--shape", "64x64", "--element-bits", "12", "--json"], "bad_input"),
    (["check", "no/such/corpus.toml", "--json", "-"], "bad_input"),
    (["snapshot", "--json", "-o", "x.json"], "bad_input"),
    (["diff", "no-such-old.json", "no-such-new.json", "--json"], "bad_input"),
    (["atlas", "--corpus", "no/such/dir", "--json", "-"], "bad_input"),
    (["list", "widgets", "--json"], "usage"),
    (["--json"], "usage"),
])
def test_errors_under_json_are_json_on_stdout(capsys, tmp_path, monkeypatch, argv, code):
    monkeypatch.chdir(tmp_path)
    rc, out, err = _run(capsys, *argv)
    doc = _doc(out, "error")
    assert rc == 2 == doc["exit"] and doc["error"]["code"] == code and doc["error"]["message"]
    assert err == ""
    if code == "parse_error":
        assert doc["error"]["token"] and doc["error"]["column"] >= 1


def test_internal_error_under_json_is_exit_70(capsys, monkeypatch):
    """A bug of ours (here a command that raises RuntimeError) is code ``internal``, exit 70."""
    from layoutverify.apps.commands import list as list_command

    def broken(*a, **k):
        raise RuntimeError("boom")
    monkeypatch.setattr(list_command, "items", broken)
    monkeypatch.delenv("LAYOUTVERIFY_DEBUG", raising=False)
    rc, out, err = _run(capsys, "list", "atoms", "--json")
    doc = _doc(out, "error")
    assert rc == 70 == doc["exit"] and doc["error"]["code"] == "internal" and "boom" in doc["error"]["message"]
    rc, out, err = _run(capsys, "list", "atoms")
    assert rc == 70 and out == "" and "internal error" in err and "boom" in err


def test_errors_without_json_stay_one_line_on_stderr(capsys):
    rc, out, err = _run(capsys, "show", "cute:((4,8):(1,4)")
    assert rc == 2 and out == "" and err.count("\n") == 1 and err.startswith("layoutverify: error:")


# -- snapshot / diff ---------------------------------------------------------------------------
def _releases_corpus(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    shutil.copy(ROOT / "corpora" / "triton_releases.toml", d / f"{name}.toml")
    return d / f"{name}.toml"


def test_diff_matches_by_key_not_by_file_name(capsys, tmp_path):
    """The same corpus saved under two file names, read as Triton 3.7 and as 3.9: every layout is
    CHANGED (each is a known difference between those releases), none REMOVED or ADDED."""
    old_corpus = _releases_corpus(tmp_path, "before")
    new_corpus = _releases_corpus(tmp_path, "after")
    rc, out, _ = _run(capsys, "snapshot", old_corpus, "--triton-version", "3.7",
                      "-o", tmp_path / "golden" / "deep" / "old.json", "--json")
    doc = _doc(out, "snapshot")
    assert rc == 0 and doc["layouts"] == 3 and doc["versions"]["triton_semantics"] == "3.7"
    rc, out, _ = _run(capsys, "snapshot", new_corpus, "--triton-version", "3.9", "-o", tmp_path / "new.json")
    assert rc == 0

    rc, out, _ = _run(capsys, "diff", tmp_path / "golden" / "deep" / "old.json", tmp_path / "new.json", "--json")
    doc = _doc(out, "diff")
    assert rc == 1
    assert doc["counts"] == {"unchanged": 0, "changed": 3, "added": 0, "removed": 0}
    verdicts = {c["name"]: c["verdict"] for c in doc["changes"]}
    assert verdicts == {"after::blocked-broadcast-registers": "equal_up_to_register_order",
                        "after::mma-m8-operand-a": "equal_up_to_register_order",
                        "after::nvmma-shared-transposed-unswizzled": "not_equal"}
    assert all(c["old_name"].startswith("before::") for c in doc["changes"])
    shared = next(c for c in doc["changes"] if c["verdict"] == "not_equal")
    assert shared["witness"]["rechecked"] is True

    # the same release on both sides: nothing changed, whatever the file names
    rc, out, _ = _run(capsys, "snapshot", old_corpus, "--triton-version", "3.9", "-o", tmp_path / "old39.json")
    rc, out, _ = _run(capsys, "diff", tmp_path / "old39.json", tmp_path / "new.json")
    assert rc == 0 and "3 unchanged, 0 changed, 0 added, 0 removed" in out


def test_snapshot_records_a_layout_once_and_reads_format_1(capsys, tmp_path):
    corpus = tmp_path / "c.toml"
    corpus.write_text(f'''
[[claim]]
name = "self"
a = "{BLOCKED}"
b = "{BLOCKED}"
shape = [64, 64]
expect = "equal"
''')
    rc, _, _ = _run(capsys, "snapshot", corpus, "-o", tmp_path / "g.json")
    doc = json.loads((tmp_path / "g.json").read_text())
    assert rc == 0 and doc["format"] == 2 and list(doc["layouts"]) == ["c::self::a"]
    assert doc["layouts"]["c::self::a"]["names"] == ["c::self::a", "c::self::b"]
    # a format-1 file (no keys) of the same layout under another name still matches
    old = {"format": 1, "versions": {}, "layouts": {"x::y": {k: v for k, v in doc["layouts"]["c::self::a"].items()
                                                             if k in ("spec", "shape", "source", "fingerprint",
                                                                      "normal_form")}}}
    (tmp_path / "v1.json").write_text(json.dumps(old))
    rc, out, _ = _run(capsys, "diff", tmp_path / "v1.json", tmp_path / "g.json")
    assert rc == 0 and "1 unchanged, 0 changed, 0 added, 0 removed" in out


@pytest.mark.parametrize("text, needle", [
    ('[]', "not a layoutverify golden file"),
    ('{"format": 2, "layouts": {"x": []}}', "must be an object"),
    ('{"format": 2, "layouts": {"x": {"spec": 1, "fingerprint": "f", "normal_form": {}}}}', "'spec' must be a string"),
    ('{"format": 2, "layouts": {"x": {"spec": "s", "fingerprint": "f", "normal_form": {}, "shape": [0]}}}', "shape"),
])
def test_malformed_golden_files_are_bad_input(capsys, tmp_path, text, needle):
    (tmp_path / "bad.json").write_text(text)
    rc, _, err = _run(capsys, "diff", tmp_path / "bad.json", tmp_path / "bad.json")
    assert rc == 2 and needle in err


def test_triton_version_does_not_apply_to_native_snapshots(capsys, tmp_path):
    from layoutverify.adapters import adapter
    installed = adapter("triton").version.installed()
    other = "3.7" if installed != "3.7" else "3.8"
    rc, _, err = _run(capsys, "snapshot", "--native", "--triton-version", other, ROOT / "corpora" / "triton_releases.toml",
                      "-o", tmp_path / "g.json")
    assert rc == 2 and "does not apply with --native" in err and not (tmp_path / "g.json").exists()
