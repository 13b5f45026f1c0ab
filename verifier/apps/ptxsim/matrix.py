"""Matrix instructions: ``mma.sync`` (PTX ISA §9.7.14) and ``wgmma.mma_async`` (§9.7.15).

Which element of A, B, C and D each register of each lane holds is the PTX adapter's fragment
(:mod:`layoutverify.adapters.ptx`, read through the registry as a table): the interpreter
gathers the operand matrices of every warp (warpgroup) from the registers, and the machine's data
algebra (``m.dot``) makes every output element ``C[i, j] + sum_k A[i, k] * B[k, j]``.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .state import SimError

#: PTX element type -> (bytes, the term type of an element)
ELEMENTS = {"f16": (2, "f16"), "bf16": (2, "bf16"), "tf32": (4, "tf32"), "f32": (4, "f32"), "f64": (8, "f64"),
            "e4m3": (1, "e4m3"), "e5m2": (1, "e5m2"), "s8": (1, "i8"), "u8": (1, "i8"), "s32": (4, "i32")}


@lru_cache(maxsize=None)
def fragment(spec: str) -> np.ndarray:
    """``table[register, lane, warp] = (row, col)`` of a PTX-adapter fragment (``mma.m16n8k16.f16.A``)."""
    from layoutverify.adapters import parse_spec
    lay = parse_spec("ptx:" + spec)
    hw = lay.hardware_indices()
    tb = lay.table()
    names = list(lay.in_names)
    sizes = [lay.in_size(n) for n in ("register", "lane", "warp")]
    out = np.full(sizes + [2], -1, dtype=np.int64)
    r, ln, w = (hw[:, names.index(n)] for n in ("register", "lane", "warp"))
    out[r, ln, w] = tb[:, :2]
    return out


def _regs(op) -> list:
    return list(op) if isinstance(op, tuple) else [op]


def element_ids(m, ins, regs: list, ety: str, mask) -> np.ndarray:
    """``(threads, elements)`` term ids of the elements packed in ``regs`` (32-bit registers, the
    first element in the low bytes)."""
    nbytes, term_ty = ELEMENTS[ety]
    raw = np.concatenate([m.read(r, None if r.startswith("%") else 4) for r in regs], axis=1)
    n = raw.shape[1] // nbytes
    return np.stack([m.term_ids(raw[:, i * nbytes:(i + 1) * nbytes], term_ty, mask, ins) for i in range(n)], axis=1)


def write_elements(m, regs: list, ids: np.ndarray, ety: str, mask) -> None:
    """Write the terms ``ids`` (threads, elements) into ``regs`` (each as wide as it is declared)."""
    from layoutverify.apps.ptxsim.state import TAG0
    nbytes = ELEMENTS[ety][0]
    codes = TAG0 + 8 * ids[:, :, None] + np.arange(nbytes)[None, None, :]
    flat = codes.reshape(ids.shape[0], -1)
    per = flat.shape[1] // len(regs)
    for i, r in enumerate(regs):
        m.write(r, flat[:, i * per:(i + 1) * per], mask)


def gather(table: np.ndarray, ids: np.ndarray, rows: int, cols: int, groups: int, group_of_thread, slot_of_thread):
    """Operand matrices ``(groups, rows, cols)`` of term ids from per-thread element ids
    ``(threads, registers)``: ``table[register, lane, warp-in-group]`` gives each element's place."""
    out = np.full((groups, rows, cols), -1, dtype=np.int64)
    nreg = table.shape[0]
    lane_w = slot_of_thread                      # (threads, 2): lane, warp within the group
    for r in range(nreg):
        rc = table[r, lane_w[:, 0], lane_w[:, 1]]          # (threads, 2)
        out[group_of_thread, rc[:, 0], rc[:, 1]] = ids[:, r]
    return out


def op_mma(m, ins, mask) -> None:
    """``mma.sync.aligned.mMnNkK.row.col.dtype.atype.btype.ctype d, a, b, c``."""
    parts = ins.parts
    shape = next((p for p in parts if p.startswith("m") and "n" in p and "k" in p), None)
    if "sync" not in parts or shape is None or "sp" in parts:
        raise SimError(f"PTX line {ins.line}: {ins.opcode} is not modelled")
    types = [p for p in parts if p in ELEMENTS]
    if len(types) == 4:
        dty, aty, bty, cty = types
    elif len(types) == 2:                       # .f16.f16 shorthand for dtype ctype with f16 operands
        dty, cty = types
        aty = bty = "f16"
    else:
        raise SimError(f"PTX line {ins.line}: {ins.opcode}: cannot read the element types")
    if "row" not in parts or "col" not in parts:
        raise SimError(f"PTX line {ins.line}: {ins.opcode}: only .row.col is modelled")
    mm, rest = shape[1:].split("n")
    nn, kk = (int(x) for x in rest.split("k"))
    mm = int(mm)
    m.full_warps(ins, mask)
    d, a, b, c = (_regs(o) for o in ins.operands)
    fa = fragment(f"mma.{shape}.{aty}.A")
    fb = fragment(f"mma.{shape}.{bty}.B")
    fc = fragment(f"mma.{shape}.{cty}.C")
    fd = fragment(f"mma.{shape}.{dty}.C")
    A = element_ids(m, ins, a, aty, mask)
    B = element_ids(m, ins, b, bty, mask)
    C = element_ids(m, ins, c, cty, mask)
    warps = m.threads // 32
    slot = np.stack([m.lane, np.zeros_like(m.lane)], axis=1)
    Am = gather(fa, A, mm, kk, warps, m.warp, slot)
    Bm = gather(fb, B, kk, nn, warps, m.warp, slot)
    Cm = gather(fc, C, mm, nn, warps, m.warp, slot)
    # D element r of thread t: (row, col) from D's fragment
    rc = fd[:, m.lane, 0]                      # (registers, threads, 2)
    nreg = rc.shape[0]
    act = np.nonzero(mask)[0]
    w = m.warp[act]
    rows = rc[:, act, 0].T                     # (active, registers)
    cols = rc[:, act, 1].T
    c_ids = Cm[w[:, None], rows, cols].reshape(-1)
    a_ids = Am[w[:, None], rows, :].reshape(-1, kk)
    b_ids = np.transpose(Bm, (0, 2, 1))[w[:, None], cols, :].reshape(-1, kk)
    if (a_ids < 0).any() or (b_ids < 0).any() or (c_ids < 0).any():
        raise SimError(f"PTX line {ins.line}: {ins.opcode}: an operand element is missing from its fragment")
    out = m.dot(ELEMENTS[dty][1], c_ids, a_ids, b_ids)
    ids = np.full((m.threads, nreg), -1, dtype=np.int64)
    ids[act] = out.reshape(len(act), nreg)
    write_elements(m, d, np.where(ids < 0, 0, ids), dty, mask)



