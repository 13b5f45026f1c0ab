"""GPU ground truth (DESIGN.md §4): does compiled code put elements where the layout says?

Gluon expresses any F2 distributed layout as a ``DistributedLinearLayout``. For a layout from
any framework (after conversion to the canonical form), :func:`thread_tags` compiles a kernel
that materialises a tile in that layout, lets every element record the hardware thread holding
it (``%tid.x``, through element-wise inline PTX, which runs in the thread that owns the
element) and stores the tile. Reading it back gives, for every logical element, the flat thread
id that held it on the GPU; :func:`check_on_gpu` compares that with the canonical form's holders.
A replicated element is written by several threads: the one that lands is one of its holders.

The register numbering inside a thread is not observable from memory, so this checks the
thread partition (``lane``, ``warp``) exactly and the register dim only through it.

Needs torch with CUDA and Triton's Gluon (Triton >= 3.5); imported lazily.
"""
from __future__ import annotations

import numpy as np

from layoutverify.core.errors import UnsupportedError
from layoutverify.core.layout import Layout


def _bases_for_gluon(layout: Layout) -> tuple[list, list, list, list, list[int]]:
    f2 = layout.f2_bases()
    if f2 is None:
        raise UnsupportedError("GPU ground truth needs an F2-linear layout (Gluon's DistributedLinearLayout)")
    if layout.kind != "register":
        raise UnsupportedError("GPU ground truth is for register (distributed) layouts")
    if layout.in_size("block") != 1:
        raise UnsupportedError("GPU ground truth runs one CTA; the layout has several blocks")
    extra = set(layout.in_names) - {"register", "lane", "warp", "block"}
    if extra:
        raise UnsupportedError(f"hardware dims {sorted(extra)} are not register/lane/warp/block")
    if len(layout.out_dims) != 2:
        raise UnsupportedError("GPU ground truth draws 2-D tiles")
    get = lambda n: [list(v) for v in f2.get(n, [])]  # noqa: E731
    return get("register"), get("lane"), get("warp"), [], list(layout.out_sizes)


def thread_tags(layout: Layout, device: str = "cuda") -> np.ndarray:
    """Run the tagging kernel; returns an ``int64`` array of the tile's shape holding, per
    element, the flat thread id (``%tid.x``) that wrote it."""
    import torch
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl

    reg, lane, warp, block, shape = _bases_for_gluon(layout)
    if len(lane) != 5:
        raise UnsupportedError("GPU ground truth needs 32 lanes (NVIDIA warps)")
    lay = gl.DistributedLinearLayout(reg, lane, warp, block, shape)
    num_warps = 1 << len(warp)

    @gluon.jit
    def _tag_kernel(out_ptr, M: gl.constexpr, N: gl.constexpr, L: gl.constexpr):
        rows = gl.arange(0, M, layout=gl.SliceLayout(1, L))
        cols = gl.arange(0, N, layout=gl.SliceLayout(0, L))
        offs = gl.expand_dims(rows, 1) * N + gl.expand_dims(cols, 0)
        tid = gl.inline_asm_elementwise("mov.u32 $0, %tid.x;", "=r,r", [offs], dtype=gl.int32,
                                        is_pure=False, pack=1)
        gl.store(out_ptr + offs, tid)

    out = torch.full(tuple(shape), -1, dtype=torch.int32, device=device)
    _tag_kernel[(1,)](out, shape[0], shape[1], lay, num_warps=num_warps)
    torch.cuda.synchronize()
    return out.cpu().numpy().astype(np.int64)


def expected_holders(layout: Layout) -> list[set[int]]:
    """Per flat (row-major) element, the set of flat thread ids ``lane + 32 * warp`` holding it."""
    hw = layout.hardware_indices()
    names = layout.in_names
    lane = hw[:, names.index("lane")] if "lane" in names else 0
    warp = hw[:, names.index("warp")] if "warp" in names else 0
    thread = np.broadcast_to(lane + layout.in_size("lane") * warp, (len(hw),))
    holders: list[set[int]] = [set() for _ in range(layout.out_size())]
    for f, t in zip(layout.flat_table().tolist(), thread.tolist()):
        holders[f].add(int(t))
    return holders


def check_on_gpu(layout: Layout) -> dict:
    """Compare the GPU's thread tags with the canonical form. Returns ``{"ok": bool,
    "mismatches": [(row, col, gpu_thread, expected_holders), ...], "elements": n}``."""
    tags = thread_tags(layout)
    holders = expected_holders(layout)
    cols = layout.out_sizes[1]
    bad = []
    for f, want in enumerate(holders):
        got = int(tags.reshape(-1)[f])
        if got not in want:
            bad.append((f // cols, f % cols, got, sorted(want)))
    return {"ok": not bad, "mismatches": bad[:20], "n_mismatches": len(bad), "elements": len(holders)}
