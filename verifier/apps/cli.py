"""The ``layoutverify`` command line.

Each subcommand lives in its own module under :mod:`layoutverify.apps.commands` with ``register(sub)``
that adds its parser and sets ``func``. Exit codes: 0 success / equal / all claims hold,
1 not equal / a claim failed, 2 bad input, 3 unknown (solver gave up), 70 internal error.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

from layoutverify.apps import jsonout
from layoutverify.core.errors import LayoutError

COMMANDS = ["show", "prove", "analyze", "check", "snapshot", "diff", "atlas", "list", "scan", "sweep", "measure", "serve", "validate"]

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 70


class UsageError(Exception):
    """A command line that argparse rejects; :func:`main` reports it (text or JSON), exit 2."""

    def __init__(self, prog: str, message: str):
        super().__init__(message)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line with exit code 2 (its default code)."""

    def error(self, message):
        raise UsageError(self.prog, message)


def build_parser() -> argparse.ArgumentParser:
    """The ``layoutverify`` argument parser, with the subparser of every command module present."""
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
    """Run one command line; returns the exit status. Under ``--json`` every error is a JSON
    object on stdout (:mod:`layoutverify.apps.jsonout`), else one line on stderr."""
    debug = bool(os.environ.get("LAYOUTVERIFY_DEBUG"))
    as_json = jsonout.wants_json(sys.argv[1:] if argv is None else argv)

    def fail(code: str, message: str, exit_code: int, exc: BaseException | None = None, prog: str = "layoutverify") -> int:
        if as_json:
            token = getattr(exc, "token", None)
            column = getattr(exc, "column", None)
            print(json.dumps(jsonout.error_document(code, message, exit_code=exit_code, token=token, column=column)))
        elif code == "usage":
            print(f"{prog}: error: {message}", file=sys.stderr)
        elif code == "internal":
            print(f"layoutverify: internal error ({message}) [set LAYOUTVERIFY_DEBUG=1 for a traceback]",
                  file=sys.stderr)
        else:
            print(f"layoutverify: error: {message}", file=sys.stderr)
        return exit_code

    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:  # --help, --version (usage errors raise UsageError): a code, not an exception
            return e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_BAD_INPUT)
        if not getattr(args, "func", None):
            if as_json:
                return fail("usage", "no command given; see layoutverify --help", EXIT_BAD_INPUT)
            parser.print_help()
            return EXIT_BAD_INPUT
        rc = args.func(args)
        return 0 if rc is None else int(rc)
    except UsageError as e:
        return fail("usage", str(e), EXIT_BAD_INPUT, prog=e.prog)
    except LayoutError as e:
        if debug:
            raise
        return fail(jsonout.error_code(e), str(e), EXIT_BAD_INPUT, e)
    except RecursionError:
        if debug:
            raise
        return fail("bad_input", "input nested too deeply", EXIT_BAD_INPUT)
    except MemoryError:
        return fail("bad_input", "out of memory (input too large)", EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug of ours: one line, no traceback unless asked
        if debug:
            raise
        return fail("internal", f"{type(e).__name__}: {e}", EXIT_INTERNAL, e)


if __name__ == "__main__":
    sys.exit(main())
