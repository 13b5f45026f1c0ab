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
            if faults and job.get("kind") == "_bloat":  # memory a job keeps after it ends
                _KEPT.append(bytearray(int(job["args"].get("mb", 256)) << 20))
                out = ("ok", {"pid": os.getpid()})
            else:
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
            conn.send(out + (resident_bytes(),))
        except (OSError, EOFError):
            return


_KEPT: list = []   # the ``_bloat`` fault job's allocations


def resident_bytes() -> int:
    """This process's resident set size in bytes (Linux ``/proc/self/statm``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


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

    def call(self, job: dict, deadline: float, recycle_bytes: int | None = None):
        """Send ``job`` and wait at most ``deadline`` seconds for the answer (blocking):
        ``(status, value, resident bytes)``. A worker left with more than ``recycle_bytes`` resident
        is replaced before this returns (the resident size is then ``None``)."""
        try:
            self.conn.send(job)
            if not self.conn.poll(deadline):
                self.restart()
                raise WorkerTimeout(deadline)
            status, value, rss = self.conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            self.restart()
            raise WorkerCrashed() from None
        if recycle_bytes and rss > recycle_bytes:
            self.restart()
            rss = None
        return status, value, rss


#: job priorities: single questions first, then the claims of check jobs
INTERACTIVE, BATCH = 0, 1


class _Ticket:
    __slots__ = ("job", "deadline", "future")

    def __init__(self, job, deadline, future):
        self.job, self.deadline, self.future = job, deadline, future


class Pool:
    """``size`` worker processes shared fairly between clients.

    Scheduling: waiting jobs are kept per client (the caller names it: a peer address, or a
    check job's id) and per priority. A free worker takes the next job of the next client in
    turn (round robin) among single questions (:data:`INTERACTIVE`); only when none waits does it
    take a check job's claim (:data:`BATCH`), and at most ``batch_slots`` workers run claims at
    once, so that a worker stays free for single questions. Admission: at most ``queue`` single
    questions wait in all, at most ``client_queue`` of them from one client; beyond that the
    caller gets :class:`Busy` at once. Claims are never refused: a check job hands in at most
    ``batch_slots`` at a time.

    Memory: a worker whose resident memory exceeds ``recycle_bytes`` after a job (a large job
    leaves the allocator's arenas behind) is replaced by a fresh process before its next job."""

    def __init__(self, size: int, queue: int, store_url: str | None, *, faults: bool = False,
                 on_event=None, memory_bytes: int | None = None, recycle_bytes: int | None = None,
                 client_queue: int | None = None):
        self.size = size
        self.queue = queue
        self.client_queue = client_queue or max(1, queue // 2)
        self.batch_slots = max(1, size - 1)
        self.store_url = store_url
        self.faults = faults
        self.memory_bytes = memory_bytes
        self.recycle_bytes = recycle_bytes
        self.on_event = on_event or (lambda name: None)
        self.running = 0
        self.running_batch = 0
        self.jobs = 0            # jobs handed to a worker (``/metrics``)
        self.recycled = 0        # workers replaced for their memory
        self._waiting: list[dict] = [{}, {}]   # priority -> {client: [tickets]} (insertion order = turn)
        self._idle: list[_Worker] = []
        self._workers: list[_Worker] = []
        self._threads = ThreadPoolExecutor(max_workers=size, thread_name_prefix="layoutverify-pool")

    @property
    def pending(self) -> int:
        """Jobs running or waiting (single questions and claims)."""
        return self.running + self.waiting

    @property
    def waiting(self) -> int:
        """Jobs waiting for a worker, at every priority."""
        return sum(len(q) for level in self._waiting for q in level.values())

    async def start(self) -> None:
        """Start the worker processes and wait until each has answered a ``ping``."""
        ctx = multiprocessing.get_context("spawn")
        loop = asyncio.get_running_loop()
        self._workers = list(await asyncio.gather(*[
            loop.run_in_executor(self._threads, _Worker, ctx, self.store_url, self.faults, self.memory_bytes)
            for _ in range(self.size)]))
        self._idle = list(self._workers)
        # Wait until every worker has imported what it needs (the first request is then not slow).
        await asyncio.gather(*[self.run({"kind": "ping"}, 120.0) for _ in range(self.size)])

    def pids(self) -> list[int]:
        """The process ids of the pool's workers."""
        return [w.proc.pid for w in self._workers if w.proc is not None]

    def _dispatch(self) -> None:
        """Hand idle workers to waiting jobs: single questions by client in turn, then claims."""
        while self._idle:
            level = None
            if self._waiting[INTERACTIVE]:
                level = self._waiting[INTERACTIVE]
            elif self._waiting[BATCH] and self.running_batch < self.batch_slots:
                level = self._waiting[BATCH]
            if level is None:
                return
            client = next(iter(level))
            queue = level.pop(client)
            ticket = queue.pop(0)
            if queue:
                level[client] = queue   # back of the turn
            if ticket.future.done():   # its caller went away
                continue
            worker = self._idle.pop()
            self.running += 1
            if level is self._waiting[BATCH]:
                self.running_batch += 1
                ticket.job["_batch"] = True
            ticket.future.set_result(worker)

    def _release(self, worker: "_Worker", batch: bool) -> None:
        self.running -= 1
        if batch:
            self.running_batch -= 1
        self._idle.append(worker)
        self._dispatch()

    async def run(self, job: dict, deadline: float, *, client: str = "", priority: int = INTERACTIVE) -> dict:
        """Run ``job`` in a worker; raises :class:`Busy`, :class:`WorkerTimeout`, :class:`WorkerCrashed`,
        :class:`BadInput` or :class:`JobFailed`."""
        level = self._waiting[priority]
        if priority == INTERACTIVE:
            mine = len(level.get(client, ()))
            waiting = sum(len(q) for q in level.values())
            if (waiting >= self.queue or mine >= self.client_queue) and not (self._idle and not waiting):
                self.on_event("busy")
                raise Busy()
        loop = asyncio.get_running_loop()
        ticket = _Ticket(dict(job), deadline, loop.create_future())
        level.setdefault(client, []).append(ticket)
        self._dispatch()
        try:
            worker = await ticket.future
        except asyncio.CancelledError:
            if ticket.future.done() and not ticket.future.cancelled():
                self._release(ticket.future.result(), ticket.job.get("_batch", False))
            else:
                ticket.future.cancel()
                queue = level.get(client)
                if queue and ticket in queue:
                    queue.remove(ticket)
                    if not queue:
                        del level[client]
            raise
        batch = ticket.job.pop("_batch", False)
        self.jobs += 1
        call = loop.run_in_executor(self._threads, worker.call, ticket.job, deadline, self.recycle_bytes)
        try:
            status, value, rss = await asyncio.shield(call)
        except asyncio.CancelledError:
            # the caller went away; the worker is still busy until its thread returns
            call.add_done_callback(lambda _f: (_f.exception(), self._release(worker, batch)))
            raise
        except WorkerTimeout:
            self._release(worker, batch)
            self.on_event("worker_timeout")
            raise
        except WorkerCrashed:
            self._release(worker, batch)
            self.on_event("worker_crash")
            raise
        except BaseException:
            self._release(worker, batch)
            raise
        self._release(worker, batch)
        if rss is None:
            self.recycled += 1
        if status == "ok":
            return value
        if status == "bad":
            raise BadInput(value)
        raise JobFailed(value)

    def close(self) -> None:
        """Stop every worker and the pool's threads."""
        for w in self._workers:
            try:
                w.stop()
            except Exception:
                pass
        self._threads.shutdown(wait=False, cancel_futures=True)
