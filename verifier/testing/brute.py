"""The verdict from its definitions, by enumeration: the independent oracle for tests and benchmarks.

Every hardware location is enumerated (``Layout.apply``, the numpy evaluator: none of the proof
strategies), each thread's elements are collected in Python sets, and the verdict follows the
definitions of :mod:`layoutverify.core.compare` (DESIGN.md §3). Exponential in nothing but slow
in everything: for layouts of up to about 2^16 locations.
"""
from __future__ import annotations

import numpy as np

from layoutverify.core.layout import Layout
from layoutverify.core.result import Pair

REGISTER = "register"


def _points(lay: Layout, names) -> dict[tuple, tuple]:
    """Hardware location (in the pair's dim order ``names``) -> logical element."""
    hw = lay.hardware_indices()
    out = {}
    for row, v in zip(hw.tolist(), lay.apply(hw).tolist()):
        d = dict(zip(lay.in_names, row))
        out[tuple(d.get(n, 0) for n in names)] = tuple(v)
    return out


def brute_verdict(a: Layout, b: Layout) -> str:
    """``equal``, ``equal_up_to_register_order``, ``not_equal`` or ``different_tensors``."""
    if a.out_dims != b.out_dims:
        return "different_tensors"
    p = Pair(a, b)
    pa, pb = _points(a, p.names), _points(b, p.names)
    if set(pa.values()) != set(pb.values()):
        return "different_tensors"
    if p.same_sizes and pa == pb:
        return "equal"
    if not p.has_register or not p.same_threads:
        return "not_equal"
    ri = p.names.index(REGISTER)

    def per_thread(pts):
        out: dict[tuple, set] = {}
        for loc, el in pts.items():
            out.setdefault(loc[:ri] + loc[ri + 1:], set()).add(el)
        return out
    return "equal_up_to_register_order" if per_thread(pa) == per_thread(pb) else "not_equal"


def witness_problem(a: Layout, b: Layout, res) -> str | None:
    """What is wrong with ``res``'s witness for ``a`` vs ``b``, re-evaluated here; None when it holds.

    * ``not_equal`` / ``equal_up_to_register_order``: the location holds ``w["a"]`` in A and
      ``w["b"]`` in B, and they differ; when the reason says an element is in no register of
      the thread, no register of that thread on the other side holds it;
    * ``different_tensors`` with an element: its side holds it at the location, the other side
      nowhere;
    * ``equal``: no witness.
    """
    p = Pair(a, b)
    w = res.witness
    if res.verdict in ("not_equal", "equal_up_to_register_order"):
        loc = w["hardware"]
        if set(w) != {"hardware", "a", "b"} or set(loc) != set(p.names):
            return f"the witness {w} is not {{hardware: one index per dim of the pair, a, b}}"
        if w["a"] != p.evaluate("a", loc) or w["b"] != p.evaluate("b", loc):
            return f"the location {loc} does not hold the witness's elements"
        if w["a"] == w["b"]:
            return f"the location {loc} holds the same element in A and B"
        if "in no register" in (res.reason or ""):
            if "A's element" not in res.reason and "B's element" not in res.reason:
                return f"the reason {res.reason!r} names no side"
            side = "a" if "A's element" in res.reason else "b"
            other = "b" if side == "a" else "a"
            thread = {n: loc[n] for n in p.names if n != REGISTER}
            held = {tuple(p.evaluate(other, {**thread, REGISTER: r})) for r in range(p.sizes(other)[REGISTER])}
            if tuple(p.evaluate(side, loc)) in held:
                return f"the element said to be in no register of the thread is held by {other.upper()}"
        return None
    if res.verdict == "different_tensors" and w and "element" in w:
        side = w["held_by"]
        if side not in ("a", "b") or set(w["hardware"]) != set(p.names):
            return f"the witness {w} names no side (a or b) or not every dim of the pair"
        other = p.layout("b" if side == "a" else "a")
        if p.evaluate(side, w["hardware"]) != w["element"]:
            return f"{side.upper()} does not hold {w['element']} at {w['hardware']}"
        if (other.table() == np.asarray(w["element"])).all(axis=1).any():
            return f"the other side holds {w['element']} too"
        return None
    if res.verdict == "equal" and w is not None:
        return "an equal verdict carries a witness"
    return None
