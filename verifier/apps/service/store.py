"""The result store: SQLite (WAL mode) by default, PostgreSQL (psycopg 3) for shared stores.

A result is keyed by ``(kind, fingerprint of A, fingerprint of B, options, tool version)``: the
same question asked again, in any spelling of the same layouts, is answered from the store. Its
id is derived from the key (the first 80 bits of its SHA-256, base32), so replicas sharing one
PostgreSQL store give the same permalink for the same question. ``unknown`` verdicts are kept
(their permalinks work) under a key of their own so that they never answer a later query.

The table ``permalinks`` maps the hash of a request *as written* to its result: a repeated
request is answered without parsing its layouts, and its permalink (``/r/{id}``) shows that
caller's own text, not the first asker's. ``views`` keeps what a permalink page draws (grids,
conversion report) once an authorised caller had it computed; ``job_claims`` keeps each claim of
a check job and its outcome, so that an interrupted job resumes where it stopped. (``aliases``,
the table permalinks replace, stays unused for old stores.)

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
    (3, [
        # a question as one caller wrote it: its permalink, and the result it was answered with
        """CREATE TABLE permalinks (
            id TEXT PRIMARY KEY,
            request_hash TEXT NOT NULL UNIQUE,
            result_id TEXT NOT NULL REFERENCES results (id),
            request TEXT NOT NULL,
            final INTEGER NOT NULL,
            created DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX permalinks_result ON permalinks (result_id)",
        # what a permalink page draws (grids, conversion report), computed once for an authorised caller
        """CREATE TABLE views (
            key TEXT PRIMARY KEY,
            permalink TEXT NOT NULL,
            view TEXT NOT NULL,
            created DOUBLE PRECISION NOT NULL)""",
        # check jobs: their claims and outcomes one by one (an interrupted job resumes where it stopped)
        "ALTER TABLE jobs ADD COLUMN owner TEXT",
        "ALTER TABLE jobs ADD COLUMN heartbeat DOUBLE PRECISION",
        "ALTER TABLE jobs ADD COLUMN spent DOUBLE PRECISION",
        """CREATE TABLE job_claims (
            job_id TEXT NOT NULL REFERENCES jobs (id),
            idx INTEGER NOT NULL,
            claim TEXT NOT NULL,
            outcome TEXT,
            PRIMARY KEY (job_id, idx))""",
        # secrets every service process on this store shares (the web form's CSRF key)
        "CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
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
    """``value`` as JSON with sorted keys and no spaces: equal values, equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def store_key(kind: str, fp_a: str, fp_b: str, options: dict, tool_version: str) -> str:
    """The key of a result: the canonical JSON of ``[kind, fp_a, fp_b, options, tool_version]``."""
    return canonical_json([kind, fp_a, fp_b, options, tool_version])


class StoreUnavailable(LayoutError):
    """The store cannot be reached (PostgreSQL down or unreachable): the service answers 503."""


class _Reconnect(Exception):
    """A pooled connection slot whose connection was lost: open a new one."""


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


class Store:
    """One connection to the store, safe to share between threads (calls are serialised)."""

    def __init__(self, url: str | None = None, *, connections: int = 4):
        self.url = url
        self.postgres = bool(url) and url.startswith(("postgresql://", "postgres://"))
        self._lock = threading.RLock()
        self.writes = 0   # write transactions committed by this process (``/metrics``)
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
            return psycopg.connect(self.url, autocommit=True, connect_timeout=5)
        except psycopg.Error as e:
            raise StoreUnavailable(f"cannot connect to the PostgreSQL store: {_first_line(e)}") from None

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def _with_conn(self, fn):
        """``fn(connection)``: SQLite's one connection under the lock, or a pooled PostgreSQL one
        (opened again once when it broke, e.g. after a server restart). A PostgreSQL server that
        cannot be reached raises :class:`StoreUnavailable`."""
        if not self.postgres:
            with self._lock:
                return fn(self.conn)
        conn = self._pool.get()
        try:
            try:
                if conn is None:
                    raise _Reconnect()
                return fn(conn)
            except Exception as e:
                if not isinstance(e, _Reconnect) and not _is_connection_error(e):
                    raise
                try:
                    if conn is not None:
                        conn.close()
                except Exception:
                    pass
                conn = None
                conn = self._connect_postgres()
                try:
                    return fn(conn)
                except Exception as e2:
                    if _is_connection_error(e2):
                        raise StoreUnavailable(_first_line(e2)) from None
                    raise
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
        self.writes += 1

    def close(self) -> None:
        """Close the store's connections."""
        if self.postgres:
            while not self._pool.empty():
                conn = self._pool.get()
                if conn is not None:
                    conn.close()
        else:
            with self._lock:
                self.conn.close()

    # -- migrations -----------------------------------------------------------------------------
    def version(self) -> int:
        """The store's schema version (0 before the first migration)."""
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
            request_hash: str | None = None) -> tuple[str | None, str]:
        """Store a result (once per key) and, for ``request_hash``, the caller's permalink to it, in
        one transaction. Returns ``(permalink id or None, result id)``.

        A result that may not answer later questions (``cacheable=False``: an ``unknown`` verdict)
        is kept under a key of its own, one row per question, replaced by the latest such answer."""
        key = store_key(kind, fp_a, fp_b, options, tool_version)
        if not cacheable:
            key = f"unknown:{key}"
        rid = result_id(key)
        values = (rid, key, kind, fp_a, fp_b, canonical_json(options), tool_version, canonical_json(request),
                  json.dumps(result), verdict, time.time(), smt2)
        insert = f"INSERT INTO results ({_RESULT_COLUMNS}, smt2) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        if cacheable:
            insert += "ON CONFLICT (key) DO NOTHING"
        else:
            insert += ("ON CONFLICT (key) DO UPDATE SET result = excluded.result, verdict = excluded.verdict, "
                       "smt2 = excluded.smt2, created = excluded.created")
        statements = [(insert, values)]
        pid = None
        if request_hash:
            pid, link = self._link_statement(request_hash, rid, request, cacheable)
            statements.append(link)
        self._transaction(statements)
        return pid, rid

    def _link_statement(self, request_hash: str, rid: str, request: dict, final: bool):
        """The permalink of a request as written: created, or moved from a non-final answer (an
        ``unknown``) to a newer one; a final answer is never replaced."""
        pid = result_id(f"request:{request_hash}")
        return pid, ("INSERT INTO permalinks (id, request_hash, result_id, request, final, created) "
                     "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (request_hash) DO UPDATE SET "
                     "result_id = excluded.result_id, final = excluded.final WHERE permalinks.final = 0",
                     (pid, request_hash, rid, canonical_json(request), 1 if final else 0, time.time()))

    def link(self, request_hash: str, rid: str, request: dict) -> str:
        """The permalink id of a request answered by the stored (final) result ``rid``."""
        pid, statement = self._link_statement(request_hash, rid, request, True)
        self._transaction([statement])
        return pid

    def by_key(self, kind: str, fp_a: str, fp_b: str, options: dict, tool_version: str) -> dict | None:
        """The stored result of ``kind`` for the fingerprints, options and tool version, or ``None``."""
        rows = self._rows(f"SELECT {_RESULT_COLUMNS} FROM results WHERE key = ?",
                          (store_key(kind, fp_a, fp_b, options, tool_version),))
        return _decode(rows[0]) if rows else None

    def by_request(self, request_hash: str) -> dict | None:
        """The final result a request (as written) was answered with, with ``permalink`` (its id)."""
        cols = ", ".join("r." + c.strip() for c in _RESULT_COLUMNS.split(","))
        rows = self._rows(f"SELECT p.id AS permalink, {cols} FROM permalinks p JOIN results r ON r.id = p.result_id "
                          "WHERE p.request_hash = ? AND p.final = 1", (request_hash,))
        return _decode(rows[0]) if rows else None

    def get(self, rid: str) -> dict | None:
        """A permalink (the result with the caller's ``request`` and ``result_id``) or a result by id."""
        cols = ", ".join("r." + c.strip() for c in _RESULT_COLUMNS.split(",") if c.strip() not in ("id", "request"))
        rows = self._rows(f"SELECT p.id AS id, p.request AS request, r.id AS result_id, {cols} FROM permalinks p "
                          "JOIN results r ON r.id = p.result_id WHERE p.id = ?", (rid,))
        if not rows:
            rows = self._rows(f"SELECT {_RESULT_COLUMNS}, id AS result_id FROM results WHERE id = ?", (rid,))
        return _decode(rows[0]) if rows else None

    def smt2(self, rid: str) -> tuple[bool, str | None]:
        """(whether the result or permalink exists, its SMT-LIB2 text or ``None``)."""
        rows = self._rows("SELECT r.smt2 AS smt2 FROM permalinks p JOIN results r ON r.id = p.result_id "
                          "WHERE p.id = ?", (rid,)) or self._rows("SELECT smt2 FROM results WHERE id = ?", (rid,))
        return (bool(rows), rows[0]["smt2"] if rows else None)

    def by_fingerprint(self, fp: str, limit: int = 100) -> list[dict]:
        """The latest results (at most ``limit``, newest first) with ``fp`` as either layout."""
        rows = self._rows(f"SELECT {_RESULT_COLUMNS}, id AS result_id FROM results WHERE fp_a = ? OR fp_b = ? "
                          "ORDER BY created DESC LIMIT ?", (fp, fp, int(limit)))
        return [_decode(r) for r in rows]

    def ids(self) -> list[str]:
        """The ids of every stored result."""
        return [r["id"] for r in self._rows("SELECT id FROM results")]

    def count(self) -> int:
        """The number of stored results."""
        return int(self._rows("SELECT COUNT(*) AS n FROM results")[0]["n"])

    def shared_secret(self, name: str) -> bytes:
        """A random secret made once per store and shared by every process that opens it."""
        rows = self._rows("SELECT value FROM settings WHERE name = ?", (name,))
        if rows:
            return bytes.fromhex(rows[0]["value"])
        self._transaction([("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
                            (name, secrets.token_hex(32)))])
        return bytes.fromhex(self._rows("SELECT value FROM settings WHERE name = ?", (name,))[0]["value"])

    # -- views ----------------------------------------------------------------------------------
    def view_get(self, key: str) -> dict | None:
        """The stored page view of ``key``, or ``None``."""
        rows = self._rows("SELECT view FROM views WHERE key = ?", (key,))
        return json.loads(rows[0]["view"]) if rows else None

    def view_put(self, key: str, permalink: str, view: dict) -> None:
        """Store the page view of ``key`` for ``permalink`` (a view stored first stays)."""
        self._transaction([("INSERT INTO views (key, permalink, view, created) VALUES (?, ?, ?, ?) "
                            "ON CONFLICT (key) DO NOTHING", (key, permalink, json.dumps(view), time.time()))])

    # -- jobs -----------------------------------------------------------------------------------
    def job_create(self, kind: str, claims: list[dict], owner: str) -> str:
        """A running job owned by ``owner`` with its claims (outcomes still to come)."""
        jid = secrets.token_hex(8)
        now = time.time()
        statements = [("INSERT INTO jobs (id, kind, status, done, total, created, updated, owner, heartbeat, spent) "
                       "VALUES (?, ?, 'running', 0, ?, ?, ?, ?, ?, 0)", (jid, kind, len(claims), now, now, owner, now))]
        statements += [("INSERT INTO job_claims (job_id, idx, claim) VALUES (?, ?, ?)", (jid, i, json.dumps(c)))
                       for i, c in enumerate(claims)]
        self._transaction(statements)
        return jid

    def job_claims(self, jid: str) -> list[tuple[int, dict, dict | None]]:
        """``(index, claim, outcome or None)`` of every claim of a job, in order."""
        rows = self._rows("SELECT idx, claim, outcome FROM job_claims WHERE job_id = ? ORDER BY idx", (jid,))
        return [(r["idx"], json.loads(r["claim"]), json.loads(r["outcome"]) if r["outcome"] else None) for r in rows]

    def job_claim_done(self, jid: str, idx: int, outcome: dict, seconds: float, owner: str) -> None:
        """Record one claim's outcome and the job's progress, in one transaction."""
        now = time.time()
        self._transaction([
            ("UPDATE job_claims SET outcome = ? WHERE job_id = ? AND idx = ? AND outcome IS NULL",
             (json.dumps(outcome, default=str), jid, idx)),
            ("UPDATE jobs SET done = (SELECT COUNT(*) FROM job_claims WHERE job_id = ? AND outcome IS NOT NULL), "
             "spent = spent + ?, updated = ?, heartbeat = ? WHERE id = ? AND owner = ?",
             (jid, float(seconds), now, now, jid, owner))])

    def job_finish(self, jid: str, *, status: str, result=None, error: str | None = None) -> None:
        """End job ``jid`` with ``status``, its result or error, and its final count of claims done."""
        now = time.time()
        self._transaction([("UPDATE jobs SET status = ?, result = ?, error = ?, updated = ?, heartbeat = ?, "
                            "done = (SELECT COUNT(*) FROM job_claims WHERE job_id = ? AND outcome IS NOT NULL) "
                            "WHERE id = ?", (status, None if result is None else json.dumps(result, default=str),
                                             error, now, now, jid, jid))])

    def job_heartbeat(self, jids: list[str], owner: str) -> None:
        """Beat the heartbeat of the running jobs ``jids`` that ``owner`` holds."""
        now = time.time()
        self._transaction([("UPDATE jobs SET heartbeat = ? WHERE id = ? AND owner = ? AND status = 'running'",
                            (now, jid, owner)) for jid in jids])

    def job_take_stale(self, owner: str, stale_s: float) -> list[str]:
        """Take over running jobs whose owner has not shown a sign of life for ``stale_s`` seconds
        (its server was stopped or killed); each is taken by one process only."""
        now = time.time()
        rows = self._rows("SELECT id, heartbeat FROM jobs WHERE status = 'running' AND "
                          "(heartbeat IS NULL OR heartbeat < ?)", (now - stale_s,))
        taken = []
        for r in rows:
            def claim(conn, jid=r["id"], beat=r["heartbeat"]):
                if beat is None:
                    sql = "UPDATE jobs SET owner = ?, heartbeat = ? WHERE id = ? AND heartbeat IS NULL"
                    params = (owner, now, jid)
                else:
                    sql = "UPDATE jobs SET owner = ?, heartbeat = ? WHERE id = ? AND heartbeat = ?"
                    params = (owner, now, jid, beat)
                return conn.execute(self._sql(sql), params).rowcount
            if self._with_conn(claim) == 1:
                self.writes += 1
                taken.append(r["id"])
        return taken

    def job_get(self, jid: str) -> dict | None:
        """Job ``jid`` (kind, status, progress, result, error, times), or ``None``."""
        rows = self._rows("SELECT id, kind, status, done, total, result, error, created, updated, heartbeat, spent "
                          "FROM jobs WHERE id = ?", (jid,))
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
