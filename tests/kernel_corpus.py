"""Tutorial-style Triton kernels compiled on the CPU for the whole-kernel validation tests
(``tests/test_validate_kernels.py``), the benchmark (``benchmarks/bench_validate_kernels.py``) and
the docs (``docs/guides/validate-kernels.md``).

``python kernel_corpus.py OUT_DIR [NAME:ARCH ...]`` compiles the named kernels (default: all, for
every architecture they list) into the Triton cache ``OUT_DIR`` (``TRITON_CACHE_DIR``: Triton keys
its cache by source, options and its own version, so a second run is a cache hit) and prints one
JSON line per kernel: ``{"kernel", "arch", "dir"}`` (the cache folder holding TTIR, PTX and
metadata) or ``{"kernel", "arch", "error"}``. It imports only Triton and the standard library, so
any Triton release's interpreter can run it (``tests/triton_releases.py``).

The kernels follow the Triton tutorials (matmul with a k-loop and grouped program ids, layer norm,
fused attention forward, persistent matmul with tensor descriptors, softmax, transpose and a
reduction); they were written for this corpus. :data:`LAUNCH` gives the scalar arguments and grid
each kernel is validated with: small sizes, chosen so that masks cut tiles and loops run more than
one iteration.
"""
from __future__ import annotations

import json
import os
import sys

import triton
import triton.language as tl


# -------------------------------------------------------------------------------------------------
# layer norm forward (tutorial 05): one row per program, loops over the columns
@triton.jit
def layer_norm(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        acc += x
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        d = tl.where(cols < N, x - mean, 0.)
        acc += d * d
    var = tl.sum(acc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(Y + cols, y, mask=mask)


# -------------------------------------------------------------------------------------------------
# matmul (tutorial 03): grouped program ids, a k-loop with a masked tail, fp32 accumulation
@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BM + tl.arange(0, BM)) % M
    offs_bn = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    c = acc.to(tl.float16)
    offs_cm = pid_m * BM + tl.arange(0, BM)
    offs_cn = pid_n * BN + tl.arange(0, BN)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


# -------------------------------------------------------------------------------------------------
# fused attention forward (tutorial 06, non-causal): online softmax in base 2
@triton.jit
def attention(Q, K, V, Out, sm_scale, stride_m, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
              BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + offs_m[:, None] * stride_m + offs_d[None, :])
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.full([BLOCK_M], 1.0, dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, N_CTX, BLOCK_N):
        kt = tl.load(K + (start_n + offs_n)[None, :] * stride_m + offs_d[:, None])
        qk = tl.dot(q, kt)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(V + (start_n + offs_n)[:, None] * stride_m + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + offs_m[:, None] * stride_m + offs_d[None, :], acc.to(tl.float16))


# -------------------------------------------------------------------------------------------------
# persistent matmul with device-side tensor descriptors (tutorial 09)
@triton.jit
def matmul_tma_persistent(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    num_tiles = num_pid_m * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, tl.num_programs(0), flatten=False):
        pid_m = tile_id // num_pid_n
        pid_n = tile_id % num_pid_n
        offs_am = pid_m * BM
        offs_bn = pid_n * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BK
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([offs_am, offs_bn], acc.to(tl.float16))


# persistent matmul with host-side tensor descriptors passed by value (tutorial 09)
@triton.jit
def matmul_tma_host(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    num_tiles = num_pid_m * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, tl.num_programs(0), flatten=False):
        pid_m = tile_id // num_pid_n
        pid_n = tile_id % num_pid_n
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([pid_m * BM, ki * BK])
            b = b_desc.load([pid_n * BN, ki * BK])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))


# -------------------------------------------------------------------------------------------------
# grouped GEMM (tutorial 08): pointer arrays, per-group sizes, a while loop over tiles
@triton.jit
def grouped_matmul(group_a_ptrs, group_b_ptrs, group_c_ptrs, group_gemm_sizes, g_lds, group_size,
                   NUM_SM: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    tile_idx = tl.program_id(0)
    last_problem_end = 0
    for g in range(group_size):
        gm = tl.load(group_gemm_sizes + g * 3)
        gn = tl.load(group_gemm_sizes + g * 3 + 1)
        gk = tl.load(group_gemm_sizes + g * 3 + 2)
        num_m_tiles = tl.cdiv(gm, BM)
        num_n_tiles = tl.cdiv(gn, BN)
        num_tiles = num_m_tiles * num_n_tiles
        while tile_idx >= last_problem_end and tile_idx < last_problem_end + num_tiles:
            lda = tl.load(g_lds + g * 3)
            ldb = tl.load(g_lds + g * 3 + 1)
            ldc = tl.load(g_lds + g * 3 + 2)
            a_ptr = tl.load(group_a_ptrs + g).to(tl.pointer_type(tl.float16))
            b_ptr = tl.load(group_b_ptrs + g).to(tl.pointer_type(tl.float16))
            c_ptr = tl.load(group_c_ptrs + g).to(tl.pointer_type(tl.float16))
            tile_in_gemm = tile_idx - last_problem_end
            tile_m = tile_in_gemm // num_n_tiles
            tile_n = tile_in_gemm % num_n_tiles
            offs_am = tile_m * BM + tl.arange(0, BM)
            offs_bn = tile_n * BN + tl.arange(0, BN)
            offs_k = tl.arange(0, BK)
            a_ptrs = a_ptr + offs_am[:, None] * lda + offs_k[None, :]
            b_ptrs = b_ptr + offs_k[:, None] * ldb + offs_bn[None, :]
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for kk in range(0, tl.cdiv(gk, BK)):
                acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
                a_ptrs += BK
                b_ptrs += BK * ldb
            offs_cm = tile_m * BM + tl.arange(0, BM)
            offs_cn = tile_n * BN + tl.arange(0, BN)
            tl.store(c_ptr + ldc * offs_cm[:, None] + offs_cn[None, :], acc.to(tl.float16))
            tile_idx += NUM_SM
        last_problem_end = last_problem_end + num_tiles


# -------------------------------------------------------------------------------------------------
# fp8 matmul with per-tensor scales (sm_90): e4m3 operands, fp32 accumulation, fp16 result
@triton.jit
def matmul_fp8_scaled(a_ptr, b_ptr, c_ptr, scale_a, scale_b, K, BM: tl.constexpr, BN: tl.constexpr,
                      BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[None, :] + rn[:, None] * K)
        acc = tl.dot(a, b.T, acc)
    acc = acc * (tl.load(scale_a) * tl.load(scale_b))
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc.to(tl.float16))


# -------------------------------------------------------------------------------------------------
# softmax (tutorial 02), transpose and a column reduction
@triton.jit
def softmax(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    y = num / tl.sum(num, axis=0)
    tl.store(y_ptr + row * stride + cols, y, mask=cols < n_cols)


@triton.jit
def transpose(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M)
    c = tl.arange(0, N)
    x = tl.load(x_ptr + r[:, None] * N + c[None, :])
    tl.store(y_ptr + c[:, None] * M + r[None, :], tl.trans(x))


@triton.jit
def column_sum(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M)
    c = tl.arange(0, N)
    x = tl.load(x_ptr + r[:, None] * N + c[None, :])
    tl.store(y_ptr + tl.program_id(0) * N + c, tl.sum(x, axis=0))


F16, F32, F8 = "*fp16", "*fp32", "*fp8e4nv"
D16 = [["tt.divisibility", 16]]


def _div16(*positions):
    return {(p,): D16 for p in positions}


#: name -> dict(fn, signature, constexprs, attrs (divisible-by-16 argument positions), options, archs)
KERNELS = {
    "layer_norm": dict(fn=layer_norm, sig={"X": F16, "Y": F16, "W": F16, "B": F16, "Mean": F32, "Rstd": F32,
                                           "stride": "i32", "N": "i32", "eps": "fp32"},
                       consts={"BLOCK": 128}, attrs=_div16(0, 1, 2, 3, 4, 5), options={"num_warps": 4},
                       archs=(80, 90)),
    "matmul": dict(fn=matmul, sig={"a_ptr": F16, "b_ptr": F16, "c_ptr": F16, "M": "i32", "N": "i32", "K": "i32",
                                   "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
                                   "stride_cm": "i32", "stride_cn": "i32"},
                   consts={"BM": 64, "BN": 64, "BK": 32, "GROUP_M": 8, "stride_ak": 1, "stride_bn": 1,
                           "stride_cn": 1},
                   attrs=_div16(0, 1, 2, 3, 4, 5, 6, 8, 10), options={"num_warps": 4, "num_stages": 3},
                   archs=(80, 90)),
    "matmul_128": dict(fn=matmul, sig={"a_ptr": F16, "b_ptr": F16, "c_ptr": F16, "M": "i32", "N": "i32",
                                       "K": "i32", "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32",
                                       "stride_bn": "i32", "stride_cm": "i32", "stride_cn": "i32"},
                       consts={"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "stride_ak": 1, "stride_bn": 1,
                               "stride_cn": 1},
                       attrs=_div16(0, 1, 2, 3, 4, 5, 6, 8, 10), options={"num_warps": 8, "num_stages": 2},
                       archs=(80, 90)),
    "matmul_m16": dict(fn=matmul, sig={"a_ptr": F16, "b_ptr": F16, "c_ptr": F16, "M": "i32", "N": "i32", "K": "i32",
                                       "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
                                       "stride_cm": "i32", "stride_cn": "i32"},
                       consts={"BM": 16, "BN": 64, "BK": 32, "GROUP_M": 8, "stride_ak": 1, "stride_bn": 1,
                               "stride_cn": 1},
                       attrs=_div16(0, 1, 2, 3, 4, 5, 6, 8, 10), options={"num_warps": 4, "num_stages": 3},
                       archs=(80, 90)),
    "attention": dict(fn=attention, sig={"Q": F16, "K": F16, "V": F16, "Out": F16, "sm_scale": "fp32",
                                         "stride_m": "i32", "N_CTX": "i32"},
                      consts={"HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 32}, attrs=_div16(0, 1, 2, 3, 5, 6),
                      options={"num_warps": 4, "num_stages": 2}, archs=(80, 90)),
    "matmul_tma_persistent": dict(fn=matmul_tma_persistent, sig={"a_ptr": F16, "b_ptr": F16, "c_ptr": F16,
                                                                 "M": "i32", "N": "i32", "K": "i32"},
                                  consts={"BM": 64, "BN": 64, "BK": 32}, attrs=_div16(0, 1, 2, 3, 4, 5),
                                  options={"num_warps": 4, "num_stages": 3}, archs=(90,)),
    "matmul_tma_host": dict(fn=matmul_tma_host, sig={"a_desc": "tensordesc<fp16[64, 32]>",
                                                     "b_desc": "tensordesc<fp16[64, 32]>",
                                                     "c_desc": "tensordesc<fp16[64, 64]>", "M": "i32", "N": "i32",
                                                     "K": "i32"},
                            consts={"BM": 64, "BN": 64, "BK": 32}, attrs=_div16(3, 4, 5),
                            options={"num_warps": 4, "num_stages": 3}, archs=(90,)),
    "grouped_matmul": dict(fn=grouped_matmul, sig={"group_a_ptrs": "*i64", "group_b_ptrs": "*i64",
                                                   "group_c_ptrs": "*i64", "group_gemm_sizes": "*i32",
                                                   "g_lds": "*i32", "group_size": "i32"},
                           consts={"NUM_SM": 4, "BM": 64, "BN": 64, "BK": 32}, attrs=_div16(0, 1, 2, 3, 4),
                           options={"num_warps": 4, "num_stages": 3}, archs=(80, 90)),
    "matmul_fp8_scaled": dict(fn=matmul_fp8_scaled, sig={"a_ptr": F8, "b_ptr": F8, "c_ptr": F16,
                                                         "scale_a": F32, "scale_b": F32, "K": "i32"},
                              consts={"BM": 64, "BN": 64, "BK": 64}, attrs=_div16(0, 1, 2, 5),
                              options={"num_warps": 4, "num_stages": 3}, archs=(90,)),
    "softmax": dict(fn=softmax, sig={"x_ptr": F32, "y_ptr": F32, "n_cols": "i32", "stride": "i32"},
                    consts={"BLOCK": 256}, attrs=_div16(0, 1, 3), options={"num_warps": 4}, archs=(80, 90)),
    "transpose": dict(fn=transpose, sig={"x_ptr": F16, "y_ptr": F16}, consts={"M": 64, "N": 32},
                      attrs=_div16(0, 1), options={"num_warps": 4}, archs=(80, 90)),
    "column_sum": dict(fn=column_sum, sig={"x_ptr": F32, "y_ptr": F32}, consts={"M": 64, "N": 32},
                       attrs=_div16(0, 1), options={"num_warps": 4}, archs=(80, 90)),
}

#: name -> launch: integer scalar arguments by name, the grid (x, y, z) and the program ids to run
LAUNCH = {
    "layer_norm": {"args": {"stride": 320, "N": 300}, "grid": [4, 1, 1], "pids": [[0, 0, 0], [2, 0, 0]],
                   "views": {"X": [4, 320], "Y": [4, 320]}},
    "matmul": {"args": {"M": 96, "N": 128, "K": 144, "stride_am": 144, "stride_bk": 128, "stride_cm": 128},
               "grid": [4, 1, 1], "pids": [[0, 0, 0], [3, 0, 0]],
               "views": {"a_ptr": [96, 144], "b_ptr": [144, 128], "c_ptr": [96, 128]}},
    "matmul_128": {"args": {"M": 128, "N": 128, "K": 64, "stride_am": 64, "stride_bk": 128, "stride_cm": 128},
                   "grid": [1, 1, 1], "pids": [[0, 0, 0]],
                   "views": {"a_ptr": [128, 64], "b_ptr": [64, 128], "c_ptr": [128, 128]}},
    "matmul_m16": {"args": {"M": 48, "N": 64, "K": 80, "stride_am": 80, "stride_bk": 64, "stride_cm": 64},
                   "grid": [3, 1, 1], "pids": [[0, 0, 0], [2, 0, 0]],
                   "views": {"a_ptr": [48, 80], "b_ptr": [80, 64], "c_ptr": [48, 64]}},
    "attention": {"args": {"stride_m": 64, "N_CTX": 96}, "grid": [2, 1, 1], "pids": [[0, 0, 0], [1, 0, 0]],
                  "views": {"Q": [128, 64], "K": [96, 64], "V": [96, 64], "Out": [128, 64]}},
    "matmul_tma_persistent": {"args": {"M": 128, "N": 128, "K": 96}, "grid": [2, 1, 1],
                              "pids": [[0, 0, 0], [1, 0, 0]],
                              "views": {"a_ptr": [128, 96], "b_ptr": [128, 96], "c_ptr": [128, 128]}},
    "matmul_tma_host": {"args": {"M": 112, "N": 80, "K": 80}, "grid": [2, 1, 1], "pids": [[0, 0, 0], [1, 0, 0]],
                        "descriptors": {"a_desc": {"shape": [112, 80]}, "b_desc": {"shape": [80, 80]},
                                        "c_desc": {"shape": [112, 80]}}},
    "grouped_matmul": {
        "args": {"group_size": 2}, "grid": [4, 1, 1], "pids": [[0, 0, 0], [3, 0, 0]],
        "symbols": {"A0": {"dtype": "f16", "shape": [64, 64]}, "B0": {"dtype": "f16", "shape": [64, 128]},
                    "C0": {"dtype": "f16", "shape": [64, 128]}, "A1": {"dtype": "f16", "shape": [128, 32]},
                    "B1": {"dtype": "f16", "shape": [32, 64]}, "C1": {"dtype": "f16", "shape": [128, 64]}},
        "buffers": {"group_a_ptrs": {"pointers": ["A0", "A1"]}, "group_b_ptrs": {"pointers": ["B0", "B1"]},
                    "group_c_ptrs": {"pointers": ["C0", "C1"]},
                    "group_gemm_sizes": {"i32": [64, 128, 64, 128, 64, 32]},
                    "g_lds": {"i32": [64, 128, 128, 32, 64, 64]}}},
    "matmul_fp8_scaled": {"args": {"K": 128}, "grid": [2, 1, 1], "pids": [[0, 0, 0], [1, 0, 0]]},
    "softmax": {"args": {"n_cols": 200, "stride": 208}, "grid": [3, 1, 1], "pids": [[0, 0, 0], [2, 0, 0]]},
    "transpose": {"args": {}, "grid": [1, 1, 1], "pids": [[0, 0, 0]]},
    "column_sum": {"args": {}, "grid": [2, 1, 1], "pids": [[0, 0, 0], [1, 0, 0]]},
}


#: launches for the GPU tests (``tests/test_gpu_kernel_models.py``): every program of the grid is
#: modelled, every buffer has a view (its size), and tiles are cut by the tensors' edges (masks, TMA
#: out-of-bounds fill)
GPU_LAUNCH = {
    "layer_norm": dict(LAUNCH["layer_norm"], pids=[[p, 0, 0] for p in range(4)],
                       views={"X": [4, 320], "Y": [4, 320], "W": [320], "B": [320], "Mean": [4], "Rstd": [4]}),
    "matmul": dict(LAUNCH["matmul"], grid=[4, 1, 1], pids=[[p, 0, 0] for p in range(4)]),
    "matmul_m16": dict(LAUNCH["matmul_m16"], pids=[[p, 0, 0] for p in range(3)]),
    "attention": LAUNCH["attention"],
    "matmul_tma_persistent": {"args": {"M": 112, "N": 80, "K": 80}, "grid": [2, 1, 1],
                              "pids": [[0, 0, 0], [1, 0, 0]],
                              "views": {"a_ptr": [112, 80], "b_ptr": [80, 80], "c_ptr": [112, 80]}},
    "matmul_tma_host": LAUNCH["matmul_tma_host"],
    "matmul_fp8_scaled": dict(LAUNCH["matmul_fp8_scaled"], views={"a_ptr": [128, 128], "b_ptr": [64, 128],
                                                                  "c_ptr": [128, 64], "scale_a": [1],
                                                                  "scale_b": [1]}),
    "softmax": dict(LAUNCH["softmax"], pids=[[p, 0, 0] for p in range(3)],
                    views={"x_ptr": [3, 208], "y_ptr": [3, 208]}),
    "transpose": dict(LAUNCH["transpose"], views={"x_ptr": [64, 32], "y_ptr": [32, 64]}),
    "column_sum": dict(LAUNCH["column_sum"], views={"x_ptr": [64, 32], "y_ptr": [2, 32]}),
}


def positional_launch(name: str) -> dict:
    """:data:`LAUNCH` of ``name`` with its arguments also keyed by position (``#i``, the argument's
    index among the non-constexpr ones): TTIR before Triton 3.4 names its arguments ``%argN``."""
    spec = KERNELS[name]
    order = [a for a in spec["sig"] if a not in spec["consts"]]
    launch = dict(LAUNCH[name])
    launch["args"] = {**LAUNCH[name]["args"], **{f"#{order.index(k)}": v for k, v in LAUNCH[name]["args"].items()}}
    views = {}
    for k, v in LAUNCH[name].get("views", {}).items():
        views[k] = v
        views[f"arg{order.index(k)}"] = v
    launch["views"] = views
    if "buffers" in LAUNCH[name]:
        launch["buffers"] = {**LAUNCH[name]["buffers"],
                             **{f"arg{order.index(k)}": v for k, v in LAUNCH[name]["buffers"].items()}}
    return launch


def _signature(spec):
    sig = dict(spec["sig"])
    for k in spec["consts"]:
        sig[k] = "constexpr"
    return sig


def compile_one(name: str, arch: int):
    """Compile ``name`` for ``sm_<arch>``; returns the compiled kernel (its ``asm`` and ``metadata``)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    spec = KERNELS[name]
    consts = dict(spec["consts"])
    src = ASTSource(spec["fn"], _signature(spec), constexprs=consts, attrs=spec["attrs"])
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options=dict(spec["options"]))


def _cache_dir_of(kernel) -> str | None:
    """The Triton cache folder that holds ``kernel``'s files."""
    try:
        from triton.runtime.cache import get_cache_manager
        return get_cache_manager(kernel.hash).cache_dir
    except Exception:
        return None


def main(argv) -> int:
    out = argv[1]
    os.environ["TRITON_CACHE_DIR"] = out
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    todo = []
    for item in argv[2:] or [f"{n}:{a}" for n, s in KERNELS.items() for a in s["archs"]]:
        name, _, arch = item.partition(":")
        archs = [int(arch)] if arch else KERNELS[name]["archs"]
        todo += [(name, a) for a in archs]
    for name, arch in todo:
        try:
            k = compile_one(name, arch)
            print(json.dumps({"kernel": name, "arch": arch, "dir": _cache_dir_of(k), "triton": triton.__version__}),
                  flush=True)
        except Exception as e:  # reported to the caller, which fails or skips on it
            print(json.dumps({"kernel": name, "arch": arch, "error": f"{type(e).__name__}: {str(e)[:400]}"}),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
