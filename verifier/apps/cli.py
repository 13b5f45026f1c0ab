"""The ``layoutverify`` command line.

Each subcommand lives in its own module under :mod:`layoutverify.apps.commands` with ``register(sub)``
that adds its parser and sets ``func``. Exit codes: 0 success / equal / all claims hold,
1 not equal / a claim failed, 2 bad input, 3 unknown (solver gave up), 70 internal error.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from layoutverify.core.errors import LayoutError

COMMANDS = ["show", "prove", "analyze", "check", "snapshot", "diff", "atlas", "list", "scan", "sweep", "measure", "serve"]

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 70


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line with exit code 2 (its default code)."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="layoutverify",
                description="Prove GPU tensor layouts equal across Triton, CuTe, Tilus, IREE and PTX, "
                            "or find a counterexample.",
                epilog="Layouts are written FRAMEWORK:TEXT, e.g. "
                       "'triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], "
                       "warpsPerCTA = [4, 1], order = [1, 0]}>' or 'cute:(4,8):(8,1)'.")
    from layoutverify import __version__
    p.add_argument("--version", action="version", version=f"layoutverify {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        try:
            mod = importlib.import_module(f"layoutverify.apps.commands.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"layoutverify.apps.commands.{name}":
                continue
            raise
        mod.register(sub)
    return p


def main(argv=None) -> int:
    debug = bool(os.environ.get("LAYOUTVERIFY_DEBUG"))
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:  # usage errors (printed, exit 2), --help, --version: a code, not an exception
            return e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_BAD_INPUT)
        if not getattr(args, "func", None):
            parser.print_help()
            return EXIT_BAD_INPUT
        rc = args.func(args)
        return 0 if rc is None else int(rc)
    except LayoutError as e:
        if debug:
            raise
        print(f"layoutverify: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RecursionError:
        if debug:
            raise
        print("layoutverify: error: input nested too deeply", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError:
        print("layoutverify: error: out of memory (input too large)", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug of ours: one line, no traceback unless asked
        if debug:
            raise
        print(f"layoutverify: internal error ({type(e).__name__}): {e} "
              f"[set LAYOUTVERIFY_DEBUG=1 for a traceback]", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
