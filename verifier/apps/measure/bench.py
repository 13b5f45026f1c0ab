"""One pair measured on the GPU (readback, interpreter on the GPU's PTX, timing, bounds), and the
whole suite. Shared-memory bound: 128 bytes per clock per SM (32 banks x 4 bytes)."""
from __future__ import annotations

import time

import numpy as np

from layoutverify.core.conversion import analyze

from .suite import Pair, compile_case, layouts, lowering

SMEM_BYTES_PER_CLK = 128
_DEVICE = None


def device():
    global _DEVICE
    if _DEVICE is None:
        from .gpu_run import device_info
        _DEVICE = device_info()
    return _DEVICE


def measure_pair(pair: Pair, *, ctas: int | None = None, triton_version=None, samples: int = 15) -> dict:
    from layoutverify.apps.ptxsim import check_conversion

    from .gpu_run import readback, time_conversion
    dev = device()
    tv = triton_version or ".".join(dev["triton"].split(".")[:2])
    a, b = layouts(pair, tv)
    case = compile_case(pair, 0, triton_version=tv)
    t0 = time.perf_counter()
    rb = readback(case, b, a)
    ptx = rb.pop("ptx")
    sim = check_conversion(ptx, b, pair.element_bytes)
    rep = analyze(a, b)
    low = lowering()
    em = low.emitted_mechanism(a, b, triton_version=tv, equal=rep.mechanism == "no_op")
    timing = time_conversion(case, ctas=ctas or 64 * dev["sms"], samples=samples)
    tile = int(np.prod(pair.shape)) * pair.element_bytes
    tr = sim.traffic.to_json() if sim.traffic else {}
    moved = tr.get("shared_store_bytes", 0) + tr.get("shared_load_bytes", 0)
    clk_ghz = (dev.get("clock_mhz") or 1755) / 1000
    res = {"pair": pair.to_json(), "device": dev, "triton_version": tv,
           "readback": rb, "interpreter": sim.to_json(),
           "interpreter_agrees": bool(sim.ok) == bool(rb["ok"]),
           "emitted": em.mechanism, "ptx_class": low.ptx_class(ptx), "rule": em.rule, "cheapest": rep.mechanism,
           "prediction_ok": em.ptx_class == low.ptx_class(ptx),
           "tile_bytes": tile, "smem_bytes_moved": moved, "timing": timing,
           "seconds": round(time.perf_counter() - t0, 2)}
    derive(res)
    predict(res, tr, pair.shape, pair.element_bytes, case["num_warps"])
    return res


def predict(res: dict, traffic: dict, shape, element_bytes: int, warps: int) -> dict:
    """The cost model's ``predicted_ns`` for a measured pair, from the interpreter's traffic and the
    SASS counts of the loop that ran; ``predicted_lower_bound`` where the loop is spill-dominated
    (more local-memory accesses than ALU instructions: spills that overflow the L1 cost far more
    than the model's per-access constant)."""
    from layoutverify.core.cost import facts_from_traffic, predicted_ns
    loop = (res["timing"].get("kernel") or {}).get("loop")
    res["predicted_ns"] = predicted_ns(facts_from_traffic(traffic, shape, element_bytes, warps, loop=loop),
                                       gpu=res["device"]["name"])
    res["predicted_lower_bound"] = bool(loop and loop.get("local", 0) > loop.get("alu", 0))
    return res


def derive(res: dict) -> dict:
    """Bounds and achieved fractions from a result's timing, traffic and device (re-applicable to
    stored results): the shared-memory bound is ``bytes / (128 B/clk x SM clock)`` per SM."""
    t = res["timing"]
    if "marginal_ns" not in t and "baseline_ns_loop" in t:
        t["marginal_ns"] = t["ns_loop"] - t["baseline_ns_loop"]
    t["ns_per_conversion"] = t["ns_loop"]
    ns = t["ns_per_conversion"]
    clk_ghz = (res["device"].get("clock_mhz") or 1755) / 1000
    moved = res.get("smem_bytes_moved", 0)
    if moved:
        res["bound_ns_useful"] = 2 * res["tile_bytes"] / (SMEM_BYTES_PER_CLK * clk_ghz)
        res["bound_ns_moved"] = moved / (SMEM_BYTES_PER_CLK * clk_ghz)
        res["fraction_of_bound_useful"] = res["bound_ns_useful"] / ns if ns > 0 else None
        res["fraction_of_bound_moved"] = res["bound_ns_moved"] / ns if ns > 0 else None
    return res
