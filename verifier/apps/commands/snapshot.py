"""``layoutverify snapshot``: record layouts (corpora and/or a Triton sweep) in a golden file."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from layoutverify.apps import corpus
from layoutverify.core.errors import LayoutError
from layoutverify.apps.snapshot import Entry, record
from layoutverify.core.files import write_text

from layoutverify.apps import jsonout

from .common import add_triton_version_option, output_path


def register(sub) -> None:
    """The ``snapshot`` subcommand's arguments."""
    p = sub.add_parser("snapshot", help="record layouts' normal forms and fingerprints in a golden file",
                       description="Record the canonical normal form and fingerprint of every layout of the "
                                   "given corpora (claims' both sides and [[layout]] entries) and/or of a fixed "
                                   "sweep of Triton encodings x shapes, for `layoutverify diff`.")
    p.add_argument("paths", nargs="*", metavar="PATH", help="corpus .toml files or directories")
    p.add_argument("-o", "--output", required=True, metavar="FILE", type=output_path("golden file", parents=True), help="golden file to write (JSON)")
    p.add_argument("--sweep", choices=["triton"], action="append", default=[],
                   help="also record a fixed sweep of this framework's encodings")
    p.add_argument("--native", action="store_true",
                   help="take layouts from the installed framework itself (the compiler under test) "
                        "where its adapter can ask it; otherwise our adapters")
    add_triton_version_option(p)
    p.add_argument("--keep-going", action="store_true", help="skip layouts that fail to build (listed on stderr)")
    p.add_argument("--json", action="store_true", help="machine-readable summary on stdout (the golden file is JSON anyway)")
    p.set_defaults(func=run)


def run(args) -> int:
    """Run ``layoutverify snapshot``: record the layouts of the corpora and sweeps in the golden
    file; the exit code: 0, or 2 for bad input (or a layout that fails without ``--keep-going``)."""
    entries: list[Entry] = []
    if args.paths:
        c = corpus.load(args.paths)
        for cl in c.claims:
            entries.append(Entry(f"{cl.id}::a", cl.a, cl.shape_a, cl.options_a))
            entries.append(Entry(f"{cl.id}::b", cl.b, cl.shape_b, cl.options_b))
        for nl in c.layouts:
            entries.append(Entry(f"{Path(nl.source).stem}::{nl.name}", nl.spec, nl.shape, nl.options))
    if "triton" in args.sweep:
        from layoutverify.apps.sweeps.golden import triton_sweep
        entries.extend(Entry("sweep::" + e.name, e.spec, e.shape, e.options) for e in triton_sweep())
    if not entries:
        raise LayoutError("nothing to record: give corpus paths and/or --sweep triton")
    failed = []

    def on_error(e, err):
        failed.append(e.name)
        print(f"layoutverify: skipped {e.name}: {err}", file=sys.stderr)

    doc = record(entries, native=args.native, on_error=on_error if args.keep_going else None,
                 triton_version=args.triton_version)
    doc["layouts"] = dict(sorted(doc["layouts"].items()))
    # not sort_keys: a normal form's bases stay in hardware-dim order (register, lane, warp, block)
    write_text(args.output, json.dumps(doc, indent=1) + "\n", what="golden file")
    if args.json:
        jsonout.emit("snapshot", {"output": args.output, "format": doc["format"], "versions": doc["versions"],
                                  "layouts": len(doc["layouts"]), "skipped": failed})
    else:
        print(f"recorded {len(doc['layouts'])} layouts in {args.output}"
              + (f" ({len(failed)} skipped)" if failed else ""))
    return 0
