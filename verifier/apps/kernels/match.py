"""Matching two terms (expected: the reference's, actual: the PTX's) and telling a real difference
from a missing identity.

:class:`Matcher` decides equality (the identities are applied when terms are built, see
:mod:`.terms`). When two terms differ,
:func:`witness` evaluates both on concrete inputs (every leaf a small multiple of 1/8, so sums
of products are exact in f16/f32) with each operation rounded to its type: values that differ
beyond what approximations explain prove the kernel *wrong* (the inputs are the
counterexample); values that agree mean the terms are equal in a way no listed identity shows,
and the kernel is *unsupported*, never wrong.

:func:`render` prints a term in logical coordinates (``a_ptr[3, 17]``) within a length budget.
"""
from __future__ import annotations

import numpy as np

from layoutverify.apps.ptxsim import floats

from . import terms as T

_SETS = {"maxnum", "minnum", "maximum", "minimum"}
TOLERANCE = 1e-3


class Matcher:
    """Term equality. Every identity of :data:`~.terms.IDENTITIES` is applied when a term is
    built, so two terms are equal exactly when their ids are; this class is the one place a
    comparison asks, should an identity ever need matching instead of interning."""

    def __init__(self, terms: T.Terms):
        self.t = terms

    def same(self, e: int, a: int) -> bool:
        """Whether the expected term ``e`` and the actual term ``a`` are equal (their ids are)."""
        return e == a


# -- concrete witnesses -------------------------------------------------------------------------------
def leaf_values(ids: np.ndarray, seed: int) -> np.ndarray:
    """The concrete value of leaves ``ids`` under witness ``seed``: a multiple of 1/8 in [-1, 1]."""
    h = (np.asarray(ids, dtype=np.int64) * 2654435761 + seed * 40503 + 12345) & 0xFFFFFFFF
    h = (h ^ (h >> 13)) * 1274126177 & 0xFFFFFFFF
    return ((h >> 7) % 17 - 8).astype(np.float64) / 8.0


def _round(x, ty):
    if ty in floats.FORMATS:
        with np.errstate(all="ignore"):
            return float(floats.round_f64(np.array([x]), ty)[0])
    return float(x)


class Evaluator:
    """Values of terms under one witness (leaves from :func:`leaf_values`)."""

    def __init__(self, terms: T.Terms, seed: int):
        self.t = terms
        self.seed = seed
        self.memo: dict[int, float] = {}

    def value(self, x: int) -> float:
        """The value of term ``x`` under this witness (as a float), its dependencies evaluated first."""
        got = self.memo.get(x)
        if got is not None:
            return got
        stack = [x]
        while stack:
            y = stack[-1]
            if y in self.memo:
                stack.pop()
                continue
            deps = self._deps(y)
            todo = [d for d in deps if d not in self.memo]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            self.memo[y] = self._eval(y)
        return self.memo[x]

    def _deps(self, y: int):
        t = self.t
        op = t.op_of(y)
        if op == "sum":
            summands, codes = t.sums[t.args_of(y)[0]]
            a, b = T.Terms.unpack_pairs(codes)
            ids = np.unique(np.concatenate([a, b]))
            return [int(i) for i in ids[ids >= T.COMPUTED]] + list(summands)
        if op in ("leaf", "const", "undef"):
            return []
        return list(t.args_of(y))

    def _eval(self, y: int) -> float:
        t = self.t
        op = t.op_of(y)
        ty = t.type_of(y)
        if op == "leaf":
            return float(leaf_values(np.array([y]), self.seed)[0])
        if op == "const":
            bits = t.const_value(y)
            if ty in floats.FORMATS:
                return float(floats.decode(np.array([bits], dtype=np.uint64), ty)[0])
            return float(bits)
        if op == "undef":
            return float("nan")
        if op == "sum":
            summands, codes = t.sums[t.args_of(y)[0]]
            a, b = T.Terms.unpack_pairs(codes)
            s = float(np.dot(self._many(a), self._many(b))) + sum(self.memo[x] for x in summands)
            return _round(s, ty)
        args = [self.memo[a] for a in t.args_of(y)]
        with np.errstate(all="ignore"):
            r = _apply(op, args, ty, [t.type_of(a) for a in t.args_of(y)])
        return r

    def _many(self, ids: np.ndarray) -> np.ndarray:
        out = leaf_values(ids, self.seed)
        comp = ids >= T.COMPUTED
        if comp.any():
            out[comp] = [self.memo[int(i)] for i in ids[comp]]
        return out


def _apply(op: str, args, ty: str, arg_types) -> float:
    import math
    if op.startswith("cmp."):
        _, cmp, _ = op.split(".")
        a, b = args
        either = math.isnan(a) or math.isnan(b)
        fn, on_nan = floats.COMPARE.get(cmp, (None, False))
        if cmp == "num":
            return float(not either)
        if cmp == "nan":
            return float(either)
        return float(on_nan if either else bool(fn(a, b)))
    a = args[0] if args else 0.0
    if op == "add":
        return _round(args[0] + args[1], ty)
    if op == "mul":
        return _round(args[0] * args[1], ty)
    if op == "neg":
        return -a
    if op == "abs":
        return abs(a)
    if op == "div":
        return _round(args[0] / args[1] if args[1] != 0 else math.copysign(math.inf, args[0]) if args[0] else
                      math.nan, ty)
    if op in ("maxnum", "maximum"):
        return max(args)
    if op in ("minnum", "minimum"):
        return min(args)
    if op == "exp2":
        return _round(2.0 ** a if a < 1024 else math.inf, ty)
    if op == "log2":
        return _round(math.log2(a) if a > 0 else (-math.inf if a == 0 else math.nan), ty)
    if op == "sqrt":
        return _round(math.sqrt(a) if a >= 0 else math.nan, ty)
    if op == "rsqrt":
        return _round(1 / math.sqrt(a) if a > 0 else (math.inf if a == 0 else math.nan), ty)
    if op == "rcp":
        return _round(1 / a if a else math.inf, ty)
    if op == "select":
        return args[1] if args[0] else args[2]
    if op.startswith("cvt"):
        return _round(a, ty) if ty in floats.FORMATS else float(int(a)) if not math.isnan(a) else math.nan
    if op in ("sin", "cos", "tanh"):
        return _round(getattr(math, op)(a), ty)
    return math.nan


def witness(terms: T.Terms, e: int, a: int, seeds=(1, 2), evaluators: dict | None = None) -> dict | None:
    """Concrete inputs under which ``e`` and ``a`` take different values (beyond
    :data:`TOLERANCE`, relative), or None. ``evaluators`` (seed -> :class:`Evaluator`) share their
    memo between calls."""
    evaluators = {} if evaluators is None else evaluators
    for seed in seeds:
        ev = evaluators.get(seed) or evaluators.setdefault(seed, Evaluator(terms, seed))
        ve, va = ev.value(e), ev.value(a)
        if _differ(ve, va):
            return {"seed": seed, "expected_value": ve, "actual_value": va}
    return None


def _differ(x: float, y: float) -> bool:
    if np.isnan(x) or np.isnan(y):
        return np.isnan(x) != np.isnan(y)
    if np.isinf(x) or np.isinf(y):
        return x != y
    return abs(x - y) > TOLERANCE * max(1.0, abs(x), abs(y))


# -- rendering -------------------------------------------------------------------------------------------
def leaf_name(terms: T.Terms, x: int) -> str:
    """The source name of leaf ``x``: ``buffer[i]``, or ``buffer[i, j]`` when the buffer has a logical
    shape."""
    r, i = terms.leaf_of(x)
    reg = terms.regions[r]
    if reg.shape and len(reg.shape) > 1 and i < int(np.prod(reg.shape)):
        return f"{reg.name}[{', '.join(map(str, np.unravel_index(i, reg.shape)))}]"
    return f"{reg.name}[{i}]"


def render(terms: T.Terms, x: int, budget: int = 240) -> str:
    """Term ``x`` as an expression, cut to ``budget`` characters (ending ``...`` when cut)."""
    out: list[str] = []
    _render(terms, x, out, [budget])
    s = "".join(out)
    return s if len(s) <= budget else s[:budget - 3] + "..."


def _render(terms, x, out, budget):
    if budget[0] <= 0:
        out.append("...")
        return
    op = terms.op_of(x)
    ty = terms.type_of(x)
    if op == "leaf":
        s = leaf_name(terms, x)
    elif op == "const":
        bits = terms.const_value(x)
        if ty in floats.FORMATS:
            v = float(floats.decode(np.array([bits], dtype=np.uint64), ty)[0])
            s = repr(v) if v == v else "nan"
        else:
            s = str(bits)
        s += f":{ty}"
    elif op == "undef":
        s = f"undef:{ty}"
    else:
        s = None
    if s is not None:
        out.append(s)
        budget[0] -= len(s)
        return
    if op == "sum":
        summands, codes = terms.sums[terms.args_of(x)[0]]
        a, b = T.Terms.unpack_pairs(codes)
        out.append("sum(")
        budget[0] -= 4
        for i, y in enumerate(summands[:3]):
            if i:
                out.append(" + ")
            _render(terms, y, out, budget)
        if len(summands) > 3:
            out.append(f" + ... {len(summands)} summands")
        if len(codes):
            out.append((" + " if summands else "") + f"{len(codes)} products: ")
            for i in range(min(3, len(codes))):
                if i:
                    out.append(" + ")
                _render(terms, int(a[i]), out, budget)
                out.append("*")
                _render(terms, int(b[i]), out, budget)
            if len(codes) > 3:
                out.append(" + ...")
        out.append(")")
        return
    args = terms.args_of(x)
    name = op
    out.append(f"{name}(")
    budget[0] -= len(name) + 2
    shown = args if len(args) <= 6 else args[:4]
    for i, y in enumerate(shown):
        if i:
            out.append(", ")
        _render(terms, y, out, budget)
    if len(args) > len(shown):
        out.append(f", ... {len(args)} operands")
    out.append(")")


def explain_dots(terms: T.Terms, e: int, a: int, limit: int = 3) -> dict | None:
    """For two sums (under the same unary wrappers, e.g. a conversion): the summands and products
    only the expected term has, and only the actual term has."""
    while terms.op_of(e) == terms.op_of(a) and terms.op_of(e) != "sum" and len(terms.args_of(e)) == 1 \
            and terms.op_of(e) not in ("leaf", "const", "undef"):
        e, a = terms.args_of(e)[0], terms.args_of(a)[0]
    if terms.op_of(e) != "sum" or terms.op_of(a) != "sum":
        return None
    se, ce = terms.sums[terms.args_of(e)[0]]
    sa, ca = terms.sums[terms.args_of(a)[0]]
    ue, ne = np.unique(ce, return_counts=True)
    ua, na = np.unique(ca, return_counts=True)
    cnt_e = dict(zip(ue.tolist(), ne.tolist()))
    cnt_a = dict(zip(ua.tolist(), na.tolist()))
    missing = [c for c in ue.tolist() if cnt_a.get(c, 0) < cnt_e[c]]
    extra = [c for c in ua.tolist() if cnt_e.get(c, 0) < cnt_a[c]]

    def show(codes):
        out = []
        for c in codes[:limit]:
            x, y = c >> T.PAIR_SHIFT, c & ((1 << T.PAIR_SHIFT) - 1)
            out.append(f"{render(terms, int(x), 60)}*{render(terms, int(y), 60)}")
        return out
    return {"products_expected": int(len(ce)), "products_actual": int(len(ca)),
            "missing_products": show(missing), "n_missing": len(missing), "extra_products": show(extra),
            "n_extra": len(extra), "summands_expected": len(se), "summands_actual": len(sa),
            "missing_summands": [render(terms, x, 80) for x in sorted(set(se) - set(sa))[:limit]],
            "extra_summands": [render(terms, x, 80) for x in sorted(set(sa) - set(se))[:limit]]}
