"""``layoutverify validate``: does a Triton release compile layout conversions correctly?

Two forms, told apart by the positionals:

* ``validate A B --shape S [--dtype D] [--arch sm_80|sm_90] [--triton-version V]`` (two layouts
  written ``FRAMEWORK:TEXT``): compile the conversion ``A -> B`` (a ``ttg.convert_layout``
  kernel) with that Triton release, in its own environment under ``~/.cache/layoutverify``
  (made on demand), execute the PTX on the PTX interpreter for every thread and compare every
  register with ``B``. Exit 0 correct, 1 wrong (the first wrong element is named as the location
  of ``B`` that received it and where ``A`` held it), 2 bad input or not decidable (Triton
  rejected the kernel, or the PTX is outside the interpreter's subset).
* ``validate PATH...`` (Triton caches, kernel folders, TTIR + PTX files): whole kernels.
"""
from __future__ import annotations

import json
import os
import sys

from layoutverify.core.errors import LayoutError

from . import validate_kernels
from .common import json_output

DTYPES = ("f16", "bf16", "f32", "fp8", "i8", "i16", "i32")


def register(sub) -> None:
    """The ``validate`` subcommand's arguments (both forms)."""
    p = sub.add_parser("validate", help="check Triton's PTX on the CPU: a conversion A -> B, or whole compiled kernels",
                       description="Two forms. 'validate A B --shape S': compile the conversion A -> B with a "
                                   "Triton release (in its own cached environment), execute the PTX on the PTX "
                                   "interpreter for every thread and compare every register with B; exit 0 "
                                   "correct, 1 wrong (the first wrong element is named), 2 bad input or not "
                                   "decidable. 'validate PATH...': whole kernels (Triton caches, kernel folders, "
                                   "a .ttir and a .ptx), the PTX against the TTIR element by element; exit 0 all "
                                   "valid, 1 some kernel wrong, 2 bad input, 3 none wrong but some unsupported "
                                   "or out of time.")
    p.add_argument("inputs", nargs="+", metavar="A B | PATH",
                   help="two layouts FRAMEWORK:TEXT (a conversion), or Triton caches / kernel folders / "
                        "TTIR and PTX files (whole kernels)")
    p.add_argument("--shape", help="the tile, e.g. 64x64 (Triton encodings need one unless the text is a "
                                    "whole tensor<...> type)")
    p.add_argument("--dtype", choices=DTYPES, default="f16", help="element type (default f16; fp8 needs sm_90)")
    p.add_argument("--arch", choices=("sm_80", "sm_90"), default="sm_90", help="target (default sm_90)")
    p.add_argument("--triton-version", metavar="V", default=None,
                   help="the Triton release that compiles it, 2.1 ... 3.9 (default: the installed one's, "
                        "else 3.9); releases other than the installed one run in a venv made once under "
                        "~/.cache/layoutverify")
    p.add_argument("--json", metavar="FILE", nargs="?", const="-", type=json_output("JSON file"),
                   help="write the result as JSON to FILE (alone or with -: on stdout, instead of the text)")
    p.add_argument("--no-cache", action="store_true", help="compile again instead of reading the kernel cache")
    validate_kernels.add_arguments(p, json_option=False)
    p.set_defaults(func=run)


def is_layout_spec(text: str) -> bool:
    """``FRAMEWORK:TEXT`` with a known framework prefix."""
    from layoutverify.adapters import FRAMEWORKS
    head, sep, _ = text.partition(":")
    return bool(sep) and head.strip().lower() in FRAMEWORKS


def run(args) -> int:
    """Run ``layoutverify validate``: a conversion ``A B`` or whole kernels ``PATH...``, by the
    positionals. Conversion: 0 correct, 1 wrong, 2 bad input or not decidable; kernels: 0 all
    valid, 1 some wrong, 3 none wrong but some unproven, 2 bad input."""
    inputs = args.inputs
    specs = [is_layout_spec(x) and not os.path.exists(x) for x in inputs]
    if not any(specs):
        return _validate_paths(args)
    if len(inputs) == 2 and all(specs):
        return _validate_conversion(args)
    if all(specs):
        raise LayoutError(f"validate takes two layouts A B (FRAMEWORK:TEXT); got {len(inputs)} inputs")
    bad = inputs[specs.index(False)] if len(inputs) == 2 else inputs[specs.index(True)]
    shown = bad if len(bad) <= 60 else bad[:57] + "..."
    raise LayoutError(f"validate takes two layouts A B (FRAMEWORK:TEXT) or only paths (Triton caches, kernel "
                      f"folders, TTIR/PTX files), not both; {shown!r} does not fit")


def _validate_paths(args) -> int:
    """Whole kernels: PTX against TTIR, element by element (:mod:`.validate_kernels`)."""
    args.paths = list(args.inputs)
    return validate_kernels.run_paths(args)


def conversion_of(args):
    """The :class:`~layoutverify.apps.validation.conversion.Conversion` the command line asks for."""
    from layoutverify.adapters import parse_shape, parse_spec
    from layoutverify.apps.validation.conversion import Conversion, check_input
    from layoutverify.apps.validation.releases import default_release, release_of
    try:
        release = release_of(args.triton_version) if args.triton_version else default_release()
    except KeyError as e:
        raise LayoutError(str(e).strip("'\"")) from None
    semantics = release if release in ("3.6", "3.7", "3.8", "3.9") else "3.6"
    a, b = args.inputs
    shape = parse_shape(args.shape)
    opts = {"triton_version": semantics}
    la = parse_spec(a, shape=shape, **(opts if a.split(":", 1)[0].strip().lower() == "triton" else {}))
    c = Conversion(a=a, b=b, shape=tuple(shape or la.out_sizes), dtype=args.dtype, arch=int(args.arch[3:]),
                   release=release)
    check_input(c)
    return c


def _validate_conversion(args) -> int:
    from layoutverify.apps.validation.conversion import validate
    from layoutverify.apps.validation.releases import Interpreters, Unavailable, cache_root
    c = conversion_of(args)
    interpreters = Interpreters(notice=lambda text: print(f"layoutverify: {text}", file=sys.stderr, flush=True))
    cache = None if args.no_cache else str(cache_root() / "kernels")
    try:
        v = validate(c, interpreters=interpreters, cache_dir=cache)
    except Unavailable as e:
        raise LayoutError(f"no environment with Triton {c.release}: {e} (it is made once with pip from PyPI; "
                          f"or set LV_TRITON_PYTHONS to an interpreter that has it)") from None
    if args.json:
        from layoutverify.apps.jsonout import document
        from layoutverify.core.files import write_text
        doc = json.dumps(document("validation", v.to_json()), default=str)
        if args.json == "-":
            print(doc)
            return v.exit_code
        write_text(args.json, doc + "\n", what="JSON file")
    print(render(v), file=sys.stderr if v.verdict == "unsupported" else sys.stdout)
    return v.exit_code


MOVES = {"registers": "the PTX moves data within registers", "shuffle": "the PTX moves data by warp shuffles",
         "shared": "the PTX moves data through shared memory"}


def _where(loc: dict | None) -> str:
    if not loc:
        return "nowhere"
    parts = [f"{k} {loc[k]}" for k in ("register", "lane", "warp", "block") if k in loc]
    return ", ".join(parts)


def render(v) -> str:
    """The verdict in words (one line for correct and unsupported)."""
    c = v.conversion
    who = f"Triton {v.triton or c.release} (sm_{c.arch}, {c.dtype}, {'x'.join(map(str, c.shape))})"
    if v.verdict == "unsupported":
        return f"layoutverify: error: not validated: {v.reason}"
    if v.verdict == "correct":
        stored = {True: " and the stored tile is the input", None: " (in any register order, as this release "
                  "numbers a dot operand's registers otherwise; it cannot store one)"}.get(v.output_ok, "")
        return (f"correct: {who} converts A -> B right: all {v.locations} locations of B (registers x threads, "
                f"replicas included) hold their element{stored}; {MOVES.get(v.ptx_class, v.ptx_class)}")
    lines = [f"WRONG: {who} miscompiles A -> B"]
    if v.reason:
        lines[0] += f": {v.reason}"
    if v.first_wrong:
        f = v.first_wrong
        lines[0] += f": {v.n_wrong} of {v.locations} locations of B hold the wrong element"
        got = f["received"]
        got_txt = (f"element {got} (A held it at {_where(f['received_held_in_a_at'])})"
                   if f["received_held_in_a_at"] is not None else f"{got}")
        if v.register_order:
            lines.append(f"first wrong: {_where(f['b_location'])} of B should hold element {f['expected']} "
                         f"(A held it at {_where(f['expected_held_in_a_at'])}) but received {got_txt}")
        else:  # checked per thread: the register holds an element B does not give this thread
            thread = {k: x for k, x in f["b_location"].items() if k != "register"}
            lines.append(f"first wrong: {_where(thread)} of B received {got_txt} in register "
                         f"{f['b_location']['register']}, which B does not give it, and misses element "
                         f"{f['expected']} (A held it at {_where(f['expected_held_in_a_at'])}); checked up to "
                         f"register order, as this release numbers a dot operand's registers otherwise")
    elif v.output_errors:
        e = v.output_errors[0]
        lines.append(f"first wrong output: element {e.get('element')} byte {e.get('byte')} received {e.get('got')}")
    return "\n".join(lines)
