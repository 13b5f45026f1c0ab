"""``layoutverify diff OLD NEW``: semantic diff of two golden files.

For each layout whose normal form changed: the verdict (``not_equal``, ``equal_up_to_register_order``,
``different_tensors``) and a witness (a hardware location and the element the old and the new
layout put there), re-checked by evaluating both layouts at that location. Layouts whose
fingerprint changed but that are still provably equal are not reported. Exit 0 when nothing
changed, 1 otherwise, 2 for unreadable or malformed golden files.
"""
from __future__ import annotations

import json

from layoutverify.apps import jsonout
from layoutverify.apps.snapshot import common_count, diff, load_golden

from .common import positive_int


def register(sub) -> None:
    """The ``diff`` subcommand's arguments."""
    p = sub.add_parser("diff", help="semantic diff of two golden files (layout regressions)",
                       description="Compare two golden files made by `layoutverify snapshot` (e.g. under two "
                                   "Triton versions, or before and after a compiler change). For each layout "
                                   "whose normal form changed: the verdict and a witness. Exit 0 when nothing "
                                   "changed, 1 otherwise.")
    p.add_argument("old", metavar="OLD")
    p.add_argument("new", metavar="NEW")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--timeout-ms", type=positive_int, default=20_000, help="solver time limit per layout")
    p.set_defaults(func=run)


def _where(w: dict) -> str:
    loc = ", ".join(f"{k}={v}" for k, v in w["hardware"].items())
    old = "nothing" if w.get("a") is None else tuple(w["a"])
    new = "nothing" if w.get("b") is None else tuple(w["b"])
    return f"at {loc}: old holds {old}, new holds {new}"


def run(args) -> int:
    """Run ``layoutverify diff``: the changed, added and removed layouts of NEW against OLD; the
    exit code: 0 nothing changed, 1 some layout changed, was added or removed, 2 bad input."""
    old, new = load_golden(args.old), load_golden(args.new)
    changes = diff(old, new, timeout_ms=args.timeout_ms)
    n_changed = sum(c.status == "changed" for c in changes)
    same = common_count(old, new) - n_changed
    if args.json:
        counts = {"unchanged": same, "changed": n_changed, "added": sum(c.status == "added" for c in changes),
                  "removed": sum(c.status == "removed" for c in changes)}
        jsonout.emit("diff", {"old": args.old, "new": args.new, "old_versions": old.get("versions"),
                              "new_versions": new.get("versions"), "counts": counts,
                              "changes": [c.to_json() for c in changes]}, indent=1)
    else:
        print(f"old: {old.get('versions')}\nnew: {new.get('versions')}")
        for c in changes:
            if c.status == "changed":
                print(f"CHANGED {c.name}: {c.verdict}" + (f" (old name {c.old_name})" if c.old_name else ""))
                print(f"    spec: {c.new_spec}" + (f" (was {c.old_spec})" if c.old_spec != c.new_spec else ""))
                if c.witness and "hardware" in c.witness:
                    print(f"    {_where(c.witness)}" + (" [re-checked]" if c.witness.get("rechecked") else ""))
                print(f"    why: {c.reason}")
                if c.witness:
                    print(f"    witness: {json.dumps(c.witness, default=str)}")
            else:
                print(f"{c.status.upper()} {c.name}: {c.old_spec or c.new_spec}")
        print(f"{same} unchanged, {n_changed} changed, "
              f"{sum(c.status == 'added' for c in changes)} added, {sum(c.status == 'removed' for c in changes)} removed")
    return 1 if changes else 0
