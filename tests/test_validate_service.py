"""``POST /v1/validate``: a compiled kernel uploaded as a tarball is validated by a real
``layoutverify serve`` (SQLite store, two workers), with the bounds of
``layoutverify.apps.service.validate_route``: body size, members, member kinds, no paths.
"""
from __future__ import annotations

import io
import json
import tarfile
import time

import pytest

from kernel_cache import corpus_folders
from kernel_corpus import LAUNCH
from service_harness import Server, http, jhttp

from layoutverify.apps.kernels.folder import find_kernels
from layoutverify.apps.service.validate_job import MAX_MEMBERS, read_kernel_tarball
from layoutverify.apps.service.validate_route import MAX_TARBALL


TAR = {"Content-Type": "application/x-tar"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(str(tmp_path_factory.mktemp("db") / "lv.sqlite"), workers=2).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def layer_norm(triton_python):
    folder = corpus_folders(triton_python("3.9"), "3.9", ["layer_norm:80"])[("layer_norm", 80)]
    kf, = find_kernels([folder])
    return kf.read()


def _tar(files: dict, mode: str = "w:gz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for name, data in files.items():
            raw = data if isinstance(data, bytes) else data.encode()
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return buf.getvalue()


def _kernel_files(layer_norm, ptx=None):
    ttir, real_ptx, meta, _ = layer_norm
    return {"kernel/layer_norm.ttir": ttir, "kernel/layer_norm.ptx": ptx or real_ptx,
            "kernel/layer_norm.json": json.dumps(meta), "kernel/layer_norm.launch.json": json.dumps(LAUNCH["layer_norm"]),
            "kernel/layer_norm.cubin": b"\x7fELF not read"}


def _post_streaming(server, headers: dict, chunks) -> int:
    """POST that sends headers, then as much of the body as the server takes; the server's status."""
    import http.client as httpclient
    conn = httpclient.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.putrequest("POST", "/v1/validate")
    for k, v in headers.items():
        conn.putheader(k, v)
    conn.endheaders()
    try:
        for c in chunks:
            conn.send(c)
    except OSError:  # the server answered and closed before taking it all
        pass
    status = conn.getresponse().status
    conn.close()
    return status


def _answer(server, status, got):
    deadline = time.monotonic() + 300
    while status == 202 and time.monotonic() < deadline:
        time.sleep(0.5)
        status, got = jhttp("GET", server.url + f"/v1/jobs/{got['job']}")
        if got.get("status") == "done":
            return 200, dict(got["result"], job=got["job"])
    return status, got


def test_a_valid_and_a_wrong_kernel(server, layer_norm):
    status, got = jhttp("POST", server.url + "/v1/validate", raw=_tar(_kernel_files(layer_norm)),
                        headers={"Content-Type": "application/gzip"}, timeout=300)
    status, got = _answer(server, status, got)
    assert status == 200, got
    k = got["kernels"][0]
    assert k["verdict"] == "valid" and k["name"] == "layer_norm" and k["elements"] > 0 and got["exit"] == 0
    import re
    bad = re.sub(r"@%p\d+ (st\.global\.b16)", r"\1", layer_norm[1])
    status, got = jhttp("POST", server.url + "/v1/validate", raw=_tar(_kernel_files(layer_norm, bad), "w"),
                        headers={"Content-Type": "application/x-tar"}, timeout=300)
    status, got = _answer(server, status, got)
    assert status == 200 and got["kernels"][0]["verdict"] == "wrong" and got["exit"] == 1
    assert got["kernels"][0]["first_wrong"]["buffer"] == "Y"


@pytest.mark.parametrize("files,token", [
    ({"a.txt": "hello"}, "no .ttir"),
    ({"k.ttir": "module {", "k.ptx": ".version 8.0", "l.ttir": "x"}, "more than one .ttir"),
])
def test_bad_archives_are_one_line_400s(server, files, token):
    status, got = jhttp("POST", server.url + "/v1/validate", raw=_tar(files), headers=TAR)
    assert status == 400 and token in got["error"]["message"], got
    assert "/tmp" not in got["error"]["message"]


def test_bounds_and_non_archives(server):
    status, got = jhttp("POST", server.url + "/v1/validate", raw=b"not a tarball at all", headers=TAR)
    assert status == 400 and "not a tar archive" in got["error"]["message"]
    # what a cross-site form can send without a preflight is refused before the body is read
    for media in ("application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"):
        status, got = jhttp("POST", server.url + "/v1/validate", raw=b"x", headers={"Content-Type": media})
        assert status == 415 and got["error"]["code"] == "unsupported_media_type", (media, got)
    # a declared size over the limit: refused before the body is read; chunked: refused while reading
    assert _post_streaming(server, {"Content-Type": "application/gzip", "Content-Length": str(MAX_TARBALL + 1)},
                           []) == 413
    big = b"\0" * (MAX_TARBALL + 1)
    chunks = [b"%x\r\n%s\r\n" % (len(big[i:i + 1 << 16]), big[i:i + 1 << 16]) for i in range(0, len(big), 1 << 16)]
    assert _post_streaming(server, {"Content-Type": "application/gzip", "Transfer-Encoding": "chunked"},
                           chunks + [b"0\r\n\r\n"]) == 413
    many = {f"f{i}.txt": "x" for i in range(MAX_MEMBERS + 1)}
    status, got = jhttp("POST", server.url + "/v1/validate", raw=_tar(many), headers=TAR)
    assert status == 400 and "more than" in got["error"]["message"]


def test_links_and_paths_are_never_followed(tmp_path):
    """Symbolic links, hard links and devices are refused; names with ``..`` or absolute paths only
    select which text is which and are never opened."""
    secret = tmp_path / "secret.ttir"
    secret.write_text("SECRET")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("k.ttir")
        info.type = tarfile.SYMTYPE
        info.linkname = str(secret)
        tar.addfile(info)
    with pytest.raises(Exception, match="not a regular file"):
        read_kernel_tarball(buf.getvalue())
    got = read_kernel_tarball(_tar({"../../../etc/k.ttir": "T", str(tmp_path / "k.ptx"): "P"}))
    assert got["ttir"] == "T" and got["ptx"] == "P" and "SECRET" not in json.dumps(got)


def test_a_compression_bomb_stops_at_the_member_limit():
    from layoutverify.apps.service.validate_job import MAX_MEMBER
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("k.ptx")
        info.size = MAX_MEMBER + 1
        tar.addfile(info, io.BytesIO(b"\0" * (MAX_MEMBER + 1)))
    data = buf.getvalue()
    assert len(data) < MAX_TARBALL
    with pytest.raises(Exception, match="over the limit"):
        read_kernel_tarball(data)
    _ = http
