"""Kernels in the style of the Triton tutorials, compiled on the CPU for the scan tests
(tests/test_scan_tutorials.py and tests/test_scan_gate.py).

``python scan_tutorials.py CACHE_DIR [TARGET ...]`` compiles every case of :func:`cases` for
every target (default :data:`TARGETS`) into the Triton cache ``CACHE_DIR`` and prints one JSON
line per case: ``{"case", "kernel", "target", "ok"}`` or ``"error"``. It imports only Triton and
the standard library, so it runs in the cached environment of every Triton release
(tests/triton_releases.py). No GPU is needed: ``triton.compile`` runs the whole pipeline to
PTX/cubin or AMDGCN/hsaco on the CPU.

The kernels are written for these tests (after the tutorials' structure, not copied):

* ``grouped_matmul``: tutorial 03's grouped tile order over ``GROUP_M`` rows of tiles, masked K
  loop, fp32 accumulator; fp16 and fp8 inputs (fp8e4nv, fp8e5 on sm_80), and five autotune
  configurations of the fp16 kernel;
* ``attention_fwd``: FlashAttention-2 forward (tutorial 06): online softmax over K/V blocks;
* ``layer_norm``: tutorial 05's forward pass, one row per program;
* ``persistent_matmul``: tutorial 09's persistent loop over tiles with device-side tensor
  descriptors (TMA on sm_90+; other targets lower them to pointers);
* ``grouped_gemm``: tutorial 08's GEMMs of several sizes from pointer arrays, one persistent grid;
* ``scaled_mm``: W8A8: int8 x int8 -> int32 with per-row and per-column fp32 scales;
* ``transpose_reduce``: a tile transposed and stored, and summed along its columns;
* ``rotary``: rotary position embedding of the two halves of each head.
"""
from __future__ import annotations

import json
import os
import sys

import triton
import triton.language as tl


@triton.jit
def grouped_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * tiles_n
    group = pid // in_group
    first_m = group * GROUP_M
    group_rows = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % in_group) % group_rows)
    pid_n = (pid % in_group) // group_rows
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, sm_scale, stride_s, HEAD: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD)
    q = tl.load(q_ptr + offs_m[:, None] * stride_s + offs_d[None, :])
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD), tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, seq_len, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + offs_n[None, :] * stride_s + offs_d[:, None])
        qk = tl.dot(q, k) * qk_scale
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + offs_n[:, None] * stride_s + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_s + offs_d[None, :], o.to(o_ptr.dtype.element_ty))


@triton.jit
def layer_norm(x_ptr, y_ptr, w_ptr, b_ptr, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    y = diff * rstd * w + b
    tl.store(y_ptr + row * stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, NUM_SMS: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, NUM_SMS):
        off_m = (tile // tiles_n) * BLOCK_M
        off_n = (tile % tiles_n) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = a_desc.load([off_m, k * BLOCK_K])
            b = b_desc.load([off_n, k * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([off_m, off_n], acc.to(tl.float16))


@triton.jit
def grouped_gemm(a_ptrs, b_ptrs, c_ptrs, sizes, lds, group_count, NUM_SMS: tl.constexpr,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    tile = tl.program_id(0)
    last = 0
    for g in range(group_count):
        m = tl.load(sizes + g * 3)
        n = tl.load(sizes + g * 3 + 1)
        k = tl.load(sizes + g * 3 + 2)
        tiles_n = tl.cdiv(n, BLOCK_N)
        count = tl.cdiv(m, BLOCK_M) * tiles_n
        while tile >= last and tile < last + count:
            lda = tl.load(lds + g * 3)
            ldb = tl.load(lds + g * 3 + 1)
            ldc = tl.load(lds + g * 3 + 2)
            a_ptr = tl.load(a_ptrs + g).to(tl.pointer_type(tl.float16))
            b_ptr = tl.load(b_ptrs + g).to(tl.pointer_type(tl.float16))
            c_ptr = tl.load(c_ptrs + g).to(tl.pointer_type(tl.float16))
            local = tile - last
            offs_m = (local // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
            offs_n = (local % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
            offs_k = tl.arange(0, BLOCK_K)
            a_tile = a_ptr + offs_m[:, None] * lda + offs_k[None, :]
            b_tile = b_ptr + offs_k[:, None] * ldb + offs_n[None, :]
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for kk in range(0, tl.cdiv(k, BLOCK_K)):
                acc += tl.dot(tl.load(a_tile), tl.load(b_tile))
                a_tile += BLOCK_K
                b_tile += BLOCK_K * ldb
            c_tile = c_ptr + offs_m[:, None] * ldc + offs_n[None, :]
            tl.store(c_tile, acc.to(tl.float16))
            tile += NUM_SMS
        last = last + count


@triton.jit
def scaled_mm(a_ptr, b_ptr, c_ptr, a_scale_ptr, b_scale_ptr, M, N, K, stride_am, stride_bk, stride_cm,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc, out_dtype=tl.int32)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    a_scale = tl.load(a_scale_ptr + offs_m)
    b_scale = tl.load(b_scale_ptr + offs_n)
    c = acc.to(tl.float32) * a_scale[:, None] * b_scale[None, :]
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], c.to(tl.float16))


@triton.jit
def transpose_reduce(x_ptr, y_ptr, s_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    tl.store(y_ptr + cols[:, None] * M + rows[None, :], tl.trans(x))
    tl.store(s_ptr + cols, tl.sum(x.to(tl.float32), axis=0))


@triton.jit
def rotary(x_ptr, cos_ptr, sin_ptr, out_ptr, seq_len, stride_s, HALF: tl.constexpr, BLOCK_S: tl.constexpr):
    offs_s = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, HALF)
    mask = offs_s[:, None] < seq_len
    x1 = tl.load(x_ptr + offs_s[:, None] * stride_s + offs_d[None, :], mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + offs_s[:, None] * stride_s + HALF + offs_d[None, :], mask=mask, other=0.0).to(tl.float32)
    cos = tl.load(cos_ptr + offs_s[:, None] * HALF + offs_d[None, :], mask=mask, other=1.0)
    sin = tl.load(sin_ptr + offs_s[:, None] * HALF + offs_d[None, :], mask=mask, other=0.0)
    o1 = x1 * cos - x2 * sin
    o2 = x2 * cos + x1 * sin
    out = out_ptr + offs_s[:, None] * stride_s + offs_d[None, :]
    tl.store(out, o1.to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(out + HALF, o2.to(out_ptr.dtype.element_ty), mask=mask)


#: name -> (backend, arch, warp size) as ``triton.backends.compiler.GPUTarget`` takes them
TARGETS = {"sm80": ("cuda", 80, 32), "sm90": ("cuda", 90, 32), "sm100": ("cuda", 100, 32),
           "gfx942": ("hip", "gfx942", 64), "gfx950": ("hip", "gfx950", 64)}
#: the fp8 type each target's dot takes (sm_80 has no e4m3 in Triton; CDNA3's dot takes OCP fp8 since 3.x)
FP8 = {"sm80": "fp8e5", "sm90": "fp8e4nv", "sm100": "fp8e4nv", "gfx942": "fp8e4nv", "gfx950": "fp8e4nv"}
#: arguments Triton specialises as multiples of 16 (as the JIT does for aligned pointers and strides)
D16 = [["tt.divisibility", 16]]
#: the autotune configurations of the fp16 grouped matmul: (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, warps, stages)
MATMUL_CONFIGS = [(128, 128, 32, 8, 8, 3), (64, 128, 32, 8, 4, 4), (128, 64, 32, 8, 4, 4), (64, 64, 32, 8, 4, 3),
                  (64, 32, 64, 8, 4, 2)]


def _aligned(*positions) -> dict:
    return {(p,): D16 for p in positions}


def cases(target: str) -> list[dict]:
    """Every compile case for ``target``: ``{"case", "fn", "signature", "constexprs", "attrs",
    "options"}``. Case names are stable; they name autotune configurations by their index."""
    out = []

    def add(case, fn, signature, constexprs, attrs=None, **options):
        sig = dict(signature, **{k: "constexpr" for k in constexprs})
        out.append({"case": case, "fn": fn, "signature": sig, "constexprs": constexprs, "attrs": attrs or {},
                    "options": options})

    mm_sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
              "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32", "stride_bn": "constexpr",
              "stride_cm": "i32", "stride_cn": "constexpr"}
    unit = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1}
    mm_attrs = _aligned(0, 1, 2, 3, 4, 5, 6, 8, 10)
    for i, (bm, bn, bk, gm, warps, stages) in enumerate(MATMUL_CONFIGS):
        add(f"grouped_matmul_fp16_cfg{i}", grouped_matmul, mm_sig,
            dict(unit, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm), mm_attrs, num_warps=warps, num_stages=stages)
    fp8 = "*" + FP8[target]
    add("grouped_matmul_fp8", grouped_matmul, dict(mm_sig, a_ptr=fp8, b_ptr=fp8),
        dict(unit, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8), mm_attrs, num_warps=8, num_stages=3)
    add("attention_fwd", attention_fwd,
        {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp16", "seq_len": "i32", "sm_scale": "fp32",
         "stride_s": "i32"}, {"HEAD": 64, "BLOCK_M": 128, "BLOCK_N": 64}, _aligned(0, 1, 2, 3, 4, 6),
        num_warps=4, num_stages=2)
    add("layer_norm", layer_norm, {"x_ptr": "*fp16", "y_ptr": "*fp16", "w_ptr": "*fp32", "b_ptr": "*fp32",
                                   "stride": "i32", "N": "i32", "eps": "fp32"},
        {"BLOCK_N": 1024}, _aligned(0, 1, 2, 3, 4, 5), num_warps=4)
    add("persistent_matmul", persistent_matmul, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32",
                                                 "N": "i32", "K": "i32"},
        {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "NUM_SMS": 132}, _aligned(0, 1, 2, 3, 4, 5),
        num_warps=8, num_stages=3)
    add("grouped_gemm", grouped_gemm, {"a_ptrs": "*i64", "b_ptrs": "*i64", "c_ptrs": "*i64", "sizes": "*i32",
                                       "lds": "*i32", "group_count": "i32"},
        {"NUM_SMS": 132, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, _aligned(0, 1, 2, 3, 4), num_warps=4,
        num_stages=2)
    add("scaled_mm", scaled_mm, {"a_ptr": "*i8", "b_ptr": "*i8", "c_ptr": "*fp16", "a_scale_ptr": "*fp32",
                                 "b_scale_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
                                 "stride_bk": "i32", "stride_cm": "i32"},
        {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, _aligned(0, 1, 2, 3, 4, 8, 9, 10), num_warps=8, num_stages=3)
    add("transpose_reduce", transpose_reduce, {"x_ptr": "*fp16", "y_ptr": "*fp16", "s_ptr": "*fp32"},
        {"M": 64, "N": 128}, _aligned(0, 1, 2), num_warps=4)
    add("rotary", rotary, {"x_ptr": "*fp16", "cos_ptr": "*fp32", "sin_ptr": "*fp32", "out_ptr": "*fp16",
                           "seq_len": "i32", "stride_s": "i32"}, {"HALF": 64, "BLOCK_S": 32},
        _aligned(0, 1, 2, 3, 5), num_warps=4)
    return out


def compile_case(case: dict, target: str) -> None:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    backend, arch, warp = TARGETS[target]
    src = ASTSource(case["fn"], case["signature"], constexprs=case["constexprs"], attrs=case["attrs"])
    triton.compile(src, target=GPUTarget(backend, arch, warp), options=case["options"])


def compile_all(targets=None, only=None) -> list[dict]:
    rows = []
    for target in targets or TARGETS:
        for case in cases(target):
            if only and case["case"] not in only:
                continue
            row = {"case": case["case"], "kernel": case["fn"].__name__, "target": target}
            try:
                compile_case(case, target)
                row["ok"] = True
            except Exception as e:  # reported to the test, which decides
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
            rows.append(row)
    return rows


def recompile(ttgir: str, target: str, num_stages: int) -> None:
    """Compile a (possibly edited) TTGIR module for ``target`` from the TTGIR stage on: what the
    gate tests do to modules worsened on purpose. ``num_stages`` keeps the identity the original
    compilation's metadata records."""
    from triton.backends.compiler import GPUTarget
    backend, arch, warp = TARGETS[target]
    triton.compile(ttgir, target=GPUTarget(backend, arch, warp), options={"num_stages": num_stages})


if __name__ == "__main__":
    # python scan_tutorials.py CACHE [TARGET ...]          every case for the targets
    # python scan_tutorials.py CACHE --only CASE,... [TARGET ...]
    # python scan_tutorials.py CACHE --ttgir FILE TARGET STAGES   one TTGIR module recompiled
    os.environ["TRITON_CACHE_DIR"] = sys.argv[1]
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    if len(sys.argv) > 2 and sys.argv[2] == "--ttgir":
        try:
            recompile(sys.argv[3], sys.argv[4], int(sys.argv[5]))
            print(json.dumps({"ttgir": sys.argv[3], "ok": True}), flush=True)
        except Exception as e:
            print(json.dumps({"ttgir": sys.argv[3], "error": f"{type(e).__name__}: {str(e)[:300]}"}), flush=True)
    else:
        args = sys.argv[2:]
        only = None
        if args[:1] == ["--only"]:   # --only CASE,CASE TARGET ...
            only, args = set(args[1].split(",")), args[2:]
        for r in compile_all(args or None, only):
            print(json.dumps(r), flush=True)
