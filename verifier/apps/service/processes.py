"""Several service processes on one port (``serve --processes N``), supervised.

The processes accept connections from one listening socket, made here before they start and
kept open here: a process that dies is started again on it, and the connections that arrive
meanwhile wait in its backlog. Every idle process waits in ``accept()``, so a new connection
goes to a process that is free at that instant.

With ``LAYOUTVERIFY_SERVE_OWN_SOCKETS=1`` (Linux) each process has a socket of its own instead,
all bound to the one address with ``SO_REUSEPORT``, and the kernel spreads new connections over
them by a hash of their addresses and ports, whether or not that process is busy. Measured on a
16-core machine (``benchmarks/results/bench_service_scaling.json``, 8 clients with 4
connections each, answers from the cache), one shared socket gave 2.05x the requests per second
of one process with 2 processes and 4.35x with 4; own sockets gave 1.76x and 3.18x, since a
hash puts more connections on some processes than on others. So one socket is the default.
"""
from __future__ import annotations

import multiprocessing as mp
import signal
import socket
import sys
import threading
import time

#: set to "1" to give each process its own ``SO_REUSEPORT`` socket where the kernel balances
#: connections over them (for comparisons: benchmarks/service_scaling.py --listen own)
OWN_SOCKETS_ENV = "LAYOUTVERIFY_SERVE_OWN_SOCKETS"
#: seconds a process has to finish its requests when the service stops, before it is killed
STOP_SECONDS = 10.0


def own_sockets_supported() -> bool:
    """Whether the kernel balances connections over sockets bound with ``SO_REUSEPORT`` (Linux)."""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def bind(host: str, port: int, backlog: int, *, reuse_port: bool) -> socket.socket:
    """A listening TCP socket on ``host:port``. Its protocol is named (``IPPROTO_TCP``): asyncio
    sets ``TCP_NODELAY`` only on connections accepted from such a socket, and without it each
    answer (headers and body written apart) waits for the client's delayed ACK, about 40 ms."""
    family, kind, _, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(addr)
    sock.listen(backlog)
    sock.set_inheritable(True)
    return sock


class Supervisor:
    """Runs ``target(socket)`` in one spawned process per entry of ``sockets`` (one socket may be
    given for every process) until SIGINT or SIGTERM; starts a process that dies again on its
    socket, unless it failed before serving (exit status
    ``startup_failure``: the same would happen again), which stops them all."""

    def __init__(self, target, sockets: list, *, startup_failure: int = 3, log=None):
        self.target, self.sockets = target, sockets
        self.startup_failure = startup_failure
        self.log = log or (lambda msg: print(f"layoutverify: {msg}", file=sys.stderr, flush=True))
        self.ctx = mp.get_context("spawn")
        self.procs: list = []
        self.stop = threading.Event()

    def _start(self, k: int):
        p = self.ctx.Process(target=self.target, args=(self.sockets[k],), daemon=False)
        p.start()
        return p

    def run(self) -> int:
        """Serve until told to stop; the exit status (0, or 1 when a process failed to start)."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: self.stop.set())
        status = 0
        try:
            self.procs = [self._start(k) for k in range(len(self.sockets))]
            while not self.stop.wait(0.5):
                for k, p in enumerate(self.procs):
                    if p.is_alive():
                        continue
                    p.join()
                    if self.stop.is_set():
                        break
                    if p.exitcode == self.startup_failure:
                        self.log(f"service process {p.pid} failed to start (exit {p.exitcode}); stopping")
                        status = 1
                        self.stop.set()
                        break
                    self.log(f"service process {p.pid} ended (exit {p.exitcode}); starting another")
                    self.procs[k] = self._start(k)
        finally:
            self._stop_all()
        return status

    def _stop_all(self) -> None:
        for p in self.procs:
            if p.is_alive():
                p.terminate()          # SIGTERM: uvicorn finishes the requests under way
        deadline = time.monotonic() + STOP_SECONDS
        for p in self.procs:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()
                p.join()
        for s in self.sockets:
            s.close()
