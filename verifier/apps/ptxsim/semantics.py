"""What each supported PTX instruction does, on all threads at once (see :mod:`.state` for the byte
encoding). ``HANDLERS`` maps an opcode's first part (``add``, ``ld``, ``shfl``, ...) to a function
``(machine, instruction, mask)``; ``mask`` is the boolean array of threads that execute it.

Integer arithmetic needs concrete operands; on data bytes only moves are allowed (see the package
docstring). Each handler raises :class:`~.state.SimError` for a form it does not model.
"""
from __future__ import annotations

import numpy as np

from . import floats
from .state import UNDEF, SimError, concrete, from_uint, to_uint, type_width

U64 = np.uint64


def _mask_w(w: int) -> np.uint64:
    return U64((1 << (8 * w)) - 1)


def _signed(v: np.ndarray, w: int) -> np.ndarray:
    """uint64 values of width ``w`` bytes, read as signed -> int64."""
    v = v & _mask_w(w)
    if w == 8:
        return v.view(np.int64)
    s = v.astype(np.int64)
    top = 1 << (8 * w - 1)
    return np.where(s >= top, s - (1 << (8 * w)), s)


def _ty(ins) -> str:
    for p in reversed(ins.parts):
        if p in ("b8", "u8", "s8", "b16", "u16", "s16", "b32", "u32", "s32", "b64", "u64", "s64", "pred",
                 "f16", "bf16", "f32", "f64", "f16x2", "bf16x2"):
            return p
    raise _err(ins, "no operand type")


def _err(ins, why):
    return SimError(f"PTX line {ins.line}: {ins.opcode}: {why} ({ins.text.strip()})")


def _ints(m, ins, op, w, mask):
    """Concrete uint64 values of an operand for the active threads (undefined bytes read as 0 in
    inactive threads); data bytes in active threads are an error."""
    b = m.read(op, w)
    ok = concrete(b)
    bad = mask & ~ok
    if bad.any():
        t = int(np.argmax(bad))
        if (b[t] >= 256).any():
            raise _err(ins, f"arithmetic on data bytes (thread {t}, operand {op})")
        b = np.where((b < 0), 0, b)  # undefined, computed with: stays a value, flagged below
        m.undefined_arith += 1
    return to_uint(np.clip(b, 0, 255))


def _write_int(m, dst, v, w, mask):
    m.write(dst, from_uint(v & _mask_w(w), w), mask)


# -- arithmetic and logic (concrete) ---------------------------------------------------------------
def op_arith(m, ins, mask):
    name = ins.parts[0]
    ty = _ty(ins)
    if floats.is_float(ty):
        floats.op_float(m, ins, mask, ty)
        return
    w = type_width(ty)
    parts = ins.parts
    signed = ty.startswith("s")
    wide = "wide" in parts
    dst, *srcs = ins.operands
    if name in ("and", "or", "xor", "not") and ty in ("b16", "b32", "b64", "pred", "u32", "u16", "u64", "s32"):
        if _bitwise_on_data(m, ins, mask, name, w):
            return
    if name in ("shl", "shr") and _shift_on_data(m, ins, mask, name, w, signed):
        return
    if name == "bfi" and _insert_on_data(m, ins, mask, w):
        return
    if name == "mov":
        raise _err(ins, "internal: mov routed to arithmetic")
    if name == "lop3":
        a, b, c = (_ints(m, ins, s, w, mask) for s in srcs[:3])
        lut = int(srcs[3], 0)
        r = np.zeros_like(a)
        for i in range(8):
            if lut >> i & 1:
                ta = a if i & 4 else ~a
                tb = b if i & 2 else ~b
                tc = c if i & 1 else ~c
                r |= ta & tb & tc
        _write_int(m, dst, r, w, mask)
        return
    src_w = w
    vals = [_ints(m, ins, s, 2 * w if (wide and i == 2) else src_w, mask) for i, s in enumerate(srcs)]
    out_w = 2 * w if wide else w
    if wide:  # the multiplicands extend to 2w bits; mad's addend already has 2w
        vals_w = [(_signed(v, w).astype(np.int64).view(U64) if signed else v & _mask_w(w)) if i < 2 else v
                  for i, v in enumerate(vals)]
    else:
        vals_w = vals
    if name == "add":
        r = vals_w[0] + vals_w[1]
    elif name == "sub":
        r = vals_w[0] - vals_w[1]
    elif name == "mul":
        if "hi" in parts:
            a = _signed(vals[0], w) if signed else vals[0] & _mask_w(w)
            b = _signed(vals[1], w) if signed else vals[1] & _mask_w(w)
            if w > 4:
                raise _err(ins, "mul.hi of 64-bit values")
            r = ((a.astype(np.int64) * b.astype(np.int64)) >> (8 * w)).astype(np.int64).view(U64)
        else:
            r = vals_w[0] * vals_w[1]
    elif name == "mad":
        if "hi" in parts:
            raise _err(ins, "mad.hi is not modelled")
        r = vals_w[0] * vals_w[1] + vals_w[2]
    elif name == "and":
        r = vals[0] & vals[1]
    elif name == "or":
        r = vals[0] | vals[1]
    elif name == "xor":
        r = vals[0] ^ vals[1]
    elif name == "not":
        r = ~vals[0]
    elif name == "neg":
        r = U64(0) - vals[0]
    elif name == "shl":
        sh = vals[1] & U64(0xFFFFFFFF)
        r = np.where(sh >= 8 * w, U64(0), vals[0] << np.minimum(sh, U64(63)))
    elif name == "shr":
        sh = (vals[1] & U64(0xFFFFFFFF)).astype(np.int64)
        if signed:
            r = (_signed(vals[0], w) >> np.minimum(sh, 8 * w - 1)).view(U64)
        else:
            r = np.where(sh >= 8 * w, U64(0), (vals[0] & _mask_w(w)) >> np.minimum(sh, 63).astype(U64))
    elif name in ("min", "max"):
        a, b = (_signed(v, w) for v in vals) if signed else (v & _mask_w(w) for v in vals)
        r = (np.minimum(a, b) if name == "min" else np.maximum(a, b))
        r = r.astype(np.int64).view(U64) if signed else r
    elif name == "abs":
        r = np.abs(_signed(vals[0], w)).view(U64)
    elif name in ("div", "rem"):
        a, b = (_signed(v, w) for v in vals) if signed else ((v & _mask_w(w)).astype(np.int64) for v in vals)
        if (b[mask] == 0).any():
            raise _err(ins, "division by zero")
        b = np.where(b == 0, 1, b)
        q = np.trunc(a / b).astype(np.int64) if signed else a // b
        r = (q if name == "div" else a - q * b).view(U64)
    elif name == "bfe":
        a = vals[0] & _mask_w(w)
        pos = (vals[1] & U64(0xFF)).astype(np.int64)
        ln = (vals[2] & U64(0xFF)).astype(np.int64)
        bits = 8 * w
        r = np.zeros_like(a)
        for t in np.nonzero(mask)[0]:
            p, n, x = int(pos[t]), int(ln[t]), int(a[t])
            if n == 0:
                val = 0
            else:
                val = (x >> min(p, bits - 1) if p < bits else (x >> (bits - 1) if signed else 0)) & ((1 << n) - 1)
                if signed:
                    sbit = (x >> min(p + n - 1, bits - 1)) & 1
                    if sbit:
                        val |= ((1 << bits) - 1) & ~((1 << n) - 1)
            r[t] = U64(val & ((1 << bits) - 1))
    elif name == "bfi":
        f, b = vals[0] & _mask_w(w), vals[1] & _mask_w(w)
        pos = (vals[2] & U64(0xFF)).astype(np.int64)
        ln = (vals[3] & U64(0xFF)).astype(np.int64)
        r = b.copy()
        for t in np.nonzero(mask)[0]:
            p, n = int(pos[t]), int(ln[t])
            mk = (((1 << n) - 1) << p) & ((1 << (8 * w)) - 1)
            r[t] = U64((int(b[t]) & ~mk) | ((int(f[t]) << p) & mk))
    else:
        raise _err(ins, "unsupported arithmetic")
    _write_int(m, dst, r, out_w, mask)


def _bitwise_on_data(m, ins, mask, name, w) -> bool:
    """``and``/``or``/``xor`` where data bytes meet byte masks: handled bytewise; False when all
    operands are concrete (the caller computes)."""
    dst, *srcs = ins.operands
    bs = [m.read(s, w) for s in srcs]
    if all(concrete(b)[mask].all() for b in bs):
        return False
    if name == "not" or len(bs) != 2:
        raise _err(ins, "arithmetic on data bytes")
    a, b = bs
    out = np.full_like(a, UNDEF)
    for x, y in ((a, b), (b, a)):
        ycon = (y >= 0) & (y < 256)
        if name == "and":
            keep = ycon & (y == 0xFF)
            zero = ycon & (y == 0)
            out = np.where(keep, x, np.where(zero, 0, out))
        else:  # or / xor with zero keeps the other byte
            keep = ycon & (y == 0)
            out = np.where(keep, x, out)
    both_con = ((a >= 0) & (a < 256)) & ((b >= 0) & (b < 256))
    if both_con.any():
        ca, cb = np.clip(a, 0, 255), np.clip(b, 0, 255)
        val = (ca & cb) if name == "and" else (ca | cb) if name == "or" else (ca ^ cb)
        out = np.where(both_con, val, out)
    resolved = (out != UNDEF) | ((a == UNDEF) & (b == UNDEF))
    if not resolved[mask].all():
        t = int(np.argmax(~resolved.all(axis=1) & mask))
        raise _err(ins, f"arithmetic on data bytes that is not a byte move (thread {t})")
    m.write(dst, out, mask)
    m.traffic.data_moves += 1
    return True


def _shift_on_data(m, ins, mask, name, w, signed) -> bool:
    dst, src, amt = ins.operands
    a = m.read(src, w)
    if concrete(a)[mask].all():
        return False
    sh = _ints(m, ins, amt, 4, mask).astype(np.int64)
    out = np.full_like(a, UNDEF)
    for s in np.unique(sh[mask]):
        if s % 8 or (signed and name == "shr"):
            raise _err(ins, "a shift of data bytes by a non-multiple of 8 bits")
        k = int(s) // 8
        rows = mask & (sh == s)
        shifted = np.zeros_like(a)
        if k < w:
            if name == "shl":
                shifted[:, k:] = a[:, :w - k]
            else:
                shifted[:, :w - k] = a[:, k:]
        out[rows] = shifted[rows]
    m.write(dst, out, mask)
    m.traffic.data_moves += 1
    return True


def _insert_on_data(m, ins, mask, w) -> bool:
    """``bfi`` of data bytes at whole-byte positions and lengths (Triton 3.0 packs 8-bit elements
    so): a byte move; False when both values are concrete (the caller computes)."""
    dst, f, b, pos, ln = ins.operands
    fv, bv = m.read(f, w), m.read(b, w)
    if concrete(fv)[mask].all() and concrete(bv)[mask].all():
        return False
    start = _ints(m, ins, pos, 4, mask).astype(np.int64) & 0xFF
    length = _ints(m, ins, ln, 4, mask).astype(np.int64) & 0xFF
    out = bv.copy()
    for s, n in {(int(s), int(n)) for s, n in zip(start[mask], length[mask])}:
        if s % 8 or n % 8:
            raise _err(ins, "a bit-field insert of data bytes at a position or length that is not whole bytes")
        k, count = s // 8, min(n // 8, w - s // 8)
        rows = mask & (start == s) & (length == n)
        if count > 0:
            out[rows, k:k + count] = fv[rows, :count]
    m.write(dst, out, mask)
    m.traffic.data_moves += 1
    return True


def op_mov(m, ins, mask):
    dst, src = ins.operands
    ty = _ty(ins)
    w = type_width(ty)
    if isinstance(src, tuple):  # pack
        pieces = [m.read(s, None) for s in src]
        val = np.concatenate(pieces, axis=1)
    else:
        val = m.read(src, w)
    if isinstance(dst, tuple):  # unpack into equal parts
        n = val.shape[1] // len(dst)
        for i, d in enumerate(dst):
            if d != "_":
                m.write(d, val[:, i * n:(i + 1) * n], mask)
    else:
        m.write(dst, val, mask)
    if not concrete(val)[mask].all():
        m.traffic.data_moves += 1
    if ins.observe:
        m.observe(val, mask)


def op_selp(m, ins, mask):
    dst, a, b, p = ins.operands
    ty = _ty(ins)
    w = type_width(ty)
    pa, pb = m.read(a, w), m.read(b, w)
    pbytes = m.read(p.lstrip("!"), 1)
    if (pbytes[mask] >= 256).any() and getattr(m, "terms", None) is not None:
        if p.startswith("!"):
            raise _err(ins, "a negated predicate computed from data")
        m.write(dst, m.data_apply(ins, "select", ty if floats.is_float(ty) else "b%d" % (8 * w), [pbytes, pa, pb],
                                  ["i1", ty, ty], mask), mask)
        return
    pred = m.pred(p, ins, mask)
    m.write(dst, np.where(pred[:, None], pa, pb), mask)
    m.traffic.data_moves += 1


_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}


def op_setp(m, ins, mask):
    parts = ins.parts
    cmp = parts[1]
    ty = _ty(ins)
    if floats.is_float(ty):
        floats.op_setp_float(m, ins, mask, ty)
        return
    if cmp not in _CMP or len(parts) > 3:
        raise _err(ins, "only integer setp.CMP.TYPE is modelled")
    w = type_width(ty)
    dst, a, b = ins.operands[:3]
    if len(ins.operands) != 3 or "|" in dst:
        raise _err(ins, "setp with two destinations or a combining predicate")
    va, vb = _ints(m, ins, a, w, mask), _ints(m, ins, b, w, mask)
    if ty.startswith("s"):
        va, vb = _signed(va, w), _signed(vb, w)
    else:
        va, vb = va & _mask_w(w), vb & _mask_w(w)
    r = _CMP[cmp](va, vb)
    m.write(dst, r.astype(np.int64)[:, None], mask)


def op_cvt(m, ins, mask):
    parts = ins.parts
    if floats.is_float_cvt(parts):
        floats.op_cvt(m, ins, mask)
        return
    types = [p for p in parts[1:] if p[:1] in "usbf" and p[1:].isdigit() or p in ("f16", "bf16")]
    if len(types) != 2 or any(t.startswith("f") or t.startswith("b") and t != "b" for t in types if t[0] in "fb"):
        raise _err(ins, "only integer width conversions are modelled")
    dt, st = types
    dw, sw = type_width(dt), type_width(st)
    dst, src = ins.operands
    val = m.read(src, sw)
    if dw <= sw:
        out = val[:, :dw]
    elif st.startswith("s") or (dt.startswith("s") and st.startswith("s")):
        if not concrete(val)[mask].all():
            raise _err(ins, "sign extension of data bytes")
        v = _signed(to_uint(np.clip(val, 0, 255)), sw).view(U64)
        out = from_uint(v, dw)
    else:
        out = np.concatenate([val, np.zeros((val.shape[0], dw - sw), dtype=np.int64)], axis=1)
    m.write(dst, out, mask)
    if not concrete(val)[mask].all():
        m.traffic.data_moves += 1


def op_prmt(m, ins, mask):
    if len(ins.parts) != 2 or ins.parts[1] != "b32":
        raise _err(ins, "only the default prmt.b32 mode is modelled")
    dst, a, b, c = ins.operands
    src = np.concatenate([m.read(a, 4), m.read(b, 4)], axis=1)  # bytes 0..7
    sel = _ints(m, ins, c, 4, mask).astype(np.int64)
    out = np.empty((src.shape[0], 4), dtype=np.int64)
    rows = np.arange(src.shape[0])
    for i in range(4):
        s = (sel >> (4 * i)) & 0xF
        byte = src[rows, s & 7]
        sign = (s & 8) != 0
        if (sign & mask).any():
            if not ((byte >= 0) & (byte < 256))[sign & mask].all():
                raise _err(ins, "sign replication of a data byte")
            byte = np.where(sign, np.where(np.clip(byte, 0, 255) & 0x80, 0xFF, 0), byte)
        out[:, i] = byte
    m.write(dst, out, mask)
    m.traffic.data_moves += 1


def op_cvta(m, ins, mask):
    """``cvta[.to].space.size d, a``: generic and space addresses coincide in this model (shared
    memory below the generic window's top, global above), so the address is copied."""
    dst, src = ins.operands
    w = type_width(_ty(ins))
    m.write(dst, m.read(src, w), mask)


HANDLERS = {
    "add": op_arith, "sub": op_arith, "mul": op_arith, "mad": op_arith, "and": op_arith, "or": op_arith,
    "xor": op_arith, "not": op_arith, "neg": op_arith, "shl": op_arith, "shr": op_arith, "min": op_arith,
    "max": op_arith, "abs": op_arith, "div": op_arith, "rem": op_arith, "bfe": op_arith, "bfi": op_arith,
    "lop3": op_arith,
    **{name: op_arith for name in floats.OPS if name not in ("add", "sub", "mul", "mad", "neg", "abs", "min", "max",
                                                              "div")},
    "mov": op_mov, "selp": op_selp, "setp": op_setp, "cvt": op_cvt, "prmt": op_prmt,
}
