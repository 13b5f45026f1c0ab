"""Subprocess worker: compile Gluon conversion kernels to PTX on the CPU, one JSON line per case.

Run as ``python -m layoutverify.adapters.triton.compile_worker`` (or this file's path) with one
JSON case per line on stdin; answers one JSON line per case on stdout. It imports only Triton
(any release 3.6-3.9, whichever the interpreter has), so a virtual environment holding another
Triton can run it. A malformed layout can abort Triton's C++; the caller restarts the worker.

A case: ``{"id", "a", "b", "shape": [M] or [M, N], "dtype": "fp8"|"f16"|"bf16"|"f32"|"i8"|"i16"|"i32",
"arch": 80|90, "num_warps", "observe": bool}``; layouts ``a``/``b`` are Gluon specs:
``{"kind": "blocked", "spt", "tpw", "wpc", "order"}``, ``{"kind": "mma", "version", "warps",
"instr"}``, ``{"kind": "dot", "op", "parent", "k_width"}``, ``{"kind": "slice", "dim", "parent"}``,
``{"kind": "linear", "reg", "lane", "warp", "block"}``, and ``{"kind": "as_linear", "of"}``: the
``DistributedLinearLayout`` with the bases Triton's own ``to_linear_layout`` gives the layout ``of``.

The kernel loads the tile in ``a`` (element ``i`` of the row-major tile at ``in_ptr + i``),
converts it to ``b`` and stores it in ``b`` at the same offsets. With ``observe`` it first passes
every 32-bit word of ``b``'s registers, in register order, through an inline ``mov.b32`` marked
``// lv-observe``, so that an interpreter can read every register of every thread.
The answer: ``{"id", "ptx", "a_bases", "b_bases", "cvt", "compile_s", "triton"}`` (bases and
``cvt = b.invert_and_compose(a)`` from Triton's own LinearLayout), or ``{"id", "error"}``.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time

DTYPES = {"fp8": "fp8e4nv", "f16": "fp16", "bf16": "bf16", "f32": "fp32", "i8": "i8", "i16": "i16", "i32": "i32"}
BITS = {"fp8": 8, "f16": 16, "bf16": 16, "f32": 32, "i8": 8, "i16": 16, "i32": 32}


_KERNELS = None


def kernels():
    """The Gluon conversion kernels ``(cvt2d, cvt1d)`` (defined once; Triton imported lazily)."""
    global _KERNELS
    if _KERNELS is None:
        from triton.experimental import gluon
        from triton.experimental.gluon import language as gl

        @gluon.jit
        def cvt2d(in_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr, A: gl.constexpr, B: gl.constexpr,
                  OBS: gl.constexpr, PACK: gl.constexpr):
            ra = gl.arange(0, M, layout=gl.SliceLayout(1, A))
            ca = gl.arange(0, N, layout=gl.SliceLayout(0, A))
            x = gl.load(in_ptr + ra[:, None] * N + ca[None, :])
            y = gl.convert_layout(x, B)
            if OBS:
                y = gl.inline_asm_elementwise("mov.b32 $0, $1; // lv-observe", "=r,r", [y], dtype=y.dtype,
                                              is_pure=False, pack=PACK)
            rb = gl.arange(0, M, layout=gl.SliceLayout(1, B))
            cb = gl.arange(0, N, layout=gl.SliceLayout(0, B))
            gl.store(out_ptr + rb[:, None] * N + cb[None, :], y)

        @gluon.jit
        def cvt1d(in_ptr, out_ptr, M: gl.constexpr, A: gl.constexpr, B: gl.constexpr,
                  OBS: gl.constexpr, PACK: gl.constexpr):
            x = gl.load(in_ptr + gl.arange(0, M, layout=A))
            y = gl.convert_layout(x, B)
            if OBS:
                y = gl.inline_asm_elementwise("mov.b32 $0, $1; // lv-observe", "=r,r", [y], dtype=y.dtype,
                                              is_pure=False, pack=PACK)
            gl.store(out_ptr + gl.arange(0, M, layout=B), y)

        _KERNELS = (cvt2d, cvt1d)
    return _KERNELS


def build_layout(gl, spec: dict, shape: list, builder=None):
    """A Gluon layout object from a JSON spec (see the module docstring); ``as_linear`` needs the
    ``GluonOpBuilder`` ``builder``."""
    k = spec["kind"]
    if k == "blocked":
        return gl.BlockedLayout(spec["spt"], spec["tpw"], spec["wpc"], spec["order"])
    if k == "mma":
        return gl.NVMMADistributedLayout(spec["version"], spec["warps"], spec["instr"])
    if k == "dot":
        return gl.DotOperandLayout(spec["op"], build_layout(gl, spec["parent"], shape, builder), spec["k_width"])
    if k == "slice":
        return gl.SliceLayout(spec["dim"], build_layout(gl, spec["parent"], list(shape) + [1], builder))
    if k == "linear":
        return gl.DistributedLinearLayout(spec["reg"], spec["lane"], spec["warp"], spec["block"], list(shape))
    if k == "as_linear":
        if builder is None:
            raise ValueError("an as_linear layout needs a GluonOpBuilder")
        ll = builder.to_linear_layout(build_layout(gl, spec["of"], shape, builder)._to_ir(builder), list(shape))
        return gl.DistributedLinearLayout(ll.reg_bases, ll.lane_bases, ll.warp_bases, ll.block_bases, list(shape))
    raise ValueError(f"unknown Gluon layout kind {k!r}")


_BACKENDS: dict = {}


def compile_to(fn, signature: dict, consts: dict, num_warps: int, arch: int, stop: str, attrs=None):
    """Compile the Gluon kernel ``fn`` for ``sm_<arch>`` on the CPU through Triton's stages up to
    ``stop`` (``"ptx"`` or ``"cubin"``); returns ``(that stage's output, metadata)``. ``attrs``:
    argument specialisations, as ``GluonASTSource`` takes them."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    from triton.experimental.gluon._runtime import GluonASTSource

    target = GPUTarget("cuda", arch, 32)
    if arch not in _BACKENDS:
        _BACKENDS[arch] = make_backend(target)
    backend = _BACKENDS[arch]
    src = GluonASTSource(fn, signature, constexprs=consts, attrs=attrs)
    options = backend.parse_options({"num_warps": num_warps})
    stages: dict = {}
    backend.add_stages(stages, options, src.language)
    cctx = ir.context()
    ir.load_dialects(cctx)
    backend.load_dialects(cctx)
    module = src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(), cctx)
    metadata = {"hash": "0" * 64, "target": target, **vars(options)}
    keys = list(stages)
    for ext in keys[keys.index(src.ext) + 1:]:
        module = stages[ext](module, metadata)
        if ext == stop:
            return module, metadata
    raise RuntimeError(f"no {stop} stage")


def main() -> None:  # pragma: no cover - runs in a subprocess
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    import triton
    from triton._C.libtriton import gluon_ir, ir
    from triton.experimental.gluon import language as gl

    cvt2d, cvt1d = kernels()  # noqa: F841

    ctx = ir.context()
    ir.load_dialects(ctx)
    builder = gluon_ir.GluonOpBuilder(ctx)

    def build(spec, shape):
        return build_layout(gl, spec, shape, builder)

    def bases(layout, shape):
        ll = builder.to_linear_layout(layout._to_ir(builder), shape)
        return {"register": ll.reg_bases, "lane": ll.lane_bases, "warp": ll.warp_bases, "block": ll.block_bases}

    def triton_cvt(a_bases, b_bases, shape):
        try:
            from triton._C.libtriton.linear_layout import LinearLayout as LL
        except ImportError:
            return None
        names = [f"dim{i}" for i in range(len(shape))]
        a = LL.from_bases(list(a_bases.items()), names, list(shape))
        b = LL.from_bases(list(b_bases.items()), names, list(shape))
        comp = b.invert_and_compose(a)
        return {"bases": [[k, v] for k, v in comp.bases], "out": comp.get_out_dim_names()}


    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        out = {"id": case["id"], "triton": triton.__version__}
        try:
            shape = list(case["shape"])
            A, B = build(case["a"], shape), build(case["b"], shape)
            out["a_bases"], out["b_bases"] = bases(A, shape), bases(B, shape)
            out["cvt"] = triton_cvt(out["a_bases"], out["b_bases"], shape)
            bits = BITS[case["dtype"]]
            consts = {"A": A, "B": B, "OBS": bool(case.get("observe", False)), "PACK": 32 // bits}
            if len(shape) == 2:
                consts.update(M=shape[0], N=shape[1])
                fn = cvt2d
            else:
                consts.update(M=shape[0])
                fn = cvt1d
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                ptr = "*" + DTYPES[case["dtype"]]
                signature = {"in_ptr": ptr, "out_ptr": ptr, **{k: "constexpr" for k in consts}}
                out["ptx"] = compile_to(fn, signature, consts, case["num_warps"], case.get("arch", 90), "ptx")[0]
            out["compile_s"] = round(time.perf_counter() - t0, 3)
        except Exception as e:  # a layout Triton rejects: reported to the caller
            out["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":  # pragma: no cover
    main()
