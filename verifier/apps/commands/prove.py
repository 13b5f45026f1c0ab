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

from layoutverify.apps import jsonout
from layoutverify.apps.proof_render import proof_text, side_by_side
from layoutverify.core.compare import METHODS
from layoutverify.core.table import TABLE_FALLBACK
from layoutverify.core.errors import LayoutError

from .common import add_triton_version_option, output_path, positive_int, warp_size

#: ``--method``'s help: the order ``auto`` follows (layoutverify.core.compare's docstring)
METHOD_HELP = ("auto (default): the normal forms first, then f2 when both layouts declare F2 bases, "
               "else radix when it decides, else f2 when both are F2-linear, else table up to "
               f"2^{TABLE_FALLBACK.bit_length() - 1} hardware locations, else z3; "
               "or one strategy: f2 (GF(2) bases), radix (mixed-radix digits), table (explicit "
               "evaluation) or z3 (bit-vector queries with --timeout-ms)")


def register(sub) -> None:
    """The ``prove`` subcommand's arguments."""
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
    """Run ``layoutverify prove``: the verdict on ``A`` against ``B``, with the grids around the
    witness unless equal; the exit code: 0 equal (and equal up to register order unless
    ``--strict``), 1 different, 3 unknown, 2 bad input."""
    if args.timeout_ms is not None and args.timeout_ms <= 0:
        raise LayoutError("--timeout-ms must be positive")
    if args.window < 1:
        raise LayoutError("--window must be positive")
    from layoutverify.apps import api  # the same request function the service calls
    proof = api.prove(args.a, args.b, shape=args.shape, shape_b=args.shape_b, method=args.method,
                      timeout_ms=args.timeout_ms, triton_version=getattr(args, "triton_version", None),
                      warp_size=getattr(args, "warp_size", None), strict=args.strict, smt2=args.emit_smt2)
    doc = proof.to_json()
    if args.json:
        jsonout.emit("proof", doc)
        return proof.exit_code
    print("\n".join(proof_text(doc)))
    if args.emit_smt2:
        print(f"smt2:    {args.emit_smt2}")
    res = proof.result
    if res.verdict not in ("equal", "unknown") and res.method != "kinds" and not args.no_grid:
        text = side_by_side(proof.a, proof.b, res.witness or {}, window=args.window)
        if text:
            print()
            print(text)
    return proof.exit_code
