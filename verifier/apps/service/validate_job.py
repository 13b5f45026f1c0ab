"""The job behind ``POST /v1/validate`` (:mod:`.validate_route`), run in a worker of the pool:
read one kernel from a tarball in memory and validate it (:mod:`layoutverify.apps.kernels`).

The archive is read with ``tarfile`` over ``BytesIO``: nothing is extracted, no path of the
archive or of the request is opened, member names only select which text is which (by their file
name's suffix). Bounds: at most :data:`MAX_MEMBERS` members, regular files only, each at most
:data:`MAX_MEMBER` bytes and :data:`MAX_UNPACKED` in all (a compression bomb stops at the first
member over); the validation stops after :data:`TIME_LIMIT_S` seconds (verdict ``unknown``).
"""
import io
import json
import tarfile

from layoutverify.core.errors import LayoutError

MAX_MEMBERS = 16
MAX_MEMBER = 16 << 20
MAX_UNPACKED = 32 << 20
TIME_LIMIT_S = 120.0
#: the job's wall-clock deadline in the worker: the validation's limit and its set-up, with slack
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
    """The worker's job: ``args["kernel"]`` (:func:`read_kernel_tarball`'s dict, read by the route)
    -> the ``kernel_validation`` document's fields."""
    from layoutverify.apps.commands.validate_kernels import _check_launch_json, exit_code, summary
    from layoutverify.apps.kernels.validate import default_launch, validate_kernel
    k = args["kernel"]
    if k["launch"] is not None:
        _check_launch_json(k["launch"])
    launch = default_launch(k["ttir"], k["launch"])
    out = validate_kernel(k["ttir"], k["ptx"], k["meta"], launch, name=k["name"],
                          time_limit=float(args.get("time_limit_s", TIME_LIMIT_S)))
    return {"kernels": [out.to_json()], "summary": summary([out]), "exit": exit_code([out])}


def unknown_validation(kernel: dict, reason: str, verdict: str = "unknown") -> dict:
    """The document's fields for a kernel the service could not validate (``unknown``: out of
    time or a failed worker; ``unsupported``: outside what the validator reads)."""
    summary = {"valid": 0, "wrong": 0, "unsupported": 0, "unknown": 0}
    summary[verdict] = 1
    return {"kernels": [{"name": kernel.get("name"), "verdict": verdict, "reason": reason}], "summary": summary,
            "exit": 3}


JOB_HANDLERS = {"validate_kernel": validate_kernel_job}
