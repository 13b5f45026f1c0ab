"""Options and helpers shared by subcommands."""
from __future__ import annotations

import argparse

from layoutverify.adapters import parse_shape, parse_spec, split_spec

TRITON_VERSIONS = ("3.6", "3.7", "3.8", "3.9")

#: largest value an integer option takes (far above any sensible setting; keeps arithmetic bounded)
MAX_OPTION_INT = 1 << 31


# -- argparse ``type=`` validators: a bad value is a one-line usage error, exit 2 --------------------
def _ascii_int(text: str) -> int:
    """An integer written in ASCII digits (Python's ``int`` also takes '４' and '٣')."""
    t = text.strip()
    body = t[1:] if t[:1] in "+-" else t
    if not body or not body.isascii() or not body.isdigit() or len(body) > 12:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
    v = int(t)
    if abs(v) > MAX_OPTION_INT:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range (at most {MAX_OPTION_INT})")
    return v


def positive_int(text: str) -> int:
    """``type=`` for options that must be >= 1 (``--timeout-ms``, ``-j``, ``--window``)."""
    v = _ascii_int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return v


def non_negative_int(text: str) -> int:
    """``type=`` for options that may be 0 but not negative (``--max-cells``)."""
    v = _ascii_int(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    return v


def power_of_two(text: str) -> int:
    """``type=`` for sizes that must be a power of two (``--warp-size``)."""
    v = positive_int(text)
    if v & (v - 1):
        raise argparse.ArgumentTypeError(f"must be a power of two, got {text!r}")
    return v


def warp_size(text: str) -> int:
    """``type=`` for ``--warp-size``: a power of two from 1 to 1024."""
    v = power_of_two(text)
    if v > 1024:
        raise argparse.ArgumentTypeError(f"must be at most 1024, got {text!r}")
    return v


def output_path(what: str, *, parents: bool = False):
    """``type=`` for output files: refuses at parse time a path that cannot be written
    (missing directory, a directory, read-only), before any work is done. With ``parents``,
    missing parent directories are created first (as ``mkdir -p``; golden files go in ``golden/``)."""
    def check(text: str) -> str:
        import os

        from layoutverify.core.errors import LayoutError
        from layoutverify.core.files import check_writable
        try:
            if parents and text and "\0" not in text:
                parent = os.path.dirname(os.path.abspath(text))
                if not os.path.isdir(parent):
                    try:
                        os.makedirs(parent, exist_ok=True)
                    except OSError as e:
                        raise LayoutError(f"cannot create the directory {parent!r} for {what} {text!r}: "
                                          f"{e.strerror or type(e).__name__}") from None
            check_writable(text, what)
        except LayoutError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return text
    check.__name__ = what.replace(" ", "_")
    return check


def json_output(what: str = "JSON file"):
    """``type=`` for ``--json FILE`` options: ``-`` means stdout, anything else an output file."""
    check = output_path(what)

    def target(text: str) -> str:
        return text if text == "-" else check(text)
    target.__name__ = check.__name__
    return target


def add_triton_version_option(p: argparse.ArgumentParser) -> None:
    """Add ``--triton-version``: the Triton release whose semantics read ``triton:`` layouts."""
    p.add_argument("--triton-version", choices=TRITON_VERSIONS, default=None,
                   help="read triton: layouts with this Triton release's semantics "
                        "(default: the installed Triton's, else 3.9)")


def add_layout_options(p: argparse.ArgumentParser) -> None:
    """Add the options of reading a layout: ``--shape``, ``--warp-size`` and ``--triton-version``."""
    p.add_argument("--shape", help="logical tensor shape, e.g. 64x64 (Triton register/shared encodings need one "
                                    "unless the text is a whole tensor<...> type)")
    p.add_argument("--warp-size", type=warp_size, default=None,
                   help="threads per warp where the text does not fix it (32 NVIDIA, 64 AMD wave64)")
    add_triton_version_option(p)


def layout_options(args, framework: str | None = None) -> dict:
    """Adapter options from the command line; framework-specific ones only for that framework."""
    opts = {}
    if getattr(args, "warp_size", None):
        opts["warp_size"] = args.warp_size
    if framework == "triton" and getattr(args, "triton_version", None):
        opts["triton_version"] = args.triton_version
    return opts


def spec_options(spec: str, args) -> dict:
    """The adapter options from the command line for ``spec``'s framework."""
    return layout_options(args, split_spec(spec)[0])


def load(spec: str, args):
    """The layout ``FRAMEWORK:TEXT`` read with the command line's ``--shape`` and adapter options."""
    return parse_spec(spec, shape=parse_shape(getattr(args, "shape", None)), **spec_options(spec, args))
