"""Sweeps on Ray: each shard a Ray task of one CPU, sent to a node from that node's region of the
shards (:func:`run_on_ray`) and retried by Ray when its worker dies; its records written by the
task into the results directory, which the nodes share, or returned compressed where a node does
not see it.

``ADDRESS``: ``"local"`` starts a Ray instance of ``workers`` CPUs for this sweep alone (also when
another Ray cluster runs on the host: it is not joined), ``"auto"`` joins the cluster started on
this host with ``ray start``, ``host:port`` joins that cluster. The summary then reports the
cluster's resources (``cluster``: alive nodes, CPUs, custom resources) and ``workers`` is its CPU
count.
"""
from __future__ import annotations

import os

from layoutverify.core.errors import LayoutError

from .schedule import Regions
from .store import write_returned, written
from .work import CRASH_ENV, UNSHARED_ENV, SweepFailed, run_shard

#: resources Ray reports that say nothing about the sweep
_NOISE = ("memory", "object_store_memory")


def _shards_task(spec, out, width, shards):
    """A Ray task: the shards ``[(n, lo, hi), ...]``, their summaries. A shard already written (by
    an earlier try of this task, which Ray reruns when its worker dies) is not evaluated again."""
    import ray
    node = ray.get_runtime_context().get_node_id()
    out_summaries = []
    for n, lo, hi in shards:
        s = written(spec, out, width, n, lo, hi)
        out_summaries.append(s if s is not None else run_shard(spec, out, width, n, lo, hi, node=node))
    return out_summaries


def _worker_env() -> dict:
    """Environment the Ray workers need: the test switches of :mod:`.work` (crash once, directory
    not shared), where set."""
    return {k: os.environ[k] for k in (CRASH_ENV, UNSHARED_ENV) if os.environ.get(k)}


def check_address(address: str) -> None:
    """Refuse at once (before any work) a sweep on Ray without the package, or at an address that
    is malformed or that nothing answers."""
    try:
        import ray  # noqa: F401
    except ImportError:
        raise LayoutError("--ray needs the 'ray' package: pip install 'layoutverify[ray]'") from None
    if address not in ("local", "", "auto"):
        _check_reachable(address)


def _connect(address: str, workers: int) -> bool:
    """Connect (or start a local instance); whether this call started it."""
    import ray
    if ray.is_initialized():
        return False
    kw = {"log_to_driver": False, "runtime_env": {"env_vars": _worker_env()}, "configure_logging": False}
    try:
        if address in ("local", ""):
            ray.init(address="local", num_cpus=workers, include_dashboard=False, **kw)
        else:
            ray.init(address=address, **kw)
    except ConnectionError as e:
        raise LayoutError(f"cannot reach a Ray cluster at {address!r}: {str(e).splitlines()[0][:200]}") from None
    except ValueError as e:
        raise LayoutError(f"bad Ray address {address!r}: {str(e).splitlines()[0][:200]}") from None
    return True


def _check_reachable(address: str, timeout: float = 10.0) -> None:
    """A ``host:port`` that nothing answers is one line at once (Ray itself retries for minutes)."""
    import socket
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host or not 0 < int(port) < 65536:
        raise LayoutError(f"bad Ray address {address!r} (want host:port, or auto)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        raise LayoutError(f"cannot reach a Ray cluster at {address!r}: {e.strerror or type(e).__name__}") from None


def cluster_info(address: str) -> dict:
    import ray
    res = ray.cluster_resources()
    return {"address": address, "nodes": len(_alive_nodes()), "cpus": int(res.get("CPU", 0)),
            "resources": {k: v for k, v in sorted(res.items()) if k not in _NOISE and not k.startswith("node:")}}


def _alive_nodes() -> dict[str, int]:
    """Node id -> CPUs, of the nodes alive now."""
    import ray
    return {n["NodeID"]: int(n.get("Resources", {}).get("CPU", 0)) for n in ray.nodes() if n.get("Alive")}


#: seconds of work a Ray task aims at once shard times are known: the driver spends a few ms of
#: CPU per task (submission, scheduling, the result), a few per cent of this
TASK_SECONDS = 0.1


def run_on_ray(address: str, workers: int, job: tuple, todo: list, retries: int, tally) -> dict:
    """Run the shards ``todo`` (``(n, lo, hi)``) as Ray tasks; the cluster's description.

    Each node with CPUs has a region of the shards in proportion to its CPUs (:mod:`.schedule`)
    and gets two tasks per CPU at first; each task that finishes makes room for the next one,
    from the region of the node where it ran (a soft node affinity: Ray runs it elsewhere if that
    node is gone). So every node works from the start, however fast Ray's leased workers would
    otherwise drain the queue on one node, neighbouring shards (which share layouts) meet on one
    node, faster nodes take more shards, and a lost node's region is taken by the others.

    A task is one shard at first, then as many as take about :data:`TASK_SECONDS` (from the
    shard times seen), at most a quarter of what is left per CPU, so that the driver's CPU time
    per task stays a small part of the work however short a shard is."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    started = _connect(address, workers)
    try:
        info = cluster_info(address)
        nodes = {n: c for n, c in _alive_nodes().items() if c > 0}
        if not nodes:
            raise LayoutError(f"the Ray cluster at {address!r} has no CPUs")
        task = ray.remote(num_cpus=1, max_retries=retries)(_shards_task)
        spec_ref = ray.put(job[0])
        regions = Regions(todo, dict(sorted(nodes.items())))
        cpus = sum(nodes.values())
        inflight: dict = {}
        on_node: dict = {}        # node -> the task bound to it (made once: options() is not cheap)
        timing = [0.0, 0]         # shard seconds seen, shards seen

        def submit(node: str) -> None:
            k = 1
            if timing[1]:
                per_shard = max(timing[0] / timing[1], 1e-4)
                k = max(1, min(round(TASK_SECONDS / per_shard), len(regions) // (4 * cpus)))
            shards = [t for t in (regions.next(node) for _ in range(k)) if t is not None]
            if shards:
                bound = on_node.get(node)
                if bound is None:
                    bound = on_node[node] = task.options(
                        scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=True))
                inflight[bound.remote(spec_ref, job[1], job[2], shards)] = shards

        for node, c in sorted(nodes.items()):
            for _ in range(2 * c):
                submit(node)
        while inflight:
            ready, _ = ray.wait(list(inflight), num_returns=1)
            for ref in ready:
                shards = inflight.pop(ref)
                try:
                    summaries = ray.get(ref)
                except ray.exceptions.RayError as e:
                    first, last = shards[0], shards[-1]
                    raise SweepFailed(f"shards {first[0]}..{last[0]} failed on Ray after {retries} retries: "
                                      f"{str(e).splitlines()[0][:200]}") from None
                for s in summaries:
                    if "records_z" in s:
                        s = write_returned(job[1], job[2], s)
                    tally.add(s, new=True)
                    timing[0] += s.get("seconds") or 0.0
                    timing[1] += 1
                submit(summaries[-1]["worker"].get("node") or next(iter(nodes)))
        return info
    finally:
        if started:
            ray.shutdown()
