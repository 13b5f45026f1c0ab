"""``layoutverify sweep --ray`` on a Ray cluster of three nodes on this machine (a head without
CPUs and two worker nodes, each with its own resources and temp folder), started here with
``ray start``: the records equal the local run's byte for byte, the summary reports the cluster's
resources and both worker nodes did shards; a worker killed mid-task is retried by Ray; records
come back to the coordinator where a node does not see the results directory; ``--ray`` without
an address starts its own Ray instance even with a cluster running on the host.

Robust on a loaded 2-core machine: free ports only, small object stores, generous timeouts. Each
node runs as ``ray start --block`` in its own process group, which teardown ends (SIGTERM, then
SIGKILL) and then checks empty: the processes of these nodes, and only those, are stopped (``ray
stop`` would end every Ray process on the host, other users' clusters included).
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

SPEC = """
task = "prove"
[[triton]]
a = ["blocked"]
b = ["nvidia_mma", "dot_op", "slice", "linear"]
shapes = [[64, 64], [32, 32]]
num_warps = [4]
versions = ["3.9"]
limit = 600
[triton.blocked]
size_per_thread = [[1, 4], [2, 2]]
threads_per_warp = [[4, 8], [8, 4]]
"""

#: the same on every node and client: Ray 2.5x turns token authentication on for a head when
#: ~/.ray/auth_token exists (left by any earlier local ray.init), which clients then fail
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "PYTHONWARNINGS": "ignore"}
#: `ray start` run by this interpreter, so that the raylets start workers with it (and this
#: checkout's layoutverify), whatever `ray` on PATH would run
RAY_CLI = [sys.executable, "-m", "ray.scripts.scripts"]
OBJECT_STORE = str(80 * 1024 * 1024)


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _env() -> dict:
    return dict(os.environ, **RAY_ENV)


class Cluster:
    """Nodes started with ``ray start --block``, each its own process group."""

    def __init__(self, root: Path):
        self.root = root
        self.procs: list[subprocess.Popen] = []
        self.address: str | None = None

    def start(self, name: str, *args: str) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "w")
        proc = subprocess.Popen([*RAY_CLI, "start", "--block", "--node-ip-address=127.0.0.1",
                                 f"--temp-dir={self.root / name}", f"--object-store-memory={OBJECT_STORE}",
                                 f"--dashboard-agent-listen-port={_free_port()}", "--disable-usage-stats", *args],
                                stdout=log, stderr=subprocess.STDOUT, env=_env(), start_new_session=True)
        log.close()
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        try:
            return (self.root / f"{name}.log").read_text()[-3000:]
        except OSError:
            return ""

    def wait_for_head(self, timeout: float = 180) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(r"--address='([0-9.]+:\d+)'", self.log("head"))
            if m:
                return m.group(1)
            if self.procs[0].poll() is not None:
                break
            time.sleep(0.5)
        raise RuntimeError("the Ray head did not start:\n" + self.log("head"))

    def probe(self) -> dict:
        p = subprocess.run([sys.executable, "-c", f"import ray, json; ray.init(address={self.address!r}, "
                            "log_to_driver=False); print(json.dumps({'cpu': ray.cluster_resources().get('CPU', 0), "
                            "'nodes': sum(n['Alive'] for n in ray.nodes())}))"],
                           capture_output=True, text=True, timeout=120, env=_env())
        try:
            return json.loads(p.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return {}

    def stop(self) -> list[int]:
        """End every node's process group; the pids still alive after it (none expected)."""
        groups = [p.pid for p in self.procs]
        for pid in reversed(groups):
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _alive(groups):
            time.sleep(0.5)
        for pid in groups:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        time.sleep(1)
        return _alive(groups)


def _alive(groups) -> list[int]:
    """Pids of live (not zombie) processes in the process groups ``groups``."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) in groups:
            out.append(int(d.name))
    return out


def _client_port_args() -> list[str]:
    """Where Ray Client's packages are installed, a head serves it on the fixed port 10001 unless
    told otherwise (and refuses the option where they are not)."""
    try:
        from ray._private.utils import get_ray_client_dependency_error
        available = get_ray_client_dependency_error() is None
    except ImportError:
        available = False
    return [f"--ray-client-server-port={_free_port()}"] if available else []


@pytest.fixture(scope="module")
def cluster():
    root = Path(tempfile.mkdtemp(prefix="lvray-"))   # short: Ray's socket paths live under it
    c = Cluster(root)
    try:
        c.start("head", "--head", "--port=0", "--num-cpus=0", "--include-dashboard=false",
                f"--dashboard-port={_free_port()}", *_client_port_args())
        c.address = c.wait_for_head()
        c.start("node_a", f"--address={c.address}", "--num-cpus=1", '--resources={"node_a": 1}')
        c.start("node_b", f"--address={c.address}", "--num-cpus=2", '--resources={"node_b": 1}')
        deadline = time.monotonic() + 240
        state = {}
        while time.monotonic() < deadline:
            state = c.probe()
            if state.get("nodes") == 3 and state.get("cpu") == 3:
                break
            time.sleep(2)
        else:
            pytest.fail(f"the Ray cluster did not come up ({state}):\n" + "\n".join(
                c.log(n) for n in ("head", "node_a", "node_b")))
        yield c
    finally:
        left = c.stop()
        import shutil
        shutil.rmtree(root, ignore_errors=True)
        assert not left, f"Ray processes left behind: {left}"


def _run(*args, env_extra=None, timeout=600) -> subprocess.CompletedProcess:
    env = _env()
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "layoutverify", "sweep", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env)


def _text(out: Path) -> str:
    return "".join(p.read_text() for p in sorted((out / "shards").glob("*.jsonl")))


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """The spec and its records from a local run (2 processes)."""
    d = tmp_path_factory.mktemp("local")
    spec = d / "s.toml"
    spec.write_text(SPEC)
    p = _run(spec, "-o", d / "local", "-j", "2")
    assert p.returncode == 0, p.stderr[-2000:]
    text = _text(d / "local")
    assert text.count("\n") == 600
    return spec, text


def test_ray_cluster_of_three_nodes_equals_local(cluster, local, tmp_path):
    spec, want = local
    out = tmp_path / "ray"
    p = _run(spec, "-o", out, "--ray", cluster.address, "--chunk", "25", "--json")
    assert p.returncode == 0, p.stderr[-2000:]
    s = json.loads(p.stdout)
    assert s["backend"] == "ray" and s["points"] == 600 and s["errors"] == 0 and s["complete"]
    # the cluster's resources, not this machine's core count
    c = s["cluster"]
    assert s["workers"] == c["cpus"] == 3 and c["nodes"] == 3
    assert c["resources"]["node_a"] == 1 and c["resources"]["node_b"] == 1
    # the head has no CPUs: every shard ran on one of the two worker nodes, and both took some
    assert c["nodes_used"] == 2
    assert _text(out) == want


def test_ray_retries_a_task_whose_worker_died(cluster, local, tmp_path):
    """The first shard to start exits its Ray worker process; Ray reruns the task and the
    records are still complete and equal to the local run's."""
    spec, want = local
    marker = tmp_path / "crash-once"
    marker.write_text("")
    out = tmp_path / "ray"
    p = _run(spec, "-o", out, "--ray", cluster.address, "--chunk", "50",
             env_extra={"LAYOUTVERIFY_SWEEP_CRASH_ONCE": str(marker)})
    assert p.returncode == 0, p.stderr[-2000:]
    assert not marker.exists(), "no worker died: the retry path was not exercised"
    assert _text(out) == want


def test_records_come_back_from_nodes_without_the_shared_path(cluster, local, tmp_path):
    """Nodes that do not see the results directory return their records (compressed); the
    coordinator writes them: the same records, and a resumed run skips those shards."""
    spec, want = local
    out = tmp_path / "ray"
    p = _run(spec, "-o", out, "--ray", cluster.address, "--chunk", "100", "--json",
             env_extra={"LAYOUTVERIFY_SWEEP_UNSHARED": "1"})
    assert p.returncode == 0, p.stderr[-2000:]
    assert _text(out) == want
    (out / "shards" / "000002.json").unlink()
    p = _run(spec, "-o", out, "--ray", cluster.address, "--json")
    assert p.returncode == 0, p.stderr[-2000:]
    s = json.loads(p.stdout)
    assert s["evaluated"] == 100 and s["skipped_done"] == 500
    assert _text(out) == want


def test_ray_local_starts_its_own_instance_beside_a_running_cluster(cluster, local, tmp_path):
    """``--ray`` without an address, with a cluster running on the host and named by RAY_ADDRESS
    (where ``ray.init()`` would join it): a Ray instance of ``-j`` CPUs is started for the sweep
    and gone afterwards."""
    spec, want = local
    out = tmp_path / "ray"
    tmp = Path(tempfile.mkdtemp(prefix="lvrl-"))
    try:
        p = _run(spec, "-o", out, "--ray", "-j", "2", "--json",
                 env_extra={"RAY_ADDRESS": cluster.address, "RAY_TMPDIR": str(tmp)})
        assert p.returncode == 0, p.stderr[-2000:]
        s = json.loads(p.stdout)
        assert s["cluster"]["cpus"] == s["workers"] == 2 and s["cluster"]["nodes"] == 1
        assert "node_a" not in s["cluster"]["resources"]
        assert _text(out) == want
        assert (tmp / "ray").is_dir(), "the sweep's Ray instance did not use RAY_TMPDIR"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _using(tmp):
            time.sleep(1)
        assert not _using(tmp), "the sweep's own Ray instance outlived it"
    finally:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)


def _using(folder: Path) -> list[int]:
    """Pids of live processes whose command line names ``folder``."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if str(folder).encode() in (d / "cmdline").read_bytes():
                    out.append(int(d.name))
            except OSError:
                pass
    return out
