"""Corpus checks as jobs (``POST /v1/check``): claims run one by one at low priority, every
outcome is committed as it comes, and an interrupted job resumes where it stopped. A whole-kernel
validation (``POST /v1/validate``) is a job of one item run the same way.

* **Priority.** Claims go to the pool as :data:`~.workers.BATCH` work under the job's own
  client name: single questions always go first, at most ``batch_slots`` workers run claims,
  and two jobs share those workers in turn. A job hands in at most ``batch_slots`` claims at a
  time, so it never fills the queue and never gets (or retries on) a 503.
* **Bounds.** Each claim runs at most :data:`CLAIM_LIMIT_S` seconds (its solver limit is cut to
  :data:`CLAIM_TIMEOUT_MS`); a job spends at most ``budget_s`` seconds of worker time in all,
  after which its remaining claims are ``error`` outcomes saying so.
* **Resuming.** The job's claims and outcomes live in the store (``job_claims``); the process
  running a job beats its heartbeat every :data:`HEARTBEAT_S` seconds. Any service process on
  the store takes over a running job whose heartbeat is older than :data:`STALE_S` (its server
  was stopped or killed) and runs the claims that have no outcome yet.
* **The answer** is the CLI's ``check`` document (``reports.json_document``: ``summary`` with
  ``holds``, ``fails``, ``errors``, ``known``, ``findings``, ``total``; ``passed``; ``claims``),
  built from the same outcomes by the same code, under the job's ``result``.
"""
from __future__ import annotations

import asyncio
import logging
import secrets
import time

from layoutverify.apps import reports
from layoutverify.apps.claims import Outcome

from . import requests as rq
from .jobs import claim_from_json
from .workers import BATCH, BadInput, JobFailed, WorkerCrashed, WorkerTimeout

#: largest solver limit of one claim query in the service (milliseconds)
CLAIM_TIMEOUT_MS = 20_000
#: wall-clock limit of one claim (seconds)
CLAIM_LIMIT_S = 60.0
#: seconds between heartbeats of a running job
HEARTBEAT_S = 2.0
#: a running job whose heartbeat is older than this is taken over (seconds)
STALE_S = 10.0

log = logging.getLogger("layoutverify.service")


def error_outcome(claim: dict, message: str, seconds: float = 0.0) -> dict:
    """An ``error`` outcome of ``claim`` in the shape of ``Outcome.to_json``."""
    o = Outcome(claim_from_json(claim), "error", None, None, seconds, message)
    return o.to_json()


def check_document(items: list[tuple[int, dict, dict | None]]) -> dict:
    """The CLI's ``check`` document for a job's claims and their outcomes."""
    outcomes = []
    for _, claim, out in items:
        out = out or error_outcome(claim, "not checked")
        outcomes.append(Outcome(claim_from_json(claim), out["status"], out.get("got"), out.get("method"),
                                out.get("seconds", 0.0), out.get("message", ""), out.get("witness"),
                                out.get("fingerprints") or {}, out.get("warnings") or []))
    return reports.json_document(outcomes)


class CheckJobs:
    """The check jobs of one service process."""

    def __init__(self, service, budget_s: float = 600.0):
        self.service = service
        self.budget_s = budget_s
        self.owner = secrets.token_hex(8)      # this process, as the jobs table names it
        self.mine: dict[str, asyncio.Task] = {}
        self._loop_task: asyncio.Task | None = None

    # -- life cycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Start the keeper: heartbeats of this process's jobs, and stale jobs taken over."""
        self._loop_task = asyncio.create_task(self._keeper())

    async def stop(self) -> None:
        """Cancel the keeper and this process's running jobs, and wait until they ended."""
        for t in [self._loop_task, *self.mine.values()]:
            if t is not None:
                t.cancel()
        for t in [self._loop_task, *self.mine.values()]:
            if t is not None:
                try:
                    await t
                except (asyncio.CancelledError, Exception):
                    pass

    async def _keeper(self) -> None:
        """Beat the heartbeat of this process's jobs; take over stale ones (at once on start)."""
        while True:
            try:
                if self.mine:
                    await self.service.db(self.service.store.job_heartbeat, list(self.mine), self.owner)
                for jid in await self.service.db(self.service.store.job_take_stale, self.owner, STALE_S):
                    if jid not in self.mine:
                        log.warning("layoutverify: resuming interrupted check job %s", jid)
                        self._launch(jid)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the store is down for a while: try again at the next beat
                log.warning("layoutverify: job keeper: %s", e)
            await asyncio.sleep(HEARTBEAT_S)

    def _launch(self, jid: str) -> asyncio.Task:
        task = asyncio.create_task(self.run(jid))
        self.mine[jid] = task
        task.add_done_callback(lambda _t, jid=jid: self.mine.pop(jid, None))
        return task

    # -- submitting and running ------------------------------------------------------------------
    async def submit(self, corpus: str, name: str | None) -> tuple[str, int]:
        """Load the corpus (in a worker), store the job with its claims, start it: (job id, claims)."""
        loaded = await self.service.run_job("check_load", {"corpus": corpus, "name": name}, 60.0)
        claims = loaded["claims"]
        if not claims:
            raise rq.RequestError(400, "bad_input", "no claims to check")
        for c in claims:
            rq.refuse_file_reference(c["a"], f"claim {c['name']!r}: a")
            rq.refuse_file_reference(c["b"], f"claim {c['name']!r}: b")
            c["timeout_ms"] = min(int(c.get("timeout_ms") or CLAIM_TIMEOUT_MS), CLAIM_TIMEOUT_MS)
        jid = await self.service.db(self.service.store.job_create, "check", claims, self.owner)
        self._launch(jid)
        return jid, len(claims)

    async def submit_validation(self, kernel: dict) -> str:
        """Store and start a whole-kernel validation (``POST /v1/validate``) as a job of one item,
        ``{"validate": kernel}`` (the texts read from the uploaded tarball), run like a claim: at
        batch priority, resumed after a restart like every job."""
        jid = await self.service.db(self.service.store.job_create, "validate", [{"validate": kernel}], self.owner)
        self._launch(jid)
        return jid

    async def wait(self, jid: str, seconds: float) -> None:
        """Wait up to ``seconds`` for job ``jid`` to finish (a job this process does not run: no wait)."""
        task = self.mine.get(jid)
        if task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(task), seconds)
            except asyncio.TimeoutError:
                pass

    async def run(self, jid: str) -> None:
        """Run the claims of ``jid`` that have no outcome yet, then finish the job."""
        store, pool = self.service.store, self.service.pool
        try:
            job = await self.service.db(store.job_get, jid)
            items = await self.service.db(store.job_claims, jid)
            spent = float(job.get("spent") or 0.0)
            todo = [(i, c) for i, c, out in items if out is None]
            lock = asyncio.Lock()

            async def one(idx: int, claim: dict) -> None:
                nonlocal spent
                if spent >= self.budget_s:
                    outcome, dt = error_outcome(claim, f"not checked: the job's time budget of "
                                                       f"{self.budget_s:.0f} s of worker time ran out"), 0.0
                else:
                    t0 = time.monotonic()
                    outcome = await self._claim(jid, claim)
                    dt = time.monotonic() - t0
                async with lock:
                    spent += dt
                await self.service.db(store.job_claim_done, jid, idx, outcome, dt, self.owner)

            queue = list(todo)

            async def feeder() -> None:
                while queue:
                    idx, claim = queue.pop(0)
                    await one(idx, claim)

            await asyncio.gather(*[feeder() for _ in range(pool.batch_slots)])
            items = await self.service.db(store.job_claims, jid)
            result = items[0][2] if job["kind"] == "validate" else check_document(items)
            await self.service.db(store.job_finish, jid, status="done", result=result)
        except asyncio.CancelledError:
            raise   # the server stops: the job stays running, and is resumed by the next one
        except Exception as e:  # reported through the job, never lost silently
            log.exception("layoutverify: check job %s failed", jid)
            try:
                await self.service.db(store.job_finish, jid, status="failed", error=f"{type(e).__name__}: {e}")
            except Exception:
                pass

    async def _claim(self, jid: str, claim: dict) -> dict:
        if "validate" in claim:
            return await self._validation(jid, claim["validate"])
        deadline = min(CLAIM_LIMIT_S, 10.0 + 4 * claim["timeout_ms"] / 1000.0)
        t0 = time.monotonic()
        try:
            return await self.service.pool.run({"kind": "check_claim", "args": {"claim": claim}}, deadline,
                                               client=f"job:{jid}", priority=BATCH)
        except WorkerTimeout:
            return error_outcome(claim, f"ran past the service's limit of {deadline:.0f} s per claim",
                                 time.monotonic() - t0)
        except WorkerCrashed:
            return error_outcome(claim, "the worker process checking this claim died", time.monotonic() - t0)
        except BadInput as e:
            return error_outcome(claim, e.args[0]["error"]["message"], time.monotonic() - t0)
        except JobFailed as e:
            return error_outcome(claim, f"internal error ({e.args[0]})", time.monotonic() - t0)


    async def _validation(self, jid: str, kernel: dict) -> dict:
        """One whole-kernel validation in the pool at batch priority: the ``kernel_validation``
        document's fields; a worker that fails gives verdict ``unknown`` with the reason."""
        from .validate_job import JOB_DEADLINE_S, unknown_validation
        try:
            return await self.service.pool.run({"kind": "validate_kernel", "args": {"kernel": kernel}},
                                               JOB_DEADLINE_S, client=f"job:{jid}", priority=BATCH)
        except WorkerTimeout:
            return unknown_validation(kernel, f"ran past the service's limit of {JOB_DEADLINE_S:.0f} s")
        except WorkerCrashed:
            return unknown_validation(kernel, "the worker process validating this kernel died")
        except BadInput as e:
            return unknown_validation(kernel, e.args[0]["error"]["message"], verdict="unsupported")
        except JobFailed as e:
            return unknown_validation(kernel, f"internal error ({e.args[0]})")


def job_json(job: dict) -> dict:
    """A job as ``GET /v1/jobs/{id}`` shows it. A running job whose heartbeat stopped (no service
    process is running it now) is ``interrupted`` until a service process resumes it."""
    from layoutverify.apps.jsonout import document
    status = job["status"]
    beat = job.get("heartbeat") or job["updated"]
    if status == "running" and time.time() - beat > STALE_S:
        status = "interrupted"
    out = document("job", {"job": job["id"], "job_kind": job["kind"], "status": status, "done": job["done"],
                           "total": job["total"], "url": f"/v1/jobs/{job['id']}"})
    if job["result"] is not None:
        out["result"] = job["result"]
        out["passed"] = job["result"].get("passed")
    if job["error"]:
        out["error"] = {"code": "internal", "message": job["error"], "token": None}
    return out
