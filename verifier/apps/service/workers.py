"""A bounded pool of worker processes that parse layouts and run the proofs.

Every request that parses a layout runs in a worker process, never in the server: a proof that
runs past its time limit is stopped by killing its worker, and a native call that crashes takes
down only its worker. Either way a fresh worker takes the dead one's place and the server keeps
serving.

* ``size`` workers run at once; at most ``queue`` more requests wait for one. A request beyond
  that is refused at once (:class:`Busy`, HTTP 503 with ``Retry-After``).
* Each job has a wall-clock deadline (:func:`deadline_for`) on top of the solver's own per-query
  time limit; past it the worker is killed (:class:`WorkerTimeout`).
* Workers are started with ``spawn`` (no state forked from the server's threads) and each opens
  its own connection to the store, so that a question already answered under another spelling
  is found by fingerprint before any proof runs.

A job is ``{"kind": ..., "args": {...}}``; :func:`handle` runs it in the worker and returns a
JSON-able dict, or raises :class:`~layoutverify.core.errors.LayoutError` for bad input.
"""
from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from layoutverify.core.errors import LayoutError

from .version import tool_version

#: Set to 1 in the environment of ``layoutverify serve`` to accept the test-only jobs ``_crash``
#: (the worker exits at once, as a native crash would), ``_hang`` (it sleeps) and ``_hog`` (it
#: asks for more memory than its cap): the tests use them to show that none reaches the server.
FAULTS_ENV = "LAYOUTVERIFY_SERVICE_FAULTS"


class Busy(Exception):
    """Every worker is busy and the queue is full."""


class WorkerCrashed(Exception):
    """The worker process died while running the job."""


class WorkerTimeout(Exception):
    """The job ran past its deadline; its worker was killed."""


class JobFailed(Exception):
    """The job raised an unexpected exception (a bug of ours); ``args[0]`` is one line."""


class BadInput(Exception):
    """The job refused its input; ``args[0]`` is the error object (``{"error": {...}}``)."""


def deadline_for(timeout_ms: int) -> float:
    """Seconds a job may take: parsing and several solver queries, each limited to ``timeout_ms``."""
    return 10.0 + 4 * timeout_ms / 1000.0


# -- the worker process -------------------------------------------------------------------------
def _worker_main(conn, store_url: str | None, faults: bool, version: str, memory_bytes: int | None = None) -> None:
    """Loop: receive a job, answer ``("ok", dict)``, ``("bad", error object)`` or ``("bug", line)``."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the server, which stops the workers
    if memory_bytes:  # address-space cap: a runaway job fails (MemoryError) or dies, the host does not swap
        try:
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        except (ImportError, ValueError, OSError):
            pass
    from layoutverify.apps import api
    global _TOOL_VERSION
    _TOOL_VERSION = version  # the server's: store keys must agree even if the sources change meanwhile
    store = None
    try:
        from layoutverify.apps.service.store import Store
        store = Store(store_url, connections=1)
    except Exception:  # the server reports store problems; a worker without one just proves
        store = None
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        try:
            if faults and job.get("kind") == "_crash":
                os._exit(99)
            if faults and job.get("kind") == "_hang":
                time.sleep(3600)
            if faults and job.get("kind") == "_hog":  # more memory than the worker may have
                bytearray(2 * (memory_bytes or 1 << 40))
            out = ("ok", handle(job, store))
        except LayoutError as e:
            out = ("bad", api.error_object(e))
        except RecursionError as e:
            out = ("bad", api.error_object(e))
        except MemoryError:
            out = ("bad", {"error": {"code": "too_large", "message": "out of memory (input too large)",
                                     "token": None}})
        except Exception as e:  # a bug of ours: one line back to the server
            out = ("bug", f"{type(e).__name__}: {e}")
        try:
            conn.send(out)
        except (OSError, EOFError):
            return


def handle(job: dict, store=None) -> dict:
    """Run one job (in a worker). See the module docstring."""
    from . import jobs
    kind = job.get("kind")
    fn = jobs.HANDLERS.get(kind)
    if fn is None:
        raise LayoutError(f"unknown job kind {kind!r}")
    return fn(job.get("args") or {}, store)


class _Worker:
    """One worker process and the pipe to it; used by one thread at a time."""

    def __init__(self, ctx, store_url, faults, memory_bytes=None):
        self.ctx, self.store_url, self.faults, self.memory_bytes = ctx, store_url, faults, memory_bytes
        self.proc = None
        self.conn = None
        self.start()

    def start(self) -> None:
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker_main, name="layoutverify-worker", daemon=True,
                                     args=(child, self.store_url, self.faults, tool_version(), self.memory_bytes))
        self.proc.start()
        child.close()
        self.conn = parent

    def stop(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            self.proc.kill()
        if self.proc is not None:
            self.proc.join(5)
        try:
            self.conn.close()
        except OSError:
            pass

    def restart(self) -> None:
        self.stop()
        self.start()

    def call(self, job: dict, deadline: float):
        """Send ``job`` and wait at most ``deadline`` seconds for the answer (blocking)."""
        try:
            self.conn.send(job)
            if not self.conn.poll(deadline):
                self.restart()
                raise WorkerTimeout(deadline)
            return self.conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            self.restart()
            raise WorkerCrashed() from None


class Pool:
    """``size`` worker processes and a queue of at most ``queue`` waiting jobs."""

    def __init__(self, size: int, queue: int, store_url: str | None, *, faults: bool = False,
                 on_event=None, memory_bytes: int | None = None):
        self.size = size
        self.queue = queue
        self.store_url = store_url
        self.faults = faults
        self.memory_bytes = memory_bytes
        self.on_event = on_event or (lambda name: None)
        self.pending = 0
        self.running = 0
        self._idle: asyncio.Queue | None = None
        self._workers: list[_Worker] = []
        self._threads = ThreadPoolExecutor(max_workers=size, thread_name_prefix="layoutverify-pool")
        self._lock = threading.Lock()

    async def start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        loop = asyncio.get_running_loop()
        self._workers = await asyncio.gather(*[
            loop.run_in_executor(self._threads, _Worker, ctx, self.store_url, self.faults, self.memory_bytes)
            for _ in range(self.size)])
        self._idle = asyncio.Queue()
        for w in self._workers:
            self._idle.put_nowait(w)
        # Wait until every worker has imported what it needs (the first request is then not slow).
        await asyncio.gather(*[self.run({"kind": "ping"}, 120.0) for _ in range(self.size)])

    def pids(self) -> list[int]:
        return [w.proc.pid for w in self._workers if w.proc is not None]

    async def run(self, job: dict, deadline: float) -> dict:
        """Run ``job`` in a worker; raises :class:`Busy`, :class:`WorkerTimeout`, :class:`WorkerCrashed`,
        :class:`BadInput` or :class:`JobFailed`."""
        if self.pending >= self.size + self.queue:
            self.on_event("busy")
            raise Busy()
        self.pending += 1
        try:
            worker = await self._idle.get()
            self.running += 1
            try:
                loop = asyncio.get_running_loop()
                status, value = await loop.run_in_executor(self._threads, worker.call, job, deadline)
            except WorkerTimeout:
                self.on_event("worker_timeout")
                raise
            except WorkerCrashed:
                self.on_event("worker_crash")
                raise
            finally:
                self.running -= 1
                self._idle.put_nowait(worker)
        finally:
            self.pending -= 1
        if status == "ok":
            return value
        if status == "bad":
            raise BadInput(value)
        raise JobFailed(value)

    def close(self) -> None:
        for w in self._workers:
            try:
                w.stop()
            except Exception:
                pass
        self._threads.shutdown(wait=False, cancel_futures=True)
