"""``layoutverify serve``: the verification service (HTTP API, web page, MCP endpoint).

Starts uvicorn on ``--host``/``--port`` (loopback by default) with the result store in
``--db`` (a SQLite file, by default in the user's cache directory; or ``postgresql://...`` for a
store shared by several service processes) and ``--workers`` worker processes for the proofs.
``--processes N`` runs N service processes on the one port (each with its own ``--workers``),
sharing the store; on Linux each listens on its own socket and the kernel spreads connections
over them (:mod:`layoutverify.apps.service.processes`). With ``--token-file`` every request that
computes or writes needs ``Authorization: Bearer <token>``; reads of stored results stay open
unless ``--private-reads``. Listening beyond loopback without a token is refused unless
``--insecure``. Needs the ``service`` extra (``pip install 'layoutverify[service]'``).
"""
from __future__ import annotations

import ipaddress
import json
import os
import sys

from layoutverify.core.errors import LayoutError

from .common import positive_int


def register(sub) -> None:
    """The ``serve`` subcommand's arguments."""
    p = sub.add_parser("serve", help="run the verification service (HTTP API, web page, MCP)",
                       description="Serve the JSON API under /v1 (OpenAPI at /openapi.json, docs at /docs), the web "
                                   "page at /, the MCP endpoint at /mcp, /healthz and /metrics.")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: loopback only)")
    p.add_argument("--port", type=positive_int, default=8000, help="port (default 8000)")
    p.add_argument("--db", metavar="PATH_OR_URL", default=None,
                   help="result store: a SQLite file path (default: results.sqlite3 in the user's cache directory) "
                        "or postgresql://user@host/dbname")
    p.add_argument("--workers", type=positive_int, default=None,
                   help="worker processes that run proofs (default: the number of CPUs, at most 8)")
    p.add_argument("--queue", type=positive_int, default=64,
                   help="requests that may wait for a worker; beyond that the answer is 503 (default 64)")
    p.add_argument("--worker-memory", type=positive_int, default=4096, metavar="MIB",
                   help="address-space limit of each worker process in MiB (default 4096)")
    p.add_argument("--worker-recycle", type=int, default=1024, metavar="MIB",
                   help="replace a worker whose resident memory exceeds this after a job (default 1024; 0: never)")
    p.add_argument("--processes", type=positive_int, default=1,
                   help="service processes listening on the one port, sharing the store (default 1; use PostgreSQL "
                        "for more than one)")
    p.add_argument("--token-file", metavar="FILE", default=None,
                   help="file holding a bearer token that every request that computes or writes must present")
    p.add_argument("--private-reads", action="store_true",
                   help="with --token-file: stored results, jobs and permalinks need the token too")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="an origin besides the service's own whose browser pages may POST (e.g. the public "
                        "https://verify.example.org behind a proxy that rewrites Host); repeatable")
    p.add_argument("--forwarded-allow-ips", default=None, metavar="IPS",
                   help="proxies whose X-Forwarded-For/-Proto to trust, comma-separated (default: 127.0.0.1)")
    p.add_argument("--check-budget", type=positive_int, default=600, metavar="SECONDS",
                   help="worker time one check job may spend (default 600)")
    p.add_argument("--insecure", action="store_true",
                   help="allow listening on a non-loopback address without --token-file (anyone who can reach it "
                        "may use the workers and write to the store)")
    p.set_defaults(func=run)


def _check_address(host: str, port: int) -> None:
    """Bad input before the server starts: a host that does not resolve, or an address that
    cannot be bound (in use, not ours, a privileged port)."""
    import socket
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(addr)
    except (OSError, UnicodeError) as e:   # socket.gaierror is an OSError; odd names raise UnicodeError
        raise LayoutError(f"cannot listen on {host}:{port}: {getattr(e, 'strerror', None) or e}") from None


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


#: environment variable carrying the configuration to each process of ``--processes``
CONFIG_ENV = "LAYOUTVERIFY_SERVICE_CONFIG"


def _read_token(path: str) -> str:
    from layoutverify.core.files import read_text
    token = read_text(path, what="token file", limit=4096).strip()
    if not token:
        raise LayoutError(f"token file {path!r} is empty")
    return token


def app_from_env():
    """The application of one of ``--processes`` (uvicorn's factory): its configuration from
    :data:`CONFIG_ENV`, the token read from its file by the process itself."""
    from layoutverify.apps.service.app import Config, create_app
    fields = json.loads(os.environ[CONFIG_ENV])
    token_file = fields.pop("token_file", None)
    fields["allow_origins"] = tuple(fields.get("allow_origins") or ())
    return create_app(Config(**fields, token=_read_token(token_file) if token_file else None))


def _serve_one(options: dict, sock) -> None:
    """One of ``--processes`` (in its own process): uvicorn on ``sock``."""
    import uvicorn
    config = uvicorn.Config("layoutverify.apps.commands.serve:app_from_env", factory=True, **options)
    uvicorn.Server(config).run(sockets=[sock])


def _run_processes(processes: int, options: dict) -> int:
    """``processes`` service processes on one port, supervised, accepting from one shared
    socket (or each from its own, :mod:`layoutverify.apps.service.processes`)."""
    import functools

    from uvicorn.config import STARTUP_FAILURE

    from layoutverify.apps.service import processes as procs
    backlog = 2048      # uvicorn's default, which it sets again when it starts serving on the socket
    if procs.own_sockets_supported() and os.environ.get(procs.OWN_SOCKETS_ENV) == "1":
        sockets = [procs.bind(options["host"], options["port"], backlog, reuse_port=True) for _ in range(processes)]
    else:
        sockets = [procs.bind(options["host"], options["port"], backlog, reuse_port=False)] * processes
    return procs.Supervisor(functools.partial(_serve_one, options), sockets, startup_failure=STARTUP_FAILURE).run()


def run(args) -> int:
    """Run ``layoutverify serve``: check the address, token and store, then serve until stopped
    (``--processes`` supervised processes, or one); bad input exits 2 before the server starts."""
    try:
        import uvicorn

        from layoutverify.apps.service.app import Config, create_app
    except ImportError as e:
        raise LayoutError(f"the service needs its extra ({e.name} is missing): "
                          f"pip install 'layoutverify[service]'") from None
    if args.port > 65535:
        raise LayoutError(f"--port {args.port} is not a TCP port (1..65535)")
    if not is_loopback(args.host) and not args.token_file:
        if not args.insecure:
            raise LayoutError(f"--host {args.host} is reachable from other machines and no --token-file is set: "
                              "anyone could run proofs and write to the store. Set --token-file, or pass "
                              "--insecure to serve without one")
        print(f"layoutverify: WARNING: serving on {args.host} without a token (--insecure): anyone who can reach "
              "this address may use the workers and write to the store", file=sys.stderr, flush=True)
    if args.private_reads and not args.token_file:
        raise LayoutError("--private-reads needs --token-file")
    _check_address(args.host, args.port)
    token = _read_token(args.token_file) if args.token_file else None
    from layoutverify.apps.service.workers import FAULTS_ENV
    workers = args.workers or min(8, os.cpu_count() or 1)
    fields = dict(db=args.db, workers=workers, queue=args.queue, host=args.host,
                  faults=os.environ.get(FAULTS_ENV) == "1", worker_memory_mb=args.worker_memory,
                  worker_recycle_mb=args.worker_recycle, public_reads=not args.private_reads,
                  allow_origins=tuple(args.allow_origin), check_budget_s=float(args.check_budget))
    from layoutverify.apps.service.store import Store
    Store(args.db).close()  # a store that cannot be opened is bad input, before the server starts
    where = args.db or "the user's cache directory"
    procs = f"{args.processes} processes x {workers} workers" if args.processes > 1 else f"{workers} workers"
    print(f"layoutverify: serving on http://{args.host}:{args.port} (store: {where}; {procs})",
          file=sys.stderr, flush=True)
    options = dict(host=args.host, port=args.port, log_level="warning", server_header=False,
                   timeout_graceful_shutdown=5)
    if args.forwarded_allow_ips:
        options["forwarded_allow_ips"] = args.forwarded_allow_ips
    if args.processes > 1:
        os.environ[CONFIG_ENV] = json.dumps({**fields, "allow_origins": list(fields["allow_origins"]),
                                             "token_file": os.path.abspath(args.token_file) if args.token_file
                                             else None})
        return _run_processes(args.processes, options)
    else:
        uvicorn.run(create_app(Config(**fields, token=token)), **options)
    return 0
