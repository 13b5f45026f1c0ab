"""``cp.async`` (PTX ISA §9.7.9.25.3): asynchronous copies from global to shared memory, grouped by
``cp.async.commit_group`` and waited for by ``cp.async.wait_group N`` / ``cp.async.wait_all``.

The model lands a copy *at the wait* that covers it, the latest moment the ISA allows, so code
that reads the destination too early sees the old contents, and a missing wait is caught:

* issue: the source bytes are read (global memory does not change under the CTA), ``src-size``
  bytes of ``cp-size`` are copied and the rest zero-filled; the destination bytes become
  *pending*: any read or write of a pending byte before the copy lands is a
  :class:`~.state.Hazard` (the hardware may land it at any time in between); a destination another
  warp used in the current barrier interval is a race;
* ``commit_group`` closes the thread's open group; ``wait_group N`` lands every group of the
  thread but its ``N`` most recent; the landed bytes count as written by the issuing warp at the
  wait, so other warps need a barrier after it.

Groups are per thread, as in the ISA.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .proxy import check_pending
from .state import Hazard, SimError, concrete, to_uint


@dataclass
class _Batch:
    """The copies one ``cp.async`` instruction issued: per thread a destination and its bytes."""
    line: int
    mask: np.ndarray          # threads whose copy has not landed
    dst: np.ndarray           # (T,) shared byte addresses
    data: np.ndarray          # (T, n) byte codes
    group: np.ndarray         # (T,) the thread's group number, -1 while uncommitted


class AsyncCopies:
    """The ``cp.async`` state of one machine: the issued batches of copies, and per thread the
    number its next committed group gets."""

    def __init__(self, threads: int):
        self.batches: list[_Batch] = []
        self.next_group = np.zeros(threads, dtype=np.int64)


def _state(m) -> AsyncCopies:
    st = getattr(m, "_async", None)
    if st is None:
        st = m._async = AsyncCopies(m.threads)
    return st


def op_cp_async(m, ins, mask) -> None:
    parts = ins.parts
    if len(parts) < 2 or parts[1] != "async":
        raise SimError(f"PTX line {ins.line}: {ins.opcode} is not modelled")
    if parts[2] in ("ca", "cg"):
        _copy(m, ins, mask)
    elif parts[2] == "commit_group":
        _commit(m, mask)
    elif parts[2] == "wait_group":
        _wait(m, ins, mask, int(ins.operands[0], 0))
    elif parts[2] == "wait_all":
        _commit(m, mask)
        _wait(m, ins, mask, 0)
    else:
        raise SimError(f"PTX line {ins.line}: {ins.opcode} is not modelled")


def _copy(m, ins, mask) -> None:
    if "shared" not in ins.opcode or "global" not in ins.opcode:
        raise SimError(f"PTX line {ins.line}: {ins.opcode}: only global -> shared copies are modelled")
    ops = ins.operands
    dst_op, src_op, size_op = ops[0], ops[1], ops[2]
    n = int(size_op, 0)
    if n not in (4, 8, 16):
        raise SimError(f"PTX line {ins.line}: cp.async of {n} bytes")
    src_size = np.full(m.threads, n, dtype=np.int64)
    if len(ops) > 3 and not _is_pred(m, ops[3]):
        b = m.read(ops[3], 4)
        if not concrete(b)[mask].all():
            raise SimError(f"PTX line {ins.line}: a cp.async source size computed from data")
        src_size = to_uint(np.clip(b, 0, 255)).astype(np.int64)
    elif len(ops) > 3:             # ignore-src predicate
        ignore = m.pred(ops[3], ins, mask)
        src_size = np.where(ignore, 0, n)
    if (src_size[mask] > n).any() or (src_size[mask] < 0).any():
        raise SimError(f"PTX line {ins.line}: cp.async with src-size outside 0..{n}")
    dst = m.address(dst_op, mask).astype(np.int64)
    src = m.address(src_op, mask)
    data = np.zeros((m.threads, n), dtype=np.int64)
    reads = mask & (src_size > 0)
    if reads.any():
        got = m.glob.load(src[reads], n)
        keep = np.arange(n)[None, :] < src_size[reads][:, None]
        data[reads] = np.where(keep, got, 0)
    idx = m._shared_index(dst, n, mask, ins)[mask]
    sh = m.shared
    if sh.pending[idx].any():
        raise Hazard(f"PTX line {ins.line}: cp.async writes shared memory that another asynchronous copy "
                     f"in flight also writes")
    warp = m.warp[mask][:, None]
    race = ((sh.read_epoch[idx] == m.epoch) & (sh.read_warp[idx] != warp)) | \
        ((sh.write_epoch[idx] == m.epoch) & (sh.write_warp[idx] != warp))
    if race.any():
        i = np.argwhere(race)[0]
        raise Hazard(f"PTX line {ins.line}: race: cp.async (warp {int(warp[i[0], 0])}) overwrites shared byte "
                     f"{int(idx[i[0], i[1]])} that another warp used with no barrier in between",
                     byte=int(idx[i[0], i[1]]), line=ins.line)
    if sh.async_read[idx].any():
        raise Hazard(f"PTX line {ins.line}: cp.async overwrites shared memory that a wgmma in flight still reads")
    sh.pending[idx] += 1
    sh.pending_line[idx] = ins.line
    _state(m).batches.append(_Batch(ins.line, mask.copy(), dst, data, np.full(m.threads, -1, dtype=np.int64)))


def _is_pred(m, op: str) -> bool:
    name = op.lstrip("!")
    ty = m.regs.declared.get(name) or m.regs.prefixes.get(name.rstrip("0123456789"))
    return ty == "pred"


def _commit(m, mask) -> None:
    st = _state(m)
    for b in st.batches:
        sel = mask & b.mask & (b.group < 0)
        b.group[sel] = st.next_group[sel]
    st.next_group[mask] += 1


def _wait(m, ins, mask, keep: int) -> None:
    st = _state(m)
    limit = st.next_group - keep          # groups below this number must have landed
    left = []
    for b in st.batches:
        land = mask & b.mask & (b.group >= 0) & (b.group < limit)
        if land.any():
            _land(m, b, land)
            b.mask = b.mask & ~land
        if b.mask.any():
            left.append(b)
    st.batches = left


def _land(m, b: _Batch, rows: np.ndarray) -> None:
    n = b.data.shape[1]
    idx = b.dst[rows][:, None] + np.arange(n)[None, :]
    sh = m.shared
    sh.pending[idx] -= 1
    sh.data[idx] = b.data[rows]
    sh.generic_dirty[idx] = True
    sh.write_epoch[idx] = m.epoch
    sh.write_warp[idx] = m.warp[rows][:, None]


def pending_copies(m) -> int:
    """The ``cp.async`` copies (one per thread) of machine ``m`` that have not landed."""
    st = getattr(m, "_async", None)
    return 0 if st is None else sum(int(b.mask.sum()) for b in st.batches)

