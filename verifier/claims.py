"""Checking claims: parse both layouts, prove, and record the outcome of each claim.

A claim's outcome is ``holds`` (the verdict or conversion class is the expected one),
``fails`` (it is another one: the witness says why), or ``error`` (a layout did not parse, or
the solver gave up: ``unknown`` never holds). Claims are checked in parallel processes.
"""
from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field

from .corpus import Claim
from .errors import LayoutError


@dataclass
class Outcome:
    claim: Claim
    status: str                 # "holds" | "fails" | "error"
    got: str | None             # the verdict or conversion class found
    method: str | None = None
    seconds: float = 0.0
    message: str = ""           # one line: why it fails / the error
    witness: dict | None = None
    fingerprints: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        d = asdict(self)
        d["claim"] = {k: v for k, v in asdict(self.claim).items() if v not in (None, "", [], {})}
        d["id"] = self.claim.id
        return d


def _load(spec: str, shape, options: dict):
    from adapters import parse_spec
    return parse_spec(spec, shape=shape, **options)


def check_claim(claim: Claim) -> Outcome:
    """Check one claim (never raises for bad claim input: that becomes an ``error`` outcome)."""
    t0 = time.perf_counter()
    try:
        a = _load(claim.a, claim.shape_a, claim.options_a)
        b = _load(claim.b, claim.shape_b, claim.options_b)
        fps = {"a": a.fingerprint(), "b": b.fingerprint()}
        if claim.kind == "conversion":
            from .conversion import analyze
            rep = analyze(a, b, timeout_ms=claim.timeout_ms)
            got = rep.mechanism
            witness = getattr(rep, "witness", None)
            method = getattr(rep, "method", "conversion")
            reason = getattr(rep, "reason", "") or f"conversion needs {got}"
        else:
            from .compare import compare
            res = compare(a, b, timeout_ms=claim.timeout_ms)
            got, witness, method, reason = res.verdict, res.witness, res.method, res.reason
    except LayoutError as e:
        return Outcome(claim, "error", None, None, time.perf_counter() - t0, str(e))
    except RecursionError:
        return Outcome(claim, "error", None, None, time.perf_counter() - t0, "input nested too deeply")
    dt = time.perf_counter() - t0
    if got == claim.expect:
        return Outcome(claim, "holds", got, method, dt, reason, witness, fps)
    if got == "unknown":
        return Outcome(claim, "error", got, method, dt, f"could not decide: {reason}", witness, fps)
    return Outcome(claim, "fails", got, method, dt,
                   f"expected {claim.expect}, got {got}: {reason}", witness, fps)


def _worker_init():
    # Keep worker output quiet; the parent prints.
    os.environ.setdefault("PYTHONWARNINGS", "ignore")


def check_claims(claims: list[Claim], jobs: int | None = None, progress=None) -> list[Outcome]:
    """Check all claims, in ``jobs`` processes (default: the number of cores), in input order."""
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(claims) <= 1:
        out = []
        for c in claims:
            out.append(check_claim(c))
            if progress:
                progress(len(out), len(claims))
        return out
    results: list[Outcome | None] = [None] * len(claims)
    done = 0
    with ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init) as pool:
        futs = {pool.submit(check_claim, c): i for i, c in enumerate(claims)}
        from concurrent.futures import as_completed
        for f in as_completed(futs):
            i = futs[f]
            try:
                results[i] = f.result()
            except Exception as e:  # a worker crash is an error outcome, not a crash of ours
                results[i] = Outcome(claims[i], "error", None, None, 0.0, f"checker crashed: {type(e).__name__}: {e}")
            done += 1
            if progress:
                progress(done, len(claims))
    return results  # type: ignore[return-value]


def progress_bar(stream=sys.stderr):
    """A progress callback drawing a bar when ``stream`` is a terminal, else a no-op."""
    if not stream.isatty():
        return None

    def draw(done: int, total: int):
        width = 30
        fill = int(width * done / max(total, 1))
        stream.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {done}/{total}")
        if done == total:
            stream.write("\n")
        stream.flush()

    return draw
