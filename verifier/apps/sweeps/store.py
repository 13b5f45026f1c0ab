"""A sweep's results directory: a manifest, one shard per range of points, a merged summary.

```
OUT/
  manifest.json        which spec (fingerprint), how many points, the shard plan
  shards/000000.jsonl  the records of points [0, S), in index order (S = shard_points)
  shards/000000.json   that shard's summary: its counts and the CPU seconds it took
  ...
  summary.json         the counts of every shard, merged (written by the coordinator)
```

Shard ``n`` holds the points ``[n * S, min((n + 1) * S, points))``. A worker writes both files of
its shard under temporary names and renames them, records first: a shard is **done** exactly
when its summary exists and names this manifest's fingerprint and its range, and then its records
are complete. Resuming runs the shards that are not done; nothing else is read, so results of
another spec are never counted, and a directory written for another spec is refused rather than
resumed (``fresh`` replaces it). ``cat OUT/shards/*.jsonl`` is every record in index order.

The coordinator holds an exclusive lock (``OUT/.lock``) while it runs, so two sweeps never write
one directory.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from layoutverify.core.errors import LayoutError

SCHEMA = "layoutverify/1"
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
SHARDS = "shards"
LOCK = ".lock"
_SHARD_FILE = re.compile(r"^\d{6,}\.jsonl?$")


def shard_files(out: str | Path, n: int, width: int = 6) -> tuple[Path, Path]:
    """(records, summary) paths of shard ``n``: ``000042.jsonl`` and ``.json``, six digits at least
    so that the files sort in index order (a sweep of more shards writes longer names: its
    manifest's ``name_width``)."""
    stem = Path(out) / SHARDS / f"{n:0{width}d}"
    return stem.with_suffix(".jsonl"), stem.with_suffix(".json")


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def write_shard(out: str | Path, n: int, width: int, records: bytes, summary: dict) -> None:
    """Write shard ``n``: its records, then its summary (the mark that it is done)."""
    write_records(out, n, width, (records,))
    write_summary(out, n, width, summary)


def write_records(out: str | Path, n: int, width: int, chunks) -> None:
    """Write the records of shard ``n`` from ``chunks`` (bytes) as they come, under a temporary
    name renamed at the end (removed if ``chunks`` fails). Written piece by piece, a shard's
    records never sit in memory whole: a 4096-point shard joined into one string and its bytes
    (about 1.6 MB) made the allocator map fresh pages for every shard, about 6% of a worker's CPU
    time in page faults."""
    path = shard_files(out, n, width)[0]
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)


def write_summary(out: str | Path, n: int, width: int, summary: dict) -> None:
    """Write the summary of shard ``n``, the mark that it is done (its records are written)."""
    _atomic_write(shard_files(out, n, width)[1], (json.dumps(summary, sort_keys=True) + "\n").encode())


def write_returned(out: str | Path, width: int, summary: dict) -> dict:
    """Write the records a worker returned (``records_z``: it did not see the results directory)
    with the rest of its summary, as the worker would have; that summary."""
    import zlib
    s = dict(summary)
    write_shard(out, s["shard"], width, zlib.decompress(s.pop("records_z")), s)
    return s


def written(spec, out: str | Path, width: int, n: int, lo: int, hi: int) -> dict | None:
    """The summary of shard ``n`` of ``spec`` if it is done (see the module docstring)."""
    return _done(Path(out), width, spec.fingerprint(), n, lo, hi)


def _done(out: Path, width: int, fingerprint: str, n: int, lo: int, hi: int) -> dict | None:
    data, meta = shard_files(out, n, width)
    s = read_json(meta) if meta.exists() else None
    if s and s.get("fingerprint") == fingerprint and s.get("lo") == lo and s.get("hi") == hi and data.exists():
        return s
    return None


def read_json(path: str | Path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def manifest_doc(spec, points: int, shard_points: int) -> dict:
    shards = -(-points // shard_points)
    return {"schema": SCHEMA, "kind": "sweep_manifest", "fingerprint": spec.fingerprint(), "task": spec.task,
            "points": points, "shard_points": shard_points, "shards": shards,
            "name_width": max(6, len(str(max(0, shards - 1)))), "spec": spec.canonical()}


class ResultsDir:
    """The coordinator's view of ``OUT`` (see the module docstring)."""

    def __init__(self, path: str | Path):
        self.given = str(path)
        self.path = Path(path)
        self._lock_fd = None
        self.created = False      # open() wrote a new manifest: no shard is done

    # -- opening -------------------------------------------------------------------------------
    def open(self, spec, points: int, shard_points: int, *, fresh: bool) -> dict:
        """Lock the directory and return its manifest: this spec's (created, or read back when
        resuming: its ``shard_points`` wins over the one asked for) or a refusal
        (:class:`LayoutError`) for a directory that is not this spec's sweep."""
        p = self.path
        if not self.given or "\0" in self.given:
            raise LayoutError(f"bad sweep results directory {self.given!r} (empty, or a NUL character)")
        if p.exists() and not p.is_dir():
            raise LayoutError(f"cannot write sweep results to {str(p)!r}: it is a file; sweep results are a "
                              f"directory (one shard per range of points), name another -o")
        try:
            (p / SHARDS).mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise LayoutError(f"cannot create the sweep results directory {str(p)!r}: {e.strerror or e}") from None
        self._lock()
        old = read_json(p / MANIFEST) if (p / MANIFEST).exists() else None
        if old is None:
            foreign = sorted(x.name for x in p.iterdir() if x.name not in (SHARDS, LOCK, SUMMARY, MANIFEST))
            foreign += sorted(x.name for x in (p / SHARDS).iterdir() if not x.name.startswith("."))
            if foreign or (p / MANIFEST).exists():
                self.close()
                raise LayoutError(f"{str(p)!r} is not a sweep results directory (no valid {MANIFEST}; it holds "
                                  f"{foreign[0] if foreign else MANIFEST!r}): name an empty or new directory with -o")
        elif old.get("kind") != "sweep_manifest" or old.get("fingerprint") != spec.fingerprint() or \
                old.get("points") != points:
            if not fresh:
                self.close()
                what = "another spec" if old.get("kind") == "sweep_manifest" else "something else"
                raise LayoutError(f"{str(p)!r} holds the results of {what} (fingerprint {old.get('fingerprint')}, "
                                  f"{old.get('points')} points; this spec: {spec.fingerprint()}, {points} points): "
                                  f"name another -o, or --fresh to replace them")
            old = None
        if old is not None and fresh:
            old = None
        if old is None:
            self._clear()
            doc = manifest_doc(spec, points, shard_points)
            _atomic_write(p / MANIFEST, (json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n").encode())
            self.created = True
            return doc
        self._drop_temporaries()
        return old

    def _lock(self) -> None:
        import fcntl
        fd = os.open(self.path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise LayoutError(f"another sweep is writing {str(self.path)!r} (it holds {LOCK}); wait for it to "
                              f"finish or name another -o") from None
        self._lock_fd = fd

    def close(self) -> None:
        """Release the directory's lock."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _clear(self) -> None:
        """Remove this module's files (never anything else) from the directory."""
        for f in (self.path / SHARDS).iterdir():
            if _SHARD_FILE.match(f.name) or f.name.endswith(".tmp"):
                f.unlink()
        for name in (SUMMARY, MANIFEST):
            try:
                (self.path / name).unlink()
            except FileNotFoundError:
                pass

    def _drop_temporaries(self) -> None:
        for f in (self.path / SHARDS).iterdir():
            if f.name.startswith(".") and f.name.endswith(".tmp"):
                f.unlink()

    # -- reading -------------------------------------------------------------------------------
    def done(self, manifest: dict) -> dict[int, dict]:
        """The summaries of the shards that are done (see the module docstring), by shard."""
        out = {}
        if self.created:
            return out
        width, fp = manifest["name_width"], manifest["fingerprint"]
        for n, lo, hi in plan(manifest):
            s = _done(self.path, width, fp, n, lo, hi)
            if s is not None:
                out[n] = s
        return out


def plan(manifest: dict):
    """``(shard, lo, hi)`` of every shard."""
    size, points = manifest["shard_points"], manifest["points"]
    for n in range(manifest["shards"]):
        yield n, n * size, min(points, (n + 1) * size)


def records(out: str | Path):
    """Every record of a results directory, in index order (the shards that are done)."""
    rd = ResultsDir(out)
    manifest = read_json(rd.path / MANIFEST)
    if not manifest:
        raise LayoutError(f"{str(out)!r} is not a sweep results directory (no {MANIFEST})")
    done = rd.done(manifest)
    for n in sorted(done):
        with open(shard_files(out, n, manifest["name_width"])[0]) as f:
            for line in f:
                yield json.loads(line)
