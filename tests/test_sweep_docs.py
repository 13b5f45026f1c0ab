"""``docs/guides/sweeps.md`` runs as written: every command of its ``sh`` blocks, in page order, in
one temporary directory holding a copy of ``examples/``, with the exit status and the output the
page shows (the conventions of ``tests/test_readme.py``: output that starts with an
``error:`` line is stderr and means exit 2). Where ``tests/test_readme.py`` already runs every
documentation page, this test leaves the page to it."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import test_readme

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guides" / "sweeps.md"
ERROR = re.compile(r"^[\w-]+(?:\.py)?(?: \w+)?: error: ")


def test_sweeps_guide_runs_as_written(tmp_path):
    if PAGE in getattr(test_readme, "PAGES", ()):
        pytest.skip("tests/test_readme.py runs every documentation page, this one included")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
               RAY_USAGE_STATS_ENABLED="0", PYTHONWARNINGS="ignore")
    commands = test_readme.commands_of(PAGE.read_text())
    assert len(commands) >= 10
    failures = []
    for c in commands:
        r = subprocess.run(["bash", "-c", c.text], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=600)
        error = bool(c.shown) and ERROR.match(c.shown[0]) is not None
        want = 2 if error else test_readme._expected_exit(c)
        if r.returncode != want:
            failures.append(f"line {c.line}: exit {r.returncode}, expected {want}: {c.text}\n{r.stderr[-1500:]}")
            continue
        if c.shown:
            why = test_readme.check_shown(c.shown, (r.stderr if error else r.stdout).split("\n"))
            if why:
                failures.append(f"line {c.line}: {c.text}: {why}\n--- actual:\n{(r.stderr if error else r.stdout)[:2000]}")
    assert not failures, "\n\n".join(failures)
