"""``layoutverify check``: the CI gate over TOML corpora.

Claims here use facts from the PTX ISA (the m16n8k16 accumulator is Triton's mma v2 accumulator,
as the PTX helper verified against Triton) and Triton's documented blocked semantics (``order``
decides which dim lanes walk first), so the expected verdicts do not come from our checker.
Reports are checked by *parsing* them: JUnit XML with ElementTree, JSON with json, Markdown by
its table rows.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from layoutverify.apps.cli import main

ROOT = Path(__file__).resolve().parents[1]

MMA = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [1, 1], instrShape = [16, 8]}>"
BLOCKED = "#ttg.blocked<{{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = {order}}}>"

GOOD = f'''
title = "claims that hold"

[[claim]]
name = "mma-accumulator"
a = "ptx:mma.m16n8k16.f32.C"
b = "triton:{MMA}"
shape_b = [16, 8]
expect = "equal"
tags = ["nvidia"]

[[claim]]
name = "order-matters"
a = "triton:{BLOCKED.format(order="[1, 0]")}"
b = "triton:{BLOCKED.format(order="[0, 1]")}"
shape = [64, 64]
expect = "not_equal"

[[claim]]
name = "mma-to-dot-a"
a = "triton:{MMA}"
b = "triton:#ttg.dot_op<{{opIdx = 0, parent = {MMA}, kWidth = 2}}>"
shape = [16, 16]
expect = "no_op"

[[claim]]
name = "triton-small-k-finding"
a = "ptx:mma.m16n8k8.f16.A"
b = "triton:#ttg.dot_op<{{opIdx = 0, parent = {MMA}, kWidth = 2}}>"
shape_b = [16, 8]
expect = "equal"
known = "equal_up_to_register_order"
note = "Triton's operand tile has K = 16: each value held twice"
'''

BAD_CLAIM = f'''
[[claim]]
name = "wrong-order"
a = "triton:{BLOCKED.format(order="[1, 0]")}"
b = "triton:{BLOCKED.format(order="[0, 1]")}"
shape = [64, 64]
expect = "equal"

[[claim]]
name = "unparseable"
a = "triton:#ttg.blocked<{{sizePerThread = [1, 4]"
b = "ptx:mma.m16n8k16.f32.C"
expect = "equal"
'''


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture
def corpora(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text(GOOD)
    bad = tmp_path / "bad.toml"
    bad.write_text(BAD_CLAIM)
    return good, bad


def test_all_claims_hold_exit_0(capsys, corpora, tmp_path):
    good, _ = corpora
    rc, out, err = run_cli(capsys, "check", str(good), "-j", "1")
    assert rc == 0, out + err
    lines = out.splitlines()
    assert any(ln.startswith("ok") and "good::mma-accumulator" in ln for ln in lines)
    assert any(ln.startswith("KNOWN") and "triton-small-k-finding" in ln for ln in lines)
    assert "3 passed, 0 failed, 1 known differences" in out
    assert "\r" not in err                       # no progress bar when stderr is not a terminal


def test_failures_exit_1_with_reports(capsys, corpora, tmp_path):
    good, bad = corpora
    junit, js, md = tmp_path / "r.xml", tmp_path / "r.json", tmp_path / "r.md"
    rc, out, err = run_cli(capsys, "check", str(good), str(bad), "--junit", str(junit), "--json", str(js),
                           "--markdown", str(md), "-j", "2")
    assert rc == 1, err
    assert "FAIL bad::wrong-order: expected equal, got not_equal" in out
    assert "ERROR bad::unparseable" in out

    # JUnit: one suite per corpus file, one case per claim, failure/error/skipped elements
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and root.get("tests") == "6"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"good", "bad"}
    assert [len(suites[n].findall("testcase")) for n in ("good", "bad")] == [4, 2]
    assert suites["good"].get("failures") == "0" and suites["good"].get("skipped") == "1"
    assert suites["bad"].get("failures") == "1" and suites["bad"].get("errors") == "1"
    case = {c.get("name"): c for c in suites["bad"].findall("testcase")}
    fail = case["wrong-order"].find("failure")
    assert fail is not None and fail.get("type") == "not_equal"
    assert "witness:" in fail.text and '"hardware"' in fail.text
    w = json.loads(fail.text.split("witness: ", 1)[1])
    assert set(w) >= {"hardware", "a", "b"} and w["a"] != w["b"]
    assert case["unparseable"].find("error") is not None
    known = {c.get("name"): c for c in suites["good"].findall("testcase")}["triton-small-k-finding"]
    assert known.find("skipped") is not None and "known difference" in known.find("skipped").get("message")

    # JSON
    doc = json.loads(js.read_text())
    assert doc["summary"] == {"holds": 3, "fails": 1, "errors": 1, "known": 1, "findings": 0, "total": 6}
    by_id = {c["id"]: c for c in doc["claims"]}
    assert by_id["bad::wrong-order"]["witness"]["hardware"]
    assert by_id["good::mma-to-dot-a"]["got"] == "no_op"

    # Markdown: a header line, a table with one row per claim, the failures explained
    text = md.read_text()
    assert text.startswith("## layoutverify: 2 claim(s) do not hold")
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and "`" in ln]
    assert len(rows) == 6
    assert any("❌" in r and "bad::wrong-order" in r for r in rows)
    assert "witness:" in text


def test_parallel_equals_serial(capsys, corpora, tmp_path):
    good, bad = corpora
    outs = []
    for j in ("1", "2"):
        js = tmp_path / f"j{j}.json"
        run_cli(capsys, "check", str(good), str(bad), "--json", str(js), "-j", j)
        outs.append([(c["id"], c["status"], c["got"]) for c in json.loads(js.read_text())["claims"]])
    assert outs[0] == outs[1]


def test_select_and_quiet(capsys, corpora):
    good, bad = corpora
    rc, out, _ = run_cli(capsys, "check", str(good), str(bad), "-k", "nvidia", "-q")
    assert rc == 0 and out.strip() == "1 passed, 0 failed"
    rc, out, _ = run_cli(capsys, "check", str(good), str(bad), "-q", "-j", "1")
    assert rc == 1 and not any(ln.startswith("ok") for ln in out.splitlines())
    assert any(ln.startswith("FAIL") for ln in out.splitlines())


@pytest.mark.parametrize("text, needle", [
    ("[[claim]]\nname = 'x\n", "not valid TOML"),       # unterminated string
    ("[[claim]\nname = 'x'", "not valid TOML"),
    ("[[claim]]\nname = 'x'\na = 'ptx:mma.m16n8k16.f32.C'\nb = 'ptx:mma.m16n8k16.f32.C'\nexpect = 'same'\n",
     "expect 'same' is not one of"),
    ("[[claim]]\nname = 'x'\na = 'ptx:mma.m16n8k16.f32.C'\nb = 'ptx:mma.m16n8k16.f32.C'\nexpect = 'equal'\n"
     "colour = 'red'\n", "unknown key(s) ['colour']"),
    ("[[claim]]\nname = 'x'\na = 'ptx:mma.m16n8k16.f32.C'\nexpect = 'equal'\n", "needs a non-empty string 'b'"),
    ("[[claim]]\nname = 'x'\na = 'p:q'\nb = 'p:q'\nexpect = 'equal'\n[[claim]]\nname = 'x'\na = 'p:q'\nb = 'p:q'\n"
     "expect = 'equal'\n", "duplicate name"),
    ("[[claim]]\nname = 'x'\na = 'p:q'\nb = 'p:q'\nexpect = 'equal'\nknown = 'equal'\n", "a known difference must differ"),
    ("[[claim]]\nname = 'x'\na = 'p:q'\nb = 'p:q'\nexpect = 'equal'\nshape = [0, 4]\n", "positive integers"),
    ("claim = 3\n", "array of tables"),
    ("wibble = 1\n", "unknown top-level key"),
    ("[[inexpressible]]\nfragment = 'f'\nframework = 'triton'\n", "needs a non-empty string 'note'"),
])
def test_bad_input_exit_2(capsys, tmp_path, text, needle):
    p = tmp_path / "c.toml"
    p.write_text(text)
    rc, out, err = run_cli(capsys, "check", str(p))
    assert rc == 2, (out, err)
    assert needle in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_missing_file_and_bad_jobs_exit_2(capsys, corpora, tmp_path):
    rc, _, err = run_cli(capsys, "check", str(tmp_path / "nope.toml"))
    assert rc == 2 and "no such corpus file" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, _, err = run_cli(capsys, "check", str(empty))
    assert rc == 2 and "no corpus files" in err
    rc, _, err = run_cli(capsys, "check", str(corpora[0]), "-j", "0")
    assert rc == 2 and "--jobs" in err
    rc, _, err = run_cli(capsys, "check", str(corpora[0]), "-k", "no-such-claim")
    assert rc == 2 and "no claims" in err


def test_stale_known_difference_fails(capsys, tmp_path):
    """A claim marked `known` whose expectation now holds fails: the mark is stale."""
    p = tmp_path / "stale.toml"
    p.write_text(f'''
[[claim]]
name = "fixed"
a = "ptx:mma.m16n8k16.f32.C"
b = "triton:{MMA}"
shape_b = [16, 8]
expect = "equal"
known = "not_equal"
''')
    rc, out, _ = run_cli(capsys, "check", str(p))
    assert rc == 1 and "the difference is gone, remove `known`" in out


def test_markdown_appends_to_github_step_summary(capsys, corpora, tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    rc, _, _ = run_cli(capsys, "check", str(corpora[0]), "--markdown", str(summary), "-j", "1")
    assert rc == 0
    text = summary.read_text()
    assert text.startswith("earlier step\n## layoutverify: all claims hold (1 known differences)")


def test_progress_bar_only_on_a_terminal():
    from layoutverify.apps.claims import progress_bar

    class Stream:
        def __init__(self, tty):
            self.tty, self.text = tty, ""

        def isatty(self):
            return self.tty

        def write(self, s):
            self.text += s

        def flush(self):
            pass

    assert progress_bar(Stream(False)) is None
    s = Stream(True)
    draw = progress_bar(s)
    draw(1, 4)
    draw(4, 4)
    assert "\r[" in s.text and "4/4" in s.text and s.text.endswith("\n")


def test_console_script_and_exit_codes_in_a_subprocess(corpora):
    """The real command line, as CI runs it: exit status and stdout, no terminal."""
    good, bad = corpora
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "layoutverify", "check", str(good), str(bad), "-j", "2"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 1 and "FAIL bad::wrong-order" in p.stdout and "\r" not in p.stderr


def test_github_actions_workflow_gates_on_check():
    yaml = pytest.importorskip("yaml")
    wf = yaml.safe_load((ROOT / "docs" / "github-actions-layoutverify.yml").read_text())
    assert "pull_request" in wf[True] or "pull_request" in wf.get("on", {})   # YAML 1.1 reads `on` as True
    steps = wf["jobs"]["layout-claims"]["steps"]
    runs = " ".join(s.get("run", "") for s in steps)
    assert "layoutverify check corpora" in runs and "--junit" in runs and '--markdown "$GITHUB_STEP_SUMMARY"' in runs
