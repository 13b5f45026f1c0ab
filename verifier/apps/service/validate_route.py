"""``POST /v1/validate``: validate one compiled kernel uploaded as a tarball (whole-kernel
validation, :mod:`layoutverify.apps.kernels`).

The body is a tar archive (plain, gzip, bz2 or xz; ``Content-Type`` is not trusted) holding one
kernel: ``NAME.ttir``, ``NAME.ptx``, optionally ``NAME.json`` (Triton's metadata) and
``NAME.launch.json`` (the launch: integer arguments, grid, program ids). Bounds:

* the body: :data:`MAX_TARBALL` bytes (HTTP 413 past it, before it is all read);
* members: at most :data:`MAX_MEMBERS`, regular files only, each at most :data:`MAX_MEMBER`
  bytes and :data:`MAX_UNPACKED` in all (a compression bomb stops at the first member over);
* time: :data:`TIME_LIMIT_S` seconds of validation, then the verdict is ``unknown``; the worker
  is killed past the job's deadline.

The archive is read in memory (``tarfile`` over ``BytesIO``): nothing is extracted, no path of
the archive or of the request is opened, member names only select which text is which (by their
file name's suffix). The validation runs in a worker of the service's pool, as a job like a
corpus check's: the answer comes within ``check_wait_s`` (200) or as a job to poll (202,
``/v1/jobs/{id}``).

Hooks (the service's own modules): ``app.py`` calls :func:`add_routes` with the app and the
service; ``jobs.py`` adds :data:`.validate_job.JOB_HANDLERS` to its ``HANDLERS`` so that the
workers know the job.
"""

import asyncio

from .validate_job import MAX_MEMBER, MAX_MEMBERS, MAX_UNPACKED, TIME_LIMIT_S, read_kernel_tarball  # noqa: F401

MAX_TARBALL = 8 << 20
#: the job's wall-clock deadline in the worker: the validation's limit and reading, with slack
JOB_DEADLINE_S = TIME_LIMIT_S + 60.0


def add_routes(app, service) -> None:
    """Register ``POST /v1/validate`` on ``app`` (``service``: the app's
    :class:`~.app.Service`, whose pool runs the job and whose store keeps it)."""
    from fastapi import Request
    from fastapi.responses import JSONResponse

    from layoutverify.apps import jsonout

    from . import requests as rq
    from .workers import WorkerTimeout

    @app.post("/v1/validate", tags=["jobs"],
              summary="Validate a compiled Triton kernel (a tarball of NAME.ttir, NAME.ptx, NAME.json and an "
                      "optional NAME.launch.json): its PTX against its TTIR, element by element; long runs "
                      "answer 202 with a job id")
    async def validate(request: Request):
        if not service.authorized(request):
            raise rq.RequestError(401, "unauthorized", "missing or wrong bearer token",
                                  headers={"WWW-Authenticate": "Bearer"})
        body = await rq.read_body(request, MAX_TARBALL)
        if not body:
            raise rq.RequestError(400, "bad_input", "empty body: send the kernel's tarball")
        jid = await service.db(service.store.job_create, "validate", 1)

        async def run() -> None:
            try:
                fields = await service.run_job("validate_kernel", {"tarball": body}, JOB_DEADLINE_S)
                await service.db(service.store.job_update, jid, done=1, status="done", result=fields)
            except rq.RequestError as e:
                await service.db(service.store.job_update, jid, done=1, status="failed",
                                 error=f"{e.code}: {e.message}")
                raise
            except WorkerTimeout:
                fields = {"kernels": [{"verdict": "unknown", "reason": f"ran past {JOB_DEADLINE_S:.0f} s"}],
                          "summary": {"valid": 0, "wrong": 0, "unsupported": 0, "unknown": 1}, "exit": 3}
                await service.db(service.store.job_update, jid, done=1, status="done", result=fields)

        task = asyncio.create_task(run())
        service.tasks.add(task)
        task.add_done_callback(service.tasks.discard)
        task.add_done_callback(lambda t: t.cancelled() or t.exception())   # failures are in the job
        try:
            await asyncio.wait_for(asyncio.shield(task), service.config.check_wait_s)
        except asyncio.TimeoutError:
            return JSONResponse(jsonout.document("job", {"job": jid, "job_kind": "validate", "status": "running",
                                                         "done": 0, "total": 1, "url": f"/v1/jobs/{jid}"}),
                                status_code=202)
        job = await service.db(service.store.job_get, jid)
        return JSONResponse(jsonout.document("kernel_validation", {"job": jid, **(job["result"] or {})}))
