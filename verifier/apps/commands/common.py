"""Options and helpers shared by subcommands."""
from __future__ import annotations

import argparse

from layoutverify.adapters import parse_shape, parse_spec, split_spec

TRITON_VERSIONS = ("3.6", "3.7", "3.8", "3.9")


def add_triton_version_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--triton-version", choices=TRITON_VERSIONS, default=None,
                   help="read triton: layouts with this Triton release's semantics "
                        "(default: the installed Triton's, else 3.9)")


def add_layout_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shape", help="logical tensor shape, e.g. 64x64 (Triton register/shared encodings need one "
                                    "unless the text is a whole tensor<...> type)")
    p.add_argument("--warp-size", type=int, default=None,
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
    return layout_options(args, split_spec(spec)[0])


def load(spec: str, args):
    return parse_spec(spec, shape=parse_shape(getattr(args, "shape", None)), **spec_options(spec, args))
