"""Load benchmark of ``layoutverify serve``: concurrent clients, mixed requests, cold and cached.

For each store (SQLite, and PostgreSQL started here from Debian's ``postgresql`` package) a real
server process is started, then ``--clients`` threads (default 8), each on its own keep-alive
connection, send ``--requests`` requests each (default 200): prove / analyze / show over Triton
blocked layouts of shapes up to 128x128 (half prove, a quarter each analyze and show), every
other request a repeat of one asked before. Reported per kind: p50/p99 latency of cold answers
(computed by a worker) and cached ones (answered from the store), requests/s, errors, and lost
results (acknowledged ids that ``GET /v1/results/{id}`` no longer finds), and the latency of one
client alone (no queueing behind the other seven), cold and cached. Then a second run is cut
by ``kill -9`` of the server and its workers halfway; after a restart on the same store every
result acknowledged before the kill must still be there.

Goals (issue 12): cached p50 under 5 ms, uncached prove p99 under 200 ms. Writes
``benchmarks/results/bench_service.json`` (or ``--out``).

``--scaling 1,2,4`` measures the horizontal service instead (issue 26): over one PostgreSQL
store, ``layoutverify serve --processes P`` for each P, loaded with cached requests (a fixed set
of questions asked before) by client processes with several connections each (``--loads CxK``,
default 8x4), warmed up (``--warmup``) before a common window of ``--seconds``; one row per P
(and per ``--listen`` mode and load), with the CPU the server processes, PostgreSQL and the
clients spent in the window (see ``benchmarks/service_scaling.py``). Goal: at least 1.6x from
1 to 2 processes on a machine with the cores for it.
Writes ``benchmarks/results/bench_service_scaling.json`` (or ``--out``).
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from service_harness import Postgres, Server, blocked_pairs, jhttp  # noqa: E402


def percentile(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def questions(n: int, start: int) -> list[tuple[str, dict]]:
    """``n`` distinct (path, body) questions: half prove, a quarter analyze, a quarter show."""
    pairs = blocked_pairs(n, start=start)
    out = []
    for i, p in enumerate(pairs):
        if i % 4 in (0, 2):
            out.append(("/v1/prove", p))
        elif i % 4 == 1:
            out.append(("/v1/analyze", p))
        else:
            out.append(("/v1/show", {"spec": p["a"], "shape": p["shape"]}))
    return out


class Client(threading.Thread):
    """One client on one keep-alive connection: alternately a new question and a repeated one."""

    def __init__(self, port: int, todo: list[tuple[str, dict]], stop: threading.Event | None = None):
        super().__init__()
        self.port, self.todo, self.stop = port, todo, stop
        self.samples: list[tuple[str, bool, float]] = []   # (kind, cached, seconds)
        self.acked: dict[str, str] = {}
        self.errors: list[str] = []

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        for path, body in self.todo:
            if self.stop is not None and self.stop.is_set():
                return
            data = json.dumps(body).encode()
            t0 = time.perf_counter()
            try:
                conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                raw = resp.read()
            except (OSError, http.client.HTTPException) as e:
                if self.stop is None:
                    self.errors.append(f"{type(e).__name__}: {e}")
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
                if self.stop is not None:
                    return
                continue
            dt = time.perf_counter() - t0
            if resp.status != 200:
                self.errors.append(f"{resp.status}: {raw[:200]!r}")
                continue
            doc = json.loads(raw)
            self.samples.append((path.rsplit("/", 1)[1], bool(doc["cached"]), dt))
            if doc.get("id"):
                self.acked[doc["id"]] = doc.get("verdict") or doc["kind"]
        conn.close()


def plan(clients: int, per_client: int, start: int) -> list[list[tuple[str, dict]]]:
    """Each client's requests: even positions new questions, odd positions repeats of earlier ones."""
    fresh = questions(clients * ((per_client + 1) // 2), start)
    todo = []
    for c in range(clients):
        mine = fresh[c::clients]
        seq = []
        for i in range(per_client):
            if i % 2 == 0:
                seq.append(mine[i // 2])
            else:  # a repeat of one of this client's questions already asked (mine[0..i//2])
                seq.append(mine[(i * 7) % (i // 2 + 1)])
        todo.append(seq)
    return todo


def load(server: Server, clients: int, per_client: int, start: int) -> dict:
    todo = plan(clients, per_client, start)
    threads = [Client(server.port, t) for t in todo]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    samples = [s for t in threads for s in t.samples]
    acked = {k: v for t in threads for k, v in t.acked.items()}
    errors = [e for t in threads for e in t.errors]
    lost = [rid for rid in acked if jhttp("GET", f"{server.url}/v1/results/{rid}")[0] != 200]
    out = {"requests": len(samples) + len(errors), "seconds": round(wall, 3),
           "requests_per_s": round((len(samples) + len(errors)) / wall, 1), "errors": len(errors),
           "error_examples": errors[:5], "acknowledged_results": len(acked), "lost_results": len(lost), "latency_ms": {}}
    for kind in ("prove", "analyze", "show", "all"):
        for cached in (False, True):
            xs = [dt for k, c, dt in samples if (kind == "all" or k == kind) and c == cached]
            out["latency_ms"][f"{kind}_{'cached' if cached else 'cold'}"] = {
                "n": len(xs), "p50": _ms(percentile(xs, 0.5)), "p99": _ms(percentile(xs, 0.99)),
                "max": _ms(max(xs) if xs else None)}
    return out


def single_client(server: Server, per_client: int, start: int) -> dict:
    """One client alone (new questions numbered from ``start``, each followed by a repeat): latency
    without queueing behind other clients."""
    c = Client(server.port, plan(1, per_client, start)[0])
    c.run()
    out = {"errors": len(c.errors)}
    for name, pick in (("cached", lambda k, cached: cached), ("cold", lambda k, cached: not cached),
                       ("prove_cold", lambda k, cached: k == "prove" and not cached)):
        xs = [dt for k, cached, dt in c.samples if pick(k, cached)]
        out[name] = {"n": len(xs), "p50": _ms(percentile(xs, 0.5)), "p99": _ms(percentile(xs, 0.99))}
    return out


def kill_during_load(server: Server, clients: int, per_client: int, start: int) -> dict:
    """Cut a load run by ``kill -9`` halfway; restart; count acknowledged results that are missing."""
    stop = threading.Event()
    threads = [Client(server.port, t, stop) for t in plan(clients, per_client, start)]
    for t in threads:
        t.start()
    target = clients * per_client // 2
    deadline = time.monotonic() + 300
    while sum(len(t.samples) for t in threads) < target and time.monotonic() < deadline:
        time.sleep(0.005)
    server.kill()
    stop.set()
    for t in threads:
        t.join(60)
    acked = {k: v for t in threads for k, v in t.acked.items()}
    server.start()
    missing = [rid for rid in acked if jhttp("GET", f"{server.url}/v1/results/{rid}")[0] != 200]
    return {"acknowledged_before_kill": len(acked), "missing_after_restart": len(missing)}


def _ms(x):
    return None if x is None else round(x * 1000, 3)


def run_scaling(args, results_dir: str) -> int:
    """``--scaling``: see :mod:`service_scaling`."""
    import service_scaling
    counts = [int(x) for x in args.scaling.split(",")]
    if args.client_procs or args.connections:
        loads = [(args.client_procs or 8, args.connections or 4)]
    else:
        loads = service_scaling.parse_loads(args.loads)
    listens = [x.strip() for x in args.listen.split(",")]
    if not set(listens) <= {"own", "shared"}:
        raise SystemExit(f"--listen: want own, shared or own,shared, got {args.listen!r}")
    machine = {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
               "loadavg_before": os.getloadavg(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    out = args.out or os.path.join(results_dir, "bench_service_scaling.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)

    def partial(rows):
        with open(out, "w") as f:
            json.dump({"benchmark": "bench_service --scaling", "date": machine.get("date"), "machine": machine, "partial": True, "rows": rows},
                      f, indent=2)

    result = {"benchmark": "bench_service --scaling", "date": machine.get("date"), "machine": machine, "store": "postgresql",
              "method": "per server: every question once into the store, --warmup s of the load, then a window "
                        "of --seconds s (the same for every client); requests completed in the window count; "
                        "speedup = median requests/s over the median of 1 process under the same load",
              "goal": {"speedup_1_to_2": 1.6},
              **service_scaling.scaling(counts, loads, listens, seconds=args.seconds, warmup=args.warmup,
                                        questions=questions(args.questions, start=0), workers=args.workers or 1,
                                        repeats=args.repeats, log=lambda m: print(m, flush=True),
                                        on_row=partial)}
    machine["loadavg_after"] = os.getloadavg()
    print("medians:")
    for t in result["table"]:
        print(f"processes {t['processes']} ({t['listen']}), load {t['load']}: {t['requests_per_s_median']} cached "
              f"requests/s, {t['speedup']}x of 1 process; server processes busy {t['server_cpu_utilization']}")
    main_load = f"{loads[-1][0]}x{loads[-1][1]}"
    two = [t for t in result["table"] if t["processes"] == 2 and t["listen"] == listens[0] and t["load"] == main_load]
    if two:
        result["speedup_1_to_2"] = two[0]["speedup"]
        result["speedup_1_to_2_of"] = {"listen": listens[0], "load": main_load}
        print(f"1 -> 2 processes ({listens[0]} sockets, load {main_load}): {two[0]['speedup']}x (goal 1.6x on a "
              f"machine with the cores for it; this one has {os.cpu_count()})")
    with open(out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {out}")
    return 1 if any(r["errors"] for r in result["rows"]) else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=200, help="requests per client")
    ap.add_argument("--workers", type=int, default=None, help="server worker processes (default: CPUs, at most 8)")
    ap.add_argument("--stores", default="sqlite,postgresql")
    ap.add_argument("--no-kill", action="store_true", help="skip the kill -9 run")
    ap.add_argument("--scaling", metavar="P,P,...", default=None,
                    help="measure cached requests/s of serve --processes P over PostgreSQL instead (e.g. 1,2,4)")
    ap.add_argument("--loads", default="8x4", metavar="CxK,...",
                    help="loads of --scaling: C client processes x K connections each (default 8x4)")
    ap.add_argument("--client-procs", type=int, default=None,
                    help="--scaling: C of a single load CxK (K from --connections; default: --loads)")
    ap.add_argument("--connections", type=int, default=None, help="--scaling: K of that load (default 4)")
    ap.add_argument("--listen", default="shared", help="--scaling, P > 1: shared (one socket for all, the default "
                    "of serve --processes), own (a socket per process, SO_REUSEPORT), or own,shared")
    ap.add_argument("--seconds", type=float, default=10.0, help="seconds of each --scaling window (default 10)")
    ap.add_argument("--warmup", type=float, default=3.0, help="seconds of load before each window (default 3)")
    ap.add_argument("--repeats", type=int, default=1, help="rounds of --scaling (default 1)")
    ap.add_argument("--questions", type=int, default=64, help="distinct cached questions of --scaling (default 64)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    results_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    if args.scaling:
        return run_scaling(args, results_dir)
    args.out = args.out or os.path.join(results_dir, "bench_service.json")
    workers = args.workers or min(8, os.cpu_count() or 1)
    result = {"benchmark": "bench_service", "clients": args.clients, "requests_per_client": args.requests,
              "workers": workers, "date": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()), "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                                              "loadavg_before": os.getloadavg()},
              "goals": {"cached_p50_ms": 5, "cold_prove_p99_ms": 200}, "stores": {}}
    pg = None
    try:
        for i, store in enumerate(args.stores.split(",")):
            if store == "postgresql":
                pg = Postgres().start()
                url = pg.url
            else:
                url = os.path.join(tempfile.mkdtemp(prefix="lv-bench-"), "results.sqlite3")
            server = Server(url, workers=workers).start()
            try:
                # distinct questions: numbers 0..(clients*requests) for the load, then the kill -9 run's
                r = load(server, args.clients, args.requests, start=0)
                r["single_client_ms"] = single_client(server, args.requests, start=args.clients * args.requests)
                if not args.no_kill:
                    r["kill9"] = kill_during_load(server, args.clients, args.requests // 2,
                                                  start=args.clients * args.requests // 2)
            finally:
                server.stop()
            result["stores"][store] = r
            lat = r["latency_ms"]
            print(f"{store}: {r['requests']} requests in {r['seconds']} s ({r['requests_per_s']}/s), errors {r['errors']}, "
                  f"lost {r['lost_results']}; cached p50 {lat['all_cached']['p50']} ms p99 {lat['all_cached']['p99']} ms; "
                  f"cold prove p50 {lat['prove_cold']['p50']} ms p99 {lat['prove_cold']['p99']} ms; one client alone: cached "
                  f"p50 {r['single_client_ms']['cached']['p50']} ms, cold prove p50 "
                  f"{r['single_client_ms']['prove_cold']['p50']} ms p99 {r['single_client_ms']['prove_cold']['p99']} ms"
                  + (f"; kill -9: {r['kill9']['acknowledged_before_kill']} acknowledged, "
                     f"{r['kill9']['missing_after_restart']} missing" if "kill9" in r else ""))
    finally:
        if pg is not None:
            pg.stop()
    result["machine"]["loadavg_after"] = os.getloadavg()
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {args.out}")
    bad = any(r["errors"] or r["lost_results"] or r.get("kill9", {}).get("missing_after_restart")
              for r in result["stores"].values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
