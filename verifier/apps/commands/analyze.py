"""``layoutverify analyze A [B]``: what a conversion A -> B costs, or the properties of one layout.

With two layouts: the cheapest mechanism that suffices (``no_op``, ``register_permute``,
``intra_warp``, ``intra_cta``, ``cross_cta``), a witness ruling out each cheaper one, the
elements moved between threads, the common vector width and, with ``--shared``, the bank
conflicts of storing A and loading B through that shared layout. With one layout (or
``--properties``): coverage, replication per hardware dim, F2-linearity, and for memory layouts
the bank conflicts of plain warp accesses. For NVIDIA, also the mechanism the installed (or
``--triton-version``) Triton emits, the cost model's prediction, and a missed optimisation where
Triton's mechanism is costlier than the cheapest sufficient one, with the estimated saving.
Exit status 0 on success, 2 on bad input.
"""
from __future__ import annotations

from layoutverify.apps import jsonout

from layoutverify.core.errors import LayoutError

from .common import add_layout_options, load, positive_int


def register(sub) -> None:
    """The ``analyze`` subcommand's arguments."""
    p = sub.add_parser("analyze", help="cost of a layout conversion A -> B, or properties of one layout",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("a", metavar="A", help="source layout, FRAMEWORK:TEXT")
    p.add_argument("b", metavar="B", nargs="?", help="destination layout, FRAMEWORK:TEXT (omit for properties of A)")
    add_layout_options(p)
    p.add_argument("--shared", metavar="SPEC", help="shared-memory layout (hardware dims offset[, block]) for the "
                                                     "bank-conflict count of storing A and loading B")
    p.add_argument("--element-bits", type=positive_int, default=16, help="element width in bits: 8, 16, 32 or 64 (default 16)")
    p.add_argument("--properties", action="store_true", help="print the properties of each layout given")
    p.add_argument("--timeout-ms", type=positive_int, default=10_000, help="solver time limit for the equality check")
    p.add_argument("--arch", default="nvidia", help="bank model for --shared and memory properties: nvidia (32 banks), "
                                                    "cdna3/gfx942 (32 banks, wave64), cdna4/gfx950 (64 banks)")
    p.add_argument("--num-warps", type=positive_int, default=None,
                   help="the module's num-warps: warn when a register layout spreads over another number of warps")
    p.add_argument("--subtile", metavar="OFFSETS", default=None,
                   help="B is a sub-tile of A (extract_slice, memdesc_subview) starting at OFFSETS (e.g. 0,32): "
                        "warn when B's layout is not A's restricted to that tile")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args) -> int:
    """Run ``layoutverify analyze``: the conversion report of ``A -> B`` (with Triton's lowering on
    NVIDIA), or the properties of each layout given; the exit code: 0, or 2 for bad input."""
    from layoutverify.core.banks import element_bytes
    element_bytes(args.element_bits)  # validate early: a bad width is bad input
    if args.timeout_ms <= 0:
        raise LayoutError("--timeout-ms must be positive")
    from layoutverify.core.banks import bank_model
    bank_model(args.arch)  # validate early
    a = load(args.a, args)
    b = load(args.b, args) if args.b else None
    shared = load(args.shared, args) if args.shared else None
    if args.subtile is not None:
        if b is None:
            raise LayoutError("--subtile needs two layouts: the parent A and the sub-tile B")
        try:
            args.subtile_offsets = [int(x) for x in args.subtile.replace("x", ",").split(",")]
        except ValueError:
            raise LayoutError(f"--subtile takes offsets like 0,32, got {args.subtile!r}") from None
    if b is None or args.properties or args.subtile is not None:
        return _properties(args, [("A", a)] + ([("B", b)] if b is not None else []) +
                           ([("shared", shared)] if shared is not None else []))
    from layoutverify.core.conversion import analyze
    rep = analyze(a, b, shared=shared, element_bits=args.element_bits, timeout_ms=args.timeout_ms, arch=args.arch)
    from layoutverify.apps.measure.emitted import lowering_report, render_lowering
    lowered = lowering_report(a, b, rep.mechanism, triton_version=getattr(args, "triton_version", None),
                              element_bits=args.element_bits) if args.arch == "nvidia" else None
    if args.json:
        extra = {"triton_lowering": lowered} if lowered is not None else {}
        jsonout.emit("conversion", {"a": args.a, "b": args.b, **rep.to_json(), **extra})
    else:
        print(rep.render())
        if lowered is not None:
            print(render_lowering(lowered))
    return 0


def _properties(args, layouts) -> int:
    from layoutverify.core.properties import properties, subtile_warning
    results = {name: properties(lay, element_bits=args.element_bits, arch=args.arch, num_warps=args.num_warps)
               for name, lay in layouts}
    if getattr(args, "subtile_offsets", None) is not None:
        w = subtile_warning(layouts[0][1], layouts[1][1], args.subtile_offsets)
        if w is not None:
            results["B"]["warnings"].append(w)
    if args.json:
        layouts = {name: {("layout_kind" if k == "kind" else k): v for k, v in p.items()} for name, p in results.items()}
        jsonout.emit("properties", {"layouts": layouts})
        return 0
    for i, (name, p) in enumerate(results.items()):
        if i:
            print()
        if len(results) > 1:
            print(f"{name}:")
        print(render_properties(p))
    return 0


def render_properties(p: dict) -> str:
    """A layout's properties (:func:`layoutverify.core.properties.properties`) as text, one fact a line."""
    lines = [f"kind: {p['kind']}",
             "hardware: " + ", ".join(f"{k}={v}" for k, v in p["hardware"].items()),
             "logical:  " + ", ".join(f"{k}={v}" for k, v in p["logical"].items())]
    cover = "surjective (covers the tensor)" if p["surjective"] else \
        f"PARTIAL: {p['uncovered']} elements without holder, e.g. {tuple(p['uncovered_example'])}"
    lines.append(f"injective: {'yes' if p['injective'] else 'no'}; {cover}")
    lines.append(f"holders per element: {p['holders']['min']}..{p['holders']['max']}")
    lines.append("replication per hardware dim: " + ", ".join(f"{k} x{v}" for k, v in p["replication"].items())
                 + ("" if p["replication_uniform"] else " (varies by location)"))
    if p["f2_linear"]:
        zb = {k: v for k, v in p["zero_bases"].items() if v}
        lines.append("F2-linear: yes" + (f"; zero bases {zb}" if zb else ""))
    else:
        lines.append("F2-linear: no")
    if p["kind"] == "register":
        lines.append(f"registers per thread: {p['registers_per_thread']}; threads: {p['threads']}; "
                     f"contiguous elements per thread along the last dim: {p['contiguity']}")
    else:
        for name, r in p["bank_conflicts"].items():
            if "skipped" in r:
                lines.append(f"bank conflicts, {name} access: skipped ({r['skipped']})")
                continue
            lines.append(f"bank conflicts, {name} access ({r['access_bytes']} B/lane): {r['conflict_ways']}-way, "
                         f"{r['wavefronts']} wavefronts per instruction (ideal {r['ideal_wavefronts']})")
    for w in p.get("warnings", []):
        lines.append(f"warning ({w['code']}): {w['message']}")
    return "\n".join(lines)
