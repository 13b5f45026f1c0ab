"""What Triton emits for a conversion next to the cheapest mechanism that suffices, with the cost
model's estimate of both: the ``analyze`` command's ``triton_lowering`` section.

A *missed optimisation* is a conversion where Triton's mechanism (by the rules in
``adapters/triton/lowering.py``, for the installed release or ``--triton-version``) ranks above the
cheapest sufficient one (:func:`layoutverify.core.conversion.analyze`); the estimated saving is the
difference of the cost model's predictions (:mod:`layoutverify.core.cost`, facts estimated from
the layouts) on an H100.
"""
from __future__ import annotations

from layoutverify.core.errors import LayoutError

from .suite import lowering


def lowering_report(a, b, cheapest: str, *, triton_version=None, element_bits: int = 16) -> dict:
    low = lowering()
    if a.in_size("lane") != 32 or b.in_size("lane") != 32:
        return {"emitted_mechanism": None, "reason": "Triton's NVIDIA lowering is for 32-lane warps"}
    try:
        e = low.emitted_mechanism(a, b, triton_version=triton_version, equal=cheapest == "no_op")
    except LayoutError as ex:
        return {"emitted_mechanism": None, "reason": str(ex)}
    out = {"emitted_mechanism": e.mechanism, "ptx_class": e.ptx_class, "rule": e.rule,
           "triton_version": e.triton_version,
           "missed_optimization": low.RANK[e.mechanism] > low.RANK.get(cheapest, 0)}
    try:
        from layoutverify.core.cost import estimate_facts, predicted_conversion_ns
        pred = {}
        for which, mech in (("emitted", e.mechanism), ("cheapest", cheapest)):
            f = estimate_facts(a, b, mech, element_bits)
            pred[which] = {gpu: round(predicted_conversion_ns(f, gpu), 2) for gpu in ("H100", "H200")}
        out["predicted_ns"] = pred
        if out["missed_optimization"]:
            out["estimated_saving_ns"] = {g: round(pred["emitted"][g] - pred["cheapest"][g], 2) for g in pred["emitted"]}
    except (LayoutError, KeyError, OSError) as ex:
        out["predicted_ns"] = None
        out["cost_note"] = str(ex)
    return out


def render_lowering(r: dict) -> str:
    if r.get("emitted_mechanism") is None:
        return f"Triton emits: unknown ({r.get('reason')})"
    lines = [f"Triton {r['triton_version']} emits: {r['emitted_mechanism']} ({r['ptx_class']}; rule: {r['rule']})"]
    p = r.get("predicted_ns")
    if p:
        lines.append(f"  predicted: {p['emitted']['H100']:.1f} ns per CTA on H100, {p['emitted']['H200']:.1f} ns on H200 "
                     f"(cost model: the conversion's share of a loop iteration, facts estimated from the layouts)")
    if r["missed_optimization"]:
        s = r.get("estimated_saving_ns", {})
        lines.append(f"  MISSED OPTIMISATION: the cheapest sufficient mechanism would do"
                     + (f"; estimated saving {s.get('H100', 0):.1f} ns per CTA on H100" if s else ""))
    return "\n".join(lines)
