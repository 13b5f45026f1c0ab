"""``bench_service.py --scaling``: cached requests per second of ``layoutverify serve --processes
P`` over one PostgreSQL store, for each P, and what the machine did meanwhile.

**The load.** ``C`` client processes (spawned; a client in threads would measure its own
interpreter lock), each running ``K`` connections at once on an event loop (a minimal HTTP/1.1
client: one request per connection at a time, keep-alive, each connection reopened after 50
requests so that new connections keep arriving at the server processes). Every request is one
of a fixed set of questions asked before (so every answer is cached), and an answer counts when
it is a 200 with ``"cached": true``. A load is written ``CxK`` (``--loads 8x1,8x4``): 8x1 is the
load of the first device run (eight connections in all); 8x4 keeps 32 requests under way, so that
every server process stays busy however the connections happen to be spread.

**Steady state, and only it, is measured.** Per server: every question is asked once on one
connection (into the store), then the load runs for at least ``--warmup`` seconds (every process
answers every question once from the store and keeps the answer in its memory; ``warmup_s`` is
how long it ran before the window) and then for ``--seconds`` seconds, the window: the requests that complete inside it count, and the window is
the same for every client (one monotonic clock). During the window the benchmark reads the CPU
time of each server process, of PostgreSQL and of the clients (``/proc``): the store's CPU per
request shows whether answers came from memory (about 0) or from the store; the server
processes' utilization shows whether the connections were spread (each near 1.0) or piled on one
(one near 1.0, the others lower); the clients' utilization, whether the load itself was the limit.

**Listening.** ``--listen shared`` (one socket all processes accept from: the default of ``serve
--processes``), ``own`` (a socket per process, ``SO_REUSEPORT``, with
``LAYOUTVERIFY_SERVE_OWN_SOCKETS=1``), or both (``own,shared``), for P > 1.

Rows: one per (P, listening, load, round); ``--repeats`` rounds, each in the same order; the
table gives per (P, listening, load) the median requests/s and the ratio to the median of P = 1
under the same load.
"""
from __future__ import annotations

import asyncio
import http.client
import json
import multiprocessing
import os
import socket
import statistics
import time

from service_harness import Postgres, Server

#: requests on one connection before the client closes it and opens another
PER_CONNECTION = 50


# -- /proc ---------------------------------------------------------------------------------------
def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (its threads included), 0 once it is gone."""
    s = _stat(pid)
    return (int(s[11]) + int(s[12])) / os.sysconf("SC_CLK_TCK") if s else 0.0


def children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            s = _stat(int(d))
            if s and int(s[1]) == pid:
                out.append(int(d))
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def service_pids(server: Server, processes: int) -> list[int]:
    """The processes that answer HTTP: the server itself for one process, else the processes its
    supervisor started (not multiprocessing's resource tracker)."""
    if processes == 1:
        return [server.proc.pid]
    deadline = time.monotonic() + 60
    while True:
        pids = [p for p in children(server.proc.pid) if "resource_tracker" not in _cmdline(p)]
        if len(pids) >= processes or time.monotonic() > deadline:
            return sorted(pids)
        time.sleep(0.2)


def postgres_pids(pg: Postgres) -> list[int]:
    with open(os.path.join(pg.dir, "data", "postmaster.pid")) as f:
        postmaster = int(f.readline())
    return [postmaster] + children(postmaster)


# -- the client ------------------------------------------------------------------------------------
async def _connection(port: int, todo: list, k: int, start: float, end: float, stats: dict) -> None:
    """One connection at a time (reopened every :data:`PER_CONNECTION` requests), requests back to
    back until ``end``; completions inside [start, end] counted into ``stats``."""
    i = k * 7919
    while time.monotonic() < end:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            for _ in range(PER_CONNECTION):
                if time.monotonic() >= end:
                    break
                path, body = todo[i % len(todo)]
                i += 1
                t0 = time.monotonic()
                writer.write(b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(body), body))
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                raw = await reader.readexactly(length)
                t1 = time.monotonic()
                if start <= t1 <= end:
                    ok = head[9:12] == b"200" and (b'"cached":true' in raw or b'"cached": true' in raw)
                    if ok:
                        stats["latencies"].append(t1 - t0)
                    else:
                        stats["errors"] += 1
                elif t1 < start:
                    stats["before"] += 1
        except (OSError, asyncio.IncompleteReadError, ValueError) as e:
            if start <= time.monotonic() <= end:
                stats["errors"] += 1
                stats["error_examples"].append(f"{type(e).__name__}: {e}"[:200])
        finally:
            writer.close()


def client_process(port: int, todo: list, connections: int, index: int, start: float, end: float, out) -> None:
    """A client process: ``connections`` connections until ``end``; puts its counts, latencies and
    its CPU seconds during the window."""
    stats = {"latencies": [], "errors": 0, "before": 0, "error_examples": [], "began": time.monotonic()}

    async def main():
        async def cpu_mark():
            await asyncio.sleep(max(0.0, start - time.monotonic()))
            stats["cpu0"] = time.process_time()
        mark = asyncio.ensure_future(cpu_mark())
        await asyncio.gather(*(_connection(port, todo, index * connections + c, start, end, stats)
                               for c in range(connections)))
        await mark
        stats["cpu1"] = time.process_time()

    asyncio.run(main())
    out.put(stats)


# -- one row ---------------------------------------------------------------------------------------
def fill_store(server: Server, todo: list) -> None:
    """Every question once, on one connection: computed by a worker (the first time) or found in
    the store, so that the load afterwards only repeats questions the store has."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    for path, body in todo:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            raise RuntimeError(f"{path}: HTTP {resp.status}")
    conn.close()


def measure(server: Server, pg: Postgres, processes: int, todo: list, client_procs: int, connections: int,
            warmup: float, seconds: float) -> dict:
    """The load ``client_procs`` x ``connections`` on ``server``: warm-up, then the window."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    spawn_allowance = 2.0       # the clients start their load as soon as they are up
    start = time.monotonic() + spawn_allowance + warmup
    end = start + seconds
    clients = [ctx.Process(target=client_process, args=(server.port, todo, connections, k, start, end, out))
               for k in range(client_procs)]
    for p in clients:
        p.start()
    pids = service_pids(server, processes)
    store = postgres_pids(pg)
    time.sleep(max(0.0, start - time.monotonic()))
    s0 = {p: cpu_seconds(p) for p in pids}
    g0 = sum(cpu_seconds(p) for p in store)
    time.sleep(max(0.0, end - time.monotonic()))
    s1 = {p: cpu_seconds(p) for p in pids}
    g1 = sum(cpu_seconds(p) for p in store)
    got = [out.get(timeout=120) for _ in clients]
    for p in clients:
        p.join(30)
    lat = [x for g in got for x in g["latencies"]]
    errors = sum(g["errors"] for g in got)
    n = len(lat)
    util = sorted((round((s1[p] - s0[p]) / seconds, 3) for p in pids), reverse=True)
    server_cpu = sum(s1[p] - s0[p] for p in pids)
    return {"requests": n + errors, "errors": errors, "error_examples": [e for g in got for e in g["error_examples"]][:5],
            "requests_per_s": round(n / seconds, 1),
            "p50_ms": _ms(_percentile(lat, 0.5)), "p99_ms": _ms(_percentile(lat, 0.99)),
            "warmup_s": round(start - max(g["began"] for g in got), 2),
            "warmup_requests": sum(g["before"] for g in got),
            "server_cpu_utilization": util,
            "server_cpu_ms_per_request": round(1000 * server_cpu / n, 3) if n else None,
            "store_cpu_ms_per_request": round(1000 * (g1 - g0) / n, 4) if n else None,
            "client_cpu_utilization_max": round(max((g["cpu1"] - g["cpu0"]) / seconds for g in got), 3)}


def _percentile(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def _ms(x):
    return None if x is None else round(x * 1000, 3)


def parse_loads(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        c, _, k = part.strip().lower().partition("x")
        if not (c.isdigit() and k.isdigit() and int(c) > 0 and int(k) > 0):
            raise ValueError(f"bad load {part!r} (want CLIENTSxCONNECTIONS, e.g. 8x4)")
        out.append((int(c), int(k)))
    return out


def scaling(process_counts: list[int], loads: list[tuple[int, int]], listens: list[str], *, seconds: float,
            warmup: float, questions: list, workers: int, repeats: int = 1, log=print, on_row=None) -> dict:
    """Every row (see the module docstring) and the table of medians; ``on_row(rows)`` after each
    row (to keep what was measured should the run be cut short)."""
    todo = [(path, json.dumps(body).encode()) for path, body in questions]
    pg = Postgres().start()
    rows = []
    try:
        for rnd in range(repeats):
            for procs in process_counts:
                for listen in (["single"] if procs == 1 else listens):
                    env = {"LAYOUTVERIFY_SERVE_OWN_SOCKETS": "1"} if listen == "own" else {}
                    args = ["--processes", str(procs)] if procs > 1 else []
                    server = Server(pg.url, workers=workers, args=args, env=env).start()
                    try:
                        fill_store(server, todo)
                        for clients, conns in loads:
                            r = measure(server, pg, procs, todo, clients, conns, warmup, seconds)
                            r = {"round": rnd, "processes": procs, "listen": listen, "load": f"{clients}x{conns}",
                                 "client_processes": clients, "connections_per_client": conns,
                                 "workers_per_process": workers, "seconds": seconds, **r,
                                 "load_average": [round(x, 2) for x in os.getloadavg()]}
                            rows.append(r)
                            if on_row is not None:
                                on_row(rows)
                            log(f"round {rnd} processes {procs} ({listen}), load {r['load']}: {r['requests_per_s']} "
                                f"cached requests/s, p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms, errors {r['errors']}; "
                                f"server processes busy {r['server_cpu_utilization']}, "
                                f"{r['server_cpu_ms_per_request']} ms CPU a request; store "
                                f"{r['store_cpu_ms_per_request']} ms a request; clients busy at most "
                                f"{r['client_cpu_utilization_max']}; warm-up {r['warmup_s']} s")
                    finally:
                        server.stop()
    finally:
        pg.stop()
    return {"rows": rows, "table": table(rows)}


def table(rows: list[dict]) -> list[dict]:
    out = []
    keys = list(dict.fromkeys((r["processes"], r["listen"], r["load"]) for r in rows))
    for procs, listen, load in keys:
        rs = [r for r in rows if (r["processes"], r["listen"], r["load"]) == (procs, listen, load)]
        base = [r["requests_per_s"] for r in rows if r["processes"] == 1 and r["load"] == load]
        med = statistics.median(r["requests_per_s"] for r in rs)
        out.append({"processes": procs, "listen": listen, "load": load, "rounds": len(rs),
                    "requests_per_s_median": round(med, 1),
                    "requests_per_s_runs": [r["requests_per_s"] for r in rs],
                    "speedup": round(med / statistics.median(base), 2) if base else None,
                    "server_cpu_utilization": rs[len(rs) // 2]["server_cpu_utilization"],
                    "errors": sum(r["errors"] for r in rs)})
    return out
