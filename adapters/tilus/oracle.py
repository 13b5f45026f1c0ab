"""The installed tilus package as an oracle.

:func:`native` builds the layout with tilus's own functions (``tilus.ir.layout.ops``: the parsed
call tree is mapped call by call onto them, never ``eval``) and converts tilus's result to the
canonical form with tilus's own mapping functions:

* register layouts: ``RegisterLayout.get_global(spatial_index=s, local_index=l)`` with symbolic
  ``s``/``l``, evaluated over every (thread, local) pair by tilus's ``vectorized_evaluate``;
* shared layouts: ``SharedLayout.as_numpy_grid()`` (offset of every element), inverted.

Thread/warp numbering is the same as :mod:`layoutverify.adapters.tilus.register`'s (DESIGN.md §1).
Anything tilus raises becomes a :class:`~layoutverify.core.errors.NativeError`.
"""
from __future__ import annotations

import numpy as np

from layoutverify.core.errors import LayoutError, NativeError, UnsupportedError
from layoutverify.core.layout import MAX_TABLE_LOCATIONS, Layout, logical_dims

from . import syntax
from .package import import_tilus
from .shared import _invert_offsets


def _tilus():
    try:
        import_tilus()      # with or without torch (see .package)
        from tilus.ir.layout import RegisterLayout, SharedLayout
        from tilus.ir.layout.ops import register_ops as R
        from tilus.ir.layout.ops import shared_ops as S
        from tilus.ir.layout.register_layout import register_layout
        from tilus.ir.layout.shared_layout import Swizzle, shared_layout
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise NativeError(f"tilus is not installed ({e}); the native Tilus oracle needs it") from None
    return RegisterLayout, SharedLayout, Swizzle, R, S, register_layout, shared_layout


class TilusBackend(syntax.Backend):
    """Evaluates the parsed tree with tilus 0.2.0's functions."""

    def __init__(self, text: str):
        self.text = text
        (self.RegisterLayout, self.SharedLayout, self.Swizzle, self.R, self.S,
         self.register_layout, self.shared_layout) = _tilus()

    def kind_of(self, v):
        """``reg``, ``shared`` or ``swizzle`` for tilus's own values, ``None`` otherwise."""
        if isinstance(v, self.RegisterLayout):
            return "reg"
        if isinstance(v, self.SharedLayout):
            return "shared"
        if isinstance(v, self.Swizzle):
            return "swizzle"
        return None

    def _run(self, node, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except LayoutError:
            raise
        except Exception as e:  # tilus raises assertion, value and its own errors
            raise NativeError(f"tilus rejected {syntax.node_name(node)} at column {node.column} "
                              f"(token {syntax._short(node.token, 24)!r}): {type(e).__name__}: {e}") from None

    def call(self, name, b, node):
        """Call Tilus function ``name`` with bound arguments ``b`` in the installed tilus (its
        ``register_ops`` / ``shared_ops``); its errors become :class:`NativeError` at ``node``."""
        R, S = self.R, self.S
        ranks = (lambda: list(b["ranks"]) if b.get("ranks") is not None else None)
        table = {
            "spatial": lambda: R.spatial(*b["shape"], ranks=ranks()),
            "local": lambda: R.local(*b["shape"], ranks=ranks()),
            "repeat": lambda: R.local(*b["shape"], ranks=ranks()),
            "column_spatial": lambda: R.column_spatial(*b["shape"]),
            "column_local": lambda: R.column_local(*b["shape"]),
            "replicated": lambda: R.replicated(*b["shape"], num_workers=b["num_workers"]),
            "auto_local_spatial": lambda: R.auto_local_spatial(b["num_threads"], list(b["shape"])),
            "register_layout": lambda: self.register_layout(list(b["shape"]), list(b["mode_shape"]),
                                                            list(b["spatial_modes"]), list(b["local_modes"])),
            "RegisterLayout": lambda: self.register_layout(list(b["shape"]), list(b["mode_shape"]),
                                                           list(b["spatial_modes"]), list(b["local_modes"])),
            "compose": lambda: R.compose(b["outer"], b["inner"]),
            "concat": lambda: R.concat(b["lhs"], b["rhs"]),
            "divide": lambda: R.divide(b["lhs"], b["rhs"]),
            "left_divide": lambda: R.left_divide(b["layout"], b["lhs_divisor"]),
            "permute": lambda: R.permute(b["layout"], list(b["dims"])),
            "reshape": lambda: R.reshape(b["layout"], list(b["shape"])),
            "flatten": lambda: R.flatten(b["layout"], b["start_dim"], b["end_dim"]),
            # the docstring's inclusive end_dim, through tilus's own (exclusive) flatten
            "flatten_documented": lambda: R.flatten(b["layout"], b["start_dim"] % len(b["layout"].shape),
                                                    b["end_dim"] % len(b["layout"].shape) + 1),
            "squeeze": lambda: R.squeeze(b["layout"], list(b["dims"])),
            "unsqueeze": lambda: R.unsqueeze(b["layout"], list(b["dims"])),
            "reduce": lambda: R.reduce(b["layout"], list(b["dims"]), keepdims=b["keepdims"]),
            "reduce_to": lambda: R.reduce_to(b["layout"], list(b["shape"])),
            "Swizzle": lambda: self.Swizzle(base=b["base"], bits=b["bits"], shift=b["shift"]),
            "shared_row_major": lambda: S.shared_row_major(*b["shape"]),
            "shared_column_major": lambda: S.shared_column_major(*b["shape"]),
            "shared_row_major_swizzle": lambda: S.shared_row_major_swizzle(list(b["shape"]), b["dtype_nbytes"]),
            "shared_layout": lambda: self.shared_layout(list(b["shape"]), list(b["mode_shape"]),
                                                        list(b["mode_strides"]), b["optional_swizzle"]),
            "SharedLayout": lambda: self.shared_layout(list(b["shape"]), list(b["mode_shape"]),
                                                       list(b["mode_strides"]), b["swizzle"]),
            "shared_compose": lambda: S.shared_compose(b["lhs"], b["rhs"]),
            "shared_permute": lambda: S.shared_permute(b["layout"], list(b["dims"])),
            "shared_reshape": lambda: S.shared_reshape(b["layout"], list(b["new_shape"])),
            "shared_unsqueeze": lambda: S.shared_unsqueeze(b["layout"], list(b["dims"])),
            "shared_slice": lambda: S.shared_slice(b["layout"], list(b["retain_dims"])),
        }
        return self._run(node, table[name])

    def method(self, kind, name, recv, b, node):
        """Method ``name`` of a tilus value, called in the installed tilus."""
        if kind == "reg":
            if name == "reduce_to":
                return self._run(node, recv.reduce_to, list(b["shape"]))
            fn = getattr(recv, "local" if name == "repeat" else name)
            return self._run(node, fn, *b["shape"])
        table = {
            "apply_swizzle": lambda: recv.apply_swizzle(b["swizzle"]),
            "permute": lambda: recv.permute(list(b["dims"])),
            "transpose": lambda: recv.transpose(),
            "prepend_dim": lambda: recv.prepend_dim(b["extent"]),
            "unsqueeze": lambda: recv.unsqueeze(list(b["dims"])),
            "slice": lambda: recv.slice(list(b["retain_dims"])),
        }
        return self._run(node, table[name])


def build(text: str):
    """The tilus object (``RegisterLayout`` or ``SharedLayout``) that tilus builds for ``text``."""
    return syntax.evaluate(text, TilusBackend(text))


def register_to_layout(layout, warp_size: int = 32, name=None) -> Layout:
    """Canonical form of a tilus ``RegisterLayout``, through tilus's own ``get_global``."""
    from tilus.hidet.ir.dtypes import int32
    from tilus.hidet.ir.expr import Var
    from tilus.ir.utils.veceval import vectorized_evaluate

    shape = tuple(int(s) for s in layout.shape)
    if not shape:
        raise UnsupportedError("a rank-0 (scalar) register layout has no logical dims")
    T, R = int(layout.spatial_size), int(layout.local_size)
    if T * R > MAX_TABLE_LOCATIONS:
        raise NativeError(f"tilus layout of {T} threads x {R} locals is too large to tabulate")
    if T <= warp_size:
        lanes, warps = T, 1
    elif T % warp_size:
        raise LayoutError(f"the layout has {T} threads, more than one warp of {warp_size} but not a multiple of it")
    else:
        lanes, warps = warp_size, T // warp_size
    s, l = Var("s", int32), Var("l", int32)
    try:
        coords = layout.get_global(spatial_index=s, local_index=l)
        S, L = np.meshgrid(np.arange(T, dtype=np.int64), np.arange(R, dtype=np.int64), indexing="ij")
        cols = [np.broadcast_to(np.asarray(vectorized_evaluate(e, {s: S, l: L}), dtype=np.int64), (T, R)).reshape(-1)
                for e in coords]
    except Exception as e:
        raise NativeError(f"tilus could not map {layout}: {type(e).__name__}: {e}") from None
    table = np.stack(cols, axis=1)     # row t * R + r: register fastest, then lane, then warp
    in_dims = [("register", R), ("lane", lanes), ("warp", warps), ("block", 1)]
    for d, n in enumerate(shape):
        if table[:, d].min(initial=0) < 0 or table[:, d].max(initial=0) >= n:
            raise NativeError(f"tilus maps a location outside dim {d} of size {n} for {layout}")
    return Layout.from_table(in_dims, logical_dims(shape), table, name=name)


def shared_to_layout(layout, name=None) -> Layout:
    """Canonical memory layout of a tilus ``SharedLayout``, through tilus's ``as_numpy_grid``."""
    shape = tuple(int(s) for s in layout.shape)
    if not shape:
        raise UnsupportedError("a rank-0 shared layout has no logical dims")
    if int(np.prod([float(s) for s in shape])) > MAX_TABLE_LOCATIONS:   # tilus would build the whole grid
        raise NativeError(f"tilus shared layout of shape {list(shape)} is too large to tabulate "
                          f"(more than {MAX_TABLE_LOCATIONS} elements)")
    try:
        grid = np.asarray(layout.as_numpy_grid(), dtype=np.int64)
    except Exception as e:
        raise NativeError(f"tilus could not evaluate {layout}: {type(e).__name__}: {e}") from None
    return _invert_offsets(np.broadcast_to(grid, shape), shape, name)


def to_layout(obj, warp_size: int = 32, name=None) -> Layout:
    _, SharedLayout, *_ = _tilus()
    if isinstance(obj, SharedLayout):
        return shared_to_layout(obj, name=name)
    return register_to_layout(obj, warp_size=warp_size, name=name)
