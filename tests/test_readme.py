"""The README is executable: every ``layoutverify`` command it shows runs, as written, from a
checkout, with the exit status and the output the README shows.

What is run, in README order, in one temporary directory holding a copy of ``corpora/`` (the
README's commands are written for the repository root; files they create, such as
``golden/triton-3.9.0.json``, are used by later commands):

* fenced ``sh`` blocks: each command (``$ `` prompt or a bare line; ``\\`` continues a line;
  ``a && b`` runs the ``layoutverify`` parts) through ``bash`` exactly as written. The install and
  test command lines (``pip install ...``, ``python -m pytest ...``) are the coordinator's: they are
  kept in the README and not run here. A block holding the line ``# needs a GPU`` is skipped
  when no NVIDIA GPU is present (none is today). A block holding ``# needs a PostgreSQL server``
  names a server that is not here (``db.example``) and is not run; the service tests start a real
  PostgreSQL for that path.
* ``layoutverify serve`` is run as written as a server: it must say ``serving on`` within a
  minute and stop cleanly on SIGTERM (cache directory in the temporary directory).
* inline code spans that are complete commands (``layoutverify check corpora``): no placeholders
  (upper-case metavariables, ``[...]``, ``...``).

Exit status expected: 1 when the output shown has a differing verdict (``verdict: not_equal`` or
``different_tensors``) or a ``CHANGED``/``ADDED``/``REMOVED`` line, else 0. Output shown under a
``$`` command must appear in the real output: line by line from the first line, ``...`` alone on
a line skips any lines, a line ending in ``...`` matches by its prefix, and times (``(0.3 ms)``)
and the layout counts of ``recorded N layouts`` / ``N unchanged`` are compared as numbers-free
text (corpora grow).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
OWNED_PREFIXES = ("apt-get ", "pip ", "python -m pytest", ".ci/")   # install / test lines: kept, not run here
GPU_MARK = "# needs a GPU"
PG_MARK = "# needs a PostgreSQL server"


@dataclass
class Command:
    text: str                  # the command as written (continuations joined)
    shown: list[str] = field(default_factory=list)   # output lines the README shows
    line: int = 0              # README line number
    gpu: bool = False
    elsewhere: bool = False    # needs a server that is not here (PG_MARK)


def _blocks(text: str):
    """(language, first line number, lines) of every fenced block."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        lang, start, body = m.group(1), i + 2, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        yield lang, start, body
        i += 1


def commands_of(text: str) -> list[Command]:
    out: list[Command] = []
    for lang, start, body in _blocks(text):
        if lang not in ("sh", "bash", "shell", "console"):
            continue
        gpu = any(ln.strip() == GPU_MARK for ln in body)
        elsewhere = any(ln.strip() == PG_MARK for ln in body)
        prompted = any(ln.startswith("$ ") for ln in body)
        cur: Command | None = None
        k = 0
        while k < len(body):
            ln = body[k]
            is_cmd = ln.startswith("$ ") if prompted else bool(ln.strip()) and not ln.lstrip().startswith("#")
            if is_cmd:
                cmd = ln[2:] if prompted else ln
                first = start + k
                while cmd.rstrip().endswith("\\") and k + 1 < len(body):
                    k += 1
                    cmd = cmd.rstrip()[:-1].rstrip() + " " + body[k].strip()
                cur = Command(cmd.strip(), line=first, gpu=gpu, elsewhere=elsewhere)
                out.append(cur)
            elif cur is not None and prompted and not ln.lstrip().startswith("#"):
                cur.shown.append(ln)
            k += 1
    for c in out:                                  # trailing blank lines are not output
        while c.shown and not c.shown[-1].strip():
            c.shown.pop()
    return out


def inline_commands(text: str) -> list[Command]:
    out = []
    for m in re.finditer(r"`(layoutverify [^`]*)`", text):
        cmd = m.group(1)
        if re.search(r"\[|\]|\.\.\.|\||\b[A-Z]{1,}\b", cmd):
            continue                                   # a synopsis with placeholders
        out.append(Command(cmd, line=text[:m.start()].count("\n") + 1))
    return out


def runnable_parts(cmd: str) -> list[str]:
    """The ``layoutverify`` parts of ``a && b`` (install/test lines are not run)."""
    parts = [p.strip() for p in cmd.split(" && ")]
    return [p for p in parts if p.startswith("layoutverify ") or p == "layoutverify"]


def _normalize(line: str) -> str:
    line = re.sub(r"\(\d+(\.\d+)? ms\)", "(# ms)", line.rstrip())
    line = re.sub(r"^recorded \d+ layouts", "recorded # layouts", line)
    return re.sub(r"^\d+ unchanged, ", "# unchanged, ", line)


def _matches(expected: str, actual: str) -> bool:
    e, a = _normalize(expected), _normalize(actual)
    if e.endswith("...") and e != "...":
        return a.startswith(e[:-3].rstrip())
    return e == a


def check_shown(shown: list[str], actual: list[str]) -> str | None:
    """None when ``shown`` matches ``actual`` (see the module docstring), else why not."""
    segments: list[list[str]] = [[]]
    for ln in shown:
        if ln.strip() == "...":
            segments.append([])
        else:
            segments[-1].append(ln)
    pos = 0
    for n, seg in enumerate(segments):
        if not seg:
            continue
        if n == 0:
            starts = [0]
        else:
            starts = range(pos, len(actual) - len(seg) + 1)
        for s in starts:
            if s + len(seg) <= len(actual) and all(_matches(e, actual[s + j]) for j, e in enumerate(seg)):
                pos = s + len(seg)
                break
        else:
            return f"not found in order: {seg[0]!r} (after line {pos} of the output)"
    return None


def _expected_exit(c: Command) -> int:
    differs = any(ln.startswith(("verdict: not_equal", "verdict: different_tensors", "CHANGED ", "ADDED ", "REMOVED "))
                  for ln in c.shown)
    return 1 if differs else 0


def _has_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


README_TEXT = README.read_text()
COMMANDS = commands_of(README_TEXT) + inline_commands(README_TEXT)


def test_readme_shows_commands_and_keeps_the_owned_lines():
    runnable = [c for c in COMMANDS if runnable_parts(c.text)]
    assert len(runnable) >= 10
    texts = " ".join(c.text for c in runnable)
    for sub in ("show", "prove", "analyze", "check", "snapshot", "diff", "atlas", "list"):
        assert f"layoutverify {sub}" in texts, sub
    # the install and test lines stay in the README (not run here)
    assert any("pip install" in c.text and "python -m pytest" in c.text for c in COMMANDS)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "corpora", d / "corpora", ignore=shutil.ignore_patterns("__pycache__"))
    return d


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("GITHUB_STEP_SUMMARY", None)
    return env


def _serve_as_written(part: str, workdir: Path) -> str | None:
    """Start the server command, wait for ``serving on``, stop it; None when all went well."""
    import signal
    import threading
    env = dict(_env(), XDG_CACHE_HOME=str(workdir / "cache"))
    proc = subprocess.Popen(["bash", "-c", "exec " + part], cwd=workdir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    seen: list[str] = []
    ready = threading.Event()

    def read():
        for line in proc.stdout:
            seen.append(line)
            if "serving on http://" in line:
                ready.set()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not ready.wait(60):
            return "the server did not say 'serving on' within 60 s: " + "".join(seen)[-800:]
        if proc.poll() is not None:
            return f"the server exited ({proc.returncode}) after starting"
        return None
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_every_readme_command_runs_as_written(workdir):
    """All commands in README order, in one directory (later commands use earlier outputs)."""
    assert shutil.which("layoutverify", path=_env()["PATH"]), "the layoutverify script is not installed"
    gpu = None
    failures = []
    ran = 0
    for c in COMMANDS:
        parts = runnable_parts(c.text)
        if not parts:
            continue
        if c.gpu:
            gpu = _has_gpu() if gpu is None else gpu
            if not gpu:
                continue
        if c.elsewhere:
            continue
        for part in parts:
            if part.startswith("layoutverify serve"):
                why = _serve_as_written(part, workdir)
                ran += 1
                if why:
                    failures.append(f"README line {c.line}: {why}: {part[:100]}")
                continue
            r = subprocess.run(["bash", "-c", part], cwd=workdir, env=_env(), capture_output=True, text=True,
                               timeout=600)
            ran += 1
            want = _expected_exit(c) if part == parts[-1] else 0
            if r.returncode != want:
                failures.append(f"README line {c.line}: exit {r.returncode}, expected {want}: {part[:100]}\n"
                                f"{r.stderr[-1500:]}")
                continue
            if c.shown and part == parts[-1]:
                why = check_shown(c.shown, r.stdout.split("\n"))
                if why:
                    failures.append(f"README line {c.line}: output differs: {why}\n--- shown:\n"
                                    + "\n".join(c.shown) + "\n--- actual:\n" + r.stdout[:3000])
    assert ran >= 10
    assert not failures, "\n\n".join(failures)


# -- the matcher itself ------------------------------------------------------------------------
def test_matcher_rules():
    actual = ["verdict: not_equal", "method:  f2  (0.7 ms)", "reason:  at lane=4 A holds (0, 0); more", "", "grid"]
    assert check_shown(["verdict: not_equal", "method:  f2  (0.3 ms)", "reason:  at lane=4 ..."], actual) is None
    assert check_shown(["verdict: equal"], actual) is not None
    assert check_shown(["method:  f2  (0.7 ms)"], actual) is not None          # anchored at the first line
    assert check_shown(["verdict: not_equal", "...", "grid"], actual) is None
    assert check_shown(["verdict: not_equal", "...", "nothing like this"], actual) is not None
    cmds = commands_of("```sh\n$ layoutverify a \\\n    --b\nout\n...\n# note\n$ layoutverify c\n```\n")
    assert [(c.text, c.shown) for c in cmds] == [("layoutverify a --b", ["out", "..."]), ("layoutverify c", [])]
    assert runnable_parts("pip install -e . && layoutverify show X") == ["layoutverify show X"]
    assert [c.text for c in inline_commands("`layoutverify check corpora` and `layoutverify show SPEC`")] == \
        ["layoutverify check corpora"]


def test_ci_runs_exactly_the_readme_test_command():
    """``.ci/run`` calls the README's test command, character for character."""
    test_lines = [c.text for c in COMMANDS if "python -m pytest" in c.text]
    assert len(test_lines) == 1
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_lines[0] in ci
