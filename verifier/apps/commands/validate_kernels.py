"""``layoutverify validate PATH...``: validate whole compiled Triton kernels, PTX against TTIR,
element by element (:mod:`layoutverify.apps.kernels`).

PATH is a Triton cache (every kernel folder below it), one kernel's folder (``NAME.ttir``,
``NAME.ptx``, ``NAME.json``), or a ``.ttir`` and a ``.ptx`` file of one kernel. The launch (integer
arguments, grid, program ids) comes from ``--launch FILE``, ``--arg``/``--grid``/``--pid``, a
``NAME.launch.json`` beside the kernel, or the default (every integer argument 64, programs 0 and
1 of a grid of 2).

Exit codes: 0 every kernel valid; 1 some kernel wrong; 2 bad input; 3 no kernel wrong but some
unsupported or unknown (out of time): a gate that must not pass unproven kernels fails on 3, one
that only catches miscompiles fails on 1.

This module provides :func:`add_arguments` (the path form's options) and :func:`run_paths`; the
``validate`` command wires them (with the conversion form ``validate A B --shape S``).
"""
from __future__ import annotations

import json
import sys

from layoutverify.core.errors import LayoutError

EXIT_VALID, EXIT_WRONG, EXIT_BAD_INPUT, EXIT_UNPROVEN = 0, 1, 2, 3
MAX_ARG_VALUE = 1 << 31


def add_arguments(p, json_option: bool = True) -> None:
    """The path form's options (``paths`` itself is the command's positional argument; the shared
    ``validate`` command defines ``--json`` once for both forms: ``json_option=False``)."""
    from .common import json_output, positive_int
    p.add_argument("--launch", metavar="FILE",
                   help="launch JSON: {\"args\": {NAME: INT}, \"grid\": [X, Y, Z], \"pids\": [[X, Y, Z], ...], "
                        "\"views\": {BUFFER: SHAPE}}, or {\"kernels\": {KERNEL: LAUNCH}}")
    p.add_argument("--arg", metavar="NAME=INT", action="append", default=[],
                   help="an integer kernel argument (repeatable); the others default to 64")
    p.add_argument("--grid", metavar="X[,Y,Z]", help="the launch grid (default 2)")
    p.add_argument("--pid", metavar="X[,Y,Z]", action="append", default=[],
                   help="a program id to validate (repeatable; default 0 and 1)")
    p.add_argument("--time-limit", metavar="S", type=positive_int, default=300,
                   help="seconds per kernel before it is reported unknown (default 300)")
    if json_option:
        p.add_argument("--json", metavar="FILE", type=json_output("JSON file"),
                       help="write the outcomes as JSON to FILE (- for stdout, instead of the text)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only kernels that are not valid, and the summary")


def _triple(text: str, what: str) -> list[int]:
    parts = text.split(",")
    if not 1 <= len(parts) <= 3 or not all(x.strip().isascii() and x.strip().isdigit() for x in parts):
        raise LayoutError(f"{what} must be 1 to 3 non-negative integers separated by commas, got {text!r}")
    v = [int(x) for x in parts]
    if any(x > MAX_ARG_VALUE for x in v):
        raise LayoutError(f"{what} {text!r} is out of range")
    return (v + [1, 1])[:3] if what == "--grid" else (v + [0, 0])[:3]


def _cli_launch(args) -> dict | None:
    """The launch the options give (None: none given)."""
    given: dict = {}
    if args.launch:
        from layoutverify.core.files import read_text
        try:
            given = json.loads(read_text(args.launch, what="launch file", limit=1 << 20))
        except json.JSONDecodeError as e:
            raise LayoutError(f"launch file {args.launch}: not JSON ({e.msg} at line {e.lineno})") from None
        if not isinstance(given, dict):
            raise LayoutError(f"launch file {args.launch}: expected a JSON object")
    extra: dict = {}
    for a in args.arg:
        name, sep, val = a.partition("=")
        v = val.strip()
        body = v[1:] if v[:1] == "-" else v
        if not sep or not name.strip().isidentifier() or not body.isascii() or not body.isdigit():
            raise LayoutError(f"--arg wants NAME=INT, got {a!r}")
        if abs(int(v)) > MAX_ARG_VALUE:
            raise LayoutError(f"--arg {a!r} is out of range")
        extra[name.strip()] = int(v)
    if args.grid:
        extra["grid"] = _triple(args.grid, "--grid")
    if args.pid:
        extra["pids"] = [_triple(p, "--pid") for p in args.pid]
    if not given and not extra:
        return None
    return {"given": given, "extra": extra}


def _launch_for(spec: dict | None, name: str) -> dict | None:
    if spec is None:
        return None
    given = spec["given"]
    if "kernels" in given:
        if not isinstance(given["kernels"], dict):
            raise LayoutError("launch file: \"kernels\" must map kernel names to launches")
        base = dict(given["kernels"].get(name, {}))
    else:
        base = dict(given)
    _check_launch_json(base)
    extra = spec["extra"]
    args = dict(base.get("args", {}))
    args.update({k: v for k, v in extra.items() if k not in ("grid", "pids")})
    base["args"] = args
    for k in ("grid", "pids"):
        if k in extra:
            base[k] = extra[k]
    base.setdefault("grid", [2, 1, 1])
    base.setdefault("pids", [[0, 0, 0], [1, 0, 0]] if base["grid"][0] > 1 else [[0, 0, 0]])
    return base


def _check_launch_json(d: dict) -> None:
    known = {"args", "grid", "pids", "views", "buffers", "symbols", "descriptors"}
    bad = sorted(set(d) - known)
    if bad:
        raise LayoutError(f"launch: unknown field {bad[0]!r} (known: {', '.join(sorted(known))})")
    args = d.get("args", {})
    if not isinstance(args, dict) or not all(isinstance(v, int) and not isinstance(v, bool) and abs(v) <= MAX_ARG_VALUE
                                             for v in args.values()):
        raise LayoutError("launch: \"args\" must map argument names to integers")
    for key in ("grid",):
        if key in d and (not isinstance(d[key], list) or not 1 <= len(d[key]) <= 3 or
                         not all(isinstance(x, int) and 1 <= x <= MAX_ARG_VALUE for x in d[key])):
            raise LayoutError("launch: \"grid\" must be 1 to 3 positive integers")
    if "pids" in d and (not isinstance(d["pids"], list) or not d["pids"] or len(d["pids"]) > 64 or
                        not all(isinstance(p, list) and 1 <= len(p) <= 3 and
                                all(isinstance(x, int) and 0 <= x <= MAX_ARG_VALUE for x in p) for p in d["pids"])):
        raise LayoutError("launch: \"pids\" must be a list of 1 to 64 program ids, each 1 to 3 integers")


def exit_code(outcomes) -> int:
    """The exit code of the outcomes: 1 some kernel wrong, else 3 some not valid, else 0."""
    verdicts = {o.verdict for o in outcomes}
    if "wrong" in verdicts:
        return EXIT_WRONG
    if verdicts - {"valid"}:
        return EXIT_UNPROVEN
    return EXIT_VALID


def summary(outcomes) -> dict:
    """The number of kernels per verdict (``valid``, ``wrong``, ``unsupported``, ``unknown``)."""
    counts = {v: 0 for v in ("valid", "wrong", "unsupported", "unknown")}
    for o in outcomes:
        counts[o.verdict] = counts.get(o.verdict, 0) + 1
    return counts


def render_text(outcomes, quiet: bool = False) -> str:
    """The outcomes as text: per kernel its verdict line and what was compared, or the reason
    and the first wrong element (with ``quiet`` the valid kernels are left out), then the count per
    verdict."""
    lines = []
    for o in outcomes:
        if quiet and o.verdict == "valid":
            continue
        head = f"{o.verdict:<11} {o.name} ({o.arch or '?'}, Triton {o.triton or '?'}) {o.seconds:.1f} s"
        lines.append(head)
        if o.verdict == "valid":
            extra = (f" ({o.unspecified} computed from undefined inputs: any value accepted)"
                     if o.unspecified else "")
            lines.append(f"            {o.elements} stored elements{extra}, program ids "
                         f"{', '.join(str(list(p)) for p in o.pids)}")
        else:
            lines.append(f"            {o.reason}")
            fw = o.first_wrong or {}
            if fw.get("what") == "hazard" and "shared_byte" in fw:
                held = fw.get("element_in_flight") or fw.get("element_held")
                where = f"shared byte {fw['shared_byte']}" + (f" holding {held}" if held else "")
                if fw.get("source"):
                    where += f" ({fw['source']})"
                lines.append(f"            first wrong element: {where}")
            if fw.get("buffer") is not None:
                where = f"{fw['buffer']}[{fw['element']}]"
                if fw.get("tensor_index"):
                    where += f" = stored tensor element {fw['tensor_index']}"
                if fw.get("source"):
                    where += f" ({fw['source']})"
                lines.append(f"            first wrong element: {where}")
                w = fw.get("writer") or {}
                if w:
                    lines.append(f"            written by PTX line {w.get('ptx_line')} ({w.get('instruction', '')[:60]}), "
                                 f"thread {w.get('thread')}, register {w.get('register')}")
                if fw.get("expected"):
                    lines.append(f"            expected: {fw['expected']}")
                if fw.get("actual"):
                    lines.append(f"            actual:   {fw['actual']}")
    c = summary(outcomes)
    lines.append(f"{len(outcomes)} kernel{'s' if len(outcomes) != 1 else ''}: {c['valid']} valid, {c['wrong']} wrong, "
                 f"{c['unsupported']} unsupported, {c['unknown']} unknown")
    return "\n".join(lines)


def run_paths(args) -> int:
    """Validate every kernel under ``args.paths``; print text or JSON; return the exit code."""
    from layoutverify.apps import jsonout
    from layoutverify.apps.kernels.folder import find_kernels
    from layoutverify.apps.kernels.validate import validate_files
    spec = _cli_launch(args)
    kernels = find_kernels(list(args.paths))
    outcomes = []
    show_progress = sys.stderr.isatty() and len(kernels) > 1
    for i, kf in enumerate(kernels, 1):
        if show_progress:
            print(f"\r[{i}/{len(kernels)}] {kf.name}", end="", file=sys.stderr, flush=True)
        outcomes.append(validate_files(kf, _launch_for(spec, kf.name), time_limit=float(args.time_limit)))
    if show_progress:
        print(file=sys.stderr)
    code = exit_code(outcomes)
    if args.json:
        doc = jsonout.dumps("kernel_validation", {"kernels": [o.to_json() for o in outcomes],
                                                  "summary": summary(outcomes), "exit": code}, indent=1)
        if args.json == "-":
            print(doc)
        else:
            from layoutverify.core.files import write_text
            write_text(args.json, doc + "\n", what="JSON file")
    if args.json != "-":
        print(render_text(outcomes, quiet=args.quiet))
    return code
