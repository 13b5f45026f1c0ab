"""``layoutverify diff OLD NEW``: semantic diff of two golden files."""
from __future__ import annotations

import json

from verifier.snapshot import diff, load_golden


def register(sub) -> None:
    p = sub.add_parser("diff", help="semantic diff of two golden files (layout regressions)",
                       description="Compare two golden files made by `layoutverify snapshot` (e.g. under two "
                                   "Triton versions, or before and after a compiler change). For each layout "
                                   "whose normal form changed: the verdict and a witness. Exit 0 when nothing "
                                   "changed, 1 otherwise.")
    p.add_argument("old", metavar="OLD")
    p.add_argument("new", metavar="NEW")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--timeout-ms", type=int, default=20_000, help="solver time limit per layout")
    p.set_defaults(func=run)


def run(args) -> int:
    old, new = load_golden(args.old), load_golden(args.new)
    changes = diff(old, new, timeout_ms=args.timeout_ms)
    if args.json:
        print(json.dumps({"old_versions": old.get("versions"), "new_versions": new.get("versions"),
                          "changes": [c.to_json() for c in changes]}, indent=1, default=str))
    else:
        same = len(set(old["layouts"]) & set(new["layouts"])) - sum(c.status == "changed" for c in changes)
        print(f"old: {old.get('versions')}\nnew: {new.get('versions')}")
        for c in changes:
            if c.status == "changed":
                print(f"CHANGED {c.name}: {c.verdict}: {c.reason}")
                if c.witness:
                    print(f"    witness: {json.dumps(c.witness, default=str)}")
            else:
                print(f"{c.status.upper()} {c.name}: {c.old_spec or c.new_spec}")
        print(f"{same} unchanged, {sum(c.status == 'changed' for c in changes)} changed, "
              f"{sum(c.status == 'added' for c in changes)} added, {sum(c.status == 'removed' for c in changes)} removed")
    return 1 if changes else 0
