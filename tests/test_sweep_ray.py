"""``layoutverify sweep --ray ADDRESS`` on a local Ray cluster that this test starts (2 CPUs):
the results equal the local run's, point for point, also when a Ray worker dies mid-task (Ray
retries the task)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

SPEC = """
task = "prove"
[[triton]]
a = ["blocked"]
b = ["nvidia_mma", "dot_op", "slice", "linear"]
shapes = [[64, 64]]
num_warps = [4]
versions = ["3.9"]
limit = 300
[triton.blocked]
size_per_thread = [[1, 4], [2, 2]]
threads_per_warp = [[4, 8], [8, 4]]
"""


#: the same on the head and the clients: Ray 2.5x turns token authentication on for a head when
#: ~/.ray/auth_token exists (left by any earlier local ray.init), which clients then fail
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "PYTHONWARNINGS": "ignore"}


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A Ray head node with 2 CPUs, started with ``ray start --block`` in its own session and
    stopped by signalling that process (which takes its raylet, GCS and workers down)."""
    exe = shutil.which("ray") or str(Path(sys.executable).with_name("ray"))
    port = _free_port()
    tmp = tmp_path_factory.mktemp("ray")
    env = dict(os.environ, **RAY_ENV)
    log = open(tmp / "head.log", "w")
    proc = subprocess.Popen([exe, "start", "--head", "--block", "--num-cpus=2", f"--port={port}",
                             "--include-dashboard=false", f"--temp-dir={tmp}", "--disable-usage-stats"],
                            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    ok = False
    while time.monotonic() < deadline and proc.poll() is None:
        p = subprocess.run([sys.executable, "-c", f"import ray; ray.init(address='{address}'); "
                            "print(int(ray.cluster_resources().get('CPU', 0)))"],
                           capture_output=True, text=True, timeout=60, env=env)
        if p.returncode == 0 and p.stdout.strip().endswith("2"):
            ok = True
            break
        time.sleep(1)
    if not ok:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        pytest.fail(f"Ray head did not come up: {(tmp / 'head.log').read_text()[-2000:]}")
    yield address
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    log.close()


def _run(*args, env_extra=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, **RAY_ENV)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "layoutverify", "sweep", *map(str, args)], capture_output=True,
                          text=True, timeout=300, env=env)


def _records(path: Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        assert r["id"] not in out
        out[r["id"]] = r
    return out


def _same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys() and len(a) == 300
    for k in a:
        for f in ("verdict", "method", "a", "b", "shape", "num_warps", "version"):
            assert a[k].get(f) == b[k].get(f), (k, f, a[k], b[k])


def test_ray_equals_local(cluster, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    local, remote = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    p = _run(spec, "-o", local, "-j", "2")
    assert p.returncode == 0, p.stderr[-2000:]
    p = _run(spec, "-o", remote, "--ray", cluster, "--chunk", "25", "--json")
    assert p.returncode == 0, p.stderr[-2000:]
    summary = json.loads(p.stdout)
    assert summary["backend"] == "ray" and summary["points"] == 300 and summary["errors"] == 0
    _same(_records(local), _records(remote))


def test_ray_retries_a_task_whose_worker_died(cluster, tmp_path):
    """The first chunk to start exits its Ray worker process; Ray reruns the task and the
    results are still complete and equal to the local run's."""
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    marker = tmp_path / "crash-once"
    marker.write_text("")
    local, remote = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    assert _run(spec, "-o", local, "-j", "1").returncode == 0
    p = _run(spec, "-o", remote, "--ray", cluster, "--chunk", "25",
             env_extra={"LAYOUTVERIFY_SWEEP_CRASH_ONCE": str(marker)})
    assert p.returncode == 0, p.stderr[-2000:]
    assert not marker.exists(), "no worker died: the retry path was not exercised"
    _same(_records(local), _records(remote))
