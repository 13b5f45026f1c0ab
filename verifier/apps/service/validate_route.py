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
service; ``jobs.py`` adds :data:`JOB_HANDLERS` to its ``HANDLERS`` so that the workers know the job.
"""

import asyncio
import io
import json
import tarfile

from layoutverify.core.errors import LayoutError

MAX_TARBALL = 8 << 20
MAX_MEMBERS = 16
MAX_MEMBER = 16 << 20
MAX_UNPACKED = 32 << 20
TIME_LIMIT_S = 120.0
#: the job's wall-clock deadline in the worker: the validation's limit and reading, with slack
JOB_DEADLINE_S = TIME_LIMIT_S + 60.0


def read_kernel_tarball(data: bytes) -> dict:
    """``{"name", "ttir", "ptx", "meta", "launch"}`` from a tarball's bytes; :class:`LayoutError`
    (one line) for anything else."""
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
    except (tarfile.TarError, EOFError, OSError, ValueError) as e:
        raise LayoutError(f"the body is not a tar archive ({type(e).__name__})") from None
    texts: dict[str, str] = {}
    total = 0
    try:
        for n, member in enumerate(tar):
            if n >= MAX_MEMBERS:
                raise LayoutError(f"the archive has more than {MAX_MEMBERS} members")
            if member.isdir():
                continue
            if not member.isreg():
                raise LayoutError(f"archive member {member.name[:80]!r} is not a regular file (links and devices "
                                  f"are refused)")
            if member.size > MAX_MEMBER:
                raise LayoutError(f"archive member {member.name[:80]!r} is {member.size} bytes, over the limit of "
                                  f"{MAX_MEMBER}")
            total += member.size
            if total > MAX_UNPACKED:
                raise LayoutError(f"the archive unpacks to more than {MAX_UNPACKED} bytes")
            base = member.name.replace("\\", "/").rsplit("/", 1)[-1]
            kind = next((k for k in (".launch.json", ".json", ".ttir", ".ptx") if base.endswith(k)), None)
            if kind is None or base.startswith("__grp__"):
                continue                   # other files of a Triton cache folder (cubin, llir, ...)
            if kind in texts:
                raise LayoutError(f"the archive holds more than one {kind} file: one kernel per request")
            f = tar.extractfile(member)
            raw = f.read(member.size + 1) if f is not None else b""
            if len(raw) != member.size:
                raise LayoutError(f"archive member {member.name[:80]!r} is truncated")
            try:
                texts[kind] = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise LayoutError(f"archive member {member.name[:80]!r} is not UTF-8 (byte {e.start})") from None
            texts[kind + ":name"] = base[:-len(kind)]
    except LayoutError:
        raise
    except (tarfile.TarError, EOFError, OSError, ValueError) as e:
        raise LayoutError(f"the archive is damaged ({type(e).__name__})") from None
    for need in (".ttir", ".ptx"):
        if need not in texts:
            raise LayoutError(f"the archive holds no {need} file (one kernel: NAME.ttir, NAME.ptx, NAME.json)")
    out = {"name": texts[".ptx:name"], "ttir": texts[".ttir"], "ptx": texts[".ptx"], "meta": {}, "launch": None}
    for kind, key in ((".json", "meta"), (".launch.json", "launch")):
        if kind in texts:
            try:
                v = json.loads(texts[kind])
            except (json.JSONDecodeError, RecursionError, ValueError):
                raise LayoutError(f"the archive's {kind} file is not JSON") from None
            if not isinstance(v, dict):
                raise LayoutError(f"the archive's {kind} file must be a JSON object")
            out[key] = v
    return out


def validate_kernel_job(args: dict, store=None) -> dict:
    """The worker's job: ``args["tarball"]`` (bytes) -> the ``kernel_validation`` document's fields."""
    from layoutverify.apps.commands.validate_kernels import _check_launch_json, exit_code, summary
    from layoutverify.apps.kernels.validate import default_launch, validate_kernel
    k = read_kernel_tarball(args["tarball"])
    if k["launch"] is not None:
        _check_launch_json(k["launch"])
    launch = default_launch(k["ttir"], k["launch"])
    out = validate_kernel(k["ttir"], k["ptx"], k["meta"], launch, name=k["name"],
                          time_limit=float(args.get("time_limit_s", TIME_LIMIT_S)))
    return {"kernels": [out.to_json()], "summary": summary([out]), "exit": exit_code([out])}


JOB_HANDLERS = {"validate_kernel": validate_kernel_job}


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
