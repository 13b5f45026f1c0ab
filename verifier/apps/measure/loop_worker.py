"""Subprocess worker: the timed conversion loop, defined once, and compiled to SASS on the CPU.

Run as ``python loop_worker.py COMPILE_WORKER_PY`` with one JSON case per line on stdin (the compile
worker's cases: ``{"id", "a", "b", "shape", "dtype", "arch", "num_warps"}``); it answers one JSON
line per case: ``{"id", "sass", "resources", "shared_bytes", "triton"}`` (the disassembly of the loop kernel's
cubin and its resource usage, made by the ``ptxas``, ``nvdisasm`` and ``cuobjdump`` that Triton
ships) or ``{"id", "error"}``. It imports only Triton
(any release 3.6-3.9) and the compile worker (loaded from the path given: its ``build_layout`` and
``compile_to``), so an interpreter holding another Triton can run it.

The loop (``bench2d`` / ``bench1d``) is what ``measure`` times on the GPU:
``y = convert_layout(x, B); acc ^= y; x ^= k`` with ``k`` read from memory, so that nothing is
loop-invariant; integer element types of the dtype's width (the lowering depends only on it).
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile

INT_TYPES = {"fp8": "i8", "f16": "i16", "bf16": "i16", "f32": "i32"}

_KERNELS = None


def bench_kernels():
    """The Gluon loop kernels ``(bench2d, bench1d)`` (defined once; Triton imported lazily)."""
    global _KERNELS
    if _KERNELS is None:
        from triton.experimental import gluon
        from triton.experimental.gluon import language as gl

        @gluon.jit
        def bench2d(in_ptr, out_ptr, k_ptr, reps, M: gl.constexpr, N: gl.constexpr, A: gl.constexpr,
                    B: gl.constexpr):
            ra = gl.arange(0, M, layout=gl.SliceLayout(1, A))
            ca = gl.arange(0, N, layout=gl.SliceLayout(0, A))
            x = gl.load(in_ptr + ra[:, None] * N + ca[None, :])
            k = gl.load(k_ptr)
            rb = gl.arange(0, M, layout=gl.SliceLayout(1, B))
            cb = gl.arange(0, N, layout=gl.SliceLayout(0, B))
            acc = gl.load(in_ptr + rb[:, None] * N + cb[None, :])
            for _ in range(reps):
                y = gl.convert_layout(x, B)
                acc = acc ^ y
                x = x ^ k
            pid = gl.program_id(0)
            gl.store(out_ptr + pid * (M * N) + rb[:, None] * N + cb[None, :], acc)

        @gluon.jit
        def bench1d(in_ptr, out_ptr, k_ptr, reps, M: gl.constexpr, A: gl.constexpr, B: gl.constexpr):
            x = gl.load(in_ptr + gl.arange(0, M, layout=A))
            k = gl.load(k_ptr)
            acc = gl.load(in_ptr + gl.arange(0, M, layout=B))
            for _ in range(reps):
                y = gl.convert_layout(x, B)
                acc = acc ^ y
                x = x ^ k
            pid = gl.program_id(0)
            gl.store(out_ptr + pid * M + gl.arange(0, M, layout=B), acc)

        _KERNELS = (bench2d, bench1d)
    return _KERNELS


def _load_compile_worker(path: str):
    spec = importlib.util.spec_from_file_location("_lv_compile_worker", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def disassemble(cubin: bytes) -> tuple[str, str]:
    """``(SASS, resource usage)`` of a cubin, by the ``nvdisasm`` and ``cuobjdump`` Triton ships."""
    import triton
    bindir = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        sass = subprocess.run([os.path.join(bindir, "nvdisasm"), "-c", f.name], capture_output=True, text=True,
                              check=True, timeout=120).stdout
        resources = subprocess.run([os.path.join(bindir, "cuobjdump"), "-res-usage", f.name], capture_output=True,
                                   text=True, check=True, timeout=120).stdout
    return sass, resources


#: as the GPU launch specialises: the pointers (torch allocations) and the repetition counts
#: (16, 144, ...) are divisible by 16
LAUNCH_ATTRS = {(i,): [["tt.divisibility", 16]] for i in range(4)}


def main() -> None:  # pragma: no cover - runs in a subprocess
    import triton
    from triton.experimental.gluon import language as gl

    worker = _load_compile_worker(sys.argv[1])
    bench2d, bench1d = bench_kernels()
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        out = {"id": case["id"], "triton": triton.__version__}
        try:
            shape = list(case["shape"])
            A, B = worker.build_layout(gl, case["a"], shape), worker.build_layout(gl, case["b"], shape)
            ptr = "*" + INT_TYPES[case["dtype"]]
            consts = {"A": A, "B": B}
            if len(shape) == 2:
                consts.update(M=shape[0], N=shape[1])
                fn = bench2d
            else:
                consts.update(M=shape[0])
                fn = bench1d
            signature = {"in_ptr": ptr, "out_ptr": ptr, "k_ptr": ptr, "reps": "i32",
                         **{k: "constexpr" for k in consts}}
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                cubin, metadata = worker.compile_to(fn, signature, consts, case["num_warps"], case.get("arch", 90),
                                                    "cubin", attrs=LAUNCH_ATTRS)
            out["shared_bytes"] = int(metadata.get("shared", 0) or 0)
            out["sass"], out["resources"] = disassemble(cubin)
        except Exception as e:  # a layout Triton rejects: reported to the caller
            out["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":  # pragma: no cover
    main()
