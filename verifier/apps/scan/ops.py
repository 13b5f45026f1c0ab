"""Which ops change or materialise a layout, and between which layouts.

Each op becomes one or more **transfers**: ``(role, source type, target type)``, where a type is
the printed ``tensor<...>`` or ``!ttg.memdesc<...>`` text. Roles:

``convert``     ``ttg.convert_layout``: registers -> registers (the conversion analysis applies)
``store``       registers -> shared memory: ``ttg.local_alloc %x``, ``ttg.local_store``,
                ``ttg.async_copy_global_to_local`` (the pointer tensor's layout is what each thread
                writes)
``load``        shared memory -> registers: ``ttg.local_load``
``view``        shared memory -> shared memory without moving data: ``ttg.memdesc_*``
``tmem_load``   tensor memory -> registers (``ttng.tmem_load``)
``tmem_store``  registers -> tensor memory (``ttng.tmem_store``)
``operand``     an operand of a matrix instruction: ``tt.dot``, ``ttng.warp_group_dot``,
                ``ttng.tc_gen5_mma`` (operands A, B, C/D in order; target is None)
``global_load`` ``tt.load`` / ``amdg.buffer_load`` of a tensor: global memory -> registers (the
                tensor's layout says which thread loads which element; target is None)
``global_store`` ``tt.store`` / ``amdg.buffer_store`` of a tensor: registers -> global memory

:data:`CLASSES_OF_ROLE` says which classes of compiled instructions (:mod:`.compiled`) each role
emits, :data:`SIDE_OPS` which other ops emit instructions of those classes themselves (a
reduction's shuffles and shared memory, an explicit barrier): where one of them shares a source
location with a layout op, the compiled code cannot tell their instructions apart.
"""
from __future__ import annotations

from dataclasses import dataclass

#: op name -> role of its (operand -> result) transfer
ROLES = {
    "ttg.convert_layout": "convert",
    "triton_gpu.convert_layout": "convert",
    "ttg.local_alloc": "store",
    "triton_gpu.local_alloc": "store",
    "ttg.local_store": "store",
    "triton_gpu.local_store": "store",
    "ttg.async_copy_global_to_local": "store",
    "triton_gpu.async_copy_global_to_local": "store",
    "ttg.local_load": "load",
    "triton_gpu.local_load": "load",
    "ttng.tmem_load": "tmem_load",
    "ttng.tmem_store": "tmem_store",
    "amdg.in_thread_transpose": "convert",
    "tt.dot": "operand",
    "tt.dot_scaled": "operand",
    "ttng.warp_group_dot": "operand",
    "ttng.tc_gen5_mma": "operand",
    "ttng.tc_gen5_mma_scaled": "operand",
    "tt.load": "global_load",
    "amdg.buffer_load": "global_load",
    "tt.store": "global_store",
    "amdg.buffer_store": "global_store",
    "amdg.buffer_load_to_local": "store",
}
#: role -> classes of compiled instructions it emits (ttg.async_copy_global_to_local: see ASYNC_COPY)
CLASSES_OF_ROLE = {
    "convert": ("shared_store", "shared_load", "stmatrix", "ldmatrix", "shuffle", "barrier", "dsmem_store",
                "dsmem_load"),
    "store": ("shared_store", "stmatrix", "barrier"),
    "load": ("shared_load", "ldmatrix", "barrier"),
    "global_load": ("global_load",),
    "global_store": ("global_store",),
    "tmem_load": ("tmem_load",),
    "tmem_store": ("tmem_store",),
    "view": (),
    "operand": (),
}
#: the classes that carry an op's data (not its barriers or register moves): an op whose location
#: holds none of them has had its instructions attributed elsewhere
MAIN_CLASSES = frozenset({"shared_store", "shared_load", "stmatrix", "ldmatrix", "shuffle", "dsmem_store", "dsmem_load",
                          "global_load", "global_store", "async_copy", "tmem_load", "tmem_store"})
#: copies from global to shared memory without registers (cp.async, AMD direct-to-LDS loads)
ASYNC_COPY = ("ttg.async_copy_global_to_local", "triton_gpu.async_copy_global_to_local", "amdg.buffer_load_to_local")
#: an AMD copy with a mask and an ``other`` value first writes ``other`` with ``ds_write``
ASYNC_COPY_CLASSES = ("async_copy", "shared_store", "barrier")
_SHARED = ("shared_store", "shared_load", "barrier", "shuffle")
#: ops that are not layout ops but emit instructions of these classes themselves
SIDE_OPS = {
    "tt.reduce": _SHARED, "tt.scan": _SHARED, "tt.histogram": _SHARED, "tt.gather": _SHARED,
    "tt.atomic_rmw": ("global_load", "global_store"), "tt.atomic_cas": ("global_load", "global_store"),
    "ttg.barrier": ("barrier",), "amdg.cond_barrier": ("barrier",), "rocdl.s.barrier": ("barrier",),
    "gpu.barrier": ("barrier",), "ttng.async_tma_copy_global_to_local": ("tma",),
    "ttng.async_tma_copy_local_to_global": ("tma",), "tt.descriptor_load": ("tma", "global_load"),
    "tt.descriptor_store": ("tma", "global_store"), "tt.print": ("global_store",), "tt.assert": ("global_store",),
}
VIEW_PREFIXES = ("ttg.memdesc_", "triton_gpu.memdesc_")
OPERAND_NAMES = ("A", "B", "C", "D")


def role_of(name: str) -> str | None:
    if name in ROLES:
        return ROLES[name]
    if name.startswith(VIEW_PREFIXES):
        return "view"
    return None


def is_scanned_op(name: str) -> bool:
    """Ops the scan reads: layout ops and the side ops that share their instruction classes."""
    return role_of(name) is not None or name in SIDE_OPS


def classes_of(op_name: str, role: str) -> tuple:
    """Compiled instruction classes an op of ``role`` emits."""
    if op_name in ASYNC_COPY:
        return ASYNC_COPY_CLASSES
    return CLASSES_OF_ROLE.get(role, ())


@dataclass
class Transfer:
    """One layout transfer of an op: its role, source and target types (text), and for a matrix
    instruction's operand its name (``A``, ``B``, ``C``)."""
    role: str
    source: str | None   # type text
    target: str | None
    operand: str | None = None  # "A"/"B"/"C" for matrix-instruction operands


def transfers(op) -> list[Transfer]:
    """The layout transfers of one op (empty when its signature carries no layouts, e.g. a
    ``local_alloc`` without an initial value, or a tensor-memory operand)."""
    role = role_of(op.name)
    ins, outs = op.operand_types, op.result_types
    if role is None:
        return []
    if role == "operand":
        # A, B and the accumulator C (operands, in order; tc_gen5_mma's later operands are barriers)
        types = ins[:3] if len(ins) >= 3 else ins + outs[:1]  # the accumulator may be printed as the result only
        return [Transfer("operand", t, None, OPERAND_NAMES[i])
                for i, t in enumerate(types) if "#" in t and "tensor_memory" not in t]
    if role in ("store", "tmem_store"):
        src = next((t for t in ins if t.startswith("tensor<")), None)
        dst = next((t for t in outs + ins if "memdesc" in t), None)
        if src is None or dst is None:
            return []
        return [Transfer(role, src, dst)]
    if role in ("load", "tmem_load"):
        src = next((t for t in ins if "memdesc" in t), None)
        dst = next((t for t in outs if t.startswith("tensor<")), None)
        if src is None or dst is None:
            return []
        return [Transfer(role, src, dst)]
    if role == "view":
        src = next((t for t in ins if "memdesc" in t), None)
        dst = next((t for t in outs if "memdesc" in t), None)
        if src is None or dst is None:
            return []
        return [Transfer("view", src, dst)]
    if role == "convert":
        if len(ins) >= 1 and len(outs) >= 1:
            return [Transfer("convert", ins[0], outs[0])]
        return []
    if role in ("global_load", "global_store"):
        t = next((t for t in ins + outs if t.startswith("tensor<")), None)
        return [Transfer(role, t, None)] if t is not None and "#" in t else []
    return []
