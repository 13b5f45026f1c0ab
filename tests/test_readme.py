"""The README and every documentation page are executable: each command and snippet they show
runs, as written, with the exit status and the output they show.

Pages (:data:`PAGES`): ``README.md``, every ``docs/**/*.md``, ``benchmarks/README.md``,
``CHANGELOG.md`` and every ``examples/**/*.md``. Each page runs in its own temporary directory
holding copies of ``corpora/``, ``examples/`` and ``benchmarks/`` (commands are written for the
repository root), its steps in page order, so files a command creates are there for the later
ones:

* fenced ``sh``/``bash``/``console``/``shell`` blocks: each command (``$ `` prompt, or a bare line
  in a block without prompts; ``\\`` continues a line; in ``a && b`` every part runs) through
  ``bash`` exactly as written. Kept and not run: the install and set-up lines (:data:`SETUP`:
  ``apt-get``, ``pip``, ``git clone``, ``cd``, a virtual environment) and the test suite's own
  command (``python -m pytest ... tests``, which is ``.ci/run``).
* a block whose first line is ``# file: PATH`` (Python, TOML, ...): written to PATH for the
  commands after it (a sweep spec, a test file that a later ``python -m pytest PATH`` runs).
* other ``python`` blocks: run with ``python -``; they must exit 0.
* ``layoutverify serve`` is started as written, as a server that stays up for the rest of the
  page; it must say ``serving on`` within a minute, and stops cleanly at the end (its cache
  directory is the page's).
* inline code spans that are complete command lines (``layoutverify check corpora``: a subcommand
  and its arguments, no placeholders such as upper-case metavariables, ``[...]``, ``...``), after
  the blocks; a bare ``layoutverify serve`` names the command and is not run.

Markers, on a line of their own in a block: ``# needs a GPU`` (run only where an NVIDIA GPU is
present), ``# needs a PostgreSQL server`` (names a server that is not here, ``db.example``; the
service tests start a real PostgreSQL for that path).

No fixed port: the port 8000 the pages show (``--port 8000``, ``localhost:8000``,
``127.0.0.1:8000``, and ``serve``'s default) is mapped to a free port per page, and
:func:`test_page_runs_as_written` runs with 8000 held by another socket.

Exit status expected: N when a ``# exit N`` line stands before the command in its block; else 2
when the output shown starts with an ``error:`` line (compared with
stderr) or is a JSON error document (``"kind": "error"``); 1 when it has a differing verdict
(``verdict: not_equal`` or ``different_tensors``, as text or as JSON) or a
``CHANGED``/``ADDED``/``REMOVED`` line; else 0. Output shown under a ``$`` command must appear in
the real output: line by line from the first line, ``...`` alone on a line skips any lines, a
line ending in ``...`` matches by its prefix, and times (``(0.3 ms)``) and the layout counts of
``recorded N layouts`` / ``N unchanged`` are compared as numbers-free text (corpora grow).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: install and set-up lines: kept in the pages, not run here
SETUP = ("apt-get ", "sudo ", "pip ", "pip3 ", "python -m pip ", "python3 -m pip ", "python -m venv ",
         "python3 -m venv ", "source ", ". ", "git clone ", "cd ", ".ci/", "export ")
SUITE = re.compile(r"^python3? -m pytest\b.*\stests/?$")     # the whole suite: .ci/run's command
GPU_MARK = "# needs a GPU"
PG_MARK = "# needs a PostgreSQL server"
FILE_MARK = re.compile(r"^#\s*file:\s*(\S+)\s*$")
EXIT_MARK = re.compile(r"^#\s*exit\s+(\d+)\s*$")   # "# exit N": the next command exits with N
SHELL = ("sh", "bash", "shell", "console")
SHOWN_PORT = 8000
COPIED = ("corpora", "examples", "benchmarks")


def pages() -> list[Path]:
    out = [README]
    out += sorted((ROOT / "docs").rglob("*.md"))
    out += [p for p in (ROOT / "benchmarks" / "README.md", ROOT / "CHANGELOG.md") if p.exists()]
    if (ROOT / "examples").is_dir():
        out += sorted((ROOT / "examples").rglob("*.md"))
    return out


PAGES = pages()


@dataclass
class Step:
    kind: str                  # "cmd", "file" or "python"
    text: str                  # the command (continuations joined), the file's content, the code
    shown: list[str] = field(default_factory=list)   # output lines the page shows (commands)
    line: int = 0              # line number in the page
    gpu: bool = False
    elsewhere: bool = False    # needs a server that is not here (PG_MARK)
    path: str = ""             # "file" steps: where to write it
    exit: int | None = None    # the exit status a "# exit N" line before the command states


# Older name, kept for readers of this module: a command is a step of kind "cmd".
Command = Step


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


def _shell_steps(start: int, body: list[str]) -> list[Step]:
    gpu = any(ln.strip() == GPU_MARK for ln in body)
    elsewhere = any(ln.strip() == PG_MARK for ln in body)
    prompted = any(ln.startswith("$ ") for ln in body)
    out: list[Step] = []
    cur: Step | None = None
    stated: int | None = None
    k = 0
    while k < len(body):
        ln = body[k]
        m = EXIT_MARK.match(ln.strip())
        if m:
            stated = int(m.group(1))
            k += 1
            continue
        is_cmd = ln.startswith("$ ") if prompted else bool(ln.strip()) and not ln.lstrip().startswith("#")
        if is_cmd:
            cmd = ln[2:] if prompted else ln
            first = start + k
            while cmd.rstrip().endswith("\\") and k + 1 < len(body):
                k += 1
                cmd = cmd.rstrip()[:-1].rstrip() + " " + body[k].strip()
            cur = Step("cmd", cmd.strip(), line=first, gpu=gpu, elsewhere=elsewhere, exit=stated)
            stated = None
            out.append(cur)
        elif cur is not None and prompted and not ln.lstrip().startswith("#"):
            cur.shown.append(ln)
        k += 1
    for c in out:                                  # trailing blank lines are not output
        while c.shown and not c.shown[-1].strip():
            c.shown.pop()
    return out


def steps_of(text: str) -> list[Step]:
    """The page's steps in order: files, Python snippets and commands of its fenced blocks."""
    out: list[Step] = []
    for lang, start, body in _blocks(text):
        marker = FILE_MARK.match(body[0]) if body else None
        if marker:
            out.append(Step("file", "\n".join(body[1:]) + "\n", line=start, path=marker.group(1)))
        elif lang in SHELL:
            out += _shell_steps(start, body)
        elif lang == "python":
            out.append(Step("python", "\n".join(body) + "\n", line=start,
                            gpu=any(ln.strip() == GPU_MARK for ln in body),
                            elsewhere=any(ln.strip() == PG_MARK for ln in body)))
    return out


def commands_of(text: str) -> list[Step]:
    """The shell commands of the page's fenced blocks."""
    return [s for s in steps_of(text) if s.kind == "cmd"]


def inline_commands(text: str) -> list[Step]:
    out = []
    for m in re.finditer(r"`(layoutverify [^`]*)`", text):
        cmd = m.group(1)
        if re.search(r"\[|\]|\.\.\.|\||\b[A-Z]{1,}\b", cmd):
            continue                                   # a synopsis with placeholders
        if len(cmd.split()) < 3:
            continue                                   # a command's name (`layoutverify serve`), not a command line
        out.append(Step("cmd", cmd, line=text[:m.start()].count("\n") + 1))
    return out


def is_setup(part: str) -> bool:
    return part.startswith(SETUP) or bool(SUITE.match(part))


def runnable_parts(cmd: str) -> list[str]:
    """The parts of ``a && b`` that run here (install, set-up and the suite's own command do not)."""
    parts = [p.strip() for p in cmd.split(" && ")]
    return [p for p in parts if p and not is_setup(p)]


def map_port(text: str, port: int) -> str:
    """The page's port 8000 (``--port 8000``, ``localhost:8000``, ``127.0.0.1:8000``) as ``port``."""
    text = re.sub(rf"\b(localhost|127\.0\.0\.1|0\.0\.0\.0):{SHOWN_PORT}\b", rf"\g<1>:{port}", text)
    return re.sub(rf"--port[ =]{SHOWN_PORT}\b", f"--port {port}", text)


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


def shows_error(c: Step) -> bool:
    return bool(c.shown) and re.match(r"^[\w-]+(?:\.py)?(?: \w+)?: error: ", c.shown[0]) is not None


def _expected_exit(c: Step) -> int:
    if c.exit is not None:
        return c.exit
    if shows_error(c) or any('"kind": "error"' in ln for ln in c.shown):
        return 2
    differs = any(ln.startswith(("verdict: not_equal", "verdict: different_tensors", "CHANGED ", "ADDED ", "REMOVED "))
                  or re.search(r'"verdict": "(not_equal|different_tensors)"', ln) for ln in c.shown)
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
    assert len(runnable) >= 3
    texts = " ".join(c.text for c in runnable)
    for sub in ("show", "prove", "analyze"):
        assert f"layoutverify {sub}" in texts, sub
    # the install and test lines stay in the README (not run here)
    assert any("pip install" in c.text and "python -m pytest" in c.text for c in COMMANDS)


def test_the_pages_show_every_command():
    """Across the README and the docs, every subcommand is shown running."""
    texts = " ".join(s.text for p in PAGES for s in steps_of(p.read_text()) + inline_commands(p.read_text())
                     if s.kind == "cmd" and runnable_parts(s.text))
    for sub in ("show", "prove", "analyze", "check", "snapshot", "diff", "atlas", "list", "scan", "sweep", "serve"):
        assert f"layoutverify {sub}" in texts, sub


# -- running a page ----------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(workdir: Path) -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("GITHUB_STEP_SUMMARY", None)
    env["XDG_CACHE_HOME"] = str(workdir / "cache")
    return env


class _Server:
    """``layoutverify serve`` as written (port mapped), up until :meth:`stop`."""

    def __init__(self, part: str, workdir: Path, port: int):
        self.port = port
        if "--port" not in part:
            part += f" --port {port}"
        self.proc = subprocess.Popen(["bash", "-c", "exec " + part], cwd=workdir, env=_env(workdir),
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.seen: list[str] = []
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.seen.append(line)
            if "serving on http://" in line:
                self.ready.set()

    def wait(self) -> str | None:
        """None once the server has said ``serving on`` and accepts connections (it says so just
        before it binds), else why not."""
        if not self.ready.wait(60):
            return "the server did not say 'serving on' within 60 s: " + "".join(self.seen)[-800:]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return f"the server exited ({self.proc.returncode}) after starting: " + "".join(self.seen)[-800:]
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=2).close()
                return None
            except OSError:
                time.sleep(0.2)
        return "the server said 'serving on' but accepted no connection within 60 s"

    def stop(self) -> str | None:
        if self.proc.poll() is not None:
            return f"the server exited ({self.proc.returncode}) before the page's end: " + "".join(self.seen)[-800:]
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return "the server did not stop within 30 s of SIGTERM"
        return None


def _workdir(tmp: Path) -> Path:
    for name in COPIED:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, tmp / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return tmp


def run_page(page: Path, workdir: Path) -> tuple[int, list[str]]:
    """Run every step of ``page`` in ``workdir``; (steps run, failures)."""
    text = page.read_text()
    port = _free_port()
    env = _env(workdir)
    gpu = None
    failures: list[str] = []
    ran = 0
    server: _Server | None = None
    where = page.relative_to(ROOT)
    try:
        for s in steps_of(text) + inline_commands(text):
            if s.gpu:
                gpu = _has_gpu() if gpu is None else gpu
                if not gpu:
                    continue
            if s.elsewhere:
                continue
            if s.kind == "file":
                target = workdir / s.path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(map_port(s.text, port))
                continue
            if s.kind == "python":
                r = subprocess.run([sys.executable, "-"], input=map_port(s.text, port), cwd=workdir, env=env,
                                   capture_output=True, text=True, timeout=600)
                ran += 1
                if r.returncode != 0:
                    failures.append(f"{where}:{s.line}: the Python snippet exited {r.returncode}:\n"
                                    f"{(r.stdout + r.stderr)[-1500:]}")
                continue
            parts = runnable_parts(s.text)
            for part in parts:
                part = map_port(part, port)
                if part.startswith("layoutverify serve"):
                    ran += 1
                    if server is not None:
                        failures.append(f"{where}:{s.line}: a second server on one page")
                        continue
                    server = _Server(part, workdir, port)
                    why = server.wait()
                    if why:
                        failures.append(f"{where}:{s.line}: {why}: {part[:100]}")
                    continue
                r = subprocess.run(["bash", "-c", part], cwd=workdir, env=env, capture_output=True, text=True,
                                   timeout=600)
                ran += 1
                last = part == map_port(parts[-1], port)
                want = _expected_exit(s) if last else 0
                if r.returncode != want:
                    failures.append(f"{where}:{s.line}: exit {r.returncode}, expected {want}: {part[:100]}\n"
                                    f"{(r.stderr or r.stdout)[-1500:]}")
                    continue
                if s.shown and last:
                    out = r.stderr if shows_error(s) else r.stdout
                    why = check_shown(s.shown, out.split("\n"))
                    if why:
                        failures.append(f"{where}:{s.line}: output differs: {why}\n--- shown:\n"
                                        + "\n".join(s.shown) + "\n--- actual:\n" + out[:3000])
    finally:
        if server is not None:
            why = server.stop()
            if why:
                failures.append(f"{where}: {why}")
    return ran, failures


@pytest.fixture(scope="module")
def port_8000_taken():
    """Port 8000 held by another socket while the pages run (when it is free to take at all)."""
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", SHOWN_PORT))
        s.listen(1)
    except OSError:
        pass                     # something else holds it already: taken either way
    yield
    s.close()


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_runs_as_written(page, tmp_path, port_8000_taken):
    assert shutil.which("layoutverify", path=_env(tmp_path)["PATH"]), "the layoutverify script is not installed"
    ran, failures = run_page(page, _workdir(tmp_path))
    assert not failures, "\n\n".join(failures)
    if page == README:
        assert ran >= 3


# -- the matcher and the page reader themselves ------------------------------------------------
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
    assert runnable_parts("python -m pytest -q -p no:cacheprovider tests") == []
    assert runnable_parts("python -m pytest -q test_mine.py") == ["python -m pytest -q test_mine.py"]
    assert [c.text for c in inline_commands("`layoutverify check corpora` and `layoutverify show SPEC` "
                                            "and `layoutverify diff`")] == ["layoutverify check corpora"]
    assert map_port("curl localhost:8000/v1 && layoutverify serve --port 8000", 4321) == \
        "curl localhost:4321/v1 && layoutverify serve --port 4321"
    steps = steps_of("```toml\n# file: specs/a.toml\ntask = 1\n```\n```python\nprint(1)\n```\n")
    assert [(s.kind, s.path, s.text) for s in steps] == [("file", "specs/a.toml", "task = 1\n"),
                                                        ("python", "", "print(1)\n")]
    assert _expected_exit(Step("cmd", "x", shown=["layoutverify: error: unknown framework 'trition'"])) == 2


def test_ci_runs_exactly_the_readme_test_command():
    """``.ci/run`` calls the README's test command, character for character."""
    test_lines = [c.text for c in COMMANDS if "python -m pytest" in c.text]
    assert len(test_lines) == 1
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_lines[0] in ci
