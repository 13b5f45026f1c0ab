"""Data terms: what a kernel computes from its inputs, as uninterpreted operations on symbols.

Every element of every input buffer (and every float scalar argument) is a distinct symbol, a
*leaf*. A computed value is a term ``op(type, args)``; terms are interned (hash-consed), so two
values are the same term exactly when they have the same id. The TTIR reference and the PTX
machine build terms through the same constructors, which apply the identities below, so that the
two levels meet on one id wherever an identity relates them.

Ids (``int``, all below ``2**31`` so that a product's pair fits one ``int64``):

* leaf ``i`` of region ``r`` (a buffer or the float arguments): ``(r + 1) << LEAF_BITS | i``;
* every other term: ``COMPUTED + n`` for the ``n``-th interned term.

A **sum** (``add``, a ``tt.reduce`` with ``add``, a dot from ``tt.dot``, ``mma`` or ``wgmma``) is kept
in normal form: the sorted tuple of its summands (``+0.0`` dropped, nested sums flattened) and the
*sorted array* of its products, each product an unordered pair ``(a, b)`` packed as
``min << 31 | max`` (numpy ``int64``; a summand ``mul(a, b)`` is such a product too). Two sums are
the same term when their summand and product multisets are: the hardware's accumulation order is
free, and a k-loop's chain of dots is one sum. ``max``/``min`` (and their reductions) are kept as the
sorted *set* of their operands. One k-step that reads the initial accumulator instead of the running
one leaves products out, so the sums differ.

Every identity is applied when a term is built (:data:`IDENTITIES` is the list the docs print), so
the two levels meet on one id wherever the identities relate them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from layoutverify.apps.ptxsim import floats

LEAF_BITS = 24
MAX_REGIONS = 63
COMPUTED = 1 << 30
PAIR_SHIFT = 31

#: the identities the constructors apply (id, statement, why it holds or why it is assumed)
IDENTITIES = [
    ("commute", "add, mul, max, min (and their NaN-propagating forms) take their operands in any order",
     "exact in IEEE-754"),
    ("sub", "a - b = a + (-b)", "exact in IEEE-754 (subtraction is addition of the negation)"),
    ("neg-neg", "-(-a) = a", "exact"),
    ("fma", "fma(a, b, c) = a * b + c",
     "assumed: Triton contracts mul+add into fma (fp fusion, on by default), so the reference's mul "
     "and add stand for the PTX's fma"),
    ("fold", "an exact operation on constants is its IEEE-754 result (add, sub, mul, fma, neg, abs, "
     "min, max, conversions, div.rn)", "exact (bit-exact evaluation, ptxsim.floats)"),
    ("exp", "exp(x) = exp2(x * 0x3FB8AA3B (log2 e in f32))", "assumed: Triton lowers math.exp so"),
    ("approx", "divf = div.full = div.approx = div.rn; sqrt = sqrt.approx = sqrt.rn; rsqrt = rsqrt.approx; "
     "exp2 = ex2.approx; .ftz variants equal the others",
     "assumed: the approximation's error is not modelled"),
    ("cast", "extf = cvt (widening); truncf = cvt.rn (narrowing); sitofp = cvt.rn.f.s; fp_to_fp = cvt",
     "the same conversion under two names"),
    ("sum", "+ is associative and commutative: a sum (add, tt.reduce add, tt.dot, mma, wgmma) is the "
     "multiset of its summands and of its products a*b (unordered pairs)",
     "assumed: tt.dot and tt.reduce fix no accumulation order; a k-loop's dots chain into one sum; "
     "reassociating an elementwise sum is accepted too"),
    ("sum-zero", "x + 0.0 = x (a dot without accumulator, wgmma scale-d = 0, equals one from +0.0)",
     "exact up to the sign of a zero sum"),
    ("max-set", "max and min (tt.reduce max/min, max.f32) are associative, commutative and idempotent: "
     "compared as the set of their operands; max(x, -inf) = x, min(x, +inf) = x",
     "exact for numbers; NaN operands are not distinguished"),
    ("select", "select(c, a, a) = a", "exact"),
]


#: products held by all sums of one validation (8 bytes each): a 128x128 tile with K = 512
MAX_PRODUCTS = 1 << 26
#: the largest dot one tt.dot / mma step may compute (M x N output elements, M x N x K products)
MAX_TILE = 128 * 128
MAX_DOT = 128 * 128 * 128


class TermLimit(Exception):
    """The kernel's terms outgrow the bounds this validator keeps (:data:`MAX_PRODUCTS`, ...)."""


@dataclass(frozen=True)
class Region:
    """A symbolic memory region: buffer ``name`` of ``dtype`` elements (leaves ``name[i]``)."""
    name: str
    dtype: str
    shape: tuple | None = None      # a logical view for messages (row-major), or None


#: element type -> bytes
TYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "tf32": 4, "e4m3": 1, "e5m2": 1, "i1": 1, "i8": 1,
              "i16": 2, "i32": 4, "i64": 8, "u8": 1}
_COMMUTATIVE = {"add", "mul", "maxnum", "minnum", "maximum", "minimum"}
_SETS = {"maxnum", "minnum", "maximum", "minimum"}
_EMPTY = np.empty(0, dtype=np.int64)
_ONE_BITS = {"f16": 0x3C00, "bf16": 0x3F80, "f32": 0x3F800000, "f64": 0x3FF0000000000000}
_FOLDABLE = {"add": "add", "mul": "mul", "neg": "neg", "abs": "abs", "maxnum": "max", "minnum": "min",
             "div.rn": "div"}
LOG2E_F32 = 0x3FB8AA3B


class Terms:
    """The interned terms of one validation (both levels build into the same table)."""

    def __init__(self):
        self.regions: list[Region] = []
        self.ops: list[str] = []
        self.types: list[str] = []
        self.args: list[tuple] = []
        self._intern: dict[tuple, int] = {}
        self.sums: list[tuple[tuple, np.ndarray]] = []   # sum number -> (summands, sorted product codes)
        self.products = 0
        self._undef_memo: dict[int, bool] = {}

    # -- leaves and constants -----------------------------------------------------------------------
    def region(self, name: str, dtype: str, shape=None) -> int:
        """Register a symbolic region; returns its number."""
        if len(self.regions) >= MAX_REGIONS:
            raise ValueError(f"more than {MAX_REGIONS} symbolic buffers")
        self.regions.append(Region(name, dtype, tuple(shape) if shape else None))
        return len(self.regions) - 1

    def leaf(self, region: int, index):
        """Leaf ids of elements ``index`` (an int or an array) of ``region``."""
        idx = np.asarray(index, dtype=np.int64)
        if (idx < 0).any() or (idx >= 1 << LEAF_BITS).any():
            raise ValueError(f"element index outside the modelled window of {self.regions[region].name} "
                             f"(0 .. {(1 << LEAF_BITS) - 1})")
        ids = ((region + 1) << LEAF_BITS) | idx
        return int(ids) if ids.ndim == 0 else ids

    @staticmethod
    def is_leaf(t: int) -> bool:
        """Whether ``t`` is a leaf id (below :data:`COMPUTED`)."""
        return 0 <= t < COMPUTED

    def leaf_of(self, t: int) -> tuple[int, int]:
        """``(region, element index)`` of leaf ``t``."""
        return (t >> LEAF_BITS) - 1, t & ((1 << LEAF_BITS) - 1)

    def const(self, ty: str, bits: int) -> int:
        """The constant term of type ``ty`` with raw bits ``bits``."""
        return self._make("const", ty, (int(bits),))

    def const_value(self, t: int):
        """The raw bits of a constant term, else ``None``."""
        if t >= COMPUTED and self.ops[t - COMPUTED] == "const":
            return self.args[t - COMPUTED][0]
        return None

    def type_of(self, t: int) -> str:
        """The element type of term ``t`` (a leaf's is its region's)."""
        if t < COMPUTED:
            return self.regions[(t >> LEAF_BITS) - 1].dtype
        return self.types[t - COMPUTED]

    def op_of(self, t: int) -> str:
        """The operation of term ``t``: ``leaf`` for a leaf."""
        return "leaf" if t < COMPUTED else self.ops[t - COMPUTED]

    def args_of(self, t: int) -> tuple:
        """The arguments of term ``t`` (``()`` for a leaf)."""
        return () if t < COMPUTED else self.args[t - COMPUTED]

    def _make(self, op: str, ty: str, args: tuple) -> int:
        key = (op, ty, args)
        got = self._intern.get(key)
        if got is None:
            got = COMPUTED + len(self.ops)
            self.ops.append(op)
            self.types.append(ty)
            self.args.append(args)
            self._intern[key] = got
        return got

    # -- operations ----------------------------------------------------------------------------------
    def apply(self, op: str, ty: str, *args: int) -> int:
        """``op`` of type ``ty`` on term ids ``args``, with the identities applied."""
        if op == "sub":
            return self.apply("add", ty, args[0], self.apply("neg", ty, args[1]))
        if op == "fma":
            return self.apply("add", ty, self.apply("mul", ty, args[0], args[1]), args[2])
        if op == "exp":
            return self.apply("exp2", ty, self.apply("mul", ty, args[0], self.const("f32", LOG2E_F32)))
        if op == "rcp":
            return self.apply("div", ty, self.const(ty, _ONE_BITS.get(ty, 0)), args[0])
        if op == "neg" and self.op_of(args[0]) == "neg":
            return self.args_of(args[0])[0]
        if op == "select" and args[1] == args[2]:
            return args[1]
        folded = self._fold(op, ty, args)
        if folded is not None:
            return folded
        if op == "add":
            return self.make_sum(ty, [self.sum_parts(a, ty) for a in args])
        if op in _SETS:
            return self.make_set(op, ty, args)
        if op in _COMMUTATIVE:
            args = tuple(sorted(args))
        if op.startswith("cmp."):
            op, args = self._cmp_canonical(op, args)
        return self._make(op, ty, tuple(args))

    @staticmethod
    def _cmp_canonical(op: str, args):
        """``a > b`` is ``b < a`` (and likewise ``>=``, and the unordered forms)."""
        _, cmp, ty = op.split(".")
        swap = {"gt": "lt", "ge": "le", "gtu": "ltu", "geu": "leu"}
        if cmp in swap:
            return f"cmp.{swap[cmp]}.{ty}", (args[1], args[0])
        return op, args

    def _fold(self, op: str, ty: str, args) -> int | None:
        if op == "select":
            c = self.const_value(args[0])
            return None if c is None else (args[1] if c else args[2])
        name = _FOLDABLE.get(op)
        if name is None and not op.startswith("cvt"):
            return None
        vals = [self.const_value(a) for a in args]
        if any(v is None for v in vals):
            return None
        if op.startswith("cvt"):
            return self._fold_cvt(op, ty, args[0], vals[0])
        if ty not in floats.FORMATS:
            return None
        r = floats.evaluate(name, ty, ("rn",) if name == "div" else (), [np.array([v], dtype=np.uint64)
                                                                         for v in vals])
        return None if r is None else self.const(ty, int(r[0]))

    def _fold_cvt(self, op: str, ty: str, arg: int, bits: int) -> int | None:
        src = self.type_of(arg)
        if op not in ("cvt", "cvt.u"):
            return None
        if src in floats.FORMATS and ty in floats.FORMATS:
            x = floats.decode(np.array([bits], dtype=np.uint64), src)
            if np.isnan(x).any():
                return None
            return self.const(ty, int(floats.encode(floats.round_f64(x, ty), ty)[0]))
        if src.startswith("i") and ty in floats.FORMATS:
            w = TYPE_BYTES[src] * 8
            v = bits & ((1 << w) - 1)
            if op != "cvt.u" and v >= 1 << (w - 1):
                v -= 1 << w
            if abs(v) >= 1 << 53:
                return None
            return self.const(ty, int(floats.encode(floats.round_f64(np.array([float(v)]), ty), ty)[0]))
        return None

    def apply_many(self, op: str, ty: str, *arrays) -> np.ndarray:
        """:meth:`apply` elementwise over equally shaped id arrays."""
        shape = np.broadcast(*arrays).shape
        flat = [np.broadcast_to(a, shape).reshape(-1) for a in arrays]
        out = np.fromiter((self.apply(op, ty, *(int(x) for x in xs)) for xs in zip(*flat)), dtype=np.int64,
                          count=int(np.prod(shape, dtype=np.int64)))
        return out.reshape(shape)

    # -- sums, products, sets -----------------------------------------------------------------------
    def sum_parts(self, t: int, ty: str) -> tuple[tuple, np.ndarray]:
        """``(summands, product codes)`` of ``t`` read as a sum of type ``ty``."""
        if t >= COMPUTED:
            op = self.ops[t - COMPUTED]
            if op == "sum" and self.types[t - COMPUTED] == ty:
                return self.sums[self.args[t - COMPUTED][0]]
            if op == "mul" and self.types[t - COMPUTED] == ty:
                a, b = self.args[t - COMPUTED]
                return (), np.array([(min(a, b) << PAIR_SHIFT) | max(a, b)], dtype=np.int64)
            if op == "const" and self._is_pos_zero(t):
                return (), _EMPTY
        return (t,), _EMPTY

    def _is_pos_zero(self, t: int) -> bool:
        return self.const_value(t) == 0 and self.type_of(t) in floats.FORMATS

    def make_sum(self, ty: str, parts) -> int:
        """The sum of the given ``(summands, codes)`` parts, in normal form."""
        summands = tuple(sorted(x for s, _ in parts for x in s))
        codes_list = [c for _, c in parts if c.size]
        if not codes_list:
            codes = _EMPTY
        elif len(codes_list) == 1:
            codes = codes_list[0]
        else:
            codes = np.sort(np.concatenate(codes_list))
        if not codes.size:
            if not summands:
                return self.const(ty, 0)
            if len(summands) == 1:
                return summands[0]
        key = ("sum", ty, summands, codes.tobytes())
        got = self._intern.get(key)
        if got is None:
            self.products += codes.size
            if self.products > MAX_PRODUCTS:
                raise TermLimit(f"the kernel's sums hold more than {MAX_PRODUCTS} products (a K too large to "
                                f"validate one CTA in bounded memory); validate with a smaller K")
            got = COMPUTED + len(self.ops)
            self.sums.append((summands, codes))
            self.ops.append("sum")
            self.types.append(ty)
            self.args.append((len(self.sums) - 1,))
            self._intern[key] = got
        return got

    def make_set(self, op: str, ty: str, operands) -> int:
        """``max``/``min`` over ``operands`` as the set of its operands (nested ones flattened; the
        operation's identity element dropped)."""
        members = set()
        for a in operands:
            a = int(a)
            if a >= COMPUTED and self.ops[a - COMPUTED] == op and self.types[a - COMPUTED] == ty:
                members.update(self.args[a - COMPUTED])
            elif not self._is_identity_of(op, a):
                members.add(a)
        if not members:
            return int(operands[0])
        if len(members) == 1:
            return next(iter(members))
        return self._make(op, ty, tuple(sorted(members)))

    def _is_identity_of(self, op: str, t: int) -> bool:
        v = self.const_value(t)
        ty = self.type_of(t)
        if v is None or ty not in floats.FORMATS:
            return False
        x = float(floats.decode(np.array([v], dtype=np.uint64), ty)[0])
        return x == (float("-inf") if op in ("maxnum", "maximum") else float("inf"))

    def reduce(self, op: str, ty: str, operands) -> int:
        """A reduction (``add``, ``maxnum``, ``minnum``, ``maximum``, ``minimum``) over
        ``operands``: the same term as any tree of the binary operation over them."""
        ops = [int(x) for x in operands]
        if op == "add":
            return self.make_sum(ty, [self.sum_parts(a, ty) for a in ops])
        return self.make_set(op, ty, ops)

    def dots_accumulate(self, ty: str, c: np.ndarray, a: np.ndarray, b: np.ndarray,
                        use_c: bool | np.ndarray = True) -> np.ndarray:
        """``D[i] = C[i] + sum_k a[i, k] * b[i, k]`` for every ``i``: ``c`` (n,) term ids (the
        running accumulators), ``a``/``b`` (n, K) operand ids. Returns the (n,) sum ids."""
        n, k = a.shape
        a = a.astype(np.int64)
        b = b.astype(np.int64)
        new = (np.minimum(a, b) << PAIR_SHIFT) | np.maximum(a, b)
        new.sort(axis=1)
        use = np.broadcast_to(np.asarray(use_c, dtype=bool), (n,))
        out = np.empty(n, dtype=np.int64)
        for i in range(n):
            parts = [((), new[i])]
            if use[i]:
                parts.append(self.sum_parts(int(c[i]), ty))
            out[i] = self.make_sum(ty, parts)
        return out

    @staticmethod
    def unpack_pairs(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Product codes ``(a << PAIR_SHIFT) | b`` -> the factor arrays ``(a, b)``."""
        return codes >> PAIR_SHIFT, codes & ((1 << PAIR_SHIFT) - 1)

    # -- reading terms -------------------------------------------------------------------------------
    def has_undef(self, t: int) -> bool:
        """Whether ``t`` depends on an undefined value (a masked load without ``other``)."""
        memo = self._undef_memo
        stack = [t]
        while stack:
            x = stack[-1]
            if x < COMPUTED or x in memo:
                stack.pop()
                continue
            op = self.ops[x - COMPUTED]
            if op == "undef":
                memo[x] = True
                stack.pop()
                continue
            if op == "sum":
                summands, codes = self.sums[self.args[x - COMPUTED][0]]
                a, b = self.unpack_pairs(codes)
                deps = list(summands) + [int(i) for i in np.unique(np.concatenate([a, b])) if i >= COMPUTED]
            elif op == "const":
                deps = []
            else:
                deps = list(self.args[x - COMPUTED])
            todo = [d for d in deps if d >= COMPUTED and d not in memo]
            if todo:
                stack.extend(todo)
                continue
            memo[x] = any(memo.get(d, False) for d in deps)
            stack.pop()
        return t >= COMPUTED and memo[t]

    def size(self, t: int, limit: int = 1 << 20) -> int:
        """Number of nodes of ``t`` as a tree (capped at ``limit``)."""
        seen: dict[int, int] = {}

        def go(x):
            if x in seen:
                return seen[x]
            if x < COMPUTED:
                return 1
            op = self.ops[x - COMPUTED]
            if op == "sum":
                summands, codes = self.sums[self.args[x - COMPUTED][0]]
                n = 1 + len(codes) * 3 + sum(go(y) for y in summands)
            elif op == "const":
                n = 1
            else:
                n = 1 + sum(go(a) for a in self.args[x - COMPUTED])
            seen[x] = min(n, limit)
            return seen[x]
        return go(t)
