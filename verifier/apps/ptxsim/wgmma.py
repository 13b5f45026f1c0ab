"""``wgmma`` (PTX ISA §9.7.15): warpgroup matrix products with operands in shared memory.

**Matrix descriptors** (§9.7.15.5.1.2.2): a 64-bit value, bits 0-13 the start address >> 4, 16-29
the leading dimension byte offset (LBO) >> 4, 32-45 the stride dimension byte offset (SBO) >> 4,
49-51 the base offset (0 here: Triton aligns its buffers; a non-zero one is refused), 62-63 the
swizzle mode (0 none, 1 128B, 2 64B, 3 32B).

**Canonical layouts** (§9.7.15.5.1.2.1.3, CuTe notation, ``T = 128 / bits per element``, units of
elements), for the ``mn`` index (M of A, N of B) and the ``k`` index:

================  =====================================  =====================================
swizzle           K-major                                MN-major
================  =====================================  =====================================
none              ((8,m),(T,2k)):((1T,SBO),(1,LBO))      ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
32B               ((8,m),(T,2k)):((2T,SBO),(1,T))        ((T,2,m),(8,k)):((1,T,LBO),(2T,SBO))
64B               ((8,m),(T,2k)):((4T,SBO),(1,T))        ((T,4,m),(8,k)):((1,T,LBO),(4T,SBO))
128B              ((8,m),(T,2k)):((8T,SBO),(1,T))        ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO))
================  =====================================  =====================================

followed by ``Swizzle<B,4,3>`` (``B`` = 0, 1, 2, 3 for none, 32B, 64B, 128B) applied to the byte
address: bits ``[4, 4+B)`` are XORed with bits ``[7, 7+B)``. (That the swizzle acts on the final
byte address, start address included, is this model's reading of the ISA; the GPU test
``tests/test_gpu_kernel_models.py`` checks it on hardware.)

**Asynchrony** (§9.7.15.7): ``wgmma.mma_async`` reads its operands and computes its result at
issue in this model, but the accumulator registers count as *in flight* until a
``wgmma.wait_group`` retires the group that holds the operation: reading or writing them with any
other instruction before then is a :class:`~.state.Hazard`, as is writing the shared memory the
operation reads. Shared memory written through the generic proxy (``st.shared``, ``stmatrix``, a
landed ``cp.async``) must be made visible to the async proxy with ``fence.proxy.async`` before a
wgmma reads it.
"""
from __future__ import annotations

import numpy as np

from .matrix import ELEMENTS, element_ids, fragment, gather, write_elements
from .proxy import check_pending
from .state import Hazard, SimError, concrete, to_uint

SWIZZLE_BITS = {0: 0, 1: 3, 2: 2, 3: 1}           # descriptor mode -> B of Swizzle<B,4,3>


def decode_descriptor(v: int) -> dict:
    """Fields of a matrix descriptor (byte values)."""
    v = int(v)
    return {"start": (v & 0x3FFF) << 4, "lbo": ((v >> 16) & 0x3FFF) << 4, "sbo": ((v >> 32) & 0x3FFF) << 4,
            "base_offset": (v >> 49) & 0x7, "swizzle": (v >> 62) & 0x3}


def swizzle(addr: np.ndarray, b: int) -> np.ndarray:
    """``Swizzle<b,4,3>`` on byte addresses: bits [4, 4+b) ^= bits [7, 7+b)."""
    if b == 0:
        return addr
    mask = ((1 << b) - 1) << 4
    return addr ^ ((addr >> 3) & mask)


def operand_addresses(desc: dict, mn: np.ndarray, k: np.ndarray, elem_bytes: int, k_major: bool) -> np.ndarray:
    """Byte addresses of elements ``(mn, k)`` of a shared-memory operand (see the module table)."""
    if desc["base_offset"]:
        raise SimError("a wgmma descriptor with a non-zero base offset is not modelled")
    b = SWIZZLE_BITS[desc["swizzle"]]
    t = 16 // elem_bytes
    lbo, sbo = desc["lbo"], desc["sbo"]
    if k_major:
        i0, i1 = mn % 8, mn // 8
        j0, j1 = k % t, k // t
        row = 16 << b if b else 16           # bytes between rows of an 8-row core group
        if b:
            off = i0 * row + i1 * sbo + j0 * elem_bytes + j1 * 16
        else:
            off = i0 * 16 + i1 * sbo + j0 * elem_bytes + j1 * lbo
    else:
        width = 1 << b                       # 16-byte chunks along MN in one swizzle row
        i0, i1, i2 = mn % t, (mn // t) % width, mn // (t * width)
        j0, j1 = k % 8, k // 8
        if b:
            off = i0 * elem_bytes + i1 * 16 + i2 * lbo + j0 * (16 * width) + j1 * sbo
        else:
            off = i0 * elem_bytes + i2 * sbo + j0 * 16 + j1 * lbo
    return swizzle(desc["start"] + off, b)


# -- async state --------------------------------------------------------------------------------------
class WgmmaState:
    """The wgmma operations of one machine: those issued since the last ``wgmma.commit_group``,
    and the committed groups, oldest first."""

    def __init__(self):
        self.uncommitted: list[dict] = []          # operations issued since the last commit
        self.groups: list[list[dict]] = []         # committed, oldest first


def _state(m) -> WgmmaState:
    st = getattr(m, "_wgmma_state", None)
    if st is None:
        st = m._wgmma_state = WgmmaState()
    return st


def op_wgmma(m, ins, mask) -> None:
    parts = ins.parts
    what = parts[1] if len(parts) > 1 else ""
    st = _state(m)
    if what == "fence":
        return
    if what == "commit_group":
        st.groups.append(st.uncommitted)
        st.uncommitted = []
        return
    if what == "wait_group":
        keep = int(ins.operands[0], 0)
        while len(st.groups) > keep:
            for op in st.groups.pop(0):
                _retire(m, op)
        return
    if what == "mma_async":
        if "sp" in parts:
            raise SimError(f"PTX line {ins.line}: sparse wgmma is not modelled")
        op = _mma_async(m, ins, mask)
        st.uncommitted.append(op)
        return
    raise SimError(f"PTX line {ins.line}: {ins.opcode} is not modelled")


def _retire(m, op: dict) -> None:
    for r in op["regs"]:
        got = m.reg_pending.get(r)
        if got is not None:
            left = got & ~op["mask"]
            if left.any():
                m.reg_pending[r] = left
            else:
                del m.reg_pending[r]
    if op["smem"].size:
        m.shared.async_read[op["smem"]] -= 1


def _uniform(m, ins, op, rows, width=8) -> int:
    b = m.read(op, width)[rows]
    if not concrete(b).all():
        raise SimError(f"PTX line {ins.line}: a wgmma descriptor computed from data or undefined")
    v = to_uint(np.clip(b, 0, 255))
    if (v != v[0]).any():
        raise SimError(f"PTX line {ins.line}: a wgmma descriptor that differs between the threads of a warpgroup")
    return int(v[0])


def _immediate(m, ins, op, rows) -> int:
    b = m.read(op, 4)[rows]
    v = to_uint(np.clip(b, 0, 255)).astype(np.int64)
    v = np.where(v >= 1 << 31, v - (1 << 32), v)
    return int(v[0])


def _smem_matrix(m, ins, desc_v: int, rows_mn: int, cols_k: int, ety: str, k_major: bool):
    """Term ids ``(rows_mn, cols_k)`` of a shared-memory operand and the byte indices it reads."""
    nbytes, term_ty = ELEMENTS[ety]
    desc = decode_descriptor(desc_v)
    mn, k = np.meshgrid(np.arange(rows_mn), np.arange(cols_k), indexing="ij")
    addr = operand_addresses(desc, mn.reshape(-1), k.reshape(-1), nbytes, k_major)
    idx = addr[:, None] + np.arange(nbytes)[None, :]
    sh = m.shared
    if (idx < 0).any() or (idx >= sh.data.size).any():
        raise SimError(f"PTX line {ins.line}: a wgmma operand outside shared memory")
    check_pending(m, idx, ins)
    if m.check_proxy_fences and sh.generic_dirty[idx].any():
        byte = int(idx[sh.generic_dirty[idx]][0])
        raise Hazard(f"PTX line {ins.line}: {ins.opcode} reads shared byte {byte}, written through the generic "
                     f"proxy with no fence.proxy.async in between", byte=byte, line=ins.line)
    codes = sh.data[idx]
    ids = m.term_ids(codes, term_ty, np.ones(len(codes), dtype=bool), ins)
    return ids.reshape(rows_mn, cols_k), idx.reshape(-1)


def _mma_async(m, ins, mask) -> dict:
    parts = ins.parts
    shape = next((p for p in parts if p.startswith("m64n")), None)
    if shape is None:
        raise SimError(f"PTX line {ins.line}: {ins.opcode}: unknown shape")
    n, k = (int(x) for x in shape[4:].split("k"))
    types = [p for p in parts if p in ELEMENTS]
    if len(types) != 3:
        raise SimError(f"PTX line {ins.line}: {ins.opcode}: cannot read the element types")
    dty, aty, bty = types
    ops = list(ins.operands)
    d_regs = list(ops[0])
    a_in_regs = isinstance(ops[1], tuple)
    b_desc_op = ops[2]
    scale_d = ops[3]
    imms = ops[4:]
    if ELEMENTS[aty][0] == 1 or aty == "tf32":     # 8-bit and tf32: K-major only, no transpose operands
        scale_a, scale_b = (imms + ["1", "1"])[:2]
        trans_a, trans_b = "0", "0"
    elif a_in_regs:
        scale_a, scale_b, trans_b = (imms + ["1", "1", "0"])[:3]
        trans_a = "0"
    else:
        scale_a, scale_b, trans_a, trans_b = (imms + ["1", "1", "0", "0"])[:4]
    groups = m.threads // 128
    if m.threads % 128:
        raise SimError(f"PTX line {ins.line}: wgmma needs whole warpgroups ({m.threads} threads)")
    fd = fragment(f"wgmma.m64n{n}k{k}.{dty}.D")
    nreg = fd.shape[0]
    out_ids = np.zeros((m.threads, nreg), dtype=np.int64)
    C = element_ids(m, ins, d_regs, dty, mask)
    smem_read = []
    warp_in_group = m.warp % 4
    slot = np.stack([m.lane, warp_in_group], axis=1)
    for g in range(groups):
        rows = np.arange(128 * g, 128 * (g + 1))
        if not mask[rows].any():
            continue
        if not mask[rows].all() or not m.live[rows].all():
            raise SimError(f"PTX line {ins.line}: wgmma executed by part of a warpgroup")
        group_of = np.zeros(128, dtype=np.int64)
        if a_in_regs:
            A_el = element_ids(m, ins, list(ops[1]), aty, mask)[rows]
            fa = fragment(f"wgmma.m64n{n}k{k}.{aty}.A")
            Am = gather(fa, A_el, 64, k, 1, group_of, slot[rows])[0]
        else:
            Am, idx = _smem_matrix(m, ins, _uniform(m, ins, ops[1], rows), 64, k, aty, trans_a == "0")
            smem_read.append(idx)
        Bt, idx = _smem_matrix(m, ins, _uniform(m, ins, b_desc_op, rows), n, k, bty, trans_b == "0")
        smem_read.append(idx)
        if (Am < 0).any():
            raise SimError(f"PTX line {ins.line}: a wgmma A fragment misses elements")
        if _immediate(m, ins, scale_a, rows) == -1:
            Am = m.negate(Am, ELEMENTS[aty][1])
        if _immediate(m, ins, scale_b, rows) == -1:
            Bt = m.negate(Bt, ELEMENTS[bty][1])
        use_c = _scale_d(m, ins, scale_d, rows)
        Cm = gather(fd, C[rows], 64, n, 1, group_of, slot[rows])[0]
        rc = fd[:, m.lane[rows], warp_in_group[rows]]        # (registers, 128, 2)
        r_row = rc[:, :, 0].T.reshape(-1)
        r_col = rc[:, :, 1].T.reshape(-1)
        ids = m.dot(ELEMENTS[dty][1], Cm[r_row, r_col], Am[r_row], Bt[r_col], use_c)
        out_ids[rows] = ids.reshape(128, nreg)
    write_elements(m, d_regs, out_ids, dty, mask)
    for r in d_regs:
        got = m.reg_pending.get(r)
        m.reg_pending[r] = mask.copy() if got is None else (got | mask)
    smem = np.unique(np.concatenate(smem_read)) if smem_read else np.empty(0, dtype=np.int64)
    if smem.size:
        m.shared.async_read[smem] += 1
    return {"regs": d_regs, "mask": mask.copy(), "smem": smem, "line": ins.line}


def _scale_d(m, ins, op, rows) -> bool:
    if op in ("0", "1"):
        return op == "1"
    p = m.pred(op.lstrip("!"), ins, np.isin(np.arange(m.threads), rows))[rows]
    if op.startswith("!"):
        p = ~p
    if (p != p[0]).any():
        raise SimError(f"PTX line {ins.line}: a wgmma scale-d that differs between threads")
    return bool(p[0])
