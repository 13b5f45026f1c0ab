"""The service's HTTP API against a real ``layoutverify serve`` process, on SQLite and on a real
PostgreSQL server (both started here).

Oracles: the CLI (``layoutverify prove/analyze/show --json``: the service must give the same
verdicts, witnesses and messages), the installed Triton (``to_linear_layout``, through
``tests/triton_oracle.py``) to re-check every ``not_equal`` witness, z3 replaying the stored
SMT-LIB2, and the store itself after ``kill -9``.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import threading
import time
from http.client import HTTPException

import pytest

from service_harness import Postgres, Server, blocked, blocked_pairs, http, jhttp

BLOCKED_A = blocked((1, 4), (4, 8), (4, 1))
BLOCKED_B = blocked((1, 8), (4, 8), (4, 1))
MMA = "triton:#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [1, 1], instrShape = [16, 8]}>"


def cli_json(*argv) -> tuple[int, dict]:
    """Run the CLI in this process with ``--json``; (exit code, document)."""
    from layoutverify.apps.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv) + ["--json"])
    return code, json.loads(out.getvalue())


def cli_error(*argv) -> str:
    """The CLI's one-line error message for bad input (exit 2)."""
    from layoutverify.apps.cli import main
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(argv))
    assert code == 2
    line = err.getvalue().strip()
    assert line.startswith("layoutverify: error: "), line
    return line[len("layoutverify: error: "):]


@pytest.fixture(scope="module")
def postgres():
    pg = Postgres().start()
    yield pg
    pg.stop()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def backend(request, postgres):
    """(backend name, store URL) with a fresh store for this module."""
    if request.param == "postgresql":
        return "postgresql", postgres.url
    d = tempfile.mkdtemp(prefix="lv-sqlite-")
    return "sqlite", os.path.join(d, "results.sqlite3")


@pytest.fixture(scope="module")
def server(backend):
    s = Server(backend[1], workers=2).start()
    yield s
    s.stop()


def triton_recheck(witness: dict, a_spec: str, b_spec: str, shape: tuple) -> None:
    """The witness location holds witness['a'] in Triton's own layout A and witness['b'] in B."""
    from triton_oracle import have_triton, oracle
    from layoutverify.core.result import Pair
    assert have_triton(), "the installed Triton must expose to_linear_layout (the oracle of these tests)"
    ta, tb = oracle([(a_spec.split(":", 1)[1], shape), (b_spec.split(":", 1)[1], shape)])
    pair = Pair(ta, tb)
    loc = pair.location(**witness["hardware"])
    assert pair.evaluate("a", loc) == witness["a"]
    assert pair.evaluate("b", loc) == witness["b"]
    assert witness["a"] != witness["b"]


def test_prove_matches_cli_and_triton(server):
    body = {"a": BLOCKED_A, "b": BLOCKED_B, "shape": "32x32"}
    status, got = jhttp("POST", server.url + "/v1/prove", body)
    assert status == 200, got
    code, cli = cli_json("prove", BLOCKED_A, BLOCKED_B, "--shape", "32x32")
    assert (got["schema"], got["kind"]) == (cli["schema"], cli["kind"]) == ("layoutverify/1", "proof")
    for key in ("verdict", "method", "witness", "reason", "exit", "fingerprints", "a", "b"):
        assert got[key] == cli[key], key
    assert got["verdict"] == "not_equal" and code == 1
    triton_recheck(got["witness"], BLOCKED_A, BLOCKED_B, (32, 32))
    assert got["cached"] is False and got["id"]
    # asked again: from the store, same id; and the same question in another spelling (a shape list)
    status, again = jhttp("POST", server.url + "/v1/prove", body)
    assert status == 200 and again["cached"] is True and again["id"] == got["id"]
    status, spelled = jhttp("POST", server.url + "/v1/prove", {**body, "shape": [32, 32]})
    assert status == 200 and spelled["cached"] is True and spelled["result_id"] == got["result_id"]
    assert spelled["witness"] == got["witness"]
    # ... whose permalink shows that caller's own input, not the first asker's (issue 26, item 5)
    assert spelled["id"] != got["id"]
    status, mine = jhttp("GET", server.url + f"/v1/results/{spelled['id']}")
    assert status == 200 and mine["request"]["shape"] == [32, 32] and mine["result_id"] == got["result_id"]
    status, theirs = jhttp("GET", server.url + f"/v1/results/{got['id']}")
    assert status == 200 and theirs["request"]["shape"] == "32x32"
    # stored result, by id and by fingerprint
    status, stored = jhttp("GET", server.url + f"/v1/results/{got['id']}")
    assert status == 200 and stored["verdict"] == "not_equal" and stored["witness"] == got["witness"]
    status, listed = jhttp("GET", server.url + f"/v1/results?fingerprint={got['fingerprints']['a']}")
    assert status == 200 and got["result_id"] in [r["result_id"] for r in listed["results"]]
    # text by Accept header
    status, _, text = http("POST", server.url + "/v1/prove", body, headers={"Accept": "text/plain"})
    assert status == 200 and text.decode().startswith("verdict: not_equal\n")
    status, _, text = http("GET", server.url + f"/v1/results/{got['id']}", headers={"Accept": "text/plain"})
    assert status == 200 and text.decode().startswith("verdict: not_equal\n")
    status, _, text = http("POST", server.url + "/v1/show", {"spec": body["a"], "shape": "32x32"},
                           headers={"Accept": "text/plain"})
    assert status == 200 and "kind: layout" in text.decode().split("\n")
    status, shown = jhttp("POST", server.url + "/v1/show", {"spec": body["a"], "shape": "32x32"})
    assert status == 200 and shown["kind"] == "layout"      # JSON stays the default


def test_mma_accumulator_equals_ptx_fragment(server):
    """PTX ISA: the mma.m16n8k16 f32 accumulator fragment is Triton's nvidia_mma v2 16x8 tile."""
    status, got = jhttp("POST", server.url + "/v1/prove", {"a": MMA, "b": "ptx:mma.m16n8k16.f32.C", "shape": "16x8"})
    assert status == 200 and got["verdict"] == "equal" and got["exit"] == 0 and got["witness"] is None


def test_z3_proof_keeps_replayable_smt2(server):
    a, b = "cute:(4,3):(1,4)", "cute:(4,3):(3,1)"
    status, got = jhttp("POST", server.url + "/v1/prove", {"a": a, "b": b, "method": "z3"})
    assert status == 200 and got["verdict"] == "not_equal" and got["method"].startswith("z3")
    code, cli = cli_json("prove", a, b, "--method", "z3")
    assert got["verdict"] == cli["verdict"] == "not_equal"  # z3 may pick another witness: re-check it instead
    # CuTe: coordinate (i, j) of a (4,3):(s0,s1) layout sits at offset i*s0 + j*s1
    w = got["witness"]
    assert w["a"] != w["b"]
    assert w["a"][0] * 1 + w["a"][1] * 4 == w["hardware"]["offset"]
    assert w["b"][0] * 3 + w["b"][1] * 1 == w["hardware"]["offset"]
    status, _, smt2 = http("GET", server.url + f"/v1/results/{got['id']}/smt2")
    assert status == 200
    from layoutverify.core.smt import expected_answers, replay
    with tempfile.NamedTemporaryFile("w", suffix=".smt2", delete=False) as f:
        f.write(smt2.decode())
    try:
        answers, _ = replay(f.name)
        assert answers and answers == expected_answers(f.name)
    finally:
        os.unlink(f.name)
    # an F2 proof has no SMT-LIB2
    status, f2 = jhttp("POST", server.url + "/v1/prove", {"a": BLOCKED_A, "b": BLOCKED_A, "shape": "32x32"})
    status, err = jhttp("GET", server.url + f"/v1/results/{f2['id']}/smt2")
    assert status == 404 and err["error"]["code"] == "no_smt2"


def test_analyze_and_show_match_cli(server):
    status, got = jhttp("POST", server.url + "/v1/analyze", {"a": BLOCKED_A, "b": BLOCKED_B, "shape": "32x32"})
    assert status == 200, got
    _, cli = cli_json("analyze", BLOCKED_A, BLOCKED_B, "--shape", "32x32")
    assert got["kind"] == cli["kind"] == "conversion"
    for key in ("mechanism", "witness", "witnesses", "elements_moved", "vector_width", "moved_by_level"):
        assert got[key] == cli[key], key
    status, props = jhttp("POST", server.url + "/v1/analyze", {"a": BLOCKED_A, "shape": "32x32"})
    _, cli = cli_json("analyze", BLOCKED_A, "--shape", "32x32")
    assert status == 200 and props["kind"] == cli["kind"] == "properties"
    assert props["layouts"] == cli["layouts"]
    status, shown = jhttp("POST", server.url + "/v1/show", {"spec": "cute:(4,8):(8,1)"})
    _, cli = cli_json("show", "cute:(4,8):(8,1)")
    assert status == 200 and shown["kind"] == cli["kind"] == "layout"
    for key in ("framework", "spec", "layout_kind", "layout", "fingerprint", "f2_linear"):
        assert shown[key] == cli[key], key
    # the grid as data; CuTe: coordinate (i, j) of (4,8):(8,1) sits at offset 8*i + j
    cells = shown["grid"]["cells"]
    assert [[h for h in row] for row in cells] == [[[str(8 * i + j)] for j in range(8)] for i in range(4)]


def test_errors_are_the_cli_messages(server):
    cases = [(("cute:(4,3):(1,4", "cute:(4,3):(1,4)"), None),
             (("triton:#ttg.blocked<{sizePerThread = [1, 4]}>", BLOCKED_B), "32x32"),
             (("cute:(4,3):(4,1)", "cute:(4,3):(1,4)"), None)]
    for (a, b), shape in cases:
        body = {"a": a, "b": b, **({"shape": shape} if shape else {})}
        status, got = jhttp("POST", server.url + "/v1/prove", body)
        argv = ["prove", a, b] + (["--shape", shape] if shape else [])
        assert 400 <= status < 500, got
        assert got["kind"] == "error" and got["error"]["message"] == cli_error(*argv)
    status, got = jhttp("POST", server.url + "/v1/prove", {"a": "cute:(4,3):(1,4", "b": "cute:(4,3)"})
    assert got["error"]["code"] == "parse_error" and got["error"]["token"] == "("


def test_file_references_are_refused(server):
    secret = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
    secret.write("(4,3):(1,4)  SECRET-CONTENTS")
    secret.close()
    try:
        for a in (f"cute:@{secret.name}", f"@{secret.name}", f"cute: @{secret.name}", "@/etc/passwd",
                  "triton:@/etc/passwd"):
            for path in ("/v1/prove", "/v1/analyze"):
                status, _, raw = http("POST", server.url + path, {"a": a, "b": "cute:(4,3):(1,4)"})
                assert 400 <= status < 500 and b"SECRET" not in raw and b"root:" not in raw
                assert json.loads(raw)["error"]["code"] == "file_not_allowed"
        status, got = jhttp("POST", server.url + "/v1/show", {"spec": f"cute:@{secret.name}"})
        assert status == 400 and got["error"]["code"] == "file_not_allowed"
        toml = f'[[claim]]\nname = "x"\na = "cute:@{secret.name}"\nb = "cute:(4,3):(1,4)"\nexpect = "equal"\n'
        status, _, raw = http("POST", server.url + "/v1/check", {"corpus": toml})
        assert status == 400 and b"SECRET" not in raw
    finally:
        os.unlink(secret.name)


def test_check_job(server):
    toml = "\n".join([
        "[[claim]]", 'name = "mma-is-ptx"', f'a = "{MMA}"', 'b = "ptx:mma.m16n8k16.f32.C"', 'shape = "16x8"',
        'expect = "equal"',
        "[[claim]]", 'name = "blocked-differ"', f'a = "{BLOCKED_A}"', f'b = "{BLOCKED_B}"', 'shape = "32x32"',
        'expect = "not_equal"',
        "[[claim]]", 'name = "wrong"', f'a = "{BLOCKED_A}"', f'b = "{BLOCKED_B}"', 'shape = "32x32"',
        'expect = "equal"'])
    status, got = jhttp("POST", server.url + "/v1/check", {"corpus": toml})
    assert status in (200, 202), got
    jid = got["job"]
    deadline = time.monotonic() + 60
    while got["status"] != "done" and time.monotonic() < deadline:
        time.sleep(0.2)
        status, got = jhttp("GET", server.url + f"/v1/jobs/{jid}")
        assert status == 200
    assert got["status"] == "done" and got["done"] == got["total"] == 3
    doc = got["result"]
    assert (doc["schema"], doc["kind"]) == ("layoutverify/1", "check")
    by_name = {o["claim"]["name"]: o for o in doc["claims"]}
    assert by_name["mma-is-ptx"]["status"] == "holds"
    assert by_name["blocked-differ"]["status"] == "holds"
    assert by_name["wrong"]["status"] == "fails" and doc["passed"] is False and got["passed"] is False
    assert doc["summary"] == {"holds": 2, "fails": 1, "errors": 0, "known": 0, "findings": 0, "total": 3}
    # the TOML itself as the body
    status, _, raw = http("POST", server.url + "/v1/check", raw=toml.encode(), headers={"Content-Type": "application/toml"})
    assert status in (200, 202) and json.loads(raw)["total"] == 3
    status, bad = jhttp("POST", server.url + "/v1/check", {"corpus": "[[claim]\n"})
    assert status == 400 and "not valid TOML" in bad["error"]["message"] and "/tmp" not in bad["error"]["message"]


def test_health_metrics_openapi(server):
    for _ in range(3):  # two of them answered from the store
        assert jhttp("POST", server.url + "/v1/show", {"spec": "cute:(8,4):(4,1)"})[0] == 200
    status, health = jhttp("GET", server.url + "/healthz")
    assert status == 200 and health["status"] == "ok" and health["schema_version"] >= 2
    status, _, text = http("GET", server.url + "/metrics")
    text = text.decode()
    assert status == 200
    for name in ("layoutverify_requests_total", "layoutverify_request_seconds_bucket", "layoutverify_cache_hits_total",
                 "layoutverify_solver_timeouts_total"):
        assert name in text
    hits = [l for l in text.splitlines() if l.startswith("layoutverify_cache_hits_total ")]
    assert hits and int(hits[0].split()[1]) >= 2
    status, spec = jhttp("GET", server.url + "/openapi.json")
    assert status == 200
    for path in ("/v1/prove", "/v1/analyze", "/v1/show", "/v1/check", "/v1/jobs/{jid}", "/v1/results/{rid}",
                 "/v1/results/{rid}/smt2", "/v1/results", "/healthz", "/metrics"):
        assert path in spec["paths"], path
    assert "a" in spec["paths"]["/v1/prove"]["post"]["requestBody"]["content"]["application/json"]["schema"]["properties"]
    status, _, docs = http("GET", server.url + "/docs")
    assert status == 200 and b"swagger" in docs.lower()


def test_restart_and_kill9_keep_every_acknowledged_result(backend):
    """Load from 4 clients; ``kill -9`` the server (and its workers) mid-load; restart on the same
    store: every result acknowledged before the kill is there, with the same verdict."""
    server = Server(backend[1], workers=2).start()
    acked: dict[str, str] = {}
    lock = threading.Lock()
    stop = threading.Event()
    pairs = blocked_pairs(400, start=1000 if backend[0] == "sqlite" else 2000)

    def client(k):
        for body in pairs[k::4]:
            if stop.is_set():
                return
            try:
                status, got = jhttp("POST", server.url + "/v1/prove", body, timeout=30)
            except (OSError, ValueError, HTTPException):  # (IncompleteRead: killed mid-answer)
                return  # the server died under us: that answer was never acknowledged
            if status == 200:
                with lock:
                    acked[got["id"]] = got["verdict"]
    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while len(acked) < 40 and time.monotonic() < deadline:
            time.sleep(0.01)
        server.kill()
        stop.set()
        for t in threads:
            t.join(30)
        with lock:
            before = dict(acked)
        assert len(before) >= 40
        server.start()  # a new process on the same store
        for rid, verdict in before.items():
            status, got = jhttp("GET", server.url + f"/v1/results/{rid}")
            assert status == 200, (rid, got)
            assert got["verdict"] == verdict
        # and a plain restart (SIGINT) keeps them too
        server.stop()
        server.start()
        status, got = jhttp("GET", server.url + f"/v1/results/{next(iter(before))}")
        assert status == 200
    finally:
        stop.set()
        server.stop()


def test_token_busy_crash_and_hang():
    """Bearer token on POSTs (reads open); a full queue is 503 with Retry-After; a crashing or hanging
    worker is replaced and the server keeps serving."""
    d = tempfile.mkdtemp(prefix="lv-token-")
    token_file = os.path.join(d, "token")
    with open(token_file, "w") as f:
        f.write("s3cret\n")
    server = Server(os.path.join(d, "r.sqlite3"), workers=1, queue=1, token_file=token_file, faults=True).start()
    auth = {"Authorization": "Bearer s3cret"}
    body = {"a": BLOCKED_A, "b": BLOCKED_B, "shape": "32x32"}
    try:
        status, got = jhttp("POST", server.url + "/v1/prove", body)
        assert status == 401 and got["error"]["code"] == "unauthorized"
        status, got = jhttp("POST", server.url + "/v1/prove", body, headers={"Authorization": "Bearer wrong"})
        assert status == 401
        status, got = jhttp("POST", server.url + "/v1/prove", body, headers=auth)
        assert status == 200 and got["verdict"] == "not_equal"
        assert jhttp("GET", server.url + f"/v1/results/{got['id']}")[0] == 200  # reads stay open
        status, _, _ = http("POST", server.url + "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert status == 401

        # one hanging job runs, one waits: the third request finds the queue full
        results = []
        hangs = [threading.Thread(target=lambda: results.append(
            http("POST", server.url + "/v1/_fault/hang?seconds=2", headers=auth, raw=b"")[:3:2])) for _ in range(2)]
        for t in hangs:
            t.start()
            time.sleep(0.3)
        status, headers, raw = http("POST", server.url + "/v1/prove", {**body, "shape": "64x64"}, headers=auth)
        assert status == 503 and headers.get("retry-after") == "1", raw
        assert json.loads(raw)["error"]["code"] == "busy"
        assert jhttp("GET", server.url + "/healthz")[0] == 200  # the server itself answers meanwhile
        for t in hangs:
            t.join(60)
        assert sorted(r[0] for r in results) == [504, 504], results  # stopped at their deadline, worker replaced

        pids = jhttp("GET", server.url + "/healthz")[1]["worker_pids"]
        # a job that wants more memory than the worker's cap (--worker-memory) fails alone
        status, got = jhttp("POST", server.url + "/v1/_fault/hog", headers=auth)
        assert status == 400 and got["error"]["code"] == "too_large"
        assert jhttp("GET", server.url + "/healthz")[1]["worker_pids"] == pids
        status, got = jhttp("POST", server.url + "/v1/_fault/crash", headers=auth)
        assert status == 500 and got["error"]["code"] == "worker_crashed"
        assert jhttp("GET", server.url + "/healthz")[1]["worker_pids"] != pids
        status, got = jhttp("POST", server.url + "/v1/prove", {**body, "shape": "64x64"}, headers=auth)
        assert status == 200 and got["verdict"] == "not_equal"
        status, _, metrics = http("GET", server.url + "/metrics")
        assert b"layoutverify_worker_crashes_total 1" in metrics
        assert b"layoutverify_busy_rejections_total 1" in metrics
    finally:
        server.stop()


def test_answers_are_the_bytes_fastapi_would_send():
    """Answers are rendered straight from the document (``app.JsonDocument``), skipping FastAPI's
    ``jsonable_encoder`` walk: the bytes must be those FastAPI sends for the same dict returned by
    a route (its encoder, then its JSON response), for every kind of value an answer holds, and a
    value ``json`` cannot write as it is (a path) still goes through the encoder."""
    from pathlib import PurePosixPath

    from fastapi.encoders import jsonable_encoder
    from fastapi.responses import JSONResponse

    from layoutverify.apps import jsonout
    from layoutverify.apps.service.app import JsonDocument
    doc = jsonout.document("proof", {"id": "abc", "a": BLOCKED_A, "b": MMA, "verdict": "not_equal", "seconds": 0.0123,
                                     "witness": {"register": (0, 1), "lane": [3], "value": None},
                                     "reason": "différent — ≠", "exit": 1, "cached": True, "nested": [[1.5, -2], {}]})
    assert JsonDocument(doc).body == JSONResponse(jsonable_encoder(doc)).body
    odd = {"where": PurePosixPath("/x/y"), "n": 1}
    assert JsonDocument(odd).body == JSONResponse(jsonable_encoder(odd)).body == b'{"where":"/x/y","n":1}'
