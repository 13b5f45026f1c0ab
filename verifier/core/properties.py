"""Properties of one layout: coverage, replication, linearity, and for memory layouts the bank
behaviour of plain warp-wide accesses.

``properties(layout)`` returns a JSON-able dict:

``kind``, ``hardware``, ``logical``
    ``"register"`` or ``"memory"``; the dims and sizes.
``injective`` / ``surjective`` / ``bijective``
    no element has two holders / every element has a holder (else the layout is *partial* and
    ``uncovered`` counts the elements without holder, ``uncovered_example`` names one).
``f2_linear``
    checked, never assumed (power-of-two sizes and ``L(a ^ b) == L(a) ^ L(b)``); with it
    ``zero_bases``: per hardware dim, the bit indices whose basis is zero (Triton's broadcast).
``holders``
    ``min`` / ``max`` number of hardware locations holding one (covered) element.
``replication``
    per hardware dim ``h``: the largest number of indices along ``h`` (the other dims fixed)
    that hold the same element as one location does; 1 means ``h`` never replicates. A zero F2
    basis doubles it; for F2 layouts it is ``2 ** dim(kernel of L restricted to h)`` and the same
    at every location (``replication_uniform``).
``registers_per_thread``, ``threads``, ``contiguity`` (register layouts)
    the register count, the number of (lane, warp, block) threads, and the elements per vector
    along the last logical dim (:func:`layoutverify.core.conversion.contiguity`).
``bank_conflicts`` (memory layouts)
    for ``element_bits``-wide elements, one warp of 32 lanes reading the tensor in three plain
    patterns, per :mod:`layoutverify.core.banks`: ``row`` (lane ``l`` of instruction ``i`` reads the flat
    row-major element ``32*i + l``), ``column`` (the same in column-major order: the first
    logical dim fastest), both one element per lane per instruction, and ``row_vector`` (each
    lane reads 16 bytes of consecutive row-major elements, vectorized where the layout allows). Only block 0 of a multi-block memory layout is used.
"""
from __future__ import annotations

import numpy as np

from layoutverify.core import expr as E
from layoutverify.core.banks import bank_conflicts, dense_ids, element_bytes
from layoutverify.core.errors import LayoutError, SizeLimitError
from layoutverify.core.layout import Layout

MAX_LOCATIONS = 1 << 22


def properties(layout: Layout, *, element_bits: int = 16) -> dict:
    """See the module docstring."""
    if not isinstance(layout, Layout):
        raise LayoutError(f"properties needs a Layout, got {type(layout).__name__}")
    n = layout.in_size()
    if n > MAX_LOCATIONS:
        raise SizeLimitError(f"layout has {n} hardware locations; properties handles at most {MAX_LOCATIONS}")
    layout.check_in_range()
    out: dict = {"kind": layout.kind,
                 "hardware": {k: v for k, v in layout.in_dims},
                 "logical": {k: v for k, v in layout.out_dims}}
    flat = layout.flat_table()
    counts = np.bincount(flat, minlength=layout.out_size())
    covered = counts > 0
    out["injective"] = bool(counts.max(initial=0) <= 1)
    out["surjective"] = bool(covered.all())
    out["bijective"] = out["injective"] and out["surjective"]
    if not out["surjective"]:
        out["uncovered"] = int((~covered).sum())
        out["uncovered_example"] = [int(x) for x in np.unravel_index(int(np.argmax(~covered)), layout.out_sizes)]
    out["holders"] = {"min": int(counts[covered].min()) if covered.any() else 0,
                      "max": int(counts.max(initial=0))}
    f2 = layout.f2_bases()
    out["f2_linear"] = f2 is not None
    if f2 is not None:
        out["zero_bases"] = {d: [i for i, v in enumerate(vs) if not any(v)] for d, vs in f2.items()}
    rep, uniform = replication(layout)
    out["replication"] = rep
    out["replication_uniform"] = uniform
    if layout.kind == "register":
        from layoutverify.core.conversion import contiguity
        out["registers_per_thread"] = layout.in_size("register")
        out["threads"] = layout.in_size("lane") * layout.in_size("warp") * layout.in_size("block")
        out["contiguity"] = contiguity(layout)
    else:
        out["bank_conflicts"] = memory_bank_conflicts(layout, element_bits)
    return out


def replication(layout: Layout) -> tuple[dict, bool]:
    """Per hardware dim: the largest number of indices along it (other dims fixed) holding the
    same element as one location; and whether that number is the same at every location."""
    hw = layout.hardware_indices()
    flat = layout.flat_table()
    rep, uniform = {}, True
    for i, name in enumerate(layout.in_names):
        others = [hw[:, j] for j in range(hw.shape[1]) if j != i]
        gid = dense_ids(*others, flat) if others else dense_ids(flat)
        per = np.bincount(gid)[gid]
        rep[name] = int(per.max(initial=1))
        uniform = uniform and bool((per == per[0]).all()) if per.size else uniform
    return rep, uniform


def access_pattern(shape, lanes: int = 32, order: str = "row", vector: int = 1) -> Layout:
    """A one-warp register layout reading the whole tensor: instruction (register group) ``i``,
    lane ``l``, slot ``j < vector`` reads the element of flat index ``(lanes*i + l)*vector + j`` in
    row-major (``order="row"``) or column-major (first dim fastest, ``"column"``) order."""
    total = int(np.prod(shape))
    if total % vector:
        raise LayoutError(f"{total} elements do not split into vectors of {vector}")
    per_lane = total // vector
    lanes = min(lanes, per_lane)
    if per_lane % lanes:
        raise LayoutError(f"{per_lane} vectors do not split over {lanes} lanes")
    nreg = (per_lane // lanes) * vector
    reg = np.tile(np.arange(nreg), lanes)
    lane = np.repeat(np.arange(lanes), nreg)
    idx = ((reg // vector) * lanes + lane) * vector + reg % vector
    if order == "row":
        coords = np.stack(np.unravel_index(idx, shape), axis=1)
    elif order == "column":
        coords = np.stack(np.unravel_index(idx, shape, order="F"), axis=1)
    else:
        raise LayoutError(f"unknown access order {order!r}")
    # from_table wants the first hardware dim fastest: register fastest, then lane
    table = np.empty_like(coords)
    table[reg + nreg * lane] = coords
    return Layout.from_table([("register", nreg), ("lane", lanes)], list(shape), table)


def _block0(layout: Layout) -> Layout:
    if "block" not in layout.in_names or layout.in_size("block") == 1:
        return layout
    sub = {"block": E.Const(0)}
    return Layout([(n, s) for n, s in layout.in_dims if n != "block"], layout.out_dims,
                  [E.substitute(e, sub) for e in layout.exprs])


def memory_bank_conflicts(layout: Layout, element_bits: int = 16) -> dict:
    """Bank behaviour of the three plain warp access patterns (module docstring)."""
    ebytes = element_bytes(element_bits)
    shared = _block0(layout)
    if not shared.is_surjective():
        return {"skipped": "the memory layout does not hold every element"}
    shape = list(layout.out_sizes)
    out = {}
    vec = max(1, 16 // ebytes)
    for name, order, v in (("row", "row", 1), ("column", "column", 1), ("row_vector", "row", vec)):
        try:
            reg = access_pattern(shape, order=order, vector=v)
        except LayoutError as e:
            out[name] = {"skipped": str(e)}
            continue
        # scalar patterns stay scalar: one element per lane per instruction
        out[name] = bank_conflicts(reg, shared, element_bits, max_vector_bytes=v * ebytes).to_json()
    return out
