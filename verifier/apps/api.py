"""Requests as functions: the one place where a prove / analyze / show request becomes a result.

The CLI (:mod:`layoutverify.apps.commands`) and the service (:mod:`layoutverify.apps.service`)
both call these functions and render what they return, so that a verdict, a witness and an error
message are the same whichever way the question was asked (as in mypy's ``api.py``: functions
return results, renderers make text).

Layout specs are ``FRAMEWORK:TEXT`` as everywhere; shapes are text (``"64x64"``) or lists of
positive integers. Every bad input raises :class:`~layoutverify.core.errors.LayoutError`.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

from layoutverify.adapters import FRAMEWORKS, adapter, parse_shape, parse_spec, split_spec
# (grid_pair: part of this API, the service's ``grids`` job calls it)
from layoutverify.apps.proof_render import MAX_GRID_LOCATIONS, exit_code, grid, grid_pair, proof_fields  # noqa: F401
from layoutverify.core.compare import Result, compare
from layoutverify.core.errors import LayoutError, ParseError
from layoutverify.core.layout import Layout


def shape_of(value) -> tuple | None:
    """``"64x64"``, ``[64, 64]`` or ``None`` -> a shape tuple (or ``None``)."""
    if value is None:
        return None
    if isinstance(value, str):
        return parse_shape(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return parse_shape("x".join(str(v) for v in value)) if value else parse_shape("")
    raise LayoutError(f"a shape must be text like '64x64' or a list of positive integers, got {type(value).__name__}")


def spec_options(spec: str, *, warp_size: int | None = None, triton_version: str | None = None) -> dict:
    """Adapter options for ``spec``: ``warp_size`` for every framework, ``triton_version`` for Triton only."""
    opts = {}
    if warp_size:
        opts["warp_size"] = warp_size
    if triton_version and split_spec_framework(spec) == "triton":
        opts["triton_version"] = triton_version
    return opts


def split_spec_framework(spec: str) -> str:
    """The framework a spec names (or that its text looks like), without reading any file."""
    if not isinstance(spec, str):
        raise LayoutError(f"a layout spec must be text, got {type(spec).__name__}")
    head, sep, _ = spec.partition(":")
    if sep and head.strip().lower() in FRAMEWORKS:
        return head.strip().lower()
    from layoutverify.adapters import guess_framework
    return guess_framework(spec)


def load(spec: str, shape=None, *, warp_size: int | None = None, triton_version: str | None = None) -> Layout:
    """Parse one layout spec through the adapter registry."""
    return parse_spec(spec, shape=shape_of(shape),
                      **spec_options(spec, warp_size=warp_size, triton_version=triton_version))


# -- prove ---------------------------------------------------------------------------------------
@dataclass
class Proof:
    """A prove request's answer: both layouts, the :class:`Result`, and the specs as written."""

    spec_a: str
    spec_b: str
    a: Layout
    b: Layout
    result: Result
    strict: bool = False
    smt2: str | None = None         # the file the z3 queries were written to (``--emit-smt2``)
    smt2_text: str | None = None    # the queries themselves (``capture_smt2``)

    @property
    def exit_code(self) -> int:
        """The exit status of the verdict (:func:`layoutverify.apps.proof_render.exit_code`)."""
        return exit_code(self.result.verdict, self.strict)

    def to_json(self) -> dict:
        """The fields of the ``proof`` document ``layoutverify prove --json`` prints."""
        from layoutverify import __version__
        return proof_fields(self.result.to_json(), a=self.spec_a, b=self.spec_b,
                            fingerprints={"a": self.a.fingerprint(), "b": self.b.fingerprint()},
                            code=self.exit_code, tool_version=__version__, smt2=self.smt2)


def load_pair(spec_a: str, spec_b: str, *, shape=None, shape_b=None, triton_version: str | None = None,
              warp_size: int | None = None) -> tuple[Layout, Layout]:
    """Parse A and B; ``shape`` applies to A, and to B unless ``shape_b`` is given."""
    sa = shape_of(shape)
    sb = shape_of(shape_b) if shape_b else sa
    return (load(spec_a, sa, warp_size=warp_size, triton_version=triton_version),
            load(spec_b, sb, warp_size=warp_size, triton_version=triton_version))


def prove_pair(spec_a: str, spec_b: str, a: Layout, b: Layout, *, method: str = "auto", timeout_ms: int = 10_000,
               strict: bool = False, smt2: str | None = None, capture_smt2: bool = False) -> Proof:
    """Prove the verdict for two parsed layouts (:func:`layoutverify.core.compare.compare`).

    ``smt2`` names a file that receives every z3 query as SMT-LIB2. With ``capture_smt2`` the
    SMT-LIB2 text of the z3 queries is kept in ``Proof.smt2_text`` when z3 decides (through a
    private temporary file; when ``auto`` chose z3, the queries are asked once more to write them).
    """
    if not isinstance(timeout_ms, int) or isinstance(timeout_ms, bool) or timeout_ms <= 0:
        raise LayoutError("--timeout-ms must be positive")
    want_text = capture_smt2 and smt2 is None
    if not (want_text and method == "z3"):
        res = compare(a, b, method=method, timeout_ms=timeout_ms, smt2=smt2)
        if not (want_text and res.method.startswith("z3")):
            return Proof(spec_a, spec_b, a, b, res, strict=strict, smt2=smt2)
        # ``auto`` chose z3: ask the same z3 queries again, this time written out (z3 proofs only)
    with tempfile.TemporaryDirectory(prefix="layoutverify-smt2-") as d:
        path = os.path.join(d, "queries.smt2")
        zres = compare(a, b, method="z3", timeout_ms=timeout_ms, smt2=path)
        zres.details.pop("smt2", None)
        if method == "z3":
            res = zres
        text = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
    return Proof(spec_a, spec_b, a, b, res, strict=strict, smt2_text=text)


def prove(spec_a: str, spec_b: str, *, shape=None, shape_b=None, method: str = "auto", timeout_ms: int = 10_000,
          triton_version: str | None = None, warp_size: int | None = None, strict: bool = False,
          smt2: str | None = None, capture_smt2: bool = False) -> Proof:
    """Parse both layouts (:func:`load_pair`) and prove the verdict (:func:`prove_pair`)."""
    if not isinstance(timeout_ms, int) or isinstance(timeout_ms, bool) or timeout_ms <= 0:
        raise LayoutError("--timeout-ms must be positive")
    a, b = load_pair(spec_a, spec_b, shape=shape, shape_b=shape_b, triton_version=triton_version,
                     warp_size=warp_size)
    return prove_pair(spec_a, spec_b, a, b, method=method, timeout_ms=timeout_ms, strict=strict, smt2=smt2,
                      capture_smt2=capture_smt2)


# -- analyze, show ------------------------------------------------------------------------------
def analyze(spec_a: str, spec_b: str | None = None, *, shape=None, shared: str | None = None,
            element_bits: int = 16, timeout_ms: int = 10_000, triton_version: str | None = None,
            warp_size: int | None = None) -> tuple[str, dict]:
    """``(kind, fields)`` of ``layoutverify analyze --json``: ``("conversion", report)`` for A -> B,
    ``("properties", {"layouts": {"A": ...}})`` for A alone."""
    from layoutverify.core.banks import element_bytes
    element_bytes(element_bits)
    if not isinstance(timeout_ms, int) or isinstance(timeout_ms, bool) or timeout_ms <= 0:
        raise LayoutError("--timeout-ms must be positive")
    opts = dict(warp_size=warp_size, triton_version=triton_version)
    a = load(spec_a, shape, **opts)
    b = load(spec_b, shape, **opts) if spec_b else None
    sh = load(shared, shape, **opts) if shared else None
    return analyze_layouts(spec_a, spec_b, a, b, shared=sh, element_bits=element_bits, timeout_ms=timeout_ms)


def analyze_layouts(spec_a: str, spec_b: str | None, a: Layout, b: Layout | None, *, shared: Layout | None = None,
                    element_bits: int = 16, timeout_ms: int = 10_000) -> tuple[str, dict]:
    """:func:`analyze` for parsed layouts."""
    from layoutverify.core.banks import element_bytes
    element_bytes(element_bits)
    if b is None:
        from layoutverify.core.properties import properties
        return "properties", {"layouts": {"A": properties_fields(properties(a, element_bits=element_bits))}}
    from layoutverify.core.conversion import analyze as analyze_conversion
    rep = analyze_conversion(a, b, shared=shared, element_bits=element_bits, timeout_ms=timeout_ms)
    return "conversion", {"a": spec_a, "b": spec_b, **jsonable(rep.to_json())}


def properties_fields(p: dict) -> dict:
    """A layout's properties as the ``properties`` document lists them (``kind`` -> ``layout_kind``)."""
    return {("layout_kind" if k == "kind" else k): v for k, v in jsonable(p).items()}


def show(spec: str, *, shape=None, triton_version: str | None = None, warp_size: int | None = None,
         grid_cells: int = 0) -> dict:
    """The fields of ``layoutverify show --json``'s ``layout`` document (without ``--native``);
    with ``grid_cells``, also ``grid`` (:func:`grid`) for tensors of at most that many elements."""
    fw, text = split_spec(spec)
    lay = adapter(fw).parse(text, shape=shape_of(shape),
                            **spec_options(spec, warp_size=warp_size, triton_version=triton_version))
    out = {"framework": fw, "spec": spec, "layout_kind": lay.kind, "layout": lay.to_json(),
           "fingerprint": lay.fingerprint(), "f2_linear": lay.is_f2_linear()}
    if grid_cells:
        if lay.out_size() <= grid_cells and lay.in_size() <= MAX_GRID_LOCATIONS:
            out["grid"] = grid(lay, lead=(0,) * max(0, len(lay.out_sizes) - 2))
        else:
            out["grid"] = {"drawn": False, "why": f"more than {grid_cells} elements"}
    return out


def jsonable(x):
    """Plain JSON values: tuples -> lists, numpy integers -> int, keys -> str."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        return x
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.floating):
        return float(x)
    return x


# -- errors as data ------------------------------------------------------------------------------
def error_object(exc: BaseException, code: str | None = None) -> dict:
    """``{"error": {"code", "message", "token"}}`` for a bad-input exception: the CLI's codes
    (:func:`layoutverify.apps.jsonout.error_code`) and one-line messages; ``column`` too for a
    parse error that knows it."""
    from layoutverify.apps import jsonout
    if isinstance(exc, RecursionError):
        return {"error": {"code": "bad_input", "message": "input nested too deeply", "token": None}}
    err = {"code": code or jsonout.error_code(exc), "message": str(exc),
           "token": getattr(exc, "token", None) if isinstance(exc, ParseError) else None}
    if isinstance(exc, ParseError) and exc.column is not None:
        err["column"] = exc.column
    return {"error": err}
