"""Compare two layouts and prove the verdict (DESIGN.md §3).

``compare(a, b)`` answers with the strongest verdict that holds:

``equal``
    same logical dims and sizes, same hardware sizes (an absent hardware dim counts as size 1,
    so "no ``block`` dim" equals ``block = 1``), and every hardware location holds the same
    element in both.
``equal_up_to_register_order``
    every thread, i.e. every value of the hardware dims other than ``register``
    (``lane, warp, block`` for register layouts), holds the same *set* of elements in both; only
    the register numbering differs. Sets, not lists: a thread holding ``{x, x, y, y}`` in four
    registers matches one holding ``{x, y}`` in two. Memory layouts have no ``register`` dim, so
    for them this verdict never applies.
``not_equal``
    none of the above, but both cover the same elements; the witness is a hardware location and
    the element each layout puts there (``None`` where the location exists in one layout only).
    When register order is the question, the witness location holds, in the layout named
    first, an element that the same thread does not hold in any register of the other.
``different_tensors``
    logical dims/sizes differ, or the sets of covered elements differ; the witness is an element
    held by one layout and not the other (with a hardware location holding it), or a description
    of the shape mismatch.
``unknown``
    the solver ran out of time or resources; never reported as equal.

Strategies (``method``):

``f2``     both layouts F2-linear: bases compared with GF(2) ranks and spans (:mod:`layoutverify.core.f2`).
``radix``  both layouts digit-linear (mixed-radix shape:stride maps, any sizes): per-digit strides
           on a common refinement of their digit chains (:mod:`layoutverify.core.radix`).
``table``  explicit evaluation of both tables, vectorised (:mod:`layoutverify.core.table`): the
           independent cross-check used by tests, and the fallback before z3.
``z3``     bit-vector queries over the symbolic maps (:mod:`layoutverify.core.smt`), each with a
           time limit; every query can be written out as SMT-LIB2.
``auto``   ``f2`` when both come with declared F2 bases; else ``radix`` when it decides; else
           ``f2`` when both are F2-linear; else ``table`` up to
           :data:`layoutverify.core.table.TABLE_FALLBACK` locations; else ``z3``.

**The one path.** Every entry point (:func:`compare`; :func:`layoutverify.core.batch.prove_many`,
which the corpus check, snapshots, sweeps and the service use) answers through :func:`compare`:

1. ``auto``: the two layouts' *normal forms* (:mod:`layoutverify.core.normalform`, derived data
   of each layout, built once) decide wherever the strategy named in ``method`` would: equal
   keys prove ``equal``; the F2 spans, coalesced digits and images decide the other verdicts. Such
   a verdict's witness is built on first access by that strategy (:meth:`Result.proved`), which
   must reach the same verdict. Two layouts given by the same F2 bases over the same dims are the
   same map (Triton's own equality) without building either normal form.
2. Otherwise: different kinds or logical dims (methods ``kinds``, ``shape``); for ``auto`` the
   same expressions over the same hardware dims (method ``identical``); else the strategy.

Every witness a strategy returns is re-evaluated on both layouts with the numpy evaluator
before it is reported.
"""
from __future__ import annotations

import time

from layoutverify.core import expr as E
from layoutverify.core import normalform as NF
from layoutverify.core import radix as RADIX
from layoutverify.core import smt as SMT
from layoutverify.core import table as TABLE
from layoutverify.core.errors import LayoutError, UnsupportedError
from layoutverify.core.layout import F2Bases, Layout
from layoutverify.core.result import REGISTER, Pair, Result, coverage_result, equal_result, not_equal_result, \
    reg_order_result, shape_mismatch

METHODS = ("auto", "f2", "radix", "z3", "table")
_clock = time.perf_counter
_new = object.__new__


def compare(a: Layout, b: Layout, *, method: str = "auto", timeout_ms: int = 10_000,
            smt2: str | None = None, memo: dict | None = None) -> Result:
    """Compare ``a`` and ``b`` (see the module docstring for verdicts, strategies and the path).

    ``timeout_ms`` limits each solver query; ``smt2`` names a file to receive every z3 query as
    SMT-LIB2 (with the z3 strategy's answers as comments). When another strategy decides and
    ``smt2`` is given, the z3 strategy also runs, to write the file, and must agree. ``memo`` (a
    dict) keeps strategy results by the pair of canonical keys and the method: a later pair of
    the same two maps gets that result (:func:`layoutverify.core.batch.prove_many`).
    """
    if method == "auto" and smt2 is None:  # step 1: the normal forms (the hot path of sweeps)
        try:
            na, nb = a.normal_form, b.normal_form  # (kept by each layout once built)
        except AttributeError:
            na = nb = None
        if na is None:  # not built yet: the same bases over the same dims need none (Triton's equality)
            if not (isinstance(a, Layout) and isinstance(b, Layout)):
                proved = None  # refused below
            elif type(a.map) is F2Bases and a.map == b.map and a.out_dims == b.out_dims:
                proved = _EQUAL_F2
            else:
                na, nb = _normal_form(a), _normal_form(b)
        if na is not None:
            ka = na.key
            if ka is not None and ka is nb.key:  # one interned key: the same map (and kind, dims)
                r = _new(Result)
                r.verdict, r.method = na.equal
                return r
            proved = _decide_other_keys(na, nb) if na.head is nb.head else None  # (heads interned)
        if proved is not None:
            r = _new(Result)
            r.verdict, r.method = proved
            if proved[0] != "equal":  # the strategy builds the counterexample when asked
                r._build = (_strategy_result, a, b, timeout_ms)
            return r
    return _by_strategy(a, b, method, timeout_ms, smt2, memo)


_EQUAL_F2, _decide_other_keys, _normal_form = NF.EQUAL_F2, NF.decide_other_keys, NF.of


def _by_strategy(a: Layout, b: Layout, method: str, timeout_ms: int, smt2: str | None, memo: dict | None) -> Result:
    """Step 2 of the path: the pre-strategy verdicts, then the strategy (from ``memo`` where the
    same two maps were compared before)."""
    if not isinstance(a, Layout) or not isinstance(b, Layout):
        raise LayoutError("compare needs two Layout objects")
    if method not in METHODS:
        raise LayoutError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    key = None
    if memo is not None and smt2 is None:
        ka, kb = _normal_form(a).key, _normal_form(b).key
        if ka is not None and kb is not None:
            key = (ka, kb, method)
            res = memo.get(key)
            if res is not None:
                return res
    t0 = _clock()
    res = _early(a, b, method)
    if res is None:
        res = _decide(Pair(a, b), method, timeout_ms, smt2)
    res.seconds = _clock() - t0
    if key is not None and res.verdict != "unknown":
        memo[key] = res
    return res


def _strategy_result(a: Layout, b: Layout, timeout_ms: int) -> Result:
    """The ``auto`` strategies' full result: the deferred counterexample of a verdict proved on
    normal forms (:meth:`Result.proved`)."""
    return _decide(Pair(a, b), "auto", timeout_ms, None)


def _early(a: Layout, b: Layout, method: str) -> Result | None:
    """Verdicts that need no strategy: different kinds, logical dims or shapes; for ``auto``, the
    same expressions over the same hardware dims (once interval bounds prove them inside the shape).
    A layout given by F2 bases takes that shortcut only against itself: its expressions are not
    written out to be compared, and a pair with one is decided by its bases (a strategy, which
    also writes the SMT-LIB2 file asked for)."""
    res = shape_mismatch(a, b)
    if res is not None or method != "auto":
        return res
    if a is b or (a.in_dims == b.in_dims and type(a.map) is not F2Bases and type(b.map) is not F2Bases
                  and _same_exprs(a, b)):
        if type(a.map) is F2Bases:  # one object made from bases: in range by construction
            return equal_result("identical", "the same layout object")
        bounds = {n: s - 1 for n, s in a.in_dims}
        if all(E.upper_bound(e, bounds) < s for e, s in zip(a.exprs, a.out_sizes)):
            return equal_result("identical", "the same expressions over the same hardware dims")
    return None


def _same_exprs(a: Layout, b: Layout) -> bool:
    try:
        return a.exprs == b.exprs
    except RecursionError:  # very deep trees: let a strategy decide
        return False


def prepare(lay: Layout) -> Layout:
    """Build the layout's normal form now (:mod:`layoutverify.core.normalform`; :func:`compare`
    otherwise builds it on first use) and return the layout."""
    return NF.prepare(lay)


def _decide(pair: Pair, method: str, timeout_ms: int, smt2: str | None) -> Result:
    a, b = pair.a, pair.b
    if method == "auto":
        declared = type(a.map) is F2Bases and type(b.map) is F2Bases
        res = None if declared else RADIX.compare_radix(pair)
        if res is None:
            if NF.f2_data(a) is not None and NF.f2_data(b) is not None:
                res = compare_f2(pair)
            elif max(a.in_size(), b.in_size()) <= TABLE.TABLE_FALLBACK:
                res = TABLE.compare_table(pair)
            else:
                return compare_z3(pair, timeout_ms=timeout_ms, smt2=smt2)
    elif method == "f2":
        res = compare_f2(pair)
    elif method == "radix":
        res = RADIX.compare_radix(pair)
        if res is None:
            raise UnsupportedError("the radix method needs digit-linear layouts whose digits refine to a common "
                                   "chain and do not overlap; use auto, table or z3")
    elif method == "z3":
        return compare_z3(pair, timeout_ms=timeout_ms, smt2=smt2)
    else:
        res = compare_table(pair)
    if smt2 is not None:
        zres = compare_z3(pair, timeout_ms=timeout_ms, smt2=smt2)
        if zres.verdict != "unknown" and zres.verdict != res.verdict:
            raise AssertionError(f"internal: {res.method} says {res.verdict}, z3 says {zres.verdict}")
        res.details["smt2"] = smt2
    return res


# -- F2 ---------------------------------------------------------------------------------------
def compare_f2(pair: Pair) -> Result:
    """Decide by GF(2) linear algebra on the bases (both layouts must be F2-linear)."""
    da, db = NF.f2_data(pair.a), NF.f2_data(pair.b)
    if da is None or db is None:
        which = " and ".join(s for s, d in (("A", da), ("B", db)) if d is None)
        raise UnsupportedError(f"the f2 method needs F2-linear layouts; {which} is not")
    names = pair.names
    A = {n: da.bases.get(n, []) for n in names}
    B = {n: db.bases.get(n, []) for n in names}
    unpack = da.packing.unpack

    # Equality: same sizes and the same basis for every hardware bit (then the images agree too).
    if pair.same_sizes and A == B:
        return equal_result("f2", "identical F2 bases")

    # Coverage: the image of an F2 layout is the span of all its bases. Equal ranks and one
    # inclusion of reduced bases prove equal spans; otherwise find a basis outside the other span.
    ech_a, ech_b = da.span, db.span
    if not (ech_a.rank == ech_b.rank and all(ech_b.contains(v) for v in ech_a.basis())):
        for side, X, other in (("a", A, ech_b), ("b", B, ech_a)):
            for n in names:
                for i, v in enumerate(X[n]):
                    if not other.contains(v):
                        return coverage_result("f2", side, unpack(v), pair.location(**{n: 1 << i}))
    diff_loc = None
    for n in names:
        for i in range(min(len(A[n]), len(B[n]))):
            if A[n][i] != B[n][i]:
                diff_loc = pair.location(**{n: 1 << i})
                break
        if diff_loc:
            break
    if diff_loc is None:
        diff_loc = pair.outside_location()

    # Register order: thread t holds the coset span(register bases) + L(0, t).
    if not pair.has_register:
        return not_equal_result(pair, "f2", diff_loc)
    if not pair.same_threads:
        return not_equal_result(pair, "f2", pair.outside_thread_location())
    ra, rb = A[REGISTER], B[REGISTER]
    ech_ra, ech_rb = da.reg, db.reg
    for side, regs, other in (("a", ra, ech_rb), ("b", rb, ech_ra)):
        for i, v in enumerate(regs):
            if not other.contains(v):
                return not_equal_result(pair, "f2", pair.location(register=1 << i), side, thread_set=True)
    for n in pair.thread_names:
        for j, (va, vb) in enumerate(zip(A[n], B[n])):
            if not ech_ra.contains(va ^ vb):
                return not_equal_result(pair, "f2", pair.location(**{n: 1 << j}), "a", thread_set=True)
    return reg_order_result(pair, "f2", diff_loc)


# -- table ------------------------------------------------------------------------------------
def compare_table(pair: Pair) -> Result:
    """Decide by evaluating both layouts everywhere (:mod:`layoutverify.core.table`)."""
    return TABLE.compare_table(pair)


# -- z3 ---------------------------------------------------------------------------------------
def compare_z3(pair: Pair, *, timeout_ms: int = 10_000, smt2: str | None = None) -> Result:
    """Decide with bit-vector queries (any layouts; see :mod:`layoutverify.core.smt`)."""
    return SMT.z3_compare(pair, timeout_ms=timeout_ms, smt2=smt2)
