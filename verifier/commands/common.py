"""Options and helpers shared by subcommands."""
from __future__ import annotations

import argparse

from adapters import parse_shape, parse_spec


def add_layout_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shape", help="logical tensor shape, e.g. 64x64 (Triton register/shared encodings need one "
                                    "unless the text is a whole tensor<...> type)")
    p.add_argument("--warp-size", type=int, default=None,
                   help="threads per warp where the text does not fix it (32 NVIDIA, 64 AMD wave64)")


def layout_options(args) -> dict:
    opts = {}
    if getattr(args, "warp_size", None):
        opts["warp_size"] = args.warp_size
    return opts


def load(spec: str, args):
    return parse_spec(spec, shape=parse_shape(getattr(args, "shape", None)), **layout_options(args))
