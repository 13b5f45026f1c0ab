"""``layoutverify serve``: the verification service (HTTP API, web page, MCP endpoint).

Starts uvicorn on ``--host``/``--port`` (loopback by default) with the result store in
``--db`` (a SQLite file, by default in the user's cache directory; or ``postgresql://...`` for a
store shared by several service processes) and ``--workers`` worker processes for the proofs.
With ``--token-file`` every POST needs ``Authorization: Bearer <token>``; reads stay open.
Needs the ``service`` extra (``pip install 'layoutverify[service]'``).
"""
from __future__ import annotations

import os
import sys

from layoutverify.core.errors import LayoutError

from .common import positive_int


def register(sub) -> None:
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
    p.add_argument("--token-file", metavar="FILE", default=None,
                   help="file holding a bearer token that POST requests must present")
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


def run(args) -> int:
    try:
        import uvicorn

        from layoutverify.apps.service.app import Config, create_app
    except ImportError as e:
        raise LayoutError(f"the service needs its extra ({e.name} is missing): "
                          f"pip install 'layoutverify[service]'") from None
    if args.port > 65535:
        raise LayoutError(f"--port {args.port} is not a TCP port (1..65535)")
    _check_address(args.host, args.port)
    token = None
    if args.token_file:
        from layoutverify.core.files import read_text
        token = read_text(args.token_file, what="token file", limit=4096).strip()
        if not token:
            raise LayoutError(f"token file {args.token_file!r} is empty")
    from layoutverify.apps.service.workers import FAULTS_ENV
    workers = args.workers or min(8, os.cpu_count() or 1)
    config = Config(db=args.db, workers=workers, queue=args.queue, token=token, host=args.host,
                    faults=os.environ.get(FAULTS_ENV) == "1", worker_memory_mb=args.worker_memory)
    from layoutverify.apps.service.store import Store
    Store(args.db).close()  # a store that cannot be opened is bad input, before the server starts
    app = create_app(config)
    where = args.db or "the user's cache directory"
    print(f"layoutverify: serving on http://{args.host}:{args.port} (store: {where}; {workers} workers)",
          file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", server_header=False,
                timeout_graceful_shutdown=5)
    return 0
