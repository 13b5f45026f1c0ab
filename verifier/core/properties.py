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
``warnings`` (see :func:`layout_warnings`)
    a list of ``{"code", "message"}``: properties that are legal but usually a mistake.
``bank_conflicts`` (memory layouts)
    for ``element_bits``-wide elements, one warp of 32 lanes (64 on AMD: ``arch="cdna3"`` or
    ``"cdna4"``, with that architecture's LDS banks) reading the tensor in three plain
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


def properties(layout: Layout, *, element_bits: int = 16, arch: str = "nvidia", num_warps: int | None = None) -> dict:
    """See the module docstring. ``arch`` picks the bank model (:mod:`layoutverify.core.banks`),
    ``num_warps`` the module's warp count that the layout's warps are checked against."""
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
        out["bank_conflicts"] = memory_bank_conflicts(layout, element_bits, arch=arch)
    out["warnings"] = layout_warnings(layout, num_warps=num_warps)
    return out


# ---------------------------------------------------------------------------------------------
# Warnings: legal layouts that are usually a mistake
# ---------------------------------------------------------------------------------------------
#: warning codes (the names corpora assert with ``expect_warnings``)
WARNING_CODES = ("replicated_registers", "num_warps", "not_restriction")


def _warning(code: str, message: str, **extra) -> dict:
    return {"code": code, "message": message, **extra}


def register_copies(layout: Layout) -> int:
    """How many registers of one thread hold each of its values, when that number is the same
    for every value of every thread (1 otherwise): ``2 ** (zero register bases)`` for F2 layouts."""
    if layout.kind != "register" or "register" not in layout.in_names or layout.in_size("register") == 1:
        return 1
    f2 = layout.f2_bases()
    if f2 is not None:
        return 1 << sum(1 for v in f2.get("register", []) if not any(v))
    if layout.in_size() > MAX_LOCATIONS:
        return 1
    hw = layout.hardware_indices()
    thread = [hw[:, i] for i, n in enumerate(layout.in_names) if n != "register"]
    gid = dense_ids(*thread, layout.flat_table())
    per = np.bincount(gid)
    return int(per[0]) if per.size and (per == per[0]).all() else 1


def layout_warnings(layout: Layout, *, num_warps: int | None = None) -> list[dict]:
    """Warnings about one layout:

    ``replicated_registers``
        every value a thread holds sits in ``N > 1`` of its registers (zero register bases in
        Triton's terms): ``N - 1`` of every ``N`` registers are wasted copies.
    ``num_warps``
        a register layout whose ``warp`` dim has another size than the module's ``num_warps``
        (``"ttg.num-warps"``): Triton rejects such a layout in that module, or it means a
        different kernel configuration than the one meant.
    """
    out = []
    copies = register_copies(layout)
    if copies > 1:
        f2 = layout.f2_bases() or {}
        bits = [i for i, v in enumerate(f2.get("register", [])) if not any(v)]
        out.append(_warning("replicated_registers",
                            f"every value is held {copies} times in each thread's registers"
                            + (f" (zero register bases at bits {bits})" if bits else "")
                            + f": {copies - 1} of every {copies} registers are copies", copies=copies))
    if num_warps is not None and layout.kind == "register":
        warps = layout.in_size("warp") if "warp" in layout.in_names else 1
        if warps != int(num_warps):
            out.append(_warning("num_warps", f"the layout spreads over {warps} warps but the module has "
                                             f"num-warps = {num_warps}", warps=warps, num_warps=int(num_warps)))
    return out


def subtile_warning(parent: Layout, child: Layout, offsets) -> dict | None:
    """``not_restriction`` when ``child`` (a sub-tile: ``extract_slice`` of a register tensor,
    ``memdesc_subview``/``memdesc_subslice`` of a memory one) starting at ``offsets`` of
    ``parent`` is not the parent's layout restricted to that tile, else None.

    Register layouts: every thread (``lane, warp, block``) must hold in ``child`` exactly the
    elements of the tile it holds in ``parent`` (register order free). Memory layouts: every
    element of the tile must sit at the same offset relative to the tile's first element
    (and in the same block) in ``child`` as in ``parent``. The warning names one element
    where they differ."""
    offsets = [int(o) for o in offsets]
    if len(offsets) != len(parent.out_sizes) or len(child.out_sizes) != len(parent.out_sizes):
        raise LayoutError(f"sub-tile: parent has rank {len(parent.out_sizes)}, child rank {len(child.out_sizes)}, "
                          f"offsets {offsets}")
    for d, (o, c, p) in enumerate(zip(offsets, child.out_sizes, parent.out_sizes)):
        if o < 0 or o + c > p:
            raise LayoutError(f"sub-tile: dim{d} [{o}, {o + c}) lies outside the parent's size {p}")
    if parent.kind != child.kind:
        raise LayoutError(f"sub-tile: the parent is a {parent.kind} layout, the child a {child.kind} layout")
    for lay in (parent, child):
        if lay.in_size() > MAX_LOCATIONS:
            raise SizeLimitError(f"sub-tile check: {lay.in_size()} hardware locations, at most {MAX_LOCATIONS}")
    ct, pt = child.table(), parent.table()
    shifted = ct + np.array(offsets)[None, :]
    inside = np.all((pt >= np.array(offsets)) & (pt < np.array(offsets) + np.array(child.out_sizes)), axis=1)
    pflat = np.ravel_multi_index(pt.T, parent.out_sizes)
    cflat = np.ravel_multi_index(shifted.T, parent.out_sizes)
    if parent.kind == "register":
        def threads(lay):
            hw = lay.hardware_indices()
            cols = [hw[:, lay.in_names.index(n)] if n in lay.in_names else np.zeros(len(hw), dtype=np.int64)
                    for n in ("lane", "warp", "block")]
            return np.stack(cols, axis=1)
        pth, cth = threads(parent)[inside], threads(child)
        a = {(tuple(t), int(e)) for t, e in zip(pth.tolist(), pflat[inside].tolist())}
        b = {(tuple(t), int(e)) for t, e in zip(cth.tolist(), cflat.tolist())}
        if a == b:
            return None
        (t, e), side = (next(iter(b - a)), "child") if b - a else (next(iter(a - b)), "parent")
        coord = [int(x) for x in np.unravel_index(e, parent.out_sizes)]
        held = "holds it in the sub-tile but not in the parent" if side == "child" else \
            "holds it in the parent but not in the sub-tile"
        return _warning("not_restriction",
                        f"the sub-tile's layout is not the parent's restricted to the tile at {offsets}: thread "
                        f"(lane {t[0]}, warp {t[1]}, block {t[2]}) {held}: element {coord}",
                        thread={"lane": t[0], "warp": t[1], "block": t[2]}, element=coord)
    # memory: offset of each element relative to the tile's first element
    def addresses(lay, flat, rows):
        hw = lay.hardware_indices()[rows]
        off = hw[:, lay.in_names.index("offset")] if "offset" in lay.in_names else np.zeros(len(hw), dtype=np.int64)
        blk = hw[:, lay.in_names.index("block")] if "block" in lay.in_names else np.zeros(len(hw), dtype=np.int64)
        best: dict = {}
        for e, o, bl in zip(flat.tolist(), off.tolist(), blk.tolist()):
            if e not in best or (bl, o) < best[e]:
                best[e] = (bl, o)
        return best
    pa = addresses(parent, pflat[inside], np.nonzero(inside)[0])
    ca = addresses(child, cflat, np.arange(len(cflat)))
    first = int(np.ravel_multi_index(offsets, parent.out_sizes))
    p0, c0 = pa.get(first), ca.get(first)
    for e in sorted(set(pa) | set(ca)):
        pe, ce = pa.get(e), ca.get(e)
        if pe is None or ce is None or p0 is None or c0 is None or \
                (pe[0], pe[1] - p0[1]) != (ce[0], ce[1] - c0[1]):
            coord = [int(x) for x in np.unravel_index(e, parent.out_sizes)]
            return _warning("not_restriction",
                            f"the sub-tile's layout is not the parent's restricted to the tile at {offsets}: element "
                            f"{coord} is at offset {None if ce is None or c0 is None else ce[1] - c0[1]} from the "
                            f"tile's start in the sub-tile but {None if pe is None or p0 is None else pe[1] - p0[1]} "
                            f"in the parent", element=coord)
    return None


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


def memory_bank_conflicts(layout: Layout, element_bits: int = 16, *, arch: str = "nvidia") -> dict:
    """Bank behaviour of the three plain warp access patterns (module docstring); on AMD
    (``arch`` ``cdna3``/``cdna4``) a wave of 64 lanes."""
    from layoutverify.core.banks import ARCH_ALIASES, bank_model
    bank_model(arch)
    lanes = 32 if ARCH_ALIASES.get(str(arch).lower(), str(arch).lower()) == "nvidia" else 64
    ebytes = element_bytes(element_bits)
    shared = _block0(layout)
    if not shared.is_surjective():
        return {"skipped": "the memory layout does not hold every element"}
    shape = list(layout.out_sizes)
    out = {}
    vec = max(1, 16 // ebytes)
    for name, order, v in (("row", "row", 1), ("column", "column", 1), ("row_vector", "row", vec)):
        try:
            reg = access_pattern(shape, lanes=lanes, order=order, vector=v)
        except LayoutError as e:
            out[name] = {"skipped": str(e)}
            continue
        # scalar patterns stay scalar: one element per lane per instruction
        out[name] = bank_conflicts(reg, shared, element_bits, max_vector_bytes=v * ebytes, arch=arch).to_json()
    return out
