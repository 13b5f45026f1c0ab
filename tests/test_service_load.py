"""The service under load and over time (issue 26, items 1, 3 and 5; horizontal service), against
real ``layoutverify serve`` processes:

* memory: 2,000 spellings of one 64x64 ``show`` grow the server by less than 150 MB (resident
  memory of its process, from ``/proc``), and a worker left large by a job is replaced;
* fairness: a 300-claim check job beside 8 clients of single proofs leaves their p99 under 1 s
  and gives them no 503;
* an interrupted check job (``kill -9`` of the server mid-run) is resumed by the next server
  and ends with every claim's outcome;
* ``/v1/check`` gives the CLI's ``check --json`` document on every corpus of ``corpora/``;
* ``--processes 2`` on one port over PostgreSQL: both processes answer, from one store, each on
  its own listening socket; one killed is replaced.
"""
from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import tempfile
import threading
import time
from pathlib import Path

import pytest

from service_harness import Postgres, Server, blocked, blocked_pairs, http, jhttp, metric, rss_bytes

ROOT = Path(__file__).resolve().parents[1]


def spellings(n: int) -> list[str]:
    """``n`` spellings of one Triton blocked layout: the same attribute with other whitespace."""
    gaps = [" ", "  ", "\t", " \n "]
    out = []
    for combo in itertools.product(range(len(gaps)), repeat=6):
        g = [gaps[k] for k in combo]
        out.append(f"triton:#ttg.blocked<{{sizePerThread{g[0]}={g[1]}[1, 4],{g[2]}threadsPerWarp = [4, 8],"
                   f"{g[3]}warpsPerCTA = [4,{g[4]}1], order{g[5]}= [1, 0]}}>")
        if len(out) == n:
            return out
    raise ValueError(n)


def test_spellings_of_one_show_stay_small():
    d = tempfile.mkdtemp(prefix="lv-memory-")
    s = Server(os.path.join(d, "r.sqlite3"), workers=2).start()
    try:
        specs = spellings(2000)
        assert len(set(specs)) == 2000
        status, first = jhttp("POST", s.url + "/v1/show", {"spec": specs[0], "shape": "64x64"})
        assert status == 200 and len(json.dumps(first)) > 40_000   # a 64x64 grid as data
        for spec in specs[1:20]:   # warm up: allocator arenas, connection pools, first pages of the store
            assert jhttp("POST", s.url + "/v1/show", {"spec": spec, "shape": [64, 64]})[0] == 200
        before = rss_bytes(s.proc.pid)
        errors, ids = [], set()
        lock = threading.Lock()

        def client(k):
            for i, spec in enumerate(specs[20 + k::4]):
                shape = "64x64" if i % 2 else [64, 64]
                status, got = jhttp("POST", s.url + "/v1/show", {"spec": spec, "shape": shape}, timeout=120)
                with lock:
                    if status != 200:
                        errors.append((status, got))
                    else:
                        ids.add(got["result_id"])
        threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        after = rss_bytes(s.proc.pid)
        assert not errors, errors[:3]
        assert ids == {first["result_id"]}      # one question, one stored result
        grown = (after - before) / 2 ** 20
        print(f"server resident memory: {before / 2 ** 20:.0f} MB -> {after / 2 ** 20:.0f} MB (+{grown:.1f} MB) "
              f"after 1,980 spellings; answer cache {metric(s, 'layoutverify_answer_cache_bytes') / 1024:.0f} KiB")
        assert grown < 150
    finally:
        s.stop()


def test_worker_left_large_is_replaced():
    d = tempfile.mkdtemp(prefix="lv-recycle-")
    s = Server(os.path.join(d, "r.sqlite3"), workers=1, faults=True, args=["--worker-recycle", "300"]).start()
    try:
        pids = jhttp("GET", s.url + "/healthz")[1]["worker_pids"]
        status, got = jhttp("POST", s.url + "/v1/_fault/bloat?mb=64&seconds=60", raw=b"")
        assert status == 200 and jhttp("GET", s.url + "/healthz")[1]["worker_pids"] == pids  # under the limit
        status, got = jhttp("POST", s.url + "/v1/_fault/bloat?mb=400&seconds=60", raw=b"")
        assert status == 200 and got["pid"] == pids[0]
        new = jhttp("GET", s.url + "/healthz")[1]["worker_pids"]
        assert new != pids and rss_bytes(new[0]) < 300 << 20
        assert metric(s, "layoutverify_workers_recycled_total") == 1
        status, got = jhttp("POST", s.url + "/v1/prove", {**blocked_pairs(1)[0]})
        assert status == 200   # the new worker proves
    finally:
        s.stop()


def test_check_job_beside_eight_clients():
    """A 300-claim check job and 8 clients proving one new pair after another: the clients' p99
    stays under 1 s, none gets a 503, and the job finishes with all 300 outcomes. Each claim
    holds its worker 50 ms longer (the test-only claim delay) so that the job runs all along."""
    d = tempfile.mkdtemp(prefix="lv-fair-")
    s = Server(os.path.join(d, "r.sqlite3"), workers=2, faults=True,
               env={"LAYOUTVERIFY_SERVICE_CLAIM_DELAY_S": "0.05"}).start()
    try:
        claims = []
        for i, p in enumerate(blocked_pairs(300, start=0)):
            claims += ["[[claim]]", f'name = "c{i}"', f'a = "{p["a"]}"', f'b = "{p["b"]}"', f'shape = "{p["shape"]}"',
                       'expect = "not_equal"']
        status, job = jhttp("POST", s.url + "/v1/check", {"corpus": "\n".join(claims)})
        assert status in (200, 202)
        latencies, statuses = [], []
        lock = threading.Lock()
        stop = threading.Event()

        def client(k):
            pairs = blocked_pairs(40, start=1000 + 40 * k)
            for p in pairs:
                if stop.is_set():
                    return
                t0 = time.perf_counter()
                status, _ = jhttp("POST", s.url + "/v1/prove", p, headers={"X-Forwarded-For": f"10.9.0.{k}"},
                                  timeout=120)
                with lock:
                    latencies.append(time.perf_counter() - t0)
                    statuses.append(status)
        threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        running_meanwhile = jhttp("GET", s.url + f"/v1/jobs/{job['job']}")[1]
        deadline = time.monotonic() + 600
        while job["status"] != "done" and time.monotonic() < deadline:
            time.sleep(0.5)
            job = jhttp("GET", s.url + f"/v1/jobs/{job['job']}")[1]
        latencies.sort()
        p99 = latencies[int(0.99 * (len(latencies) - 1))]
        print(f"8 clients x 40 proofs beside a 300-claim job: p50 {latencies[len(latencies) // 2] * 1000:.0f} ms, "
              f"p99 {p99 * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms; job {running_meanwhile['done']}/300 "
              f"done when the clients were")
        assert running_meanwhile["done"] < 300   # the job ran beside the clients all along
        assert statuses.count(503) == 0 and set(statuses) == {200}
        assert p99 < 1.0
        assert job["status"] == "done" and job["done"] == 300 and job["result"]["summary"]["total"] == 300
        assert metric(s, "layoutverify_busy_rejections_total") == 0
    finally:
        s.stop()


def test_interrupted_check_job_is_resumed():
    d = tempfile.mkdtemp(prefix="lv-resume-")
    env = {"LAYOUTVERIFY_SERVICE_CLAIM_DELAY_S": "0.4"}
    s = Server(os.path.join(d, "r.sqlite3"), workers=2, faults=True, env=env).start()
    try:
        claims = []
        for i, p in enumerate(blocked_pairs(30, start=500)):
            claims += ["[[claim]]", f'name = "c{i}"', f'a = "{p["a"]}"', f'b = "{p["b"]}"', f'shape = "{p["shape"]}"',
                       'expect = "not_equal"']
        status, job = jhttp("POST", s.url + "/v1/check", {"corpus": "\n".join(claims), "name": "resume"})
        jid = job["job"]
        deadline = time.monotonic() + 120
        while job["done"] < 5 and time.monotonic() < deadline:
            time.sleep(0.2)
            job = jhttp("GET", s.url + f"/v1/jobs/{jid}")[1]
        assert 5 <= job["done"] < 30, job
        done_before = job["done"]
        s.kill()
        s.start()
        seen = []
        deadline = time.monotonic() + 180
        while job["status"] != "done" and time.monotonic() < deadline:
            time.sleep(0.5)
            job = jhttp("GET", s.url + f"/v1/jobs/{jid}")[1]
            seen.append(job["done"])
        assert job["status"] == "done" and job["done"] == 30, job
        assert min(seen) >= done_before and seen == sorted(seen)     # progress kept across the kill
        doc = job["result"]
        assert [c["id"] for c in doc["claims"]] == [f"resume::c{i}" for i in range(30)]
        assert doc["summary"]["total"] == 30 and doc["summary"]["errors"] == 0
        # the outcomes are the CLI's for the same claims
        cli = _cli_check(Path(d) / "resume.toml", "\n".join(claims))
        assert [c["status"] for c in doc["claims"]] == [c["status"] for c in cli["claims"]]
    finally:
        s.stop()


def _cli_check(path: Path, text: str | None = None) -> dict:
    from layoutverify.apps.cli import main
    if text is not None:
        path.write_text(text)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(["check", str(path), "--json", "-", "-j", "1"])
    return json.loads(out.getvalue())


CORPORA = sorted(p for p in (ROOT / "corpora").rglob("*.toml"))
_COMPARED = ("id", "status", "got", "method", "message", "witness", "fingerprints", "warnings")


@pytest.fixture(scope="module")
def check_server():
    d = tempfile.mkdtemp(prefix="lv-check-")
    s = Server(os.path.join(d, "r.sqlite3"), workers=2).start()
    yield s
    s.stop()


@pytest.mark.parametrize("path", CORPORA, ids=[str(p.relative_to(ROOT)) for p in CORPORA])
def test_check_agrees_with_the_cli(check_server, path):
    s = check_server
    cli = _cli_check(path)
    status, _, raw = http("POST", s.url + f"/v1/check?name={path.stem}", raw=path.read_bytes(),
                          headers={"Content-Type": "application/toml"}, timeout=300)
    got = json.loads(raw)
    if cli["kind"] == "error":   # a corpus of another format (e.g. pairs for `measure`), or no claims
        assert status == 400 and got["kind"] == "error"
        assert got["error"]["message"] == cli["error"]["message"].replace(str(path), f"<{path.stem}.toml>")
        return
    deadline = time.monotonic() + 600
    while got["status"] != "done" and time.monotonic() < deadline:
        time.sleep(0.5)
        got = jhttp("GET", s.url + f"/v1/jobs/{got['job']}")[1]
    doc = got["result"]
    assert (doc["schema"], doc["kind"]) == (cli["schema"], cli["kind"]) == ("layoutverify/1", "check")
    assert doc["summary"] == cli["summary"] and doc["passed"] == cli["passed"] == got["passed"]
    assert len(doc["claims"]) == len(cli["claims"])
    for mine, theirs in zip(doc["claims"], cli["claims"]):
        for key in _COMPARED:
            assert mine[key] == theirs[key], (mine["id"], key)
        assert {k: v for k, v in mine["claim"].items() if k != "source"} == \
            {k: v for k, v in theirs["claim"].items() if k != "source"}


def _listening_sockets(port: int) -> int:
    """Listening TCP sockets on ``port`` (``/proc/net/tcp``, IPv4)."""
    n = 0
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                n += 1
    return n


def _service_pids(s: Server, want: int = 2, within_s: float = 60) -> set:
    """The pids that answer ``/healthz`` on new connections, asked from 8 threads at once (one
    process idle in ``accept`` can win every sequential connection on a shared socket), until
    ``want`` distinct pids answered or ``within_s`` passed (a process may still be starting)."""
    from concurrent.futures import ThreadPoolExecutor
    from service_harness import http as raw

    def ask(_):
        status, _, body = raw("GET", s.url + "/healthz", timeout=30)
        return json.loads(body)["pid"] if status == 200 else None

    pids = set()
    deadline = time.monotonic() + within_s
    with ThreadPoolExecutor(8) as pool:
        while True:
            pids |= set(pool.map(ask, range(64))) - {None}
            if len(pids) >= want or time.monotonic() > deadline:
                return pids
            time.sleep(0.2)


@pytest.mark.parametrize("listen", ["own", "shared"])
def test_processes_share_one_port_and_store(listen):
    """``--processes 2``: both processes answer, from one store. They share one listening socket
    (the default), or, with ``LAYOUTVERIFY_SERVE_OWN_SOCKETS=1``, each has its own
    (``SO_REUSEPORT``: the kernel spreads connections over them)."""
    pg = Postgres().start()
    env = {"LAYOUTVERIFY_SERVE_OWN_SOCKETS": "1"} if listen == "own" else {}
    s = Server(pg.url, workers=1, args=["--processes", "2"], env=env)
    try:
        s.start()
        answered_by, results = set(), []
        lock = threading.Lock()

        def client(k):
            for p in blocked_pairs(10, start=2000 + 10 * k):
                status, got = jhttp("POST", s.url + "/v1/prove", p)
                status2, health = jhttp("GET", s.url + "/healthz")
                with lock:
                    results.append((status, got.get("id")))
                    answered_by.add(health["pid"])
        threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(st == 200 for st, _ in results)
        assert len(answered_by) == 2, answered_by
        for _, rid in results:   # whichever process answers, every result is there
            assert jhttp("GET", s.url + f"/v1/results/{rid}")[0] == 200
        assert _listening_sockets(s.port) == (2 if listen == "own" else 1)
    finally:
        s.stop()
        pg.stop()


def test_a_dead_service_process_is_replaced():
    """``kill -9`` of one of ``--processes 2``: the other goes on answering, and the supervisor
    starts another process on the shared listening socket; the service stops cleanly."""
    import signal
    pg = Postgres().start()
    s = Server(pg.url, workers=1, args=["--processes", "2"])
    try:
        s.start()
        before = _service_pids(s)
        assert len(before) == 2, before
        victim = min(before)
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 120
        after = set()
        while time.monotonic() < deadline:
            after = _service_pids(s, within_s=5)
            if len(after) == 2 and victim not in after:
                break
            time.sleep(0.5)
        assert len(after) == 2 and victim not in after and (before - {victim}) <= after, (before, after)
        assert _listening_sockets(s.port) == 1
    finally:
        s.stop()
        pg.stop()
    assert s.proc.returncode == 0, s.log_text()


def test_check_job_budget():
    """A job that spends its worker-time budget (``--check-budget``) ends: the claims left are
    ``error`` outcomes that say so, and the job is done."""
    d = tempfile.mkdtemp(prefix="lv-budget-")
    s = Server(os.path.join(d, "r.sqlite3"), workers=2, faults=True, args=["--check-budget", "1"],
               env={"LAYOUTVERIFY_SERVICE_CLAIM_DELAY_S": "0.4"}).start()
    try:
        claims = []
        for i, p in enumerate(blocked_pairs(10, start=700)):
            claims += ["[[claim]]", f'name = "c{i}"', f'a = "{p["a"]}"', f'b = "{p["b"]}"', f'shape = "{p["shape"]}"',
                       'expect = "not_equal"']
        status, job = jhttp("POST", s.url + "/v1/check", {"corpus": "\n".join(claims)})
        deadline = time.monotonic() + 120
        while job["status"] != "done" and time.monotonic() < deadline:
            time.sleep(0.3)
            job = jhttp("GET", s.url + f"/v1/jobs/{job['job']}")[1]
        assert job["status"] == "done" and job["passed"] is False
        statuses = [c["status"] for c in job["result"]["claims"]]
        checked = statuses.count("holds")
        assert 2 <= checked <= 4, statuses           # 1 s of budget at about 0.4 s a claim
        assert statuses == ["holds"] * checked + ["error"] * (10 - checked)
        assert all("time budget of 1 s" in c["message"] for c in job["result"]["claims"][checked:])
    finally:
        s.stop()


def test_clients_take_turns():
    """One client with six long jobs waiting does not hold up another client's tiny prove: the
    pool serves clients in turn (one worker here; each long job holds it 1.5 s)."""
    d = tempfile.mkdtemp(prefix="lv-turns-")
    s = Server(os.path.join(d, "r.sqlite3"), workers=1, faults=True).start()
    try:
        heavy = [threading.Thread(target=http, args=("POST", s.url + "/v1/_fault/hang?seconds=1.5"),
                                  kwargs={"raw": b"", "headers": {"X-Forwarded-For": "10.0.0.1"}, "timeout": 120})
                 for _ in range(6)]
        for t in heavy:
            t.start()
        time.sleep(1.0)   # all six are in: one runs, five wait
        t0 = time.perf_counter()
        status, got = jhttp("POST", s.url + "/v1/prove", blocked_pairs(1, start=900)[0],
                            headers={"X-Forwarded-For": "10.0.0.2"}, timeout=120)
        waited = time.perf_counter() - t0
        for t in heavy:
            t.join()
        assert status == 200
        print(f"a tiny prove behind another client's 6 jobs of 1.5 s waited {waited:.2f} s")
        assert waited < 4.0      # first come, first served it would wait behind all five: 7.5 s
    finally:
        s.stop()
