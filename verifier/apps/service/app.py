"""The FastAPI application: JSON API under ``/v1``, health, metrics, the web page and ``/mcp``.

Answers have the shapes of the CLI's ``--json`` output (:mod:`layoutverify.apps.api` makes
both), plus ``id`` (the permalink of the request as the caller wrote it: ``/r/{id}``,
``/v1/results/{id}``), ``result_id`` (the stored result, shared by every spelling of the
question), ``fingerprints``, ``tool_version`` and ``cached``. Errors are ``{"error": {"code",
"message", "token"}}`` with a 4xx status (5xx only for the service's own trouble: 503 busy or
store unavailable, 500 a worker died), and messages are the CLI's one-liners.

A request is answered from memory (:mod:`.cache`, bounded in bytes) or the store when the same
request was seen before (by its hash, without parsing) or when its layouts' fingerprints match a
stored question; otherwise a worker process (:mod:`.workers`) proves it and the result is
committed to the store before the answer is sent. Who may ask is :mod:`.security`'s business;
corpus checks are :mod:`.checks`' jobs.
"""
from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from layoutverify.apps import api, jsonout, proof_render

from . import requests as rq
from . import security
from .cache import AnswerCache
from .checks import CheckJobs, job_json
from .metrics import Metrics
from .store import Store, StoreUnavailable, canonical_json
from .version import tool_version
from .workers import BadInput, Busy, JobFailed, Pool, WorkerCrashed, WorkerTimeout, deadline_for

#: version of the JSON documents this service answers with: the CLI's (docs/json-schema.md)
SCHEMA = jsonout.SCHEMA

log = logging.getLogger("layoutverify.service")


@dataclass
class Config:
    """The service's settings: the store, the worker pool and its limits, the bearer token and
    read policy, the host, request and check-job limits, the answer budget and the allowed origins."""
    db: str | None = None            # SQLite path, or postgresql://... (None: the user's cache dir)
    workers: int = 2                 # worker processes
    queue: int = 64                  # requests that may wait for a worker
    token: str | None = None         # bearer token required to compute or write (None: open)
    public_reads: bool = True        # with a token: stored results, jobs and permalinks readable without it
    host: str = "127.0.0.1"          # the host the server listens on (for the MCP endpoint's host check)
    faults: bool = False             # accept the test-only fault jobs (see workers.FAULTS_ENV)
    max_body: int = rq.MAX_BODY
    check_wait_s: float = 2.0        # how long POST /v1/check waits before answering with a job id
    check_budget_s: float = 600.0    # worker seconds one check job may spend
    worker_memory_mb: int = 4096     # address-space cap of each worker process (0: none)
    worker_recycle_mb: int = 1024    # a worker resident above this after a job is replaced (0: never)
    cache_mb: int = 64               # in-memory answer cache
    allow_origins: tuple = ()        # origins besides the service's own allowed to POST (behind a proxy)


@dataclass
class Service:
    """The state behind the routes: store, worker pool, answer cache, metrics, check jobs."""

    config: Config
    store: Store | None = None
    pool: Pool | None = None
    metrics: Metrics = field(default_factory=Metrics)
    cache: AnswerCache | None = None
    checks: CheckJobs | None = None
    csrf: security.Csrf | None = None

    async def start(self) -> None:
        """Open the store, start the worker pool (waiting until every worker answers) and the check jobs."""
        tool_version()  # fixed now, for the server and every worker it starts
        self.cache = AnswerCache(self.config.cache_mb << 20)
        self.store = Store(self.config.db)
        self.csrf = security.Csrf(self.store.shared_secret("csrf"))
        self.pool = Pool(self.config.workers, self.config.queue, self.store.url or self.store.where,
                         faults=self.config.faults, on_event=self._pool_event,
                         memory_bytes=(self.config.worker_memory_mb << 20) or None,
                         recycle_bytes=(self.config.worker_recycle_mb << 20) or None)
        await self.pool.start()
        self.checks = CheckJobs(self, self.config.check_budget_s)
        self.checks.start()

    def _pool_event(self, name: str) -> None:
        self.metrics.event({"busy": "busy_rejections", "worker_timeout": "worker_timeouts",
                            "worker_crash": "worker_crashes"}[name])
        if name == "worker_timeout":
            self.metrics.event("solver_timeouts")

    async def stop(self) -> None:
        """Stop the check jobs and the worker pool, and close the store."""
        if self.checks is not None:
            await self.checks.stop()
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
    async def run_job(self, kind: str, args: dict, deadline: float, client: str = "") -> dict:
        """One job in the pool; pool failures become :class:`~.requests.RequestError`."""
        try:
            return await self.pool.run({"kind": kind, "args": args}, deadline, client=client)
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

    async def answer(self, kind: str, args: dict, *, timeout_ms: int = 10_000, client: str = "") -> dict:
        """The stored or fresh answer to a ``prove`` / ``analyze`` / ``show`` question.

        Returns ``{"id", "result_id", "result", "fingerprints", "cached"}``: ``id`` is the permalink
        of this request as written (``None`` for a proof stopped at its deadline, which is not
        stored)."""
        request_hash = hashlib.sha256(canonical_json([kind, args, tool_version()]).encode()).hexdigest()
        got = self.cache.get(request_hash)
        if got is not None:
            self.metrics.cache_result(kind, True)
            return got
        row = await self.db(self.store.by_request, request_hash)
        if row is not None:
            self.metrics.cache_result(kind, True)
            fps = {"a": row["fp_a"], "b": row["fp_b"]}
            self.cache.put(request_hash, row["permalink"], row["id"], row["result"], fps)
            return {"id": row["permalink"], "result_id": row["id"], "result": row["result"], "fingerprints": fps,
                    "cached": True}
        job_args = {**args, "timeout_ms": timeout_ms}
        try:
            out = await self.run_job(kind, job_args, deadline_for(timeout_ms), client)
        except WorkerTimeout:
            if kind != "prove":
                raise rq.RequestError(504, "timeout", f"the {kind} request ran past its deadline of "
                                      f"{deadline_for(timeout_ms):.0f} s and was stopped") from None
            self.metrics.cache_result(kind, False)
            return {"id": None, "result_id": None, "fingerprints": None, "cached": False, "result": {
                "verdict": "unknown", "method": args.get("method", "auto"), "witness": None,
                "seconds": deadline_for(timeout_ms),
                "reason": f"the proof ran past its deadline of {deadline_for(timeout_ms):.0f} s and was stopped"}}
        if "hit" in out:
            self.metrics.cache_result(kind, True)
            rid = out["hit"]["id"]
            pid = await self.db(self.store.link, request_hash, rid, args)
            self.cache.put(request_hash, pid, rid, out["hit"]["result"], out["fingerprints"])
            return {"id": pid, "result_id": rid, "result": out["hit"]["result"],
                    "fingerprints": out["fingerprints"], "cached": True}
        self.metrics.cache_result(kind, False)
        if out.get("verdict") == "unknown":
            self.metrics.event("solver_timeouts")
        cacheable = out.get("cacheable", True)
        pid, rid = await self.db(self.store.put, kind=kind, fp_a=out["fingerprints"]["a"],
                                 fp_b=out["fingerprints"]["b"], options=out["options"], tool_version=tool_version(),
                                 request=args, result=out["result"], verdict=out.get("verdict"),
                                 smt2=out.get("smt2"), cacheable=cacheable, request_hash=request_hash)
        if cacheable:
            self.cache.put(request_hash, pid, rid, out["result"], out["fingerprints"])
        return {"id": pid, "result_id": rid, "result": out["result"], "fingerprints": out["fingerprints"],
                "cached": False}

    async def prove(self, req: rq.ProveRequest, client: str = "") -> dict:
        """Answer a prove request (``POST /v1/prove``, the web form): the ``proof`` document
        (``layoutverify prove --json``'s object) with the permalink ``id``, ``result_id`` and
        ``cached``; ``@FILE`` texts are refused."""
        rq.refuse_file_reference(req.a, "a")
        rq.refuse_file_reference(req.b, "b")
        args = {"a": req.a, "b": req.b, "shape": req.shape, "shape_b": req.shape_b, "method": req.method,
                "triton_version": req.triton_version, "warp_size": req.warp_size}
        got = await self.answer("prove", args, timeout_ms=req.timeout_ms, client=client)
        return prove_json(got, req.a, req.b, req.strict)

    async def analyze(self, req: rq.AnalyzeRequest, client: str = "") -> dict:
        """Answer an analyze request (``POST /v1/analyze``, the web page): the ``conversion``
        document of ``a`` -> ``b`` (the ``properties`` document of ``a`` without ``b``), with the
        permalink ``id``, ``result_id``, fingerprints and ``cached``."""
        for name in ("a", "b", "shared"):
            rq.refuse_file_reference(getattr(req, name), name)
        args = {"a": req.a, "b": req.b, "shape": req.shape, "shared": req.shared, "element_bits": req.element_bits,
                "triton_version": req.triton_version, "warp_size": req.warp_size}
        got = await self.answer("analyze", args, timeout_ms=req.timeout_ms, client=client)
        result = dict(got["result"])
        kind = result.pop("document")
        specs = {"a": req.a, "b": req.b} if kind == "conversion" else {}
        return jsonout.document(kind, {"id": got["id"], "result_id": got["result_id"], **specs, **result,
                                       "fingerprints": got["fingerprints"], "tool_version": tool_version(),
                                       "cached": got["cached"]})

    async def show(self, req: rq.ShowRequest, client: str = "") -> dict:
        """Answer ``POST /v1/show``: the ``layout`` document of ``spec``, with the permalink ``id``,
        ``result_id`` and ``cached``."""
        rq.refuse_file_reference(req.spec, "spec")
        args = {"spec": req.spec, "shape": req.shape, "triton_version": req.triton_version,
                "warp_size": req.warp_size}
        got = await self.answer("show", args, client=client)
        return jsonout.document("layout", {"id": got["id"], "result_id": got["result_id"], "spec": req.spec,
                                           **got["result"], "tool_version": tool_version(), "cached": got["cached"]})

    # -- corpus checks as jobs ------------------------------------------------------------------
    async def check(self, req: rq.CheckRequest) -> tuple[int, dict]:
        """Answer ``POST /v1/check``: submit the corpus as a check job and wait up to ``check_wait_s``;
        ``(200, job)`` when it finished by then, else ``(202, job)`` (the job still running)."""
        jid, total = await self.checks.submit(req.corpus, req.name)
        await self.checks.wait(jid, self.config.check_wait_s)
        job = await self.db(self.store.job_get, jid)
        doc = job_json(job)
        return (200 if doc["status"] == "done" else 202), doc

    def authorized(self, request: Request) -> bool:
        """Whether ``request`` may compute or write: the bearer token, when one is set."""
        return security.bearer_ok(request.headers, self.config.token)


def client_of(request: Request) -> str:
    """The client a request counts against in the pool's turns: its peer address (the address a
    trusted proxy forwarded, with uvicorn's ``--forwarded-allow-ips``)."""
    return request.client.host if request.client else ""


def prove_json(got: dict, a: str, b: str, strict: bool) -> dict:
    """The answer to a prove request: ``layoutverify prove --json``'s object plus the service's fields."""
    res = got["result"]
    return jsonout.document("proof", {"id": got["id"], "result_id": got.get("result_id"), **proof_render.proof_fields(
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


class JsonDocument(JSONResponse):
    """A JSON answer rendered as the document stands. The documents hold plain JSON values (what
    ``--json`` prints), so the bytes are those FastAPI would send for the same dict returned by a
    route, without its ``jsonable_encoder`` walk over every value first: 40% of the CPU time of a
    cached answer. A value ``json`` cannot write as it is takes that walk after all."""

    def render(self, content) -> bytes:
        """The bytes of ``content`` as JSON, through ``jsonable_encoder`` only when ``json`` cannot write
        it as it is."""
        try:
            return super().render(content)
        except TypeError:
            from fastapi.encoders import jsonable_encoder
            return super().render(jsonable_encoder(content))


def _as_requested(request: Request, out: dict):
    """``out`` as JSON, or as text when the client asks for ``text/plain``."""
    return PlainTextResponse(document_text(out)) if _wants_text(request) else JsonDocument(out)


def _wants_text(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "text/plain" in accept and "application/json" not in accept


def error_response(e: rq.RequestError) -> JSONResponse:
    """The JSON answer of a refused request: its error body, HTTP status and headers."""
    return JSONResponse(e.body(), status_code=e.status, headers=e.headers)


#: paths whose GET reads stored results (private with ``--private-reads``)
_READ_PREFIXES = ("/v1/results", "/v1/jobs/", "/r/")


class _Guard:
    """ASGI middleware, before any route: framing and origin checks, the token where a route is
    not the place to check it (``/mcp``, private reads), and latency/status metrics for all."""

    def __init__(self, app, service: Service):
        self.app, self.service = app, service

    def _refusal(self, scope) -> tuple[rq.RequestError, dict] | None:
        """Why the request is refused before it reaches a route, or ``None``."""
        from starlette.datastructures import Headers
        headers = Headers(scope=scope)
        method, path = scope.get("method", ""), scope.get("path", "")
        config = self.service.config
        # RFC 9112 section 6.3: a request with both framings may be an attempt at request smuggling;
        # refuse it and close the connection.
        if "transfer-encoding" in headers and "content-length" in headers:
            return (rq.RequestError(400, "bad_request", "both Transfer-Encoding and Content-Length: send one"),
                    {"Connection": "close"})
        if method not in security.SAFE_METHODS and not security.same_origin(headers, scope.get("scheme", "http"),
                                                                            config.allow_origins):
            return rq.RequestError(403, "cross_origin", f"requests from origin {headers.get('origin')!r} are not "
                                   "accepted (use --allow-origin for a proxy's public origin)"), {}
        if path == "/mcp" and method == "GET":   # stateless: no server-initiated stream to offer
            return rq.RequestError(405, "method_not_allowed", "GET /mcp: this MCP endpoint is stateless and "
                                   "offers no event stream; POST JSON-RPC messages"), {"Allow": "POST, DELETE"}
        private = path.startswith("/mcp") or (not config.public_reads and path.startswith(_READ_PREFIXES))
        if private and config.token and not security.bearer_ok(headers, config.token):
            return security.unauthorized(), {"WWW-Authenticate": "Bearer"}
        return None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        t0 = time.perf_counter()
        status = {"code": 500}

        async def send_wrapper(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            refused = self._refusal(scope)
            if refused is not None:
                e, headers = refused
                resp = error_response(e)
                resp.headers.update(headers)
                return await resp(scope, receive, send_wrapper)
            await self.app(scope, receive, send_wrapper)
        finally:
            self.service.metrics.observe(scope.get("path", ""), scope.get("method", ""), status["code"],
                                         time.perf_counter() - t0)


def create_app(config: Config | None = None) -> FastAPI:
    """The application; the store and the workers start with it (FastAPI lifespan)."""
    config = config or Config()
    service = Service(config)
    from . import docs, mcp_server, web
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
                  docs_url=None, redoc_url=None,
                  description="Prove GPU tensor layouts equal across Triton, CuTe, Tilus, IREE and PTX, or get a "
                              "counterexample. Layouts are FRAMEWORK:TEXT; answers match `layoutverify prove --json`.")
    app.state.service = service

    @app.exception_handler(rq.RequestError)
    async def _request_error(request, e: rq.RequestError):
        return error_response(e)

    @app.exception_handler(StoreUnavailable)
    async def _store_unavailable(request, e: StoreUnavailable):
        log.warning("layoutverify: store unavailable: %s", e)
        return error_response(rq.RequestError(503, "store_unavailable", "store unavailable: the result store "
                                              "cannot be reached; retry shortly", headers={"Retry-After": "5"}))

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
        log.error("layoutverify: internal error", exc_info=e)
        return error_response(rq.RequestError(500, "internal", f"internal error ({type(e).__name__})"))

    def require_token(request: Request) -> None:
        if not service.authorized(request):
            raise security.unauthorized()

    async def json_body(request: Request, model):
        require_token(request)
        security.require_media_type(request.headers, "application/json")
        return await rq.parse(request, model)

    @app.post("/v1/prove", openapi_extra=rq.schema_body(rq.ProveRequest), tags=["proofs"],
              summary="Prove two layouts equal, or get a counterexample")
    async def prove(request: Request):
        req = await json_body(request, rq.ProveRequest)
        return _as_requested(request, await service.prove(req, client_of(request)))

    @app.post("/v1/analyze", openapi_extra=rq.schema_body(rq.AnalyzeRequest), tags=["proofs"],
              summary="Cost of a conversion A -> B, or the properties of one layout")
    async def analyze(request: Request):
        req = await json_body(request, rq.AnalyzeRequest)
        return _as_requested(request, await service.analyze(req, client_of(request)))

    @app.post("/v1/show", openapi_extra=rq.schema_body(rq.ShowRequest), tags=["proofs"],
              summary="A layout's canonical form (dims, bases or table) and fingerprint")
    async def show(request: Request):
        req = await json_body(request, rq.ShowRequest)
        return _as_requested(request, await service.show(req, client_of(request)))

    @app.post("/v1/check", openapi_extra=rq.schema_body(rq.CheckRequest), tags=["jobs"],
              summary="Check a corpus: JSON {\"corpus\": TOML text} as application/json, or the TOML itself as "
                      "application/toml; answers as `layoutverify check --json` under `result`; long runs answer "
                      "202 with a job id")
    async def check(request: Request):
        require_token(request)
        ctype = security.require_media_type(request.headers, "application/json", "application/toml")
        if ctype == "application/toml":  # the corpus file itself as the body
            raw = await rq.read_body(request)
            try:
                req = rq.validate(rq.CheckRequest, {"corpus": raw.decode("utf-8"),
                                                    **({"name": request.query_params["name"]}
                                                       if "name" in request.query_params else {})})
            except UnicodeDecodeError as e:
                raise rq.RequestError(400, "bad_input", f"corpus is not UTF-8 (byte offset {e.start})") from None
        else:
            req = await rq.parse(request, rq.CheckRequest)
        status, body = await service.check(req)
        return JSONResponse(body, status_code=status)

    @app.get("/v1/jobs/{jid}", tags=["jobs"], summary="Progress and results of a check job")
    async def job(jid: str):
        j = await service.db(service.store.job_get, security.check_id(jid, "job"))
        if j is None:
            raise rq.RequestError(404, "not_found", f"no job {jid!r}")
        return job_json(j)

    @app.get("/v1/results/{rid}", tags=["results"], summary="A stored result (by permalink or result id)")
    async def result(rid: str, request: Request):
        row = await service.db(service.store.get, security.check_id(rid))
        if row is None:
            raise rq.RequestError(404, "not_found", f"no result {rid!r}")
        return _as_requested(request, stored_json(row))

    @app.get("/v1/results/{rid}/smt2", tags=["results"], summary="The SMT-LIB2 queries of a z3 proof",
             response_class=PlainTextResponse)
    async def result_smt2(rid: str):
        exists, text = await service.db(service.store.smt2, security.check_id(rid))
        if not exists:
            raise rq.RequestError(404, "not_found", f"no result {rid!r}")
        if text is None:
            raise rq.RequestError(404, "no_smt2", f"result {rid!r} was not proved with z3; it has no SMT-LIB2 queries")
        return PlainTextResponse(text, media_type="application/smt2")

    @app.get("/v1/results", tags=["results"], summary="Stored results about a layout fingerprint")
    async def results(fingerprint: str, limit: int = 100):
        if not (1 <= limit <= 1000):
            raise rq.RequestError(422, "invalid_field", "field 'limit': must be between 1 and 1000", "limit")
        rows = await service.db(service.store.by_fingerprint, security.check_fingerprint(fingerprint), limit)
        return jsonout.document("results", {"fingerprint": fingerprint, "results": [stored_json(r) for r in rows]})

    @app.get("/healthz", tags=["service"])
    async def healthz():
        pool = service.pool
        return {"status": "ok", "pid": os.getpid(), "store": "postgresql" if service.store.postgres else "sqlite",
                "schema_version": await service.db(service.store.version), "workers": pool.size,
                "running": pool.running, "waiting": pool.waiting, "worker_pids": pool.pids(),
                "tool_version": tool_version()}

    @app.get("/metrics", tags=["service"], response_class=PlainTextResponse)
    async def metrics():
        pool = service.pool
        gauges = {"workers": ("Worker processes.", pool.size),
                  "workers_busy": ("Workers running a job.", pool.running),
                  "queue_waiting": ("Requests waiting for a worker.", pool.waiting),
                  "answer_cache_bytes": ("Bytes held by the in-memory answer cache.", service.cache.size)}
        counters = {"worker_jobs": ("Jobs run by worker processes.", pool.jobs),
                    "workers_recycled": ("Workers replaced because a job left them over the memory limit.",
                                         pool.recycled),
                    "store_writes": ("Write transactions committed to the store by this process.",
                                     service.store.writes)}
        return PlainTextResponse(service.metrics.render(gauges, counters), media_type="text/plain; version=0.0.4")

    if config.faults:  # test-only (workers.FAULTS_ENV): a job that kills its worker, or one that never ends
        @app.post("/v1/_fault/{name}", include_in_schema=False)
        async def fault(request: Request, name: str, seconds: float = 3.0, mb: int = 256):
            if name not in ("crash", "hang", "hog", "bloat"):
                raise rq.RequestError(404, "not_found", f"no fault {name!r}")
            try:
                out = await service.run_job("_" + name, {"mb": mb}, seconds, client_of(request))
            except WorkerTimeout:
                raise rq.RequestError(504, "timeout", f"the job ran past its deadline of {seconds} s; its worker "
                                      "was stopped") from None
            return {"status": "ok", **out}

    docs.register(app)
    web.register(app, service)
    from .validate_route import add_routes as add_validate_routes  # POST /v1/validate (whole kernels)
    add_validate_routes(app, service)
    app.router.routes.extend(mcp_routes)
    app.add_middleware(_Guard, service=service)
    return app


def stored_json(row: dict) -> dict:
    """A stored result as ``GET /v1/results/{id}`` returns it: ``request`` is the caller's own
    text when ``id`` is a permalink."""
    result = dict(row["result"])
    kind = {"prove": "proof", "show": "layout"}.get(row["kind"]) or result.pop("document", row["kind"])
    fields = {"id": row["id"], "result_id": row.get("result_id", row["id"]), "request": row["request"]}
    if row["kind"] == "prove":
        fields.update(a=row["request"].get("a"), b=row["request"].get("b"))
    fields.update(result)
    fields.update(fingerprints={"a": row["fp_a"], "b": row["fp_b"]}, options=row["options"],
                  tool_version=row["tool_version"], created=row["created"], cached=True)
    if row["kind"] == "prove":
        fields["exit"] = proof_render.exit_code(result.get("verdict"))
    return jsonout.document(kind, fields)
