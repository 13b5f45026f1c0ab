"""Real servers for the service tests: ``layoutverify serve`` on a free loopback port, and a real
PostgreSQL server (Debian's ``postgresql`` package) in a temporary directory.

Nothing here is mocked: the tests talk HTTP to a separate process, which they may also kill.
"""
from __future__ import annotations

import glob
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import pytest

STARTUP_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method: str, url: str, body=None, *, headers: dict | None = None, raw: bytes | None = None,
         timeout: float = 60) -> tuple[int, dict, bytes]:
    """One HTTP request: (status, headers, body bytes); HTTP errors are answers, not exceptions."""
    data = raw
    hdrs = dict(headers or {})
    if body is not None:
        data = json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def jhttp(method: str, url: str, body=None, **kw) -> tuple[int, dict]:
    status, _, data = http(method, url, body, **kw)
    return status, json.loads(data)


class Server:
    """``layoutverify serve`` in its own process group (so that ``kill -9`` takes its workers too)."""

    def __init__(self, db: str, *, workers: int = 2, queue: int = 64, token_file: str | None = None,
                 faults: bool = False, log_dir: str | None = None, args: list[str] | None = None,
                 env: dict | None = None):
        self.db, self.workers, self.queue, self.token_file, self.faults = db, workers, queue, token_file, faults
        self.args, self.env = list(args or []), dict(env or {})
        self.log_dir = log_dir or tempfile.mkdtemp(prefix="lv-serve-log-")
        self.proc = None
        self.port = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "Server":
        self.port = free_port()
        cmd = [sys.executable, "-m", "layoutverify", "serve", "--port", str(self.port), "--db", self.db,
               "--workers", str(self.workers), "--queue", str(self.queue)]
        if self.token_file:
            cmd += ["--token-file", self.token_file]
        cmd += self.args
        env = {**os.environ, **self.env}
        if self.faults:
            env["LAYOUTVERIFY_SERVICE_FAULTS"] = "1"
        self.log = open(os.path.join(self.log_dir, f"serve-{self.port}.log"), "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: {self.log_text()}")
            try:
                status, _, _ = http("GET", self.url + "/healthz", timeout=2)
                if status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"server did not start in {STARTUP_S} s: {self.log_text()}")

    def log_text(self) -> str:
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()[-3000:]

    def kill(self) -> None:
        """``kill -9`` the server and its workers (the whole process group)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        self.log.close()


# -- PostgreSQL -------------------------------------------------------------------------------------
def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if found:
        return found[-1]
    exe = shutil.which(name)
    if exe:
        return exe
    pytest.fail(f"PostgreSQL's {name} is missing: apt-get install -y postgresql (the service tests need a real "
                f"PostgreSQL server)")


class Postgres:
    """A throw-away PostgreSQL cluster on a free port, run as a non-root user when we are root."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="lv-pg-")
        self.port = free_port()
        self.user = None
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                pytest.fail("running as root: PostgreSQL must run as a non-root user, and user 'postgres' "
                            "(created by Debian's postgresql package) does not exist")
            self.user = "postgres"
            shutil.chown(self.dir, "postgres", "postgres")

    def _run(self, args: list[str], **kw):
        if self.user:
            args = ["runuser", "-u", self.user, "--"] + args
        return subprocess.run(args, check=True, capture_output=True, text=True, **kw)

    def start(self) -> "Postgres":
        data = os.path.join(self.dir, "data")
        self._run([_pg_bin("initdb"), "-D", data, "-U", "lv", "--auth=trust", "-E", "UTF8", "--no-sync"], timeout=120)
        opts = f"-p {self.port} -k {self.dir} -h 127.0.0.1 -c fsync=on -c max_connections=200"
        self._run([_pg_bin("pg_ctl"), "-D", data, "-o", opts, "-l", os.path.join(self.dir, "log"), "-w", "start"],
                  timeout=120)
        self._run([_pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "lv", "layoutverify"],
                  timeout=60)
        return self

    @property
    def url(self) -> str:
        return f"postgresql://lv@127.0.0.1:{self.port}/layoutverify"

    def pause(self) -> None:
        """Stop the server, keeping its data (``resume`` starts it again on the same port)."""
        self._run([_pg_bin("pg_ctl"), "-D", os.path.join(self.dir, "data"), "-m", "fast", "-w", "stop"], timeout=120)

    def resume(self) -> None:
        opts = f"-p {self.port} -k {self.dir} -h 127.0.0.1 -c fsync=on -c max_connections=200"
        self._run([_pg_bin("pg_ctl"), "-D", os.path.join(self.dir, "data"), "-o", opts, "-l",
                   os.path.join(self.dir, "log"), "-w", "start"], timeout=120)

    def stop(self) -> None:
        try:
            self._run([_pg_bin("pg_ctl"), "-D", os.path.join(self.dir, "data"), "-m", "immediate", "stop"], timeout=60)
        except subprocess.SubprocessError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


def store_url(backend: str, tmp_dir: str, pg: Postgres | None) -> str:
    return pg.url if backend == "postgresql" else os.path.join(tmp_dir, "results.sqlite3")


def rss_bytes(pid: int) -> int:
    """Resident memory of process ``pid`` (``VmRSS`` in ``/proc/PID/status``)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def metric(server: "Server", name: str) -> float:
    """One unlabelled sample of ``/metrics`` (e.g. ``layoutverify_worker_jobs_total``)."""
    _, _, text = http("GET", server.url + "/metrics")
    for line in text.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise KeyError(name)


# -- layouts ----------------------------------------------------------------------------------------
def blocked(spt, tpw, wpc, order=(1, 0)) -> str:
    f = lambda v: "[" + ", ".join(map(str, v)) + "]"  # noqa: E731
    return (f"triton:#ttg.blocked<{{sizePerThread = {f(spt)}, threadsPerWarp = {f(tpw)}, "
            f"warpsPerCTA = {f(wpc)}, order = {f(order)}}}>")


def blocked_pairs(n: int, start: int = 0) -> list[dict]:
    """``n`` distinct prove requests over Triton blocked layouts (shapes up to 128x128), numbered
    from ``start``; distinct for numbers below 2880 (mixed radix: shape, sizePerThread,
    threadsPerWarp, warpsPerCTA, order)."""
    spts = [(1, 1), (1, 2), (1, 4), (2, 2), (4, 1), (1, 8), (2, 4), (4, 4)]
    tpws = [(4, 8), (8, 4), (2, 16), (16, 2), (1, 32), (32, 1)]
    wpcs = [(1, 1), (2, 2), (4, 1), (1, 4), (2, 1)]
    shapes = ["16x16", "32x32", "64x64", "128x128", "32x64", "64x128"]
    out = []
    for i in range(start, start + n):
        shape, spt, tpw, wpc, order = (i % 6, (i // 6) % 8, (i // 48) % 6, (i // 288) % 5, (i // 1440) % 2)
        a = blocked(spts[spt], tpws[tpw], wpcs[wpc])
        b = blocked(spts[(spt + 1) % 8], tpws[tpw], wpcs[wpc], order=(0, 1) if order else (1, 0))
        out.append({"a": a, "b": b, "shape": shapes[shape]})
    return out
