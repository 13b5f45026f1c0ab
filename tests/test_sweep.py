"""``layoutverify sweep SPEC.toml`` on the local cores: the numbering of points, verdicts checked
against Triton's own layouts, analysis, results directories (resuming exactly, refusing another
spec's results), a worker that dies, exit codes, the coordinator's share of the CPU time."""
from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

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


def _run(*args, env=None, timeout=600) -> subprocess.CompletedProcess:
    e = dict(os.environ, PYTHONWARNINGS="ignore")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "layoutverify", "sweep", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=e)


def _text(out: Path) -> str:
    """Every record of a results directory, in shard order (what ``cat OUT/shards/*.jsonl`` prints)."""
    return "".join(p.read_text() for p in sorted((out / "shards").glob("*.jsonl")))


def _records(out: Path) -> dict:
    recs = {}
    for i, line in enumerate(_text(out).splitlines()):
        r = json.loads(line)
        assert r["i"] == i, "records out of index order"
        assert r["id"] not in recs, "a point recorded twice"
        recs[r["id"]] = r
    return recs


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def _spec(tmp_path, task="prove", text=SPEC) -> Path:
    p = tmp_path / f"{task}.toml"
    p.write_text(text.format(task=task))
    return p


# -- the numbering ------------------------------------------------------------------------------
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


def test_ranges_number_the_points_of_the_spec(tmp_path):
    """Any range ``[lo, hi)`` of the space gives exactly its points, in order, with the ids and
    pairs the groups list (the numbering workers use to enumerate their own shards); a template
    space numbers its combinations as ``itertools.product`` of its axes does, and ``limit`` cuts
    the Triton space across groups."""
    from layoutverify.apps.sweeps.space import Space
    from layoutverify.apps.sweeps.spec import parse_spec_text
    text = SPEC.format(task="prove").replace("num_warps = [4]", "num_warps = [4, 8]\nlimit = 5000") + """
[[template]]
a = "cute:($m,$n):($n,1)"
b = "cute:($m,$n):(1,$m)"
[template.vars]
m = ["2", "4", "8"]
n = ["2", "4"]
zip = [["p", "q"]]
p = ["x", "y"]
q = ["1", "2"]
"""
    spec = parse_spec_text(text)
    space = Space(spec)
    expected = []          # (key, a spec, b spec) of every point, from the groups in order
    for g in space.groups():
        expected += [(g.key, g.layouts[a], g.layouts[b], g.point_id(a, b)) for a, b in g.pairs]
    assert space.points == len(expected) == 5000 + 3 * 2 * 2
    triton_groups = [g for g in space.groups() if g.key.startswith("triton")]
    assert sum(g.count for g in triton_groups) == 5000 and triton_groups[-1].count < len(triton_groups[-1].a) * \
        len(triton_groups[-1].b)
    # the template's combinations, in itertools.product order of (p, q) tied, m, n
    combos = [dict(p=p, q=q, m=m, n=n) for (p, q), m, n in itertools.product([("x", "1"), ("y", "2")],
                                                                           ["2", "4", "8"], ["2", "4"])]
    assert [e[1] for e in expected[5000:]] == [f"cute:({c['m']},{c['n']}):({c['n']},1)" for c in combos]
    rnd = random.Random(5)
    cuts = sorted({0, space.points, *(rnd.randrange(space.points) for _ in range(12))})
    for lo, hi in itertools.pairwise(cuts):
        got = []
        for g, k0, k1, i0 in space.slices(lo, hi):
            assert i0 == lo + len(got)
            got += [(g.key, g.layouts[a], g.layouts[b], g.point_id(a, b)) for a, b in map(g.pair, range(k0, k1))]
        assert got == expected[lo:hi]


def test_point_ids_hash_the_task_group_and_specs(tmp_path):
    """A record's ``id`` is the hash the docs define (task, group key, the two specs), so that
    results of reordered or extended specs line up."""
    import hashlib
    out = tmp_path / "r"
    assert _cli("sweep", _spec(tmp_path), "-o", out, "-j", "1") == 0
    from layoutverify.apps.sweeps.spec import load_spec
    groups = {g.meta["shape"][0]: g for g in load_spec(str(_spec(tmp_path))).groups()}
    for r in random.Random(1).sample(list(_records(out).values()), 50):
        g = groups[r["shape"][0]]
        want = hashlib.blake2b(f"prove|{g.key}|{g.layouts[r['a']]}|{g.layouts[r['b']]}".encode(),
                               digest_size=8).hexdigest()
        assert r["id"] == want


# -- verdicts and analyses -----------------------------------------------------------------------
def test_local_sweep_verdicts_agree_with_triton(tmp_path):
    """Every point is proved; a random sample of pairs is checked against the installed Triton's
    own layouts (``to_linear_layout`` of both encodings, in a subprocess): ``equal`` exactly when
    Triton's two layouts are the same map."""
    pytest.importorskip("triton")
    spec = _spec(tmp_path)
    out = tmp_path / "r"
    assert _cli("sweep", spec, "-o", out, "-j", "2", "--chunk", "64") == 0
    recs = _records(out)
    from layoutverify.apps.sweeps.spec import load_spec
    groups = list(load_spec(str(spec)).groups())
    assert len(recs) == sum(len(g.pairs) for g in groups)
    summary = _summary(out)
    assert summary["kind"] == "sweep" and summary["points"] == len(recs) and summary["errors"] == 0
    assert summary["complete"] and summary["shards"] == -(-len(recs) // 64)
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
    out = tmp_path / "a"
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
    assert sum(_summary(out)["mechanisms"].values()) == 150


def test_template_space_cute_atoms_x_tilers(tmp_path):
    """A template space (CuTe tiled MMAs x tilers against Triton's mma v2 layouts): every point's
    verdict is the one ``layoutverify prove`` gives for the same two specs; a tile that does not
    fit its shape is an error record, the others are answered (exit 0)."""
    spec = ROOT / "examples" / "sweeps" / "cute_mma_vs_triton.toml"
    out = tmp_path / "cute"
    assert _cli("sweep", spec, "-o", out, "-j", "1") == 0
    recs = list(_records(out).values())
    assert len(recs) == 6 and sum("error" in r for r in recs) == 1
    for r in recs:
        p = subprocess.run([sys.executable, "-m", "layoutverify", "prove", r["a_spec"], r["b_spec"], "--shape-b",
                            r["vars"]["shape"], "--json"], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PYTHONWARNINGS="ignore"))
        if "error" in r:
            assert p.returncode == 2 and r["error"] in p.stdout, (r, p.stdout[-300:])
        else:
            assert json.loads(p.stdout)["verdict"] == r["verdict"], (r, p.stdout[-300:])


# -- deterministic output, resuming, results directories -----------------------------------------
def test_output_is_the_same_however_the_sweep_runs(tmp_path):
    """Inline, 2 processes, other shard sizes: byte-identical records (index order, no times)."""
    spec = _spec(tmp_path)
    texts = []
    for k, args in enumerate([("-j", "1"), ("-j", "2"), ("-j", "2", "--chunk", "97"), ("-j", "1", "--chunk", "5000")]):
        out = tmp_path / f"r{k}"
        assert _cli("sweep", spec, "-o", out, *args) == 0
        texts.append(_text(out))
    assert texts[0] and all(t == texts[0] for t in texts)


def test_resume_runs_exactly_the_shards_not_done(tmp_path):
    """Shards whose summary is missing (interrupted before it was written), whose records are a
    temporary file, or whose summary names another range are run again; the others are kept as
    they are (their files untouched) and counted; the result equals an uninterrupted run."""
    spec = _spec(tmp_path)
    full = tmp_path / "full"
    assert _cli("sweep", spec, "-o", full, "-j", "1", "--chunk", "100") == 0
    part = tmp_path / "part"
    assert _cli("sweep", spec, "-o", part, "-j", "1", "--chunk", "100") == 0
    shards = part / "shards"
    n = len(list(shards.glob("*.jsonl")))
    (shards / "000003.json").unlink()                                   # records written, summary not
    (shards / "000005.json").unlink()
    (shards / "000005.jsonl").rename(shards / ".000005.jsonl.123.tmp")  # killed while writing
    s7 = json.loads((shards / "000007.json").read_text())
    (shards / "000007.json").write_text(json.dumps(dict(s7, lo=0)))     # a summary of another range
    kept = (shards / "000004.jsonl").stat().st_mtime_ns
    assert _cli("sweep", spec, "-o", part, "-j", "2", "--chunk", "7") == 0   # (the first run's shard size wins)
    summary = _summary(part)
    assert summary["evaluated"] == 300 and summary["skipped_done"] == summary["points"] - 300
    assert summary["shard_points"] == 100 and len(list(shards.glob("*.jsonl"))) == n
    assert not list(shards.glob(".*.tmp"))
    assert (shards / "000004.jsonl").stat().st_mtime_ns == kept
    assert _text(part) == _text(full)


def test_resume_after_a_killed_run(tmp_path):
    """A sweep killed (SIGKILL) after some shards is resumed by running it again: the points done
    are skipped, and the records equal an uninterrupted run's."""
    spec = _spec(tmp_path)
    out = tmp_path / "k"
    e = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.Popen([sys.executable, "-m", "layoutverify", "sweep", str(spec), "-o", str(out), "-j", "1",
                             "--chunk", "64"], env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(list((out / "shards").glob("*.json"))) < 3 and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    done_before = len(list((out / "shards").glob("*.json")))
    assert done_before >= 3
    p = _run(spec, "-o", out, "-j", "2", "--json")
    assert p.returncode == 0, p.stderr[-2000:]
    s = json.loads(p.stdout)
    assert s["complete"] and s["skipped_done"] >= 3 * 64 and s["evaluated"] + s["skipped_done"] == s["points"]
    ref = tmp_path / "ref"
    assert _cli("sweep", spec, "-o", ref, "-j", "2", "--chunk", "64") == 0
    assert _text(out) == _text(ref)


def test_results_of_another_spec_are_refused_not_resumed(tmp_path, capsys):
    """A results directory written for another spec is refused (exit 2, one line naming it);
    ``--fresh`` replaces it; a directory that is not a sweep's, or a file, is refused even with
    ``--fresh``; shard files of another spec dropped into a directory are not counted."""
    spec = _spec(tmp_path)
    other = tmp_path / "other.toml"
    other.write_text(SPEC.replace("[[64, 64], [32, 32]]", "[[64, 64]]").format(task="prove"))
    out = tmp_path / "r"
    assert _cli("sweep", other, "-o", out, "-j", "1") == 0
    n_other = _summary(out)["points"]
    capsys.readouterr()
    assert _cli("sweep", spec, "-o", out, "-j", "1") == 2
    err = capsys.readouterr().err
    assert "results of another spec" in err and err.count("\n") == 1 and "Traceback" not in err
    assert _summary(out)["points"] == n_other                      # untouched
    assert _cli("sweep", spec, "-o", out, "-j", "1", "--fresh") == 0
    full = _summary(out)
    assert full["skipped_done"] == 0 and full["points"] > n_other

    # foreign shard files (another spec's, copied in) are not counted
    mixed = tmp_path / "mixed"
    assert _cli("sweep", spec, "-o", mixed, "-j", "1", "--chunk", "100") == 0
    o2 = tmp_path / "o2"
    assert _cli("sweep", other, "-o", o2, "-j", "1", "--chunk", "100") == 0
    for name in ("000001.json", "000001.jsonl"):
        (mixed / "shards" / name).write_bytes((o2 / "shards" / name).read_bytes())
    assert _cli("sweep", spec, "-o", mixed, "-j", "1", "--json") == 0
    s = _summary(mixed)
    assert s["evaluated"] == 100 and s["points"] == full["points"]
    assert _text(mixed) == _text(out)

    stranger = tmp_path / "stranger"
    stranger.mkdir()
    (stranger / "notes.txt").write_text("mine")
    capsys.readouterr()
    for args in (("-o", stranger), ("-o", stranger, "--fresh"), ("-o", tmp_path / "other.toml"), ("-o", "")):
        assert _cli("sweep", spec, "-j", "1", *args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
    assert (stranger / "notes.txt").read_text() == "mine" and (tmp_path / "other.toml").exists()


def test_a_second_sweep_on_the_same_directory_is_refused(tmp_path, capsys):
    from layoutverify.apps.sweeps.spec import load_spec
    from layoutverify.apps.sweeps.store import ResultsDir
    spec = load_spec(str(_spec(tmp_path)))
    rd = ResultsDir(tmp_path / "r")
    rd.open(spec, spec.count(), 100, fresh=False)
    try:
        assert _cli("sweep", _spec(tmp_path), "-o", tmp_path / "r", "-j", "1") == 2
        assert "another sweep is writing" in capsys.readouterr().err
    finally:
        rd.close()


def test_records_come_back_where_the_directory_is_not_shared(tmp_path, monkeypatch):
    """A worker that does not see the results directory (a Ray node without the shared path)
    returns its records compressed; written by the coordinator they are the shard it would have
    written."""
    from layoutverify.apps.sweeps.store import write_returned
    from layoutverify.apps.sweeps.spec import load_spec
    from layoutverify.apps.sweeps.work import UNSHARED_ENV, run_shard
    spec_path = _spec(tmp_path)
    ref = tmp_path / "ref"
    assert _cli("sweep", spec_path, "-o", ref, "-j", "1", "--chunk", "100") == 0
    spec = load_spec(str(spec_path))
    s = run_shard(spec, str(tmp_path / "nowhere"), 6, 2, 200, 300)
    assert "records_z" in s and not (tmp_path / "nowhere").exists()
    monkeypatch.setenv(UNSHARED_ENV, "1")
    s2 = run_shard(spec, str(ref), 6, 2, 200, 300)
    assert "records_z" in s2
    (ref / "shards" / "000002.jsonl").unlink()
    write_returned(str(ref), 6, s2)
    monkeypatch.delenv(UNSHARED_ENV)
    full = tmp_path / "full"
    assert _cli("sweep", spec_path, "-o", full, "-j", "1") == 0
    assert _text(ref) == _text(full)


def test_a_shard_is_written_only_when_its_summary_names_this_spec_and_range(tmp_path):
    """``written`` (how a retried Ray task skips what an earlier try wrote, and how resuming sees
    what is done): the summary of this spec's shard with its range, else None."""
    from layoutverify.apps.sweeps.spec import load_spec, parse_spec_text
    from layoutverify.apps.sweeps.store import written
    spec_path = _spec(tmp_path)
    out = tmp_path / "r"
    assert _cli("sweep", spec_path, "-o", out, "-j", "1", "--chunk", "100") == 0
    spec = load_spec(str(spec_path))
    other = parse_spec_text(SPEC.format(task="analyze"))
    assert written(spec, out, 6, 1, 100, 200)["points"] == 100
    assert written(spec, out, 6, 1, 100, 199) is None and written(other, out, 6, 1, 100, 200) is None
    (out / "shards" / "000001.jsonl").unlink()
    assert written(spec, out, 6, 1, 100, 200) is None


def test_a_dying_worker_is_replaced(tmp_path, monkeypatch):
    """A worker process that dies (the crash marker makes the first shard exit its process) takes
    the pool down; the lost shards run again and every point is answered once."""
    from layoutverify.apps.sweeps.work import CRASH_ENV
    marker = tmp_path / "crash-once"
    marker.write_text("")
    monkeypatch.setenv(CRASH_ENV, str(marker))
    out = tmp_path / "c"
    assert _cli("sweep", _spec(tmp_path), "-o", out, "-j", "2", "--chunk", "50") == 0
    assert not marker.exists()  # a worker did die
    monkeypatch.delenv(CRASH_ENV)
    ref = tmp_path / "ref"
    assert _cli("sweep", _spec(tmp_path), "-o", ref, "-j", "1") == 0
    assert _text(out) == _text(ref)


def test_regions_hand_out_every_shard_once_contiguously_then_steal_from_the_end():
    """Each slot takes its own contiguous region (in proportion to its weight) in order; a slot
    whose region is empty takes the last shard of the fullest region; shards given back go first."""
    from layoutverify.apps.sweeps.schedule import Regions
    todo = [(n, 10 * n, 10 * n + 10) for n in range(100)]
    r = Regions(todo, {"a": 1, "b": 3})
    assert [r.next("a")[0] for _ in range(3)] == [0, 1, 2] and r.next("b")[0] == 25
    r.give_back((1, 10, 20))
    assert r.next("b")[0] == 1                        # given back: first, to anyone
    got = {0, 1, 2, 25}
    a_seq = []
    while len(r):
        for slot in ("a", "a", "b"):                  # a is faster: it finishes its region and steals
            t = r.next(slot)
            if t is None:
                break
            assert t[0] not in got
            got.add(t[0])
            if slot == "a":
                a_seq.append(t[0])
    assert got == set(range(100)) and r.next("a") is None
    own = [n for n in a_seq if n < 25]
    stolen = [n for n in a_seq if n >= 25]
    assert own == list(range(3, 25)) and stolen and stolen == sorted(stolen, reverse=True)
    assert stolen[0] == 99


def test_the_locality_order_parses_each_layout_once(tmp_path, monkeypatch):
    """Shards in the locality order (groups that differ only in element type together, row by
    row) parse each layout of a share once, in one process, where the index order meets each
    shape's layouts again a group of shapes later; the records are the same in either order."""
    from layoutverify.apps.sweeps import work
    from layoutverify.apps.sweeps.schedule import locality_order
    from layoutverify.apps.sweeps.spec import load_spec
    text = SPEC.replace('shapes = [[64, 64], [32, 32]]', 'shapes = [[64, 64], [32, 32], [128, 64], [64, 128], '
                        '[128, 128], [32, 64]]').replace('element_types = ["f16"]', 'element_types = ["f16", "f32"]')
    spec = load_spec(str(_spec(tmp_path, text=text)))
    parsed = []
    real = work._parse
    monkeypatch.setattr(work, "_parse", lambda g, shape, name: parsed.append((g.share, name)) or real(g, shape, name))

    def run(order) -> tuple[list, str]:
        space = spec.space()          # a fresh space: no layout parsed yet
        # (36 points a shard: every group has a multiple of 36 points, so that no shard spans two
        # groups; one that does parses the layouts its second group uses where its first is in order)
        todo = [(n, lo, min(lo + 36, space.points)) for n, lo in enumerate(range(0, space.points, 36))]
        parsed.clear()
        lines = {}
        for n, lo, hi in (order(todo, space) if order else todo):
            lines[n] = "".join(work.evaluate(space, lo, hi, work.Counts("prove")))
        return list(parsed), "".join(lines[n] for n in sorted(lines))

    local, text_local = run(locality_order)
    by_index, text_index = run(None)
    groups = list(spec.groups())
    distinct = {(g.share, name) for g in groups for name in g.a + g.b}
    assert len({g.share for g in groups}) == 6 and len(groups) == 12 and all(g.count % 36 == 0 for g in groups)
    assert len(local) == len(set(local)) and set(local) == distinct
    assert len(by_index) > len(distinct)
    assert text_local == text_index


# -- exit codes, progress, the coordinator's share ------------------------------------------------
ALL_ERRORS = """
[[template]]
a = "cute:($n,$n):($n,1)"
b = "cute:(8,8):(8,1)"
shape = "4x4"
[template.vars]
n = ["8", "16"]
"""


def test_a_sweep_whose_every_point_is_an_error_exits_2(tmp_path):
    """Every point an error: the records and summary are written, exit 2 with one line on stderr
    naming the count and the first error; with some points answered the errors are counted and
    the exit is 0."""
    spec = tmp_path / "bad.toml"
    spec.write_text(ALL_ERRORS)
    p = _run(spec, "-o", tmp_path / "bad", "-j", "1")
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "every one of the 2 points is an error" in p.stderr and p.stderr.count("\n") == 1
    assert "1 errors" not in p.stdout and "2 errors" in p.stdout
    s = _summary(tmp_path / "bad")
    assert s["errors"] == s["points"] == 2 and s["first_error"]["i"] == 0
    p = _run(spec, "-o", tmp_path / "bad2", "-j", "1", "--json")
    assert p.returncode == 2 and json.loads(p.stdout)["errors"] == 2
    mixed = tmp_path / "mixed.toml"
    mixed.write_text(ALL_ERRORS.replace('shape = "4x4"', 'shape = "8x8"'))
    p = _run(mixed, "-o", tmp_path / "mixed", "-j", "1")
    assert p.returncode == 0 and "1 errors" in p.stdout, (p.stdout, p.stderr)


def test_a_space_without_points_is_bad_input(tmp_path, capsys):
    spec = tmp_path / "empty.toml"
    spec.write_text('[[triton]]\na = ["nvidia_mma"]\nb = ["blocked"]\nshapes = [[64]]\n')
    assert _cli("sweep", spec, "-o", tmp_path / "e") == 2
    assert "no points" in capsys.readouterr().err


@pytest.mark.parametrize("address", ["127.0.0.1:1", "bogus", "127.0.0.1:99999"])
def test_a_ray_address_nothing_answers_is_refused_at_once(tmp_path, address):
    """(Ray itself retries for minutes.) One line, exit 2, and no results directory made."""
    t0 = time.monotonic()
    p = _run(_spec(tmp_path), "-o", tmp_path / "r", "--ray", address, timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert time.monotonic() - t0 < 60 and not (tmp_path / "r").exists()


def test_progress_is_reported(tmp_path):
    p = _run(_spec(tmp_path), "-o", tmp_path / "p", "-j", "1", "--chunk", "500", "--progress")
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    total = _summary(tmp_path / "p")["points"]
    assert lines and lines[-1].startswith(f"{total}/{total} points (100.0%)")


def test_the_coordinator_spends_under_a_tenth_of_the_workers_cpu_time(tmp_path):
    """The bound of issue 26 on this machine: workers enumerate, evaluate and write their own
    points; the coordinator (CPU time of its process, threads included) hands out ranges and
    merges summaries. A sweep of 60,000 points on 2 workers."""
    text = SPEC.replace('shapes = [[64, 64], [32, 32]]', 'shapes = [[64, 64], [32, 32], [128, 64], [64, 128]]') \
        .replace("num_warps = [4]", "num_warps = [4, 8]").replace('[[1, 4], [2, 2]]', '[[1, 4], [2, 2], [1, 1], [4, 1]]')
    text = text.replace('versions = ["3.9"]', 'versions = ["3.8", "3.9"]\nlimit = 60000')
    p = _run(_spec(tmp_path, text=text), "-o", tmp_path / "c", "-j", "2", "--json")
    assert p.returncode == 0, p.stderr[-2000:]
    s = json.loads(p.stdout)
    assert s["points"] == 60000 and s["worker_processes"] == 2
    assert s["coordinator_cpu_share"] <= 0.10, s


@pytest.mark.parametrize("text, word", [
    ("task = 'nope'\n[[triton]]\na=['blocked']\nb=['blocked']\nshapes=[[8,8]]\n", "task"),
    ("[[triton]]\na=['blocked']\nb=['mystery']\nshapes=[[8,8]]\n", "mystery"),
    ("[[triton]]\na=['blocked']\nb=['blocked']\nshapes=[[8,8]]\nnum_warps=[3]\n", "num_warps"),
    ("[[template]]\na='cute:$x'\nb='cute:(4):(1)'\n", "placeholders"),
    ("[[triton]]\na=['blocked']\nb=['blocked']\nshapes=[[1048576, 1048576]]\n", "2^24"),
    ("[[triton]]\na=['blocked']\nb=['blocked']\nshapes=[[true, 8]]\n", "bad shape"),
    ("[[triton]]\na=['blocked']\nb=['blocked']\nshapes=[[8,8]]\nshape=[8,8]\n", "'shape'"),
    ("[[template]]\na='cute:(4):(1)'\nb='cute:(4):(1)'\nlimit='5'\n", "limit"),
    ("[[template]]\na='cute:(4):(1)'\nb='cute:(4):(1)'\nshapes='4'\n", "'shapes'"),
    ("task = \n", "TOML"),
    ("", "no [[triton]]"),
])
def test_bad_specs(tmp_path, capsys, text, word):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    assert _cli("sweep", p, "-o", tmp_path / "x") == 2
    err = capsys.readouterr().err
    assert word in err and "Traceback" not in err and err.count("\n") == 1


# -- the shipped examples ------------------------------------------------------------------------
EXAMPLES = sorted((ROOT / "examples" / "sweeps").glob("*.toml"))


def test_examples_are_shipped():
    assert {p.name for p in EXAMPLES} >= {"triton_blocked_vs_mma.toml", "triton_conversions.toml",
                                          "cute_mma_vs_triton.toml"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_spec_runs(tmp_path, path):
    """Each example runs to the end with its points answered (errors only where the example says
    it has one on purpose)."""
    out = tmp_path / "r"
    p = _run(path, "-o", out, "-j", "2", "--json")
    assert p.returncode == 0, p.stderr[-2000:]
    s = json.loads(p.stdout)
    assert s["complete"] and s["points"] == int(_run(path, "--count").stdout)
    assert s["errors"] == (1 if "cute" in path.name else 0), s["error_kinds"]
    counts = s.get("verdicts") or s.get("mechanisms")
    assert sum(counts.values()) == s["points"] - s["errors"]
