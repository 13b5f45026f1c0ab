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

from .validate_job import (JOB_DEADLINE_S, MAX_MEMBER, MAX_MEMBERS, MAX_UNPACKED, TIME_LIMIT_S,  # noqa: F401
                           read_kernel_tarball)

MAX_TARBALL = 8 << 20
#: media types a browser may send cross-site without a CORS preflight (a form, text): refused
_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data", "text/plain")


def add_routes(app, service) -> None:
    """Register ``POST /v1/validate`` on ``app`` (``service``: the app's
    :class:`~.app.Service`, whose check jobs run the validation and whose store keeps it)."""
    from fastapi import Request
    from fastapi.responses import JSONResponse

    from layoutverify.apps import jsonout
    from layoutverify.core.errors import LayoutError

    from . import requests as rq
    from . import security
    from .checks import job_json

    @app.post("/v1/validate", tags=["jobs"],
              summary="Validate a compiled Triton kernel (a tarball of NAME.ttir, NAME.ptx, NAME.json and an "
                      "optional NAME.launch.json): its PTX against its TTIR, element by element; long runs "
                      "answer 202 with a job id")
    async def validate(request: Request):
        if not service.authorized(request):
            raise security.unauthorized()
        media = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
        if media in _FORM_TYPES:
            raise rq.RequestError(415, "unsupported_media_type",
                                  f"Content-Type {media!r}: send the tarball as application/x-tar, application/gzip "
                                  f"or application/octet-stream")
        body = await rq.read_body(request, MAX_TARBALL)
        if not body:
            raise rq.RequestError(400, "bad_input", "empty body: send the kernel's tarball")
        try:   # bounded (members, bytes): read off the event loop, before any job or store write
            kernel = await asyncio.to_thread(read_kernel_tarball, body)
        except LayoutError as e:
            raise rq.RequestError(400, "bad_input", str(e)) from None
        jid = await service.checks.submit_validation(kernel)
        await service.checks.wait(jid, service.config.check_wait_s)
        job = await service.db(service.store.job_get, jid)
        if job["status"] != "done":
            return JSONResponse(job_json(job), status_code=202)
        return JSONResponse(jsonout.document("kernel_validation", {"job": jid, **(job["result"] or {})}))
