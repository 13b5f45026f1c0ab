"""Which compiled instructions belong to which layout op: attribution by source location.

The compiled code (:mod:`.compiled`) files every instruction under a source location
``file:line:col``; the module's ops carry the same locations. For one location and one class of
instruction (say ``shared_store``):

* the **consumers** are the layout ops there whose role emits that class (:func:`.ops.classes_of`:
  a ``local_alloc`` emits shared stores, a ``local_load`` shared loads and ``ldmatrix``, a
  conversion any of its mechanism's instructions, ``tt.store`` global stores);
* if a **side op** at the location emits the class too (a ``tt.reduce``'s shuffles, an explicit
  ``ttg.barrier``), the instructions cannot be told apart: the consumers keep their estimate for
  that class, with a note;
* otherwise the instructions are the consumers': one consumer takes them all; several (a
  pipeliner's prologue copies share their loop's location) share them in proportion to their
  estimates (equally when every estimate is 0), each width separately.

An op whose estimate moves data but none of whose data-carrying classes (:data:`.ops.MAIN_CLASSES`:
not barriers, not register moves) has an instruction at its location (LLVM attributed them
elsewhere, or the location was lost) keeps its estimate, with a note. Instructions of a class no layout op
at the location emits stay with the other ops (arithmetic, reductions) and are not reported.
"""
from __future__ import annotations

from .ops import MAIN_CLASSES, SIDE_OPS, classes_of

MAX_LINES = 48


def location_key(loc: dict | None):
    if not loc:
        return None
    return (loc["file"].replace("\\", "/").rsplit("/", 1)[-1], int(loc["line"]), int(loc["col"]))


def side_ops_by_location(module) -> dict:
    """``location key -> {class: [side op names]}`` of the module's side ops."""
    out: dict = {}
    for op in module.ops:
        classes = SIDE_OPS.get(op.name)
        if not classes:
            continue
        loc = module.locations.resolve(op.loc_text)
        if loc is None:
            continue
        key = (loc.file.replace("\\", "/").rsplit("/", 1)[-1], loc.line, loc.col)
        for cls in classes:
            names = out.setdefault(key, {}).setdefault(cls, [])
            if op.name not in names:
                names.append(op.name)
    return out


def attribute(records: list, module, compiled) -> None:
    """Give every record ``_compiled`` (per-thread counts by class and width, or None when it
    keeps its estimate), ``_estimated_classes``, ``_lines`` (the instructions, ``(line, text)``)
    and ``_attribution`` (a note). ``records`` carry ``loc``, ``op``, ``role`` and ``_estimate``."""
    sides = side_ops_by_location(module)
    by_loc: dict = {}
    for r in records:
        r["_compiled"], r["_estimated_classes"], r["_lines"], r["_attribution"] = None, [], [], None
        key = location_key(r.get("loc"))
        if key is not None and classes_of(r["op"], r["role"]):
            by_loc.setdefault(key, []).append(r)
    for key, recs in by_loc.items():
        at = compiled.at(*key)
        by_cls: dict = {}
        for ins in at:
            by_cls.setdefault(ins.cls, []).append(ins)
        located = []
        for r in recs:
            main = set(classes_of(r["op"], r["role"])) & MAIN_CLASSES
            if any(by_cls.get(c) for c in main) or not any(c in MAIN_CLASSES for c in r["_estimate"]):
                r["_compiled"] = {}
                located.append(r)
            else:
                r["_attribution"] = ("the compiled code attributes none of this op's instructions to its location "
                                     "(LLVM moved them or dropped the location): estimated from the layouts")
        recs = located
        wanted = sorted({c for r in recs for c in classes_of(r["op"], r["role"])})
        for cls in wanted:
            consumers = [r for r in recs if cls in classes_of(r["op"], r["role"])]
            side = sides.get(key, {}).get(cls)
            if side:
                for r in consumers:
                    r["_estimated_classes"].append((cls, f"the location also holds {', '.join(side)}"))
                    if cls in r["_estimate"]:
                        r["_compiled"][cls] = dict(r["_estimate"][cls])
                continue
            got = by_cls.get(cls, [])
            if not got:
                continue
            weights = [sum(r["_estimate"].get(cls, {}).values()) for r in consumers]
            total = sum(weights)
            if total <= 0:
                weights, total = [1.0] * len(consumers), float(len(consumers))
            widths: dict = {}
            for ins in got:
                widths[ins.width] = widths.get(ins.width, 0) + 1
            for r, w in zip(consumers, weights):
                share = w / total
                if share > 0:
                    r["_compiled"][cls] = {width: n * share for width, n in widths.items()}
                r["_lines"].extend((ins.line, ins.text) for ins in got)
            if len(consumers) > 1:
                for r in consumers:
                    r["_attribution"] = (f"{len(consumers)} ops at this location share its {cls} instructions "
                                         f"in proportion to their estimates")
        for r in recs:
            r["_lines"] = sorted(set(r["_lines"]))[:MAX_LINES]
