"""Shared-memory addresses computed from compiled code, for checking the scan's bank model against
what the compiler emitted (tests/test_scan_tutorials.py).

The listing (PTX or AMDGCN) is executed once, in textual order, for every thread of one CTA at
once (numpy vectors of 64-bit integers), over the integer instructions that compute addresses.
A value the evaluation does not know (a kernel argument, a loaded value, a floating-point
result) is ``None`` and poisons what is computed from it. A register read takes its latest
textual definition, so a value carried around a loop is its value on entry (iteration 0; a
second pass starts from the first one's final values, for values defined after their use in the
text: the next iteration's); a definition that a forward branch may jump over before the read
(an ``if``/``else`` arm) makes the read unknown. Shared memory starts at 0 (PTX
``global_smem``; an AMD workgroup's LDS), the CTA is block 0, and guards (PTX predicates, AMD
``exec`` masks) are ignored: every thread executes every instruction.

:func:`accesses` returns every shared-memory access with its per-thread byte addresses (or None
when they depend on unknown values) and the bytes each thread moves; :func:`wavefronts` applies
the hardware's bank rules to one access of one warp: NVIDIA 32 banks of 4 bytes served in phases
of ``128 / max(w, 4)`` lanes (``ldmatrix``/``stmatrix``: one 8-lane phase of 16-byte rows per
8x8 matrix); AMD CDNA3 32 / CDNA4 64 banks in phases of ``banks * 4 / max(w, 4)`` lanes; a phase
takes as many wavefronts as the most distinct 4-byte words one bank serves.

Sources of the instruction semantics: the PTX ISA (integer arithmetic, ``bfe``, ``prmt`` not
needed for addresses, ``ldmatrix``/``stmatrix`` §9.7.14.5.15-16), the AMD CDNA3/CDNA4 ISA
guides (VOP2/VOP3 integer ops, ``v_bfe_u32``, ``v_lshl_or_b32``, ``v_bitop3_b32`` (CDNA4:
bitwise function of 3 inputs by an 8-bit truth table), ``ds_*2*`` two accesses of
``offset0/offset1`` x size (x64 for ``2st64``), ``global_load_lds`` writing ``M0 + lane * size``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

M32 = (1 << 32) - 1


@dataclass
class Access:
    line: int
    text: str
    kind: str               # "store" or "load"
    width: int              # bytes one lane moves per address
    addresses: list | None  # [per-thread byte addresses] (two for ds_*2*), or None when unknown
    matrices: int = 0       # ldmatrix/stmatrix


# ---------------------------------------------------------------------------------------------
# PTX
_PTX_TYPE = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "b32": 4, "u32": 4, "s32": 4,
             "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8}


def _split_operands(text: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


class _Bypass:
    """Forward branches ``(from line, to line)`` of a listing: a definition at line ``d`` may be
    jumped over on the way to a read at line ``u`` when some branch leaves before ``d`` and lands
    after it, at or before ``u``."""

    def __init__(self, text: str, label_rx: str, branch_rx: str):
        lines = text.splitlines()
        labels = {}
        for n, line in enumerate(lines, start=1):
            m = re.match(label_rx, line)
            if m:
                labels[m.group(1)] = n
        self.forward = []
        for n, line in enumerate(lines, start=1):
            m = re.search(branch_rx, line)
            if m and m.group(1) in labels and labels[m.group(1)] > n:
                self.forward.append((n, labels[m.group(1)]))

    def skipped(self, d: int, u: int) -> bool:
        return any(b < d < t <= u for b, t in self.forward)


class _PtxState:
    def __init__(self, threads: int):
        self.n = threads
        self.tid = np.arange(threads, dtype=np.int64)
        self.regs: dict = {}
        self.defined: dict = {}
        self.line = 0
        self.bypass = None

    def val(self, op: str):
        op = op.strip()
        d = self.defined.get(op)
        if d is not None and self.bypass is not None and self.bypass.skipped(d, self.line):
            return None
        if re.fullmatch(r"-?(0[xX][0-9a-fA-F]+|\d+)U?", op):
            return np.full(self.n, int(op.rstrip("U"), 0), dtype=np.int64)
        if op in ("%tid.x",):
            return self.tid.copy()
        if op in ("%tid.y", "%tid.z", "%ctaid.x", "%ctaid.y", "%ctaid.z"):
            return np.zeros(self.n, dtype=np.int64)
        if op == "%laneid":
            return self.tid % 32
        if op == "%warpid":
            return self.tid // 32
        if op.startswith("global_smem"):
            m = re.fullmatch(r"global_smem\s*(?:\+\s*(\d+))?", op)
            return np.full(self.n, int(m.group(1) or 0) if m else 0, dtype=np.int64)
        return self.regs.get(op)


def _ptx_address(state: _PtxState, operand: str):
    m = re.fullmatch(r"\[\s*([^\]+]+?)\s*(?:\+\s*(-?\d+)\s*)?\]", operand.strip())
    if not m:
        return None
    base = state.val(m.group(1))
    if base is None:
        return None
    return base + int(m.group(2) or 0)


def _ptx_arith(opc: str, mods: list, args: list, st: _PtxState):
    vals = [st.val(a) for a in args]
    if any(v is None for v in vals):
        return None
    bits = next((_PTX_TYPE[m] * 8 for m in reversed(mods) if m in _PTX_TYPE), 32)
    mask = (1 << bits) - 1 if bits < 64 else -1
    signed = any(m.startswith("s") and m in _PTX_TYPE for m in mods)
    if opc == "mov" or opc == "cvta" or opc == "cvt":
        return vals[0]
    if opc == "add":
        r = vals[0] + vals[1]
    elif opc == "sub":
        r = vals[0] - vals[1]
    elif opc == "mul":
        r = vals[0] * vals[1]
        if "hi" in mods:
            r = r >> bits
        elif "wide" in mods:
            return r
    elif opc == "mad":
        r = vals[0] * vals[1] + vals[2]
        if "wide" in mods:
            return r
    elif opc == "shl":
        r = vals[0] << vals[1]
    elif opc == "shr":
        r = (vals[0] >> vals[1]) if signed else ((vals[0] & mask) >> vals[1])
    elif opc == "and":
        r = vals[0] & vals[1]
    elif opc == "or":
        r = vals[0] | vals[1]
    elif opc == "xor":
        r = vals[0] ^ vals[1]
    elif opc == "not":
        r = ~vals[0]
    elif opc == "neg":
        r = -vals[0]
    elif opc == "min":
        r = np.minimum(vals[0], vals[1])
    elif opc == "max":
        r = np.maximum(vals[0], vals[1])
    elif opc == "rem":
        r = np.fmod(vals[0], np.where(vals[1] == 0, 1, vals[1]))
    elif opc == "div":
        q = np.abs(vals[0]) // np.where(vals[1] == 0, 1, np.abs(vals[1]))
        r = q * np.sign(vals[0]) * np.sign(vals[1])
    elif opc == "bfe":
        pos, length = vals[1], vals[2]
        r = (vals[0] >> pos) & ((1 << length) - 1)
    elif opc == "bfi":
        pos, length = vals[2], vals[3]
        fmask = ((1 << length) - 1) << pos
        r = (vals[1] & ~fmask) | ((vals[0] << pos) & fmask)
    elif opc == "selp":
        return None  # needs the predicate; rarely part of an address
    else:
        return None
    if mask != -1:
        r = r & mask
        if signed:
            r = np.where(r >= (1 << (bits - 1)), r - (1 << bits), r)
    return r


def ptx_accesses(text: str, threads: int) -> list[Access]:
    """Every shared-memory access of a PTX listing with its addresses (see the module docstring)."""
    st = _PtxState(threads)
    st.bypass = _Bypass(text, r"^\s*(\$[\w$]+):", r"\bbra(?:\.uni)?\s+(\$[\w$]+)")
    first = _ptx_pass(text, st)
    return _merge(first, _ptx_pass(text, st))


def _merge(first: list, second: list) -> list:
    """A second pass starts from the first's final registers: values a loop carries back from its
    end (defined after their use in the text) are known there (the next iteration's)."""
    return [b if a.addresses is None else a for a, b in zip(first, second)]


def _ptx_pass(text: str, st: "_PtxState") -> list:
    out = []
    for n, raw in enumerate(text.splitlines(), start=1):
        st.line = n
        s = raw.strip()
        if not s or s.startswith(("//", ".", "$", "{", "}")) or s.endswith(":"):
            continue
        s = re.sub(r"^@!?%\w+\s+", "", s).rstrip(";").strip()
        parts = s.split(None, 1)
        opfull = parts[0]
        args = _split_operands(parts[1]) if len(parts) > 1 else []
        segs = opfull.split(".")
        opc, mods = segs[0], segs[1:]
        if opc in ("st", "ld") and mods and mods[0].startswith("shared") and "cluster" not in mods[0]:
            vec = next((int(m[1:]) for m in mods if re.fullmatch(r"v\d", m)), 1)
            ty = next((m for m in reversed(mods) if m in _PTX_TYPE), "b32")
            addr_op = args[0] if opc == "st" else args[1]
            out.append(Access(n, s, "store" if opc == "st" else "load", vec * _PTX_TYPE[ty],
                              _wrap(_ptx_address(st, addr_op))))
            if opc == "ld":
                _define_unknown(st, args[0])
            continue
        if opc in ("ldmatrix", "stmatrix"):
            x = next((int(m[1:]) for m in mods if re.fullmatch(r"x\d", m)), 1)
            addr_op = args[1] if opc == "ldmatrix" else args[0]
            out.append(Access(n, s, "load" if opc == "ldmatrix" else "store", 16,
                              _wrap(_ptx_address(st, addr_op)), x))
            if opc == "ldmatrix":
                _define_unknown(st, args[0])
            continue
        if opc == "cp" and "async" in mods and "shared" in mods and args:
            size = int(args[2], 0) if len(args) > 2 else 16
            out.append(Access(n, s, "store", size, _wrap(_ptx_address(st, args[0]))))
            continue
        if not args:
            continue
        dst = args[0]
        if dst.startswith("{"):
            _define_unknown(st, dst)
            continue
        if opc in ("setp",):
            st.regs[dst] = None
            continue
        st.regs[dst] = _ptx_arith(opc, mods, args[1:], st)
        st.defined[dst] = n
    return out


def _define_unknown(st, dst: str) -> None:
    for r in re.findall(r"%\w+", dst):
        st.regs[r] = None


def _wrap(addr):
    return None if addr is None else [addr]


# ---------------------------------------------------------------------------------------------
# AMDGCN
_DS_SIZE = {"b8": 1, "u8": 1, "i8": 1, "b16": 2, "u16": 2, "i16": 2, "b32": 4, "b64": 8, "b96": 12, "b128": 16}


class _AmdState:
    def __init__(self, threads: int, lanes: int = 64):
        self.n = threads
        self.lanes = lanes
        self.tid = np.arange(threads, dtype=np.int64)
        self.regs: dict = {"v0": self.tid.copy()}   # workitem id x in v0 (1-D workgroups)
        self.scc = None
        self.vcc = None
        self.defined: dict = {}
        self.line = 0
        self.bypass = None

    def val(self, op: str):
        op = op.strip()
        base = re.sub(r"\[(\d+):\d+\]$", r"\1", op)
        d = self.defined.get(base)
        if d is not None and self.bypass is not None and self.bypass.skipped(d, self.line):
            return None
        m = re.fullmatch(r"(-?)(0x[0-9a-fA-F]+|\d+)", op)
        if m:
            v = int(m.group(2), 0)
            return np.full(self.n, -v if m.group(1) else v, dtype=np.int64)
        m = re.fullmatch(r"([vs])\[(\d+):\d+\]", op)
        if m:
            return self.regs.get(f"{m.group(1)}{m.group(2)}")
        if op == "vcc":
            return self.vcc
        return self.regs.get(op)

    def first_lane(self, v):
        """``v_readfirstlane``: each wave's first lane's value, for every lane of the wave."""
        w = self.tid // self.lanes
        return v[w * self.lanes]


def _u32(x):
    return x & M32


def _amd_op(op: str, args: list, st: _AmdState):
    """The value an AMDGCN integer instruction writes to its first operand (None: unknown)."""
    base = re.sub(r"_e(32|64)$", "", op)
    srcs = args[1:]
    if base in ("v_readfirstlane_b32",):
        v = st.val(srcs[0])
        return None if v is None else st.first_lane(v)
    if base in ("v_mbcnt_lo_u32_b32",):
        lane = st.tid % st.lanes
        add = st.val(srcs[1])
        return None if add is None else np.minimum(lane, 32) + add
    if base in ("v_mbcnt_hi_u32_b32",):
        lane = st.tid % st.lanes
        add = st.val(srcs[1])
        return None if add is None else np.maximum(lane - 32, 0) + add
    vals = [st.val(a) for a in srcs]
    if any(v is None for v in vals):
        return None
    a = [_u32(v) for v in vals]
    table = {
        "v_mov_b32": lambda: a[0], "s_mov_b32": lambda: a[0], "s_movk_i32": lambda: a[0],
        "v_and_b32": lambda: a[0] & a[1], "s_and_b32": lambda: a[0] & a[1],
        "v_or_b32": lambda: a[0] | a[1], "s_or_b32": lambda: a[0] | a[1],
        "v_xor_b32": lambda: a[0] ^ a[1], "s_xor_b32": lambda: a[0] ^ a[1],
        "v_not_b32": lambda: ~a[0], "s_not_b32": lambda: ~a[0],
        "s_andn2_b32": lambda: a[0] & ~a[1], "s_orn2_b32": lambda: a[0] | ~a[1],
        "v_add_u32": lambda: a[0] + a[1], "s_add_i32": lambda: a[0] + a[1], "s_add_u32": lambda: a[0] + a[1],
        "v_add_co_u32": lambda: a[0] + a[1], "v_add_nc_u32": lambda: a[0] + a[1],
        "v_sub_u32": lambda: a[0] - a[1], "s_sub_i32": lambda: a[0] - a[1], "s_sub_u32": lambda: a[0] - a[1],
        "v_subrev_u32": lambda: a[1] - a[0],
        "v_lshlrev_b32": lambda: a[1] << (a[0] & 31), "s_lshl_b32": lambda: a[0] << (a[1] & 31),
        "v_lshrrev_b32": lambda: a[1] >> (a[0] & 31), "s_lshr_b32": lambda: a[0] >> (a[1] & 31),
        "v_ashrrev_i32": lambda: _signed(a[1]) >> (a[0] & 31), "s_ashr_i32": lambda: _signed(a[0]) >> (a[1] & 31),
        "v_mul_u32_u24": lambda: (a[0] & 0xFFFFFF) * (a[1] & 0xFFFFFF), "v_mul_lo_u32": lambda: a[0] * a[1],
        "v_mul_hi_u32": lambda: (a[0] * a[1]) >> 32,
        "s_mul_i32": lambda: a[0] * a[1],
        "v_mad_u32_u24": lambda: (a[0] & 0xFFFFFF) * (a[1] & 0xFFFFFF) + a[2],
        "v_lshl_add_u32": lambda: (a[0] << (a[1] & 31)) + a[2],
        "v_add_lshl_u32": lambda: (a[0] + a[1]) << (a[2] & 31),
        "v_lshl_or_b32": lambda: (a[0] << (a[1] & 31)) | a[2],
        "v_and_or_b32": lambda: (a[0] & a[1]) | a[2],
        "v_or3_b32": lambda: a[0] | a[1] | a[2], "v_xad_u32": lambda: (a[0] ^ a[1]) + a[2],
        "v_add3_u32": lambda: a[0] + a[1] + a[2],
        "v_bfe_u32": lambda: (a[0] >> (a[1] & 31)) & ((1 << (a[2] & 31)) - 1),
        "s_bfe_u32": lambda: (a[0] >> (a[1] & 31)) & ((1 << ((a[1] >> 16) & 0x7F)) - 1),
        "v_bfi_b32": lambda: (a[0] & a[1]) | (~a[0] & a[2]),
        "v_min_u32": lambda: np.minimum(a[0], a[1]), "v_max_u32": lambda: np.maximum(a[0], a[1]),
        "s_min_u32": lambda: np.minimum(a[0], a[1]), "s_max_u32": lambda: np.maximum(a[0], a[1]),
        "v_bitop3_b32": lambda: _bitop3(a[0], a[1], a[2], int(a[3][0])) if len(a) > 3 else None,
        "v_cndmask_b32": lambda: np.where(_u32(st.vcc) != 0, a[1], a[0]) if st.vcc is not None and len(a) == 2
        else None,
    }
    f = table.get(base)
    if f is None:
        return None
    r = f()
    return None if r is None else _u32(r)


def _signed(x):
    return np.where(x >= (1 << 31), x - (1 << 32), x)


def _bitop3(a, b, c, lut: int):
    """CDNA4 ``v_bitop3_b32``: bit i of the result is ``lut[(a_i << 2) | (b_i << 1) | c_i]``."""
    out = np.zeros_like(a)
    for idx in range(8):
        if (lut >> idx) & 1:
            ma = a if (idx >> 2) & 1 else ~a
            mb = b if (idx >> 1) & 1 else ~b
            mc = c if idx & 1 else ~c
            out |= ma & mb & mc
    return _u32(out)


def amdgcn_accesses(text: str, threads: int, lanes: int = 64) -> list[Access]:
    """Every LDS access of an AMDGCN listing with its addresses (see the module docstring)."""
    st = _AmdState(threads, lanes)
    st.bypass = _Bypass(text, r"^(\.?L\w+):", r"\bs_c?branch\w*\s+(\.?L\w+)")
    first = _amd_pass(text, st, lanes)
    return _merge(first, _amd_pass(text, st, lanes))


_CMP = {"eq": np.equal, "lg": np.not_equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}


def _compare(op: str, args: list, st: "_AmdState"):
    m = re.match(r"[sv]_cmp_(eq|lg|ne|lt|le|gt|ge)_([iu])32", op)
    if not m:
        return None
    srcs = args if op.startswith("s_") else args[1:]
    if op.startswith("v_") and "_e64" in op:
        srcs = args[1:]
    vals = [st.val(a) for a in srcs[:2]]
    if len(vals) < 2 or any(v is None for v in vals):
        return None
    a, b = (_u32(v) for v in vals)
    if m.group(2) == "i":
        a, b = _signed(a), _signed(b)
    return _CMP[m.group(1)](a, b).astype(np.int64)


def _amd_pass(text: str, st: "_AmdState", lanes: int) -> list:
    out = []
    for n, raw in enumerate(text.splitlines(), start=1):
        st.line = n
        s = raw.split(";", 1)[0].strip()
        if not s or s.startswith(".") or s.endswith(":"):
            continue
        parts = s.split(None, 1)
        op = parts[0]
        rest = parts[1] if len(parts) > 1 else ""
        lut = re.search(r"bitop3:(0x[0-9a-fA-F]+|\d+)", rest)
        args = [a.strip() for a in re.split(r",\s*", re.sub(r"\s+(offset\d?:|lds|glc|slc|nt|sc\d|bitop3:).*$", "", rest))
                if a.strip()]
        if lut:
            args.append(str(int(lut.group(1), 0)))
        m = re.match(r"ds_(write|read|store|load)(2st64|2)?_([a-z]+\d+)", op)
        if m:
            kind = "store" if m.group(1) in ("write", "store") else "load"
            size = _DS_SIZE.get(m.group(3), 4)
            if "_tr_" in op:
                size = 8
            addr_reg = args[0] if kind == "store" else args[1]
            base = st.val(addr_reg)
            offs = dict(re.findall(r"(offset\d?):(\d+)", rest))
            addrs = None
            if base is not None:
                if m.group(2):
                    scale = size * (64 if m.group(2) == "2st64" else 1)
                    addrs = [base + int(offs.get("offset0", 0)) * scale, base + int(offs.get("offset1", 0)) * scale]
                else:
                    addrs = [base + int(offs.get("offset", 0))]
            out.append(Access(n, s, kind, size, addrs))
            if kind == "load":
                _amd_unknown(st, args[0])
            continue
        lm = re.match(r"(global|buffer)_load_lds_(\w+)", op)
        if lm:
            size = {"dword": 4, "dwordx2": 8, "dwordx3": 12, "dwordx4": 16, "ushort": 2, "ubyte": 1}.get(lm.group(2), 4)
            m0 = st.val("m0")
            off = int(dict(re.findall(r"(offset):(\d+)", rest)).get("offset", 0))
            addr = None if m0 is None else m0 + off + (st.tid % lanes) * size
            out.append(Access(n, s, "store", size, None if addr is None else [addr]))
            continue
        if not args:
            continue
        dst = args[0]
        if op.startswith("s_cmp"):
            st.scc = _compare(op, args, st)
            continue
        if op.startswith("v_cmp"):
            r = _compare(op, args, st)
            if "_e64" in op:
                st.regs[dst] = r
                st.defined[dst] = n
            else:
                st.vcc = r
            continue
        if op.startswith("s_cselect"):
            a, b = st.val(args[1]), st.val(args[2])
            st.regs[dst] = None if st.scc is None or a is None or b is None else np.where(st.scc != 0, a, b)
            st.defined[dst] = n
            continue
        if op.startswith("v_cndmask_b32") and len(args) == 4:
            a, b, c = st.val(args[1]), st.val(args[2]), st.val(args[3])
            st.regs[dst] = None if a is None or b is None or c is None else np.where(c != 0, b, a)
            st.defined[dst] = n
            continue
        if "," in rest and re.match(r"[vs]\[\d+:\d+\]", dst):
            _amd_unknown(st, dst)
            continue
        st.regs[dst] = _amd_op(op, args, st)
        st.defined[dst] = n
    return out


def _amd_unknown(st: _AmdState, dst: str) -> None:
    m = re.fullmatch(r"([vs])\[(\d+):(\d+)\]", dst)
    if m:
        for i in range(int(m.group(2)), int(m.group(3)) + 1):
            st.regs[f"{m.group(1)}{i}"] = None
    else:
        st.regs[dst] = None


# ---------------------------------------------------------------------------------------------
def accesses(text: str, kind: str, threads: int) -> list[Access]:
    return ptx_accesses(text, threads) if kind == "ptx" else amdgcn_accesses(text, threads)


def wavefronts(acc: Access, warp: int, lanes: int, banks: int) -> tuple[int, int]:
    """``(wavefronts, worst phase)`` of one warp's execution of ``acc`` (module docstring)."""
    total, worst = 0, 0
    for addr in acc.addresses or []:
        a = addr[warp * lanes:(warp + 1) * lanes]
        if acc.matrices:
            groups = [np.arange(8 * m, 8 * m + 8) for m in range(acc.matrices)]
            width = 16
        else:
            per = max(1, banks * 4 // max(acc.width, 4))
            groups = [np.arange(g, min(g + per, len(a))) for g in range(0, len(a), per)]
            width = acc.width
        for g in groups:
            words = set()
            for lane in g:
                start = int(a[lane])
                for w in range(start // 4, (start + max(width, 1) - 1) // 4 + 1):
                    words.add(w)
            per_bank: dict = {}
            for w in words:
                per_bank[w % banks] = per_bank.get(w % banks, 0) + 1
            need = max(per_bank.values()) if per_bank else 0
            total += need
            worst = max(worst, need)
    return total, worst
