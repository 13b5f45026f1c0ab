"""Seeded cases for CuTe's dynamic integers, negative strides and swizzles, as (id, our text, C++ expr).

Each layout is drawn as a Python structure, then written twice: as CuTe C++ prints it (our text:
``_N`` static, ``N`` dynamic, ``_-1`` static negative) and as a C++ expression (``Int<N>{}`` static,
``N`` an ``int`` for dynamic). Compiled CuTe decides what each case prints and computes.
"""
from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    id: str
    op: str
    text: str       # our CuTe text (CuTe C++'s print conventions)
    cpp: str        # the C++ expression


@dataclass(frozen=True)
class Int:
    value: int
    static: bool

    def text(self) -> str:
        return f"_{self.value}" if self.static else str(self.value)

    def cpp(self) -> str:
        return f"I({self.value})" if self.static else f"int({self.value})"


def _tuple_text(t) -> str:
    return t.text() if isinstance(t, Int) else "(" + ",".join(_tuple_text(e) for e in t) + ")"


def _tuple_cpp(t) -> str:
    return t.cpp() if isinstance(t, Int) else "S(" + ",".join(_tuple_cpp(e) for e in t) + ")"


def layout_text(shape, stride) -> str:
    return f"{_tuple_text(shape)}:{_tuple_text(stride)}"


def layout_cpp(shape, stride) -> str:
    return f"L({_tuple_cpp(shape)},{_tuple_cpp(stride)})"


class Gen:
    def __init__(self, seed: int, p_dynamic: float = 0.4, p_negative: float = 0.0):
        self.rng = random.Random(seed)
        self.p_dyn, self.p_neg = p_dynamic, p_negative

    def int_(self, value: int, *, allow_dynamic=True) -> Int:
        return Int(value, not (allow_dynamic and self.rng.random() < self.p_dyn))

    def flat_modes(self, n: int):
        sizes = [self.rng.choice([1, 2, 2, 3, 4, 4, 8]) for _ in range(n)]
        return sizes

    def layout(self, *, compact: bool = False, max_rank: int = 3, nested: bool = True):
        """(shape, stride): compact-permuted strides (often injective) or random ones."""
        r = self.rng.randint(1, max_rank)
        sizes = self.flat_modes(r)
        if compact or self.rng.random() < 0.6:
            order = list(range(r))
            self.rng.shuffle(order)
            strides, cur = [0] * r, 1
            for i in order:
                strides[i] = cur
                cur *= sizes[i]
        else:
            strides = [self.rng.choice([0, 1, 2, 3, 4, 8, 16]) for _ in range(r)]
        strides = [-d if d and self.rng.random() < self.p_neg else d for d in strides]
        shape = [self.int_(s) for s in sizes]
        stride = [self.int_(d) for d in strides]
        if r == 1 and self.rng.random() < 0.5:
            return shape[0], stride[0]
        if nested and r >= 2 and self.rng.random() < 0.3:      # group the first two modes
            return (tuple(shape[:2]),) + tuple(shape[2:]), (tuple(stride[:2]),) + tuple(stride[2:])
        return tuple(shape), tuple(stride)

    def shape(self, max_rank: int = 3):
        r = self.rng.randint(1, max_rank)
        sh = [self.int_(s) for s in self.flat_modes(r)]
        return sh[0] if r == 1 and self.rng.random() < 0.5 else tuple(sh)


def swizzle_masks(rng: random.Random) -> tuple[int, int, tuple[int, int, int]]:
    """A valid ``make_swizzle<Y, Z>`` pair and its (B, M, S)."""
    b = rng.randint(1, 3)
    m = rng.randint(0, 3)
    s = rng.choice([v for v in range(-3, 4) if abs(v) >= b])
    msk = (1 << b) - 1
    y = msk << (m + max(0, s))
    z = msk << (m - min(0, s))
    return y, z, (b, m, s)


def dynamic_cases(seed: int = 20261125) -> list[Case]:
    out: list[Case] = []

    def add(op, text, cpp):
        out.append(Case(f"{op}{len(out)}", op, text, cpp))

    g = Gen(seed, p_dynamic=0.4, p_negative=0.0)
    gn = Gen(seed + 1, p_dynamic=0.3, p_negative=0.4)
    # 1. layouts as written: print and function
    for gen, k in ((g, 80), (gn, 80)):
        for _ in range(k):
            sh, st = gen.layout()
            add("layout", layout_text(sh, st), layout_cpp(sh, st))
    # 2. coalesce
    for gen, k in ((g, 90), (gn, 60)):
        for _ in range(k):
            sh, st = gen.layout()
            add("coalesce", f"coalesce({layout_text(sh, st)})", f"coalesce({layout_cpp(sh, st)})")
    # 3. right_inverse (compact-permuted strides: often a bijection; some dynamic strides)
    for gen, k in ((g, 90), (gn, 40)):
        for _ in range(k):
            sh, st = gen.layout(compact=True)
            add("right_inverse", f"right_inverse({layout_text(sh, st)})", f"right_inverse({layout_cpp(sh, st)})")
    # 4. left_inverse with static strides and dynamic shapes (C++ requires static strides)
    gs = Gen(seed + 2, p_dynamic=0.0)
    for _ in range(40):
        sh, st = gs.layout(compact=True)
        dyn_sh = _redraw_dynamic(sh, gs.rng)
        add("left_inverse", f"left_inverse({layout_text(dyn_sh, st)})", f"left_inverse({layout_cpp(dyn_sh, st)})")
    # 5. compact layouts of mixed shapes
    for _ in range(50):
        sh = g.shape()
        which = g.rng.choice(["make_layout", "compact_col_major", "compact_row_major"])
        cpp = {"make_layout": f"make_layout({_tuple_cpp(sh)})",
               "compact_col_major": f"make_layout({_tuple_cpp(sh)}, compact_col_major({_tuple_cpp(sh)}))",
               "compact_row_major": f"make_layout({_tuple_cpp(sh)}, compact_row_major({_tuple_cpp(sh)}))"}[which]
        add(which, f"{which}({_tuple_text(sh)})", cpp)
    # 6. make_swizzle<Y, Z>() composed with a static layout
    rng = random.Random(seed + 3)
    gst = Gen(seed + 4, p_dynamic=0.0)
    for _ in range(40):
        y, z, _bms = swizzle_masks(rng)
        sh, st = gst.layout(compact=True)
        add("make_swizzle", f"make_swizzle<{y},{z}>() o _0 o {layout_text(sh, st)}",
            f"composition(make_swizzle<{y},{z}>(), {layout_cpp(sh, st)})")
    # 8. composition(A, B) with static and dynamic integers (and negative strides in A): B's strides
    #    are drawn from A's size so that the divisibility conditions can hold; draws CuTe rejects
    #    statically (its divisibility static_asserts) are skipped, as we reject them too
    gc = Gen(seed + 7, p_dynamic=0.35, p_negative=0.2)
    tries = 0
    while sum(c.op == "composition" for c in out) < 90 and tries < 2000:
        tries += 1
        ash, ast = gc.layout(compact=True)
        size = 1
        for v in _leaves(ash):
            size *= v.value
        bsh, bst = _sub_layout(gc, size)
        text = f"composition({layout_text(ash, ast)}, {layout_text(bsh, bst)})"
        if not _we_accept(text):
            continue
        add("composition", text, f"composition({layout_cpp(ash, ast)}, {layout_cpp(bsh, bst)})")
    # 7. right/left inverse of swizzled layouts: CuTe composes inverse(L) with the swizzle and
    #    rebuilds the swizzle from the masks' images; where those are not one swizzle's fields,
    #    CuTe's make_swizzle static_asserts (the program would not compile), so such draws are
    #    skipped here and checked to be refused by us in tests/test_cute_dynamic_cpp.py
    rng7 = random.Random(seed + 5)
    g7 = Gen(seed + 6, p_dynamic=0.0)
    added = 0
    while added < 100:
        y, z, (b, m, sh_) = swizzle_masks(rng7)
        shp, st = g7.layout(compact=True, max_rank=4)
        inv = rng7.choice(["right_inverse", "left_inverse"])
        text = f"{inv}(Sw<{b},{m},{sh_}> o _0 o {layout_text(shp, st)})"
        cpp = f"{inv}(composition(Swizzle<{b},{m},{sh_}>{{}}, {layout_cpp(shp, st)}))"
        if not cpp_accepts_swizzle_inverse(text):
            REFUSED.append(text)
            continue
        add(f"{inv}_swizzled", text, cpp)
        added += 1
    # 9. complement, the divides and the products with static and dynamic integers; draws CuTe
    #    rejects at compile time (its static_asserts: dynamic-stride complement of rank > 1, a
    #    statically non-injective layout, the divisibility conditions) are skipped, as we refuse them
    _algebra_cases(seed + 8, add)
    # 10. blocked_product / raked_product (rank-sensitive products)
    gb = Gen(seed + 9, p_dynamic=0.4)
    added = 0
    while added < 40:
        fn = gb.rng.choice(["blocked_product", "raked_product"])
        sh, st = gb.layout(compact=True, max_rank=2)
        if gb.rng.random() < 0.6:
            tsh, tst = gb.layout(compact=True, max_rank=2)
            tt, tc = layout_text(tsh, tst), layout_cpp(tsh, tst)
        else:
            tt, tc = _int_tuple_tiler(gb, sh)
            tt, tc = tt, "make_layout(" + tc.replace("T(", "S(", 1) + ")"
            tt = f"make_layout({tt})"
        text = f"{fn}({layout_text(sh, st)}, {tt})"
        if not _we_accept(text):
            continue
        add(fn, text, f"{fn}({layout_cpp(sh, st)}, {tc})")
        added += 1
    # 11. complement with a shape (mixed static/dynamic) as cotarget, as logical_divide passes it
    gt = Gen(seed + 10, p_dynamic=0.5)
    added = 0
    while added < 30:
        sh, st = gt.layout(compact=True, max_rank=2)
        cot = tuple(gt.int_(gt.rng.choice([2, 4, 8, 16])) for _ in range(gt.rng.randint(2, 3)))
        text = f"complement({layout_text(sh, st)}, {_tuple_text(cot)})"
        if not _we_accept(text):
            continue
        add("complement", text, f"complement({layout_cpp(sh, st)}, {_tuple_cpp(cot)})")
        added += 1
    # 12. filter, upcast<N>, downcast<N> and tile_to_shape with dynamic integers
    _recast_cases(Gen(seed + 11, p_dynamic=0.5, p_negative=0.2), add)
    return out


def _recast_cases(g: Gen, add) -> None:
    want = {"filter": 40, "upcast": 40, "downcast": 40, "tile_to_shape": 40}
    counts = dict.fromkeys(want, 0)
    tries = 0
    while any(counts[k] < want[k] for k in want) and tries < 20000:
        tries += 1
        op = g.rng.choice([k for k in want if counts[k] < want[k]])
        sh, st = g.layout(compact=op == "tile_to_shape" or g.rng.random() < 0.5)
        lt, lc = layout_text(sh, st), layout_cpp(sh, st)
        if op == "filter":
            text, cpp = f"filter({lt})", f"filter({lc})"
        elif op in ("upcast", "downcast"):
            n = g.rng.choice([2, 4])
            text, cpp = f"{op}<{n}>({lt})", f"{op}<{n}>({lc})"
        else:
            if any(v.value < 0 for v in _leaves(st)):
                continue
            modes = sh if isinstance(sh, tuple) else (sh,)
            target = []
            for m in modes:
                size = 1
                for v in _leaves(m):
                    size *= v.value
                target.append(g.int_(size * g.rng.choice([1, 2, 3])))
            for _ in range(g.rng.randint(0, 1)):
                target.append(g.int_(g.rng.choice([2, 4])))
            if not all(t.static for t in target) and g.rng.random() < 0.3:
                i = g.rng.randrange(len(target))        # a dynamic target C++ does not check: ceil_div
                if not target[i].static:
                    target[i] = Int(target[i].value + 1, False)
            tt = "(" + ",".join(x.text() for x in target) + ")"
            tc = "S(" + ",".join(x.cpp() for x in target) + ")"
            text, cpp = f"tile_to_shape({lt}, {tt})", f"tile_to_shape({lc}, {tc})"
        if not _we_accept(text):
            continue
        add(op, text, cpp)
        counts[op] += 1


def _int_tuple_tiler(gen: Gen, shape):
    """A tuple tiler of integers, one per mode of ``shape``, each dividing the mode's size."""
    modes = shape if isinstance(shape, tuple) else (shape,)
    k = gen.rng.randint(1, len(modes))
    ints = []
    for m in modes[:k]:
        size = 1
        for v in _leaves(m):
            size *= v.value
        ints.append(gen.int_(gen.rng.choice([d for d in (1, 2, 3, 4) if size % d == 0])))
    return "(" + ",".join(i.text() for i in ints) + ")", "T(" + ",".join(i.cpp() for i in ints) + ")"


def _algebra_cases(seed: int, add) -> None:
    g = Gen(seed, p_dynamic=0.4)
    counts = {"complement": 0, "divide": 0, "product": 0}
    want = {"complement": 60, "divide": 80, "product": 80}
    tries = 0
    while any(counts[k] < want[k] for k in counts) and tries < 20000:
        tries += 1
        kind = g.rng.choice([k for k in counts if counts[k] < want[k]])
        sh, st = g.layout(compact=g.rng.random() < 0.8)
        lt, lc = layout_text(sh, st), layout_cpp(sh, st)
        if kind == "complement":
            if g.rng.random() < 0.5:
                op, text, cpp = "complement", f"complement({lt})", f"complement({lc})"
            else:
                size = 1
                for v in _leaves(sh):
                    size *= v.value
                cot = g.int_(size * g.rng.choice([1, 2, 3, 4]))
                op, text, cpp = "complement", f"complement({lt}, {cot.text()})", f"complement({lc}, {cot.cpp()})"
        else:
            ops = ["logical", "zipped", "tiled", "flat"]
            fn = f"{g.rng.choice(ops)}_{kind}"
            if kind == "divide" and g.rng.random() < 0.5:
                size = 1
                for v in _leaves(sh):
                    size *= v.value
                tsh, tst = _sub_layout(g, size)
                tt, tc = layout_text(tsh, tst), layout_cpp(tsh, tst)
            elif kind == "product" and g.rng.random() < 0.6:
                tsh, tst = g.layout(compact=True, max_rank=2)
                tt, tc = layout_text(tsh, tst), layout_cpp(tsh, tst)
            else:
                tt, tc = _int_tuple_tiler(g, sh)
            op, text, cpp = fn, f"{fn}({lt}, {tt})", f"{fn}({lc}, {tc})"
        if not _we_accept(text):
            continue
        add(op, text, cpp)
        counts[kind] += 1


#: swizzle-inverse draws CuTe C++ would not compile (filled by dynamic_cases)
REFUSED: list[str] = []


def cpp_accepts_swizzle_inverse(text: str) -> bool:
    """Whether CuTe's make_swizzle would accept the masks (else its static_assert fails): the
    images of the swizzle's two masks under the inverse must have the same bit count and be one
    swizzle's contiguous fields."""
    from layoutverify.adapters.cute.interp import evaluate_text
    from layoutverify.core.errors import LayoutError
    try:
        evaluate_text(text, dynamic=True)
    except LayoutError:
        return False
    return True


def _redraw_dynamic(shape, rng):
    if isinstance(shape, Int):
        return Int(shape.value, rng.random() < 0.6)
    return tuple(_redraw_dynamic(s, rng) for s in shape)


def _leaves(t):
    return [t] if isinstance(t, Int) else [x for e in t for x in _leaves(e)]


def _sub_layout(gen: Gen, size: int):
    """A layout whose image lies in [0, size): a product of divisors of ``size`` with strides
    that are partial products (so composition's divisibility conditions usually hold)."""
    rng = gen.rng
    factors, rest = [], size
    for _ in range(rng.randint(1, 3)):
        divs = [d for d in (2, 3, 4) if rest % d == 0]
        if not divs:
            break
        d = rng.choice(divs)
        factors.append(d)
        rest //= d
    if not factors:
        factors = [size]
    strides, cur = [], 1
    order = list(range(len(factors)))
    rng.shuffle(order)
    st = [0] * len(factors)
    for i in order:
        st[i] = cur
        cur *= factors[i]
    if rng.random() < 0.3 and rest > 1:          # spread: scale every stride by what is left
        st = [d * rest for d in st]
    shape = tuple(gen.int_(f) for f in factors)
    stride = tuple(gen.int_(d) for d in st)
    return (shape[0], stride[0]) if len(shape) == 1 else (shape, stride)


def _we_accept(text: str) -> bool:
    from layoutverify.adapters.cute.interp import evaluate_text
    from layoutverify.core.errors import LayoutError
    try:
        evaluate_text(text, dynamic=True)
    except LayoutError:
        return False
    return True
