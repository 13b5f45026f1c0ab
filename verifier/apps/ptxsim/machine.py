"""The interpreter loop: one CTA, all threads in lock step, over a parsed :class:`~.parser.Program`.

Lock step makes ``shfl.sync`` and the collective ``ldmatrix``/``stmatrix`` exact. Barriers are
checked rather than assumed: every shared-memory byte remembers the barrier epoch and the warp of
its last write and read, and a read (write) of a byte that another warp wrote (read or wrote) in
the same epoch is a race, reported as a :class:`~.state.Hazard`. Threads run in groups by program
counter (SIMT), so branches may diverge; they reconverge where their paths meet.

:class:`Traffic` counts what the conversion moves: shared-memory bytes and instructions per
direction, bank-conflict wavefronts (32 banks of 4 bytes; an access of ``w`` bytes per thread is
served in phases of ``128 / w`` threads, ``ldmatrix``/``stmatrix`` one phase per 8x8 matrix; a
phase costs the largest number of distinct words in one bank), warp shuffles, barriers and the
register instructions that move data bytes.
"""
from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass

import numpy as np

from layoutverify.core.errors import LayoutError

from . import asynccopy, matrix, proxy, semantics, tma, wgmma
from .parser import Program
from .state import PARAM_BASE, Hazard, SimError, UNDEF, Global, Registers, Shared, concrete, from_uint, to_uint, type_width


@dataclass
class Traffic:
    """What one run of the conversion moved: shared-memory bytes, instructions and bank-conflict
    wavefronts per direction, shuffles, barriers, data moves and instructions executed."""
    shared_store_bytes: int = 0
    shared_load_bytes: int = 0
    shared_store_instructions: int = 0      # warp-level
    shared_load_instructions: int = 0
    store_wavefronts: int = 0
    load_wavefronts: int = 0
    shuffles: int = 0                        # warp-level shfl.sync
    barriers: int = 0
    data_moves: int = 0                      # warp-level... counted per instruction, not per warp
    instructions: int = 0                    # instructions executed (per CTA, not per warp)

    def to_json(self) -> dict:
        """The counts as a JSON object."""
        return asdict(self)


_SPECIAL = re.compile(r"%(tid|ntid|ctaid|nctaid|laneid|warpid|nwarpid|cluster_ctarank|cluster_nctarank|"
                      r"clusterid|nclusterid|cluster_ctaid|cluster_nctaid)(?:\.([xyz]))?$")
SHARED_WINDOW = 1 << 32     # generic addresses below this are shared memory (the kernel's own)
PARAM_SPACE = 0x8000_0000   # the param space's addresses (above any shared-memory address)
_IMM = re.compile(r"^-?(0[xX][0-9a-fA-F]+|\d+)U?$")
_FIMM = re.compile(r"^0[fFdD][0-9a-fA-F]+$")


class Machine:
    """The interpreter of one CTA of ``threads`` threads over ``program``: registers, shared and
    global memory, the barrier epoch and the traffic counts."""

    def __init__(self, program: Program, *, threads: int | None = None, element_bytes: int = 2,
                 input_elements: int = 0):
        self.program = program
        self.threads = threads or program.threads
        if not self.threads:
            raise SimError("the kernel does not say its thread count (.reqntid); pass threads")
        if self.threads % 32:
            raise SimError(f"{self.threads} threads is not a whole number of warps")
        self.regs = Registers(self.threads, program.registers, program.reg_prefixes)
        self.shared = Shared()
        self.glob = Global(element_bytes, input_elements)
        self.tid = np.arange(self.threads, dtype=np.int64)
        self.lane = self.tid % 32
        self.warp = self.tid // 32
        self.epoch = 0
        self.traffic = Traffic()
        self.observed: list[np.ndarray] = []
        self.undefined_arith = 0
        self.races: list[str] = []
        self.terms = None        # a data algebra (the kernel validator's); None: data may only move
        self.pid = (0, 0, 0)     # %ctaid
        self.grid = (1, 1, 1)    # %nctaid
        self.param_values: dict[str, np.ndarray] = {}   # parameter -> its bytes (default: a pointer)
        self.live = np.ones(self.threads, dtype=bool)   # threads that have not exited
        self.steps = 0
        self.deadline: float | None = None      # time.perf_counter() value; past it the run stops
        self.reg_pending: dict[str, np.ndarray] = {}   # registers an async operation (wgmma) still writes
        self.in_async_op = False
        self.tensormaps: dict = {}               # address -> tma.TensorMap passed by value (kernel parameters)
        self.check_proxy_fences = True           # False: compute what the PTX does without the proxy-fence check
        self.wait_failed = False
        self._dispatch = {name: (lambda h: (lambda ins, mask: h(self, ins, mask)))(h)
                          for name, h in semantics.HANDLERS.items()}
        self._dispatch.update({"ld": self._ld, "st": self._st, "ldmatrix": self._ldmatrix,
                               "stmatrix": self._stmatrix, "shfl": self._shfl, "bar": self._bar,
                               "barrier": self._bar, "membar": self._nop, "fence": self._fence,
                               "cp": lambda ins, mask: (tma.op_cp_async_bulk if ins.parts[2:3] == ["bulk"]
                                                        else asynccopy.op_cp_async)(self, ins, mask),
                               "mma": lambda ins, mask: matrix.op_mma(self, ins, mask),
                               "wgmma": self._wgmma,
                               "tensormap": lambda ins, mask: tma.op_tensormap(self, ins, mask),
                               "mbarrier": lambda ins, mask: tma.op_mbarrier(self, ins, mask),
                               "elect": lambda ins, mask: tma.op_elect(self, ins, mask),
                               "cvta": lambda ins, mask: semantics.op_cvta(self, ins, mask)})

    # -- operands ----------------------------------------------------------------------------
    def read(self, op, width: int | None) -> np.ndarray:
        """``(threads, width)`` bytes of an operand (register, special register, immediate, symbol)."""
        if isinstance(op, tuple):
            raise SimError(f"a vector operand {op} where a scalar is expected")
        if op.startswith("%") or op in self.regs.declared:
            if self.reg_pending and op in self.reg_pending and not self.in_async_op:
                raise Hazard(f"PTX line {self.program.instructions[self.pc].line}: reads {op} while a wgmma that "
                             f"writes it is in flight (no wgmma.wait_group retires it)")
            m = _SPECIAL.match(op)
            if m and op not in self.regs.declared and op.rstrip("0123456789") not in self.regs.prefixes:
                return from_uint(self._special(m.group(1), m.group(2) or "x"), width or 4)
            v = self.regs.get(op, width)
            if width is not None and v.shape[1] != width:
                v = v[:, :width] if v.shape[1] > width else np.concatenate(
                    [v, np.zeros((v.shape[0], width - v.shape[1]), dtype=np.int64)], axis=1)
            return v
        if _IMM.match(op):
            v = int(op.rstrip("U"), 0)
            w = width or 4
            return from_uint(np.full(self.threads, v & ((1 << (8 * w)) - 1), dtype=np.uint64), w)
        if _FIMM.match(op):
            v = int(op[2:], 16)
            return from_uint(np.full(self.threads, v, dtype=np.uint64), width or 4)
        if op == "global_smem" or op in self._shared_symbols():
            return from_uint(np.zeros(self.threads, dtype=np.uint64), width or 4)
        if op in self.program.params:   # a parameter's name is its address in the param space
            return from_uint(np.full(self.threads, self.param_address(op), dtype=np.uint64), width or 8)
        raise SimError(f"unknown operand {op!r}")

    def param_address(self, name: str) -> int:
        """Parameter ``name``'s address in the param space (``cvta.param`` keeps it): a window of
        :data:`PARAM_SPACE`, 256 bytes a parameter; kernels use it to pass a tensor map by value."""
        return PARAM_SPACE + 256 * self.program.params.index(name)

    def param_bytes(self, name: str) -> np.ndarray:
        """The bytes of parameter ``name``: given in :attr:`param_values`, else a pointer to its
        own buffer (the conversion kernel's convention)."""
        v = self.param_values.get(name)
        if v is None:
            v = from_uint(np.array([self._param_ptr(name)], dtype=np.uint64), 8)[0]
        return v

    def _shared_symbols(self):
        return ("global_smem",)

    def _param_ptr(self, name: str) -> int:
        return PARAM_BASE * (self.program.params.index(name) + 1)

    def _special(self, name: str, axis: str) -> np.ndarray:
        zero = np.zeros(self.threads, dtype=np.uint64)
        if name == "tid":
            return self.tid.astype(np.uint64) if axis == "x" else zero
        if name == "ntid":
            return np.full(self.threads, self.threads if axis == "x" else 1, dtype=np.uint64)
        if name == "laneid":
            return self.lane.astype(np.uint64)
        if name == "warpid":
            return self.warp.astype(np.uint64)
        if name == "nwarpid":
            return np.full(self.threads, self.threads // 32, dtype=np.uint64)
        if name == "ctaid":
            return np.full(self.threads, self.pid["xyz".index(axis)], dtype=np.uint64)
        if name == "nctaid":
            return np.full(self.threads, self.grid["xyz".index(axis)], dtype=np.uint64)
        if name in ("cluster_nctarank", "cluster_nctaid", "nclusterid"):
            return np.ones(self.threads, dtype=np.uint64)
        if name == "clusterid":
            return np.full(self.threads, self.pid["xyz".index(axis)], dtype=np.uint64)
        return zero  # cluster_ctarank, cluster_ctaid: clusters of one CTA

    def write(self, name, value: np.ndarray, mask) -> None:
        """Write the bytes ``value`` (threads, n) to register ``name`` in the threads of ``mask``; ``_``
        discards. Special registers cannot be written, nor a register an in-flight wgmma writes."""
        if name == "_":
            return
        if isinstance(name, tuple):
            raise SimError(f"a vector destination {name} where a scalar is expected")
        if not (name.startswith("%") or name in self.regs.declared) or _SPECIAL.match(name) and \
                name not in self.regs.declared and name.rstrip("0123456789") not in self.regs.prefixes:
            raise SimError(f"cannot write to {name!r}")
        if self.reg_pending and name in self.reg_pending and not self.in_async_op:
            raise Hazard(f"PTX line {self.program.instructions[self.pc].line}: writes {name} while a wgmma that "
                         f"writes it is in flight (no wgmma.wait_group retires it)")
        self.regs.set(name, value, mask)

    def pred(self, op: str, ins, mask) -> np.ndarray:
        """The per-thread value of predicate operand ``op`` (``!`` negates); a predicate computed from
        data or undefined stops the run."""
        neg = op.startswith("!")
        b = self.read(op.lstrip("!"), 1)
        if not concrete(b)[mask].all():
            if (b[mask] >= 256).any():
                raise SimError(f"PTX line {ins.line}: a predicate computed from data")
            raise SimError(f"PTX line {ins.line}: predicate {op} is undefined")
        v = np.clip(b[:, 0], 0, 255) != 0
        return ~v if neg else v

    def data_apply(self, ins, op, ty, operands, types, mask) -> np.ndarray:
        """The bytes of ``op`` of type ``ty`` on ``operands`` (byte arrays of types ``types``) where
        data are involved: the conversion interpreter only moves data, so any computation with it
        stops the run (the kernel validator's machine builds terms instead)."""
        raise SimError(f"PTX line {ins.line}: {ins.opcode}: arithmetic on data bytes ({ins.text.strip()})")

    def term_ids(self, b, ty, mask, ins):
        """Term ids of data bytes: there are none without a data algebra, so this stops the run."""
        raise SimError(f"PTX line {ins.line}: {ins.opcode}: arithmetic on data bytes ({ins.text.strip()})")

    def dot(self, acc_ty, c_ids, a_ids, b_ids, use_c=True):
        """A matrix product of data: not modelled without a data algebra, so this stops the run."""
        raise SimError("matrix products of data are not modelled without a data algebra")

    def observe(self, value: np.ndarray, mask) -> None:
        """Record ``value``, an observed register (``// lv-observe``); every thread must be active."""
        if not mask.all():
            raise SimError("an observed register under a predicate")
        self.observed.append(value.copy())

    def address(self, op, mask) -> np.ndarray:
        """The concrete ``uint64`` address per thread of an address operand ``[base+offset]``; an
        address computed from data or undefined stops the run."""
        if not (isinstance(op, tuple) and op and op[0] == "addr"):
            raise SimError(f"expected an address operand, got {op!r}")
        _, base, off = op
        b = self.read(base, None if base.startswith("%") else 8)
        if not concrete(b)[mask].all():
            raise SimError(f"an address computed from data or undefined ({base})")
        return (to_uint(np.clip(b, 0, 255)) + np.uint64(off & ((1 << 64) - 1))) & np.uint64((1 << 64) - 1)

    # -- run ----------------------------------------------------------------------------------
    def run(self, max_steps: int = 2_000_000) -> None:
        """Execute every thread of the CTA.

        Threads run in groups that share a program counter (SIMT); the group with the lowest
        program counter runs next and groups that meet at one program counter merge, so a branch
        taken by some threads only reconverges where the two paths meet (structured code, as
        compilers emit). A branch on a predicate that depends on data stops the run."""
        prog = self.program
        groups: dict[int, np.ndarray] = {0: np.ones(self.threads, dtype=bool)}
        n = len(prog.instructions)
        while groups:
            pc = min(groups)
            mask = groups.pop(pc)
            if pc >= n:
                self.live &= ~mask
                continue
            ins = prog.instructions[pc]
            self.pc = pc
            self.steps += 1
            if self.steps > max_steps:
                raise SimError("the kernel ran too long (a loop that does not end?)")
            if self.deadline is not None and not self.steps & 1023 and time.perf_counter() > self.deadline:
                raise TimeoutError(f"out of time after {self.steps} instructions")
            active = mask
            if ins.guard is not None:
                p = self.pred(ins.guard, ins, mask)
                active = mask & (~p if ins.negate else p)
            head = ins.parts[0]
            if head == "bra":
                target = ins.operands[0]
                if target not in prog.labels:
                    raise SimError(f"PTX line {ins.line}: unknown label {target}")
                self._join(groups, prog.labels[target], active)
                self._join(groups, pc + 1, mask & ~active)
                continue
            if head in ("ret", "exit"):
                self.live &= ~active
                self._join(groups, pc + 1, mask & ~active)
                continue
            handler = self._dispatch.get(head)
            if handler is None:
                raise SimError(f"PTX line {ins.line}: the instruction {ins.opcode!r} is not modelled "
                               f"({ins.text.strip()})")
            self.traffic.instructions += 1
            if active.any():
                try:
                    handler(ins, active)
                except SimError:
                    raise
                except (ValueError, KeyError, IndexError) as e:
                    raise SimError(f"PTX line {ins.line}: {ins.opcode}: {e}") from None
                if self.wait_failed:
                    self.wait_failed = False
                    if groups:
                        raise SimError(f"PTX line {ins.line}: a wait on the progress of threads at another point of "
                                       f"the program (warp specialisation) is not modelled")
                    raise Hazard(f"PTX line {ins.line}: deadlock: {ins.opcode} waits for an mbarrier phase that "
                                 f"can never complete (missing arrivals)")
            self._join(groups, pc + 1, mask)

    @staticmethod
    def _join(groups: dict, pc: int, mask: np.ndarray) -> None:
        if not mask.any():
            return
        got = groups.get(pc)
        groups[pc] = mask if got is None else (got | mask)

    def full_warps(self, ins, mask) -> None:
        """A warp-collective instruction needs every live thread of each warp it runs in."""
        warps = np.unique(self.warp[mask])
        need = np.isin(self.warp, warps) & self.live
        if (need & ~mask).any():
            raise SimError(f"PTX line {ins.line}: {ins.opcode} executed by part of a warp (divergence or a "
                           f"predicate); not modelled")

    # -- memory ---------------------------------------------------------------------------------
    @staticmethod
    def _vec(parts) -> int:
        for p in parts:
            if p in ("v2", "v4", "v8"):
                return int(p[1:])
        return 1

    def _space(self, ins) -> str:
        for p in ins.parts[1:]:
            if p in ("shared", "global", "param", "local", "const") or p.startswith("shared::"):
                return "shared" if p.startswith("shared") else p
        return "generic"

    def _ld(self, ins, mask):
        space = self._space(ins)
        ty = semantics._ty(ins)
        w = type_width(ty)
        n = self._vec(ins.parts)
        dst, addr_op = ins.operands[0], ins.operands[1]
        dsts = list(dst) if isinstance(dst, tuple) else [dst]
        if len(dsts) != n:
            raise SimError(f"PTX line {ins.line}: {n}-vector load into {len(dsts)} registers")
        if space == "param":
            _, name, off = addr_op
            if name not in self.program.params:
                raise SimError(f"PTX line {ins.line}: unknown parameter {name}")
            raw = self.param_bytes(name)
            if off < 0 or off + n * w > max(raw.size, 8):
                raise SimError(f"PTX line {ins.line}: a load past the end of parameter {name}")
            raw = np.concatenate([raw, np.zeros(max(0, off + n * w - raw.size), dtype=np.int64)])
            data = np.broadcast_to(raw[off:off + n * w], (self.threads, n * w))
            for i, d in enumerate(dsts):
                self.write(d, data[:, i * w:(i + 1) * w].copy(), mask)
            return
        addr = self.address(addr_op, mask)
        if space == "generic":
            space = self._generic_space(addr, mask, ins)
        if space == "global":
            data = np.full((self.threads, n * w), UNDEF, dtype=np.int64)
            data[mask] = self.glob.load(addr[mask], n * w)
        elif space == "shared":
            data = self._shared_read(addr, n * w, mask, ins)
            self.traffic.shared_load_instructions += len(np.unique(self.warp[mask]))
            self.traffic.shared_load_bytes += int(mask.sum()) * n * w
            self.traffic.load_wavefronts += self._wavefronts(addr, n * w, mask)
        else:
            raise SimError(f"PTX line {ins.line}: loads from {space} memory are not modelled")
        for i, d in enumerate(dsts):
            self.write(d, data[:, i * w:(i + 1) * w], mask)

    def _st(self, ins, mask):
        space = self._space(ins)
        ty = semantics._ty(ins)
        w = type_width(ty)
        n = self._vec(ins.parts)
        addr_op, src = ins.operands[0], ins.operands[1]
        srcs = list(src) if isinstance(src, tuple) else [src]
        if len(srcs) != n:
            raise SimError(f"PTX line {ins.line}: {n}-vector store of {len(srcs)} registers")
        data = np.concatenate([self.read(s, w) for s in srcs], axis=1)
        addr = self.address(addr_op, mask)
        if space == "generic":
            space = self._generic_space(addr, mask, ins)
        if space == "global":
            self._store_global(ins, addr, data, mask)
        elif space == "shared":
            self._shared_write(addr, data, mask, ins)
            self.traffic.shared_store_instructions += len(np.unique(self.warp[mask]))
            self.traffic.shared_store_bytes += int(mask.sum()) * n * w
            self.traffic.store_wavefronts += self._wavefronts(addr, n * w, mask)
        else:
            raise SimError(f"PTX line {ins.line}: stores to {space} memory are not modelled")

    def in_flight_code(self, byte: int):
        """The byte code an asynchronous copy in flight will write to shared ``byte``, or None."""
        st = getattr(self, "_async", None)
        for b in (st.batches if st else []):
            rows = np.nonzero(b.mask & (b.dst <= byte) & (byte < b.dst + b.data.shape[1]))[0]
            if rows.size:
                r = rows[-1]
                return int(b.data[r, byte - b.dst[r]])
        for mb in tma.state(self).barriers.values():
            for cp in mb.copies:
                hit = np.nonzero(cp.idx == byte)[0]
                if hit.size:
                    return int(cp.data[hit[0]])
        return None

    def _check_async_read(self, idx, ins) -> None:
        busy = self.shared.async_read[idx]
        if busy.any():
            byte = int(np.asarray(idx)[busy > 0].reshape(-1)[0])
            raise Hazard(f"PTX line {ins.line}: {ins.opcode} overwrites shared byte {byte} that an asynchronous "
                         f"operation in flight (wgmma or bulk copy) still reads", byte=byte, line=ins.line)

    def _store_global(self, ins, addr, data, mask) -> None:
        self.glob.store(addr[mask], data[mask], self.tid[mask])

    def store_bulk(self, ins, addr, data, thread: int) -> None:
        """A bulk (TMA) store issued by ``thread``: ``data`` (n, w) at global ``addr`` (n,)."""
        self.glob.store(addr, data, np.full(len(addr), thread))

    def _generic_space(self, addr, mask, ins) -> str:
        """A generic address names shared memory below :data:`SHARED_WINDOW`, global memory above."""
        low = addr[mask] < np.uint64(SHARED_WINDOW)
        if low.all():
            return "shared"
        if not low.any():
            return "global"
        raise SimError(f"PTX line {ins.line}: a generic access that mixes shared and global addresses")

    def _shared_index(self, addr, nbytes, mask, ins):
        a = addr.astype(np.int64)
        if (a[mask] % min(nbytes, 16)).any():
            raise SimError(f"PTX line {ins.line}: misaligned shared-memory access")
        if (a[mask] < 0).any() or (a[mask] + nbytes > self.shared.data.size).any():
            raise SimError(f"PTX line {ins.line}: shared-memory access out of range")
        return a[:, None] + np.arange(nbytes)[None, :]

    def _shared_read(self, addr, nbytes, mask, ins, warps=None):
        idx = self._shared_index(addr, nbytes, mask, ins)[mask]
        sh = self.shared
        proxy.check_pending(self, idx, ins)
        warp = (self.warp[mask] if warps is None else warps[mask])[:, None]
        race = (sh.write_epoch[idx] == self.epoch) & (sh.write_warp[idx] != warp)
        if race.any():
            i = np.argwhere(race)[0]
            raise Hazard(f"PTX line {ins.line}: race: warp {int(warp[i[0], 0])} reads shared byte "
                         f"{int(idx[i[0], i[1]])} that warp {int(sh.write_warp[idx[i[0], i[1]]])} wrote "
                         f"with no barrier in between", byte=int(idx[i[0], i[1]]), line=ins.line)
        sh.read_epoch[idx] = self.epoch
        sh.read_warp[idx] = warp
        out = np.full((self.threads, nbytes), UNDEF, dtype=np.int64)
        out[mask] = sh.data[idx]
        return out

    def _shared_write(self, addr, data, mask, ins):
        nbytes = data.shape[1]
        idx = self._shared_index(addr, nbytes, mask, ins)[mask]
        sh = self.shared
        proxy.check_pending(self, idx, ins, "writes")
        warp = self.warp[mask][:, None]
        race = ((sh.read_epoch[idx] == self.epoch) & (sh.read_warp[idx] != warp)) | \
            ((sh.write_epoch[idx] == self.epoch) & (sh.write_warp[idx] != warp))
        if race.any():
            i = np.argwhere(race)[0]
            raise Hazard(f"PTX line {ins.line}: race: warp {int(warp[i[0], 0])} writes shared byte "
                         f"{int(idx[i[0], i[1]])} that another warp used with no barrier in between",
                         byte=int(idx[i[0], i[1]]), line=ins.line)
        self._check_async_read(idx, ins)
        tma.reset_maps(self, idx)
        sh.data[idx] = data[mask]
        sh.write_epoch[idx] = self.epoch
        sh.write_warp[idx] = warp
        sh.generic_dirty[idx] = True

    def _wavefronts(self, addr, width, mask) -> int:
        a = addr.astype(np.int64)
        group = max(1, min(32, 128 // max(width, 4)))
        words_per = max(1, width // 4)
        total = 0
        for w in np.unique(self.warp[mask]):
            for g0 in range(0, 32, group):
                sel = mask & (self.warp == w) & (self.lane >= g0) & (self.lane < g0 + group)
                if not sel.any():
                    continue
                words = (a[sel][:, None] // 4 + np.arange(words_per)[None, :]).reshape(-1)
                total += _phase_cost(words)
        return total

    def _ldmatrix(self, ins, mask):
        self._matrix(ins, mask, load=True)

    def _stmatrix(self, ins, mask):
        self._matrix(ins, mask, load=False)

    def _matrix(self, ins, mask, load: bool):
        parts = ins.parts
        if "m8n8" not in parts or ("b16" not in parts):
            raise SimError(f"PTX line {ins.line}: only the m8n8 .b16 shape of {parts[0]} is modelled")
        self.full_warps(ins, mask)
        num = next((int(p[1:]) for p in parts if p in ("x1", "x2", "x4")), None)
        if num is None:
            raise SimError(f"PTX line {ins.line}: {parts[0]} without .x1/.x2/.x4")
        trans = "trans" in parts
        if load:
            regs, addr_op = ins.operands
        else:
            addr_op, regs = ins.operands
        regs = list(regs) if isinstance(regs, tuple) else [regs]
        if len(regs) != num:
            raise SimError(f"PTX line {ins.line}: .x{num} with {len(regs)} registers")
        addr = self.address(addr_op, mask).astype(np.int64)
        T = self.threads
        # thread t of a warp holds, in register i, elements (row, col) = (t//4, 2*(t%4)+k) of matrix i
        # (transposed: (2*(t%4)+k, t//4)); row r of matrix i starts at the address of lane 8*i + r
        lane = self.lane
        rows = np.stack([lane // 4, lane // 4], axis=1)
        cols = np.stack([2 * (lane % 4), 2 * (lane % 4) + 1], axis=1)
        if trans:
            rows, cols = cols, rows
        base = self.warp * 32
        for i, r in enumerate(regs):
            row_addr = addr[base[:, None] + 8 * i + rows]            # (T, 2)
            byte_addr = row_addr + 2 * cols                            # (T, 2) start of each b16
            idx = (byte_addr[:, :, None] + np.arange(2)[None, None, :]).reshape(T, 4)
            if load:
                data = np.full((T, 4), UNDEF, dtype=np.int64)
                data[mask] = self._shared_read_idx(idx[mask], ins, self.warp[mask])
                self.write(r, data, mask)
            else:
                data = self.read(r, 4)
                self._shared_write_idx(idx[mask], data[mask], ins, self.warp[mask])
        # traffic: every lane moves 4 bytes per matrix; one phase per matrix and warp
        nbytes = int(mask.sum()) * 4 * num
        phases = 0
        for w in np.unique(self.warp[mask]):
            for i in range(num):
                starts = addr[w * 32 + 8 * i: w * 32 + 8 * i + 8]
                words = (starts[:, None] // 4 + np.arange(4)[None, :]).reshape(-1)
                phases += _phase_cost(words)
        if load:
            self.traffic.shared_load_bytes += nbytes
            self.traffic.shared_load_instructions += T // 32
            self.traffic.load_wavefronts += phases
        else:
            self.traffic.shared_store_bytes += nbytes
            self.traffic.shared_store_instructions += T // 32
            self.traffic.store_wavefronts += phases

    def _shared_read_idx(self, idx, ins, warps):
        """Read explicit byte indices ``idx`` (threads, n) for a warp-collective instruction: the
        bytes may come from rows other lanes addressed (same warp: no race between lanes)."""
        sh = self.shared
        if (idx < 0).any() or (idx >= sh.data.size).any():
            raise SimError(f"PTX line {ins.line}: shared-memory access out of range")
        proxy.check_pending(self, idx, ins)
        warp = np.asarray(warps)[:, None]
        race = (sh.write_epoch[idx] == self.epoch) & (sh.write_warp[idx] != warp)
        if race.any():
            i = np.argwhere(race)[0]
            raise Hazard(f"PTX line {ins.line}: race: {ins.parts[0]} (warp {int(warp[i[0], 0])}) reads shared byte "
                         f"{int(idx[i[0], i[1]])} that warp {int(sh.write_warp[idx[i[0], i[1]]])} wrote with no "
                         f"barrier in between", byte=int(idx[i[0], i[1]]), line=ins.line)
        sh.read_epoch[idx] = self.epoch
        sh.read_warp[idx] = warp
        return sh.data[idx]

    def _shared_write_idx(self, idx, data, ins, warps):
        sh = self.shared
        if (idx < 0).any() or (idx >= sh.data.size).any():
            raise SimError(f"PTX line {ins.line}: shared-memory access out of range")
        proxy.check_pending(self, idx, ins, "writes")
        warp = np.asarray(warps)[:, None]
        race = ((sh.read_epoch[idx] == self.epoch) & (sh.read_warp[idx] != warp)) | \
            ((sh.write_epoch[idx] == self.epoch) & (sh.write_warp[idx] != warp))
        if race.any():
            i = np.argwhere(race)[0]
            raise Hazard(f"PTX line {ins.line}: race: {ins.parts[0]} (warp {int(warp[i[0], 0])}) writes shared byte "
                         f"{int(idx[i[0], i[1]])} that another warp used with no barrier in between",
                         byte=int(idx[i[0], i[1]]), line=ins.line)
        self._check_async_read(idx, ins)
        tma.reset_maps(self, idx)
        sh.data[idx] = data
        sh.write_epoch[idx] = self.epoch
        sh.write_warp[idx] = warp
        sh.generic_dirty[idx] = True

    # -- shuffles and barriers ---------------------------------------------------------------------
    def _shfl(self, ins, mask):
        parts = ins.parts
        mode = next((p for p in parts if p in ("idx", "bfly", "up", "down")), None)
        if "sync" not in parts or mode is None or "b32" not in parts:
            raise SimError(f"PTX line {ins.line}: only shfl.sync.{{idx,bfly,up,down}}.b32 is modelled")
        dst, a, b, c, membermask = ins.operands
        d, _, p = dst.partition("|")
        mm = int(semantics._ints(self, ins, membermask, 4, mask)[0])
        if mm != 0xFFFFFFFF:
            raise SimError(f"PTX line {ins.line}: a shuffle over a partial warp (membermask {mm:#x})")
        self.full_warps(ins, mask)
        val = self.read(a, 4)
        bv = semantics._ints(self, ins, b, 4, mask).astype(np.int64) & 31
        cv = semantics._ints(self, ins, c, 4, mask).astype(np.int64)
        lane = self.lane
        clamp = cv & 31
        seg = (cv >> 8) & 31
        max_lane = (lane & seg) | (clamp & ~seg)
        min_lane = lane & seg
        if mode == "up":
            j = lane - bv
            ok = j >= max_lane
        elif mode == "down":
            j = lane + bv
            ok = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bv
            ok = j <= max_lane
        else:
            j = min_lane | (bv & ~seg)
            ok = j <= max_lane
        j = np.where(ok, j, lane)
        src = self.warp * 32 + j
        self.write(d, val[src], mask)
        if p:
            self.write(p, ok.astype(np.int64)[:, None], mask)
        self.traffic.shuffles += self.threads // 32

    def _bar(self, ins, mask):
        parts = ins.parts
        if parts[0] == "bar" and "warp" in parts:
            return  # bar.warp.sync: lock step already
        if (self.live & ~mask).any():
            raise SimError(f"PTX line {ins.line}: a barrier that some live threads do not reach (divergence or "
                           f"a predicate)")
        if len(ins.operands) > 1:
            count = int(ins.operands[1], 0) if _IMM.match(ins.operands[1]) else None
            if count != self.threads:
                raise SimError(f"PTX line {ins.line}: a named barrier over part of the CTA is not modelled")
        if not ("sync" in parts or "aligned" in parts):
            raise SimError(f"PTX line {ins.line}: {ins.opcode} (arrive/red) is not modelled")
        self.epoch += 1
        self.traffic.barriers += 1

    def _nop(self, ins, mask):
        return

    def _fence(self, ins, mask):
        """``fence.proxy.async``: generic-proxy writes to shared memory become visible to the async
        proxy (wgmma, bulk copies); other fences order nothing this model reorders."""
        if "proxy" in ins.parts and "async" in ins.parts:
            self.shared.generic_dirty[:] = False

    def _wgmma(self, ins, mask):
        self.in_async_op = True
        try:
            wgmma.op_wgmma(self, ins, mask)
        finally:
            self.in_async_op = False

    def negate(self, ids, ty):
        """Negated matrix operands: not modelled without a data algebra, so this stops the run."""
        raise SimError("negated matrix operands are not modelled without a data algebra")


def _phase_cost(words: np.ndarray) -> int:
    """Wavefronts of one phase: the most distinct 4-byte words that fall in one of 32 banks."""
    u = np.unique(words)
    if u.size == 0:
        return 0
    return int(np.bincount(u % 32, minlength=32).max())
