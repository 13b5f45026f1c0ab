"""Register fragments of the sparse matrix instructions ``mma.sp`` and ``wgmma.mma_async.sp``.

Sources: PTX ISA §9.7.14.6 "Matrix multiply-accumulate operation using mma.sp instruction with
sparse matrix A" (§9.7.14.6.1 "Sparse matrix storage", §9.7.14.6.2 "Matrix fragments for
multiply-accumulate operation with sparse matrix A") and §9.7.15.5.2 "wgmma.sp" register fragments.

**A is the compressed matrix.** For an ``MxNxK`` sparse product, A is structured-sparse (2:4 for
16- and 8-bit types, 1:2 for ``.tf32``, 4:8 pairs for 4-bit types) and "the MxK matrix A is packed
into MxK/2 elements" (§9.7.14.6). The registers hold the non-zero elements in order; the dense
column of each is only known at run time, from the metadata operand. So the A fragment here is a
layout onto the **packed ``M x K/2`` matrix**: element ``ai`` with the ISA's ``row`` and column span
``[firstcol .. lastcol]`` (``W = lastcol - firstcol + 1`` dense columns holding ``W/2`` non-zeros)
is packed column ``firstcol / 2 + j``, where ``j`` is the rank of ``ai`` among the thread's
elements of the same row and span (the ISA numbers them consecutively). The dense column is
``firstcol + metadata index``.

B and C/D: the ISA says the fragments "are the same as" those of the dense ``mma`` of the same
shape and type where they exist (m16n8k16 ``.f16``, m16n8k8 ``.tf32``, m16n8k32 8-bit, m16n8k64
4-bit B; every C/D); those are reused from :mod:`.mma`. The B fragments the ISA gives only as
figures (m16n8k32 ``.f16``/``.bf16``, m16n8k16 ``.tf32``, m16n8k64 8-bit, m16n8k128 4-bit; §9.7.14.6.2:
"For matrix B, when the combination of matrix dimension and the supported data type is not already
covered in Matrix multiply-accumulate operation using mma instruction, a pictorial representation of
matrix fragments is provided") are transcribed from those figures below (``b_figure_*``): each is
the dense B of the same type and half the K (m16n8k16 ``.f16``, m16n8k8 ``.tf32``, m16n8k32 8-bit,
m16n8k64 4-bit) for the first half of the registers, and again 16 (8, 32, 64) rows further down for
the second half. All four put the same 32-bit words in the same registers (register ``r`` of thread
``t`` holds bytes ``[4 * tig + 16 r, 4 * tig + 16 r + 4)`` of B's column ``groupID``).
``tests/test_ptx_sparse.py`` checks the 8-bit and 4-bit ones against CUTLASS's SM120 sparse
``BLayout`` and all four against that shared byte footprint. The metadata operand ``e`` is in
:mod:`.sparse_meta`.

``wgmma.sp``: A in registers is given by figures only (Figure 175 and the like); the per-thread
count (``.f16``: four ``.b32`` registers, two non-zeros each) and CUTLASS's
``GMMA::ALayout_64x32``/``64x64`` sparse RS layouts (dense coordinates, 2 of every 4 columns)
both make the packed A the dense ``wgmma`` A of half the K (``tests/test_ptx_sparse.py`` checks it
against CUTLASS); D is the dense ``wgmma`` D ("the same as ... wgmma.mma_async.m64nNk32").
"""
from __future__ import annotations

from . import mma
from layoutverify.adapters.isa.fragment import Fragment, bit
from .mma import group_id, thread_in_group

ISA = "PTX ISA §9.7.14.6.2"

# ---------------------------------------------------------------------------------------------
# A fragments (packed M x K/2), §9.7.14.6.2.1-8
# ---------------------------------------------------------------------------------------------


def a_m16n8k16_f16(r, lane, warp):
    """§9.7.14.6.2.1 (.f16/.bf16, a0..a3): row = groupID for a0 and a1, groupID + 8 for a2 and a3;
    col in [firstcol .. firstcol + 3], firstcol = threadID_in_group * 4 (2 non-zeros of 4):
    packed col = threadID_in_group * 2 + (i & 1)."""
    return group_id(lane) + bit(r, 1) * 8, thread_in_group(lane) * 2 + bit(r, 0)


def a_m16n8k32_f16(r, lane, warp):
    """§9.7.14.6.2.2 (.f16/.bf16, a0..a7): row = groupID for 0 <= i < 2 || 4 <= i < 6, groupID + 8
    otherwise; firstcol = threadID_in_group * 4 for i < 4, + 16 for i >= 4; lastcol = firstcol + 3:
    packed col = threadID_in_group * 2 + (i & 1) + 8 * (i >= 4)."""
    return group_id(lane) + bit(r, 1) * 8, thread_in_group(lane) * 2 + bit(r, 0) + bit(r, 2) * 8


def a_m16n8k16_tf32(r, lane, warp):
    """§9.7.14.6.2.3 (.tf32, a0..a3): row = groupID for a0 and a2, groupID + 8 for a1 and a3;
    firstcol = threadID_in_group * 2 for a0 and a1, + 8 for a2 and a3; lastcol = firstcol + 1
    (1 non-zero of 2): packed col = threadID_in_group + 4 * (i >= 2)."""
    return group_id(lane) + bit(r, 0) * 8, thread_in_group(lane) + bit(r, 1) * 4


def a_m16n8k8_tf32(r, lane, warp):
    """§9.7.14.6.2.4 (.tf32, a0, a1): row = groupID for a0, groupID + 8 for a1;
    firstcol = threadID_in_group * 2, lastcol = firstcol + 1: packed col = threadID_in_group."""
    return group_id(lane) + bit(r, 0) * 8, thread_in_group(lane)


def a_m16n8k32_i8(r, lane, warp):
    """§9.7.14.6.2.5 (.u8/.s8, a0..a7): row = groupID for 0 <= i < 4, groupID + 8 otherwise;
    firstcol = threadID_in_group * 8, lastcol = firstcol + 7 (4 non-zeros of 8):
    packed col = threadID_in_group * 4 + (i & 3)."""
    return group_id(lane) + bit(r, 2) * 8, thread_in_group(lane) * 4 + (r & 3)


def a_m16n8k64_i8(r, lane, warp):
    """§9.7.14.6.2.6 (8-bit and .e3m2/.e2m3/.e2m1, a0..a15): row = groupID for 0 <= i < 4 ||
    8 <= i < 12, groupID + 8 otherwise; firstcol = threadID_in_group * 8 for i < 8, + 32 for
    i >= 8; lastcol = firstcol + 7: packed col = threadID_in_group * 4 + (i & 3) + 16 * (i >= 8)."""
    return group_id(lane) + bit(r, 2) * 8, thread_in_group(lane) * 4 + (r & 3) + bit(r, 3) * 16


def a_m16n8k64_i4(r, lane, warp):
    """§9.7.14.6.2.7 (.u4/.s4, a0..a15): row = groupID for 0 <= i < 8, groupID + 8 otherwise;
    firstcol = threadID_in_group * 16, lastcol = firstcol + 15 (8 non-zeros of 16):
    packed col = threadID_in_group * 8 + (i & 7)."""
    return group_id(lane) + bit(r, 3) * 8, thread_in_group(lane) * 8 + (r & 7)


def a_m16n8k128_i4(r, lane, warp):
    """§9.7.14.6.2.8 (.u4/.s4/.e2m1, a0..a31): row = groupID for 0 <= i < 8 || 16 <= i < 24,
    groupID + 8 otherwise; firstcol = threadID_in_group * 16 for i < 16, + 64 for i >= 16;
    lastcol = firstcol + 15: packed col = threadID_in_group * 8 + (i & 7) + 32 * (i >= 16)."""
    return group_id(lane) + bit(r, 3) * 8, thread_in_group(lane) * 8 + (r & 7) + bit(r, 4) * 32


# ---------------------------------------------------------------------------------------------
# B fragments given only as figures (§9.7.14.6.2.2, .3, .6, .8); col = groupID throughout
# ---------------------------------------------------------------------------------------------


def b_figure_m16n8k32_f16(r, lane, warp):
    """Figure for m16n8k32 .f16/.bf16 B (b0..b7): row = threadID_in_group * 2 + (i & 1) + 8 * (i >> 1)
    (b0, b1 rows 0-7; b2, b3 rows 8-15; b4, b5 rows 16-23; b6, b7 rows 24-31)."""
    return thread_in_group(lane) * 2 + bit(r, 0) + (r >> 1) * 8, group_id(lane)


def b_figure_m16n8k16_tf32(r, lane, warp):
    """Figure for m16n8k16 .tf32 B (b0..b3): row = threadID_in_group + 4 * i."""
    return thread_in_group(lane) + r * 4, group_id(lane)


def b_figure_m16n8k64_i8(r, lane, warp):
    """Figure for m16n8k64 8-bit B (b0..b15): row = threadID_in_group * 4 + (i & 3) + 16 * (i >> 2)."""
    return thread_in_group(lane) * 4 + (r & 3) + (r >> 2) * 16, group_id(lane)


def b_figure_m16n8k128_i4(r, lane, warp):
    """Figure for m16n8k128 4-bit B (b0..b31): row = threadID_in_group * 8 + (i & 7) + 32 * (i >> 3)."""
    return thread_in_group(lane) * 8 + (r & 7) + (r >> 3) * 32, group_id(lane)


#: the ISA's column spans, for checking the packing: fragment -> (span width W, firstcol(i, tig))
SPANS = {
    "m16n8k16.f16": (4, lambda i, t: t * 4),
    "m16n8k32.f16": (4, lambda i, t: t * 4 + (16 if i >= 4 else 0)),
    "m16n8k16.tf32": (2, lambda i, t: t * 2 + (8 if i >= 2 else 0)),
    "m16n8k8.tf32": (2, lambda i, t: t * 2),
    "m16n8k32.s8": (8, lambda i, t: t * 8),
    "m16n8k64.s8": (8, lambda i, t: t * 8 + (32 if i >= 8 else 0)),
    "m16n8k64.s4": (16, lambda i, t: t * 16),
    "m16n8k128.s4": (16, lambda i, t: t * 16 + (64 if i >= 16 else 0)),
}

#: (shape, A types, registers (= non-zero elements per thread), formula, section, span key,
#:  B: "dense" (the ISA's "same as" reference) or (figure formula, B registers), accumulator types)
_TABLE = [
    ("m16n8k16", ("f16", "bf16"), 4, a_m16n8k16_f16, "1", "m16n8k16.f16", "dense", ("f16", "f32")),
    ("m16n8k32", ("f16", "bf16"), 8, a_m16n8k32_f16, "2", "m16n8k32.f16", (b_figure_m16n8k32_f16, 8),
     ("f16", "f32")),
    ("m16n8k16", ("tf32",), 4, a_m16n8k16_tf32, "3", "m16n8k16.tf32", (b_figure_m16n8k16_tf32, 4), ("f32",)),
    ("m16n8k8", ("tf32",), 2, a_m16n8k8_tf32, "4", "m16n8k8.tf32", "dense", ("f32",)),
    ("m16n8k32", ("s8", "u8"), 8, a_m16n8k32_i8, "5", "m16n8k32.s8", "dense", ("s32",)),
    ("m16n8k64", ("s8", "u8", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1"), 16, a_m16n8k64_i8, "6", "m16n8k64.s8",
     (b_figure_m16n8k64_i8, 16), ("s32", "f32", "f16")),
    ("m16n8k64", ("s4", "u4"), 16, a_m16n8k64_i4, "7", "m16n8k64.s4", "dense", ("s32",)),
    ("m16n8k128", ("s4", "u4", "e2m1"), 32, a_m16n8k128_i4, "8", "m16n8k128.s4", (b_figure_m16n8k128_i4, 32),
     ("s32", "f32")),
]

#: (shape, operand, element type) -> Fragment
MMA_SP: dict[tuple[str, str, str], Fragment] = {}


def _mnk(shape: str) -> tuple[int, int, int]:
    m, rest = shape[1:].split("n")
    n, k = rest.split("k")
    return int(m), int(n), int(k)


def _dense_b(shape: str, btype: str) -> Fragment | None:
    """The dense mma B fragment of this shape and type (the ISA's "same as" reference)."""
    for lay in ("", "col"):
        f = mma.MMA.get((shape, "B", lay, btype))
        if f is not None:
            return f
    return None


def _build() -> None:
    for shape, types, regs, coords, sec, span, b_ref, c_types in _TABLE:
        m, n, k = _mnk(shape)
        src = f"{ISA}.{sec}"
        for t in types:
            MMA_SP[(shape, "A", t)] = Fragment(
                name=f"mma.sp.{shape}.{t}.A", operand="A", rows=m, cols=k // 2, registers=regs, coords=coords,
                source=src, note=f"packed A: the {m}x{k // 2} non-zero elements; dense column = 2 * packed "
                                 f"column rounded down to the span + the metadata index")
            if b_ref == "dense":
                dense = _dense_b(shape, t)
                assert dense is not None, (shape, t)
                MMA_SP[(shape, "B", t)] = Fragment(
                    name=f"mma.sp.{shape}.{t}.B", operand="B", rows=dense.rows, cols=dense.cols,
                    registers=dense.registers, coords=dense.coords, source=f"{src} (same as {dense.name})")
            else:
                b_coords, b_regs = b_ref
                MMA_SP[(shape, "B", t)] = Fragment(
                    name=f"mma.sp.{shape}.{t}.B", operand="B", rows=k, cols=n, registers=b_regs,
                    coords=b_coords, source=f"{src} (figure for matrix B)")
        for c in c_types:
            MMA_SP[(shape, "C", c)] = Fragment(
                name=f"mma.sp.{shape}.{c}.C", operand="C", rows=m, cols=n, registers=4, coords=mma.c_m16n8,
                source=f"{src} (same as the dense m16n8 C/D)")


_build()


def _add_metadata() -> None:
    from .sparse_meta import MMA_SP_E
    for (shape, t), frag in MMA_SP_E.items():
        MMA_SP[(shape, "E", t)] = frag


_add_metadata()


def shapes() -> list[str]:
    return sorted({k[0] for k in MMA_SP}, key=_mnk)


def mma_sp_names() -> list[str]:
    return [f.name for f in MMA_SP.values()]


# ---------------------------------------------------------------------------------------------
# wgmma.sp (§9.7.15.5.2): packed A = the dense wgmma A of half the K; D = the dense D
# ---------------------------------------------------------------------------------------------
#: sparse K -> (dense K whose A fragment is the packed A, A types, D types with valid N)
WGMMA_SP = {
    32: (16, ("f16", "bf16")),
    16: (8, ("tf32",)),
    64: (32, ("s8", "u8", "e4m3", "e5m2")),
}


def wgmma_sp_fragment(n: int, k: int, operand: str, dtype: str) -> Fragment | None:
    """``wgmma.sp.m64n{n}k{k}`` operand A (packed, 64 x k/2), D, or the metadata E, or None."""
    from . import wgmma
    spec = WGMMA_SP.get(k)
    if spec is None:
        return None
    if operand == "E":
        from .sparse_meta import wgmma_sp_e_fragment
        if wgmma_sp_fragment(n, k, "A", dtype) is None:
            return None
        return wgmma_sp_e_fragment(n, k, dtype)
    dense_k, a_types = spec
    dense = wgmma.fragment(n, dense_k, operand, dtype)
    if dense is None or (operand == "A" and dtype not in a_types):
        return None
    kind = "A" if operand == "A" else "D"
    src = f"PTX ISA §9.7.15.5.2 (wgmma.sp; {'packed A: same registers as' if kind == 'A' else 'same as'} {dense.name})"
    return Fragment(name=f"wgmma.sp.m64n{n}k{k}.{dtype}.{kind}", operand=dense.operand, rows=dense.rows,
                    cols=dense.cols, registers=dense.registers, coords=dense.coords, source=src, warps=4,
                    note="packed A: the 64 x K/2 non-zero elements" if kind == "A" else "")


def wgmma_sp_names() -> list[str]:
    from . import wgmma
    out = []
    for k, (dense_k, a_types) in WGMMA_SP.items():
        for name in wgmma.names():
            head, _, rest = name.partition(f"k{dense_k}.")
            if not head.startswith("wgmma.m64n") or not rest:
                continue
            dtype, _, op = rest.rpartition(".")
            if op == "A" and dtype not in a_types:
                continue
            n = int(head[len("wgmma.m64n"):])
            if wgmma_sp_fragment(n, k, "A" if op == "A" else "C", dtype) is not None:
                out.append(f"wgmma.sp.m64n{n}k{k}.{dtype}.{op}")
                if op == "A" and wgmma_sp_fragment(n, k, "E", dtype) is not None:
                    out.append(f"wgmma.sp.m64n{n}k{k}.{dtype}.E")
    return out
