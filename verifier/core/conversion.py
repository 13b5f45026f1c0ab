"""What a layout conversion ``A -> B`` of one tensor costs (DESIGN.md §3).

Both layouts are distributed layouts (hardware dims among ``register, lane, warp, block``; an
absent dim has size 1) over the same logical shape. A **destination location** is a hardware
location ``d = (register, lane, warp, block)`` of ``B``; it must receive the element ``B(d)``.
The element is *held* in ``A`` by every location of ``A`` that maps to it. Ranked from cheapest:

``no_op``
    ``A`` and ``B`` are equal (every location holds the same element): nothing to do.
``register_permute``
    for every ``d``, the thread ``(lane, warp, block)`` of ``d`` holds ``B(d)`` in some register
    of ``A``: each thread only renames/copies its own registers.
``intra_warp``
    for every ``d``, some thread of the same warp and block holds ``B(d)`` in ``A``: warp shuffles.
``intra_cta``
    for every ``d``, some thread of the same block holds ``B(d)`` in ``A``: shared memory.
``cross_cta``
    some ``d`` needs an element that only other blocks hold in ``A``: distributed shared memory.
``impossible``
    some ``d`` needs an element that ``A`` does not hold at all (``A`` is partial).

The report names the cheapest mechanism that suffices and, for every cheaper one, a **witness**
that rules it out: a destination location and its element that the cheaper mechanism cannot
deliver (for ``no_op``: a location where ``A`` and ``B`` differ). The level of every destination
(``same_thread``, ``same_warp``, ``same_cta``, ``other_cta``, ``nowhere``: where the *nearest*
holder of its element sits) is computed exactly from both tables, so these are facts, not
heuristics; a compiler may still pick a costlier lowering than the cheapest that suffices.

Numbers:

* ``elements_moved``: destination locations whose element the same thread does not hold in ``A``
  (each replica in ``B`` counts); ``moved_by_level`` splits all destinations by nearest holder.
* ``vector_width``: the largest ``v`` such that in *both* layouts every thread's registers
  ``[k*v, k*v + v)`` hold ``v`` consecutive elements along the last (fastest) logical dim, in
  register order, starting at a multiple of ``v`` along that dim (see :func:`contiguity`).
  Triton's ``getContigPerThread`` counts the leading register bases that step 1, 2, 4, ... along
  the fastest dim; for F2 layouts whose thread offsets are aligned the two agree, but this
  definition also checks alignment and increasing order for every thread.
* ``bank_conflicts`` (when a shared layout is given): storing ``A`` and loading ``B`` through it,
  per :mod:`layoutverify.core.banks`.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from layoutverify.core.banks import bank_conflicts, dense_ids, distributed_columns, element_bytes
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout

MECHANISMS = ("no_op", "register_permute", "intra_warp", "intra_cta", "cross_cta", "impossible")
#: nearest-holder level of a destination -> the cheapest mechanism able to serve it
LEVELS = ("same_thread", "same_warp", "same_cta", "other_cta", "nowhere")
_LEVEL_MECHANISM = ("register_permute", "intra_warp", "intra_cta", "cross_cta", "impossible")


@dataclass
class ConversionReport:
    """The result of :func:`analyze`. ``witnesses[m]`` rules out mechanism ``m`` (every mechanism
    cheaper than ``mechanism``); ``witness`` is the one ruling out the next cheaper mechanism."""

    mechanism: str
    witness: dict | None
    witnesses: dict
    destinations: int
    elements_moved: int
    moved_by_level: dict
    thread_elements_moved: int
    vector_width: int
    contiguity_a: int
    contiguity_b: int
    no_op_method: str
    shape: tuple
    bank_conflicts: dict | None = None
    seconds: float = 0.0
    notes: list = field(default_factory=list)

    def to_json(self) -> dict:
        """The report as JSON: the mechanism with its witnesses, the element and byte counts, vector
        widths and contiguity, and the bank conflicts of the shared layout when one was given."""
        out = {"mechanism": self.mechanism, "witness": self.witness, "witnesses": self.witnesses,
               "shape": list(self.shape), "destinations": self.destinations,
               "elements_moved": self.elements_moved, "moved_by_level": self.moved_by_level,
               "thread_elements_moved": self.thread_elements_moved,
               "vector_width": self.vector_width, "contiguity_a": self.contiguity_a,
               "contiguity_b": self.contiguity_b, "no_op_method": self.no_op_method,
               "seconds": round(self.seconds, 6), "notes": self.notes}
        if self.bank_conflicts is not None:
            out["bank_conflicts"] = {k: v.to_json() for k, v in self.bank_conflicts.items()}
        return out

    def render(self) -> str:
        """The report as text lines: the mechanism, why each cheaper one is ruled out, then the counts."""
        lines = [f"mechanism: {self.mechanism}"]
        for m in reversed(MECHANISMS):  # the next cheaper mechanism first
            w = self.witnesses.get(m)
            if w is not None:
                lines.append(f"  why not {m}: {w['reason']}")
        lines.append(f"destination locations: {self.destinations}; elements moved between threads: "
                     f"{self.elements_moved} ({self.thread_elements_moved} distinct thread/element pairs)")
        lines.append("  nearest holder: " + ", ".join(f"{k} {v}" for k, v in self.moved_by_level.items()))
        lines.append(f"vector width: {self.vector_width} (contiguous elements per thread along the last dim: "
                     f"A {self.contiguity_a}, B {self.contiguity_b})")
        if self.bank_conflicts is not None:
            for k, rep in self.bank_conflicts.items():
                lines.append(f"bank conflicts, {k.replace('_', ' ')}: {rep.summary()}")
        for n in self.notes:
            lines.append(f"note: {n}")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
def contiguity(layout: Layout) -> int:
    """Elements per vector along the fastest (last) logical dim, the same for every thread.

    The largest ``v`` dividing the register count such that for every thread and every ``k``,
    registers ``k*v + i`` (``0 <= i < v``) hold the elements ``x + i * e_last`` where ``x`` has
    its last coordinate a multiple of ``v`` (aligned, increasing, no wrap into the next row).
    Every divisor of a valid ``v`` is valid, so the valid widths are the divisors of the result.
    """
    c = distributed_columns(layout)
    return _contiguity(c, layout.in_size("register"), layout.out_sizes[-1])


def _thread_register_grid(c: dict, nreg: int) -> np.ndarray:
    """``grid[thread, register]`` = flat element, threads numbered densely by (block, warp, lane)."""
    thread = dense_ids(c["block"], c["warp"], c["lane"])
    grid = np.empty((int(thread.max(initial=0)) + 1, nreg), dtype=np.int64)
    grid[thread, c["register"]] = c["element"]
    return grid


def _contiguity(c: dict, nreg: int, last: int) -> int:
    grid = _thread_register_grid(c, nreg)
    best = 1
    for v in range(2, nreg + 1):
        if nreg % v or last % v:
            continue
        g = grid.reshape(grid.shape[0], nreg // v, v)
        base = g[:, :, :1]
        if ((base % last) % v == 0).all() and (g == base + np.arange(v)).all():
            best = v
    return best


def _equal(a: Layout, b: Layout, timeout_ms: int):
    """``(equal?, method, compare witness or None)``: the checker when available, else the table."""
    try:
        from layoutverify.core.compare import compare
    except ImportError:  # pragma: no cover - the checker ships with the project
        compare = None
    if compare is not None:
        res = compare(a, b, timeout_ms=timeout_ms)
        if res.verdict != "unknown":
            return res.verdict == "equal", res.method, (res.witness if res.verdict == "not_equal" else None)
    return _table_equal(a, b), "table", None


def _table_equal(a: Layout, b: Layout) -> bool:
    """Exhaustive check: same hardware sizes (absent dim = size 1) and the same element everywhere."""
    if any(a.in_size(n) != b.in_size(n) for n in ("register", "lane", "warp", "block")):
        return False
    ca, cb = distributed_columns(a), distributed_columns(b)
    ka, kb = _hw_key(ca, a, b), _hw_key(cb, a, b)
    return bool(np.array_equal(ca["element"][np.argsort(ka)], cb["element"][np.argsort(kb)]))


def _loc(c: dict, k: int) -> dict:
    return {d: int(c[d][k]) for d in ("register", "lane", "warp", "block")}


def _coord(shape, flat: int) -> list[int]:
    return [int(x) for x in np.unravel_index(int(flat), shape)]


def analyze(a: Layout, b: Layout, *, shared: Layout | None = None, element_bits: int = 16, arch: str = "nvidia",
            timeout_ms: int = 10_000) -> ConversionReport:
    """Classify the conversion ``a -> b`` (see the module docstring) and measure it."""
    t0 = time.perf_counter()
    if not isinstance(a, Layout) or not isinstance(b, Layout):
        raise LayoutError("analyze needs two Layout objects")
    if a.out_sizes != b.out_sizes:
        raise LayoutError(f"a conversion keeps the tensor: A has shape {list(a.out_sizes)}, B {list(b.out_sizes)}")
    element_bytes(element_bits)
    ca = distributed_columns(a, "A")
    cb = distributed_columns(b, "B")
    lanes = a.in_size("lane")
    if b.in_size("lane") != lanes:
        raise LayoutError(f"A has {lanes} lanes per warp and B {b.in_size('lane')}: warps must match")
    warps = max(a.in_size("warp"), b.in_size("warp"))
    n_el = a.out_size()
    shape = a.out_sizes

    def keys(c):
        warp_id = c["warp"] + warps * c["block"]
        thread = c["lane"] + lanes * warp_id
        e = c["element"]
        return [(thread * n_el + e), (warp_id * n_el + e), (c["block"] * n_el + e), e]

    ka, kb = keys(ca), keys(cb)
    # level[d] = first scope (thread, warp, block, anywhere) whose A-holders include B(d)
    level = np.full(len(cb["element"]), len(LEVELS) - 1, dtype=np.int64)
    for lv in reversed(range(4)):
        level[_member(kb[lv], ka[lv])] = lv
    worst = int(level.max(initial=0))
    counts = np.bincount(level, minlength=len(LEVELS))
    moved_by_level = {LEVELS[i]: int(counts[i]) for i in range(len(LEVELS))}
    elements_moved = int((level >= 1).sum())
    mv = level >= 1
    thread_elements_moved = _count_distinct(kb[0][mv])

    witnesses: dict[str, dict] = {}
    equal = False
    no_op_method = "table"
    if worst == 0:
        equal, no_op_method, cmp_w = _equal(a, b, timeout_ms)
        if not equal:
            witnesses["no_op"] = _no_op_witness(a, b, ca, cb, shape, cmp_w)
    else:
        no_op_method = "implied"  # a destination needs data from another thread: A != B
    for m_level in range(worst):
        # mechanism _LEVEL_MECHANISM[m_level] is ruled out by any destination above that level;
        # pick one at the highest level so one location explains the whole ranking
        k = int(np.argmax(level == worst)) if m_level == worst - 1 else int(np.argmax(level > m_level))
        witnesses[_LEVEL_MECHANISM[m_level]] = _level_witness(_LEVEL_MECHANISM[m_level], k, level, ca, cb, lanes,
                                                              warps, shape)
    if worst > 0 and "no_op" not in witnesses:
        w = dict(witnesses[_LEVEL_MECHANISM[0]])
        w["rules_out"] = "no_op"
        w["reason"] = (f"B location {_fmt_loc(w['location'])} holds {tuple(w['element'])}, which the same "
                       f"thread does not hold in A, so A != B")
        witnesses["no_op"] = w
    mechanism = "no_op" if equal else _LEVEL_MECHANISM[worst]
    cheaper = MECHANISMS[:MECHANISMS.index(mechanism)]
    witness = witnesses[cheaper[-1]] if cheaper else None

    cont_a = _contiguity(ca, a.in_size("register"), shape[-1])
    cont_b = _contiguity(cb, b.in_size("register"), shape[-1])
    vec = _common_width(cont_a, cont_b)
    banks = None
    notes = []
    if shared is not None:
        if shared.out_sizes != shape:
            raise LayoutError(f"the shared layout has shape {list(shared.out_sizes)}, the tensor {list(shape)}")
        banks = {"store_a": bank_conflicts(a, shared, element_bits, arch=arch),
                 "load_b": bank_conflicts(b, shared, element_bits, arch=arch)}
        if mechanism in ("no_op", "register_permute", "intra_warp"):
            notes.append("bank conflicts are for a round trip through the given shared layout, which this "
                         f"conversion ({mechanism}) does not need")
    return ConversionReport(mechanism=mechanism, witness=witness, witnesses=witnesses,
                            destinations=int(len(level)), elements_moved=elements_moved,
                            moved_by_level=moved_by_level, thread_elements_moved=thread_elements_moved,
                            vector_width=vec, contiguity_a=cont_a, contiguity_b=cont_b,
                            no_op_method=no_op_method, shape=tuple(shape), bank_conflicts=banks,
                            seconds=time.perf_counter() - t0, notes=notes)


def _member(query: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """``query[i] in pool`` for every ``i`` (sort and binary search; no hashing)."""
    s = np.sort(pool)
    if s.size == 0:
        return np.zeros(query.shape, dtype=bool)
    idx = np.minimum(np.searchsorted(s, query), s.size - 1)
    return s[idx] == query


def _count_distinct(x: np.ndarray) -> int:
    if x.size == 0:
        return 0
    s = np.sort(x)
    return int(1 + (s[1:] != s[:-1]).sum())


def _common_width(x: int, y: int) -> int:
    """Largest width valid for both layouts. The widths valid for one layout are exactly the
    divisors of its contiguity (closed under divisors, and under lcm since overlapping runs
    chain), so the answer is the gcd."""
    return math.gcd(x, y)


def _fmt_loc(loc: dict) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in loc.items()) + ")"


_SCOPE_TEXT = {
    "register_permute": "the same thread does not hold",
    "intra_warp": "no thread of the same warp holds",
    "intra_cta": "no thread of the same block holds",
    "cross_cta": "no thread of any block holds",
}


def _level_witness(mech: str, k: int, level, ca, cb, lanes, warps, shape) -> dict:
    loc = _loc(cb, k)
    e = int(cb["element"][k])
    coord = _coord(shape, e)
    holders = np.nonzero(ca["element"] == e)[0]
    holder = None
    if holders.size:
        # the nearest holder: same block first, then same warp, then same lane
        same_b = ca["block"][holders] == loc["block"]
        same_w = same_b & (ca["warp"][holders] == loc["warp"])
        score = same_b.astype(int) + same_w.astype(int)
        holder = _loc(ca, int(holders[int(np.argmax(score))]))
    where = f"; A holds it at {_fmt_loc(holder)}" if holder is not None else "; A does not hold it anywhere"
    reason = f"B location {_fmt_loc(loc)} needs element {tuple(coord)}, which {_SCOPE_TEXT[mech]} in A{where}"
    return {"rules_out": mech, "location": loc, "element": coord, "nearest_holder_in_a": holder,
            "level": LEVELS[int(level[k])], "reason": reason}


def _no_op_witness(a, b, ca, cb, shape, cmp_w) -> dict:
    if cmp_w and isinstance(cmp_w, dict) and "hardware" in cmp_w:
        loc = {d: int(cmp_w["hardware"].get(d, 0)) for d in ("register", "lane", "warp", "block")}
        ea, eb = cmp_w.get("a"), cmp_w.get("b")
        ea = None if ea is None else [int(x) for x in ea]
        eb = None if eb is None else [int(x) for x in eb]
    else:
        # the first location (in B's order, then A's) that differs or exists in one layout only
        key_a, key_b = _hw_key(ca, a, b), _hw_key(cb, a, b)
        elem_a = dict(zip(key_a.tolist(), ca["element"].tolist()))
        elem_b = dict(zip(key_b.tolist(), cb["element"].tolist()))
        loc = ea = eb = None
        for src, c, keys in (("b", cb, key_b), ("a", ca, key_a)):
            for j, kk in enumerate(keys.tolist()):
                x, y = elem_a.get(kk), elem_b.get(kk)
                if x != y:
                    loc = _loc(c, j)
                    ea = None if x is None else _coord(shape, x)
                    eb = None if y is None else _coord(shape, y)
                    break
            if loc is not None:
                break
    reason = (f"location {_fmt_loc(loc)} holds {tuple(ea) if ea is not None else 'nothing'} in A and "
              f"{tuple(eb) if eb is not None else 'nothing'} in B")
    return {"rules_out": "no_op", "location": loc, "element_in_a": ea, "element_in_b": eb, "reason": reason}


def _hw_key(c, a, b):
    sizes = [max(a.in_size(n), b.in_size(n)) for n in ("register", "lane", "warp", "block")]
    key = np.zeros(len(c["element"]), dtype=np.int64)
    for n, s in zip(("register", "lane", "warp", "block"), sizes):
        key = key * s + c[n]
    return key
