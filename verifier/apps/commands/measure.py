"""``layoutverify measure A B --shape MxN [--dtype f16]``: run the conversion A -> B on the GPU.

Ground truth (every element tagged, converted, read back; a misplaced element is reported as the
hardware location of B that received it), the PTX the GPU ran executed on the PTX interpreter,
and the cost: ns per conversion per CTA (slope over repetition counts, a baseline without the
conversion subtracted, enough CTAs to fill the device, medians), bytes through shared memory
counted by executing the PTX, and achieved bandwidth as a fraction of the shared-memory bound
(128 B/clk per SM) per useful byte (2 x tile) and per byte moved. Exit 0 when the readback
matches, 1 when it does not, 2 without a GPU or for bad input.
"""
from __future__ import annotations

import json

from layoutverify.core.errors import LayoutError

from .common import add_layout_options, load, non_negative_int, output_path

DTYPES = ("f16", "bf16", "f32", "fp8")


def register(sub) -> None:
    """The ``measure`` subcommand's arguments."""
    p = sub.add_parser("measure", help="run a layout conversion on the GPU: ground truth and cost",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("a", metavar="A", help="source layout, FRAMEWORK:TEXT")
    p.add_argument("b", metavar="B", help="destination layout, FRAMEWORK:TEXT")
    add_layout_options(p)
    p.add_argument("--dtype", choices=DTYPES, default="f16", help="element type (default f16)")
    p.add_argument("--ctas", type=non_negative_int, default=0, help="CTAs per launch (default 64 per SM)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--plot", type=output_path("plot"), metavar="F.png", help="draw ns per conversion and the bound")
    p.set_defaults(func=run)


def run(args) -> int:
    """Run ``layoutverify measure``: the conversion ``A -> B`` on the GPU; the exit code: 0 the
    readback matches, 1 it does not, 2 without a GPU or for bad input."""
    from layoutverify.apps.measure.gpu_run import gpu_available
    a = load(args.a, args)
    b = load(args.b, args)
    if a.out_sizes != b.out_sizes:
        raise LayoutError(f"A has shape {list(a.out_sizes)} and B {list(b.out_sizes)}: a conversion keeps the tensor")
    why = gpu_available()
    if why:
        raise LayoutError(f"measure needs an NVIDIA GPU: {why}")
    from layoutverify.apps.measure.bench import measure_pair
    from layoutverify.apps.measure.suite import Pair
    pair = Pair(name="cli", family="cli", a=args.a, b=args.b, shape=tuple(a.out_sizes), dtype=args.dtype)
    res = measure_pair(pair, ctas=args.ctas or None, triton_version=getattr(args, "triton_version", None))
    if args.plot:
        from layoutverify.apps.measure.report import plot
        plot([res], args.plot, res["device"])
    if args.json:
        from layoutverify.apps.jsonout import document
        print(json.dumps(document("measurement", res), default=str))
    else:
        print(render(res))
    return 0 if res["readback"]["ok"] else 1


def render(res: dict) -> str:
    """A measurement as text: device, readback, the interpreter's agreement, mechanisms,
    shared-memory traffic, time, the shared-memory bound and the cost model's prediction."""
    d = res["device"]
    t = res["timing"]
    lines = [f"device: {d['name']}, {d['sms']} SMs, {d.get('clock_mhz')} MHz (Triton {d['triton']})",
             f"readback: {'every element where B puts it' if res['readback']['ok'] else 'MISMATCH'} "
             f"({res['readback']['elements']} elements)"]
    for m in res["readback"].get("mismatches", [])[:5]:
        lines.append(f"  B location {m['b_location']} received element {m['received']} instead of {m['element']} "
                     f"(A held it at {m['received_held_in_a_at']})")
    s = res["interpreter"]
    lines.append(f"PTX interpreter on the GPU's PTX: {'agrees' if res['interpreter_agrees'] else 'DISAGREES'}"
                 + (f" ({s['error']})" if s.get("error") else ""))
    lines.append(f"mechanism: Triton emits {res['emitted']} ({res['rule']}); cheapest sufficient: {res['cheapest']}")
    tr = s.get("traffic") or {}
    lines.append(f"shared memory: {tr.get('shared_store_bytes', 0)} B stored, {tr.get('shared_load_bytes', 0)} B "
                 f"loaded, {tr.get('store_wavefronts', 0)}+{tr.get('load_wavefronts', 0)} wavefronts; "
                 f"{tr.get('shuffles', 0)} shuffles, {tr.get('barriers', 0)} barriers")
    lines.append(f"time: {t['ns_per_conversion']:.1f} ns per conversion per CTA (SM time of one loop iteration with "
                 f"its consumer; without the conversion {t.get('baseline_ns_loop', 0):.1f} ns, so at least "
                 f"{t.get('marginal_ns', 0):.1f} ns are the conversion's; {t['ctas']} CTAs, reps {t['reps']}, "
                 f"medians)")
    if res.get("bound_ns_useful"):
        lines.append(f"shared-memory bound: {res['bound_ns_useful']:.1f} ns for the useful 2 x tile "
                     f"({res['fraction_of_bound_useful']:.0%} achieved), {res['bound_ns_moved']:.1f} ns for the "
                     f"bytes moved ({res['fraction_of_bound_moved']:.0%})")
    if res.get("predicted_ns") is not None:
        bound = " (a lower bound: the loop is spill-dominated)" if res.get("predicted_lower_bound") else ""
        lines.append(f"cost model: {res['predicted_ns']:.1f} ns predicted{bound}")
    k = res.get("timing", {}).get("kernel") or {}
    if k.get("n_regs") is not None:
        lines.append(f"kernel: {k['n_regs']} registers, {k.get('n_spills', 0)} spilled")
    return "\n".join(lines)
