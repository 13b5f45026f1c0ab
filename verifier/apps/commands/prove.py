"""``layoutverify prove A B``: prove two layouts equal, or show where they differ.

Exit status: 0 ``equal``; 0 ``equal_up_to_register_order`` (the verdict is printed; with
``--strict`` it is 1); 1 ``not_equal`` / ``different_tensors``; 3 ``unknown`` (the solver gave
up); 2 bad input.

On anything but ``equal`` the witness is drawn: the two layouts' grids side by side (rows
``dim0``, columns ``dim1``, cells ``T{thread}:{register}`` as in ``show``), cut to a window
around the witness element for big tiles, with the witness cells in ``>...<`` and every other
cell whose holders differ between A and B marked ``*``.
"""
from __future__ import annotations

import json

import numpy as np

from layoutverify.apps import jsonout

from layoutverify.core.compare import METHODS
from layoutverify.core.table import TABLE_FALLBACK
from layoutverify.core.errors import LayoutError
from .common import add_triton_version_option, output_path, positive_int, warp_size

EXIT = {"equal": 0, "equal_up_to_register_order": 0, "not_equal": 1, "different_tensors": 1, "unknown": 3}

#: ``--method``'s help: the order ``auto`` follows (layoutverify.core.compare's docstring)
METHOD_HELP = ("auto (default): the normal forms first, then f2 when both layouts declare F2 bases, "
               "else radix when it decides, else f2 when both are F2-linear, else table up to "
               f"2^{TABLE_FALLBACK.bit_length() - 1} hardware locations, else z3; "
               "or one strategy: f2 (GF(2) bases), radix (mixed-radix digits), table (explicit "
               "evaluation) or z3 (bit-vector queries with --timeout-ms)")

#: Grids are drawn only for layouts with at most this many hardware locations.
MAX_DRAWN_LOCATIONS = 1 << 18


def register(sub) -> None:
    p = sub.add_parser("prove", help="prove two layouts equal or print a counterexample",
                       description="Compare layout A with layout B and prove the verdict: equal, "
                                   "equal_up_to_register_order, not_equal, different_tensors (with a "
                                   "witness), or unknown (solver gave up). Exit 0 equal (and equal up "
                                   "to register order unless --strict), 1 different, 3 unknown, 2 bad input.")
    p.add_argument("a", metavar="A", help="first layout, FRAMEWORK:TEXT")
    p.add_argument("b", metavar="B", help="second layout, FRAMEWORK:TEXT")
    p.add_argument("--shape", help="logical shape for A (and for B unless --shape-b), e.g. 64x64")
    p.add_argument("--shape-b", help="logical shape for B when it differs from --shape")
    p.add_argument("--warp-size", type=warp_size, default=None,
                   help="threads per warp where the text does not fix it (32 NVIDIA, 64 AMD wave64)")
    add_triton_version_option(p)
    p.add_argument("--method", choices=METHODS, default="auto", help=METHOD_HELP)
    p.add_argument("--timeout-ms", type=positive_int, default=10_000, help="time limit per solver query (default 10000)")
    p.add_argument("--emit-smt2", metavar="FILE", type=output_path("SMT-LIB2 file"), help="write every z3 query as SMT-LIB2 to FILE")
    p.add_argument("--strict", action="store_true", help="exit 1 for equal_up_to_register_order")
    p.add_argument("--window", type=positive_int, default=16, help="largest number of rows/columns drawn per grid (default 16)")
    p.add_argument("--no-grid", action="store_true", help="do not draw the grids")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.timeout_ms is not None and args.timeout_ms <= 0:
        raise LayoutError("--timeout-ms must be positive")
    if args.window < 1:
        raise LayoutError("--window must be positive")
    from layoutverify.apps import api  # the same request function the service calls
    proof = api.prove(args.a, args.b, shape=args.shape, shape_b=args.shape_b, method=args.method,
                      timeout_ms=args.timeout_ms, triton_version=getattr(args, "triton_version", None),
                      warp_size=getattr(args, "warp_size", None), strict=args.strict, smt2=args.emit_smt2)
    a, b, res, code = proof.a, proof.b, proof.result, proof.exit_code
    if args.json:
        jsonout.emit("proof", proof_json(res, a, b, code=code, a_spec=args.a, b_spec=args.b, smt2=args.emit_smt2))
        return code
    print(f"verdict: {res.verdict}")
    print(f"method:  {res.method}  ({res.seconds * 1000:.1f} ms)")
    print(f"reason:  {res.reason}")
    if res.witness:
        print(f"witness: {json.dumps(res.to_json()['witness'])}")
    if args.emit_smt2:
        print(f"smt2:    {args.emit_smt2}")
    if res.verdict not in ("equal", "unknown") and res.method != "kinds" and not args.no_grid:
        text = side_by_side(a, b, res.witness or {}, window=args.window)
        if text:
            print()
            print(text)
    return code


def proof_json(res, a, b, *, code: int, a_spec: str | None = None, b_spec: str | None = None,
               smt2: str | None = None) -> dict:
    """The fields of a ``proof`` document (docs/json-schema.md); the HTTP service answers with the same."""
    from layoutverify import __version__
    out = {}
    if a_spec is not None:
        out["a"] = a_spec
    if b_spec is not None:
        out["b"] = b_spec
    out.update(res.to_json())
    out["fingerprints"] = {"a": a.fingerprint(), "b": b.fingerprint()}
    out["tool_version"] = __version__
    out["exit"] = code
    if smt2:
        out["smt2"] = smt2
    return out


# -- drawing ----------------------------------------------------------------------------------
def _cell_text(holders: list[str], max_holders: int = 2) -> str:
    if not holders:
        return "."
    if len(holders) > max_holders:
        return "|".join(holders[:max_holders]) + f"|+{len(holders) - max_holders}"
    return "|".join(holders)


def witness_elements(witness: dict) -> tuple[list | None, list | None]:
    """The element to highlight in A's grid and in B's grid."""
    if "element" in witness:
        return witness["element"], witness["element"]
    return witness.get("a"), witness.get("b")


def side_by_side(a, b, witness: dict, *, window: int = 16) -> str:
    """A's and B's grids next to each other around the witness element(s)."""
    if a.out_dims != b.out_dims:
        return ""
    if max(a.in_size(), b.in_size()) > MAX_DRAWN_LOCATIONS:
        return f"(grids not drawn: more than {MAX_DRAWN_LOCATIONS} hardware locations)"
    from layoutverify.core.render import holder_labels
    shape = a.out_sizes
    la, lb = holder_labels(a), holder_labels(b)
    ea, eb = witness_elements(witness)
    focus = ea if ea is not None else eb
    if focus is None:
        focus = [0] * len(shape)
    # A 2-D slice through the focus element: rows dim[-2], columns dim[-1].
    if len(shape) == 1:
        rows, cols, lead = 1, shape[0], ()
        fr, fc = 0, focus[0]
    else:
        rows, cols = shape[-2], shape[-1]
        lead = tuple(focus[:-2])
        fr, fc = focus[-2], focus[-1]
    strides = np.cumprod([1] + list(reversed(shape)))[::-1][1:]

    def flat(r, c):
        coords = list(lead) + ([r, c] if len(shape) > 1 else [c])
        return int(sum(int(x) * int(s) for x, s in zip(coords, strides)))

    def marked(el):
        if el is None:
            return None
        if len(shape) == 1:
            return flat(0, el[0])
        return flat(el[-2], el[-1]) if tuple(el[:-2]) == lead else None

    wa, wb = marked(ea), marked(eb)
    nrows = min(rows, window)
    r0 = min(max(0, fr - nrows // 2), rows - nrows)
    texts_a = {}
    texts_b = {}
    width = 1
    for r in range(r0, r0 + nrows):
        for c in range(cols):
            f = flat(r, c)
            texts_a[f], texts_b[f] = _cell_text(la[f]), _cell_text(lb[f])
            width = max(width, len(texts_a[f]), len(texts_b[f]))
    ncols = min(cols, window, max(4, 72 // (width + 3)))
    c0 = min(max(0, fc - ncols // 2), cols - ncols)

    def grid(texts, labels, other, wflat, title):
        lines = [title]
        rw = len(str(r0 + nrows - 1))
        lines.append(" " * (rw + 2) + " ".join(str(c).rjust(width + 2) for c in range(c0, c0 + ncols)))
        for r in range(r0, r0 + nrows):
            cells = []
            for c in range(c0, c0 + ncols):
                f = flat(r, c)
                t = texts[f]
                if f == wflat:
                    t = f">{t}<"
                elif sorted(labels[f]) != sorted(other[f]):
                    t = f" {t}*"
                else:
                    t = f" {t} "
                cells.append(t.rjust(width + 2))
            lines.append(f"{str(r).rjust(rw)}: " + " ".join(cells))
        return lines

    where = ""
    if lead:
        where = f" slice [{', '.join(map(str, lead))}, :, :];"
    span = f"rows {r0}..{r0 + nrows - 1} of {rows}, columns {c0}..{c0 + ncols - 1} of {cols}"
    ga = grid(texts_a, la, lb, wa, "A")
    gb = grid(texts_b, lb, la, wb, "B")
    colw = max(len(l) for l in ga)
    out = [f"grids ({where} {span}; >x< witness, * holders differ):".replace("( ", "(")]
    for l1, l2 in zip(ga, gb):
        out.append(l1.ljust(colw) + "   |   " + l2)
    return "\n".join(out)
