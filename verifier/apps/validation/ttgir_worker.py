"""Subprocess worker: compile TTGIR conversion kernels to PTX on the CPU with whatever Triton
release the interpreter has (2.1 - 3.9), one JSON line per case.

Run as ``python ttgir_worker.py`` (by its path: an environment holding an old Triton does not
have layoutverify installed) with one JSON case per line on stdin: ``{"id", "ttgir", "arch"}``,
the TTGIR text of :mod:`.ttgir`. It answers ``{"id", "ptx", "triton", "compile_s"}`` or
``{"id", "error", "triton"}`` per case. It imports only Triton and the standard library.

The module is parsed as TTGIR and taken through the backend's stages that follow ``ttgir``
(``llir``, ``ptx``) with the options Triton gives ``num_warps`` of the module: the passes that
optimise TTGIR (``make_ttgir``) are not run, so the ``convert_layout`` of the text is the one
lowered. A malformed layout can abort Triton's C++; the caller restarts the worker.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import tempfile
import time


def _release():
    import triton
    return triton.__version__, tuple(int(x) for x in re.findall(r"\d+", triton.__version__)[:2])


def _backend(arch: int, release: tuple):
    """``(backend, target, context)`` for ``sm_<arch>`` in this release's API."""
    if release < (3, 0):
        from triton._C.libtriton.triton import ir
        from triton.compiler.backends.cuda import CUDABackend
        target = ("cuda", arch)
        return CUDABackend(target), target, ir.context(), ir
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    target = GPUTarget("cuda", arch, 32)
    backend = make_backend(target)
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    return backend, target, ctx, ir


def compile_ttgir(text: str, arch: int) -> str:
    """The PTX of the TTGIR module ``text`` for ``sm_<arch>``."""
    _, release = _release()
    backend, target, ctx, ir = _backend(arch, release)
    num_warps = int(re.search(r'num-warps"\s*=\s*(\d+)', text).group(1))
    options = backend.parse_options({"num_warps": num_warps})
    stages: dict = {}
    try:
        backend.add_stages(stages, options)
    except TypeError:  # 3.3 and later take the source language
        from triton.backends.compiler import Language
        backend.add_stages(stages, options, Language.TRITON)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "cvt.ttgir")
        with open(path, "w") as f:
            f.write(text)
        module = ir.parse_mlir_module(path, ctx)
    module.context = ctx
    metadata = {"hash": "0" * 64, "target": target, **vars(options)}
    keys = list(stages)
    for ext in keys[keys.index("ttgir") + 1:]:
        module = stages[ext](module, metadata)
        if ext == "ptx":
            return module
    raise RuntimeError("no ptx stage")


@contextlib.contextmanager
def _native_stderr():
    """Collect what Triton's C++ writes to file descriptor 2 (MLIR's diagnostics); yields a
    function returning its first error line once the block has ended."""
    captured: list[str] = []
    with tempfile.TemporaryFile("w+") as f:
        saved = os.dup(2)
        os.dup2(f.fileno(), 2)
        try:
            yield lambda: captured[0] if captured else ""
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            f.seek(0)
            lines = [ln.strip() for ln in f.read().splitlines() if "error" in ln]
            captured.append(lines[0][:300] if lines else "")


def main() -> None:  # pragma: no cover - runs in a subprocess
    version, _ = _release()
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        out = {"id": case["id"], "triton": version}
        with _native_stderr() as said:
            try:
                t0 = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    out["ptx"] = compile_ttgir(case["ttgir"], int(case.get("arch", 90)))
                out["compile_s"] = round(time.perf_counter() - t0, 3)
            except Exception as e:  # a kernel this release rejects: reported to the caller
                out["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        if "error" in out and said():
            out["error"] += f" ({said()})"
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":  # pragma: no cover
    main()
