"""On an NVIDIA GPU: ground-truth readback and timing of one conversion (needs torch with CUDA and
Triton's Gluon; both imported lazily).

Readback: the suite's conversion kernel (:mod:`layoutverify.adapters.triton.compile_worker`, with
the observed registers) runs once with the input ``in[i] = i`` (raw bits of the pair's dtype; for
fp8 two runs carry the low and the high byte of ``i``); the output must hold ``i`` at ``i``. The
holder thread of every element in ``A`` and in ``B`` is read with
:func:`layoutverify.apps.measure.ground_truth.thread_tags`. A misplaced element is reported as the hardware location
of ``B`` (``register``, ``lane``, ``warp``) that received the wrong element, and where ``A`` held it.
The PTX the GPU ran is returned, so that :mod:`layoutverify.apps.ptxsim` can execute it.

Timing: a loop ``y = convert_layout(x, B); acc ^= y; x ^= k`` (``k`` read from memory, so nothing
is loop-invariant; integer types of the dtype's width: the lowering depends only on the width)
in ``ctas`` CTAs, timed at two repetition counts with CUDA events (median of ``samples`` runs);
the slope is the time per conversion. The same loop with ``B = A`` (no conversion) is the
baseline. ``ns_per_conversion`` is the SM time one CTA's conversion (with its consumer, one
``xor`` per element) takes: ``slope * SMs / ctas``; ``marginal_ns`` subtracts the baseline loop,
which overlaps with the conversion, so it underestimates the cost.
"""
from __future__ import annotations

import importlib
import statistics
import subprocess

import numpy as np

from layoutverify.adapters import adapter
from layoutverify.core.errors import UnsupportedError

INT_DTYPE = {8: "int8", 16: "int16", 32: "int32"}
TORCH_DTYPE = {"fp8": "float8_e4m3fn", "f16": "float16", "bf16": "bfloat16", "f32": "float32"}


def _worker():
    return importlib.import_module(adapter("triton").__name__ + ".compile_worker")


def gpu_available() -> str | None:
    """``None`` when a CUDA GPU can be used, else why not."""
    try:
        import torch
    except ImportError:
        return "torch is not installed (pip install 'layoutverify[gpu]')"
    try:
        if not torch.cuda.is_available():
            return "no CUDA GPU is visible to torch"
    except Exception as e:  # noqa: BLE001
        return f"CUDA is not usable: {e}"
    return None


def device_info() -> dict:
    import torch
    props = torch.cuda.get_device_properties(0)
    info = {"name": props.name, "sms": props.multi_processor_count,
            "capability": f"{props.major}.{props.minor}"}
    clk = getattr(props, "clock_rate", None)  # kHz, where torch exposes it
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,driver_version",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20)
        sm, mx, drv = [x.strip() for x in out.stdout.strip().splitlines()[0].split(",")]
        info.update(sm_clock_mhz_now=float(sm), sm_clock_mhz_max=float(mx), driver=drv)
    except Exception:  # noqa: BLE001
        pass
    if clk:
        info["clock_mhz_torch"] = clk / 1000
    info["clock_mhz"] = info.get("sm_clock_mhz_max") or info.get("clock_mhz_torch")
    import triton
    info["triton"] = triton.__version__
    info["torch"] = torch.__version__
    return info


def _gl_layouts(case):
    from triton.experimental.gluon import language as gl
    w = _worker()
    return w.build_layout(gl, case["a"], case["shape"]), w.build_layout(gl, case["b"], case["shape"])


def readback(case: dict, b_layout, a_layout) -> dict:
    """Run the conversion kernel on the GPU with tagged input (see the module docstring)."""
    import torch
    bits = {"fp8": 8, "f16": 16, "bf16": 16, "f32": 32}[case["dtype"]]
    shape = case["shape"]
    n = int(np.prod(shape))
    A, B = _gl_layouts(case)
    cvt2d, cvt1d = _worker().kernels()
    tdt = getattr(torch, TORCH_DTYPE[case["dtype"]])
    idt = getattr(torch, INT_DTYPE[bits])
    got = np.zeros(n, dtype=np.int64)
    ptx = None
    shifts = [0, 8] if bits == 8 else [0]
    for sh in shifts:
        tags = (np.arange(n, dtype=np.int64) >> sh) & ((1 << bits) - 1)
        tags = np.where(tags >= 1 << (bits - 1), tags - (1 << bits), tags)
        inp = torch.tensor(tags, dtype=idt, device="cuda").view(tdt)
        out = torch.full((n,), -1, dtype=idt, device="cuda").view(tdt)
        kw = dict(A=A, B=B, OBS=True, PACK=32 // bits, num_warps=case["num_warps"])
        if len(shape) == 2:
            k = cvt2d[(1,)](inp, out, shape[0], shape[1], **kw)
        else:
            k = cvt1d[(1,)](inp, out, shape[0], **kw)
        torch.cuda.synchronize()
        ptx = k.asm["ptx"]
        vals = out.view(idt).cpu().numpy().astype(np.int64) & ((1 << bits) - 1)
        got |= vals << sh
    if bits == 8:
        got &= 0xFFFF
    want = np.arange(n, dtype=np.int64) & ((1 << (16 if bits == 8 else bits)) - 1)
    bad = np.nonzero(got != want)[0]
    report = {"ok": bad.size == 0, "elements": n, "n_mismatches": int(bad.size), "mismatches": [], "ptx": ptx}
    if bad.size:
        from layoutverify.apps.measure.ground_truth import thread_tags
        holders_b = thread_tags(b_layout).reshape(-1)
        for e in bad[:10]:
            t = int(holders_b[e])
            report["mismatches"].append({
                "element": [int(c) for c in np.unravel_index(int(e), shape)],
                "b_location": {"lane": t % 32, "warp": t // 32,
                               "register": _register_of(b_layout, int(e), t)},
                "received": int(got[e]),
                "received_held_in_a_at": _a_location(a_layout, int(got[e]) if got[e] < n else None)})
    return report


def _register_of(layout, flat: int, thread: int):
    hw = layout.hardware_indices()
    tab = layout.flat_table()
    names = layout.in_names
    for row, f in zip(hw, tab):
        if int(f) == flat and int(row[names.index("lane")]) + 32 * int(row[names.index("warp")]) == thread:
            return int(row[names.index("register")])
    return None


def _a_location(layout, flat):
    if flat is None:
        return None
    hw = layout.hardware_indices()
    tab = layout.flat_table()
    i = int(np.argmax(tab == flat))
    return {n: int(hw[i, k]) for k, n in enumerate(layout.in_names)}


def _bench_kernels():
    from .loop_worker import bench_kernels
    return bench_kernels()


def kernel_facts(kernel) -> dict:
    """Registers, spills and the loop's SASS counts (:mod:`.sass`) of a launched loop kernel."""
    from .loop_worker import disassemble
    from .sass import loop_counts
    out = {"n_regs": getattr(kernel, "n_regs", None), "n_spills": getattr(kernel, "n_spills", None)}
    try:
        out["loop"] = loop_counts(disassemble(kernel.asm["cubin"])[0]).to_json()
    except Exception as e:  # noqa: BLE001 - the counts are extra information
        out["loop_error"] = f"{type(e).__name__}: {e}"
    return out


def time_conversion(case: dict, *, ctas: int, reps=(16, 144), samples: int = 15, baseline: bool = True,
                    target_ms: float = 8.0, max_reps: int = 8192) -> dict:
    """Slope timing (see the module docstring). Returns ns per conversion per CTA (SM time), the
    raw slopes and the repetition counts. Where the larger repetition count runs under
    ``target_ms``, it is raised (up to ``max_reps``) so that the slope is not lost in launch jitter;
    the baseline uses the same counts. Also the registers, spills and loop SASS counts of the
    kernel that ran (:func:`kernel_facts`)."""
    import torch
    bits = {"fp8": 8, "f16": 16, "bf16": 16, "f32": 32}[case["dtype"]]
    idt = getattr(torch, INT_DTYPE[bits])
    shape = case["shape"]
    n = int(np.prod(shape))
    A, B = _gl_layouts(case)
    bench2d, bench1d = _bench_kernels()
    inp = torch.randint(-100, 100, (n,), dtype=torch.int32, device="cuda").to(idt)
    kk = torch.zeros(1, dtype=idt, device="cuda")
    out = torch.empty(ctas * n, dtype=idt, device="cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def launch(src, dst, r):
        if len(shape) == 2:
            return bench2d[(ctas,)](inp, out, kk, r, shape[0], shape[1], src, dst, num_warps=case["num_warps"])
        return bench1d[(ctas,)](inp, out, kk, r, shape[0], src, dst, num_warps=case["num_warps"])

    def median_ms(src, dst, r):
        launch(src, dst, r)
        torch.cuda.synchronize()
        ts = []
        for _ in range(samples):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            launch(src, dst, r)
            e.record()
            torch.cuda.synchronize()
            ts.append(s.elapsed_time(e))
        return statistics.median(ts), (max(ts) - min(ts)) / statistics.median(ts)

    r1, r2 = reps
    t1, s1 = median_ms(A, B, r1)
    t2, s2 = median_ms(A, B, r2)
    if t2 < target_ms and r2 < max_reps:
        r2 = min(max_reps, int(r2 * target_ms / max(t2, 1e-3)))
        t2, s2 = median_ms(A, B, r2)
    reps = (r1, r2)
    slope = (t2 - t1) * 1e6 / (r2 - r1)          # ns per repetition of the whole grid
    res = {"ctas": ctas, "sms": sms, "reps": list(reps), "t_ms": [t1, t2], "spread": max(s1, s2),
           "slope_ns": slope, "ns_loop": slope * sms / ctas}
    if baseline:
        b1, _ = median_ms(A, A, r1)
        b2, _ = median_ms(A, A, r2)
        bslope = (b2 - b1) * 1e6 / (r2 - r1)
        res["baseline_ns_loop"] = bslope * sms / ctas
        res["marginal_ns"] = res["ns_loop"] - res["baseline_ns_loop"]
    res["ns_per_conversion"] = res["ns_loop"]
    res["kernel"] = kernel_facts(launch(A, B, r1))
    return res


def require_gpu() -> None:
    why = gpu_available()
    if why:
        raise UnsupportedError(f"measure needs an NVIDIA GPU: {why}")
