"""Several service processes on one port (``serve --processes N``), each on its own listening
socket.

uvicorn's own process manager binds one socket that every process accepts from. The kernel then
wakes every process for each new connection and the first to call ``accept()`` takes it; which
one is first depends on who is running at that instant, so connections pile up on some processes
while others idle (keep-alive connections stay where they landed). Here each process listens on
its own socket, all bound to the one address with ``SO_REUSEPORT`` (Linux), and the kernel
spreads new connections over the sockets by a hash of their addresses and ports, the same way
whichever process is busy. The sockets are made here, before the processes start, and kept open
here: a process that dies is started again on its socket, where the connections that arrived
meanwhile wait.

Elsewhere (no ``SO_REUSEPORT`` load balancing) the processes share one socket, as with uvicorn.
"""
from __future__ import annotations

import multiprocessing as mp
import signal
import socket
import sys
import threading
import time

#: set to "1" to make the processes share one listening socket even where each could have its
#: own (for comparisons: benchmarks/bench_service.py --scaling --listen shared)
SHARED_SOCKET_ENV = "LAYOUTVERIFY_SERVE_SHARED_SOCKET"
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
    """Runs ``target(socket)`` in one spawned process per socket until SIGINT or SIGTERM; starts
    a process that dies again on its socket, unless it failed before serving (exit status
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
