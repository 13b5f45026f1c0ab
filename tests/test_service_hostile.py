"""Hostile requests against a real ``layoutverify serve``: every one is answered 4xx with an
``error`` document (never 5xx, never a hang), and the server keeps serving afterwards with the same
worker processes (no worker died: bad input never reaches a crash)."""
from __future__ import annotations

import http.client as httpclient
import json
import os
import tempfile

import pytest

from service_harness import Server, blocked, http, jhttp

GOOD = {"a": blocked((1, 4), (4, 8), (4, 1)), "b": blocked((1, 8), (4, 8), (4, 1)), "shape": "32x32"}


@pytest.fixture(scope="module")
def server():
    d = tempfile.mkdtemp(prefix="lv-hostile-")
    s = Server(os.path.join(d, "r.sqlite3"), workers=2).start()
    yield s
    s.stop()


def raw_post(server, path: str, data: bytes, content_type: str = "application/json"):
    return http("POST", server.url + path, raw=data, headers={"Content-Type": content_type}, timeout=120)


def assert_refused(status: int, raw: bytes, what) -> dict:
    assert 400 <= status < 500, (what, status, raw[:300])
    doc = json.loads(raw)
    assert doc["kind"] == "error" and doc["error"]["code"] and doc["error"]["message"], what
    return doc


MALFORMED = [b"", b"   ", b"{", b"not json", b"[1, 2", b'{"a": "x",}', b"\xff\xfe\x00", b'{"a": "\\ud800"',
             b"NaN", b'{"a": 1e99999}', b'{"timeout_ms": ' + b"9" * 5000 + b"}",
             b"[" * 1_000_000 + b"]" * 1_000_000,                        # 10^6-deep nesting
             b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
             b'{"a": ' + b'{"x": ' * 50_000 + b"1" + b"}" * 50_000 + b"}"]


@pytest.mark.parametrize("i", range(len(MALFORMED)))
def test_malformed_json(server, i):
    for path in ("/v1/prove", "/v1/analyze", "/v1/show", "/v1/check"):
        status, _, raw = raw_post(server, path, MALFORMED[i])
        assert_refused(status, raw, (path, MALFORMED[i][:40]))


WRONG = [None, True, 1, -1, 1.5, "x", "", [], [1], {}, {"a": 1}, [[]], "9" * 1000]
FIELDS = {"/v1/prove": ("a", "b", "shape", "shape_b", "method", "timeout_ms", "triton_version", "warp_size", "strict"),
          "/v1/analyze": ("a", "b", "shape", "shared", "element_bits", "timeout_ms"),
          "/v1/show": ("spec", "shape"),
          "/v1/check": ("corpus",)}


@pytest.mark.parametrize("path", sorted(FIELDS))
def test_wrong_types_in_every_field(server, path):
    base = {"/v1/prove": GOOD, "/v1/analyze": {"a": GOOD["a"], "b": GOOD["b"], "shape": "32x32"},
            "/v1/show": {"spec": "cute:(4,8):(8,1)"}, "/v1/check": {"corpus": ""}}[path]
    for field in FIELDS[path]:
        for value in WRONG:
            body = {**base, field: value}
            status, _, raw = http("POST", server.url + path, body, timeout=120)
            if status == 200:  # a value of the right type that is also valid (e.g. strict=True, b=None)
                continue
            assert_refused(status, raw, (path, field, value))
    for top in ([], 1, "s", None, [GOOD]):
        status, _, raw = http("POST", server.url + path, top)
        assert_refused(status, raw, (path, top))
    status, _, raw = http("POST", server.url + path, {**base, "unexpected": 1})
    assert_refused(status, raw, (path, "unknown field"))


ABSURD_SHAPES = ["0x0", "-1x5", "1e9x1e9", "99999999999999999999x2", "x", "32x", "1x1x1x1x1x1x1x1x1x1", "٣x٣",
                 "32 x 32 x", [0], [-1], [2 ** 40, 2 ** 40], list(range(1, 100_000)), [1.5], ["32"], [True, 32]]


def test_absurd_shapes(server):
    for shape in ABSURD_SHAPES:
        status, _, raw = http("POST", server.url + "/v1/prove", {**GOOD, "shape": shape}, timeout=120)
        assert_refused(status, raw, shape)


ABSURD_LAYOUTS = ["", ":", "triton:", "nosuchframework:xyz", "@/etc/passwd", "cute:@/etc/passwd",
                  "triton:@/proc/self/environ", "cute:" + "(" * 300_000, "cute:" + "(1," * 100_000,
                  "tilus:" + "local(" * 50_000, "triton:#ttg.blocked<{" + "a = [1], " * 50_000 + "}>",
                  "cute:(4,3):(1,4)\x00", "cute:\ud800", "ptx:mma.m99999n8k16.f16.C",
                  "cute:(4294967296,4294967296):(1,4294967296)"]


def test_absurd_layouts(server):
    for spec in ABSURD_LAYOUTS:
        status, _, raw = http("POST", server.url + "/v1/prove", {**GOOD, "a": spec}, timeout=120)
        doc = assert_refused(status, raw, spec[:60])
        assert "root:" not in doc["error"]["message"]


def _post_streaming(server, headers: dict, chunks) -> int:
    """POST that sends headers, then as much of the body as the server takes; the server's status."""
    conn = httpclient.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.putrequest("POST", "/v1/prove")
    for k, v in headers.items():
        conn.putheader(k, v)
    conn.endheaders()
    try:
        for c in chunks:
            conn.send(c)
    except OSError:  # the server answered and closed before taking it all: that is the point
        pass
    status = conn.getresponse().status
    conn.close()
    return status


def test_huge_bodies(server):
    big = json.dumps({**GOOD, "a": "cute:" + "1" * (3 << 20)}).encode()
    # a declared size over the limit: refused before the body is read
    assert _post_streaming(server, {"Content-Type": "application/json", "Content-Length": str(len(big))}, []) == 413
    # the same without Content-Length (chunked): refused while reading, once past the limit
    chunks = [b"%x\r\n%s\r\n" % (len(big[i:i + 65536]), big[i:i + 65536]) for i in range(0, len(big), 65536)]
    assert _post_streaming(server, {"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
                           chunks + [b"0\r\n\r\n"]) == 413
    # a lying Content-Length
    assert _post_streaming(server, {"Content-Type": "application/json", "Content-Length": "abc"}, [b"{}"]) // 100 == 4


def test_other_endpoints(server):
    for method, path in (("GET", "/v1/results/nope"), ("GET", "/v1/results/" + "x" * 5000),
                         ("GET", "/v1/results/../../etc/passwd"), ("GET", "/v1/results/nope/smt2"),
                         ("GET", "/v1/jobs/nope"), ("GET", "/v1/results"), ("GET", "/v1/results?fingerprint=x&limit=0"),
                         ("GET", "/v1/results?fingerprint=x&limit=abc"), ("DELETE", "/v1/prove"),
                         ("GET", "/v1/prove"), ("GET", "/nope")):
        status, _, raw = http(method, server.url + path)
        assert_refused(status, raw, path)
    status, _, raw = raw_post(server, "/prove", b"a=%ff%fe&b=" + b"x" * 10, "application/x-www-form-urlencoded")
    assert 400 <= status < 500
    status, _, raw = raw_post(server, "/prove", b"a=@/etc/passwd&b=cute:(1)", "application/x-www-form-urlencoded")
    assert 400 <= status < 500 and b"root:" not in raw
    status, _, raw = raw_post(server, "/mcp", b"{not json", "application/json")
    assert 400 <= status < 500


def test_server_still_serves_with_the_same_workers(server):
    """Last: nothing above killed a worker (bad input is answered, never crashes) and proofs work."""
    status, health = jhttp("GET", server.url + "/healthz")
    assert status == 200
    status, got = jhttp("POST", server.url + "/v1/prove", GOOD)
    assert status == 200 and got["verdict"] == "not_equal"
    _, _, metrics = http("GET", server.url + "/metrics")
    assert b"layoutverify_worker_crashes_total 0" in metrics
    assert b'status="500"' not in metrics
