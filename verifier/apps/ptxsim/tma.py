"""The tensor memory accelerator and its synchronisation: tensor maps, ``cp.async.bulk.tensor``,
bulk groups and ``mbarrier`` objects (PTX ISA §9.7.9.27-28, §9.7.13.15).

**Tensor maps** are opaque 128-byte objects; the model keeps their fields (§9.7.9.28 Table 33),
not their bytes: ``tensormap.replace.tile.FIELD`` sets a field of the map at an address (a map
being built in shared memory starts from zero bytes: every field 0), ``tensormap.cp_fenceproxy``
copies a map to global memory, and a map passed by value as a kernel parameter is given by the
caller (:attr:`Machine.tensormaps`). A store over a map in shared memory resets it to zeros.

**Bulk tensor copies**: a load copies the box at the given coordinates (coordinate 0 the
innermost dimension) into shared memory, row-major, the address then swizzled like a wgmma
operand (``Swizzle<B,4,3>`` on the byte address; 32B, 64B, 128B modes); elements outside the
tensor are filled with zero (fill mode 0) or NaN (fill mode 1). It counts the whole box's bytes
towards its mbarrier's transaction count. It lands *at the wait* that needs it, the latest moment
allowed: the destination bytes are pending until then (reads are :class:`~.state.Hazard`). A
store writes the box's elements that lie inside the tensor; its shared-memory source must not
change before ``cp.async.bulk.wait_group.read`` retires it.

**mbarriers** (§9.7.13.15): ``init`` sets the expected arrival count; ``arrive`` (and
``arrive.expect_tx``, which first adds transaction bytes) counts arrivals; a phase completes when
every arrival came and the transaction count is back to zero, and the phase number advances.
``try_wait.parity p`` answers true when the phase of parity ``p`` is the completed one; when the
current phase lacks only transactions of issued copies, those copies land first.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .proxy import check_pending
from .state import Hazard, SimError, concrete, from_uint, to_uint
from .wgmma import swizzle

#: tensormap elemtype -> element bytes (Table 33)
ELEMTYPE_BYTES = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 4, 9: 8, 10: 2, 11: 4, 12: 4}
#: tensormap swizzle_mode -> B of Swizzle<B,4,3> (96B and others are refused)
SWIZZLE_MODE_BITS = {0: 0, 1: 1, 2: 2, 3: 3}
FLOAT_ELEMTYPES = {6, 7, 8, 9, 10, 11, 12}


@dataclass
class TensorMap:
    """A TMA tensor map (``CUtensorMap``) as ``tensormap.replace`` sets its fields: global address,
    rank, box and global dimensions, global and element strides (by ordinal), element type,
    interleave, swizzle and fill modes."""
    global_address: int = 0
    rank: int = 0                      # the field: rank - 1
    box_dim: dict = field(default_factory=dict)
    global_dim: dict = field(default_factory=dict)
    global_stride: dict = field(default_factory=dict)   # ordinal i: bytes between steps of dimension i + 1
    element_stride: dict = field(default_factory=dict)
    elemtype: int = 0
    interleave_layout: int = 0
    swizzle_mode: int = 0
    swizzle_atomicity: int = 0
    fill_mode: int = 0

    def copy(self) -> "TensorMap":
        """An independent copy (the dimension and stride tables copied too)."""
        return TensorMap(self.global_address, self.rank, dict(self.box_dim), dict(self.global_dim),
                         dict(self.global_stride), dict(self.element_stride), self.elemtype,
                         self.interleave_layout, self.swizzle_mode, self.swizzle_atomicity, self.fill_mode)


@dataclass
class Mbarrier:
    """An ``mbarrier`` in shared memory: the expected arrival count, arrivals still pending in
    the current phase, the transaction bytes outstanding, the phase number, and the bulk loads that
    complete on it and have not landed."""
    count: int
    pending: int
    tx: int = 0
    phase: int = 0
    copies: list = field(default_factory=list)          # bulk loads not yet landed


@dataclass
class _BulkLoad:
    line: int
    warp: int
    idx: np.ndarray                    # shared byte indices
    data: np.ndarray                   # byte codes
    nbytes: int


class TmaState:
    """The TMA state of one machine: tensor maps by ``(space, address)``, mbarriers by shared
    address, and the bulk stores not yet committed and the committed bulk groups."""

    def __init__(self):
        self.maps: dict[tuple[str, int], TensorMap] = {}
        self.barriers: dict[int, Mbarrier] = {}
        self.bulk_uncommitted: list[dict] = []
        self.bulk_groups: list[list[dict]] = []


def state(m) -> TmaState:
    """The :class:`TmaState` of machine ``m`` (made on first use)."""
    st = getattr(m, "_tma", None)
    if st is None:
        st = m._tma = TmaState()
    return st


def _leaders(m, mask) -> np.ndarray:
    """Threads that execute a bulk operation: every active thread does (Triton guards them with
    ``elect.sync`` so one thread per warp, or per CTA, issues)."""
    return np.nonzero(mask)[0]


def _scalar(m, ins, op, rows, width=4, signed=True) -> np.ndarray:
    if isinstance(op, str) and (op.startswith("%") or op in m.regs.declared):
        b = m.read(op, width)[rows]
    else:
        b = m.read(op, width)[rows]
    if not concrete(b).all():
        raise SimError(f"PTX line {ins.line}: {ins.opcode}: operand {op} computed from data or undefined")
    v = to_uint(np.clip(b, 0, 255)).astype(np.int64)
    if signed and width == 4:
        v = np.where(v >= 1 << 31, v - (1 << 32), v)
    return v


# -- tensormap.replace / cp_fenceproxy -------------------------------------------------------------
def op_tensormap(m, ins, mask) -> None:
    parts = ins.parts
    st = state(m)
    if parts[1] == "replace":
        fld = parts[3]
        space = "shared" if any(p.startswith("shared") for p in parts) else "global"
        ops = ins.operands
        for t in np.nonzero(mask)[0]:
            addr = int(m.address(ops[0], mask)[t])
            tm = st.maps.setdefault((space, addr), TensorMap())
            if fld in ("global_address", "rank", "elemtype", "interleave_layout", "swizzle_mode",
                       "swizzle_atomicity", "fill_mode"):
                v = int(_scalar(m, ins, ops[1], np.array([t]), 8 if fld == "global_address" else 4,
                                signed=False)[0])
                setattr(tm, fld, v)
            elif fld in ("box_dim", "global_dim", "global_stride", "element_stride"):
                ordinal = int(ops[1], 0)
                v = int(_scalar(m, ins, ops[2], np.array([t]), 8 if fld == "global_stride" else 4,
                                signed=False)[0])
                getattr(tm, fld)[ordinal] = v
            else:
                raise SimError(f"PTX line {ins.line}: tensormap field {fld} is not modelled")
        return
    if parts[1] == "cp_fenceproxy":
        ops = ins.operands
        for t in np.nonzero(mask)[0]:
            dst = int(m.address(ops[0], mask)[t])
            src = int(m.address(ops[1], mask)[t])
            tm = st.maps.get(("shared", src))
            if tm is None:
                tm = TensorMap()
            st.maps[("global", dst)] = tm.copy()
        return
    raise SimError(f"PTX line {ins.line}: {ins.opcode} is not modelled")


def reset_maps(m, idx: np.ndarray) -> None:
    """A store to shared bytes ``idx`` resets the tensor maps it overlaps (to zero bytes)."""
    st = getattr(m, "_tma", None)
    if st is None or not st.maps:
        return
    lo, hi = int(np.min(idx)), int(np.max(idx))
    for (space, addr), tm in list(st.maps.items()):
        if space == "shared" and addr <= hi and lo < addr + 128:
            st.maps[(space, addr)] = TensorMap()


def _map_at(m, ins, addr: int) -> TensorMap:
    st = state(m)
    for key in (("global", addr), ("param", addr)):
        tm = st.maps.get(key)
        if tm is not None:
            return tm
    tm = m.tensormaps.get(addr) if getattr(m, "tensormaps", None) else None
    if tm is not None:
        return tm
    raise SimError(f"PTX line {ins.line}: {ins.opcode}: no tensor map is known at address {addr:#x}")


def _box(tm: TensorMap, coords: list[int], ins):
    """Per box element (row-major, dimension 0 innermost): its global address and whether it lies
    inside the tensor; and the element size."""
    rank = tm.rank + 1
    eb = ELEMTYPE_BYTES.get(tm.elemtype)
    if eb is None or tm.interleave_layout:
        raise SimError(f"PTX line {ins.line}: tensor map element type {tm.elemtype} / interleave not modelled")
    if any(tm.element_stride.get(i, 1) != 1 for i in range(rank)):
        raise SimError(f"PTX line {ins.line}: tensor maps with element strides are not modelled")
    box = [tm.box_dim.get(i, 0) for i in range(rank)]
    dims = [tm.global_dim.get(i, 0) for i in range(rank)]
    if len(coords) != rank or any(b <= 0 for b in box):
        raise SimError(f"PTX line {ins.line}: a tensor map of rank {rank} with box {box} used with "
                       f"{len(coords)} coordinates")
    strides = [eb] + [tm.global_stride.get(i, 0) for i in range(rank - 1)]
    grids = np.meshgrid(*[np.arange(b) for b in reversed(box)], indexing="ij")   # outermost first
    idx = list(reversed(grids))                                                   # idx[0]: innermost
    inside = np.ones(grids[0].shape, dtype=bool)
    addr = np.full(grids[0].shape, tm.global_address, dtype=np.int64)
    for d in range(rank):
        pos = idx[d] + coords[d]
        inside &= (pos >= 0) & (pos < dims[d])
        addr = addr + pos.astype(np.int64) * strides[d]
    return addr.reshape(-1), inside.reshape(-1), eb, box


def _smem_box_addresses(tm: TensorMap, dst: int, n: int, eb: int, box, ins) -> np.ndarray:
    """Shared byte addresses of the box's elements (row-major from ``dst``), swizzled."""
    b = SWIZZLE_MODE_BITS.get(tm.swizzle_mode)
    if b is None:
        raise SimError(f"PTX line {ins.line}: tensor map swizzle mode {tm.swizzle_mode} is not modelled")
    if b and box[0] * eb > (16 << b):
        raise SimError(f"PTX line {ins.line}: a box row of {box[0] * eb} bytes is wider than its {16 << b}-byte "
                       f"swizzle")
    if b and dst % (128 << b):
        raise SimError(f"PTX line {ins.line}: a swizzled bulk copy to shared address {dst:#x}, not aligned to its "
                       f"{128 << b}-byte swizzle pattern; not modelled")
    off = np.arange(n, dtype=np.int64) * eb
    if b:
        row, col = off // (box[0] * eb), off % (box[0] * eb)
        off = row * (16 << b) + col
    return swizzle(dst + off, b)


# -- cp.async.bulk ---------------------------------------------------------------------------------------
def op_cp_async_bulk(m, ins, mask) -> None:
    parts = ins.parts
    st = state(m)
    what = parts[3] if len(parts) > 3 else ""
    if what == "commit_group":
        st.bulk_groups.append(st.bulk_uncommitted)
        st.bulk_uncommitted = []
        return
    if what == "wait_group":
        keep = int(ins.operands[0], 0)
        while len(st.bulk_groups) > keep:
            for op in st.bulk_groups.pop(0):
                if op["smem"].size:
                    m.shared.async_read[op["smem"]] -= 1
        return
    if what == "tensor" and len(parts) > 6:
        dst, src = parts[5], parts[6]
        if dst.startswith("shared") and src == "global":
            _tensor_load(m, ins, mask)
        elif dst == "global" and src.startswith("shared"):
            _tensor_store(m, ins, mask)
        else:
            raise SimError(f"PTX line {ins.line}: {ins.opcode} is not modelled")
        return
    if what == "prefetch":
        return
    raise SimError(f"PTX line {ins.line}: {ins.opcode} is not modelled")


def _coords(m, ins, op, t) -> tuple[int, list[int]]:
    if not (isinstance(op, tuple) and op[0] == "tensor"):
        raise SimError(f"PTX line {ins.line}: expected a tensor address [map, {{coords}}]")
    _, base, coords = op
    rows = np.array([t])
    addr = int(_scalar(m, ins, base, rows, 8, signed=False)[0])
    return addr, [int(_scalar(m, ins, c, rows)[0]) for c in coords]


def _tensor_load(m, ins, mask) -> None:
    """``cp.async.bulk.tensor.Nd.shared::cta.global.mbarrier::complete_tx::bytes [dst], [map, coords], [mbar]``"""
    if "tile" not in ins.parts and any(p.startswith("im2col") or p.startswith("tile::") for p in ins.parts):
        raise SimError(f"PTX line {ins.line}: {ins.opcode}: only the tile mode is modelled")
    st = state(m)
    dst_op, src_op, bar_op = ins.operands[:3]
    for t in np.nonzero(mask)[0]:
        dst = int(m.address(dst_op, mask)[t])
        bar = int(m.address(bar_op, mask)[t])
        addr, coords = _coords(m, ins, src_op, t)
        tm = _map_at(m, ins, addr)
        gaddr, inside, eb, box = _box(tm, coords, ins)
        n = gaddr.size
        data = np.zeros((n, eb), dtype=np.int64)
        if inside.any():
            data[inside] = m.glob.load(gaddr[inside].astype(np.uint64), eb)
        if (~inside).any() and tm.fill_mode == 1 and tm.elemtype in FLOAT_ELEMTYPES:
            nan = {2: 0x7FFF, 4: 0x7FFFFFFF, 8: 0x7FFFFFFFFFFFFFFF}[eb]
            data[~inside] = from_uint(np.full(int((~inside).sum()), nan, dtype=np.uint64), eb)
        saddr = _smem_box_addresses(tm, dst, n, eb, box, ins)
        idx = (saddr[:, None] + np.arange(eb)[None, :]).reshape(-1)
        sh = m.shared
        if (idx < 0).any() or (idx >= sh.data.size).any():
            raise SimError(f"PTX line {ins.line}: a bulk copy outside shared memory")
        if sh.pending[idx].any():
            raise Hazard(f"PTX line {ins.line}: a bulk copy into shared memory another copy in flight writes")
        if sh.async_read[idx].any():
            raise Hazard(f"PTX line {ins.line}: a bulk copy overwrites shared memory an asynchronous operation in "
                         f"flight still reads")
        warp = int(m.warp[t])
        race = ((sh.read_epoch[idx] == m.epoch) & (sh.read_warp[idx] != warp)) | \
            ((sh.write_epoch[idx] == m.epoch) & (sh.write_warp[idx] != warp))
        if race.any():
            raise Hazard(f"PTX line {ins.line}: race: a bulk copy overwrites shared byte {int(idx[race][0])} another "
                         f"warp used with no barrier in between", byte=int(idx[race][0]), line=ins.line)
        mb = st.barriers.get(bar)
        if mb is None:
            raise Hazard(f"PTX line {ins.line}: a bulk copy completes on shared address {bar:#x}, where no mbarrier "
                         f"was initialised")
        sh.pending[idx] += 1
        sh.pending_line[idx] = ins.line
        mb.copies.append(_BulkLoad(ins.line, warp, idx, data.reshape(-1), n * eb))


def _land(m, cp: _BulkLoad) -> None:
    sh = m.shared
    sh.pending[cp.idx] -= 1
    sh.data[cp.idx] = cp.data
    sh.write_epoch[cp.idx] = -1        # visible to whoever observed the mbarrier phase complete
    sh.write_warp[cp.idx] = cp.warp
    reset_maps(m, cp.idx)


def _tensor_store(m, ins, mask) -> None:
    """``cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group [map, coords], [src]``"""
    st = state(m)
    dst_op, src_op = ins.operands[:2]
    for t in np.nonzero(mask)[0]:
        addr, coords = _coords(m, ins, dst_op, t)
        src = int(m.address(src_op, mask)[t])
        tm = _map_at(m, ins, addr)
        gaddr, inside, eb, box = _box(tm, coords, ins)
        n = gaddr.size
        saddr = _smem_box_addresses(tm, src, n, eb, box, ins)
        idx = saddr[:, None] + np.arange(eb)[None, :]
        sh = m.shared
        check_pending(m, idx, ins)
        if m.check_proxy_fences and sh.generic_dirty[idx].any():
            byte = int(idx[sh.generic_dirty[idx]][0])
            raise Hazard(f"PTX line {ins.line}: a bulk store reads shared byte {byte}, "
                         f"written through the generic proxy with no fence.proxy.async in between", byte=byte,
                         line=ins.line)
        warp = int(m.warp[t])
        race = (sh.write_epoch[idx] == m.epoch) & (sh.write_warp[idx] != warp)
        if race.any():
            raise Hazard(f"PTX line {ins.line}: race: a bulk store reads shared byte {int(idx[race][0])} another warp "
                         f"wrote with no barrier in between", byte=int(idx[race][0]), line=ins.line)
        data = sh.data[idx]
        if inside.any():
            m.store_bulk(ins, gaddr[inside].astype(np.uint64), data[inside], t)
        flat = np.unique(idx.reshape(-1))
        sh.async_read[flat] += 1
        st.bulk_uncommitted.append({"smem": flat, "line": ins.line})


# -- mbarrier ------------------------------------------------------------------------------------------
def op_mbarrier(m, ins, mask) -> None:
    parts = ins.parts
    st = state(m)
    what = parts[1]
    ops = ins.operands
    if what == "init":
        for t in np.nonzero(mask)[0]:
            addr = int(m.address(ops[0], mask)[t])
            count = int(_scalar(m, ins, ops[1], np.array([t]))[0])
            st.barriers[addr] = Mbarrier(count, count)
        return
    if what == "inval":
        for t in np.nonzero(mask)[0]:
            addr = int(m.address(ops[0], mask)[t])
            mb = st.barriers.pop(addr, None)
            if mb is not None and mb.copies:
                raise Hazard(f"PTX line {ins.line}: mbarrier.inval while bulk copies that complete on it are in flight")
        return
    if what in ("arrive", "arrive_drop"):
        expect = "expect_tx" in parts
        addr_op = ops[1]
        for t in np.nonzero(mask)[0]:
            addr = int(m.address(addr_op, mask)[t])
            mb = _barrier(st, ins, addr)
            if expect:
                mb.tx += int(_scalar(m, ins, ops[2], np.array([t]))[0])
            count = int(_scalar(m, ins, ops[2], np.array([t]))[0]) if len(ops) > 2 and not expect else 1
            mb.pending -= count
            if mb.pending < 0:
                raise Hazard(f"PTX line {ins.line}: more arrivals on an mbarrier than its count")
            _maybe_complete(m, mb)
            if ops[0] != "_":
                m.write(ops[0], from_uint(np.array([mb.phase], dtype=np.uint64), 8)[None, 0].repeat(m.threads, 0),
                        np.arange(m.threads) == t)
        return
    if what == "expect_tx":
        for t in np.nonzero(mask)[0]:
            addr = int(m.address(ops[0], mask)[t])
            _barrier(st, ins, addr).tx += int(_scalar(m, ins, ops[1], np.array([t]))[0])
        return
    if what in ("try_wait", "test_wait"):
        if "parity" not in parts:
            raise SimError(f"PTX line {ins.line}: only the .parity form of {what} is modelled")
        dst, addr_op, par_op = ops[:3]
        out = np.zeros(m.threads, dtype=np.int64)
        for t in np.nonzero(mask)[0]:
            addr = int(m.address(addr_op, mask)[t])
            mb = _barrier(st, ins, addr)
            parity = int(_scalar(m, ins, par_op, np.array([t]))[0]) & 1
            if parity == mb.phase % 2 and mb.pending == 0:
                for cp in mb.copies:          # the phase lacks only transactions: the copies land now
                    _land(m, cp)
                    mb.tx -= cp.nbytes
                mb.copies = []
                _maybe_complete(m, mb)
            out[t] = 1 if parity != mb.phase % 2 else 0
        m.write(dst, out[:, None], mask)
        if not out[mask].all():
            m.wait_failed = True
        return
    raise SimError(f"PTX line {ins.line}: {ins.opcode} is not modelled")


def _barrier(st: TmaState, ins, addr: int) -> Mbarrier:
    mb = st.barriers.get(addr)
    if mb is None:
        raise Hazard(f"PTX line {ins.line}: {ins.opcode} on shared address {addr:#x}, where no mbarrier was "
                     f"initialised")
    return mb


def _maybe_complete(m, mb: Mbarrier) -> None:
    if mb.pending == 0 and mb.tx == 0:
        mb.phase += 1
        mb.pending = mb.count
    elif mb.tx < 0:
        raise Hazard("an mbarrier's transaction count went below zero (more bytes completed than expected)")


# -- elect.sync --------------------------------------------------------------------------------------------
def op_elect(m, ins, mask) -> None:
    """``elect.sync d|p, membermask``: the lowest active lane of each warp in the mask is elected
    (``p`` true there); ``d`` receives the elected lane."""
    dst, mm = ins.operands
    d, _, p = dst.partition("|")
    member = int(_scalar(m, ins, mm, np.nonzero(mask)[0][:1], 4, signed=False)[0])
    lane_ok = ((member >> m.lane) & 1).astype(bool)
    active = mask & lane_ok
    leader = np.full(m.threads, -1, dtype=np.int64)
    pred = np.zeros(m.threads, dtype=np.int64)
    for w in np.unique(m.warp[mask]):
        sel = np.nonzero(active & (m.warp == w))[0]
        if sel.size:
            leader[m.warp == w] = m.lane[sel[0]]
            pred[sel[0]] = 1
    if d and d != "_":
        m.write(d, from_uint(np.where(leader < 0, 0, leader).astype(np.uint64), 4), mask)
    if p:
        m.write(p, pred[:, None], mask)
