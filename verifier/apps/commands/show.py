"""``layoutverify show SPEC``: the canonical form of one layout, its bases or map, and its grid."""
from __future__ import annotations

import math

from layoutverify.apps import jsonout

from layoutverify.adapters import adapter, parse_shape, split_spec

from layoutverify.core.errors import NativeError

from .common import add_layout_options, layout_options, non_negative_int, positive_int

#: the default grid: at most this many rows, and the columns that fit in this many characters
DEFAULT_ROWS = 64
GRID_WIDTH = 100
#: larger tensors get no grid (the holders of every element are listed to draw one)
MAX_GRID_ELEMENTS = 1 << 16


def register(sub) -> None:
    """The ``show`` subcommand's arguments."""
    p = sub.add_parser("show", help="print a layout's canonical form and its grid",
                       description="Parse a layout in any framework's text and print its hardware and logical "
                                   "dims, its F2 bases (or symbolic map), its fingerprint and the grid of "
                                   "which thread/register holds each element.")
    p.add_argument("spec", metavar="FRAMEWORK:TEXT", help="the layout, e.g. 'triton:#ttg.nvidia_mma<...>'")
    add_layout_options(p)
    p.add_argument("--native", action="store_true",
                   help="also ask the installed framework for its own layout and say whether it agrees")
    p.add_argument("--no-grid", action="store_true", help="omit the grid")
    p.add_argument("--window", type=positive_int, default=None,
                   help="largest number of rows/columns drawn, as in prove (default: at most 64 rows and the "
                        f"columns that fit in {GRID_WIDTH} characters)")
    p.add_argument("--max-cells", type=non_negative_int, default=None,
                   help="older name of --window: at most N cells drawn (a window of isqrt(N) rows and columns; "
                        "0 draws no grid)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args) -> int:
    """Run ``layoutverify show``: the layout's canonical form and grid (with ``--native``, the
    installed framework's layout beside it); the exit code: 0, or 1 when the native layout differs
    or the framework rejects the text."""
    fw, text = split_spec(args.spec)
    shape = parse_shape(args.shape)
    opts = layout_options(args, fw)
    mod = adapter(fw)
    ours = mod.parse(text, shape=shape, **opts)
    native = None
    native_error = None
    if args.native:
        if not hasattr(mod, "native"):
            from layoutverify.core.errors import UnsupportedError
            raise UnsupportedError(f"--native is not available for {fw}")
        try:
            native = mod.native(text, shape=shape, **opts)
        except NativeError as e:
            native_error = str(e)
    agree = None
    if native is not None:
        # Same fingerprint = same dims (size-1 hardware dims aside) and the same normal form.
        agree = native.out_dims == ours.out_dims and native.fingerprint() == ours.fingerprint()
    if args.json:
        out = {"framework": fw, "spec": args.spec, "layout_kind": ours.kind, "layout": ours.to_json(),
               "fingerprint": ours.fingerprint(), "f2_linear": ours.is_f2_linear()}
        if native_error is not None:
            out["native"] = {"error": native_error}
        if native is not None:
            out["native"] = {"layout": native.to_json(), "fingerprint": native.fingerprint(), "agree": agree}
        jsonout.emit("layout", out)
    else:
        print(f"{fw} layout ({_kind_label(ours)})" + (f": {ours.name}" if ours.name else ""))
        padding = getattr(ours, "padding", None)
        if padding:
            print(f"padding: {padding} (offsets count elements; physical slot = "
                  f"{getattr(ours, 'physical_offset', 'offset + padding')})")
        print(ours.describe())
        window, width = _grid_window(args)
        if not args.no_grid and window != 0:
            print()
            print(ours.render(max_cells=MAX_GRID_ELEMENTS, window=window, width=width))
        if native_error is not None:
            print()
            print(f"native {fw}: rejected the input: {native_error}")
        if native is not None:
            print()
            installed = ""
            if fw == "triton":
                from importlib import metadata
                try:
                    installed = f" (installed Triton {metadata.version('triton')}"
                    installed += f"; ours read with {opts['triton_version']} semantics)" if "triton_version" in opts else ")"
                except metadata.PackageNotFoundError:
                    installed = ""
            print(f"native {fw}{installed}:")
            print(native.describe())
            print()
            print("agree: yes (identical normal form)" if agree else "agree: NO: the native layout differs from ours")
    if native_error is not None:
        return 1
    return 0 if agree in (None, True) else 1


def _grid_window(args) -> tuple[int | None, int | None]:
    """(rows/columns drawn, line width) from ``--window`` or its older name ``--max-cells``."""
    if args.window is not None:
        return args.window, None
    if args.max_cells is not None:
        return math.isqrt(args.max_cells), None
    return DEFAULT_ROWS, GRID_WIDTH


def _kind_label(layout) -> str:
    """``register``; ``memory`` where the hardware dims are memory locations (``offset``, or
    tensor-memory ``row``/``col``); else ``function`` (a CuTe/Tilus map from mode coordinates,
    which is neither threads nor memory)."""
    if layout.kind == "register":
        return "register"
    if set(layout.in_names) <= {"offset", "row", "col", "block"}:
        return "memory"
    return "function"
