"""The result store: SQLite (WAL mode) by default, PostgreSQL (psycopg 3) for shared stores.

A result is keyed by ``(kind, fingerprint of A, fingerprint of B, options, tool version)``: the
same question asked again, in any spelling of the same layouts, is answered from the store. Its
id is derived from the key (the first 80 bits of its SHA-256, base32), so replicas sharing one
PostgreSQL store give the same permalink for the same question. ``unknown`` verdicts are kept
(their permalinks work) under a key of their own so that they never answer a later query.

A second table, ``aliases``, maps the hash of a request *as written* to its result, so that a
repeated request is answered without parsing its layouts.

Durability: a result is acknowledged only after its transaction commits. SQLite runs in WAL
mode with ``synchronous=NORMAL``: a committed transaction survives the process being killed
(``kill -9``) at any point; PostgreSQL commits are durable by its own settings.

Schema migrations are versioned: :data:`MIGRATIONS` lists them in order, the table
``schema_version`` records the last one applied, and :meth:`Store.migrate` applies the missing
ones in one transaction (under an advisory lock on PostgreSQL, so replicas starting together do
not race).
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import queue
import secrets
import sqlite3
import threading
import time
from pathlib import Path

from layoutverify.core.errors import LayoutError

#: (version, statements); append, never edit an applied one
MIGRATIONS: list[tuple[int, list[str]]] = [
    (1, [
        """CREATE TABLE results (
            id TEXT PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            fp_a TEXT NOT NULL,
            fp_b TEXT NOT NULL,
            options TEXT NOT NULL,
            tool_version TEXT NOT NULL,
            request TEXT NOT NULL,
            result TEXT NOT NULL,
            verdict TEXT,
            smt2 TEXT,
            created DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX results_fp_a ON results (fp_a)",
        "CREATE INDEX results_fp_b ON results (fp_b)",
        """CREATE TABLE aliases (
            request_hash TEXT PRIMARY KEY,
            result_id TEXT NOT NULL REFERENCES results (id))""",
    ]),
    (2, [
        """CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            status TEXT NOT NULL,
            done INTEGER NOT NULL,
            total INTEGER NOT NULL,
            result TEXT,
            error TEXT,
            created DOUBLE PRECISION NOT NULL,
            updated DOUBLE PRECISION NOT NULL)""",
    ]),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]

_RESULT_COLUMNS = "id, key, kind, fp_a, fp_b, options, tool_version, request, result, verdict, created"


def default_path() -> Path:
    """``$XDG_CACHE_HOME/layoutverify/results.sqlite3`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "layoutverify" / "results.sqlite3"


def result_id(key: str) -> str:
    """A short, URL-safe id derived from the store key (16 base32 characters)."""
    digest = hashlib.sha256(key.encode()).digest()[:10]
    return base64.b32encode(digest).decode().lower()


def canonical_json(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def store_key(kind: str, fp_a: str, fp_b: str, options: dict, tool_version: str) -> str:
    return canonical_json([kind, fp_a, fp_b, options, tool_version])


class Store:
    """One connection to the store, safe to share between threads (calls are serialised)."""

    def __init__(self, url: str | None = None, *, connections: int = 4):
        self.url = url
        self.postgres = bool(url) and url.startswith(("postgresql://", "postgres://"))
        self._lock = threading.RLock()
        if self.postgres:
            # a few connections, so that threads do not wait on each other's round trips and commits
            self._pool: queue.LifoQueue = queue.LifoQueue()
            for _ in range(connections):
                self._pool.put(self._connect_postgres())
            self.where = "PostgreSQL"
        else:
            path = Path(url) if url else default_path()
            if url and url.startswith("sqlite:///"):
                path = Path(url[len("sqlite:///"):])
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self.conn = sqlite3.connect(str(path), timeout=30, isolation_level=None, check_same_thread=False)
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")
                self.conn.execute("PRAGMA busy_timeout=30000")
            except (OSError, sqlite3.Error) as e:
                raise LayoutError(f"cannot open the result store {str(path)!r}: {e}") from None
            self.where = str(path)
        self.migrate()

    # -- connection and SQL ---------------------------------------------------------------------
    def _connect_postgres(self):
        try:
            import psycopg
        except ImportError:
            raise LayoutError("a PostgreSQL store needs psycopg 3: pip install 'layoutverify[service]'") from None
        try:
            return psycopg.connect(self.url, autocommit=True)
        except psycopg.Error as e:
            raise LayoutError(f"cannot connect to the PostgreSQL store: {str(e).splitlines()[0]}") from None

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def _with_conn(self, fn):
        """``fn(connection)``: SQLite's one connection under the lock, or a pooled PostgreSQL one
        (opened again once when it broke, e.g. after a server restart)."""
        if not self.postgres:
            with self._lock:
                return fn(self.conn)
        conn = self._pool.get()
        try:
            try:
                return fn(conn)
            except Exception as e:
                if not _is_connection_error(e):
                    raise
                try:
                    conn.close()
                except Exception:
                    pass
                conn = self._connect_postgres()
                return fn(conn)
        finally:
            self._pool.put(conn)

    def _rows(self, sql: str, params=()) -> list[dict]:
        def run(conn):
            cur = conn.execute(self._sql(sql), params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]
        return self._with_conn(run)

    def _transaction(self, statements: list[tuple[str, tuple]]) -> None:
        def run(conn):
            if self.postgres:
                with conn.transaction():
                    for sql, params in statements:
                        conn.execute(self._sql(sql), params)
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                for sql, params in statements:
                    conn.execute(sql, params)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        self._with_conn(run)

    def close(self) -> None:
        if self.postgres:
            while not self._pool.empty():
                self._pool.get().close()
        else:
            with self._lock:
                self.conn.close()

    # -- migrations -----------------------------------------------------------------------------
    def version(self) -> int:
        rows = self._rows("SELECT MAX(version) AS v FROM schema_version")
        return int(rows[0]["v"] or 0)

    def migrate(self) -> int:
        """Apply the migrations this store lacks; returns the schema version."""
        def run(conn):
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            if self.postgres:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(7461626)")
                    self._apply(conn.execute)
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._apply(conn.execute)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        self._with_conn(run)
        return self.version()

    def _apply(self, execute) -> None:
        row = execute("SELECT MAX(version) FROM schema_version").fetchone()
        current = int(row[0] or 0)
        if current > SCHEMA_VERSION:
            raise LayoutError(f"the result store has schema version {current}, newer than this layoutverify "
                              f"({SCHEMA_VERSION}); upgrade layoutverify")
        for version, statements in MIGRATIONS:
            if version <= current:
                continue
            for sql in statements:
                execute(sql)
            execute(self._sql("INSERT INTO schema_version (version) VALUES (?)"), (version,))

    # -- results --------------------------------------------------------------------------------
    def put(self, *, kind: str, fp_a: str, fp_b: str, options: dict, tool_version: str, request: dict,
            result: dict, verdict: str | None, smt2: str | None = None, cacheable: bool = True,
            request_hash: str | None = None) -> str:
        """Store a result (once per key) and return its id; ``request_hash`` also gets an alias."""
        key = store_key(kind, fp_a, fp_b, options, tool_version)
        if not cacheable:
            key = f"uncached:{secrets.token_hex(16)}:{key}"
        rid = result_id(key)
        statements = [(
            f"INSERT INTO results ({_RESULT_COLUMNS}, smt2) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (key) DO NOTHING",
            (rid, key, kind, fp_a, fp_b, canonical_json(options), tool_version, canonical_json(request),
             json.dumps(result), verdict, time.time(), smt2))]
        if request_hash and cacheable:
            statements.append(("INSERT INTO aliases (request_hash, result_id) VALUES (?, ?) "
                               "ON CONFLICT (request_hash) DO NOTHING", (request_hash, rid)))
        self._transaction(statements)
        return rid

    def add_alias(self, request_hash: str, rid: str) -> None:
        self._transaction([("INSERT INTO aliases (request_hash, result_id) VALUES (?, ?) "
                            "ON CONFLICT (request_hash) DO NOTHING", (request_hash, rid))])

    def by_key(self, kind: str, fp_a: str, fp_b: str, options: dict, tool_version: str) -> dict | None:
        rows = self._rows(f"SELECT {_RESULT_COLUMNS} FROM results WHERE key = ?",
                          (store_key(kind, fp_a, fp_b, options, tool_version),))
        return _decode(rows[0]) if rows else None

    def by_alias(self, request_hash: str) -> dict | None:
        rows = self._rows(f"SELECT {', '.join('r.' + c.strip() for c in _RESULT_COLUMNS.split(','))} "
                          "FROM aliases a JOIN results r ON r.id = a.result_id WHERE a.request_hash = ?",
                          (request_hash,))
        return _decode(rows[0]) if rows else None

    def get(self, rid: str) -> dict | None:
        rows = self._rows(f"SELECT {_RESULT_COLUMNS} FROM results WHERE id = ?", (rid,))
        return _decode(rows[0]) if rows else None

    def smt2(self, rid: str) -> tuple[bool, str | None]:
        """(whether the result exists, its SMT-LIB2 text or ``None``)."""
        rows = self._rows("SELECT smt2 FROM results WHERE id = ?", (rid,))
        return (bool(rows), rows[0]["smt2"] if rows else None)

    def by_fingerprint(self, fp: str, limit: int = 100) -> list[dict]:
        rows = self._rows(f"SELECT {_RESULT_COLUMNS} FROM results WHERE fp_a = ? OR fp_b = ? "
                          "ORDER BY created DESC LIMIT ?", (fp, fp, int(limit)))
        return [_decode(r) for r in rows]

    def ids(self) -> list[str]:
        return [r["id"] for r in self._rows("SELECT id FROM results")]

    def count(self) -> int:
        return int(self._rows("SELECT COUNT(*) AS n FROM results")[0]["n"])

    # -- jobs -----------------------------------------------------------------------------------
    def job_create(self, kind: str, total: int) -> str:
        jid = secrets.token_hex(8)
        now = time.time()
        self._transaction([("INSERT INTO jobs (id, kind, status, done, total, created, updated) "
                            "VALUES (?, ?, 'running', 0, ?, ?, ?)", (jid, kind, int(total), now, now))])
        return jid

    def job_update(self, jid: str, *, done: int, status: str = "running", result=None, error: str | None = None):
        self._transaction([("UPDATE jobs SET done = ?, status = ?, result = ?, error = ?, updated = ? WHERE id = ?",
                            (int(done), status, None if result is None else json.dumps(result), error,
                             time.time(), jid))])

    def job_get(self, jid: str) -> dict | None:
        rows = self._rows("SELECT id, kind, status, done, total, result, error, created, updated FROM jobs "
                          "WHERE id = ?", (jid,))
        if not rows:
            return None
        row = rows[0]
        row["result"] = json.loads(row["result"]) if row["result"] else None
        return row


def _decode(row: dict) -> dict:
    row = dict(row)
    for k in ("options", "request", "result"):
        row[k] = json.loads(row[k])
    return row


def _is_connection_error(e: Exception) -> bool:
    try:
        import psycopg
    except ImportError:
        return False
    return isinstance(e, (psycopg.OperationalError, psycopg.InterfaceError))
