"""``scan --baseline OLD.json``: what got worse since an earlier scan (the CI gate).

Kernels are matched by name and target (the same kernel compiled for sm_90 and gfx942 is two
kernels), ops by their key ``op@file:line:col[:operand]#n`` (the n-th such
op at that source location), so two compilers' outputs for the same Python source line up.
For each kernel: ``new`` ops (absent before), ``removed`` ops, ``costlier`` ops (Triton's
mechanism is more expensive, or the cost score grew by more than ``threshold`` as a fraction of
the old score), ``cheaper`` ops. The gate fires (exit 1) when some op is costlier, or a new op
costs something (score > 0) and the kernel's total score grew by more than ``threshold``.
"""
from __future__ import annotations

import json

from layoutverify.core.errors import LayoutError
from layoutverify.core.files import read_text

from .analysis import RANK, SCHEMA


def load_scan(path: str) -> dict:
    text = read_text(path, what="baseline scan", limit=1 << 30)
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise LayoutError(f"{path}: not JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("kind") != "scan" or not isinstance(doc.get("kernels"), list):
        raise LayoutError(f"{path}: not a layoutverify scan (want a --json output of 'layoutverify scan', "
                          f"schema {SCHEMA}, kind 'scan')")
    return doc


def _rank(op) -> int:
    return RANK.get(op.get("triton_mechanism") or "", 0)


def _score(op) -> float:
    """The instruction-count score (the same model for every op, so kernel totals add up; the
    GPU model's ``predicted_ns`` covers conversions only and is reported, not gated on)."""
    c = op.get("cost") or {}
    return float(c.get("score", 0) or 0)


def kernel_id(k: dict) -> str:
    return f"{k['name']} [{k.get('target') or '?'}]"


def _by_name(doc: dict) -> dict:
    out = {}
    for k in doc["kernels"]:
        key = kernel_id(k)
        n = 2
        while key in out:  # the same kernel compiled twice (other constants): keep both, in order
            key = f"{kernel_id(k)} #{n}"
            n += 1
        out[key] = k
    return out


def compare_scans(old: dict, new: dict, threshold: float = 0.0) -> dict:
    oldk = _by_name(old)
    newk = _by_name(new)
    kernels = []
    worse = False
    for name in sorted(set(oldk) | set(newk)):
        if name not in newk:
            kernels.append({"name": name, "status": "removed", "worse": False})
            continue
        if name not in oldk:
            kernels.append({"name": name, "status": "new", "score": newk[name]["totals"]["score"], "worse": False})
            continue
        o_ops = {op["key"]: op for op in oldk[name]["ops"]}
        n_ops = {op["key"]: op for op in newk[name]["ops"]}
        entry = {"name": name, "status": "compared", "new": [], "removed": [], "costlier": [], "cheaper": []}
        for key in n_ops:
            if key not in o_ops:
                entry["new"].append({"key": key, "triton_mechanism": n_ops[key].get("triton_mechanism"),
                                     "score": _score(n_ops[key])})
        for key in o_ops:
            if key not in n_ops:
                entry["removed"].append({"key": key, "triton_mechanism": o_ops[key].get("triton_mechanism"),
                                         "score": _score(o_ops[key])})
        for key in n_ops.keys() & o_ops.keys():
            a, b = o_ops[key], n_ops[key]
            sa, sb = _score(a), _score(b)
            row = {"key": key, "old": {"triton_mechanism": a.get("triton_mechanism"), "score": sa},
                   "new": {"triton_mechanism": b.get("triton_mechanism"), "score": sb}}
            if _rank(b) > _rank(a) or sb > sa * (1 + threshold) + 1e-9 and sb > sa:
                entry["costlier"].append(row)
            elif _rank(b) < _rank(a) or sb < sa:
                entry["cheaper"].append(row)
        old_total = sum(_score(op) for op in o_ops.values())
        new_total = sum(_score(op) for op in n_ops.values())
        entry["score"] = {"old": old_total, "new": new_total}
        grew = new_total > old_total * (1 + threshold) and new_total > old_total
        entry["worse"] = bool(entry["costlier"]) or (grew and any(x["score"] > 0 for x in entry["new"]))
        worse |= entry["worse"]
        kernels.append(entry)
    return {"schema": SCHEMA, "kind": "scan_baseline", "threshold": threshold, "worse": worse, "kernels": kernels}


def render_baseline(cmp: dict) -> str:
    lines = []
    for k in cmp["kernels"]:
        if k["status"] != "compared":
            lines.append(f"{k['name']}: kernel {k['status']}")
            continue
        s = k["score"]
        lines.append(f"{k['name']}: score {s['old']:g} -> {s['new']:g}; {len(k['new'])} new, {len(k['removed'])} removed, "
                     f"{len(k['costlier'])} costlier, {len(k['cheaper'])} cheaper" + ("  WORSE" if k["worse"] else ""))
        for row in k["costlier"]:
            lines.append(f"  COSTLIER {row['key']}: {row['old']['triton_mechanism']} ({row['old']['score']:g}) -> "
                         f"{row['new']['triton_mechanism']} ({row['new']['score']:g})")
        for row in k["new"]:
            lines.append(f"  NEW      {row['key']}: {row['triton_mechanism']} ({row['score']:g})")
        for row in k["removed"]:
            lines.append(f"  REMOVED  {row['key']}: {row['triton_mechanism']} ({row['score']:g})")
    lines.append("gate: " + ("FAILED (worse than the baseline beyond the threshold)" if cmp["worse"] else "passed"))
    return "\n".join(lines)
