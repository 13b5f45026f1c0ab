"""``layoutverify check PATH...``: check every claim of the corpora; exit 0 iff all hold.

Exit codes: 0 every claim holds (or reproduces its recorded known difference), 1 some claim
fails or could not be decided, 2 bad input (unreadable or malformed corpus, unknown ``expect``,
no claims). The table goes to stdout; a progress bar to stderr, only when stderr is a terminal.
"""
from __future__ import annotations

import os
import sys
from collections import Counter

from layoutverify.apps import corpus, reports
from layoutverify.apps.claims import check_claims, progress_bar
from layoutverify.core.errors import LayoutError

from .common import json_output, output_path, positive_int


def register(sub) -> None:
    """The ``check`` subcommand's arguments."""
    p = sub.add_parser("check", help="check the equivalence claims of corpus files (CI gate)",
                       description="Check every claim in the given TOML corpus files or directories, print a "
                                   "table, and exit 0 when every claim holds, 1 otherwise (2: bad input).")
    p.add_argument("paths", nargs="+", metavar="PATH", help="corpus .toml files or directories")
    p.add_argument("--junit", metavar="FILE", type=output_path("JUnit file"), help="write JUnit XML (for CI test reports)")
    p.add_argument("--json", metavar="FILE", type=json_output("JSON file"),
                   help="write the outcomes as JSON to FILE (- for stdout, instead of the table)")
    p.add_argument("--markdown", metavar="FILE", type=output_path("Markdown file"),
                   help="write a Markdown summary (appended when FILE is $GITHUB_STEP_SUMMARY)")
    p.add_argument("-j", "--jobs", type=positive_int, default=None, help="parallel processes (default: all cores)")
    p.add_argument("-k", "--select", metavar="TEXT", help="only claims whose id or tags contain TEXT")
    p.add_argument("-q", "--quiet", action="store_true", help="print only failures and the summary line")
    p.set_defaults(func=run)


def write_markdown(path: str, text: str) -> None:
    """Write ``text`` to ``path``; append to GitHub's step summary file, which other steps share."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    from layoutverify.core.files import write_text
    append = bool(summary) and os.path.abspath(summary) == os.path.abspath(path)
    write_text(path, text, what="Markdown file", append=append)


def print_warnings(outcomes, *, quiet: bool) -> None:
    """Property warnings (core.properties) on stderr; they never change the exit status. Each on
    its own line, or with ``-q`` one line that counts them by code."""
    warnings = [(o, w) for o in outcomes for w in o.warnings]
    if not warnings:
        return
    if quiet:
        codes = Counter(w["code"] for _, w in warnings)
        print(f"warning: {len(warnings)} property warnings ("
              + ", ".join(f"{code} {n}" for code, n in sorted(codes.items()))
              + "); without -q each is listed", file=sys.stderr)
        return
    for o, w in warnings:
        print(f"warning: {o.claim.id} ({w.get('side', '?')}, {w['code']}): {w['message']}", file=sys.stderr)


def run(args) -> int:
    """Run ``layoutverify check``: check the corpora's claims (those ``-k`` selects), print the table
    and write the reports asked for; the exit code: 0 every claim passes, 1 otherwise, 2 bad input."""
    if args.jobs is not None and args.jobs < 1:
        raise LayoutError(f"--jobs must be at least 1, got {args.jobs}")
    c = corpus.load(args.paths)
    claims = c.claims
    if args.select:
        claims = [x for x in claims if args.select in x.id or any(args.select in t for t in x.tags)]
    if not claims:
        raise LayoutError("no claims to check" + (f" (none matches -k {args.select!r})" if args.select else ""))
    outcomes = check_claims(claims, jobs=args.jobs, progress=progress_bar())
    print_warnings(outcomes, quiet=args.quiet)
    if args.json != "-":
        print(reports.table(outcomes, quiet=args.quiet))
    if args.junit:
        reports.write_junit(outcomes, args.junit)
    if args.json:
        reports.write_json(outcomes, args.json)
    if args.markdown:
        write_markdown(args.markdown, reports.markdown(outcomes))
    return 0 if all(o.passed for o in outcomes) else 1
