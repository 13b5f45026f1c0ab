"""The PTX machine of the kernel validator: :class:`~layoutverify.apps.ptxsim.Machine` with
symbolic data.

Control and addresses stay concrete (as in the conversion interpreter); a computation on data
builds a term in the shared :class:`~.terms.Terms` table, and the register receives that term's
bytes (``TAG0 + 8 * term + k``). Global memory is the validation's :class:`~.memory.Memory`, and
every byte stored to it remembers the instruction, thread and byte position that wrote it, for
the report.
"""
from __future__ import annotations

import numpy as np

from layoutverify.apps.ptxsim import Machine, SimError
from layoutverify.apps.ptxsim.parser import Program
from layoutverify.apps.ptxsim.state import TAG0, UNDEF, from_uint, to_uint

from . import terms as T
from .memory import Memory


def term_codes(ids: np.ndarray, width: int) -> np.ndarray:
    """Bytes of terms ``ids``: ``(len(ids), width)``."""
    return TAG0 + 8 * np.asarray(ids, dtype=np.int64)[:, None] + np.arange(width)[None, :]


def who_code(pc: int, thread, byte) -> np.ndarray:
    """Writer code of a stored byte: instruction index, thread, byte position within the store."""
    return (np.int64(pc) << 16) | (np.asarray(thread, dtype=np.int64) << 6) | np.asarray(byte, dtype=np.int64)


def who_decode(code: int) -> tuple[int, int, int]:
    """The inverse of :func:`who_code`: ``(instruction index, thread, byte position)``."""
    return int(code) >> 16, (int(code) >> 6) & 1023, int(code) & 63


class SymbolicMachine(Machine):
    """The PTX machine of one CTA of the validated kernel, at program id ``pid`` of ``grid``:
    computations on data build terms in ``terms``, and global memory is the validation's ``memory``."""

    def __init__(self, program: Program, *, threads: int, memory: Memory, terms: T.Terms, pid, grid):
        super().__init__(program, threads=threads)
        self.glob = memory
        self.terms = terms
        self.pid = tuple(int(p) for p in pid)
        self.grid = tuple(int(g) for g in grid)
        self._undef_terms: dict[str, int] = {}
        self.pc = 0

    # -- bytes <-> terms ---------------------------------------------------------------------------
    def term_ids(self, b: np.ndarray, ty: str, mask: np.ndarray, ins) -> np.ndarray:
        """One term id per thread for the bytes ``b`` (threads, w) read as a ``ty`` value: the term
        whose bytes they are, a constant when concrete, an ``undef`` term when undefined; -1 in
        inactive threads. Bytes of several values read as one stop the run."""
        n, w = b.shape
        out = np.full(n, -1, dtype=np.int64)
        t0 = (b[:, 0] - TAG0) // 8
        exact = (b >= TAG0).all(axis=1) & ((b - TAG0) == (8 * t0[:, None] + np.arange(w)[None, :])).all(axis=1)
        conc = ((b >= 0) & (b < 256)).all(axis=1)
        undef = (b == UNDEF).any(axis=1) & ~(b >= TAG0).any(axis=1)
        bad = mask & ~(exact | conc | undef)
        if bad.any():
            i = int(np.argmax(bad))
            raise SimError(f"PTX line {ins.line}: {ins.opcode}: thread {i} computes with bytes of several values "
                           f"read as one {ty} value; not modelled")
        sel = mask & exact
        if sel.any():
            ids = t0[sel]
            widths = {T.TYPE_BYTES.get(self.terms.type_of(int(t)), 0) for t in np.unique(ids)}
            if widths != {w} and ty not in ("i1",):
                raise SimError(f"PTX line {ins.line}: {ins.opcode}: reads a value of another width as {ty}; "
                               f"not modelled")
            out[sel] = ids
        sel = mask & conc
        if sel.any():
            bits = to_uint(np.clip(b[sel], 0, 255))
            uniq, inv = np.unique(bits, return_inverse=True)
            consts = np.array([self.terms.const(ty, int(u)) for u in uniq], dtype=np.int64)
            out[sel] = consts[inv]
        sel = mask & undef & ~conc
        if sel.any():
            out[sel] = self._undef(ty)
        return out

    def _undef(self, ty: str) -> int:
        t = self._undef_terms.get(ty)
        if t is None:
            t = self._undef_terms[ty] = self.terms._make("undef", ty, ())
        return t

    # -- the data algebra ----------------------------------------------------------------------------
    def data_apply(self, ins, op, ty, operands, types, mask) -> np.ndarray:
        """The bytes of ``op`` of type ``ty`` on ``operands`` in the threads of ``mask``: the term
        ``op(operand terms)`` of each thread, or the concrete bytes when the term folds to a constant."""
        width = T.TYPE_BYTES.get(ty) or int(ty[1:]) // 8
        ids = [self.term_ids(b, t, mask, ins) for b, t in zip(operands, types)]
        out = np.full((self.threads, width), UNDEF, dtype=np.int64)
        rows = np.nonzero(mask)[0]
        apply = self.terms.apply
        res = np.fromiter((apply(op, ty, *(int(x[i]) for x in ids)) for i in rows), dtype=np.int64, count=rows.size)
        # a result that folded to a constant goes back to concrete bytes
        out[rows] = term_codes(res, width)
        consts = [(k, self.terms.const_value(int(t))) for k, t in enumerate(res)]
        for k, v in consts:
            if v is not None:
                out[rows[k]] = from_uint(np.array([v], dtype=np.uint64), width)[0]
        return out

    def negate(self, ids: np.ndarray, ty: str) -> np.ndarray:
        """The terms ``-x`` of ``ty`` values ``ids`` (a negated wgmma operand)."""
        return self.terms.apply_many("neg", ty, ids)

    def dot(self, acc_ty: str, c_ids: np.ndarray, a_ids: np.ndarray, b_ids: np.ndarray, use_c=True) -> np.ndarray:
        """Accumulate ``sum_k a[i, k] * b[i, k]`` into ``c[i]`` (term ids); returns the new ids."""
        return self.terms.dots_accumulate(acc_ty, c_ids, a_ids, b_ids, use_c)

    # -- stores --------------------------------------------------------------------------------------
    def store_bulk(self, ins, addr, data, thread: int) -> None:
        """A bulk (TMA) store issued by ``thread``: ``data`` (n, w) at global ``addr`` (n,), each byte
        remembered with its writer code (:func:`who_code`)."""
        nb = data.shape[1]
        who = who_code(self.pc, np.full((len(addr), 1), thread), np.arange(nb)[None, :] + 0 * np.arange(len(addr))[:, None])
        self.glob.store(addr, data, who)

    def _store_global(self, ins, addr, data, mask) -> None:
        rows = np.nonzero(mask)[0]
        nb = data.shape[1]
        who = who_code(self.pc, rows[:, None], np.arange(nb)[None, :])
        self.glob.store(addr[mask], data[mask], who)
