"""Exported SMT-LIB2 replays with the same answers.

``compare(..., smt2=PATH)`` writes every z3 query it asked, each between ``(push 1)`` and
``(pop 1)``, with the answer z3 gave in-process. Replaying the file in a fresh process (the z3
command-line binary that the z3-solver wheel installs, and separately ``z3.parse_smt2_string``)
must print the same sat/unsat sequence, and the decisive answers must match the verdict.
"""
import re

import pytest

from layoutverify.core import expr as E
from layoutverify.core.compare import compare
from layoutverify.core.layout import Layout
from layoutverify.core.smt import expected_answers, replay, z3_binary

pytest.importorskip("z3")

R, L, W, OFF = E.Var("register"), E.Var("lane"), E.Var("warp"), E.Var("offset")
DIMS = [("register", 6), ("lane", 32), ("warp", 2)]
BASE = {"register": [(2, [0, 1]), (3, [16, 0])], "lane": [(4, [0, 2]), (8, [1, 0])], "warp": [(2, [8, 0])]}


def mr(m=None, dims=DIMS):
    return Layout.from_modes(dims, [48, 16], {**BASE, **(m or {})})


F2A = Layout.from_bases({"register": [[0, 1], [1, 0]], "lane": [[0, 2], [0, 4], [2, 0], [4, 0], [8, 0]],
                         "warp": [[0, 8]]}, [16, 16])
F2B = Layout.from_bases({"register": [[1, 0], [0, 1]], "lane": [[0, 2], [0, 4], [2, 0], [4, 0], [8, 0]],
                         "warp": [[0, 8]]}, [16, 16])
SW = Layout([("offset", 384)], [("dim0", 48), ("dim1", 8)], [OFF // 8, (OFF % 8) ^ ((OFF // 8) % 8)])
ROT = Layout([("offset", 384)], [("dim0", 48), ("dim1", 8)], [OFF // 8, (OFF % 8 + OFF // 8) % 8])

CASES = [
    ("equal", mr(), Layout(DIMS, [("dim0", 48), ("dim1", 16)], [(R // 2) * 16 + L // 4 + W * 8, R % 2 + (L % 4) * 2]),
     "z3"),
    ("equal_up_to_register_order", mr(), mr({"register": [(3, [16, 0]), (2, [0, 1])]}), "z3"),
    ("not_equal", mr(), mr({"lane": [(8, [1, 0]), (4, [0, 2])]}), "z3"),
    ("different_tensors", mr(), mr({"warp": [(2, [0, 0])]}), "z3"),
    ("not_equal", SW, ROT, "z3"),
    ("equal_up_to_register_order", F2A, F2B, "auto"),  # decided by F2, queries still written
    ("equal", F2A, Layout.from_table(F2A.in_dims, F2A.out_dims, F2A.table()), "auto"),
]


@pytest.mark.parametrize("verdict,a,b,method", CASES, ids=[f"{i}-{c[0]}" for i, c in enumerate(CASES)])
def test_exported_queries_replay_with_the_same_answers(tmp_path, verdict, a, b, method):
    path = tmp_path / "q.smt2"
    res = compare(a, b, method=method, smt2=str(path))
    assert res.verdict == verdict
    text = path.read_text()
    expected = expected_answers(str(path))
    assert expected and all(x in ("sat", "unsat") for x in expected)
    assert text.count("(check-sat)") == len(expected) == text.count("(push 1)") == text.count("(pop 1)")
    assert "declare-fun" in text
    answers, how = replay(str(path))
    assert answers == expected, how
    # the first query is always the pointwise one: unsat exactly when the maps agree everywhere
    assert expected[0] == ("unsat" if verdict == "equal" else "sat")
    if verdict == "equal_up_to_register_order":
        # both per-thread set queries refuted
        labels = re.findall(r"; query \d+: (thread_set [AB]<=[AB])[^;]*; z3 answered: (\w+)", text)
        assert [ans for _, ans in labels] == ["unsat", "unsat"]


@pytest.mark.parametrize("verdict,a,b,method", CASES[:4], ids=[c[0] for c in CASES[:4]])
def test_replay_through_the_python_parser_too(tmp_path, verdict, a, b, method):
    path = tmp_path / "q.smt2"
    compare(a, b, method=method, smt2=str(path))
    answers, how = replay(str(path), use_binary=False)
    assert "parse_smt2_string" in how
    assert answers == expected_answers(str(path))


def test_the_wheel_ships_a_z3_binary():
    exe = z3_binary()
    if exe is None:
        pytest.skip("no z3 binary next to this Python or on PATH; replay falls back to the Python parser")
    import subprocess
    out = subprocess.run([exe, "-version"], capture_output=True, text=True, timeout=30)
    assert "Z3" in out.stdout


def test_a_tampered_query_changes_the_answer(tmp_path):
    """The replay is not vacuous: the sat pointwise query of a differing pair becomes unsat when
    the differing location is ruled out, and stays sat when something irrelevant is added."""
    path = tmp_path / "q.smt2"
    res = compare(mr(), mr({"lane": [(8, [1, 0]), (4, [0, 2])]}), method="z3", smt2=str(path))
    assert res.verdict == "not_equal"
    body = path.read_text().split("(push 1)")[1].split("(pop 1)")[0]
    assert expected_answers(str(path))[0] == "sat"
    # the witness location must satisfy the pointwise query; forbid every location instead
    blocked = body.replace("(check-sat)", "(assert (bvult lane (_ bv0 %d)))\n(check-sat)" % _width(body))
    harmless = body.replace("(check-sat)", "(assert (bvult lane (_ bv32 %d)))\n(check-sat)" % _width(body))
    for text, want in ((blocked, ["unsat"]), (harmless, ["sat"])):
        f = tmp_path / "t.smt2"
        f.write_text("(push 1)\n" + text + "(pop 1)\n")
        assert replay(str(f))[0] == want


def _width(body):
    return int(re.search(r"declare-fun lane \(\) \(_ BitVec (\d+)\)", body).group(1))


def test_memory_layout_query_mentions_offset(tmp_path):
    path = tmp_path / "q.smt2"
    compare(SW, ROT, method="z3", smt2=str(path))
    assert re.search(r"declare-fun offset \(\) \(_ BitVec \d+\)", path.read_text())


def test_the_file_layout(tmp_path):
    """The exported file: a three-line header naming the expected answers, then the queries
    numbered from 1, each with its label and answer, between ``(push 1)`` and ``(pop 1)``, without
    z3's ``set-info`` or benchmark lines."""
    path = tmp_path / "q.smt2"
    compare(*CASES[1][1:3], method="z3", smt2=str(path))
    lines = path.read_text().split("\n")
    assert lines[0] == "; layoutverify comparison queries (SMT-LIB2). Each query asks for a counterexample:"
    assert lines[1] == "; unsat proves the property named in its comment. Replay: z3 FILE"
    expected = expected_answers(str(path))
    assert lines[2] == f"; {len(expected)} queries; expected answers, in order: " + " ".join(expected)
    assert path.read_text().endswith("(pop 1)\n") and not path.read_text().endswith("\n\n")
    heads = [(i, l) for i, l in enumerate(lines) if l.startswith("; query ")]
    assert [int(re.match(r"; query (\d+): ", l).group(1)) for _, l in heads] == list(range(1, len(expected) + 1))
    for (i, l), answer in zip(heads, expected):
        assert l.endswith(f"; z3 answered: {answer}") and lines[i - 1] == "" and lines[i + 1] == "(push 1)"
    assert "(set-info" not in path.read_text() and "; benchmark" not in path.read_text()


def test_an_unwritable_export_names_the_smt2_file(tmp_path):
    from layoutverify.core.errors import LayoutError
    with pytest.raises(LayoutError, match=r"SMT-LIB2 file"):
        compare(*CASES[3][1:3], method="z3", smt2=str(tmp_path / "no" / "such" / "dir" / "q.smt2"))
