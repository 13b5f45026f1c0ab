"""What a worker process does for each job kind (see :mod:`.workers`).

Each handler takes the checked request fields (``args``) and the worker's store connection
(``None`` when it has none) and returns a JSON-able dict. Proof-like jobs (``prove``,
``analyze``, ``show``) first parse the layouts and look the question up in the store by
fingerprint: ``{"hit": {"id": ..., "result": ...}}`` when it is there, else the fresh result
with everything the server needs to store it (``kind``, ``fingerprints``, ``options``,
``result``, ``verdict``, ``smt2``, ``cacheable``).
"""
from __future__ import annotations

import os
import tempfile

from layoutverify.apps import api
from layoutverify.core.errors import LayoutError

from .version import tool_version


def _layout_opts(args: dict) -> dict:
    return {"triton_version": args.get("triton_version"), "warp_size": args.get("warp_size")}


def _lookup(store, kind, fp_a, fp_b, options):
    if store is None:
        return None
    try:
        row = store.by_key(kind, fp_a, fp_b, options, tool_version())
    except Exception:  # a store hiccup costs a recomputation, never an answer
        return None
    return None if row is None else {"hit": {"id": row["id"], "result": row["result"]}}


def prove(args: dict, store) -> dict:
    a, b = api.load_pair(args["a"], args["b"], shape=args.get("shape"), shape_b=args.get("shape_b"),
                         **_layout_opts(args))
    fps = {"a": a.fingerprint(), "b": b.fingerprint()}
    options = {"method": args.get("method", "auto"), **_layout_opts(args)}
    hit = _lookup(store, "prove", fps["a"], fps["b"], options)
    if hit:
        return {**hit, "fingerprints": fps}
    proof = api.prove_pair(args["a"], args["b"], a, b, method=options["method"],
                           timeout_ms=args.get("timeout_ms", 10_000), capture_smt2=True)
    result = proof.result.to_json()
    return {"kind": "prove", "fingerprints": fps, "options": options, "result": result,
            "verdict": result["verdict"], "smt2": proof.smt2_text, "cacheable": result["verdict"] != "unknown"}


def analyze(args: dict, store) -> dict:
    opts = _layout_opts(args)
    a = api.load(args["a"], args.get("shape"), **opts)
    b = api.load(args["b"], args.get("shape"), **opts) if args.get("b") else None
    shared = api.load(args["shared"], args.get("shape"), **opts) if args.get("shared") else None
    fps = {"a": a.fingerprint(), "b": b.fingerprint() if b is not None else ""}
    options = {"shared": shared.fingerprint() if shared is not None else None,
               "element_bits": args.get("element_bits", 16), **opts}
    hit = _lookup(store, "analyze", fps["a"], fps["b"], options)
    if hit:
        return {**hit, "fingerprints": fps}
    kind, result = api.analyze_layouts(args["a"], args.get("b"), a, b, shared=shared,
                                       element_bits=options["element_bits"], timeout_ms=args.get("timeout_ms", 10_000))
    result = {k: v for k, v in result.items() if k not in ("a", "b")}
    result = {"document": kind, **result}
    return {"kind": "analyze", "fingerprints": fps, "options": options, "result": result,
            "verdict": result.get("mechanism"), "smt2": None, "cacheable": True}


#: largest tensor whose grid ``show`` returns as data (as ``layoutverify show --max-cells``)
GRID_CELLS = 4096


def show(args: dict, store) -> dict:
    result = api.show(args["spec"], shape=args.get("shape"), grid_cells=GRID_CELLS, **_layout_opts(args))
    fps = {"a": result["fingerprint"], "b": ""}
    options = {"framework": result["framework"], **_layout_opts(args)}
    hit = _lookup(store, "show", fps["a"], "", options)
    if hit:
        return {**hit, "fingerprints": fps}
    result = {k: v for k, v in api.jsonable(result).items() if k != "spec"}
    return {"kind": "show", "fingerprints": fps, "options": options, "result": result,
            "verdict": None, "smt2": None, "cacheable": True}


def grids(args: dict, store) -> dict:
    """Both grids of a prove request as data, cut to a window around the witness (for the web page)."""
    a, b = api.load_pair(args["a"], args["b"], shape=args.get("shape"), shape_b=args.get("shape_b"),
                         **_layout_opts(args))
    return api.grid_pair(a, b, args.get("witness") or {}, window=args.get("window", 32))


def check_load(args: dict, store) -> dict:
    """Parse a corpus TOML text; the claims come back as dicts (for ``check_claim`` jobs). The
    corpus is named ``args["name"]`` (default ``request``): claim ids are ``NAME::claim``, as the
    CLI names them after the file's stem."""
    from dataclasses import asdict

    from layoutverify.apps import corpus
    name = args.get("name") or "request"
    with tempfile.TemporaryDirectory(prefix="layoutverify-check-") as d:
        path = os.path.join(d, f"{name}.toml")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(args["corpus"])
        try:
            c = corpus.load_file(path)
        except LayoutError as e:
            raise type(e)(str(e).replace(path, f"<{name}.toml>")) from None
    claims = []
    for cl in c.claims:
        d = asdict(cl)
        d["source"] = f"{name}.toml"
        claims.append(api.jsonable(d))
    return {"claims": claims}


#: Claim fields that are tuples (JSON brings them back as lists)
_TUPLE_FIELDS = ("shape_a", "shape_b", "subtile_offsets", "expect_warnings")


def claim_from_json(d: dict):
    """The :class:`~layoutverify.apps.corpus.Claim` a ``check_load`` dict describes."""
    from layoutverify.apps.corpus import Claim
    return Claim(**{**d, **{k: _tuple(d.get(k)) for k in _TUPLE_FIELDS}})


def check_claim(args: dict, store) -> dict:
    from layoutverify.apps.claims import check_claim as run_claim
    delay = float(os.environ.get(CLAIM_DELAY_ENV) or 0)
    if delay and os.environ.get("LAYOUTVERIFY_SERVICE_FAULTS") == "1":
        import time
        time.sleep(delay)
    return api.jsonable(run_claim(claim_from_json(args["claim"])).to_json())


#: test-only (with the faults switch): seconds each claim sleeps first, to stop a job mid-run
CLAIM_DELAY_ENV = "LAYOUTVERIFY_SERVICE_CLAIM_DELAY_S"


def _tuple(v):
    if isinstance(v, list):
        return tuple(_tuple(x) for x in v)
    return v


def ping(args: dict, store) -> dict:
    return {"pid": os.getpid(), "tool_version": tool_version()}


HANDLERS = {"prove": prove, "analyze": analyze, "show": show, "grids": grids, "check_load": check_load,
            "check_claim": check_claim, "ping": ping}
from .validate_job import JOB_HANDLERS as _VALIDATE_JOBS  # noqa: E402  (POST /v1/validate's job)
HANDLERS.update(_VALIDATE_JOBS)
