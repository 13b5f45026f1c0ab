"""On a GPU: the hardware models of the kernel validator agree with the hardware.

The validator models what the ISA text alone does not pin down: how ``wgmma`` reads its
shared-memory descriptors (canonical layouts, the swizzle on the byte address), where a TMA box
lands in shared memory and what fills it out of bounds, which element each register of an
``mma.sync`` / ``ldmatrix`` fragment holds. Here each corpus kernel (``tests/kernel_corpus.py``) is
compiled by the installed Triton for this GPU, run on inputs whose every element is a multiple of
1/8 in [-1, 1] (so that every product and partial sum is exact in fp32), and its outputs are compared
with the values the validator's PTX machine computes from the *same PTX* on the same inputs
(:func:`layoutverify.apps.kernels.validate.model_stores`): equal for the matrix products, within
1e-3 where the kernel uses approximate instructions (``ex2.approx``, ``div.full``).

Skipped without a GPU (CI has none). Run on an H100/H200 with
``benchmarks/device/validate_kernels_gpu.sh``.
"""
from __future__ import annotations

import numpy as np
import pytest

from kernel_corpus import GPU_LAUNCH, KERNELS, compile_one

pytestmark = pytest.mark.gpu

#: kernel -> the hardware model it exercises on sm_90
MODELS = {
    "matmul": "wgmma: descriptors (64B/128B swizzle, K- and MN-major), cp.async",
    "matmul_m16": "mma.sync m16n8k16 and ldmatrix fragments",
    "attention": "wgmma with A in registers, the D fragment",
    "matmul_tma_persistent": "TMA box writes (swizzled), out-of-bounds zero fill, TMA store clipping",
    "matmul_fp8_scaled": "wgmma e4m3 K-major descriptors",
    "matmul_tma_host": "tensor maps passed by value (TensorDescriptor), TMA out-of-bounds fill",
    "layer_norm": "reductions through shuffles and shared memory",
    "softmax": "reductions, ex2.approx",
    "transpose": "ldmatrix.trans / shared-memory transposes",
    "column_sum": "reductions across warps",
}
EXACT = {"matmul", "matmul_m16", "matmul_tma_persistent", "matmul_tma_host", "matmul_fp8_scaled", "transpose",
         "column_sum"}


def _torch_dtype(torch, elem: str):
    return {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "e4m3": torch.float8_e4m3fn,
            "e5m2": torch.float8_e5m2}[elem]


def _plain(x):
    """Triton's metadata value as the cache's JSON holds it (named tuples as dicts, tuples as lists)."""
    if hasattr(x, "_asdict"):
        return {k: _plain(v) for k, v in x._asdict().items()}
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def triton_release() -> str:
    import triton
    return triton.__version__


def _arch():
    import torch
    major, minor = torch.cuda.get_device_capability()
    return 10 * major + minor


@pytest.mark.parametrize("name", list(MODELS))
def test_the_gpu_computes_what_the_model_says(name):
    import torch

    from layoutverify.apps.kernels import terms as T
    from layoutverify.apps.kernels.match import leaf_values
    from layoutverify.apps.kernels.ttir import parse_ttir, parse_type
    from layoutverify.apps.kernels.validate import Launch, model_stores
    arch = _arch()
    if arch not in KERNELS[name]["archs"] and arch // 10 != 9:
        pytest.skip(f"{name} is compiled for sm_{KERNELS[name]['archs']}, this GPU is sm_{arch}")
    if arch < 90 and name in ("matmul_tma_persistent", "matmul_tma_host", "matmul_fp8_scaled"):
        pytest.skip("needs sm_90")
    kernel = compile_one(name, 90 if arch >= 90 else arch)
    ttir, ptx = kernel.asm["ttir"], kernel.asm["ptx"]
    meta = {k: _plain(getattr(kernel.metadata, k, None))
            for k in ("num_warps", "warp_size", "global_scratch_size", "profile_scratch_size", "triton_version",
                      "tensordesc_meta")}
    if name == "matmul_tma_host" and not getattr(kernel.metadata, "tensordesc_meta", None):
        pytest.skip(f"Triton {triton_release()} records no tensor-map layout (tensordesc_meta) for host "
                    f"descriptors: the validator calls such kernels unsupported (GPU check needs Triton 3.7+)")
    launch_json = GPU_LAUNCH[name]
    launch = Launch.from_json(launch_json)
    predicted = model_stores(ttir, ptx, meta, launch)
    predicted.pop("__inputs__")
    fn = parse_ttir(ttir)
    spec = KERNELS[name]
    values, buffers, region = {}, {}, 0
    from layoutverify.apps.kernels.validate import descriptor_arguments
    owned = {a for v in descriptor_arguments(fn.arg_names, fn.arg_types).values() for a in v}
    for arg_name, ty in zip(fn.arg_names, fn.arg_types):
        if arg_name in owned:                   # a host descriptor's shape and strides: the launcher's
            continue
        if ty.is_ptr or ty.elem.startswith("desc<") or ty.elem in ("f16", "bf16", "f32"):
            shape = (launch.descriptors[arg_name]["shape"] if ty.elem.startswith("desc<")
                     else launch.views.get(arg_name, [1]))
            leaves = ((region + 1) << T.LEAF_BITS) | np.arange(int(np.prod(shape)))
            region += 1                         # the validator numbers symbolic regions in this order
            vals = leaf_values(leaves, 1)
            if ty.is_ptr or ty.elem.startswith("desc<"):
                elem = ty.pointee if ty.is_ptr else parse_type(ty.elem[5:-1].rsplit("x", 1)[-1]).elem
                t = torch.tensor(vals, dtype=torch.float32).to(_torch_dtype(torch, elem)).cuda()
                buffers[arg_name] = t
                if ty.is_ptr:
                    values[arg_name] = t
                else:
                    from triton.tools.tensor_descriptor import TensorDescriptor
                    block = [int(x) for x in ty.elem[5:-1].split("x")[:-1]]
                    values[arg_name] = TensorDescriptor.from_tensor(t.view(*shape), block)
            else:
                values[arg_name] = float(vals[0])
        else:
            values[arg_name] = int(launch.args[arg_name])
    import triton
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    # the launcher takes every parameter in order, constexprs included (it skips them)
    args = [spec["consts"][a] if a in spec["consts"] else values[a] for a in spec["fn"].arg_names]
    grid = tuple(launch.grid)
    kernel[grid](*args)
    torch.cuda.synchronize()
    checked = 0
    for buf, want in predicted.items():
        got = buffers[buf].float().cpu().numpy().reshape(-1)
        idx = np.array(sorted(want))
        w = np.array([want[i] for i in idx])
        g = got[idx]
        both_nan = np.isnan(g) & np.isnan(w)         # a NaN where the model says NaN is agreement
        if name in EXACT:
            bad = np.nonzero((g != w) & ~both_nan)[0]
        else:
            bad = np.nonzero(~np.isclose(g, w, rtol=1e-3, atol=1e-3) & ~both_nan)[0]
        assert not bad.size, (f"{name} ({MODELS[name]}): {len(bad)} of {len(idx)} elements of {buf} differ, first "
                              f"element {int(idx[bad[0]])}: GPU {g[bad[0]]!r}, model {w[bad[0]]!r}")
        checked += len(idx)
    assert checked > 0
