"""Seeded random CuTe layouts and algebra expressions, written both in layoutverify's CuTe text and
as CuTe C++ (so the same case runs through our adapter, through CuTe C++ and through pycute).

A :class:`Case` is ``op(args...)``; ``text`` is what ``layoutverify.adapters.cute`` parses, ``cpp`` what the
generated C++ program evaluates. Cases that CuTe C++ would reject at compile time (its
divisibility ``static_assert`` s) are left out by asking our implementation first: if ours accepts
a case that C++ rejects, the program fails to compile and the test fails, naming the case line.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from layoutverify.adapters.cute.layout import CuteLayout, Underscore, is_tuple, leaves
from layoutverify.adapters.cute.swizzle import ComposedLayout, Swizzle
from layoutverify.core.errors import LayoutError

# ---------------------------------------------------------------------------------------------
# printing a value as our text, as C++, as pycute
# ---------------------------------------------------------------------------------------------


def cpp_tuple(t) -> str:
    if is_tuple(t):
        return "S(" + ",".join(cpp_tuple(e) for e in t) + ")"
    return f"I({int(t)})"


def cpp_layout(l: CuteLayout) -> str:
    return f"L({cpp_tuple(l.shape)},{cpp_tuple(l.stride)})"


def cpp_value(v, tiler: bool = False) -> str:
    if isinstance(v, CuteLayout):
        return cpp_layout(v)
    if isinstance(v, Underscore):
        return "_"
    if isinstance(v, Swizzle):
        return f"Swizzle<{v.B},{v.M},{v.S}>{{}}"
    if isinstance(v, ComposedLayout):
        return f"composition({cpp_value(v.outer)},I({v.offset}),{cpp_layout(v.inner)})"
    if is_tuple(v):
        if tiler:
            return "T(" + ",".join(cpp_value(e, True) for e in v) + ")"
        return cpp_tuple(v)
    return f"I({int(v)})"


def text_value(v) -> str:
    if isinstance(v, (CuteLayout, Swizzle, ComposedLayout, Underscore)):
        return str(v)
    if is_tuple(v):
        return "(" + ",".join(text_value(e) for e in v) + ")"
    return str(int(v))


def pycute_value(v):
    import pycute
    if isinstance(v, CuteLayout):
        return pycute.Layout(v.shape, v.stride)
    if isinstance(v, Underscore):
        return None
    if is_tuple(v):
        return tuple(pycute_value(e) for e in v)
    return int(v)


# ---------------------------------------------------------------------------------------------
@dataclass
class Case:
    id: str
    op: str
    args: tuple
    tiler_args: tuple = ()          # indices of args that are tilers (make_tile in C++)

    @property
    def text(self) -> str:
        if self.op == "layout":
            return text_value(self.args[0])
        return f"{self.op}(" + ", ".join(text_value(a) for a in self.args) + ")"

    @property
    def cpp(self) -> str:
        if self.op == "layout":
            return cpp_value(self.args[0])
        name = "filter" if self.op == "filter" else self.op
        return f"{name}(" + ",".join(cpp_value(a, i in self.tiler_args) for i, a in enumerate(self.args)) + ")"


LEAVES = [1, 2, 2, 3, 4, 4, 5, 6, 8]


def rand_shape(rng: random.Random, depth: int = 2, top: bool = True):
    if top:
        r = rng.choice([1, 2, 2, 2, 3, 3])
        if r == 1 and rng.random() < 0.6:
            return rng.choice(LEAVES[1:])
        return tuple(rand_shape(rng, depth - 1, False) for _ in range(r))
    if depth > 0 and rng.random() < 0.3:
        return tuple(rand_shape(rng, depth - 1, False) for _ in range(rng.choice([1, 2, 2, 3])))
    return rng.choice(LEAVES)


def _map_leaves(t, fn):
    it = iter(fn(leaves(t)))

    def rebuild(x):
        if is_tuple(x):
            return tuple(rebuild(e) for e in x)
        return next(it)
    return rebuild(t)


def small_shape(rng, max_size=256):
    for _ in range(100):
        s = rand_shape(rng)
        n = 1
        for v in leaves(s):
            n *= v
        if n <= max_size:
            return s
    return (2, 4)


def any_layout(rng, max_size=256) -> CuteLayout:
    shape = small_shape(rng, max_size)
    return CuteLayout(shape, _map_leaves(shape, lambda ls: [rng.choice([0, 1, 1, 2, 3, 4, 6, 8, 16, 32]) for _ in ls]))


def compact_layout(rng, max_size=256, gaps: bool = False) -> CuteLayout:
    """An injective layout: compact strides over a random order of the leaves, optionally with gaps."""
    shape = small_shape(rng, max_size)

    def strides(ls):
        order = list(range(len(ls)))
        rng.shuffle(order)
        out = [0] * len(ls)
        cur = 1
        for i in order:
            if gaps and rng.random() < 0.3:
                cur *= rng.choice([2, 3])
            out[i] = cur if ls[i] != 1 or rng.random() < 0.5 else rng.choice([0, cur])
            cur *= ls[i]
        return out
    return CuteLayout(shape, _map_leaves(shape, strides))


def rand_tiler(rng, layout: CuteLayout):
    """A tiler for ``layout``: a layout, an integer, or a tuple (per mode) of those and ``_``."""
    k = rng.random()
    if k < 0.35:
        return compact_layout(rng, max_size=max(2, layout.size()), gaps=rng.random() < 0.3)
    if k < 0.5:
        return rng.choice([1, 2, 3, 4, 8])
    r = rng.randint(1, layout.rank())
    out = []
    for i in range(r):
        m = layout.mode(i)
        c = rng.random()
        if c < 0.2:
            out.append(Underscore())
        elif c < 0.6:
            out.append(rng.choice([d for d in (1, 2, 3, 4) if d <= max(1, m.size())] or [1]))
        else:
            out.append(compact_layout(rng, max_size=max(2, m.size()), gaps=rng.random() < 0.2))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
def _accepts(case: Case) -> bool:
    from layoutverify.adapters.cute import evaluate
    try:
        v = evaluate(case.text)
    except LayoutError:
        return False
    if isinstance(v, (CuteLayout, ComposedLayout)):
        return v.size() <= 8192 and (not isinstance(v, CuteLayout) or v.cosize() < (1 << 30))
    return False


def algebra_cases(seed: int = 20240601) -> list[Case]:
    """The seeded sweep: random layouts and every algebra operation on random inputs."""
    rng = random.Random(seed)
    cases: list[Case] = []
    counters: dict[str, int] = {}

    def add(op, args, tiler_args=(), tries_left=None):
        n = counters.get(op, 0)
        c = Case(f"{op}-{n}", op, tuple(args), tuple(tiler_args))
        if _accepts(c):
            counters[op] = n + 1
            cases.append(c)
            return True
        return False

    def fill(op, count, make):
        target = counters.get(op, 0) + count
        attempts = 0
        while counters.get(op, 0) < target and attempts < count * 40:
            attempts += 1
            args, tiler_args = make()
            add(op, args, tiler_args)

    # plain layouts, printed and evaluated
    fill("layout", 200, lambda: ((any_layout(rng) if rng.random() < 0.6 else compact_layout(rng, gaps=True),), ()))
    fill("coalesce", 30, lambda: ((any_layout(rng),), ()))
    fill("coalesce", 20, lambda: (lambda L: ((L, tuple(1 for _ in range(rng.randint(1, L.rank())))), ()))(
        any_layout(rng)))
    fill("filter", 15, lambda: ((any_layout(rng),), ()))
    fill("composition", 50, lambda: ((compact_layout(rng, gaps=rng.random() < 0.3), any_layout(rng, 64)), ()))
    fill("composition", 20, lambda: (lambda A: ((A, rand_tiler(rng, A)), (1,)))(compact_layout(rng)))
    fill("complement", 30, lambda: (lambda L: ((L, rng.choice([L.cosize(), L.cosize() * 2, L.cosize() + 3,
                                                              (rng.choice([2, 4]), L.cosize())])), ()))(
        compact_layout(rng, 64, gaps=True)))
    fill("complement", 10, lambda: ((compact_layout(rng, 64, gaps=True),), ()))
    fill("right_inverse", 25, lambda: ((compact_layout(rng, gaps=rng.random() < 0.5) if rng.random() < 0.8
                                        else any_layout(rng),), ()))
    fill("left_inverse", 25, lambda: ((compact_layout(rng, gaps=rng.random() < 0.5),), ()))
    for op in ("logical_divide", "zipped_divide", "tiled_divide", "flat_divide"):
        n = 40 if op == "logical_divide" else 12
        fill(op, n, lambda: (lambda A: ((A, rand_tiler(rng, A)), (1,)))(
            compact_layout(rng, gaps=rng.random() < 0.3) if rng.random() < 0.8 else any_layout(rng)))
    for op in ("logical_product", "zipped_product", "tiled_product", "flat_product"):
        n = 30 if op == "logical_product" else 10
        fill(op, n, lambda: (lambda A: ((A, rand_tiler(rng, A) if rng.random() < 0.5 else
                                         compact_layout(rng, 16, gaps=rng.random() < 0.3)), (1,)))(
            compact_layout(rng, 64, gaps=rng.random() < 0.3)))
    for op in ("blocked_product", "raked_product"):
        fill(op, 15, lambda: ((compact_layout(rng, 32), compact_layout(rng, 16, gaps=rng.random() < 0.3)), ()))
    fill("make_layout", 10, lambda: ((any_layout(rng, 32), any_layout(rng, 32)), ()))

    def swz():
        b = rng.randint(1, 3)        # C++ simplifies composition with Swizzle<0,..> and offset 0 away
        m = rng.randint(0, 4)
        s = rng.choice([b, b + 1, 3, -b, -(b + 1), -3])
        if abs(s) < b:
            s = b
        inner = compact_layout(rng, 512, gaps=rng.random() < 0.2)
        return ComposedLayout(Swizzle(b, m, s), rng.choice([0, 0, 0, 4, 16]), inner)
    fill("layout", 20, lambda: ((swz(),), ()))
    return cases


# ---------------------------------------------------------------------------------------------
# atoms: the catalogue against CUTLASS's MMA_Traits / Copy_Traits, tiled MMAs, GMMA smem atoms
# ---------------------------------------------------------------------------------------------
ATOM_HEADERS = r"""
#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm70.hpp>
#include <cute/atom/mma_traits_sm75.hpp>
#include <cute/atom/mma_traits_sm80.hpp>
#include <cute/atom/mma_traits_sm90.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/atom/copy_traits_sm75.hpp>
#include <cute/atom/copy_traits_sm90.hpp>
#include <cute/atom/mma_atom.hpp>
#define EPI(id, ...) { auto r_ = __VA_ARGS__; emit2(id, r_, as_position_independent_swizzle_layout(r_)); }
"""


@dataclass
class AtomCase:
    id: str
    cpp: str            # a C++ expression, or a whole statement starting with '{'
    ours: object        # zero-argument callable returning our CuteLayout / ComposedLayout


def cpp_mma_type(name: str) -> str:
    if name.startswith("SM90_64x"):
        if "_S32" in name:            # integer GMMA ops are plain structs
            return name
        return f"{name}<>" if name.endswith("_TN") else f"{name}<GMMA::Major::K,GMMA::Major::K>"
    return name


TILED = [
    # (atom, atom layout, tile (M, N, K) in our text, C++ permutation tile or None, operands)
    ("SM80_16x8x16_F32F16F16F32_TN", "(2,2,1)", "(32,32,16)", "T(I(32),I(32),I(16))", "ABC"),
    ("SM80_16x8x16_F32F16F16F32_TN", "(2,2,1)", None, None, "ABC"),
    ("SM80_16x8x16_F32F16F16F32_TN", "(2,2,1)", "(32,(8,2,2):(1,16,8),16)",
     "T(I(32),L(S(I(8),I(2),I(2)),S(I(1),I(16),I(8))),I(16))", "ABC"),
    ("SM80_16x8x16_F32F16F16F32_TN", "(4,1,1)", "(64,16,16)", "T(I(64),I(16),I(16))", "ABC"),
    ("SM80_16x8x8_F32TF32TF32F32_TN", "(1,2,1)", "(16,32,8)", "T(I(16),I(32),I(8))", "ABC"),
    ("SM75_16x8x8_F32F16F16F32_TN", "(2,1,1)", None, None, "ABC"),
    ("SM80_8x8x4_F64F64F64F64_TN", "(2,2,1)", "(16,16,4)", "T(I(16),I(16),I(4))", "ABC"),
    ("SM80_16x8x32_S32S8S8S32_TN", "(2,2,1)", None, None, "ABC"),
    ("SM70_8x8x4_F32F16F16F32_NT", "(1,1,1)", None, None, "ABC"),
    ("SM70_8x8x4_F32F16F16F32_TN", "(2,2,1)", "(16,16,4)", "T(I(16),I(16),I(4))", "ABC"),
    ("SM90_64x64x16_F32F16F16_RS", "(2,1,1)", None, None, "AC"),
    ("SM90_64x96x16_F32BF16BF16_RS", "(1,1,1)", None, None, "AC"),
]

SMEM_ATOMS = [f"Layout_{m}_{s}_Atom" for m in ("K", "MN") for s in ("INTER", "SW32", "SW64", "SW128")]


def atom_cases() -> list[AtomCase]:
    from layoutverify.adapters.cute import evaluate
    from layoutverify.adapters.cute.atoms import copy_atoms, mma_atoms
    out: list[AtomCase] = []
    for name, atom in mma_atoms().items():
        t = f"MMA_Traits<{cpp_mma_type(name)}>"
        out.append(AtomCase(f"mma|{name}|ThrID", f"typename {t}::ThrID{{}}", lambda a=atom: a.thr_id))
        for op in atom.operands():
            out.append(AtomCase(f"mma|{name}|{op}", f"typename {t}::{op}Layout{{}}", lambda a=atom, o=op: a.tv(o)))
    for name, atom in copy_atoms().items():
        t = f"Copy_Traits<{name}>"
        out.append(AtomCase(f"copy|{name}|ThrID", f"typename {t}::ThrID{{}}", lambda a=atom: a.thr_id))
        out.append(AtomCase(f"copy|{name}|Src", f"typename {t}::SrcLayout{{}}", lambda a=atom: a.src))
        out.append(AtomCase(f"copy|{name}|Dst", f"typename {t}::DstLayout{{}}", lambda a=atom: a.dst))
    for i, (atom, lay, tile, cpp_tile, ops) in enumerate(TILED):
        cpp_atom = cpp_mma_type(atom) + "{}"
        args = f"{cpp_atom},make_layout(S({','.join('I(' + x + ')' for x in lay.strip('()').split(','))}))"
        if cpp_tile:
            args += f",{cpp_tile}"
        for op in ops:
            text = f"tiled_mma({atom}, {lay}, {op}" + (f", tile={tile})" if tile else ")")
            out.append(AtomCase(f"tiled|{i}|{op}", f"make_tiled_mma({args}).get_layout{op}_TV()",
                                lambda t=text: evaluate(t).tv))
    for name in SMEM_ATOMS:
        for ty in ("half_t", "float", "uint8_t"):
            text = f"GMMA::{name}<{ty}>"
            out.append(AtomCase(f"smem|{name}|{ty}", "{ EPI(\"ID\", GMMA::%s<%s>{}); }" % (name, ty),
                                lambda t=text: evaluate(t)))
        for shape in ((64, 64), (128, 64)):
            text = f"tile_to_shape(GMMA::{name}<half_t>, ({shape[0]},{shape[1]}))"
            cpp = "{ EPI(\"ID\", tile_to_shape(GMMA::%s<half_t>{}, S(I(%d),I(%d)))); }" % (name, *shape)
            out.append(AtomCase(f"smem|{name}|tile{shape[0]}x{shape[1]}", cpp, lambda t=text: evaluate(t)))
        for order_text, order_cpp in (("Step<_2,_1>", "Step<_2,_1>{}"), ("GenRowMajor", "GenRowMajor{}")):
            text = f"tile_to_shape(GMMA::{name}<half_t>, (128,64), {order_text})"
            cpp = "{ EPI(\"ID\", tile_to_shape(GMMA::%s<half_t>{}, S(I(128),I(64)), %s)); }" % (name, order_cpp)
            out.append(AtomCase(f"smem|{name}|tile128x64|{order_text}", cpp, lambda t=text: evaluate(t)))
    for c in out:
        c.cpp = c.cpp.replace('"ID"', f'"{c.id}"')
    return out


# ---------------------------------------------------------------------------------------------
# Cases where pycute (nvidia-cutlass 4.2) answers differently from CuTe C++; each is also run
# through C++ by test_cute_algebra_cpp.py, and test_cute_pycute.py asserts the difference.
# (id, op, args, tiler_args, what pycute does differently)
# ---------------------------------------------------------------------------------------------
def _L(shape, stride):
    return CuteLayout(shape, stride)


KNOWN_PYCUTE_DIFFERENCES = [
    ("pycute-int-product", "logical_product", (_L(6, 1), 8), (1,),
     "an integer tiler: pycute's logical_product calls logical_divide"),
    ("pycute-weak-divisibility", "composition", (_L(((3, 3), 4), ((1, 12), 3)), _L((3, 6), (3, 6))), (),
     "pycute asserts a strong stride divisibility condition; C++ checks the weak one (stride % size == 0 "
     "or stride < size)"),
    ("pycute-size1-lhs", "composition", (_L(1, 1), _L(4, 2)), (),
     "pycute coalesces a size-1 left layout to 1:0; C++ (coalesce_x) keeps its stride"),
    ("pycute-underscore-drops", "composition", (_L((4, 3, 2), (1, 4, 12)), (_L(2, 1), Underscore())), (1,),
     "C++ drops the modes a tiler does not reach; pycute keeps them"),
    ("pycute-shape-cotarget", "complement", (_L((4, 6), (1, 4)), (2, 24)), (),
     "pycute's complement takes only an integer cotarget"),
    ("pycute-rinv-stride0", "right_inverse", (_L((2, 5, 4), (1, 0, 2)),), (),
     "pycute stops at the first mode whose stride does not continue the run (here the stride-0 mode)"),
    ("pycute-rinv-gap", "right_inverse", (_L((4, 3, 2), (1, 3, 4)),), (),
     "pycute stops at the first gap; C++ skips it and keeps the later 2:4 mode"),
    ("pycute-linv", "left_inverse", (_L(4, 2),), (),
     "pycute builds left_inverse as right_inverse(make_layout(L, complement(L))); C++ gives 0 stride to the "
     "coordinates outside the image"),
    ("pycute-divide-divisibility", "logical_divide", (_L((5, 2), (1, 0)), 3), (1,),
     "pycute's composition asserts where C++ accepts"),
    ("pycute-divide-cotarget", "logical_divide", (_L((3, 4), (4, 1)), _L(2, 1)), (1,),
     "C++ complements the tiler against shape(coalesce(A)) (here (3,4)), pycute against size(A)"),
    ("pycute-unit-tile", "logical_divide", (_L(((3,), 1), ((1,), 3)), 1), (1,),
     "an integer tile 1 is 1:0 in C++ (compact strides) but 1:1 in pycute (same function)"),
]


def known_cases() -> list[Case]:
    return [Case(cid, op, args, tiler_args) for cid, op, args, tiler_args, _ in KNOWN_PYCUTE_DIFFERENCES]
