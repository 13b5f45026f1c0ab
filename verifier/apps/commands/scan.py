"""``layoutverify scan PATH...``: every layout op of TTGIR modules and Triton caches, with costs
(read from the compiled code where the cache holds it) and findings; ``--baseline OLD.json``
gates on ops that got costlier and on kernels that vanished (exit 1)."""
from __future__ import annotations

import json
import sys

from layoutverify.apps.commands.common import TRITON_VERSIONS, json_output, output_path


def register(sub) -> None:
    """The ``scan`` subcommand's arguments."""
    p = sub.add_parser("scan", help="scan TTGIR modules / Triton caches for layout conversions and their cost",
                       description="Read *.ttgir / *.mlir files, MLIR_ENABLE_DUMP logs, Triton cache folders "
                                   "(~/.triton/cache, $TRITON_CACHE_DIR) and TRITON_KERNEL_DUMP folders; report "
                                   "every op that changes or materialises a layout, with the instructions the "
                                   "compiled code (PTX/AMDGCN beside the module) executes for it. Exit codes: 0 ok, "
                                   "1 the baseline gate fired, 2 bad input.")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--json", metavar="FILE", type=json_output("JSON file"), help="write the scan as JSON ('-' for stdout)")
    p.add_argument("--markdown", metavar="FILE", type=output_path("Markdown file"), help="write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY)")
    p.add_argument("--junit", metavar="FILE", type=output_path("JUnit file"), help="write JUnit XML (a warning/error finding is a failure)")
    p.add_argument("--html", metavar="FOLDER", help="write index.html and one page per kernel with grids")
    p.add_argument("--baseline", metavar="OLD.json", help="compare with an earlier scan's --json output")
    p.add_argument("--threshold", type=float, default=0.0,
                   help="relative cost growth tolerated by the baseline gate (default 0: any growth)")
    p.add_argument("--allow-missing", action="store_true",
                   help="a kernel of the baseline that the scan does not find is reported, not a gate failure "
                        "(an empty scan against a non-empty baseline still fails)")
    p.add_argument("--no-compiled", action="store_true",
                   help="ignore the compiled code beside the modules: every cost estimated from the layouts")
    p.add_argument("--triton-version", choices=TRITON_VERSIONS, default=None,
                   help="read layouts with this release's semantics (default: the cache metadata's, "
                        "else the installed Triton's)")
    p.add_argument("--quiet", action="store_true", help="no table on the terminal (the baseline verdict still prints)")
    p.add_argument("--validate", action="store_true",
                   help="compile every distinct convert_layout with the module's Triton release and check its PTX "
                        "on every thread (layoutverify validate); exit 1 when one is wrong")
    p.set_defaults(func=run)


def run(args) -> int:
    """Run ``layoutverify scan``: scan the modules found under the paths, write the reports asked
    for and print the table; the exit code: 1 when the baseline gate fails or ``--validate``
    finds a wrong conversion, else 0 (2 bad input)."""
    from layoutverify.apps.scan import output
    from layoutverify.apps.scan.analysis import ScanOptions, scan_modules
    from layoutverify.apps.scan.sources import find_modules
    from layoutverify.core.errors import LayoutError

    if args.threshold < 0:
        raise LayoutError(f"--threshold must be >= 0, got {args.threshold}")
    old = None
    if args.baseline:
        from layoutverify.apps.scan.baseline import load_scan
        old = load_scan(args.baseline)
    modules = find_modules(args.paths)
    if not modules:
        print(f"scan: no TTGIR module found in {', '.join(args.paths)}", file=sys.stderr)
    options = ScanOptions(triton_version=args.triton_version, compiled=not args.no_compiled)
    to_stdout = args.json == "-"
    doc = _scan_with_progress(modules, options, show=not (args.quiet or to_stdout), scan_modules=scan_modules)
    if args.validate:
        from layoutverify.apps.validation.scan import scan_validation
        doc["validation"] = scan_validation(doc, args.triton_version, show=not to_stdout)
    cmp = None
    if old is not None:
        from layoutverify.apps.scan.baseline import compare_scans
        cmp = compare_scans(old, doc, args.threshold, allow_missing=args.allow_missing)
        doc["baseline"] = cmp
    if args.json:
        text = json.dumps(doc, indent=1)
        if to_stdout:
            sys.stdout.write(text + "\n")
        else:
            _write(args.json, text + "\n")
    if args.markdown:
        md = output.markdown(doc)
        if cmp is not None:
            from layoutverify.apps.scan.baseline import render_baseline
            md += "\n### Against the baseline\n\n```\n" + render_baseline(cmp) + "\n```\n"
        _write(args.markdown, md)
    if args.junit:
        _write(args.junit, output.junit(doc))
    if args.html:
        output.write_html(doc, args.html)
    if not args.quiet and not to_stdout:
        try:
            output.print_table(doc)
        except ImportError:
            print(output.plain_table(doc))
    if cmp is not None and not to_stdout:
        from layoutverify.apps.scan.baseline import render_baseline
        print(render_baseline(cmp))
    return 1 if (cmp is not None and cmp["worse"]) or doc.get("validation", {}).get("wrong") else 0


def _write(path: str, text: str) -> None:
    from layoutverify.core.errors import LayoutError
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise LayoutError(f"cannot write {path}: {e.strerror or e}") from None


def _scan_with_progress(modules, options, show: bool, scan_modules):
    if not show or len(modules) < 8:
        return scan_modules(modules, options)
    try:
        from rich.progress import Progress
    except ImportError:
        return scan_modules(modules, options)
    with Progress(transient=True) as bar:
        task = bar.add_task("scanning kernels", total=len(modules))
        return scan_modules(modules, options, progress=lambda done, total, name: bar.update(task, completed=done))
