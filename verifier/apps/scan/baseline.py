"""``scan --baseline OLD.json``: what got worse since an earlier scan (the CI gate).

**Kernels** are paired by identity (:mod:`.identity`): name, target, warps, stages, CTAs and the
specialisation (signature with its divisibility, tiles). The cache's hash folders, file paths and
the compiling Triton release play no part, so the same autotune configurations in other folders,
or compiled by another release, pair with themselves. Where several kernels share one identity
(configurations that differ only in a constexpr that changes no shape), they pair by the most
ops in common (same key, mechanism and layouts), ties broken by a digest of their ops, so the
result never depends on folder order. A kernel whose identity lacks a field the other side has
(``num_stages`` is unknown for a module read from an ``MLIR_ENABLE_DUMP`` log) pairs with one
that agrees on every field both know. Unpaired kernels are ``new`` or ``vanished``.

**Ops** of a pair are matched by their key ``op@file:line:col[:operand]#n`` (the n-th such op at
that source location): ``new`` ops, ``removed`` ops, ``costlier`` ops (Triton's mechanism is more
expensive, or the cost score grew by more than ``threshold`` as a fraction of the old score),
``cheaper`` ops; every list in the order of the ops in the new module (the old one for removed).

**The gate fires** (exit 1) when an op is costlier; when a new op costs something and the
kernel's total score grew by more than ``threshold``; when a kernel of the baseline vanished
(unless ``allow_missing``); and always when the scan found no kernel at all but the baseline has
some (a wrong path must not pass as "nothing got worse").
"""
from __future__ import annotations

import hashlib
import json

from layoutverify.core.errors import LayoutError
from layoutverify.core.files import read_text

from .analysis import RANK, SCHEMA
from .identity import compatible

EPSILON = 0.05   # scores are rounded to 0.1: smaller differences are rounding


def load_scan(path: str) -> dict:
    text = read_text(path, what="baseline scan", limit=1 << 30)
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise LayoutError(f"{path}: not JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("kind") != "scan" or not isinstance(doc.get("kernels"), list):
        raise LayoutError(f"{path}: not a layoutverify scan (want a --json output of 'layoutverify scan', "
                          f"schema {SCHEMA}, kind 'scan')")
    if doc.get("schema") != SCHEMA:
        raise LayoutError(f"{path}: a scan of schema {doc.get('schema')!r}; this layoutverify compares scans of "
                          f"schema {SCHEMA!r} (kernel identities, costs from the compiled code): scan the baseline "
                          f"again with this version")
    return doc


def _rank(op) -> int:
    return RANK.get(op.get("triton_mechanism") or "", 0)


def _score(op) -> float:
    """The op's cost score (model cycles per CTA, see :mod:`.analysis`)."""
    c = op.get("cost") or {}
    return float(c.get("score", 0) or 0)


def kernel_label(k: dict) -> str:
    return k.get("identity_key") or f"{k['name']} [{k.get('target') or '?'}]"


def _op_signature(k: dict) -> list:
    return sorted((o["key"], o.get("triton_mechanism") or "", (o.get("source") or {}).get("fingerprint") or "",
                   ((o.get("target") or {}) or {}).get("fingerprint") or "") for o in k["ops"])


def _digest(k: dict) -> str:
    return hashlib.sha256(json.dumps(_op_signature(k)).encode()).hexdigest()


def _similarity(a: dict, b: dict) -> int:
    sa, sb = _op_signature(a), _op_signature(b)
    i = j = common = 0
    while i < len(sa) and j < len(sb):
        if sa[i] == sb[j]:
            common += 1
            i += 1
            j += 1
        elif sa[i] < sb[j]:
            i += 1
        else:
            j += 1
    return common


def _pair_up(olds: list, news: list, may_pair) -> tuple[list, list, list]:
    """Greedy pairing by most ops in common among pairs ``may_pair`` allows; deterministic
    (ties by the kernels' op digests). Returns (pairs, unpaired old, unpaired new)."""
    olds = sorted(olds, key=lambda k: (kernel_label(k), _digest(k)))
    news = sorted(news, key=lambda k: (kernel_label(k), _digest(k)))
    cands = []
    for i, a in enumerate(olds):
        for j, b in enumerate(news):
            if may_pair(a, b):
                cands.append((-_similarity(a, b), i, j))
    cands.sort()
    used_o, used_n, pairs = set(), set(), []
    for _, i, j in cands:
        if i in used_o or j in used_n:
            continue
        used_o.add(i)
        used_n.add(j)
        pairs.append((olds[i], news[j]))
    return (pairs, [k for i, k in enumerate(olds) if i not in used_o],
            [k for j, k in enumerate(news) if j not in used_n])


def pair_kernels(old: dict, new: dict) -> tuple[list, list, list]:
    """``(pairs, vanished, new)`` kernels (see the module docstring)."""
    def key(k):
        return k.get("identity_key") or kernel_label(k)

    groups_o: dict = {}
    groups_n: dict = {}
    for k in old["kernels"]:
        groups_o.setdefault(key(k), []).append(k)
    for k in new["kernels"]:
        groups_n.setdefault(key(k), []).append(k)
    pairs, left_o, left_n = [], [], []
    for name in sorted(set(groups_o) | set(groups_n)):
        p, lo, ln = _pair_up(groups_o.get(name, []), groups_n.get(name, []), lambda a, b: True)
        pairs += p
        left_o += lo
        left_n += ln
    p, left_o, left_n = _pair_up(left_o, left_n,
                                 lambda a, b: compatible(a.get("identity") or {}, b.get("identity") or {})
                                 and a["name"] == b["name"] and a.get("target") == b.get("target"))
    pairs += p
    return pairs, left_o, left_n


def _op_order(k: dict) -> dict:
    return {o["key"]: (o.get("module_line") or 0, i) for i, o in enumerate(k["ops"])}


def compare_kernel(a: dict, b: dict, threshold: float) -> dict:
    o_ops = {op["key"]: op for op in a["ops"]}
    n_ops = {op["key"]: op for op in b["ops"]}
    order_n, order_o = _op_order(b), _op_order(a)
    entry = {"name": kernel_label(b), "kernel": b["name"], "target": b.get("target"),
             "specialisation": b.get("specialisation"), "status": "compared",
             "old_path": a.get("path"), "new_path": b.get("path"),
             "new": [], "removed": [], "costlier": [], "cheaper": []}
    for key in sorted(n_ops.keys() - o_ops.keys(), key=lambda k: order_n[k]):
        entry["new"].append({"key": key, "triton_mechanism": n_ops[key].get("triton_mechanism"),
                             "score": _score(n_ops[key])})
    for key in sorted(o_ops.keys() - n_ops.keys(), key=lambda k: order_o[k]):
        entry["removed"].append({"key": key, "triton_mechanism": o_ops[key].get("triton_mechanism"),
                                 "score": _score(o_ops[key])})
    for key in sorted(n_ops.keys() & o_ops.keys(), key=lambda k: order_n[k]):
        x, y = o_ops[key], n_ops[key]
        sa, sb = _score(x), _score(y)
        row = {"key": key, "old": {"triton_mechanism": x.get("triton_mechanism"), "score": sa},
               "new": {"triton_mechanism": y.get("triton_mechanism"), "score": sb}}
        if _rank(y) > _rank(x) or (sb > sa * (1 + threshold) + EPSILON):
            entry["costlier"].append(row)
        elif _rank(y) < _rank(x) or sb < sa - EPSILON:
            entry["cheaper"].append(row)
    old_total = round(sum(_score(op) for op in o_ops.values()), 1)
    new_total = round(sum(_score(op) for op in n_ops.values()), 1)
    entry["score"] = {"old": old_total, "new": new_total}
    grew = new_total > old_total * (1 + threshold) + EPSILON
    entry["worse"] = bool(entry["costlier"]) or (grew and any(x["score"] > 0 for x in entry["new"]))
    return entry


def compare_scans(old: dict, new: dict, threshold: float = 0.0, allow_missing: bool = False) -> dict:
    pairs, vanished, added = pair_kernels(old, new)
    kernels, order = [], []
    for a, b in pairs:
        kernels.append(compare_kernel(a, b, threshold))
        order.append(_digest(b))
    for k in added:
        kernels.append({"name": kernel_label(k), "kernel": k["name"], "target": k.get("target"),
                        "specialisation": k.get("specialisation"), "status": "new", "new_path": k.get("path"),
                        "score": k["totals"]["score"], "worse": False})
        order.append(_digest(k))
    for k in vanished:
        kernels.append({"name": kernel_label(k), "kernel": k["name"], "target": k.get("target"),
                        "specialisation": k.get("specialisation"), "status": "vanished", "old_path": k.get("path"),
                        "score": k["totals"]["score"], "worse": not allow_missing})
        order.append(_digest(k))
    ranked = sorted(range(len(kernels)), key=lambda i: (kernels[i]["name"], kernels[i]["status"], order[i]))
    kernels = [kernels[i] for i in ranked]
    empty = not new["kernels"] and bool(old["kernels"])
    worse = empty or any(e["worse"] for e in kernels)
    reasons = []
    if empty:
        reasons.append(f"the scan found no kernel; the baseline has {len(old['kernels'])}")
    if any(e["status"] == "compared" and e["worse"] for e in kernels):
        reasons.append("ops got costlier")
    if vanished and not allow_missing:
        reasons.append(f"{len(vanished)} kernel(s) of the baseline vanished (--allow-missing to accept)")
    return {"schema": SCHEMA, "kind": "scan_baseline", "threshold": threshold, "allow_missing": allow_missing,
            "worse": worse, "reasons": reasons,
            "counts": {"compared": len(pairs), "new": len(added), "vanished": len(vanished)},
            "kernels": kernels}


def render_baseline(cmp: dict) -> str:
    lines = []
    for k in cmp["kernels"]:
        if k["status"] == "new":
            lines.append(f"NEW      kernel {k['name']} (score {k['score']:g})")
            continue
        if k["status"] == "vanished":
            lines.append(f"VANISHED kernel {k['name']} (score {k['score']:g})"
                         + ("" if cmp.get("allow_missing") else "  WORSE"))
            continue
        s = k["score"]
        lines.append(f"{k['name']}: score {s['old']:g} -> {s['new']:g}; {len(k['new'])} new, {len(k['removed'])} "
                     f"removed, {len(k['costlier'])} costlier, {len(k['cheaper'])} cheaper"
                     + ("  WORSE" if k["worse"] else ""))
        for row in k["costlier"]:
            lines.append(f"  COSTLIER {row['key']}: {row['old']['triton_mechanism']} ({row['old']['score']:g}) -> "
                         f"{row['new']['triton_mechanism']} ({row['new']['score']:g})")
        for row in k["cheaper"]:
            lines.append(f"  CHEAPER  {row['key']}: {row['old']['triton_mechanism']} ({row['old']['score']:g}) -> "
                         f"{row['new']['triton_mechanism']} ({row['new']['score']:g})")
        for row in k["new"]:
            lines.append(f"  NEW      {row['key']}: {row['triton_mechanism']} ({row['score']:g})")
        for row in k["removed"]:
            lines.append(f"  REMOVED  {row['key']}: {row['triton_mechanism']} ({row['score']:g})")
    c = cmp.get("counts", {})
    lines.append(f"{c.get('compared', 0)} kernels compared, {c.get('new', 0)} new, {c.get('vanished', 0)} vanished")
    if cmp["worse"]:
        lines.append("gate: FAILED (" + "; ".join(cmp.get("reasons") or ["worse than the baseline"]) + ")")
    else:
        lines.append("gate: passed")
    return "\n".join(lines)
