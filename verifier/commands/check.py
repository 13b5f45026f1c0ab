"""``layoutverify check PATH...``: check every claim of the corpora; exit 0 iff all hold."""
from __future__ import annotations

import sys
from pathlib import Path

from verifier import corpus, reports
from verifier.claims import check_claims, progress_bar


def register(sub) -> None:
    p = sub.add_parser("check", help="check the equivalence claims of corpus files (CI gate)",
                       description="Check every claim in the given TOML corpus files or directories, print a "
                                   "table, and exit 0 when every claim holds, 1 otherwise (2: bad input).")
    p.add_argument("paths", nargs="+", metavar="PATH", help="corpus .toml files or directories")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML (for CI test reports)")
    p.add_argument("--json", metavar="FILE", help="write the outcomes as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY)")
    p.add_argument("-j", "--jobs", type=int, default=None, help="parallel processes (default: all cores)")
    p.add_argument("-k", "--select", metavar="TEXT", help="only claims whose id or tags contain TEXT")
    p.add_argument("-q", "--quiet", action="store_true", help="print only failures and the summary line")
    p.set_defaults(func=run)


def run(args) -> int:
    c = corpus.load(args.paths)
    claims = c.claims
    if args.select:
        claims = [x for x in claims if args.select in x.id or any(args.select in t for t in x.tags)]
    if not claims:
        print("layoutverify: no claims to check", file=sys.stderr)
        return 2
    outcomes = check_claims(claims, jobs=args.jobs, progress=progress_bar())
    text = reports.table(outcomes)
    if args.quiet:
        text = "\n".join(line for line in text.splitlines()
                         if line.startswith(("FAIL", "ERROR", "    witness")) or " passed, " in line)
    print(text)
    if args.junit:
        reports.write_junit(outcomes, args.junit)
    if args.json:
        reports.write_json(outcomes, args.json)
    if args.markdown:
        Path(args.markdown).write_text(reports.markdown(outcomes))
    return 0 if all(o.status == "holds" for o in outcomes) else 1
