"""z3 bit-vector queries that compare two layouts, and their SMT-LIB2 export.

The layouts' symbolic maps (:mod:`layoutverify.core.expr`) are lowered to unsigned bit-vectors, one
variable per aligned hardware dim (``register``, ``lane``, ...), wide enough that no intermediate
value wraps (the width is the largest interval bound of any subterm, plus a spare bit). A
hardware dim a layout lacks is pinned to 0. The queries, each asked for a counterexample so that
``unsat`` is the proof:

1. ``pointwise``: some location of the common hardware box where the two maps differ.
   ``unsat`` with equal sizes proves ``equal``.
2. ``thread_set A<=B`` / ``B<=A``: some thread and register whose element in one layout is
   held by no register of the same thread in the other (the other's registers are unrolled when
   there are at most :data:`UNROLL_REGISTERS`, else quantified). Both ``unsat`` proves
   ``equal_up_to_register_order``.
3. coverage (asked only when 1 and 2 found a difference): first cheap facts per layout
   (``replication``: the map ignores some hardware digits, confirmed by a query; ``injective``:
   no two locations with those digits zero share an element), which prove a layout onto its
   tensor by counting. Otherwise ``covered A<=B``: a location of one layout holding an element
   outside the other's element set. When the other layout has at most
   :data:`ENUMERATE_LOCATIONS` locations its element set is enumerated with the numpy evaluator
   and handed to z3 as a shared decision tree on the bits of the flat element index (exact, and
   fast for structured sets); past that, the set is described by a quantifier
   (``forall y: B(y) != A(x)``), which z3 may fail to decide in time. ``sat`` proves
   ``different_tensors``.

Every query can be written to an SMT-LIB2 file (:class:`QueryLog`): each inside
``(push 1)``/``(pop 1)`` with a comment naming it and the answer z3 gave here, so any solver can
replay the file and must print the same ``sat``/``unsat`` sequence (:func:`replay`).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig

import numpy as np

from layoutverify.core import expr as E
from layoutverify.core import result as R
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout

#: The hardware dim whose numbering the per-thread set queries ignore.
C_REG = "register"
#: Above this many registers, "some register of the other thread" is a quantifier, not a list.
UNROLL_REGISTERS = 128
#: Coverage against an enumerated element set: the most hardware locations (and elements)
#: evaluated to enumerate it.
ENUMERATE_LOCATIONS = 1 << 20
#: Coverage witnesses are re-checked against the other layout's table up to this size.
RECHECK_TABLE = 1 << 20


# -- widths and terms -------------------------------------------------------------------------
def width_for(pair) -> int:
    """The bit-vector width of a pair's queries: every subterm of either layout (interval
    bounds), every hardware size and the flat element index (formed in coverage queries) fit,
    plus a spare bit."""
    top = max(max(pair.size_a.values()), max(pair.size_b.values()), pair.a.out_size(), 2)
    for lay in (pair.a, pair.b):
        facts = smt_facts(lay)
        bound = facts.get("bound")
        if bound is None:
            bounds = {n: s - 1 for n, s in lay.in_dims}
            bound = facts["bound"] = max([max(E.max_intermediate(e, bounds), E.fold(e, _CONSTANTS))
                                          for e in lay.exprs], default=0)
        top = max(top, bound)
    return top.bit_length() + 1


# The largest constant operand of an expression (divisors, moduli, shift amounts, masks, factors,
# table values), as an :func:`layoutverify.core.expr.fold` rule set: a constant is lowered to a
# bit-vector of the query's width too, and must not wrap (``x // 64`` with ``x < 8`` is 0, but
# ``64`` in 4 bits is 0 and ``UDiv(x, 0)`` is all ones).
_CONSTANTS = {
    E.Var: lambda x: 0,
    E.Const: lambda x: x.value,
    E.Add: lambda x, a, b: max(a, b),
    E.Xor: lambda x, a, b: max(a, b),
    **{t: (lambda x, a: max(a, x.c)) for t in (E.Mul, E.FloorDiv, E.Mod, E.And, E.Shr, E.Shl)},
    E.Lookup: lambda x, i: max(i, int(np.max(x.values)) if len(x.values) else 0),
}


@Layout.derive("smt_facts")
def smt_facts(lay: Layout) -> dict:
    """What the solver has established about one layout (derived data of the layout, filled
    as queries answer): ``bound`` (the largest interval bound of any subterm), ``terms``
    (width -> z3 terms), ``in_range``, ``image`` (:func:`image_size`), ``elements`` (the set of
    flat elements held)."""
    return {}


def variables(names, width: int, suffix: str = ""):
    import z3
    return {n: z3.BitVec(n + suffix, width) for n in names}


def layout_terms(lay, width: int) -> list:
    """z3 terms of ``lay``'s logical coordinates over variables named after its hardware dims
    (cached per layout and width)."""
    per = smt_facts(lay).setdefault("terms", {})
    t = per.get(width)
    if t is None:
        env = variables(lay.in_names, width)
        t = [E.to_z3(e, env, width) for e in lay.exprs]
        per[width] = t
    return t


def rename(terms, names, width: int, suffix: str):
    """The same terms over fresh variables ``name + suffix``."""
    import z3
    subs = [(z3.BitVec(n, width), z3.BitVec(n + suffix, width)) for n in names]
    return [z3.substitute(t, *subs) if subs else t for t in terms]


def domain(env, sizes: dict):
    """``0 <= v < size`` for every dim (``v == 0`` for a size-1 dim)."""
    import z3
    cs = []
    for n, v in env.items():
        s = sizes.get(n, 1)
        cs.append(v == 0 if s == 1 else z3.ULT(v, s))
    return cs


# -- running and logging queries -------------------------------------------------------------
class QueryLog:
    """Collects queries as SMT-LIB2 text, each with the answer z3 gave."""

    def __init__(self):
        self.entries: list[tuple[str, str, str]] = []

    def add(self, label: str, text: str, answer: str):
        """Record one query (its label, SMT-LIB2 text and z3's answer)."""
        self.entries.append((label, text, answer))

    def render(self) -> str:
        """The SMT-LIB2 file: a header with the expected answers, then each query in ``(push
        1)``/``(pop 1)``."""
        out = ["; layoutverify comparison queries (SMT-LIB2). Each query asks for a counterexample:",
               "; unsat proves the property named in its comment. Replay: z3 FILE",
               f"; {len(self.entries)} queries; expected answers, in order: "
               + " ".join(a for _, _, a in self.entries)]
        for i, (label, text, answer) in enumerate(self.entries, 1):
            body = "\n".join(l for l in text.splitlines()
                             if l.strip() and not l.startswith("; benchmark") and not l.startswith("(set-info"))
            out += ["", f"; query {i}: {label}; z3 answered: {answer}", "(push 1)", body, "(pop 1)"]
        return "\n".join(out) + "\n"

    def write(self, path: str):
        """Write :meth:`render` to ``path`` (through :mod:`layoutverify.core.files`)."""
        from layoutverify.core.files import write_text
        write_text(path, self.render(), what="SMT-LIB2 file")


class Query:
    """One satisfiability question; ``answer`` is ``sat``, ``unsat`` or ``unknown``."""

    def __init__(self, label: str, assertions, timeout_ms: int, log: QueryLog | None, quantified=False):
        import z3
        s = z3.Tactic("ufbv").solver() if quantified else z3.SolverFor("QF_BV")
        s.set("timeout", int(timeout_ms))
        s.add(*assertions)
        r = s.check()
        self.answer = str(r)
        self.model = s.model() if r == z3.sat else None
        self.why = s.reason_unknown() if r == z3.unknown else ""
        if log is not None:
            log.add(label, s.to_smt2(), self.answer)

    def value(self, var) -> int:
        """The value the satisfying model gives ``var`` (an int)."""
        return self.model.eval(var, model_completion=True).as_long()


# -- the comparison ---------------------------------------------------------------------------
def z3_compare(pair, *, timeout_ms: int = 10_000, smt2: str | None = None):
    """Decide ``pair`` (a :class:`layoutverify.core.result.Pair`) with z3; see the module docstring."""
    log = QueryLog() if smt2 is not None else None
    try:
        return _z3_compare(pair, timeout_ms, log)
    finally:
        if log is not None:
            log.write(smt2)


def _unknown(pair, what: str, q: Query, witness=None):
    return R.Result("unknown", "z3", witness, 0.0,
                  f"z3 gave up on {what} ({q.why or 'unknown'}); nothing is claimed")


def _z3_compare(pair, timeout_ms, log):
    import z3

    a, b = pair.a, pair.b
    w = width_for(pair)
    X = variables(pair.names, w)
    ta, tb = layout_terms(a, w), layout_terms(b, w)
    for lay, side in ((a, "A"), (b, "B")):
        _check_in_range(lay, side, w, timeout_ms, log)

    def loc_from(q, env):
        return {n: q.value(env[n]) for n in pair.names}

    # 1. pointwise on the common box.
    common = {n: min(pair.size_a[n], pair.size_b[n]) for n in pair.names}
    q1 = Query("pointwise: a location of the common hardware box where A and B differ",
               domain(X, common) + [z3.Or([x != y for x, y in zip(ta, tb)])], timeout_ms, log)
    if q1.answer == "unknown":
        return _unknown(pair, "the pointwise comparison", q1)
    if q1.answer == "unsat" and pair.same_sizes:
        return R.equal_result("z3", "no differing location exists: pointwise query unsat")
    diff_loc = loc_from(q1, X) if q1.answer == "sat" else pair.outside_location()
    dw = pair.location_witness(diff_loc)
    if dw["a"] == dw["b"]:
        return R.Result("unknown", "z3", dw, 0.0, "internal: z3 witness did not re-evaluate as a difference")

    # 2. per-thread element sets.
    thread_res = None
    if not pair.has_register:
        thread_res = ("loc", diff_loc, "a", False)
    elif not pair.same_threads:
        thread_res = ("loc", pair.outside_thread_location(), "a", False)
    else:
        for side in ("a", "b"):
            q = _thread_set_query(pair, side, X, w, timeout_ms, log)
            if q.answer == "unknown":
                return _unknown(pair, f"the per-thread set query ({side.upper()} in the other)", q, dw)
            if q.answer == "sat":
                loc = loc_from(q, X)
                if not _thread_witness_ok(pair, side, loc):
                    return R.Result("unknown", "z3", pair.location_witness(loc), 0.0,
                                    "internal: z3 thread witness did not re-evaluate")
                thread_res = ("loc", loc, side, True)
                break
    if thread_res is None:
        return R.reg_order_result(pair, "z3", diff_loc)

    # 3. coverage.
    cov = _coverage(pair, X, w, ta, tb, timeout_ms, log)
    if cov is not None and cov[0] == "unknown":
        _, what, q = cov
        return R.Result("unknown", "z3", pair.location_witness(thread_res[1]), 0.0,
                        f"A and B differ (see witness), but z3 gave up on {what} ({q.why or 'unknown'}), "
                        f"so it is undecided whether they cover the same elements")
    if cov is not None:
        _, side, element, loc = cov
        return R.coverage_result("z3", side, element, loc)
    _, loc, side, tset = thread_res
    return R.not_equal_result(pair, "z3", loc, side, thread_set=tset)


def _thread_set_query(pair, side, X, w, timeout_ms, log):
    """Some (register, thread) of ``side`` whose element no register of that thread holds in
    the other layout."""
    import z3
    other = "b" if side == "a" else "a"
    lx, ly = pair.layout(side), pair.layout(other)
    tx, ty = layout_terms(lx, w), layout_terms(ly, w)
    n_other = pair.sizes(other)[C_REG]
    reg = z3.BitVec(C_REG, w)
    if C_REG not in ly.in_names:
        alts = [ty]
    elif n_other <= UNROLL_REGISTERS:
        alts = [[z3.substitute(t, (reg, z3.BitVecVal(r, w))) for t in ty] for r in range(n_other)]
    else:
        alts = None
    cs = domain(X, pair.sizes(side))
    if alts is not None:
        cs += [z3.Or([p != q for p, q in zip(tx, alt)]) for alt in alts]
        quant = False
    else:
        r2 = z3.BitVec(C_REG + "_other", w)
        ty2 = [z3.substitute(t, (reg, r2)) for t in ty]
        cs.append(z3.ForAll([r2], z3.Implies(z3.ULT(r2, n_other), z3.Or([p != q for p, q in zip(tx, ty2)]))))
        quant = True
    return Query(f"thread_set {side.upper()}<={other.upper()}: a register of some thread of {side.upper()} "
                 f"holding an element that thread holds in no register of {other.upper()}",
                 cs, timeout_ms, log, quantified=quant)



def _thread_witness_ok(pair, side, loc) -> bool:
    other = "b" if side == "a" else "a"
    el = pair.evaluate(side, loc)
    if el is None:
        return False
    ly = pair.layout(other)
    n = pair.sizes(other).get(C_REG, 1)
    env = {d: np.full(n, loc.get(d, 0), dtype=np.int64) for d in ly.in_names}
    if C_REG in ly.in_names:
        env[C_REG] = np.arange(n, dtype=np.int64)
    held = ly.apply(env)
    return not (held == np.asarray(el)).all(axis=1).any()


def _check_in_range(lay, side, w, timeout_ms, log):
    """Refuse a layout that maps some location outside its own logical shape."""
    import z3
    facts = smt_facts(lay)
    if facts.get("in_range"):
        return
    bounds = {n: s - 1 for n, s in lay.in_dims}
    risky = [d for d, e in enumerate(lay.exprs) if E.upper_bound(e, bounds) >= lay.out_sizes[d]]
    if risky:
        env = variables(lay.in_names, w)
        t = layout_terms(lay, w)
        q = Query(f"in_range {side}: a location of {side} mapped outside its logical shape",
                  domain(env, dict(lay.in_dims)) + [z3.Or([z3.UGE(t[d], lay.out_sizes[d]) for d in risky])],
                  timeout_ms, log)
        if q.answer == "sat":
            loc = {n: q.value(env[n]) for n in lay.in_names}
            raise LayoutError(f"layout {side} maps hardware location {loc} outside its logical shape "
                              f"{list(lay.out_sizes)}")
        if q.answer == "unknown":
            return
    facts["in_range"] = True


def _onto(lay, side, w, timeout_ms, log) -> bool | None:
    """True when ``lay`` is proved onto its logical shape, False when proved not onto, None when
    undecided. See :func:`image_size`."""
    if lay.in_size() < lay.out_size():
        return False
    n = image_size(lay, side, w, timeout_ms, log)
    if n is None:
        return None
    return n == lay.out_size()


def image_size(lay, side, w, timeout_ms, log) -> int | None:
    """The number of distinct elements ``lay`` holds, when provable cheaply, else ``None``.

    Replication is factored out first: :func:`unread_digits` guesses hardware digits the map
    ignores (stride-0 modes, unused bits), one query confirms ``L(x) == L(x with those digits
    zeroed)`` everywhere, and then the map restricted to the locations whose ignored digits are
    zero is checked injective; the size of that restricted domain is the image size. (-1 means
    "proved smaller than the tensor" without a size: an injectivity failure with exactly as many
    locations as elements.)
    """
    import z3
    facts = smt_facts(lay)
    if "image" in facts:
        return facts["image"]
    sizes = dict(lay.in_dims)
    x = variables(lay.in_names, w)
    tx = layout_terms(lay, w)
    digits = unread_digits(lay)
    count = lay.in_size()
    keep: list = []  # constraints "the unread digits are zero"
    if digits:
        mids = {n: (z3.URem(z3.UDiv(x[n], p), q // p) if q < sizes[n] else z3.UDiv(x[n], p), p)
                for n, (p, q) in digits}
        t_proj = [z3.substitute(t, *[(x[n], x[n] - mid * p) for n, (mid, p) in mids.items()]) for t in tx]
        q1 = Query(f"replication {side}: a location of {side} whose element changes when its unread digits "
                   f"are zeroed", domain(x, sizes) + [z3.Or([a != b for a, b in zip(tx, t_proj)])],
                   timeout_ms, log)
        if q1.answer == "unknown":
            return None
        if q1.answer == "unsat":
            for n, (p, q) in digits:
                keep.append(mids[n][0] == 0)
                count = count // sizes[n] * _digit_count(sizes[n], p, q)
    y = variables(lay.in_names, w, "_2")
    ty = rename(tx, lay.in_names, w, "_2")
    keep_y = [z3.substitute(c, *[(x[n], y[n]) for n in lay.in_names]) for c in keep]
    q = Query(f"injective {side}: two distinct locations of {side} (unread digits zero) holding one element",
              domain(x, sizes) + domain(y, sizes) + keep + keep_y
              + [z3.Or([x[n] != y[n] for n in lay.in_names])]
              + [p == q_ for p, q_ in zip(tx, ty)], timeout_ms, log)
    if q.answer == "unsat":
        facts["image"] = count
        return count
    if q.answer == "sat" and count == lay.out_size():
        facts["image"] = -1
        return -1
    return None


def _digit_count(s: int, p: int, q: int) -> int:
    """How many ``x < s`` have digit ``(x // p) % (q // p)`` (or ``x // p`` when ``q >= s``) zero."""
    if q >= s:
        return p
    return s // q * p


def unread_digits(lay) -> list[tuple[str, tuple[int, int]]]:
    """Digits ``[p, q)`` of hardware indices (place values ``p`` up to ``q``; digit value
    ``(x // p) % (q // p)``) that no expression reads, guessed from the expression shapes
    (``(x // p) % m``, ``x % m``, ``x // p``, ``(x >> b) & mask``). A guess only: the caller
    proves it with a query. At most one digit per dim, with ``p | q`` and ``q | size``."""
    reads: dict[str, list[tuple[int, int | None]]] = {n: [] for n in lay.in_names}
    memo: dict = {}
    for e in lay.exprs:
        for name, lo, hi in E.fold(e, _READS, memo):
            reads[name].append((lo, hi))
    out = []
    for n, s in lay.in_dims:
        if s == 1:
            continue
        iv = sorted((lo, s if hi is None else min(hi, s)) for lo, hi in reads[n] if lo < s)
        # find the largest gap [p, q) in place-value space not covered by any read interval
        gaps, cur = [], 1
        for lo, hi in iv:
            if lo > cur:
                gaps.append((cur, lo))
            cur = max(cur, hi)
        if cur < s:
            gaps.append((cur, s))
        best = None
        for p, q in gaps:
            if q % p or s % q or p >= q:
                continue
            if best is None or q // p > best[1] // best[0]:
                best = (p, q)
        if best is not None:
            out.append((n, best))
    return out


# The digit windows an expression reads, as an :func:`layoutverify.core.expr.fold` rule set: a
# node's value is the set of ``(dim, lo, hi)`` read windows (``hi`` None: up to the top). A
# recognised digit pattern over a variable reads its window; any other node reads what its
# children read.
def _bits_read(name: str, shift: int, mask: int) -> frozenset:
    return frozenset((name, 1 << (shift + b), 1 << (shift + b + 1)) for b in range(mask.bit_length()) if (mask >> b) & 1)


def _mod_reads(x, a):
    if isinstance(x.a, E.FloorDiv) and isinstance(x.a.a, E.Var):
        return frozenset({(x.a.a.name, x.a.c, x.a.c * x.c)})
    if isinstance(x.a, E.Var):
        return frozenset({(x.a.name, 1, x.c)})
    return a


def _and_reads(x, a):
    if isinstance(x.a, E.Shr) and isinstance(x.a.a, E.Var):
        return _bits_read(x.a.a.name, x.a.c, x.c)
    if isinstance(x.a, E.Var):
        return _bits_read(x.a.name, 0, x.c)
    return a


_READS = {
    E.Var: lambda x: frozenset({(x.name, 1, None)}),
    E.Const: lambda x: frozenset(),
    E.Add: lambda x, a, b: a | b,
    E.Xor: lambda x, a, b: a | b,
    E.Mul: lambda x, a: a,
    E.FloorDiv: lambda x, a: frozenset({(x.a.name, x.c, None)}) if isinstance(x.a, E.Var) else a,
    E.Mod: _mod_reads,
    E.And: _and_reads,
    E.Shr: lambda x, a: frozenset({(x.a.name, 1 << x.c, None)}) if isinstance(x.a, E.Var) else a,
    E.Shl: lambda x, a: a,
    E.Lookup: lambda x, i: i,
}


def _coverage(pair, X, w, ta, tb, timeout_ms, log):
    """``None`` when both cover the same elements; ``("diff", side, element, loc)`` when one
    holds an element the other does not; ``("unknown", what, query)`` when undecided."""
    import z3
    enumerable = all(l.in_size() <= ENUMERATE_LOCATIONS and l.out_size() <= ENUMERATE_LOCATIONS
                     for l in (pair.a, pair.b))
    sides = ("a", "b")
    if enumerable:
        # both element sets can be enumerated: equal sizes make one inclusion enough
        if _element_set(pair.a).size == _element_set(pair.b).size:
            sides = ("a",)
    else:
        onto_a = _onto(pair.a, "A", w, timeout_ms, log)
        onto_b = _onto(pair.b, "B", w, timeout_ms, log) if onto_a is not False else None
        if onto_a and onto_b:
            return None
        if onto_a is True and onto_b is False:
            sides = ("a",)  # B misses something A (everything) holds
        elif onto_b is True and onto_a is False:
            sides = ("b",)
        else:
            na = image_size(pair.a, "A", w, timeout_ms, log)
            nb = image_size(pair.b, "B", w, timeout_ms, log)
            if na is not None and nb is not None and na == nb and na >= 0:
                sides = ("a",)  # equal sizes: one inclusion settles equality
    for side in sides:
        other = "b" if side == "a" else "a"
        ly = pair.layout(other)
        tx = ta if side == "a" else tb
        q = _membership_query(pair, side, other, X, w, tx, timeout_ms, log)
        if q is None:
            ty = rename(tb if side == "a" else ta, ly.in_names, w, "_y")
            Y = variables(ly.in_names, w, "_y")
            body = z3.Implies(z3.And(domain(Y, dict(ly.in_dims))), z3.Or([p != q_ for p, q_ in zip(ty, tx)]))
            cs = domain(X, pair.sizes(side)) + [z3.ForAll(list(Y.values()), body) if Y else body]
            q = Query(f"covered {side.upper()}<={other.upper()}: an element held by {side.upper()} "
                      f"and by no location of {other.upper()}", cs, timeout_ms, log, quantified=True)
        if q.answer == "unknown":
            return ("unknown", f"the coverage query ({side.upper()} in {other.upper()})", q)
        if q.answer == "sat":
            loc = {n: q.value(X[n]) for n in pair.names}
            element = pair.evaluate(side, loc)
            if element is None or not _not_held(ly, element):
                return ("unknown", "a coverage witness that did not re-evaluate", q)
            return ("diff", side, element, loc)
    return None


def _membership_query(pair, side, other, X, w, tx, timeout_ms, log):
    """Quantifier-free coverage query against the other layout's element set: "some location of
    ``side`` holds an element the other layout does not hold". The set is enumerated with the
    numpy evaluator and given to z3 as a shared decision tree over the bits of the flat element
    index (see :func:`indicator`). ``None`` when the other layout is too large to enumerate."""
    import z3
    ly = pair.layout(other)
    if ly.in_size() > ENUMERATE_LOCATIONS or ly.out_size() > ENUMERATE_LOCATIONS:
        return None
    held = _element_set(ly)
    n_el = ly.out_size()
    member = np.zeros(n_el, dtype=bool)
    member[held] = True
    flat = z3.BitVecVal(0, w)
    for t, s in zip(tx, ly.out_sizes):
        flat = flat * s + t
    return Query(f"covered {side.upper()}<={other.upper()}: a location of {side.upper()} holding an element "
                 f"outside {other.upper()}'s element set ({held.size} of {n_el} elements, enumerated)",
                 domain(X, pair.sizes(side)) + [z3.Not(indicator(flat, member, w))], timeout_ms, log)


def indicator(index, member: np.ndarray, width: int):
    """z3 Boolean ``member[index]`` for a bit-vector ``index``, as a decision tree on the index
    bits (least significant bit at the bottom) in which equal subtrees are shared, so a
    structured set (rows, columns, strided blocks) needs few nodes. Indices past the end read
    as members."""
    import z3
    n = len(member)
    nbits = max(1, (n - 1).bit_length())
    ids = np.ones(1 << nbits, dtype=np.int64)  # leaf ids: 0 = not a member, 1 = member
    ids[:n] = member.astype(np.int64)
    terms = {0: z3.BoolVal(False), 1: z3.BoolVal(True)}
    next_id = 2
    for bit in range(nbits):
        lo, hi = ids[0::2], ids[1::2]
        keys = lo * (1 << 32) + hi
        uniq, inv = np.unique(keys, return_inverse=True)
        sel = z3.Extract(bit, bit, index) == 1 if bit < width else z3.BoolVal(False)
        new_terms, new_ids = {}, np.empty(len(uniq), dtype=np.int64)
        for k, key in enumerate(uniq.tolist()):
            l, h = key >> 32, key & 0xFFFFFFFF
            if l == h:
                new_ids[k] = l
                new_terms[l] = terms[l]
            else:
                new_ids[k] = next_id
                new_terms[next_id] = z3.If(sel, terms[h], terms[l])
                next_id += 1
        terms = new_terms
        ids = new_ids[inv.reshape(-1)]
    return terms[int(ids[0])]


def _element_set(lay) -> np.ndarray:
    facts = smt_facts(lay)
    s = facts.get("elements")
    if s is None:
        s = np.unique(lay.flat_table())
        facts["elements"] = s
    return s


def _not_held(lay, element) -> bool:
    """Re-check a coverage witness against the other layout's table when that is small."""
    if lay.in_size() > RECHECK_TABLE:
        return True
    return not (lay.table() == np.asarray(element)).all(axis=1).any()


# -- replaying exported SMT-LIB2 --------------------------------------------------------------
def z3_binary() -> str | None:
    """The z3 command-line solver: the one the z3-solver wheel installs next to Python, else one
    on PATH, else ``None``."""
    cand = os.path.join(sysconfig.get_path("scripts"), "z3")
    if os.path.isfile(cand) and os.access(cand, os.X_OK):
        return cand
    return shutil.which("z3")


_REPLAY_SCRIPT = """
import sys, z3
text = open(sys.argv[1]).read()
# Split at push/pop so each query is parsed and checked on its own.
for chunk in text.split("(push 1)")[1:]:
    body = chunk.split("(pop 1)")[0]
    s = z3.Solver()
    s.add(z3.parse_smt2_string(body.replace("(check-sat)", "")))
    print(s.check())
"""


def replay(path: str, timeout_s: float = 120.0, *, use_binary: bool = True) -> tuple[list[str], str]:
    """Replay an exported file in a fresh process; returns (answers, how). Uses the z3 binary
    (the z3-solver wheel installs one) when there is one and ``use_binary``, else
    ``z3.parse_smt2_string`` on each query in a subprocess."""
    exe = z3_binary() if use_binary else None
    if exe:
        out = subprocess.run([exe, path], capture_output=True, text=True, timeout=timeout_s)
        how = f"z3 binary {exe}"
    else:
        out = subprocess.run([sys.executable, "-c", _REPLAY_SCRIPT, path], capture_output=True, text=True,
                             timeout=timeout_s)
        how = "z3.parse_smt2_string in a subprocess (no z3 binary found)"
    answers = [l.strip() for l in out.stdout.splitlines() if l.strip() in ("sat", "unsat", "unknown")]
    return answers, how


def expected_answers(path: str) -> list[str]:
    """The answers recorded in an exported file's header."""
    with open(path) as f:
        for line in f:
            if line.startswith("; ") and "expected answers, in order:" in line:
                return line.split(":", 1)[1].split()
    return []
