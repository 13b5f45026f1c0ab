"""The FastAPI application: JSON API under ``/v1``, health, metrics, the web page and ``/mcp``.

Answers have the shapes of the CLI's ``--json`` output (:mod:`layoutverify.apps.api` makes
both), plus ``id`` (the result's permalink is ``/r/{id}``), ``fingerprints``, ``tool_version``
and ``cached``. Errors are ``{"error": {"code", "message", "token"}}`` with a 4xx status (5xx
only for the service's own trouble: 503 busy, 500 a worker died), and messages are the CLI's
one-liners.

A request is answered from the store when the same request was seen before (by its hash, without
parsing; recent ones are also kept in memory) or when its layouts' fingerprints match a stored
question; otherwise a worker process (:mod:`.workers`) proves it and the result is committed to
the store before the answer is sent.
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
from collections import OrderedDict
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from layoutverify.apps import api, jsonout, proof_render

from . import requests as rq
from .metrics import Metrics
from .store import Store, canonical_json
from .version import tool_version
from .workers import BadInput, Busy, JobFailed, Pool, WorkerCrashed, WorkerTimeout, deadline_for

#: version of the JSON documents this service answers with: the CLI's (docs/json-schema.md)
SCHEMA = jsonout.SCHEMA
#: answers kept in memory (besides the store) for repeated requests
MEMO_SIZE = 10_000


@dataclass
class Config:
    db: str | None = None            # SQLite path, or postgresql://... (None: the user's cache dir)
    workers: int = 2                 # worker processes
    queue: int = 64                  # requests that may wait for a worker
    token: str | None = None         # bearer token required by POST endpoints (None: open)
    host: str = "127.0.0.1"          # the host the server listens on (for the MCP endpoint's host check)
    faults: bool = False             # accept the test-only fault jobs (see workers.FAULTS_ENV)
    max_body: int = rq.MAX_BODY
    check_wait_s: float = 2.0        # how long POST /v1/check waits before answering with a job id
    worker_memory_mb: int = 4096     # address-space cap of each worker process (0: none)


@dataclass
class Service:
    """The state behind the routes: store, worker pool, metrics, running jobs."""

    config: Config
    store: Store | None = None
    pool: Pool | None = None
    metrics: Metrics = field(default_factory=Metrics)
    tasks: set = field(default_factory=set)
    #: request hash -> answer, for answers already committed to the store (they never change: the
    #: key includes the tool version); most recent last, at most MEMO_SIZE entries
    memo: "OrderedDict[str, dict]" = field(default_factory=OrderedDict)

    async def start(self) -> None:
        tool_version()  # fixed now, for the server and every worker it starts
        self.store = Store(self.config.db)
        self.pool = Pool(self.config.workers, self.config.queue, self.store.url or self.store.where,
                         faults=self.config.faults, on_event=self._pool_event,
                         memory_bytes=(self.config.worker_memory_mb << 20) or None)
        await self.pool.start()

    def _pool_event(self, name: str) -> None:
        self.metrics.event({"busy": "busy_rejections", "worker_timeout": "worker_timeouts",
                            "worker_crash": "worker_crashes"}[name])
        if name == "worker_timeout":
            self.metrics.event("solver_timeouts")

    async def stop(self) -> None:
        for t in list(self.tasks):
            t.cancel()
        if self.pool is not None:
            self.pool.close()
        if self.store is not None:
            self.store.close()

    async def db(self, fn, *args, **kw):
        """A store call: PostgreSQL round trips (and commits) run in a thread, off the event loop;
        SQLite calls are local and short, and run in place."""
        if self.store.postgres:
            return await asyncio.to_thread(fn, *args, **kw)
        return fn(*args, **kw)

    # -- running a question ---------------------------------------------------------------------
    async def run_job(self, kind: str, args: dict, deadline: float) -> dict:
        """One job in the pool; pool failures become :class:`~.requests.RequestError`."""
        try:
            return await self.pool.run({"kind": kind, "args": args}, deadline)
        except Busy:
            raise rq.RequestError(503, "busy", "every worker is busy and the queue is full; retry shortly",
                                  headers={"Retry-After": "1"}) from None
        except WorkerCrashed:
            raise rq.RequestError(500, "worker_crashed", "the worker process running this request died (a crash in "
                                  "native code?); the service is still up") from None
        except BadInput as e:
            err = e.args[0]["error"]
            raise rq.RequestError(400, err["code"], err["message"], err.get("token"), column=err.get("column")) from None
        except JobFailed as e:
            raise rq.RequestError(500, "internal", f"internal error ({e.args[0]})") from None

    async def answer(self, kind: str, args: dict, *, timeout_ms: int = 10_000) -> dict:
        """The stored or fresh answer to a ``prove`` / ``analyze`` / ``show`` question.

        Returns ``{"id", "result", "fingerprints", "cached"}`` (``id`` is ``None`` for an answer
        that was not stored: a proof stopped at its deadline)."""
        request_hash = hashlib.sha256(canonical_json([kind, args, tool_version()]).encode()).hexdigest()
        got = self.memo.get(request_hash)
        if got is not None:
            self.memo.move_to_end(request_hash)
            self.metrics.cache_result(kind, True)
            return got
        row = await self.db(self.store.by_alias, request_hash)
        if row is not None:
            self.metrics.cache_result(kind, True)
            return self._remember(request_hash, {"id": row["id"], "result": row["result"],
                                                 "fingerprints": {"a": row["fp_a"], "b": row["fp_b"]}, "cached": True})
        job_args = {**args, "timeout_ms": timeout_ms}
        try:
            out = await self.run_job(kind, job_args, deadline_for(timeout_ms))
        except WorkerTimeout:
            if kind != "prove":
                raise rq.RequestError(504, "timeout", f"the {kind} request ran past its deadline of "
                                      f"{deadline_for(timeout_ms):.0f} s and was stopped") from None
            self.metrics.cache_result(kind, False)
            return {"id": None, "fingerprints": None, "cached": False, "result": {
                "verdict": "unknown", "method": args.get("method", "auto"), "witness": None,
                "seconds": deadline_for(timeout_ms),
                "reason": f"the proof ran past its deadline of {deadline_for(timeout_ms):.0f} s and was stopped"}}
        if "hit" in out:
            self.metrics.cache_result(kind, True)
            await self.db(self.store.add_alias, request_hash, out["hit"]["id"])
            return self._remember(request_hash, {"id": out["hit"]["id"], "result": out["hit"]["result"],
                                                 "fingerprints": out["fingerprints"], "cached": True})
        self.metrics.cache_result(kind, False)
        if out.get("verdict") == "unknown":
            self.metrics.event("solver_timeouts")
        rid = await self.db(self.store.put, kind=kind, fp_a=out["fingerprints"]["a"], fp_b=out["fingerprints"]["b"],
                             options=out["options"], tool_version=tool_version(), request=args,
                             result=out["result"], verdict=out.get("verdict"), smt2=out.get("smt2"),
                             cacheable=out.get("cacheable", True), request_hash=request_hash)
        if out.get("cacheable", True):
            self._remember(request_hash, {"id": rid, "result": out["result"], "fingerprints": out["fingerprints"],
                                          "cached": True})
        return {"id": rid, "result": out["result"], "fingerprints": out["fingerprints"], "cached": False}

    def _remember(self, request_hash: str, answer: dict) -> dict:
        self.memo[request_hash] = answer
        if len(self.memo) > MEMO_SIZE:
            self.memo.popitem(last=False)
        return answer

    async def prove(self, req: rq.ProveRequest) -> dict:
        rq.refuse_file_reference(req.a, "a")
        rq.refuse_file_reference(req.b, "b")
        args = {"a": req.a, "b": req.b, "shape": req.shape, "shape_b": req.shape_b, "method": req.method,
                "triton_version": req.triton_version, "warp_size": req.warp_size}
        got = await self.answer("prove", args, timeout_ms=req.timeout_ms)
        return prove_json(got, req.a, req.b, req.strict)

    async def analyze(self, req: rq.AnalyzeRequest) -> dict:
        for name in ("a", "b", "shared"):
            rq.refuse_file_reference(getattr(req, name), name)
        args = {"a": req.a, "b": req.b, "shape": req.shape, "shared": req.shared, "element_bits": req.element_bits,
                "triton_version": req.triton_version, "warp_size": req.warp_size}
        got = await self.answer("analyze", args, timeout_ms=req.timeout_ms)
        result = dict(got["result"])
        kind = result.pop("document")
        specs = {"a": req.a, "b": req.b} if kind == "conversion" else {}
        return jsonout.document(kind, {"id": got["id"], **specs, **result, "fingerprints": got["fingerprints"],
                                       "tool_version": tool_version(), "cached": got["cached"]})

    async def show(self, req: rq.ShowRequest) -> dict:
        rq.refuse_file_reference(req.spec, "spec")
        args = {"spec": req.spec, "shape": req.shape, "triton_version": req.triton_version,
                "warp_size": req.warp_size}
        got = await self.answer("show", args)
        return jsonout.document("layout", {"id": got["id"], "spec": req.spec, **got["result"],
                                           "tool_version": tool_version(), "cached": got["cached"]})

    # -- corpus checks as jobs ------------------------------------------------------------------
    async def check(self, req: rq.CheckRequest) -> tuple[int, dict]:
        loaded = await self.run_job("check_load", {"corpus": req.corpus}, 60.0)
        claims = loaded["claims"]
        if not claims:
            raise rq.RequestError(400, "bad_input", "no claims to check")
        for c in claims:
            rq.refuse_file_reference(c["a"], f"claim {c['name']!r}: a")
            rq.refuse_file_reference(c["b"], f"claim {c['name']!r}: b")
            c["timeout_ms"] = min(int(c.get("timeout_ms") or 20_000), rq.MAX_TIMEOUT_MS)  # the service's limit
        jid = await self.db(self.store.job_create, "check", len(claims))
        task = asyncio.create_task(self._run_check(jid, claims))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        try:
            await asyncio.wait_for(asyncio.shield(task), self.config.check_wait_s)
        except asyncio.TimeoutError:
            return 202, jsonout.document("job", {"job": jid, "status": "running", "done": 0, "total": len(claims),
                                                 "url": f"/v1/jobs/{jid}"})
        return 200, self.job_json(await self.db(self.store.job_get, jid))

    async def _run_check(self, jid: str, claims: list[dict]) -> None:
        done = 0
        outcomes: list = [None] * len(claims)

        async def one(i, claim):
            nonlocal done
            while True:
                try:
                    outcomes[i] = await self.run_job("check_claim", {"claim": claim},
                                                     deadline_for(claim.get("timeout_ms", 20_000)))
                    break
                except rq.RequestError as e:
                    if e.status == 503:
                        await asyncio.sleep(0.05)
                        continue
                    outcomes[i] = {"id": claim["name"], "status": "error", "message": e.message}
                    break
                except WorkerTimeout:
                    outcomes[i] = {"id": claim["name"], "status": "error", "message": "ran past its deadline"}
                    break
            done += 1
            await self.db(self.store.job_update, jid, done=done)

        try:
            await asyncio.gather(*[one(i, c) for i, c in enumerate(claims)])
            counts: dict = {}
            for o in outcomes:
                counts[o["status"]] = counts.get(o["status"], 0) + 1
            passed = all(o["status"] in ("holds", "known") for o in outcomes)
            await self.db(self.store.job_update, jid, done=done, status="done",
                                  result={"outcomes": outcomes, "summary": counts, "passed": passed})
        except Exception as e:  # pragma: no cover - reported through the job, never lost silently
            await self.db(self.store.job_update, jid, done=done, status="failed", error=f"{type(e).__name__}: {e}")

    @staticmethod
    def job_json(job: dict) -> dict:
        """A job as ``GET /v1/jobs/{id}`` shows it. A running job whose progress has not moved for
        longer than any claim may take (its server was stopped or killed) is ``interrupted``."""
        status = job["status"]
        if status == "running" and time.time() - job["updated"] > deadline_for(rq.MAX_TIMEOUT_MS) + 60:
            status = "interrupted"
        out = jsonout.document("job", {"job": job["id"], "job_kind": job["kind"], "status": status,
                                       "done": job["done"], "total": job["total"], "url": f"/v1/jobs/{job['id']}"})
        if job["result"] is not None:
            out.update(job["result"])
        if job["error"]:
            out["error"] = {"code": "internal", "message": job["error"], "token": None}
        return out

    def authorized(self, request: Request) -> bool:
        if not self.config.token:
            return True
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.config.token.encode())


def prove_json(got: dict, a: str, b: str, strict: bool) -> dict:
    """The answer to a prove request: ``layoutverify prove --json``'s object plus the service's fields."""
    res = got["result"]
    return jsonout.document("proof", {"id": got["id"], **proof_render.proof_fields(
        res, a=a, b=b, fingerprints=got["fingerprints"], code=proof_render.exit_code(res["verdict"], strict),
        tool_version=tool_version(), cached=got["cached"])})


def proof_text(d: dict) -> str:
    """A prove answer as text (``Accept: text/plain``), the lines ``layoutverify prove`` prints first."""
    lines = proof_render.proof_text(d)
    if d.get("id"):
        lines.append(f"result:  /r/{d['id']}")
    return "\n".join(lines) + "\n"


def document_text(d: dict) -> str:
    """Any answer as text (``Accept: text/plain``): a proof as ``layoutverify prove`` prints it;
    other documents as ``field: value`` lines, nested values as one line of JSON each."""
    import json
    if d.get("kind") == "proof":
        return proof_text(d)
    lines = []
    for k, v in d.items():
        if k == "schema":
            continue
        lines.append(f"{k}: {v if isinstance(v, (str, int, float, bool)) or v is None else json.dumps(v)}")
    return "\n".join(lines) + "\n"


def _as_requested(request: Request, out: dict):
    """``out`` as JSON, or as text when the client asks for ``text/plain``."""
    return PlainTextResponse(document_text(out)) if _wants_text(request) else out


def _wants_text(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "text/plain" in accept and "application/json" not in accept


def error_response(e: rq.RequestError) -> JSONResponse:
    return JSONResponse(e.body(), status_code=e.status, headers=e.headers)


class _Guard:
    """ASGI middleware: latency/status metrics for every request, and the bearer token for /mcp."""

    def __init__(self, app, service: Service):
        self.app, self.service = app, service

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        t0 = time.perf_counter()
        status = {"code": 500}

        async def send_wrapper(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        path = scope.get("path", "")
        try:
            if path.startswith("/mcp") and self.service.config.token:
                if not self.service.authorized(Request(scope)):
                    resp = error_response(rq.RequestError(401, "unauthorized", "missing or wrong bearer token"))
                    resp.headers["WWW-Authenticate"] = "Bearer"
                    return await resp(scope, receive, send_wrapper)
            await self.app(scope, receive, send_wrapper)
        finally:
            self.service.metrics.observe(path, scope.get("method", ""), status["code"], time.perf_counter() - t0)


def create_app(config: Config | None = None) -> FastAPI:
    """The application; the store and the workers start with it (FastAPI lifespan)."""
    config = config or Config()
    service = Service(config)
    from . import mcp_server, web
    mcp = mcp_server.build(service)
    mcp_routes = mcp_server.routes(mcp, config.host)  # before the lifespan: it creates the session manager

    @asynccontextmanager
    async def lifespan(app):
        await service.start()
        try:
            async with mcp.session_manager.run():
                yield
        finally:
            await service.stop()

    app = FastAPI(title="layoutverify", version=__import__("layoutverify").__version__, lifespan=lifespan,
                  description="Prove GPU tensor layouts equal across Triton, CuTe, Tilus, IREE and PTX, or get a "
                              "counterexample. Layouts are FRAMEWORK:TEXT; answers match `layoutverify prove --json`.")
    app.state.service = service

    @app.exception_handler(rq.RequestError)
    async def _request_error(request, e: rq.RequestError):
        return error_response(e)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request, e: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(e.status_code, "http_error")
        return error_response(rq.RequestError(e.status_code, code, str(e.detail), headers=getattr(e, "headers", None)))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request, e: RequestValidationError):
        err = (e.errors() or [{}])[0]
        loc = ".".join(str(x) for x in err.get("loc", ())[1:])
        return error_response(rq.RequestError(422, "invalid_field", f"field {loc!r}: {err.get('msg', 'invalid')}",
                                              loc or None))

    @app.exception_handler(Exception)
    async def _bug(request, e: Exception):
        return error_response(rq.RequestError(500, "internal", f"internal error ({type(e).__name__})"))

    def require_token(request: Request) -> None:
        if not service.authorized(request):
            raise rq.RequestError(401, "unauthorized", "missing or wrong bearer token",
                                  headers={"WWW-Authenticate": "Bearer"})

    @app.post("/v1/prove", openapi_extra=rq.schema_body(rq.ProveRequest), tags=["proofs"],
              summary="Prove two layouts equal, or get a counterexample")
    async def prove(request: Request):
        require_token(request)
        return _as_requested(request, await service.prove(await rq.parse(request, rq.ProveRequest)))

    @app.post("/v1/analyze", openapi_extra=rq.schema_body(rq.AnalyzeRequest), tags=["proofs"],
              summary="Cost of a conversion A -> B, or the properties of one layout")
    async def analyze(request: Request):
        require_token(request)
        return _as_requested(request, await service.analyze(await rq.parse(request, rq.AnalyzeRequest)))

    @app.post("/v1/show", openapi_extra=rq.schema_body(rq.ShowRequest), tags=["proofs"],
              summary="A layout's canonical form (dims, bases or table) and fingerprint")
    async def show(request: Request):
        require_token(request)
        return _as_requested(request, await service.show(await rq.parse(request, rq.ShowRequest)))

    @app.post("/v1/check", openapi_extra=rq.schema_body(rq.CheckRequest), tags=["jobs"],
              summary="Check a corpus: JSON {\"corpus\": TOML text}, or the TOML itself with Content-Type "
                      "application/toml; long runs answer 202 with a job id")
    async def check(request: Request):
        require_token(request)
        ctype = request.headers.get("content-type", "")
        if ctype.startswith(("application/toml", "text/")):  # the corpus file itself as the body
            raw = await rq.read_body(request)
            try:
                req = rq.validate(rq.CheckRequest, {"corpus": raw.decode("utf-8")})
            except UnicodeDecodeError as e:
                raise rq.RequestError(400, "bad_input", f"corpus is not UTF-8 (byte offset {e.start})") from None
        else:
            req = await rq.parse(request, rq.CheckRequest)
        status, body = await service.check(req)
        return JSONResponse(body, status_code=status)

    @app.get("/v1/jobs/{jid}", tags=["jobs"], summary="Progress and results of a check job")
    async def job(jid: str):
        j = await service.db(service.store.job_get, jid)
        if j is None:
            raise rq.RequestError(404, "not_found", f"no job {jid!r}")
        return service.job_json(j)

    @app.get("/v1/results/{rid}", tags=["results"], summary="A stored result")
    async def result(rid: str, request: Request):
        row = await service.db(service.store.get, rid)
        if row is None:
            raise rq.RequestError(404, "not_found", f"no result {rid!r}")
        return _as_requested(request, stored_json(row))

    @app.get("/v1/results/{rid}/smt2", tags=["results"], summary="The SMT-LIB2 queries of a z3 proof",
             response_class=PlainTextResponse)
    async def result_smt2(rid: str):
        exists, text = await service.db(service.store.smt2, rid)
        if not exists:
            raise rq.RequestError(404, "not_found", f"no result {rid!r}")
        if text is None:
            raise rq.RequestError(404, "no_smt2", f"result {rid!r} was not proved with z3; it has no SMT-LIB2 queries")
        return PlainTextResponse(text, media_type="application/smt2")

    @app.get("/v1/results", tags=["results"], summary="Stored results about a layout fingerprint")
    async def results(fingerprint: str, limit: int = 100):
        if not (1 <= limit <= 1000):
            raise rq.RequestError(422, "invalid_field", "field 'limit': must be between 1 and 1000", "limit")
        rows = await service.db(service.store.by_fingerprint, fingerprint, limit)
        return jsonout.document("results", {"fingerprint": fingerprint, "results": [stored_json(r) for r in rows]})

    @app.get("/healthz", tags=["service"])
    async def healthz():
        return {"status": "ok", "store": "postgresql" if service.store.postgres else "sqlite",
                "schema_version": await service.db(service.store.version), "workers": service.pool.size,
                "running": service.pool.running, "waiting": service.pool.pending - service.pool.running,
                "worker_pids": service.pool.pids(), "tool_version": tool_version()}

    @app.get("/metrics", tags=["service"], response_class=PlainTextResponse)
    async def metrics():
        gauges = {"workers": ("Worker processes.", service.pool.size),
                  "workers_busy": ("Workers running a job.", service.pool.running),
                  "queue_waiting": ("Requests waiting for a worker.", service.pool.pending - service.pool.running)}
        return PlainTextResponse(service.metrics.render(gauges), media_type="text/plain; version=0.0.4")

    if config.faults:  # test-only (workers.FAULTS_ENV): a job that kills its worker, or one that never ends
        @app.post("/v1/_fault/{name}", include_in_schema=False)
        async def fault(name: str, seconds: float = 3.0):
            if name not in ("crash", "hang", "hog"):
                raise rq.RequestError(404, "not_found", f"no fault {name!r}")
            try:
                await service.run_job("_" + name, {}, seconds)
            except WorkerTimeout:
                raise rq.RequestError(504, "timeout", f"the job ran past its deadline of {seconds} s; its worker "
                                      "was stopped") from None
            return {"status": "ok"}

    web.register(app, service)
    app.router.routes.extend(mcp_routes)
    app.add_middleware(_Guard, service=service)
    return app


def stored_json(row: dict) -> dict:
    """A stored result as ``GET /v1/results/{id}`` returns it."""
    result = dict(row["result"])
    kind = {"prove": "proof", "show": "layout"}.get(row["kind"]) or result.pop("document", row["kind"])
    fields = {"id": row["id"], "request": row["request"]}
    if row["kind"] == "prove":
        fields.update(a=row["request"].get("a"), b=row["request"].get("b"))
    fields.update(result)
    fields.update(fingerprints={"a": row["fp_a"], "b": row["fp_b"]}, options=row["options"],
                  tool_version=row["tool_version"], created=row["created"], cached=True)
    if row["kind"] == "prove":
        fields["exit"] = proof_render.exit_code(result.get("verdict"))
    return jsonout.document(kind, fields)
