"""Tests written for the mutation survivors in the SMT-LIB2 replay helpers of
``layoutverify.core.smt`` (``z3_binary``, ``replay``); see ``docs/mutation.md``, section ``smt``.

No real z3 is run: the z3 binary, the scripts folder, ``PATH`` and the Python interpreter are
replaced by small shell scripts in ``tmp_path``, so each test is fast and its expected value
follows from the documented behaviour alone:

* ``z3_binary``: "the one the z3-solver wheel installs next to Python [an executable file ``z3``
  in ``sysconfig.get_path("scripts")``], else one on PATH, else ``None``";
* ``replay``: runs the binary on the file (or, without one or with ``use_binary=False``, the
  Python interpreter with a ``z3.parse_smt2_string`` script), under ``timeout_s``, and returns the
  ``sat``/``unsat``/``unknown`` lines it printed, in order, and how it replayed.
"""
import os
import subprocess
import sys
import sysconfig
import time

import pytest

from layoutverify.core import smt


def _script(path, body, mode=0o755):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(mode)
    return path


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    """An empty scripts folder standing in for the one next to Python, an empty folder as the
    whole PATH, and an empty working directory (a relative ``z3`` finds nothing)."""
    scripts, bindir, cwd = tmp_path / "scripts", tmp_path / "bin", tmp_path / "cwd"
    for d in (scripts, bindir, cwd):
        d.mkdir()
    real = sysconfig.get_path
    monkeypatch.setattr(sysconfig, "get_path",
                        lambda name, *a, **k: str(scripts) if name == "scripts" else real(name, *a, **k))
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.chdir(cwd)
    return scripts, bindir


@pytest.mark.skipif(os.name != "posix", reason="shell-script stand-ins")
def test_z3_binary_prefers_the_executable_next_to_python(dirs):
    """An executable ``z3`` in the scripts folder wins over one on PATH, and the full path is
    returned. Kills ``smt.x_z3_binary__mutmut_`` 4 (the bare name ``z3``, looked up in the working
    directory), 5 (the scripts folder itself), 9, 10 (another file name), 13, 14, 15, 16
    (``os.access`` called without the path or the mode: ``TypeError``)."""
    scripts, bindir = dirs
    wheel = _script(scripts / "z3", "exit 0")
    _script(bindir / "z3", "exit 0")
    assert smt.z3_binary() == os.path.join(str(scripts), "z3") == str(wheel)


@pytest.mark.skipif(os.name != "posix", reason="shell-script stand-ins")
def test_z3_binary_skips_what_is_not_an_executable_file(dirs):
    """A ``z3`` in the scripts folder that is a file without execute permission, or a folder
    (which has it), is not the solver: the one on PATH is found instead. Kills
    ``smt.x_z3_binary__mutmut_`` 11 (``isfile or access``)."""
    scripts, bindir = dirs
    on_path = _script(bindir / "z3", "exit 0")
    _script(scripts / "z3", "exit 0", mode=0o644)
    if os.access(scripts / "z3", os.X_OK):
        pytest.skip("this user may execute any file")
    assert smt.z3_binary() == str(on_path)
    (scripts / "z3").unlink()
    (scripts / "z3").mkdir()
    assert os.access(scripts / "z3", os.X_OK)
    assert smt.z3_binary() == str(on_path)


@pytest.mark.skipif(os.name != "posix", reason="shell-script stand-ins")
def test_z3_binary_falls_back_to_path_then_none(dirs):
    """Without one next to Python, the ``z3`` on PATH (exactly that name: ``Z3`` is another file
    on a case-sensitive file system); with none there either, ``None``. Kills
    ``smt.x_z3_binary__mutmut_`` 18, 19 (``shutil.which`` of another name)."""
    _, bindir = dirs
    assert smt.z3_binary() is None
    on_path = _script(bindir / "z3", "exit 0")
    assert smt.z3_binary() == str(on_path)


@pytest.fixture
def smt2(tmp_path):
    """A one-query exported file (its content does not matter to the stand-ins)."""
    p = tmp_path / "q.smt2"
    p.write_text("; 1 queries; expected answers, in order: unsat\n\n(push 1)\n(assert false)\n(check-sat)\n(pop 1)\n")
    return p


@pytest.mark.skipif(os.name != "posix", reason="shell-script stand-ins")
def test_replay_runs_the_binary_and_keeps_every_answer(tmp_path, monkeypatch, smt2):
    """With a z3 binary and ``use_binary`` (the default), ``replay`` runs that binary on the file
    and says so (``how`` names it); every ``sat``, ``unsat`` and ``unknown`` line it prints is an
    answer, in order, and nothing else is (an error line, surrounding spaces). Kills
    ``smt.x_replay__mutmut_`` 1, 2 (the binary never used), 15 (``how`` is ``None``), 38, 39
    (``unknown`` answers dropped)."""
    seen = tmp_path / "argv"
    fake = _script(tmp_path / "fakez3",
                   f'echo "$@" > {seen}\nprintf \'sat\\n unknown \\n(error "line 3")\\nunsat\\nunknown\\n\'')
    monkeypatch.setattr(smt, "z3_binary", lambda: str(fake))
    answers, how = smt.replay(str(smt2))
    assert answers == ["sat", "unknown", "unsat", "unknown"]
    assert how == f"z3 binary {fake}"
    assert seen.read_text().split() == [str(smt2)]


@pytest.mark.skipif(os.name != "posix", reason="shell-script stand-ins")
def test_replay_through_python_says_so(tmp_path, monkeypatch, smt2):
    """With ``use_binary=False`` (or no binary), ``replay`` runs the Python interpreter with the
    parser script and the file, and ``how`` names that method exactly. Kills
    ``smt.x_replay__mutmut_`` 30 (the ``how`` text changed)."""
    seen = tmp_path / "argv"
    fake = _script(tmp_path / "fakepython", f'printf "%s\\n" "$@" > {seen}\necho unsat')
    monkeypatch.setattr(sys, "executable", str(fake))
    monkeypatch.setattr(smt, "z3_binary", lambda: pytest.fail("z3_binary consulted with use_binary=False"))
    answers, how = smt.replay(str(smt2), use_binary=False)
    assert answers == ["unsat"]
    assert how == "z3.parse_smt2_string in a subprocess (no z3 binary found)"
    assert seen.read_text() == "\n".join(["-c", smt._REPLAY_SCRIPT, str(smt2)]) + "\n"
    monkeypatch.setattr(smt, "z3_binary", lambda: None)
    answers, how = smt.replay(str(smt2))
    assert answers == ["unsat"] and how == "z3.parse_smt2_string in a subprocess (no z3 binary found)"


@pytest.mark.skipif(os.name != "posix", reason="shell-script stand-ins")
@pytest.mark.parametrize("use_binary", [True, False], ids=["binary", "python"])
def test_replay_honours_the_time_limit(tmp_path, monkeypatch, smt2, use_binary):
    """A replay that does not finish within ``timeout_s`` is stopped and raises
    ``subprocess.TimeoutExpired`` (both ways of replaying). Kills ``smt.x_replay__mutmut_`` 8, 12
    (binary run without the limit), 20, 24 (Python run without it)."""
    hang = _script(tmp_path / "hang", "exec sleep 3")
    if use_binary:
        monkeypatch.setattr(smt, "z3_binary", lambda: str(hang))
    else:
        monkeypatch.setattr(sys, "executable", str(hang))
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        smt.replay(str(smt2), timeout_s=0.3, use_binary=use_binary)
    assert time.monotonic() - t0 < 2.5
