"""Sweeps on Ray: each shard a Ray task (one CPU, spread over the nodes), retried by Ray when its
worker dies; its records written by the task into the results directory, which the nodes
share, or returned compressed where a node does not see it.

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
from .store import write_returned
from .work import CRASH_ENV, UNSHARED_ENV, SweepFailed, run_shard

#: resources Ray reports that say nothing about the sweep
_NOISE = ("memory", "object_store_memory")


def _shard_task(spec, out, width, n, lo, hi):
    import ray
    return run_shard(spec, out, width, n, lo, hi, node=ray.get_runtime_context().get_node_id())


def _worker_env() -> dict:
    """Environment the Ray workers need: the crash marker of the retry test, if set."""
    return {k: os.environ[k] for k in (CRASH_ENV, UNSHARED_ENV) if os.environ.get(k)}


def _connect(address: str, workers: int) -> bool:
    """Connect (or start a local instance); whether this call started it."""
    try:
        import ray
    except ImportError:
        raise LayoutError("--ray needs the 'ray' package: pip install 'layoutverify[ray]'") from None
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


def cluster_info(address: str) -> dict:
    import ray
    res = ray.cluster_resources()
    return {"address": address, "nodes": len(_alive_nodes()), "cpus": int(res.get("CPU", 0)),
            "resources": {k: v for k, v in sorted(res.items()) if k not in _NOISE and not k.startswith("node:")}}


def _alive_nodes() -> dict[str, int]:
    """Node id -> CPUs, of the nodes alive now."""
    import ray
    return {n["NodeID"]: int(n.get("Resources", {}).get("CPU", 0)) for n in ray.nodes() if n.get("Alive")}


def run_on_ray(address: str, workers: int, job: tuple, todo: list, retries: int, tally) -> dict:
    """Run the shards ``todo`` (``(n, lo, hi)``) as Ray tasks; the cluster's description.

    Each node with CPUs has a region of the shards in proportion to its CPUs (:mod:`.schedule`)
    and gets two shards per CPU at first; each shard that finishes makes room for the next one of
    the region of the node where it ran (a soft node affinity: Ray runs it elsewhere if that node
    is gone). So every node works from the start, however fast Ray's leased workers would
    otherwise drain the queue on one node, neighbouring shards (which share layouts) meet on
    one node, faster nodes take more shards, and a lost node's region is taken by the others."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    started = _connect(address, workers)
    try:
        info = cluster_info(address)
        nodes = {n: c for n, c in _alive_nodes().items() if c > 0}
        if not nodes:
            raise LayoutError(f"the Ray cluster at {address!r} has no CPUs")
        task = ray.remote(num_cpus=1, max_retries=retries)(_shard_task)
        spec_ref = ray.put(job[0])
        regions = Regions(todo, dict(sorted(nodes.items())))
        inflight: dict = {}

        def submit(node: str) -> None:
            t = regions.next(node)
            if t is not None:
                strategy = NodeAffinitySchedulingStrategy(node, soft=True)
                inflight[task.options(scheduling_strategy=strategy).remote(spec_ref, job[1], job[2], *t)] = t

        for node, cpus in sorted(nodes.items()):
            for _ in range(2 * cpus):
                submit(node)
        while inflight:
            ready, _ = ray.wait(list(inflight), num_returns=1)
            for ref in ready:
                t = inflight.pop(ref)
                try:
                    s = ray.get(ref)
                except ray.exceptions.RayError as e:
                    raise SweepFailed(f"shard {t[0]} (points {t[1]}..{t[2] - 1}) failed on Ray after {retries} "
                                      f"retries: {str(e).splitlines()[0][:200]}") from None
                if "records_z" in s:
                    s = write_returned(job[1], job[2], s)
                tally.add(s, new=True)
                submit(s["worker"].get("node") or next(iter(nodes)))
        return info
    finally:
        if started:
            ray.shutdown()
