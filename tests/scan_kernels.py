"""Real Triton kernels compiled on the CPU for the scan tests (tests/test_scan.py).

``python scan_kernels.py CACHE_DIR`` compiles every kernel of :data:`KERNELS` for every target
of :data:`TARGETS` into the Triton cache ``CACHE_DIR`` (``TRITON_CACHE_DIR``) and prints one
JSON line per (kernel, target): ``{"kernel", "target", "ok"}`` or ``"error"``. No GPU is needed:
``triton.compile`` runs the whole pipeline down to PTX/cubin (ptxas ships with Triton) or
AMDGCN/hsaco (LLVM's AMDGPU backend inside Triton).
"""
from __future__ import annotations

import json
import os
import sys

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, K: tl.constexpr, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
           BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    c = acc.to(tl.float16)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@triton.jit
def softmax(x_ptr, y_ptr, N: tl.constexpr, BM: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    m = tl.max(x, axis=1)
    e = tl.exp(x - m[:, None])
    s = tl.sum(e, axis=1)
    y = e / s[:, None]
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], y)


@triton.jit
def transpose(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M)
    c = tl.arange(0, N)
    x = tl.load(x_ptr + r[:, None] * N + c[None, :])
    t = tl.trans(x)
    tl.store(y_ptr + c[:, None] * M + r[None, :], t)


@triton.jit
def reduction(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M)
    c = tl.arange(0, N)
    x = tl.load(x_ptr + r[:, None] * N + c[None, :])
    s = tl.sum(x, axis=0)
    tl.store(y_ptr + c, s)


@triton.jit
def attention(q_ptr, k_ptr, v_ptr, o_ptr, L: tl.constexpr, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    m_i = tl.full((BM,), float("-inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    for start in range(0, L, BN):
        rn = start + tl.arange(0, BN)
        k = tl.load(k_ptr + rn[None, :] * D + rd[:, None])
        qk = tl.dot(q, k)
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], o.to(tl.float16))


F16 = "*fp16"
F32 = "*fp32"
#: name -> (kernel, signature, constexprs, num_warps)
KERNELS = {
    "matmul": (matmul, {"a_ptr": F16, "b_ptr": F16, "c_ptr": F16}, {"K": 128, "N": 64, "BM": 64, "BN": 64, "BK": 32}, 4),
    "softmax": (softmax, {"x_ptr": F32, "y_ptr": F32}, {"N": 128, "BM": 4}, 4),
    "transpose": (transpose, {"x_ptr": F16, "y_ptr": F16}, {"M": 64, "N": 64}, 4),
    "reduction": (reduction, {"x_ptr": F32, "y_ptr": F32}, {"M": 64, "N": 32}, 4),
    "attention": (attention, {"q_ptr": F16, "k_ptr": F16, "v_ptr": F16, "o_ptr": F16},
                  {"L": 128, "D": 64, "BM": 64, "BN": 32}, 4),
}
TARGETS = {"sm90": ("cuda", 90, 32), "sm100": ("cuda", 100, 32), "gfx942": ("hip", "gfx942", 64)}


def compile_all(names=None, targets=None) -> list[dict]:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    out = []
    for tname in targets or TARGETS:
        backend, arch, warp = TARGETS[tname]
        for name in names or KERNELS:
            fn, sig, consts, warps = KERNELS[name]
            signature = dict(sig, **{k: "constexpr" for k in consts})
            try:
                triton.compile(ASTSource(fn, signature, constexprs=consts, attrs=ATTRS.get(name)),
                               target=GPUTarget(backend, arch, warp),
                               options={"num_warps": warps, **OPTIONS.get(name, {})})
                out.append({"kernel": name, "target": tname, "ok": True})
            except Exception as e:  # reported to the test, which fails on it
                out.append({"kernel": name, "target": tname, "error": f"{type(e).__name__}: {str(e)[:300]}"})
    return out



# ---------------------------------------------------------------------------------------------
# Gluon kernels with an explicit conversion between two linear layouts (32 x 16 tensor, 4 warps):
# one register<->lane exchange (Triton shuffles), two (Triton goes through shared memory although
# shuffles suffice: the ">= 2 register<->lane exchanges" rule of tests/test_conversion_ptx.py).
LINEAR_A = {"reg": [[0, 1], [0, 2]], "lane": [[0, 4], [0, 8], [1, 0], [2, 0], [4, 0]], "warp": [[8, 0], [16, 0]]}
LINEAR_ONE_SWAP = {"reg": [[0, 4], [0, 2]], "lane": [[0, 1], [0, 8], [1, 0], [2, 0], [4, 0]], "warp": [[8, 0], [16, 0]]}
LINEAR_TWO_SWAPS = {"reg": [[0, 4], [0, 8]], "lane": [[0, 1], [0, 2], [1, 0], [2, 0], [4, 0]], "warp": [[8, 0], [16, 0]]}


@gluon.jit
def _convert_tile(in_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr, A: gl.constexpr, B: gl.constexpr):
    ra = gl.arange(0, M, layout=gl.SliceLayout(1, A))
    ca = gl.arange(0, N, layout=gl.SliceLayout(0, A))
    x = gl.load(in_ptr + ra[:, None] * N + ca[None, :])
    y = gl.convert_layout(x, B)
    rb = gl.arange(0, M, layout=gl.SliceLayout(1, B))
    cb = gl.arange(0, N, layout=gl.SliceLayout(0, B))
    gl.store(out_ptr + rb[:, None] * N + cb[None, :], y)

@gluon.jit
def cvt_one_swap(in_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr, A: gl.constexpr, B: gl.constexpr):
    _convert_tile(in_ptr, out_ptr, M, N, A, B)

@gluon.jit
def cvt_two_swaps(in_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr, A: gl.constexpr, B: gl.constexpr):
    _convert_tile(in_ptr, out_ptr, M, N, A, B)


#: the Gluon kernels' layouts have 32 lanes: NVIDIA targets only
GLUON_TARGETS = ("sm90", "sm100")


def compile_gluon(targets=None) -> list[dict]:
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    out = []
    shape = [32, 16]

    def lin(d):
        return gl.DistributedLinearLayout(d["reg"], d["lane"], d["warp"], [], shape)

    for tname in targets or GLUON_TARGETS:
        backend, arch, warp = TARGETS[tname]
        for name, fn, b in (("cvt_one_swap", cvt_one_swap, LINEAR_ONE_SWAP),
                            ("cvt_two_swaps", cvt_two_swaps, LINEAR_TWO_SWAPS)):
            consts = {"M": 32, "N": 16, "A": lin(LINEAR_A), "B": lin(b)}
            sig = {"in_ptr": F32, "out_ptr": F32, **{k: "constexpr" for k in consts}}
            try:
                src = GluonASTSource(fn, sig, constexprs=consts)
                triton.compile(src, target=GPUTarget(backend, arch, warp), options={"num_warps": 4})
                out.append({"kernel": name, "target": tname, "ok": True})
            except Exception as e:
                out.append({"kernel": name, "target": tname, "error": f"{type(e).__name__}: {str(e)[:300]}"})
    return out



# A matmul whose K loop Triton pipelines (a runtime trip count and 16-byte aligned pointers):
# cp.async copies into multi-buffered shared memory (ttg.async_copy_global_to_local,
# memdesc_index views). Defined last so the line numbers above stay put.
@triton.jit
def matmul_pipelined(a_ptr, b_ptr, c_ptr, K, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


KERNELS["matmul_pipelined"] = (matmul_pipelined, {"a_ptr": F16, "b_ptr": F16, "c_ptr": F16, "K": "i32"},
                               {"N": 64, "BM": 64, "BN": 64, "BK": 32}, 4)
#: pointer / integer arguments known to be multiples of 16 (Triton's specialisation), by position
ATTRS = {"matmul_pipelined": {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]],
                              (2,): [["tt.divisibility", 16]], (3,): [["tt.divisibility", 16]]}}
OPTIONS = {"matmul_pipelined": {"num_stages": 3}}

if __name__ == "__main__":
    # python scan_kernels.py CACHE_DIR [KERNEL:TARGET]  (the second form compiles one Triton kernel)
    os.environ["TRITON_CACHE_DIR"] = sys.argv[1]
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    if len(sys.argv) > 2:
        kname, tname = sys.argv[2].split(":")
        results = compile_all([kname], [tname])
    else:
        results = compile_all() + compile_gluon()
    for r in results:
        print(json.dumps(r), flush=True)
