"""layoutverify side by side with the peers, in one process, on the same pairs.

Peers (each starts from its own objects, built before timing):

* ``triton``: Triton's own ``GluonOpBuilder.to_linear_layout`` on Gluon layout objects, and
  equality of the two linear layouts (docs/DESIGN.md §2);
* ``pycute``: enumeration of both CuTe layouts (``Layout(i)`` for every index, stopping at the
  first difference); not run for equal pairs above 2^20 elements (minutes per run there, never
  the fastest);
* ``tensor_layouts``: ``to_F2_matrix`` of both CuTe layouts (tensor-layouts 0.3.2; power-of-two
  shapes only), matrices compared;
* ``isl``: ``islpy`` ``Map.is_equal`` on quasi-affine maps (``floor``/``mod``) of both layouts,
  built from the layouts' expressions (layouts with XOR have no such map: not run);
* ``tilus``: ``==`` of two ``RegisterLayout`` objects built by tilus's own ``register_ops``
  (``local(...)``, ``.spatial(...)``, ...), which canonicalise every layout they make, so ``==``
  compares canonical attributes: the peer of ``ours cmp``. Tilus has no verdict step apart from
  building, so its objects-to-verdict (``tilus build``) is building both layouts from the calls
  and ``==``; Tilus keeps no caches, so that one time serves cold and warm;
* ``numpy``: a plain numpy table of each layout built from its framework description (offsets
  from shape:stride by broadcasting, or F2 bases by XOR doubling), ``array_equal``.

Ours, two measurements:

* ``ours cmp``: ``compare`` given pre-built ``Layout`` objects. As the peers get their objects
  built (ISL maps, which ISL normalises on construction; numpy tables; pycute layouts), building
  ours includes its normal form: the adapter's ``parse`` followed by
  ``layoutverify.core.compare.prepare`` (F2 bases / coalesced mixed-radix digits, images, interned
  key, memoised on the immutable layout), outside the timed region. The same two objects are
  compared in every repetition, as each peer reuses its objects.
* ``ours text`` (*cold*): parse cache emptied, then ``parse_spec`` of both texts, the normal forms
  and ``compare``: everything from text; (*warm*): texts already parsed once.

Text-to-verdict is set against the framework's own objects-to-verdict (Triton's, pycute's or tilus's)
cold against cold and warm against warm: the ``triton`` peer repeats the same objects, so Triton's
caches (MLIR attribute uniquing, the dialect's linear-layout cache) hit, which is its warm time;
its cold time is taken in a fresh MLIR context per sample (see :func:`_triton_cold`).

In both, a ``not_equal`` / ``different_tensors`` / ``equal_up_to_register_order`` verdict decided
on the normal forms carries its counterexample *deferred*: ``Result.witness`` builds it (by the
full strategy, re-checked on both layouts) on first access, which is not timed here; the
verdict itself is proved when ``compare`` returns. Every peer answers a bare boolean.

Every peer's verdict (equal or not) is cross-checked against ours. Times are medians of
repetitions (wall clock, ``perf_counter``; a call under 20 µs is timed in batches of calls, for
ours and the peers alike); peak memory is ``tracemalloc``'s peak over one run
(Python allocations, numpy included; the C++ allocations of Triton and ISL are not seen).

Usage::

    python benchmarks/bench_peers.py            # sizes 16x16 .. 256x256 (a loaded machine)
    python benchmarks/bench_peers.py --full     # up to 2048x2048 / 1536x2560
    python benchmarks/bench_peers.py --families cute,tilus

Writes ``benchmarks/results/bench_peers.json`` and ``bench_peers.md``.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import re
import statistics
import sys
import time
import tracemalloc
from dataclasses import dataclass, field

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from layoutverify import adapters  # noqa: E402
from layoutverify.core import expr as E  # noqa: E402
from layoutverify.core.compare import compare, prepare  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


# -- cases --------------------------------------------------------------------------------------
@dataclass
class Case:
    family: str
    size: str
    relation: str              # "equal" | "not_equal" (what the pair is built to be)
    spec_a: str
    spec_b: str
    shape: tuple | None
    peers: dict = field(default_factory=dict)  # peer name -> (build() -> objects, run(objects) -> bool)
    cold: dict = field(default_factory=dict)   # framework -> sample() -> seconds, its caches empty


def _blocked(spt, tpw, wpc, order):
    return (f"#ttg.blocked<{{sizePerThread = {spt}, threadsPerWarp = {tpw}, warpsPerCTA = {wpc}, "
            f"order = {order}}}>")


def _linear_text(lay) -> str:
    b = lay.f2_bases()
    parts = [f"{n} = {[list(v) for v in b.get(n, [])]}" for n in ("register", "lane", "warp", "block")]
    return "#ttg.linear<{" + ", ".join(parts) + "}>"


_TRITON = {}


def _gluon():
    """(builder, gl) of the installed Triton, or None."""
    if "b" not in _TRITON:
        try:
            from triton._C.libtriton import gluon_ir, ir
            from triton.experimental.gluon import language as gl
            ctx = ir.context()
            ir.load_dialects(ctx)
            _TRITON.update(ctx=ctx, b=gluon_ir.GluonOpBuilder(ctx), gl=gl)
        except Exception:  # noqa: BLE001 - Triton without Gluon: the peer is not run
            _TRITON.update(b=None, gl=None)
    return _TRITON["b"], _TRITON["gl"]


def _triton_peer(make_a, make_b, shape):
    b, gl = _gluon()
    if b is None:
        return None

    def build():
        return make_a(gl), make_b(gl)

    def run(objs):
        la = b.to_linear_layout(objs[0]._to_ir(b), list(shape))
        lb = b.to_linear_layout(objs[1]._to_ir(b), list(shape))
        return la == lb
    return build, run


#: unrelated layouts a fresh context converts before the timed pair (see _triton_cold)
def _warm_up_layouts(gl):
    return (gl.BlockedLayout([2, 2], [2, 16], [2, 2], [0, 1]), gl.NVMMADistributedLayout([2, 0], [1, 4], [16, 8]),
            gl.SwizzledSharedLayout(2, 2, 2, [0, 1]))


def _triton_cold(make_a, make_b, shape):
    """Triton's objects-to-verdict with its caches empty, as ``ours text (cold)`` has ours empty:
    the MLIR context uniques attributes and the TritonGPU dialect keeps a cache of linear layouts,
    so a repeated ``to_linear_layout`` of the same objects (the ``triton`` column) is Triton's warm
    path. Each sample makes a fresh context and converts three unrelated layouts in it (the
    one-time costs of a new context, not timed), then times: building the Gluon objects, both
    ``to_linear_layout`` calls and the equality. ``sample()`` returns its seconds."""
    b, gl = _gluon()
    if b is None:
        return None
    from triton._C.libtriton import gluon_ir, ir

    def sample() -> float:
        ctx = ir.context()
        ir.load_dialects(ctx)
        bld = gluon_ir.GluonOpBuilder(ctx)
        for w in _warm_up_layouts(gl):
            try:
                bld.to_linear_layout(w._to_ir(bld), [32, 128])
            except Exception:  # noqa: BLE001 - a release without this layout: fewer warm-ups
                pass
        t0 = time.perf_counter()
        oa, ob = make_a(gl), make_b(gl)
        equal = bld.to_linear_layout(oa._to_ir(bld), list(shape)) == bld.to_linear_layout(ob._to_ir(bld), list(shape))
        t = time.perf_counter() - t0
        del oa, ob, bld, ctx, equal
        return t
    return sample


def _numpy_f2_peer(lay_a, lay_b):
    """numpy tables from F2 bases (XOR doubling), compared."""
    ba, bb = lay_a.f2_bases(), lay_b.f2_bases()
    ia, ib = lay_a.in_dims, lay_b.in_dims
    if ba is None or bb is None:
        return None

    def table(bases, in_dims, nout):
        vecs = [np.asarray(v, dtype=np.int32).reshape(-1, nout) for n, _ in in_dims for v in [bases[n]]]
        allv = np.concatenate(vecs) if vecs else np.zeros((0, nout), np.int32)
        t = np.zeros((1, nout), dtype=np.int32)
        for v in allv:
            t = np.concatenate([t, t ^ v])
        return t

    nout = len(lay_a.out_dims)

    def build():
        return (ba, ia), (bb, ib)

    def run(objs):
        (xa, da), (xb, db) = objs
        if [s for _, s in da] != [s for _, s in db]:
            return False
        return np.array_equal(table(xa, da, nout), table(xb, db, nout))
    return build, run


def _cute_peers(cute_a: str, cute_b: str, relation: str = "equal"):
    """pycute, tensor_layouts and numpy peers for two CuTe shape:stride texts."""
    import ast
    peers = {}

    def tup(text):
        s, d = text.split(":")
        return ast.literal_eval(s), ast.literal_eval(d)
    (sa, da), (sb, db) = tup(cute_a), tup(cute_b)
    try:
        import pycute

        def build():
            return pycute.Layout(sa, da), pycute.Layout(sb, db)

        def run(objs):
            a, b = objs
            n = pycute.size(a)
            if n != pycute.size(b):
                return False
            for i in range(n):
                if a(i) != b(i):
                    return False
            return True
        # enumeration in Python: about 30 us per index, minutes per run for an equal pair above a
        # million indices, where it is never the fastest peer; left out there (the table shows
        # "-"). A not-equal pair stops at the first difference: always run.
        if relation != "equal" or _size(sa) <= PYCUTE_MAX:
            peers["pycute"] = (build, run)
    except ImportError:
        pass
    try:
        import tensor_layouts as tl
        from tensor_layouts.analysis import to_F2_matrix

        def pow2(x):
            return all(v & (v - 1) == 0 for v in _flat(x))
        if pow2(sa) and pow2(sb):
            def build_tl():
                return tl.Layout(sa, da), tl.Layout(sb, db)

            def run_tl(objs):
                return to_F2_matrix(objs[0]) == to_F2_matrix(objs[1])
            peers["tensor_layouts"] = (build_tl, run_tl)
    except ImportError:
        pass

    def offsets(shape, stride):
        fs, fd = _flat(shape), _flat(stride)
        t = np.zeros(1, dtype=np.int32)
        for s, d in zip(fs, fd):  # colexicographic: the first mode fastest
            t = np.add.outer(np.arange(s, dtype=np.int32) * np.int32(d), t).ravel()
        return t

    def build_np():
        return (sa, da), (sb, db)

    def run_np(objs):
        return np.array_equal(offsets(*objs[0]), offsets(*objs[1]))
    peers["numpy"] = (build_np, run_np)
    return peers


#: largest CuTe layout (elements) the pycute peer enumerates
PYCUTE_MAX = 1 << 20


def _size(shape) -> int:
    n = 1
    for v in _flat(shape):
        n *= v
    return n


def _flat(x):
    if isinstance(x, int):
        return [x]
    return [v for e in x for v in _flat(e)]


def _isl_text(lay) -> str | None:
    """``{ [hw...] -> [d...] : d = expr and 0 <= hw < size }`` or None when the map uses XOR,
    masks, shifts or tables."""
    def conv(e):
        t = type(e)
        if t is E.Var:
            return e.name
        if t is E.Const:
            return str(e.value)
        if t is E.Add:
            a, b = conv(e.a), conv(e.b)
            return None if a is None or b is None else f"({a} + {b})"
        if t is E.Mul:
            a = conv(e.a)
            return None if a is None else f"({e.c} * {a})"
        if t is E.FloorDiv:
            a = conv(e.a)
            return None if a is None else f"floor(({a})/{e.c})"
        if t is E.Mod:
            a = conv(e.a)
            return None if a is None else f"(({a}) mod {e.c})"
        return None
    ins = [n for n, _ in lay.in_dims]
    outs = [f"o{i}" for i in range(len(lay.out_dims))]
    cons = []
    for o, e in zip(outs, lay.exprs):
        c = conv(e)
        if c is None:
            return None
        cons.append(f"{o} = {c}")
    cons += [f"0 <= {n} < {s}" for n, s in lay.in_dims]
    return "{ [" + ", ".join(ins) + "] -> [" + ", ".join(outs) + "] : " + " and ".join(cons) + " }"


def _isl_peer(lay_a, lay_b):
    try:
        import islpy as isl
    except ImportError:
        return None
    ta, tb = _isl_text(lay_a), _isl_text(lay_b)
    if ta is None or tb is None or lay_a.in_names != lay_b.in_names:
        return None

    def build():
        return isl.Map(ta), isl.Map(tb)

    def run(objs):
        return objs[0].is_equal(objs[1])
    return build, run


def triton_cases(sizes):
    out = []
    for n in sizes:
        shape = (n, n)
        bl = _blocked([1, 4], [4, 8], [4, 1], [1, 0])
        bl_t = _blocked([1, 4], [8, 4], [1, 4], [0, 1])
        mma2 = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>"
        mma3 = "#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 16, 16]}>"
        mfma = "#ttg.amd_mfma<{version = 3, warpsPerCTA = [2, 2], instrShape = [16, 16, 16], isTransposed = true}>"
        dot = f"#ttg.dot_op<{{opIdx = 0, parent = {mma2}, kWidth = 2}}>"

        def g_bl(gl):
            return gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])

        def g_bl_t(gl):
            return gl.BlockedLayout([1, 4], [8, 4], [1, 4], [0, 1])

        def g_mma2(gl):
            return gl.NVMMADistributedLayout([2, 0], [2, 2], [16, 8])

        def g_mma3(gl):
            return gl.NVMMADistributedLayout([3, 0], [4, 1], [16, 16, 16])

        def g_mfma(gl):
            from triton.experimental.gluon.language import amd
            return amd.AMDMFMALayout(3, [16, 16, 16], True, [2, 2])

        def g_dot(gl):
            return gl.DotOperandLayout(0, g_mma2(gl), 2)

        specs = {"blocked": (bl, g_bl), "blocked_t": (bl_t, g_bl_t), "mma_v2": (mma2, g_mma2),
                 "mma_v3": (mma3, g_mma3), "amd_mfma": (mfma, g_mfma), "dot_op": (dot, g_dot)}
        pairs = [("blocked vs blocked", "blocked", "blocked_t"), ("blocked vs mma v2", "blocked", "mma_v2"),
                 ("blocked vs mma v3", "blocked", "mma_v3"), ("blocked vs amd mfma", "blocked", "amd_mfma"),
                 ("blocked vs dot_op", "blocked", "dot_op")]
        for fam, x, y in pairs:
            (ta, ga), (tb, gb) = specs[x], specs[y]
            out.append(_triton_case(fam, shape, "not_equal", ta, tb, ga, gb))
        for fam, x in (("blocked vs linear", "blocked"), ("mma v2 vs linear", "mma_v2"), ("mma v3 vs linear", "mma_v3"),
                       ("amd mfma vs linear", "amd_mfma"), ("dot_op vs linear", "dot_op")):
            ta, ga = specs[x]
            lay = adapters.adapter("triton").parse(ta, shape=shape)
            lt = _linear_text(lay)
            b = lay.f2_bases()

            def gl_lin(gl, b=b, shape=shape):
                return gl.DistributedLinearLayout(b["register"], b["lane"], b["warp"], b.get("block", []), list(shape))
            out.append(_triton_case(fam, shape, "equal", ta, lt, ga, gl_lin))
        # slice: 1-D
        sl = f"#ttg.slice<{{dim = 1, parent = {bl}}}>"
        b1 = _blocked([4], [32], [4], [0])

        def g_sl(gl):
            return gl.SliceLayout(1, g_bl(gl))

        def g_b1(gl):
            return gl.BlockedLayout([4], [32], [4], [0])
        out.append(_triton_case("blocked vs slice", (n,), "not_equal", b1, sl, g_b1, g_sl))
        # swizzled shared
        sw1 = "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>"
        sw2 = "#ttg.swizzled_shared<{vec = 4, perPhase = 2, maxPhase = 4, order = [1, 0]}>"

        def g_sw1(gl):
            return gl.SwizzledSharedLayout(8, 1, 8, [1, 0])

        def g_sw2(gl):
            return gl.SwizzledSharedLayout(4, 2, 4, [1, 0])
        if n >= 8:
            out.append(_triton_case("swizzled shared", shape, "not_equal", sw1, sw2, g_sw1, g_sw2))
            out.append(_triton_case("swizzled shared", shape, "equal", sw1, sw1, g_sw1, g_sw1))
    return out


def _triton_case(fam, shape, rel, ta, tb, ga, gb):
    c = Case("triton: " + fam, "x".join(map(str, shape)), rel, "triton:" + ta, "triton:" + tb, shape)
    tp = _triton_peer(ga, gb, shape)
    if tp:
        c.peers["triton"] = tp
        c.cold = {"triton": _triton_cold(ga, gb, shape)}
    la = adapters.adapter("triton").parse(ta, shape=shape)
    lb = adapters.adapter("triton").parse(tb, shape=shape)
    npp = _numpy_f2_peer(la, lb)
    if npp:
        c.peers["numpy"] = npp
    return c


def cute_cases(sizes):
    out = []
    for m, n in sizes:
        a = f"({m},{n}):({n},1)"
        half = 2 if m % 2 == 0 and (m & (m - 1)) == 0 else 3
        eq = f"(({half},{m // half}),{n}):(({n},{half * n}),1)"
        ne = f"({m},{n}):(1,{m})"
        fam = "cute" if (m & (m - 1)) == 0 and (n & (n - 1)) == 0 else "cute non-F2"
        for rel, b in (("equal", eq), ("not_equal", ne)):
            c = Case(fam, f"{m}x{n}", rel, "cute:" + a, "cute:" + b, None, _cute_peers(a, b, rel))
            la, lb = adapters.adapter("cute").parse(a), adapters.adapter("cute").parse(b)
            ip = _isl_peer(la, lb)
            if ip:
                c.peers["isl"] = ip
            out.append(c)
    return out


_TILUS_CALL = re.compile(r"(\w+)\(([^)]*)\)")


def _tilus_peer(text_a: str, text_b: str):
    """The ``tilus`` peer for two chains of register-layout calls: both built by tilus's ops on
    every run (see the module docstring), compared with ``==``."""
    try:
        from tilus.ir.layout.ops import register_ops as ops
    except ImportError:
        return None

    def calls(text):
        return [(name, tuple(int(v) for v in args.split(","))) for name, args in _TILUS_CALL.findall(text)]
    ca, cb = calls(text_a), calls(text_b)

    def make(cs):
        (name, args), rest = cs[0], cs[1:]
        lay = getattr(ops, name)(*args)
        for name, args in rest:
            lay = getattr(lay, name)(*args)
        return lay

    def build():
        return make(ca), make(cb)

    def run(objs):
        return objs[0] == objs[1]

    def from_calls() -> float:  # objects-to-verdict: build both (canonicalised) and ``==``
        t0 = time.perf_counter()
        make(ca) == make(cb)
        return time.perf_counter() - t0
    return build, run, from_calls


def tilus_cases(sizes):
    out = []
    for r0, r1, s0, s1 in sizes:
        a = f"local({r0}, {r1}).spatial({s0}, {s1})"
        eq = f"local({r0}, 1).local(1, {r1}).spatial({s0}, {s1})"
        ne = f"local({r0}, {r1}).column_spatial({s0}, {s1})"
        for rel, b in (("equal", eq), ("not_equal", ne)):
            c = Case("tilus", f"{r0 * s0}x{r1 * s1}", rel, "tilus:" + a, "tilus:" + b, None)
            tp = _tilus_peer(a, b)
            if tp:
                c.peers["tilus"], c.cold["tilus"] = tp[:2], tp[2]
            la, lb = adapters.adapter("tilus").parse(a), adapters.adapter("tilus").parse(b)
            ip = _isl_peer(la, lb)
            if ip:
                c.peers["isl"] = ip
            out.append(c)
    big = ("local(4, 3).column_local(1, 8).local(2, 8)", "column_local(1, 8).local(4, 3).local(2, 8)")
    c = Case("tilus", "8x192 (issue pair)", "not_equal", "tilus:" + big[0], "tilus:" + big[1], None)
    tp = _tilus_peer(*big)
    if tp:
        c.peers["tilus"], c.cold["tilus"] = tp[:2], tp[2]
    ip = _isl_peer(adapters.adapter("tilus").parse(big[0]), adapters.adapter("tilus").parse(big[1]))
    if ip:
        c.peers["isl"] = ip
    out.append(c)
    return out


# -- measuring ------------------------------------------------------------------------------------
#: samples of a framework's cold objects-to-verdict (each in a fresh context: about 1.3 ms to make)
COLD_REPS = 25
#: a sample lasts at least this long: a call shorter than it is timed in a batch of calls
MIN_SAMPLE_S = 20e-6


def _median_time(fn, budget_s: float, max_reps: int) -> float:
    """Median seconds per call of ``fn``. Calls under :data:`MIN_SAMPLE_S` are timed in batches
    (as ``timeit`` does), so that the clock's own cost and resolution do not swamp
    sub-microsecond answers; ours and every peer's are measured the same way."""
    t0 = time.perf_counter()
    fn()
    once = time.perf_counter() - t0
    batch = 1 if once >= MIN_SAMPLE_S else max(1, int(MIN_SAMPLE_S / max(once, 1e-8)))
    if batch > 1:  # calibrate on a real batch (the first call may have paid for warming up)
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        per = (time.perf_counter() - t0) / batch
        batch = max(1, int(MIN_SAMPLE_S / max(per, 1e-9)))
    times = []
    t_end = time.perf_counter() + budget_s
    while len(times) < max_reps and (len(times) < 3 or time.perf_counter() < t_end):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        times.append((time.perf_counter() - t0) / batch)
        if times[-1] > budget_s:
            break
    return statistics.median(times)


def _peak(fn) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run_case(c: Case, budget_s: float, max_reps: int) -> dict:
    fw_a, text_a = adapters.split_spec(c.spec_a)
    fw_b, text_b = adapters.split_spec(c.spec_b)
    mod_a, mod_b = adapters.adapter(fw_a), adapters.adapter(fw_b)
    kw = {"shape": c.shape}

    ours_verdict = compare(mod_a.parse(text_a, **kw), mod_b.parse(text_b, **kw))
    ours_equal = ours_verdict.verdict == "equal"
    row = {"family": c.family, "size": c.size, "relation": c.relation, "ours_verdict": ours_verdict.verdict,
           "ours_method": ours_verdict.method, "peers": {}, "mismatches": []}
    if ours_equal != (c.relation == "equal"):
        row["mismatches"].append(f"ours says {ours_verdict.verdict}, the pair is built {c.relation}")

    # ours: compare on pre-built layouts (parse + normal form, outside the timed region)
    la, lb = prepare(mod_a.parse(text_a, **kw)), prepare(mod_b.parse(text_b, **kw))
    if compare(la, lb).verdict != ours_verdict.verdict:
        row["mismatches"].append("ours on prepared layouts disagrees with ours on fresh ones")
    row["ours_compare_s"] = _median_time(lambda: compare(la, lb), budget_s, max_reps)
    row["ours_compare_peak_b"] = _peak(lambda: compare(prepare(mod_a.parse(text_a, **kw)),
                                                       prepare(mod_b.parse(text_b, **kw))))
    w = compare(mod_a.parse(text_a, **kw), mod_b.parse(text_b, **kw))
    row["ours_witness_s"] = None
    if w.verdict != "equal":  # the deferred counterexample, built and re-checked on access
        t0 = time.perf_counter()
        w.witness
        row["ours_witness_s"] = time.perf_counter() - t0

    def cold():
        adapters.clear_parse_cache()
        return compare(adapters.parse_spec(c.spec_a, shape=c.shape), adapters.parse_spec(c.spec_b, shape=c.shape))

    def warm():
        return compare(adapters.parse_spec(c.spec_a, shape=c.shape), adapters.parse_spec(c.spec_b, shape=c.shape))
    row["ours_text_cold_s"] = _median_time(cold, budget_s, max_reps)
    warm()
    row["ours_text_warm_s"] = _median_time(warm, budget_s, max_reps)

    for name, (build, run) in c.peers.items():
        try:
            objs = build()
            verdict = bool(run(objs))
        except Exception as e:  # noqa: BLE001 - a peer that cannot take this pair
            row["peers"][name] = {"error": f"{type(e).__name__}: {str(e)[:120]}"}
            continue
        if verdict != ours_equal:
            row["mismatches"].append(f"{name} says {'equal' if verdict else 'not equal'}, ours {ours_verdict.verdict}")
        t = _median_time(lambda: run(build()) if name in ("triton",) else run(objs), budget_s, max_reps)
        peak = _peak(lambda: run(objs))
        row["peers"][name] = {"s": t, "peak_b": peak, "equal": verdict}
    best = min((p["s"] for p in row["peers"].values() if "s" in p), default=None)
    row["best_peer_s"] = best
    row["ratio_compare"] = row["ours_compare_s"] / best if best else None
    # text-to-verdict against the framework's own objects-to-verdict, warm against warm (repeated
    # objects: its caches hit, as our parse cache does) and cold against cold (caches empty)
    row["framework_cold_s"] = {}
    for name, sample in c.cold.items():
        if sample is not None and "s" in row["peers"].get(name, {}):
            times = [sample() for _ in range(COLD_REPS)]
            row["framework_cold_s"][name] = statistics.median(times)
    own = [n for n in ("triton", "pycute", "tilus") if "s" in row["peers"].get(n, {})]
    row["framework"] = own[0] if own else None
    if own:
        if own[0] == "tilus":  # building is its verdict step (see the module docstring): one time
            warm = cold = row["framework_cold_s"].get("tilus")
        else:
            warm = row["peers"][own[0]]["s"]
            # pycute keeps no caches: its objects-to-verdict is the same every time
            cold = warm if own[0] == "pycute" else row["framework_cold_s"].get(own[0])
        row["ratio_text_warm"] = row["ours_text_warm_s"] / warm if warm else None
        row["ratio_text_cold"] = row["ours_text_cold_s"] / cold if cold else None
    else:
        row["ratio_text_warm"] = row["ratio_text_cold"] = None
    return row


def markdown(rows, meta) -> str:
    def ms(x):
        return "-" if x is None else (f"{x * 1e3:.3f}" if x < 0.01 else f"{x * 1e3:.1f}")

    def ratio(x):
        return "-" if x is None else f"{x:.2f}"

    peers = sorted({p for r in rows for p in r["peers"]})
    out = [f"# bench_peers ({meta['when']}, {meta['platform']}, {meta['note']})", "",
           "Median wall time in ms. `ours cmp`: compare on pre-built layouts (built = parsed + normal form, "
           "as the peers' objects are built before timing; not-equal witnesses deferred to first access); "
           "`x best`: ours cmp / fastest peer. `text cold` / `text warm`: parse both texts + normal forms + "
           "compare, with the parse cache empty / holding both texts. The peer columns repeat the same objects, "
           "so Triton's own caches (MLIR attribute uniquing, the dialect's linear-layout cache) hit there: that "
           "is its warm time; `triton cold`: the same with its caches empty (a fresh context per sample, first "
           "used on unrelated layouts); `tilus build`: tilus building both layouts with its own ops (which "
           "canonicalise them) and `==`, its objects-to-verdict (the `tilus` column is `==` alone). `x text`: ours "
           "text / the framework's own objects-to-verdict (Triton; pycute or tilus, which keep no caches), cold "
           "against cold and warm against warm. Peak memory and witness "
           "build times in the JSON.", "",
           "| family | size | pair | verdict (method) | ours cmp | text cold | text warm | "
           + " | ".join(peers) + " | triton cold | tilus build | x best | x text cold | x text warm |",
           "|" + "---|" * (12 + len(peers))]
    for r in rows:
        cells = []
        for p in peers:
            v = r["peers"].get(p)
            cells.append("-" if v is None else ("err" if "error" in v else ms(v["s"])))
        out.append(f"| {r['family']} | {r['size']} | {r['relation']} | {r['ours_verdict']} ({r['ours_method']}) | "
                   f"{ms(r['ours_compare_s'])} | {ms(r['ours_text_cold_s'])} | {ms(r['ours_text_warm_s'])} | "
                   + " | ".join(cells) + f" | {ms(r['framework_cold_s'].get('triton'))} | "
                   f"{ms(r['framework_cold_s'].get('tilus'))} | {ratio(r['ratio_compare'])} | "
                   f"{ratio(r['ratio_text_cold'])} | {ratio(r['ratio_text_warm'])} |")
    mism = [m for r in rows for m in r["mismatches"]]
    out += ["", f"Verdict mismatches: {len(mism)}" + ("" if not mism else ": " + "; ".join(mism[:10]))]
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true", help="sizes up to 2048x2048 (and 1536x2560)")
    ap.add_argument("--families", default="triton,cute,tilus")
    ap.add_argument("--budget", type=float, default=0.3, help="seconds of repetitions per measurement")
    ap.add_argument("--max-reps", type=int, default=200)
    ap.add_argument("--note", default="machine shared with other jobs")
    ap.add_argument("--out", default=os.path.join(RESULTS, "bench_peers"))
    args = ap.parse_args(argv)
    fams = set(args.families.split(","))
    pow2 = [16, 64, 256] + ([1024, 2048] if args.full else [])
    cute_sizes = [(s, s) for s in pow2] + [(3, 5), (12, 20), (48, 80)] + \
        ([(192, 320), (768, 1280), (1536, 2560)] if args.full else [])
    tilus_sizes = [(3, 5, 2, 4), (3, 5, 4, 8), (12, 10, 4, 8)] + \
        ([(48, 80, 8, 4), (96, 160, 16, 16)] if args.full else [])
    cases = []
    if "triton" in fams:
        cases += triton_cases(pow2)
    if "cute" in fams:
        cases += cute_cases(cute_sizes)
    if "tilus" in fams:
        cases += tilus_cases(tilus_sizes)
    rows = []
    for c in cases:
        r = run_case(c, args.budget, args.max_reps)
        rows.append(r)
        best = r["best_peer_s"]
        print(f"{r['family']:28s} {r['size']:>18s} {r['relation']:9s} {r['ours_verdict']:27s} "
              f"ours {r['ours_compare_s'] * 1e3:8.3f} ms text {r['ours_text_cold_s'] * 1e3:8.3f} ms  best peer "
              f"{'-' if best is None else f'{best * 1e3:8.3f} ms'}  " + ("MISMATCH " + "; ".join(r["mismatches"])
                                                                          if r["mismatches"] else ""), flush=True)
    meta = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "platform": platform.platform(),
            "python": platform.python_version(), "cpu_count": os.cpu_count(), "note": args.note,
            "full": args.full}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".json", "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    with open(args.out + ".md", "w") as f:
        f.write(markdown(rows, meta))
    print(f"wrote {args.out}.json and {args.out}.md")
    return 1 if any(r["mismatches"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
