"""Verdicts, witnesses and the aligned pair of layouts that every comparison strategy shares.

The strategies (F2 in :mod:`layoutverify.core.compare`, mixed radix in
:mod:`layoutverify.core.radix`, tables in :mod:`layoutverify.core.table`, z3 in
:mod:`layoutverify.core.smt`) all import from here and nothing of each other's, so the
dependencies run one way: ``compare -> {f2, radix, table, smt} -> result``.
"""
from __future__ import annotations

import numpy as np

from layoutverify.core.layout import Layout

VERDICTS = ("equal", "equal_up_to_register_order", "not_equal", "different_tensors", "unknown")

#: The hardware dim whose numbering ``equal_up_to_register_order`` ignores.
REGISTER = "register"
_DIM_ORDER = ("register", "offset", "lane", "warp", "block")


class Result:
    """The outcome of :func:`layoutverify.core.compare.compare`: ``verdict`` (one of
    :data:`VERDICTS`), ``method`` (the strategy that proved it: ``f2``, ``radix``, ``table``,
    ``z3``; or ``shape`` / ``kinds`` / ``identical`` for verdicts read off the dims and the
    expressions), ``witness``, ``reason`` (one sentence), ``seconds`` (the time a strategy took;
    0.0 for a verdict read off the layouts' normal forms) and ``details`` (extra facts, e.g.
    ``smt2``: the file the solver's queries went to).

    ``witness`` by verdict:

    * ``not_equal``: ``{"hardware": {dim: idx}, "a": [coords] | None, "b": [coords] | None}``
      (``None``: the location does not exist in that layout);
    * ``equal_up_to_register_order``: the same shape, a location where the register order differs;
    * ``different_tensors``: ``{"element": [coords], "held_by": "a" | "b", "hardware": {...}}``,
      or ``{"shape_a": ..., "shape_b": ..., "dims_a": ..., "dims_b": ...}`` for a dims mismatch,
      or ``{"kind_a": "memory", "kind_b": "register", "hardware_a": [...], "hardware_b": [...]}``
      (method ``kinds``) for a memory layout against a register layout;
    * ``equal``: ``None``; ``unknown``: whatever partial evidence there is, or ``None``.

    **Deferred witnesses.** A verdict decided on the layouts' normal forms
    (:mod:`layoutverify.core.normalform`) is proved without a counterexample; its ``witness`` and
    ``reason`` are built on first access (:meth:`proved`) by the strategy that finds concrete
    counterexamples, which re-evaluates the witness on both layouts, and must reach the same
    verdict (an :class:`AssertionError`, i.e. an internal error, otherwise). A result pickles
    with its layouts and builds the witness on the other side.
    """

    # defaults on the class: a verdict read off normal forms is a result with two attribute
    # stores (``verdict``, ``method``) and a deferred witness
    _witness = _reason = _build = _details = None
    seconds = 0.0

    def __init__(self, verdict: str, method: str, witness: dict | None, seconds: float, reason: str,
                 details: dict | None = None):
        self.verdict, self.method, self.seconds = verdict, method, seconds
        self._witness, self._reason = witness, reason
        if details:
            self._details = details

    @classmethod
    def proved(cls, verdict: str, method: str, build=None) -> "Result":
        """A verdict decided without a counterexample: ``equal`` (its reason said on first read),
        or another verdict whose witness and reason come from ``build()`` (a callable, or a tuple
        ``(function, *arguments)``) returning a full :class:`Result` of the same verdict, called
        once on first access."""
        r = _new(cls)
        r.verdict, r.method = verdict, method
        if build is not None:
            r._build = build
        return r

    @property
    def details(self) -> dict:
        """Extra facts (e.g. ``smt2``: the file the queries went to); created on first use."""
        if self._details is None:
            self._details = {}
        return self._details

    @details.setter
    def details(self, value) -> None:
        self._details = value

    def _force(self) -> None:
        build, self._build = self._build, None
        full = build[0](*build[1:]) if type(build) is tuple else build()
        if full.verdict != self.verdict:
            raise AssertionError(f"internal: the normal forms say {self.verdict}, the {full.method} strategy "
                                 f"says {full.verdict}")
        self._witness, self._reason = full._witness, full._reason

    @property
    def witness(self) -> dict | None:
        """The counterexample (see the class docstring); built on first read when deferred."""
        if self._build is not None:
            self._force()
        return self._witness

    @witness.setter
    def witness(self, value) -> None:
        self._build, self._witness = None, value

    @property
    def reason(self) -> str:
        """Why the verdict holds, in one sentence."""
        if self._build is not None:
            self._force()
        reason = self._reason
        if reason is None and self.verdict == "equal":  # proved on normal forms: said on first read
            reason = self._reason = _EQUAL_REASON.get(self.method)
        return reason

    @reason.setter
    def reason(self, value) -> None:
        if self._build is not None:
            self._force()
        self._reason = value

    @property
    def proved_equal(self) -> bool:
        """Whether the verdict is ``equal``."""
        return self.verdict == "equal"

    def _fields(self) -> tuple:
        return (self.verdict, self.method, self.witness, self.seconds, self.reason, self.details)

    def __eq__(self, other) -> bool:
        return isinstance(other, Result) and self._fields() == other._fields()

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        v, m, w, s, r, d = self._fields()
        return (f"Result(verdict={v!r}, method={m!r}, witness={w!r}, seconds={s!r}, reason={r!r}, "
                f"details={d!r})")

    def to_json(self) -> dict:
        """``verdict``, ``method``, ``witness``, ``seconds``, ``reason`` (and ``details``) as JSON."""
        return {"verdict": self.verdict, "method": self.method, "witness": _jsonable(self.witness),
                "seconds": round(self.seconds, 6), "reason": self.reason, **(
                    {"details": _jsonable(self._details)} if self._details else {})}


_new = object.__new__


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.integer):
        return int(x)
    return x


_EQUAL_REASON = {"f2": "every hardware location holds the same element (identical F2 bases)",
                 "radix": "every hardware location holds the same element (identical mixed-radix digit strides)"}


# ---------------------------------------------------------------------------------------------
class Pair:
    """Two layouts over one aligned hardware space: the union of their hardware dim names,
    each layout giving size 1 to a dim it lacks."""

    def __init__(self, a: Layout, b: Layout):
        self.a, self.b = a, b
        names = list(a.in_names) + [n for n in b.in_names if n not in a.in_names]
        rank = {n: i for i, n in enumerate(_DIM_ORDER)}
        first = {n: i for i, n in enumerate(names)}
        self.names = tuple(sorted(names, key=lambda n: (rank.get(n, len(rank)), first[n])))
        da, db = dict(a.in_dims), dict(b.in_dims)
        self.size_a = {n: da.get(n, 1) for n in self.names}
        self.size_b = {n: db.get(n, 1) for n in self.names}
        self.same_sizes = self.size_a == self.size_b
        self.thread_names = tuple(n for n in self.names if n != REGISTER)
        self.same_threads = all(self.size_a[n] == self.size_b[n] for n in self.thread_names)
        self.has_register = REGISTER in self.names

    def layout(self, side: str) -> Layout:
        """Layout ``a`` or ``b`` by side (``"a"`` / ``"b"``)."""
        return self.a if side == "a" else self.b

    def sizes(self, side: str) -> dict:
        """The aligned hardware sizes of one side (1 for a dim that side lacks)."""
        return self.size_a if side == "a" else self.size_b

    def location(self, **idx) -> dict:
        """A location over the aligned dims: the given indices, 0 for every other dim."""
        return {n: int(idx.get(n, 0)) for n in self.names}

    def evaluate(self, side: str, loc: dict) -> list[int] | None:
        """Element at a hardware location (exact integer evaluation, :meth:`Layout.element`),
        ``None`` where the location lies outside that layout."""
        sizes = self.sizes(side)
        if any(loc.get(n, 0) >= sizes[n] or loc.get(n, 0) < 0 for n in self.names):
            return None
        return self.layout(side).element(loc)

    def location_witness(self, loc: dict) -> dict:
        """The witness of a location: ``{"hardware": loc, "a": A(loc), "b": B(loc)}`` (``None`` where
        the location lies outside a side)."""
        return {"hardware": dict(loc), "a": self.evaluate("a", loc), "b": self.evaluate("b", loc)}

    def outside_location(self) -> dict | None:
        """A location that exists in one layout only (first differing dim), or ``None``."""
        for n in self.names:
            if self.size_a[n] != self.size_b[n]:
                return self.location(**{n: min(self.size_a[n], self.size_b[n])})
        return None

    def outside_thread_location(self) -> dict | None:
        """A thread location (register 0) that exists in one layout only, or ``None``."""
        for n in self.thread_names:
            if self.size_a[n] != self.size_b[n]:
                return self.location(**{n: min(self.size_a[n], self.size_b[n])})
        return None


def _fmt_loc(loc: dict) -> str:
    return ", ".join(f"{n}={v}" for n, v in loc.items())


def _fmt_el(c) -> str:
    return "nothing (no such location)" if c is None else "(" + ", ".join(map(str, c)) + ")"


def _dims_text(lay: Layout) -> str:
    return "[" + ", ".join(f"{n}={s}" for n, s in lay.in_dims) + "]"


# -- shared verdict builders ------------------------------------------------------------------
def kind_mismatch(a: Layout, b: Layout) -> Result | None:
    """``different_tensors`` (method ``kinds``) when one layout is a memory layout (hardware
    ``offset``) and the other a register layout (``register, lane, warp``): they place a tensor in
    different kinds of storage, so no location of one is a location of the other. Not
    ``not_equal``, which would suggest the same storage filled differently."""
    if a.kind == b.kind:
        return None
    w = {"kind_a": a.kind, "kind_b": b.kind, "hardware_a": [n for n, _ in a.in_dims],
         "hardware_b": [n for n, _ in b.in_dims]}
    why = (f"the layouts are of different kinds: A is a {a.kind} layout ({', '.join(w['hardware_a'])}), "
           f"B is a {b.kind} layout ({', '.join(w['hardware_b'])}); compare a memory layout with a memory "
           f"layout and a register layout with a register layout (e.g. cute:tv:... for a CuTe thread/value layout)")
    return Result("different_tensors", "kinds", w, 0.0, why)


def shape_mismatch(a: Layout, b: Layout) -> Result | None:
    """Verdicts decided before any strategy: layouts of different kinds (:func:`kind_mismatch`),
    then different logical dims or shapes."""
    kinds = kind_mismatch(a, b)
    if kinds is not None:
        return kinds
    if a.out_dims == b.out_dims:
        return None
    w = {"shape_a": list(a.out_sizes), "shape_b": list(b.out_sizes),
         "dims_a": list(a.out_names), "dims_b": list(b.out_names)}
    if a.out_names != b.out_names:
        why = f"logical dims differ: {list(a.out_names)} vs {list(b.out_names)}"
    else:
        why = f"logical shapes differ: {list(a.out_sizes)} vs {list(b.out_sizes)}"
    return Result("different_tensors", "shape", w, 0.0, why)


def coverage_result(method: str, side: str, element, loc) -> Result:
    """``different_tensors``: ``element`` is held by ``side`` (at ``loc``) and by no location of the other."""
    other = "b" if side == "a" else "a"
    w = {"element": [int(c) for c in element], "held_by": side, "hardware": dict(loc)}
    return Result("different_tensors", method, w, 0.0,
                  f"element {_fmt_el(element)} is held by {side.upper()} (at {_fmt_loc(loc)}) "
                  f"but by no hardware location of {other.upper()}")


def equal_result(method: str, how: str) -> Result:
    """``equal``, proved by ``method`` (``how`` says how, in the reason)."""
    return Result("equal", method, None, 0.0, f"every hardware location holds the same element ({how})")


def reg_order_result(pair: Pair, method: str, diff_loc: dict) -> Result:
    w = pair.location_witness(diff_loc)
    extra = ""
    if pair.size_a.get(REGISTER, 1) != pair.size_b.get(REGISTER, 1):
        extra = f"; register counts differ ({pair.size_a.get(REGISTER, 1)} vs {pair.size_b.get(REGISTER, 1)}), " \
                f"the surplus registers repeat elements of the same thread"
    return Result("equal_up_to_register_order", method, w, 0.0,
                  f"every thread holds the same set of elements, in a different register order "
                  f"(at {_fmt_loc(diff_loc)}: A has {_fmt_el(w['a'])}, B has {_fmt_el(w['b'])}){extra}")


def not_equal_result(pair: Pair, method: str, loc: dict, side: str = "a", thread_set: bool = False) -> Result:
    w = pair.location_witness(loc)
    held = w[side]
    other = "b" if side == "a" else "a"
    if w["a"] is None or w["b"] is None:
        missing = "B" if w["b"] is None else "A"
        why = (f"hardware location {_fmt_loc(loc)} exists only in {'A' if missing == 'B' else 'B'} "
               f"(A {_dims_text(pair.a)}, B {_dims_text(pair.b)})")
    elif thread_set:
        thread = {n: loc[n] for n in pair.thread_names}
        why = (f"at {_fmt_loc(loc)} A holds {_fmt_el(w['a'])} and B holds {_fmt_el(w['b'])}; "
               f"{side.upper()}'s element {_fmt_el(held)} is in no register of thread "
               f"({_fmt_loc(thread)}) in {other.upper()}")
    else:
        why = f"at {_fmt_loc(loc)} A holds {_fmt_el(w['a'])} and B holds {_fmt_el(w['b'])}"
    return Result("not_equal", method, w, 0.0, why)
