"""Data terms: what a kernel computes from its inputs, as uninterpreted operations on symbols.

Every element of every input buffer (and every float scalar argument) is a distinct symbol, a
*leaf*. A computed value is a term ``op(type, args)``; terms are interned (hash-consed), so two
values are the same term exactly when they have the same id. The TTIR reference and the PTX
machine build terms through the same constructors, which apply the identities below, so that the
two levels meet on one id wherever an identity relates them.

Ids (``int``, all below ``2**31`` so that a product's pair fits one ``int64``):

* leaf ``i`` of region ``r`` (a buffer or the float arguments): ``(r + 1) << LEAF_BITS | i``;
* every other term: ``COMPUTED + n`` for the ``n``-th interned term.

A **dot** (``tt.dot``, ``mma``, ``wgmma``) is ``init + sum of products``, kept as its initial
accumulator and the *sorted array* of its products, each product the pair ``(a, b)`` packed as
``a << 31 | b`` (numpy ``int64``). Two dots are the same term when their initial accumulators are
and their product multisets are: the hardware's accumulation order is free.

Identities (each one is applied when a term is built; :data:`IDENTITIES` is the list the docs
print):
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from layoutverify.apps.ptxsim import floats

LEAF_BITS = 24
MAX_REGIONS = 63
COMPUTED = 1 << 30
PAIR_SHIFT = 31
NONE = -1                      # "no initial accumulator"

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
    ("dot-order", "a dot is its initial accumulator plus the multiset of its products (a_i, b_i)",
     "assumed: tt.dot fixes no accumulation order; the k-steps of a k-loop chain into one dot"),
    ("dot-zero", "a dot with initial accumulator +0.0 equals the dot without one (wgmma scale-d = 0)",
     "exact up to the sign of a zero sum"),
    ("reduce", "a tt.reduce with combiner add/max/min equals any binary tree of that operation over the "
     "same operands (a multiset; for max/min a set)", "assumed: Triton fixes no reduction order"),
    ("select", "select(c, a, a) = a", "exact"),
]


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
        self.dots: list[tuple[int, np.ndarray]] = []     # dot number -> (init id or NONE, sorted pair codes)

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
        return 0 <= t < COMPUTED

    def leaf_of(self, t: int) -> tuple[int, int]:
        return (t >> LEAF_BITS) - 1, t & ((1 << LEAF_BITS) - 1)

    def const(self, ty: str, bits: int) -> int:
        return self._make("const", ty, (int(bits),))

    def const_value(self, t: int):
        """The raw bits of a constant term, else ``None``."""
        if t >= COMPUTED and self.ops[t - COMPUTED] == "const":
            return self.args[t - COMPUTED][0]
        return None

    def type_of(self, t: int) -> str:
        if t < COMPUTED:
            return self.regions[(t >> LEAF_BITS) - 1].dtype
        return self.types[t - COMPUTED]

    def op_of(self, t: int) -> str:
        return "leaf" if t < COMPUTED else self.ops[t - COMPUTED]

    def args_of(self, t: int) -> tuple:
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
        if op == "neg" and self.op_of(args[0]) == "neg":
            return self.args_of(args[0])[0]
        if op == "select" and args[1] == args[2]:
            return args[1]
        folded = self._fold(op, ty, args)
        if folded is not None:
            return folded
        if op in _COMMUTATIVE:
            args = tuple(sorted(args))
        return self._make(op, ty, tuple(args))

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
        if src in floats.FORMATS and ty in floats.FORMATS:
            x = floats.decode(np.array([bits], dtype=np.uint64), src)
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

    # -- reductions ----------------------------------------------------------------------------------
    def reduce(self, op: str, ty: str, operands) -> int:
        """A reduction (``add``, ``maxnum``, ``minnum``, ``maximum``, ``minimum``) over ``operands``,
        order free (a multiset; a set for the idempotent max/min)."""
        ops = sorted(int(x) for x in operands)
        if op != "add":
            ops = sorted(set(ops))
        if len(ops) == 1:
            return ops[0]
        return self._make("reduce." + op, ty, tuple(ops))

    # -- dots ----------------------------------------------------------------------------------------
    def dot_parts(self, t: int) -> tuple[int, np.ndarray]:
        """``(init, sorted pair codes)`` of ``t`` read as a dot (a non-dot term is its own init)."""
        if t >= COMPUTED and self.ops[t - COMPUTED] == "dot":
            return self.dots[self.args[t - COMPUTED][0]]
        return (NONE if self._is_zero(t) else t), np.empty(0, dtype=np.int64)

    def _is_zero(self, t: int) -> bool:
        return self.const_value(t) == 0

    def dots_accumulate(self, ty: str, c: np.ndarray, a: np.ndarray, b: np.ndarray,
                        use_c: bool | np.ndarray = True) -> np.ndarray:
        """``D[i] = C[i] + sum_k a[i, k] * b[i, k]`` for every ``i``: ``c`` (n,) term ids (the
        running accumulators), ``a``/``b`` (n, K) operand ids. Returns the (n,) dot ids."""
        n, k = a.shape
        new = (a.astype(np.int64) << PAIR_SHIFT) | b.astype(np.int64)
        new.sort(axis=1)
        use = np.broadcast_to(np.asarray(use_c, dtype=bool), (n,))
        out = np.empty(n, dtype=np.int64)
        for i in range(n):
            if use[i]:
                init, old = self.dot_parts(int(c[i]))
                codes = np.concatenate([old, new[i]]) if old.size else new[i]
                if old.size:
                    codes.sort()
            else:
                init, codes = NONE, new[i]
            out[i] = self._dot(ty, init, codes)
        return out

    def _dot(self, ty: str, init: int, codes: np.ndarray) -> int:
        key = ("dot", ty, (init, codes.tobytes()))
        got = self._intern.get(key)
        if got is None:
            got = COMPUTED + len(self.ops)
            self.dots.append((init, np.ascontiguousarray(codes)))
            self.ops.append("dot")
            self.types.append(ty)
            self.args.append((len(self.dots) - 1, init))
            self._intern[key] = got
        return got

    @staticmethod
    def unpack_pairs(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return codes >> PAIR_SHIFT, codes & ((1 << PAIR_SHIFT) - 1)

    # -- reading terms -------------------------------------------------------------------------------
    def size(self, t: int, limit: int = 1 << 20) -> int:
        """Number of nodes of ``t`` as a tree (capped at ``limit``)."""
        seen: dict[int, int] = {}

        def go(x):
            if x in seen:
                return seen[x]
            if x < COMPUTED:
                return 1
            op = self.ops[x - COMPUTED]
            if op == "dot":
                init, codes = self.dots[self.args[x - COMPUTED][0]]
                n = 1 + len(codes) * 3 + (go(init) if init != NONE else 0)
            elif op == "const":
                n = 1
            else:
                n = 1 + sum(go(a) for a in self.args[x - COMPUTED])
            seen[x] = min(n, limit)
            return seen[x]
        return go(t)
