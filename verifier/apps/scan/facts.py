"""Facts of a layout op: the memory, shuffle and barrier instructions it executes, estimated from
its layouts or read from the compiled code, and their cost under :mod:`layoutverify.core.cost`.

**Counts** are static instructions of one thread's program, per class of :mod:`.compiled` and per
width (bytes one lane moves): ``{"shared_store": {16: 4}, "barrier": {0: 2}}``. Every warp of the
CTA executes each of them once, so per CTA (the unit of the cost model's facts,
:class:`~layoutverify.core.cost.ConversionFacts`):

* shared memory (``shared_store``/``shared_load``, the shared side of ``async_copy``, and another
  CTA's ``dsmem_*``): ``warps x ceil(lanes x max(w, 4) / (banks x 4))`` wavefronts per instruction
  (one wavefront moves one word of every bank; the bank model's phases), times the op's
  **conflict factor** (its bank model's wavefronts over the conflict-free count, 1 where no bank
  model applies);
* ``ldmatrix``/``stmatrix``: one wavefront per 8x8 matrix (128 bytes) per warp, times the factor;
* global memory (``global_load``/``global_store`` and the global side of ``async_copy``): the
  128-byte lines a warp's instruction touches (:func:`global_lines`, from the op's layout and
  the dim memory is contiguous along), per warp and instruction; where the layout does not say,
  ``ceil(lanes x w / 128)`` (coalesced);
* ``shuffle``: one warp shuffle per instruction and warp; ``barrier``: one CTA barrier;
  ``tma``, ``tmem_*``: counted, not costed. Register moves (``prmt``, ``selp``, ``v_perm``) are
  not facts of a layout op: the line tables cannot tell them from the arithmetic around it.

**Estimates from the layouts** (:func:`estimate_counts`) follow what Triton's lowering does with
them:

* stores and loads through a shared layout execute the bank model's instructions, or the
  ``ldmatrix``/``stmatrix``/gfx950 transposing reads Triton picks for MMA operands
  (:func:`matrix_instruction`);
* a conversion through shared memory stores every element of the source once and loads every
  element of the destination, in vectors of 4 to 16 bytes (Triton's swizzled scratch buffer
  packs at least 32 bits and lets its register bases form the vector), in
  :func:`scratch_rounds` rounds with a barrier between the stores and the loads of each and
  between rounds;
* a shuffle conversion receives each 32-bit word a thread does not hold itself with one ``shfl``
  (:func:`shuffled_words`); a register permutation moves nothing between threads (a rename or a
  lane-dependent select, :func:`rename_or_select`, neither a memory instruction);
* a global access moves each thread's contiguous run along the layout's fastest dim in one
  vector (16 bytes at most); an AMD ``async_copy`` with a mask and an ``other`` value also writes
  ``other`` to shared memory first.
"""
from __future__ import annotations

import math

import numpy as np

from layoutverify.core.cost import ConversionFacts, constants, op_cycles

MAX_VECTOR_BYTES = 16
LINE_BYTES = 128
SHARED_CLASSES = ("shared_store", "shared_load", "dsmem_store", "dsmem_load")
MATRIX_CLASSES = ("ldmatrix", "stmatrix")
GLOBAL_CLASSES = ("global_load", "global_store")


def add(counts: dict, cls: str, width: int, n: float) -> None:
    if n:
        d = counts.setdefault(cls, {})
        d[int(width)] = d.get(int(width), 0) + n


def totals(counts: dict) -> dict:
    """Instructions per class (all widths)."""
    return {cls: round(sum(by.values()), 3) for cls, by in sorted(counts.items())}


def facts_of(counts: dict, *, warps: int, lanes: int, banks: int, elements: int, element_bytes: int,
             conflict: dict | None = None, lines: dict | None = None) -> ConversionFacts:
    """Per-CTA facts of static per-thread ``counts`` (see the module docstring). ``lines``:
    ``{class: {width: 128-byte lines per warp instruction}}`` of global accesses where the
    layout says it (:func:`global_lines`); otherwise a warp's access is taken as coalesced."""
    conflict = conflict or {}
    lines = lines or {}
    f = ConversionFacts(warps=warps, elements=elements, element_bytes=element_bytes)
    store = load = glob = 0.0
    for cls, by in counts.items():
        k = conflict.get(cls, 1.0)
        for w, n in by.items():
            per = n * warps
            if cls in SHARED_CLASSES or cls == "async_copy":
                waves = per * math.ceil(lanes * max(w, 4) / (banks * 4)) * k
                if cls in ("shared_store", "dsmem_store", "async_copy"):
                    store += waves
                else:
                    load += waves
                if cls == "async_copy":
                    glob += per * math.ceil(lanes * w / LINE_BYTES)
            elif cls in MATRIX_CLASSES:
                waves = per * max(1, w // 4) * k
                if cls == "stmatrix":
                    store += waves
                else:
                    load += waves
            elif cls in GLOBAL_CLASSES:
                known = lines.get(cls, {}).get(w)
                glob += per * (known if known is not None else math.ceil(lanes * max(w, 1) / LINE_BYTES))
            elif cls == "shuffle":
                f.shuffles += per
            elif cls == "data_move":
                f.data_moves += per
            elif cls == "barrier":
                f.barriers += n
    f.store_wavefronts, f.load_wavefronts, f.global_wavefronts = store, load, glob
    return f


def cost_of(counts: dict, target, *, warps: int, elements: int, element_bytes: int, conflict=None,
            lines=None) -> dict:
    """``{"facts", "cycles", "predicted_ns"}`` of ``counts`` on ``target`` (:mod:`.target`)."""
    f = facts_of(counts, warps=warps, lanes=target.lanes, banks=target.banks, elements=elements,
                 element_bytes=element_bytes, conflict=conflict, lines=lines)
    c = constants("H100")
    cyc = op_cycles(f, table=c)
    return {"facts": _round(f.to_json()), "cycles": round(cyc, 2),
            "predicted_ns": round(cyc / (c["clock_mhz"] / 1000.0), 2)}


def _round(d: dict) -> dict:
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in d.items()}


# ---------------------------------------------------------------------------------------------
# Estimates from the layouts
def per_thread_elements(layout) -> int:
    """Distinct elements one thread holds (the most over threads)."""
    bases = layout.f2_bases()
    if bases is not None:
        from layoutverify.core import f2 as F2
        pack = F2.Packing(layout.out_sizes)
        return 1 << F2.rank(pack.pack(v) for v in bases.get("register", []))
    from layoutverify.core.banks import dense_ids, distributed_columns
    c = distributed_columns(layout)
    thread = dense_ids(c["block"], c["warp"], c["lane"])
    pairs = np.unique(thread * layout.out_size() + c["element"])
    return int(np.bincount(pairs // layout.out_size()).max(initial=1))


def fastest_run(layout) -> tuple[int | None, int]:
    """``(dim, run)``: the logical dim the thread's first register steps along and how many
    consecutive elements along it the leading register bases cover (Triton's
    ``getContigPerThread`` on the layout's fastest dim); ``(None, 1)`` for non-F2 layouts."""
    bases = layout.f2_bases()
    if bases is None:
        return None, 1
    regs = [tuple(v) for v in bases.get("register", []) if any(v)]
    if not regs:
        return None, 1
    first = regs[0]
    nz = [i for i, c in enumerate(first) if c]
    if len(nz) != 1 or first[nz[0]] != 1:
        return None, 1
    d = nz[0]
    run = 1
    for v in regs:
        want = tuple(run if i == d else 0 for i in range(len(v)))
        if v != want:
            break
        run *= 2
    return d, run


def vector(layout, element_bytes: int) -> int:
    """Elements of one vector access along the fastest dim (16 bytes at most)."""
    _, run = fastest_run(layout)
    return max(1, min(run, MAX_VECTOR_BYTES // max(1, element_bytes)))


def global_lines(layout, element_bytes: int, vector_elems: int, fast_dim: int) -> float | None:
    """L1 wavefronts (128-byte lines) one warp-wide global access touches, on average over the
    thread's accesses, when memory is contiguous along ``fast_dim`` and each thread moves runs
    of ``vector_elems`` elements along it per instruction (a thread's i-th run, in register
    order, is instruction i). Rows (the other coordinates) are taken to lie in different lines,
    as in any tensor whose rows are at least 128 bytes apart. None when the layout is too large."""
    from layoutverify.core.banks import dense_ids, distributed_columns, first_per_group
    if layout.in_size() > (1 << 20):
        return None
    c = distributed_columns(layout)
    coords = np.asarray(layout.table()).reshape(layout.in_size(), -1)
    lanes, warps = layout.in_size("lane"), layout.in_size("warp")
    thread = c["lane"] + lanes * (c["warp"] + warps * c["block"])
    warp = c["warp"] + warps * c["block"]
    keep = first_per_group(dense_ids(thread, c["element"]), c["register"])
    coords, thread, warp, register = coords[keep], thread[keep], warp[keep], c["register"][keep]
    fast = coords[:, fast_dim]
    others = [coords[:, d] for d in range(coords.shape[1]) if d != fast_dim] or [np.zeros_like(fast)]
    row = dense_ids(*others)
    access = dense_ids(thread, row, fast // max(1, vector_elems))
    lead = first_per_group(access, register)
    instr = dense_ids(register[lead])
    line = dense_ids(row[lead], (fast[lead] * element_bytes) // LINE_BYTES)
    per = np.unique(np.stack([warp[lead], instr, line]), axis=1)
    lines_per_instr = np.bincount(dense_ids(per[0], per[1]))
    return float(lines_per_instr.mean()) if lines_per_instr.size else None


def words_per_thread(layout, element_bytes: int) -> int:
    return max(1, math.ceil(per_thread_elements(layout) * element_bytes / 4))


def rename_or_select(a, b, element_bytes: int = 4) -> str:
    """How a same-thread conversion moves its registers:

    * ``rename``: one register map serves every thread (register ``r`` of ``b`` holds what
      register ``m(r)`` of ``a`` holds, in every thread) and it keeps the 32-bit words that
      ``4 / element_bytes`` elements are packed into: the registers are renamed, no instruction;
    * ``permute``: one map serves every thread but moves elements between packed words: a byte
      permute (``prmt``) per word, the same in every lane;
    * ``select``: which register holds an element depends on the lane or warp: a select per word."""
    ga, gb = _grid(a), _grid(b)
    if ga is None or gb is None or ga.shape[0] != gb.shape[0]:
        return "select"
    mapping = []
    for r in range(gb.shape[1]):
        cand = np.nonzero(ga[0] == gb[0, r])[0]          # thread 0's candidates, then check every thread
        same = cand[(ga[:, cand] == gb[:, r:r + 1]).all(axis=0)] if cand.size else cand
        if not same.size:
            return "select"
        mapping.append([int(x) for x in same])
    per_word = max(1, 4 // max(1, element_bytes))
    if per_word == 1:
        return "rename"
    for k in range(0, len(mapping), per_word):
        group = mapping[k:k + per_word]
        if not any(all((base + i) in group[i] for i in range(len(group)))
                   for base in group[0] if base % per_word == 0):
            return "permute"
    return "rename"


def _grid(layout):
    """``grid[thread, register]`` = flat element (threads ``lane + lanes * (warp + warps * block)``)."""
    from layoutverify.core.banks import distributed_columns
    if layout.in_size() > (1 << 20):
        return None
    c = distributed_columns(layout)
    lanes, warps = layout.in_size("lane"), layout.in_size("warp")
    thread = c["lane"] + lanes * (c["warp"] + warps * c["block"])
    grid = np.full((int(thread.max(initial=0)) + 1, layout.in_size("register")), -1, dtype=np.int64)
    grid[thread, c["register"]] = c["element"]
    return grid


def register_bases(layout) -> list:
    """The layout's non-zero register bases (broadcast registers removed), or [] when not F2."""
    bases = layout.f2_bases()
    return [tuple(v) for v in bases.get("register", []) if any(v)] if bases else []


def scratch_rounds(src, dst, bits: int) -> int:
    """Rounds of a conversion through Triton's scratch buffer (a barrier between the stores and
    the loads of each round, and between rounds: ``2 * rounds - 1`` barriers).

    Triton (3.x ``optimalSwizzling``, the ``ld.shared``/``st.shared`` lowering) vectorises over
    the register bases both layouts share, up to 128 bits (``log2(128 / bits)`` of them); each
    further shared register basis is a repetition the buffer need not hold at once, done in its
    own round. Where Triton lowers through ``ldmatrix``/``stmatrix`` it may keep more rounds
    (measured: up to 4x); this estimate follows the plain path."""
    ra, rb = register_bases(src), set(register_bases(dst))
    common = sum(1 for v in ra if v in rb)
    vec = max(0, (128 // max(1, bits)).bit_length() - 1)
    return 1 << max(0, common - vec)


def shuffled_words(src, dst, element_bytes: int) -> int:
    """32-bit words of the destination a thread receives from other lanes (each one ``shfl``):
    its registers whose element it does not hold itself, packed ``4 / element bytes`` a word."""
    ga, gb = _grid(src), _grid(dst)
    if ga is None or gb is None or ga.shape[0] != gb.shape[0]:
        return words_per_thread(dst, element_bytes)
    moved = 0
    for t in range(gb.shape[0]):
        own = set(int(x) for x in ga[t])
        moved = max(moved, sum(1 for x in gb[t] if int(x) not in own and x >= 0))
    return max(1, math.ceil(moved * element_bytes / 4)) if moved else 0


def matrix_instruction(role: str, reg_type: str | None, target, element_bits: int, access_bytes: int) -> str | None:
    """The matrix or transposing instruction Triton lowers a shared-memory access to, where it does
    (its ``lowerLdStMatrix`` and the AMD back end's transposed reads), else None:

    * NVIDIA sm_75+: ``ldmatrix`` for a ``local_load`` into a ``dot_op`` operand of an
      ``nvidia_mma`` of 16-bit elements, or of 8-bit ones read along K (``.trans`` is 16-bit only);
    * NVIDIA sm_90+: ``stmatrix`` for a ``local_store``/``local_alloc`` of a 16-bit ``nvidia_mma``
      accumulator;
    * gfx950: ``ds_read_b64_tr_b16/b8`` for a ``local_load`` into an ``amd_mfma`` ``dot_op`` of
      16- or 8-bit elements that are not contiguous along K in memory (access under 8 bytes)."""
    if not reg_type or target is None:
        return None
    dot = "dot_op" in reg_type
    arch = target.arch or ""
    sm = int(arch[3:]) if arch.startswith("sm_") and arch[3:].isdigit() else 0
    if target.vendor == "nvidia" and sm >= 75 and "nvidia_mma" in reg_type:
        if role == "load" and dot and (element_bits == 16 or (element_bits == 8 and access_bytes >= 4)):
            return "ldmatrix"
        if role == "store" and not dot and sm >= 90 and element_bits == 16:
            return "stmatrix"
    if target.arch == "gfx950" and role == "load" and dot and "amd_mfma" in reg_type and element_bits in (8, 16) \
            and access_bytes < 8:
        return "ds_read_tr"
    return None


def estimate_counts(role: str, op_name: str, *, src=None, dst=None, element_bytes: int = 2, mechanism=None,
                    banks_report: dict | None = None, move: str | None = None, target=None,
                    reg_type: str | None = None, fill: bool = False) -> tuple[dict, dict]:
    """``(counts, conflict factors)`` of one layout op from its layouts alone (module docstring)."""
    counts: dict = {}
    conflict: dict = {}
    eb = max(1, element_bytes)
    if role in ("store", "load") and banks_report:
        rep = banks_report
        cls = "shared_store" if role == "store" else "shared_load"
        if op_name.endswith(("async_copy_global_to_local", "buffer_load_to_local")):
            cls = "async_copy"
        special = rep.get("instruction")
        if special in ("ldmatrix", "stmatrix"):
            cls = special
        add(counts, cls, rep["access_bytes"], rep["instructions"])
        if cls == "async_copy" and fill and target is not None and target.vendor == "amd":
            # AMD's direct-to-LDS loads cannot substitute a value for masked-off elements: the
            # copy first writes ``other`` to the buffer
            add(counts, "shared_store", rep["access_bytes"], rep["instructions"])
        if rep.get("total_ideal"):
            conflict[cls] = rep["total_wavefronts"] / rep["total_ideal"]
    elif role in ("global_load", "global_store") and src is not None:
        v = vector(src, eb)
        add(counts, role, v * eb, math.ceil(per_thread_elements(src) / v))
    elif role == "convert" and src is not None and dst is not None:
        if mechanism in ("intra_cta", "cross_cta"):
            for cls, lay in (("shared_store", src), ("shared_load", dst)):
                nbytes = per_thread_elements(lay) * eb
                width = max(4, min(MAX_VECTOR_BYTES, nbytes))
                if mechanism == "cross_cta":
                    cls = "dsmem_" + cls.split("_")[1]
                add(counts, cls, width, math.ceil(nbytes / width))
            add(counts, "barrier", 0, 2 * scratch_rounds(src, dst, eb * 8) - 1)
        elif mechanism == "intra_warp":
            add(counts, "shuffle", 4, shuffled_words(src, dst, eb))
    return counts, conflict
