"""``!ttg.memdesc<...>`` types: which shape a memory encoding is read over, and buffer dims.

A memdesc type is ``!ttg.memdesc<VIEWxELEM, #encoding, #space[, mutable][, ALLOC]>``. Triton reads
its layout with ``toLinearLayout(MemDescType)`` (``LinearLayoutConversions.cpp``): over the
*allocation* shape's trailing ``rank(VIEW)`` dims, ``allocShape.take_back(rank)``, never over the
view's own shape when they differ. So:

* ``!ttg.memdesc<64x64xf16, #shared, #smem, mutable, 128x128>`` (a 64x64 subslice of a 128x128
  buffer) is the layout of the 128x128 buffer it lives in;
* ``!ttg.memdesc<128x128xf32, #tmem, #ttng.tensor_memory, mutable, 2x128x128>`` (one buffer of a
  two-buffer allocation, after ``memdesc_index``) is the 128x128 buffer's layout.

When the view has more dims than the encoding (``!ttg.memdesc<3x64x16xf16, #shared>`` with a
rank-2 ``#shared``: a multi-buffered allocation), the leading dims are **buffer dims**: buffer
``b`` (row-major over the leading dims) is a whole copy of the encoding's layout over the
trailing dims, placed after buffer ``b - 1``, as Triton lowers ``memdesc_index`` (offset ``b *``
the buffer's size; TMEM: column ``b *`` the buffer's columns). The result maps ``offset`` (or
TMEM's ``col``) over all buffers; its buffer dims come first (``dim0``...). Triton's own
``toLinearLayout`` has no answer for the whole allocation (it indexes one buffer first), so the
oracle check compares one buffer (``tests/test_triton_lit.py``).

The returned Layout carries ``view_shape``, ``layout_shape`` (what the encoding was read over)
and ``buffers`` (the buffer dims' sizes, ``()`` when none).
"""
from __future__ import annotations

from math import prod
from typing import Callable

from layoutverify.core import expr as E
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout

from .parser import Parsed, describe
from .shared import element_bits, encoding_rank, padded_size, physical_offset_expr  # noqa: F401  (re-exported)

#: the hardware dim that addresses successive buffers, per memory kind
_BUFFER_DIM = {"ttng.tensor_memory_encoding": "col", "ttng.tensor_memory_scales_encoding": "col"}


def layout_shape(parsed: Parsed) -> tuple[int, ...]:
    """``allocShape.take_back(rank)``: the shape Triton reads a memdesc's encoding over."""
    view = parsed.shape
    alloc = parsed.alloc_shape
    if alloc is None:
        return view
    if len(alloc) < len(view):
        raise LayoutError(f"the allocation shape {'x'.join(map(str, alloc))} has fewer dims than the memdesc's "
                          f"shape {'x'.join(map(str, view))}")
    tail = tuple(alloc[len(alloc) - len(view):])
    for d, (v, a) in enumerate(zip(view, tail)):
        if v > a:
            raise LayoutError(f"the memdesc's shape {'x'.join(map(str, view))} is larger than its allocation "
                              f"{'x'.join(map(str, alloc))} along dim{d}")
    return tail


_TMEM_KINDS = ("ttng.tensor_memory_encoding", "triton_nvidia_gpu.tensor_memory_encoding")
_SCALES_KINDS = ("ttng.tensor_memory_scales_encoding", "triton_nvidia_gpu.tensor_memory_scales_encoding")


def _space(parsed: Parsed) -> str | None:
    sp = parsed.memory_space
    return None if sp is None else sp.kind


def verify(parsed: Parsed) -> None:
    """The checks of Triton's ``MemDescType::verify`` (``lib/Dialect/TritonGPU/IR/Types.cpp``)
    that concern the layout: dims, the memory space that goes with the encoding, the rank, and
    for TMEM the element width and the smallest shape."""
    attr, view = parsed.attr, tuple(parsed.shape)
    where = describe(attr)
    if any(d & (d - 1) for d in view[1:]):
        raise LayoutError(f"memdesc shape {'x'.join(map(str, view))}: every dim but the first (the buffer "
                          f"count) must be a power of two")
    space = _space(parsed)
    if space is None:
        raise LayoutError("a memdesc type needs a memory space after the encoding, as in "
                          "!ttg.memdesc<64x64xf16, #shared, #ttg.shared_memory, mutable>")
    rank = encoding_rank(attr)
    bits = element_bits(parsed.element_type or "")
    if attr.kind in _TMEM_KINDS or attr.kind in _SCALES_KINDS:
        if space not in ("ttng.tensor_memory", "triton_nvidia_gpu.tensor_memory"):
            raise LayoutError(f"{where}: memorySpace must be TensorMemorySpace (#ttng.tensor_memory), got #{space}")
        if attr.kind in _SCALES_KINDS:
            if parsed.alloc_shape is not None and len(parsed.alloc_shape) != 2 or len(view) != 2:
                raise LayoutError(f"{where}: scales don't support multibuffering (the allocation must be 2-D)")
            if bits is not None and bits != 8:
                raise LayoutError(f"{where}: the element bit width must be 8, got {parsed.element_type}")
            return
        if len(view) not in (2, 3):
            raise LayoutError(f"{where}: a TMEM memdesc has rank 2 or 3, got {'x'.join(map(str, view))}")
        stride = attr.params.get("colStride")
        if bits is not None and stride in (1, 2, 4) and bits * stride > 32:   # the attribute is checked first
            raise LayoutError(f"{where}: bitwidth * colStride must be less than or equal to 32. Got {bits} and "
                              f"{stride}")
        split = [1, 1]
        cga = attr.params.get("CGALayout")
        for b in cga if isinstance(cga, list) else []:
            for d, c in enumerate(b if isinstance(b, list) else []):
                if c and d < 2:
                    split[d] *= 2
        bm, bn = attr.params.get("blockM"), attr.params.get("blockN")
        if isinstance(bm, int) and isinstance(bn, int):
            need = (bm * split[0], min(bn, view[-1]) * split[1])
            if view[-2] < need[0] or view[-1] < need[1]:
                raise LayoutError(f"{where}: the tensor shape must be at least {need[0]}x{need[1]}. Got "
                                  f"{view[-2]}, {view[-1]} (Triton 3.9's MemDescType::verify)")
        return
    if space not in ("ttg.shared_memory", "shared_memory", "triton_gpu.shared_memory"):
        raise LayoutError(f"{where}: memorySpace must be SharedMemorySpace (#ttg.shared_memory) for a shared "
                          f"encoding, got #{space}")
    if rank is not None and rank > len(view):
        # Triton's source (df82d98) also refuses more than one leading buffer dim; the released
        # Triton 3.9 accepts several (checked against it), so they are read as buffer dims
        raise LayoutError(f"{where}: the encoding has rank {rank}, more than the memdesc's shape "
                          f"{'x'.join(map(str, view))}")


def read(parsed: Parsed, convert: Callable[..., Layout], **options) -> Layout:
    """The layout of a ``!ttg.memdesc`` type (see the module docstring)."""
    attr = parsed.attr
    verify(parsed)
    shape = layout_shape(parsed)
    rank = encoding_rank(attr)
    n_buf = len(shape) - rank if rank is not None and rank < len(shape) else 0
    buffers, inner_shape = tuple(shape[:n_buf]), tuple(shape[n_buf:])
    inner = convert(attr, inner_shape, **options)
    lay = inner if not n_buf else _with_buffers(inner, buffers, _BUFFER_DIM.get(attr.kind, "offset"), attr)
    if tuple(shape) != tuple(parsed.shape) or n_buf:
        what = []
        if n_buf:
            what.append(f"{'x'.join(map(str, buffers))} buffers of {'x'.join(map(str, inner_shape))}")
        if tuple(shape) != tuple(parsed.shape):
            what.append(f"the {'x'.join(map(str, shape))} allocation this {'x'.join(map(str, parsed.shape))} "
                        f"view lives in")
        lay.name = f"{inner.name or describe(attr)} [{'; '.join(what)}]"
    lay.view_shape = tuple(parsed.shape)
    lay.layout_shape = tuple(shape)
    lay.buffers = buffers
    return lay


def _with_buffers(inner: Layout, buffers: tuple[int, ...], hw: str, attr: Attr) -> Layout:
    """``inner`` repeated for each buffer, buffers outermost along hardware dim ``hw``."""
    if hw not in inner.in_names:
        raise LayoutError(f"{describe(attr)}: internal: no {hw!r} dim to place buffers along")
    n = prod(buffers)
    k = len(buffers)
    per = dict(inner.in_dims)[hw]
    # buffer index b = hw // per (row-major over the buffer dims); inside a buffer, hw % per
    b = E.Var(hw) // per
    exprs = []
    rest = 1
    for s in reversed(buffers):
        exprs.append((b // rest) % s if rest > 1 else b % s)
        rest *= s
    exprs.reverse()
    sub = {hw: E.Var(hw) % per}
    exprs += [E.substitute(e, sub) for e in inner.exprs]
    in_dims = [(name, size * n if name == hw else size) for name, size in inner.in_dims]
    out_dims = [(f"dim{i}", s) for i, s in enumerate(buffers)] + \
               [(f"dim{i + k}", s) for i, (_, s) in enumerate(inner.out_dims)]
    lay = Layout(in_dims, out_dims, exprs, name=inner.name)
    pad = getattr(inner, "padding", None)
    if pad:
        lay.padding = pad
        slots = padded_size(pad, per)
        lay.physical_offset = (E.Var(hw) // per) * slots + physical_offset_expr(pad, E.Var(hw) % per)
    return lay
