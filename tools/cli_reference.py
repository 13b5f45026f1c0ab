"""Write ``docs/cli.md``, the command-line reference, from the CLI's own argument parser.

Every subcommand's usage, description and options come from ``layoutverify.apps.cli.build_parser``
(the parser the ``layoutverify`` command uses), so the page cannot drift from the code;
``tests/test_docs_site.py`` checks that the committed page is what this script writes.

Usage::

    python tools/cli_reference.py            # rewrite docs/cli.md
    python tools/cli_reference.py --check    # exit 1 when docs/cli.md is not current
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "cli.md"
WIDTH = 100


def _flags(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    names = ", ".join(f"`{s}`" for s in action.option_strings)
    if action.nargs == 0:
        return names
    metavar = action.metavar or (("{" + ",".join(action.choices) + "}") if action.choices else action.dest.upper())
    if isinstance(metavar, tuple):
        metavar = " ".join(metavar)
    return f"{names} `{metavar}`"


def _cell(text: str | None) -> str:
    """Table-safe text; paths inside the checkout (defaults such as the atlas corpus) relative to it,
    so the page does not depend on where the checkout is."""
    text = (text or "").replace(str(ROOT) + "/", "")
    return text.replace("|", "\\|").replace("\n", " ")


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if "%(" in text:
        text = text % {"default": action.default, "prog": "layoutverify", "choices": action.choices}
    return _cell(text)


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
    return formatter.format_help().strip()


def render() -> str:
    os.environ["COLUMNS"] = str(WIDTH)
    from layoutverify.apps.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in sub._choices_actions}
    out = ["# Command-line reference", "",
           "<!-- Written by tools/cli_reference.py from the CLI's argument parser: edit the parser, not this page. -->",
           "", _cell(parser.description), "",
           "```text", _usage(parser), "```", "",
           "Exit codes: 0 success (equal, every claim holds), 1 a difference (not equal, a claim failed, a "
           "changed layout), 2 bad input (one line on stderr naming the offending token), 3 `unknown` (a "
           "solver gave up), 70 an internal error (a bug of ours). Every command takes `--json` for machines "
           "(see [the JSON documents](json-schema.md)).", "",
           "| command | what it does |", "|---|---|"]
    for name in sub.choices:
        out.append(f"| [`{name}`](#{name}) | {_cell(helps.get(name))} |")
    out.append("")
    for name, p in sub.choices.items():
        out += [f"## {name}", "", _cell(p.description or helps.get(name)), "", "```text", _usage(p), "```", "",
                "| argument | meaning | default |", "|---|---|---|"]
        for a in p._actions:
            if isinstance(a, argparse._HelpAction) or a.help == argparse.SUPPRESS:
                continue
            default = "" if a.default in (None, False, argparse.SUPPRESS) or not a.option_strings else f"`{a.default}`"
            out.append(f"| {_flags(a)} | {_help(a)} | {default} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/cli.md is not current")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        if not PAGE.exists() or PAGE.read_text() != text:
            print("docs/cli.md is not current: run python tools/cli_reference.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
