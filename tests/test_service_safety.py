"""A service safe to expose (issue 26, items 2, 4 and 6), against real ``layoutverify serve``
processes, a real PostgreSQL server and raw sockets; the cross-site test is in
``test_service_browser.py`` (Chromium).

What counts as "caused nothing": the service's own counters (``layoutverify_worker_jobs_total``,
jobs handed to a worker; ``layoutverify_store_writes_total``, committed write transactions) and
the rows of every table of the SQLite store, read directly.
"""
from __future__ import annotations

import http.client as httpclient
import json
import os
import random
import socket
import sqlite3
import string
import subprocess
import sys
import tempfile
import time
from urllib.parse import quote

import pytest

from service_harness import Postgres, Server, blocked, free_port, http, jhttp, metric

A = blocked((1, 4), (4, 8), (4, 1))
B = blocked((1, 8), (4, 8), (4, 1))
TABLES = ("results", "permalinks", "views", "jobs", "job_claims", "settings", "aliases")


def row_counts(path: str) -> dict:
    con = sqlite3.connect(path)
    try:
        return {t: con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        con.close()


def form_session(server: Server, headers: dict | None = None) -> tuple[str, str]:
    """(cookie header, CSRF field) as a browser gets them from ``GET /``."""
    status, hdrs, page = http("GET", server.url + "/", headers=headers)
    assert status == 200
    cookie = hdrs["set-cookie"].split(";", 1)[0]
    assert "samesite=strict" in hdrs["set-cookie"].lower() and "httponly" in hdrs["set-cookie"].lower()
    field = page.decode().split('name=csrf value="', 1)[1].split('"', 1)[0]
    return cookie, field


def post_form(server: Server, fields: dict, headers: dict | None = None) -> tuple[int, dict, bytes]:
    body = "&".join(f"{k}={quote(v, safe='')}" for k, v in fields.items()).encode()
    return http("POST", server.url + "/prove", raw=body,
                headers={"Content-Type": "application/x-www-form-urlencoded", **(headers or {})})


@pytest.fixture(scope="module")
def token_server():
    d = tempfile.mkdtemp(prefix="lv-token-")
    token_file = os.path.join(d, "token")
    with open(token_file, "w") as f:
        f.write("s3cret\n")
    s = Server(os.path.join(d, "r.sqlite3"), workers=2, token_file=token_file).start()
    yield s
    s.stop()


AUTH = {"Authorization": "Bearer s3cret"}


def test_anonymous_requests_cause_no_job_and_no_write(token_server):
    """With a token: anonymous requests to every endpoint, including views of a large permalink and
    ``?shared=``, run no worker job and write nothing; a stored view is then read by anyone."""
    s = token_server
    big = {"a": blocked((1, 4), (4, 8), (4, 1)), "b": blocked((2, 2), (4, 8), (4, 1)), "shape": "128x128"}
    status, proof = jhttp("POST", s.url + "/v1/prove", big, headers=AUTH)
    assert status == 200 and proof["verdict"] == "not_equal"
    pid = proof["id"]
    db = s.db
    jobs0, writes0, rows0 = metric(s, "layoutverify_worker_jobs_total"), metric(s, "layoutverify_store_writes_total"), \
        row_counts(db)
    toml = f'[[claim]]\nname = "x"\na = "{A}"\nb = "{B}"\nshape = "32x32"\nexpect = "equal"\n'
    cookie, csrf = form_session(s)
    refused = [
        http("POST", s.url + "/v1/prove", {"a": A, "b": B, "shape": "32x32"}),
        http("POST", s.url + "/v1/analyze", {"a": A, "b": B, "shape": "32x32"}),
        http("POST", s.url + "/v1/show", {"spec": A, "shape": "32x32"}),
        http("POST", s.url + "/v1/check", {"corpus": toml}),
        http("POST", s.url + "/v1/check", raw=toml.encode(), headers={"Content-Type": "application/toml"}),
        http("POST", s.url + "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                      "params": {"name": "show", "arguments": {"spec": "cute:(4,8):(8,1)"}}},
             headers={"Accept": "application/json, text/event-stream"}),
        post_form(s, {"a": A, "b": B, "shape": "32x32", "csrf": csrf}, {"Cookie": cookie}),
        post_form(s, {"a": A, "b": B, "shape": "32x32", "csrf": csrf, "token": "wrong"}, {"Cookie": cookie}),
    ]
    for status, _, raw in refused:
        assert status == 401, (status, raw[:200])
    shared = "triton:#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>"
    for _ in range(30):  # the views of a large permalink that made an authenticated prove wait 11.7 s
        status, _, page = http("GET", s.url + f"/r/{pid}")
        assert status == 200 and b"id=no-view" in page and b"not_equal" in page
    status, _, page = http("GET", s.url + f"/r/{pid}?shared={quote(shared, safe='')}")
    assert status == 200 and b"id=no-view" in page
    for path in (f"/v1/results/{pid}", f"/v1/results?fingerprint={proof['fingerprints']['a']}", "/healthz",
                 "/", "/docs", "/openapi.json", "/v1/jobs/0123456789abcdef"):
        assert http("GET", s.url + path)[0] in (200, 404), path
    assert metric(s, "layoutverify_worker_jobs_total") == jobs0
    assert metric(s, "layoutverify_store_writes_total") == writes0
    assert row_counts(db) == rows0
    # the bearer header makes the page compute (once) and store its view; anyone then reads it
    status, _, page = http("GET", s.url + f"/r/{pid}", headers=AUTH)
    assert status == 200 and b"id=grid-a" in page
    jobs1 = metric(s, "layoutverify_worker_jobs_total")
    assert jobs1 > jobs0 and row_counts(db)["views"] == rows0["views"] + 1
    status, _, page = http("GET", s.url + f"/r/{pid}")
    assert status == 200 and b"id=grid-a" in page and metric(s, "layoutverify_worker_jobs_total") == jobs1
    # the web form takes the bearer header as well as its token field
    # (urllib follows the form's 303 to the permalink page)
    status, _, page = post_form(s, {"a": A, "b": B, "shape": "32x32", "csrf": csrf}, {"Cookie": cookie, **AUTH})
    assert status == 200 and b"id=verdict" in page and b"id=grid-a" in page
    status, _, page = post_form(s, {"a": A, "b": B, "shape": "16x16", "csrf": csrf, "token": "s3cret"},
                                {"Cookie": cookie})
    assert status == 200 and b"id=verdict" in page and b"id=grid-a" in page


def test_private_reads():
    d = tempfile.mkdtemp(prefix="lv-private-")
    with open(os.path.join(d, "token"), "w") as f:
        f.write("s3cret")
    s = Server(os.path.join(d, "r.sqlite3"), workers=1, token_file=os.path.join(d, "token"),
               args=["--private-reads"]).start()
    try:
        status, proof = jhttp("POST", s.url + "/v1/prove", {"a": A, "b": B, "shape": "32x32"}, headers=AUTH)
        assert status == 200
        for path in (f"/v1/results/{proof['id']}", f"/r/{proof['id']}", "/v1/jobs/0123456789abcdef"):
            assert http("GET", s.url + path)[0] == 401, path
        assert http("GET", s.url + f"/v1/results/{proof['id']}", headers=AUTH)[0] == 200
        assert http("GET", s.url + "/healthz")[0] == 200
    finally:
        s.stop()


def test_cross_site_request_shapes_are_refused(token_server):
    """What a page on another origin can make a browser send, sent here by hand (Chromium does it
    for real in test_service_browser.py): text/plain JSON, text/* TOML, a form without the CSRF
    token, and any unsafe request from a foreign Origin."""
    s = token_server
    rows0 = row_counts(s.db)
    body = json.dumps({"a": A, "b": B, "shape": "32x32"}).encode()
    for ctype in ("text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                  "multipart/form-data; boundary=x", ""):
        status, _, raw = http("POST", s.url + "/v1/prove", raw=body, headers={"Content-Type": ctype, **AUTH})
        assert status == 415 and json.loads(raw)["error"]["code"] == "unsupported_media_type", (ctype, raw)
    toml = f'[[claim]]\nname = "x"\na = "{A}"\nb = "{B}"\nshape = "32x32"\nexpect = "equal"\n'
    for ctype in ("text/plain", "text/toml", "text/x-toml"):
        status, _, _ = http("POST", s.url + "/v1/check", raw=toml.encode(), headers={"Content-Type": ctype, **AUTH})
        assert status == 415, ctype
    cookie, csrf = form_session(s)
    status, _, page = post_form(s, {"a": A, "b": B, "shape": "32x32", "token": "s3cret"}, {"Cookie": cookie})
    assert status == 403 and b"expired or was not sent from this page" in page
    other_cookie, _ = form_session(s)
    status, _, _ = post_form(s, {"a": A, "b": B, "shape": "32x32", "token": "s3cret", "csrf": csrf},
                             {"Cookie": other_cookie})
    assert status == 403   # a token is bound to its own cookie
    for origin in ("http://127.0.0.1:1", "http://evil.example", "null"):
        status, _, raw = http("POST", s.url + "/v1/prove", raw=body,
                              headers={"Origin": origin, "Content-Type": "application/json", **AUTH})
        assert status == 403 and json.loads(raw)["error"]["code"] == "cross_origin", origin
        status, _, _ = post_form(s, {"a": A, "b": B, "csrf": csrf, "token": "s3cret"},
                                 {"Cookie": cookie, "Origin": origin})
        assert status == 403
    assert row_counts(s.db) == rows0
    # the service's own origin passes
    status, _, _ = http("POST", s.url + "/v1/prove", {"a": A, "b": B, "shape": "32x32"},
                        headers={"Origin": s.url, **AUTH})
    assert status == 200


def test_non_loopback_host_without_token_is_refused():
    from layoutverify.apps.commands.serve import is_loopback
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1") and is_loopback("127.8.0.1")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("10.0.0.1")
    d = tempfile.mkdtemp(prefix="lv-insecure-")
    for host in ("0.0.0.0", "::"):
        r = subprocess.run([sys.executable, "-m", "layoutverify", "serve", "--host", host, "--port", str(free_port()),
                            "--db", os.path.join(d, "r.sqlite3")], capture_output=True, text=True, timeout=120)
        assert r.returncode == 2, r.stderr
        assert "no --token-file is set" in r.stderr and "--insecure" in r.stderr and "Traceback" not in r.stderr


def test_metrics_methods_ids_framing_and_mcp_get(token_server):
    s = token_server
    rnd = random.Random(7)
    sent = set()
    for _ in range(200):
        method = "".join(rnd.choice(string.ascii_uppercase) for _ in range(rnd.randint(3, 12)))
        sent.add(method)
        conn = httpclient.HTTPConnection("127.0.0.1", s.port, timeout=30)
        conn.request(method, "/v1/prove")
        conn.getresponse().read()
        conn.close()
    _, _, text = http("GET", s.url + "/metrics")
    text = text.decode()
    assert 'method="other"' in text
    assert not [m for m in sent if f'method="{m}"' in text]
    assert len(text) < 60_000
    # ids that cannot be ids never reach the store
    for path in ("/v1/results/%00abc", "/v1/results/a%00", "/v1/jobs/%00", "/r/%00x", "/v1/results/x%00/smt2"):
        status, _, raw = http("GET", s.url + path)
        assert status == 404, (path, raw)
    assert http("GET", s.url + "/v1/results?fingerprint=%00")[0] == 422
    # both Transfer-Encoding and Content-Length (RFC 9112 section 6.3): refused, connection closed
    with socket.create_connection(("127.0.0.1", s.port), timeout=30) as sock:
        body = b'{"spec": "cute:(4,8):(8,1)"}'
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        sock.sendall(b"POST /v1/show HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Authorization: Bearer s3cret\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked)
        got = b""
        while True:
            part = sock.recv(65536)
            if not part:
                break   # closed by the server
            got += part
        assert got.startswith(b"HTTP/1.1 400"), got[:200]
        assert got.count(b"HTTP/1.1") == 1
    # GET /mcp answers at once (no empty event stream held open)
    t0 = time.monotonic()
    status, hdrs, _ = http("GET", s.url + "/mcp", headers={"Accept": "text/event-stream", **AUTH}, timeout=20)
    assert status == 405 and "POST" in hdrs["allow"] and time.monotonic() - t0 < 10


@pytest.fixture(scope="module")
def postgres():
    pg = Postgres().start()
    yield pg
    pg.stop()


def test_postgresql_ids_and_outage(postgres):
    """On PostgreSQL: a NUL byte in any id is a 4xx (it never reaches the store); while the
    server is down every endpoint that needs the store, /healthz included, is 503 ``store
    unavailable``; afterwards everything works again."""
    s = Server(postgres.url, workers=1).start()
    try:
        status, proof = jhttp("POST", s.url + "/v1/prove", {"a": A, "b": B, "shape": "32x32"})
        assert status == 200
        for path in ("/v1/results/%00", "/v1/jobs/ab%00cd", "/r/%00", "/v1/results/%00/smt2"):
            assert http("GET", s.url + path)[0] == 404, path
        assert http("GET", s.url + "/v1/results?fingerprint=ab%00")[0] == 422
        status, _, raw = http("POST", s.url + "/v1/prove", {"a": "cute:(4,3):(1,4)\x00", "b": "cute:(4,3):(1,4)"})
        assert 400 <= status < 500, raw
        postgres.pause()
        try:
            for method, path, body in (("GET", "/healthz", None), ("GET", f"/v1/results/{proof['id']}", None),
                                       ("POST", "/v1/prove", {"a": A, "b": B, "shape": "64x64"}),
                                       ("GET", f"/r/{proof['id']}", None)):
                status, _, raw = http(method, s.url + path, body, timeout=60)
                assert status == 503, (path, status, raw[:300])
                if path != f"/r/{proof['id']}":
                    err = json.loads(raw)["error"]
                    assert err["code"] == "store_unavailable" and "store unavailable" in err["message"]
        finally:
            postgres.resume()
        deadline = time.monotonic() + 60
        while http("GET", s.url + "/healthz")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert jhttp("GET", s.url + f"/v1/results/{proof['id']}")[0] == 200
        assert jhttp("POST", s.url + "/v1/prove", {"a": A, "b": B, "shape": "64x64"})[0] == 200
        _, _, text = http("GET", s.url + "/metrics")
        assert b'status="500"' not in text
    finally:
        s.stop()


def test_unknown_results_are_one_row_per_question():
    """A proof that ends ``unknown`` (solver time limit) is stored once per question, replaced by
    the latest such answer, not once per request."""
    d = tempfile.mkdtemp(prefix="lv-unknown-")
    db = os.path.join(d, "r.sqlite3")
    s = Server(db, workers=1).start()
    try:
        body = {"a": blocked((1, 4), (4, 8), (4, 1)), "b": blocked((2, 2), (8, 4), (1, 4)), "shape": "128x128",
                "method": "z3", "timeout_ms": 1}
        verdicts = []
        for _ in range(4):
            status, got = jhttp("POST", s.url + "/v1/prove", body)
            assert status == 200
            verdicts.append(got["verdict"])
        assert verdicts[0] == "unknown", verdicts     # 1 ms is not enough for z3 on this pair
        con = sqlite3.connect(db)
        n = con.execute("SELECT COUNT(*) FROM results WHERE verdict = 'unknown'").fetchone()[0]
        con.close()
        assert n == 1
        # with time enough, the same question is answered for good, and the permalink moves to it
        status, got = jhttp("POST", s.url + "/v1/prove", {**body, "timeout_ms": 20_000}, timeout=300)
        assert status == 200 and got["verdict"] == "not_equal"
    finally:
        s.stop()
