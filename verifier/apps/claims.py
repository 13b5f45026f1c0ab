"""Checking claims: parse both layouts, prove, and record the outcome of each claim.

A claim's outcome is ``holds`` (the verdict or conversion class is the expected one),
``fails`` (it is another one: the witness says why), ``error`` (a layout did not parse, or
the solver gave up: ``unknown`` never holds), or ``known`` (the claim records a known
difference, ``known = ...``, and exactly that difference was found again). A claim marked
``known`` whose expectation now holds *fails*: the difference is gone and the mark is stale.
An atlas cell (a claim with ``fragment`` and ``framework``: a framework's layout against the ISA)
whose proved verdict differs and carries no ``known`` label is a ``finding``: the check itself found
a framework that disagrees with the ISA, reported with its witness, as the atlas reports it; it is
not a failure of the corpus. ``holds``, ``known`` and ``finding`` are the passing outcomes. Claims
are checked in parallel processes.
"""
from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field

from layoutverify.apps.corpus import Claim
from layoutverify.core.errors import LayoutError

#: outcomes that do not fail a run
PASSING = ("holds", "known", "finding")
#: proved verdicts that make an unlabelled atlas cell a finding (never ``unknown``)
_PROVED_DIFFERENCES = ("not_equal", "different_tensors", "equal_up_to_register_order")


@dataclass
class Outcome:
    """The outcome of checking one claim: status (``holds``, ``fails``, ``error``, ``known``,
    ``finding``), the verdict or conversion class found, the method, the message and witness, both
    fingerprints and the property warnings."""
    claim: Claim
    status: str                 # "holds" | "fails" | "error" | "known" | "finding"
    got: str | None             # the verdict or conversion class found
    method: str | None = None
    seconds: float = 0.0
    message: str = ""           # one line: why it fails / the error
    witness: dict | None = None
    fingerprints: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)   # [{"code", "message", "side"}] (see core.properties)

    @property
    def passed(self) -> bool:
        """Whether the status is a passing one (``holds``, ``known``, ``finding``)."""
        return self.status in PASSING

    def to_json(self) -> dict:
        """The outcome as JSON, with the claim's set fields and its id."""
        d = asdict(self)
        d["claim"] = {k: v for k, v in asdict(self.claim).items() if v not in (None, "", [], {})}
        d["id"] = self.claim.id
        return d


def _load(spec: str, shape, options: dict):
    from layoutverify.adapters import parse_spec
    return parse_spec(spec, shape=shape, **options)


_PROVERS: dict = {}


def _prover(timeout_ms: int):
    """This process's batch prover (:class:`layoutverify.core.batch.Prover`) for a time limit:
    claims that repeat a pair of layouts (by canonical form) are proved once."""
    p = _PROVERS.get(timeout_ms)
    if p is None:
        from layoutverify.core.batch import Prover
        p = _PROVERS[timeout_ms] = Prover(timeout_ms=timeout_ms)
    return p


def _conversion(a, b, timeout_ms: int):
    """(class, witness, method, reason) of the conversion a -> b (:func:`layoutverify.core.conversion.analyze`)."""
    from layoutverify.core.conversion import analyze
    rep = analyze(a, b, timeout_ms=timeout_ms)
    w = rep.witness
    if w is not None:
        reason = f"not {w.get('rules_out')}: {w.get('reason')}"
    else:
        reason = "A and B are the same layout" if rep.mechanism == "no_op" else ""
    method = "conversion" + (f" ({rep.no_op_method})" if rep.no_op_method in ("f2", "z3", "table") else "")
    return rep.mechanism, w, method, reason


def check_claim(claim: Claim) -> Outcome:
    """Check one claim (never raises for bad claim input: that becomes an ``error`` outcome)."""
    t0 = time.perf_counter()
    try:
        a = _load(claim.a, claim.shape_a, claim.options_a)
        b = _load(claim.b, claim.shape_b, claim.options_b)
        fps = {"a": a.fingerprint(), "b": b.fingerprint()}
        if claim.kind == "conversion":
            got, witness, method, reason = _conversion(a, b, claim.timeout_ms)
        else:
            res = _prover(claim.timeout_ms).prove(a, b)
            got, witness, method, reason = res.verdict, res.witness, res.method, res.reason
    except LayoutError as e:
        dt = time.perf_counter() - t0
        if claim.known == "error":
            return Outcome(claim, "known", "error", None, dt, f"known difference: {e}")
        return Outcome(claim, "error", None, None, dt, str(e))
    except RecursionError:
        return Outcome(claim, "error", None, None, time.perf_counter() - t0, "input nested too deeply")
    try:
        warnings = _warnings(claim, a, b)
    except LayoutError as e:
        return Outcome(claim, "error", None, None, time.perf_counter() - t0, f"warning checks: {e}")
    out = _outcome(claim, got, witness, method, reason, fps, t0)
    out.warnings = warnings
    if claim.expect_warnings is not None and out.passed:
        codes = tuple(sorted({w["code"] for w in warnings}))
        if codes != claim.expect_warnings:
            out.status = "fails"
            out.message = (f"expected warnings {list(claim.expect_warnings)}, got {list(codes)}"
                           + (f": {warnings[0]['message']}" if warnings else ""))
    return out


def _warnings(claim: Claim, a, b) -> list[dict]:
    """Property warnings of both layouts and, with ``subtile_offsets``, of b as a sub-tile of a."""
    from layoutverify.core.properties import layout_warnings, subtile_warning
    out = [dict(w, side=side) for side, lay in (("a", a), ("b", b))
           for w in layout_warnings(lay, num_warps=claim.num_warps)]
    if claim.subtile_offsets is not None:
        w = subtile_warning(a, b, claim.subtile_offsets)
        if w is not None:
            out.append(dict(w, side="b"))
    return _jsonable(out)


def _outcome(claim: Claim, got, witness, method, reason, fps, t0) -> Outcome:
    dt = time.perf_counter() - t0
    witness = _jsonable(witness)
    if got == "unknown":
        return Outcome(claim, "error", got, method, dt, f"could not decide: {reason}", witness, fps)
    if claim.known is not None:
        if got == claim.known:
            return Outcome(claim, "known", got, method, dt,
                           f"known difference: expected {claim.expect}, the framework gives {got}: {reason}",
                           witness, fps)
        if got == claim.expect:
            return Outcome(claim, "fails", got, method, dt,
                           f"marked as a known difference ({claim.known}) but now {got}: the difference is "
                           f"gone, remove `known`", witness, fps)
        return Outcome(claim, "fails", got, method, dt,
                       f"expected {claim.expect} (known difference: {claim.known}), got {got}: {reason}",
                       witness, fps)
    if got == claim.expect:
        return Outcome(claim, "holds", got, method, dt, reason, witness, fps)
    if claim.fragment is not None and claim.framework is not None and got in _PROVED_DIFFERENCES:
        return Outcome(claim, "finding", got, method, dt,
                       f"computed finding: the ISA says {claim.expect}, the framework gives {got}: {reason}",
                       witness, fps)
    return Outcome(claim, "fails", got, method, dt,
                   f"expected {claim.expect}, got {got}: {reason}", witness, fps)


def _jsonable(x):
    """Witnesses hold numpy integers and tuples: make them plain JSON values."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    import numpy as np
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


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


def progress_bar(stream=None):
    """A progress callback drawing a bar when ``stream`` (default: the current ``sys.stderr``)
    is a terminal, else None."""
    stream = sys.stderr if stream is None else stream
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
