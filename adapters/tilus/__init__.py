"""Tilus adapter: Tilus register and shared layout expressions -> canonical layouts.

Accepted text (Python syntax, parsed with ``ast``, never evaluated; see
:mod:`layoutverify.adapters.tilus.syntax` for the whitelist and limits):

* register layouts (:mod:`layoutverify.adapters.tilus.register`): ``spatial(8, 4)``, ``local(2, 1)``,
  ``column_spatial``, ``column_local``, ``repeat`` (old name of ``local``, used in Tilus's docs),
  ``replicated(4, 4, num_workers=2)``, ``auto_local_spatial(128, [64, 64])``, ``ranks=[...]``,
  chains ``local(2, 1).spatial(8, 4).local(1, 2)``, ``compose(a, b)`` / ``a * b``, ``reduce(a,
  dims=[0], keepdims=False)``, ``a.reduce_to([...])`` / ``reduce_to(a, [...])``, ``permute``,
  ``reshape``, ``flatten`` (``end_dim`` exclusive, as tilus 0.2.0's code does; its docstring's
  inclusive reading is ``flatten_documented``), ``squeeze``, ``unsqueeze``,
  ``concat``, ``divide(a, b)`` / ``a / b``, ``left_divide``, ``register_layout(...)`` and the printed
  form ``RegisterLayout(shape=[...], mode_shape=[...], spatial_modes=[...], local_modes=[...])``;
* shared layouts (:mod:`layoutverify.adapters.tilus.shared`): ``shared_row_major``, ``shared_column_major``,
  ``shared_row_major_swizzle``, ``shared_layout``, ``SharedLayout(...)`` as tilus prints it,
  ``Swizzle(base, bits, shift)``, ``shared_compose``/``permute``/``reshape``/``unsqueeze``/``slice``.

Register layouts become ``(register, lane, warp, block) -> (dim0, ...)`` with ``local_id ->
register`` and ``thread_id t -> lane = t % warp_size, warp = t // warp_size`` (option
``warp_size``, default 32; 64 for AMD). Shared layouts become memory layouts ``(offset, block) ->
(dim0, ...)``. The layout carries its own shape; a ``shape`` argument, when given, must agree.

:func:`native` answers the same question with the installed tilus package (the oracle).
"""
from __future__ import annotations

import re

from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout

from . import register as reg
from . import shared as sh
from . import syntax
from . import oracle as _native_oracle   # noqa: F401  (tilus itself is imported lazily)

# The oracle's conversion helpers live in :mod:`layoutverify.adapters.tilus.oracle` (not ``native``, so that the
# submodule can never shadow the adapter-interface function ``native`` below).

__all__ = ["parse", "native", "build", "to_tilus_text", "NOTES"]

#: what a user comparing against Tilus should know (shown by the fragment atlas)
NOTES = [
    "flatten(layout, start_dim, end_dim): tilus 0.2.0's code treats end_dim as exclusive (flatten(x) of a "
    "3-D layout merges dims 0 and 1 only), its docstring says inclusive; tilus:flatten(...) reads as the "
    "code behaves, tilus:flatten_documented(...) as the docstring says.",
]

KNOWN_OPTIONS = ("warp_size",)


class OurBackend(syntax.Backend):
    """Evaluates the parsed tree with our own models (:mod:`.register`, :mod:`.shared`)."""

    def __init__(self, text: str):
        self.text = text

    def kind_of(self, v):
        """``reg``, ``shared`` or ``swizzle`` for our model's values, ``None`` otherwise."""
        if isinstance(v, reg.RegisterModes):
            return "reg"
        if isinstance(v, sh.SharedModes):
            return "shared"
        if isinstance(v, sh.Swizzle):
            return "swizzle"
        return None

    def call(self, name, b, node):
        """Call Tilus function ``name`` with bound arguments ``b`` on our models (:mod:`.register`,
        :mod:`.shared`); errors located at ``node``."""
        fns = {
            "spatial": lambda: reg.spatial(*b["shape"], ranks=b["ranks"]),
            "local": lambda: reg.local(*b["shape"], ranks=b["ranks"]),
            "repeat": lambda: reg.local(*b["shape"], ranks=b["ranks"]),
            "column_spatial": lambda: reg.column_spatial(*b["shape"]),
            "column_local": lambda: reg.column_local(*b["shape"]),
            "replicated": lambda: reg.replicated(*b["shape"], num_workers=b["num_workers"]),
            "auto_local_spatial": lambda: reg.auto_local_spatial(b["num_threads"], b["shape"]),
            "register_layout": lambda: reg.register_layout(b["shape"], b["mode_shape"], b["spatial_modes"], b["local_modes"]),
            "RegisterLayout": lambda: reg.register_layout(b["shape"], b["mode_shape"], b["spatial_modes"], b["local_modes"]),
            "compose": lambda: reg.compose(b["outer"], b["inner"]),
            "concat": lambda: reg.concat(b["lhs"], b["rhs"]),
            "divide": lambda: reg.divide(b["lhs"], b["rhs"]),
            "left_divide": lambda: reg.left_divide(b["layout"], b["lhs_divisor"]),
            "permute": lambda: reg.permute(b["layout"], b["dims"]),
            "reshape": lambda: reg.reshape(b["layout"], b["shape"]),
            "flatten": lambda: reg.flatten(b["layout"], b["start_dim"], b["end_dim"]),
            "flatten_documented": lambda: reg.flatten_documented(b["layout"], b["start_dim"], b["end_dim"]),
            "squeeze": lambda: reg.squeeze(b["layout"], b["dims"]),
            "unsqueeze": lambda: reg.unsqueeze(b["layout"], b["dims"]),
            "reduce": lambda: reg.reduce(b["layout"], b["dims"], keepdims=b["keepdims"]),
            "reduce_to": lambda: reg.reduce_to(b["layout"], b["shape"]),
            "Swizzle": lambda: sh.Swizzle(b["base"], b["bits"], b["shift"]),
            "shared_row_major": lambda: sh.shared_row_major(*b["shape"]),
            "shared_column_major": lambda: sh.shared_column_major(*b["shape"]),
            "shared_row_major_swizzle": lambda: sh.shared_row_major_swizzle(b["shape"], b["dtype_nbytes"]),
            "shared_layout": lambda: sh.shared_layout(b["shape"], b["mode_shape"], b["mode_strides"], b["optional_swizzle"]),
            "SharedLayout": lambda: sh.shared_layout(b["shape"], b["mode_shape"], b["mode_strides"], b["swizzle"]),
            "shared_compose": lambda: sh.shared_compose(b["lhs"], b["rhs"]),
            "shared_permute": lambda: sh.shared_permute(b["layout"], b["dims"]),
            "shared_reshape": lambda: sh.shared_reshape(b["layout"], b["new_shape"]),
            "shared_unsqueeze": lambda: sh.shared_unsqueeze(b["layout"], b["dims"]),
            "shared_slice": lambda: sh.shared_slice(b["layout"], b["retain_dims"]),
        }
        return syntax.wrap_errors(self.text, node, fns[name])

    def method(self, kind, name, recv, b, node):
        """Method ``name`` of a model value (register chains ``.local(...)``, ``.spatial(...)``,
        ``.reduce_to``; shared ``apply_swizzle``, ``permute``, ...)."""
        if kind == "reg":
            if name == "reduce_to":
                return syntax.wrap_errors(self.text, node, reg.reduce_to, recv, b["shape"])
            make = {"local": reg.local, "repeat": reg.local, "spatial": reg.spatial,
                    "column_local": reg.column_local, "column_spatial": reg.column_spatial}[name]
            return syntax.wrap_errors(self.text, node, lambda: reg.compose(recv, make(*b["shape"])))
        fns = {
            "apply_swizzle": lambda: sh.apply_swizzle(recv, b["swizzle"]),
            "permute": lambda: sh.shared_permute(recv, b["dims"]),
            "transpose": lambda: _transpose(recv),
            "prepend_dim": lambda: sh.prepend_dim(recv, b["extent"]),
            "unsqueeze": lambda: sh.shared_unsqueeze(recv, b["dims"]),
            "slice": lambda: sh.shared_slice(recv, b["retain_dims"]),
        }
        return syntax.wrap_errors(self.text, node, fns[name])


def _transpose(layout: sh.SharedModes) -> sh.SharedModes:
    if layout.rank != 2:
        raise LayoutError(f"transpose() needs a 2-D shared layout, got rank {layout.rank}")
    return sh.shared_permute(layout, [1, 0])


def _options(options: dict) -> int:
    unknown = [k for k, v in options.items() if k not in KNOWN_OPTIONS and v is not None]
    if unknown:
        raise LayoutError(f"unknown Tilus option(s) {', '.join(sorted(unknown))}; known: {', '.join(KNOWN_OPTIONS)}")
    ws = options.get("warp_size")
    ws = 32 if ws is None else ws
    if isinstance(ws, bool) or not isinstance(ws, int) or ws < 1:
        raise LayoutError(f"warp_size must be a positive integer, got {ws!r}")
    return ws


def _check_shape(layout: Layout, shape, text: str) -> Layout:
    if shape is not None and tuple(shape) != tuple(layout.out_sizes):
        raise LayoutError(f"the Tilus layout {text[:60]!r} has shape {list(layout.out_sizes)}, "
                          f"but shape {list(shape)} was given")
    return layout


_SPEC_START = re.compile(
    r"(RegisterLayout\(|SharedLayout\(|Swizzle\(|shared_\w*\(|(local|spatial|column_spatial|column_local|"
    r"replicated|auto_local_spatial|register_layout|compose|concat|reduce|reduce_to|permute|reshape|flatten|flatten_documented|"
    r"squeeze|unsqueeze|divide|left_divide|repeat)\s*\()")


def looks_like(text: str) -> bool:
    """Whether unprefixed spec text is a Tilus expression (used by the registry to guess the framework)."""
    return bool(_SPEC_START.match(text.lstrip()))


#: one call of a chain of register layouts with plain positive integer arguments
_CHAIN_CALL = r"(local|spatial|column_local|column_spatial)[ \t]*\([ \t]*([1-9][0-9]{0,8}(?:[ \t]*,[ \t]*[1-9][0-9]{0,8})*)[ \t]*,?[ \t]*\)"
_CHAIN = re.compile(rf"[ \t]*{_CHAIN_CALL}(?:[ \t]*\.[ \t]*{_CHAIN_CALL})*[ \t]*")
_CHAIN_PART = re.compile(_CHAIN_CALL)


def _chain_calls(text) -> list[tuple[str, list[int]]] | None:
    """``[(function, arguments), ...]`` of ``local(2, 3).spatial(4, 8)``-style text (plain positive
    integers, one line, at most 8 calls), outermost first; ``None`` for anything else (long texts:
    the evaluator's limits on tokens and chain length apply)."""
    if type(text) is not str or len(text) > 400 or _CHAIN.fullmatch(text) is None:
        return None
    calls = [(m.group(1), [int(v) for v in m.group(2).split(",")]) for m in _CHAIN_PART.finditer(text)]
    return calls if len(calls) <= min(8, syntax.MAX_CHAIN) else None


def build(text: str):
    """Our model of ``text``: a :class:`~layoutverify.adapters.tilus.register.RegisterModes` or
    :class:`~layoutverify.adapters.tilus.shared.SharedModes`. The expression is read by the
    evaluator (:mod:`.syntax`, Python's ``ast``); a one-line chain of ``local`` / ``spatial`` /
    ``column_local`` / ``column_spatial`` with plain integers is read by one pattern and composed
    in one pass (:func:`.register.chain`), the same model (``tests/test_tilus_sweep.py``); where a
    step of it refuses, the evaluator names the error where it is."""
    calls = _chain_calls(text)
    if calls is not None:
        try:
            return reg.chain(calls)
        except LayoutError:
            pass
    value = syntax.evaluate(text, OurBackend(text))
    if not isinstance(value, (reg.RegisterModes, sh.SharedModes)):
        raise LayoutError(f"{text[:60]!r} is not a layout (it evaluates to a {type(value).__name__})")
    return value


def parse(text: str, shape=None, **options) -> Layout:
    """Parse a Tilus layout expression into a canonical :class:`~layoutverify.core.layout.Layout`:
    our model of the text (:func:`build`), then the model's own canonical layout."""
    warp_size = _options(options)
    model = build(text)
    name = "tilus:" + " ".join(text.split())[:80]
    if isinstance(model, sh.SharedModes):
        lay = model.to_layout(name=name)
    else:
        lay = model.to_layout(warp_size=warp_size, name=name)
    return _check_shape(lay, shape, text)


def native(text: str, shape=None, *, reference: str | None = None, **options) -> Layout:
    """The installed tilus's answer for ``text`` (built and mapped by tilus's own functions).

    ``reference`` (e.g. ``"mma_dot:m16n8k16v1_f16_f16:A"``, ``"tcgen05_ldst:16x256b"``) names a layout
    Tilus defines in its instruction modules instead (:mod:`.instructions`); ``text`` is then only
    the expression being judged, and the answer is Tilus's own definition."""
    if reference:
        from .instructions import instruction_layout
        return _check_shape(instruction_layout(reference), shape, text)
    warp_size = _options(options)
    nat = _native_oracle
    obj = nat.build(text)
    name = "tilus-native:" + " ".join(text.split())[:80]
    if nat.TilusBackend(text).kind_of(obj) not in ("reg", "shared"):
        raise LayoutError(f"{text[:60]!r} is not a layout")
    return _check_shape(nat.to_layout(obj, warp_size=warp_size, name=name), shape, text)


def to_tilus_text(text: str) -> str:
    """The canonical Tilus printed form of ``text`` (``RegisterLayout(...)`` / ``SharedLayout(...)``)."""
    return str(build(text))
