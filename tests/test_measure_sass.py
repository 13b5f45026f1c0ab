"""Loop instruction counts read from SASS (:mod:`layoutverify.apps.measure.sass`).

The SASS texts here are written by hand in ``nvdisasm -c`` form; the expected counts follow from
the text itself (which instructions lie between a label and the branch back to it)."""
from __future__ import annotations

import pytest

from layoutverify.apps.measure.sass import loop_counts, loops


def _line(addr: int, text: str) -> str:
    return f"        /*{addr:04x}*/                   {text} ;"


def _kernel(body_lines: list[str]) -> str:
    out, addr = [], 0
    for t in body_lines:
        if t.endswith(":"):
            out.append(t)
        else:
            out.append(_line(addr, t))
            addr += 16
    return "\n".join(out)


def test_one_loop_counted_by_class():
    sass = _kernel([
        "MOV R1, c[0x0][0x28]",
        "@!P0 BRA `(.L_x_0)",          # forward branch: not a loop
        ".L_x_1:",
        "BAR.SYNC.DEFER_BLOCKING 0x0",
        "PRMT R4, R2, 0x5410, R3",
        "STS.128 [R5], R8",
        "BAR.SYNC.DEFER_BLOCKING 0x0",
        "LDSM.16.M88.4 R12, [R6]",
        "LDS R13, [R7+0x80]",
        "SHFL.IDX PT, R14, R14, R9, 0x1f",
        "STL [R1+0x4], R3",
        "LDL R3, [R1+0x4]",
        "LOP3.LUT R20, R20, R12, RZ, 0x3c, !PT",
        "ISETP.NE.AND P0, PT, R21, RZ, PT",
        "@P0 BRA `(.L_x_1)",
        ".L_x_0:",
        "EXIT",
        ".L_x_2:",
        "BRA `(.L_x_2)",               # the trap loop after EXIT: empty body
    ])
    c = loop_counts(sass)
    assert (c.barriers, c.shared_stores, c.shared_loads, c.shuffles, c.local) == (2, 1, 2, 1, 2)
    assert c.alu == 3 and c.total == 11 and c.unroll == 1


def test_unrolled_loop_divided_by_its_unroll_factor():
    """Unrolled 4x with a one-iteration remainder loop: the steady state is the big loop / 4."""
    one = ["SHFL.IDX PT, R4, R4, R9, 0x1f", "SHFL.IDX PT, R5, R5, R9, 0x1f", "LOP3.LUT R6, R6, R4, RZ, 0x3c, !PT"]
    sass = _kernel([".L_x_3:"] + one * 4 + ["IADD3 R11, R11, -0x4, RZ", "@P1 BRA `(.L_x_3)",
                   ".L_x_5:"] + one + ["IADD3 R11, R11, -0x1, RZ", "@P0 BRA `(.L_x_5)", "EXIT"])
    assert [len(b) for b in loops(sass)] == [13, 4]
    c = loop_counts(sass)
    assert c.unroll == 4 and c.shuffles == 2 and c.alu == 5 / 4


def test_no_loop():
    assert loop_counts(_kernel(["MOV R1, R2", "EXIT"])).total == 0


def test_cpu_compile_reproduces_the_kernels_the_gpu_ran(triton_python):
    """The loop kernels compiled on the CPU by the Triton release the GPU ran (3.6, specialised as
    the launch specialises) have the loop SASS counts that the H100 recorded for the kernels it ran,
    for every suite pair, and the same register counts for nearly all (the recorded counts come from
    the CUDA driver: the oracle here is the GPU run in benchmarks/results/)."""
    import json
    import re
    from pathlib import Path

    from layoutverify.apps.measure.sass import compile_loops
    from layoutverify.apps.measure.suite import compile_case, load_suite

    results = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / \
        "conversions_NVIDIA_H100_80GB_HBM3.json"
    doc = json.loads(results.read_text())
    release = ".".join(doc["triton"].split(".")[:2])
    recorded = {r["pair"]["name"]: r["timing"]["kernel"] for r in doc["results"]}
    pairs = [p for p in load_suite() if p.name in recorded]
    cases = [compile_case(p, p.name, triton_version=release) for p in pairs]
    got = compile_loops(cases, python=triton_python(release))
    same_regs = 0
    for p in pairs:
        ans = got[p.name]
        assert "error" not in ans, (p.name, ans.get("error"))
        assert ans["triton"].startswith(release)
        want = recorded[p.name]
        assert loop_counts(ans["sass"]).to_json() == want["loop"], p.name
        regs = int(re.search(r"REG:(\d+)", ans["resources"]).group(1))
        same_regs += regs == want["n_regs"]
    assert same_regs >= 0.95 * len(pairs)


@pytest.mark.parametrize("release,spills", [("3.6", True), ("3.7", True), ("3.8", False), ("3.9", False)])
def test_blocked_to_dot_operand_spills_before_triton_3_8(triton_python, release, spills):
    """Finding (README): the timed loop of blocked -> dot_op(opIdx 1, mma 2x2, kWidth 2) at 128x128
    f16 gets a stack frame and local-memory accesses in every iteration from the ptxas of Triton
    3.6 and 3.7 (the H100 measured 58 us per conversion), none with Triton 3.8 and 3.9."""
    import re

    from layoutverify.apps.measure.sass import compile_loops
    from layoutverify.apps.measure.suite import compile_case, load_suite

    pair = next(p for p in load_suite() if p.name == "blocked-dot-2-f16-128x128")
    ans = compile_loops([compile_case(pair, 0, triton_version=release)], python=triton_python(release))[0]
    assert "error" not in ans, ans.get("error")
    stack = int(re.search(r"STACK:(\d+)", ans["resources"]).group(1))
    local = loop_counts(ans["sass"]).local
    assert (stack > 0 and local > 0) == spills, (release, stack, local)
