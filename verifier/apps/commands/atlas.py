"""``layoutverify atlas``: the fragment x framework matrix (see :mod:`layoutverify.apps.atlas`).

Prints a compact matrix; ``--markdown`` / ``--html`` / ``--json`` write the full report.
``--native`` asks the installed frameworks for their own layouts. Exit 0 when every atlas claim
passes (holds, or reproduces its recorded finding) and, with ``--native``, every framework's
answer equals our adapter's parse; 1 otherwise; 2 for bad input.
"""
from __future__ import annotations

import sys

from layoutverify.apps import atlas as A
from layoutverify.apps import jsonout
from layoutverify.apps.claims import progress_bar
from layoutverify.core.errors import LayoutError
from layoutverify.core.files import write_text

from .common import json_output, output_path, positive_int


def register(sub) -> None:
    """The ``atlas`` subcommand's arguments."""
    p = sub.add_parser("atlas", help="the fragment atlas: every MMA/ldmatrix fragment x every framework",
                       description="Check the atlas corpus (claims tying each instruction fragment of the PTX/AMD "
                                   "ISA to Triton, CuTe, Tilus and IREE) and render the fragment x framework matrix: "
                                   "proven equal / equal up to register order / differs (with witness) / not "
                                   "expressible.")
    p.add_argument("--corpus", action="append", metavar="PATH",
                   help=f"atlas corpus file or directory (repeatable; default {A.DEFAULT_CORPUS})")
    p.add_argument("--markdown", metavar="FILE", type=output_path("Markdown file"), help="write the atlas as Markdown")
    p.add_argument("--html", metavar="FILE", type=output_path("HTML file"), help="write the atlas as a standalone HTML page")
    p.add_argument("--json", metavar="FILE", type=json_output("JSON file"),
                   help="write the atlas as JSON to FILE (- for stdout, instead of the matrix)")
    p.add_argument("--native", action="store_true",
                   help="also ask the installed frameworks (Triton, Tilus, IREE; CuTe where its adapter can) for "
                        "their own layout of each cell, beside our adapters' parse")
    p.add_argument("-j", "--jobs", type=positive_int, default=None, help="parallel processes (default: all cores)")
    p.set_defaults(func=run)


def run(args) -> int:
    """Run ``layoutverify atlas``: build the atlas, print its matrix and write the reports asked
    for; the exit code: 0 every claim passes (and, with ``--native``, every framework agrees), 1
    otherwise, 2 bad input."""
    if args.jobs is not None and args.jobs < 1:
        raise LayoutError(f"--jobs must be at least 1, got {args.jobs}")
    atlas = A.build(args.corpus, native=args.native, jobs=args.jobs, progress=progress_bar())
    if args.json != "-":
        print(A.text(atlas))
    if args.markdown:
        from layoutverify.apps.commands.check import write_markdown
        write_markdown(args.markdown, A.markdown(atlas))
    if args.html:
        write_text(args.html, A.render_html(atlas), what="HTML file")
    if args.json:
        text = jsonout.dumps("atlas", atlas.to_json(), indent=1) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            write_text(args.json, text, what="JSON file")
    return 0 if atlas.ok else 1
