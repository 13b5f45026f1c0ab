"""IEEE-754 arithmetic on concrete PTX operands, bit-exact where the PTX ISA fixes the result.

Values travel as raw bits (``uint64``); a float type names the format:

========  ==========  =========  =========================
type      precision   min exp    bits
========  ==========  =========  =========================
``f16``   11          -14        binary16
``bf16``  8           -126       bfloat16 (binary32's range)
``f32``   24          -126       binary32
``f64``   53          -1022      binary64
========  ==========  =========  =========================

:func:`evaluate` computes an instruction on concrete operands, or answers ``None`` where the
result is not fixed by the ISA bit for bit (``ex2.approx``, ``div.full``, ``rsqrt.approx``, the
directed rounding modes, the sign of ``max(+0, -0)``): the caller then refuses (the conversion
interpreter) or keeps the operation symbolic (the kernel validator). Round-to-nearest-even results
are computed in binary64 and rounded once to the destination format: for ``+ - * / sqrt`` binary64
carries at least ``2p + 2`` bits of every narrower format, so the double rounding is innocuous
(Figueroa, "When is double rounding innocuous?", 1995); ``fma`` is rounded from the exact rational.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from .state import SimError, concrete, from_uint, to_uint, type_width

U64 = np.uint64

#: type -> (precision p, minimum normal exponent, maximum exponent, storage bits)
FORMATS = {"f16": (11, -14, 15, 16), "bf16": (8, -126, 127, 16), "f32": (24, -126, 127, 32),
           "f64": (53, -1022, 1023, 64)}
FLOAT_TYPES = tuple(FORMATS) + ("f16x2", "bf16x2")


def is_float(ty: str) -> bool:
    return ty in FLOAT_TYPES


def lanes(ty: str) -> tuple[str, int]:
    """``f16x2`` -> (``f16``, 2); scalar types -> (type, 1)."""
    return (ty[:-2], 2) if ty.endswith("x2") else (ty, 1)


def decode(bits, ty: str) -> np.ndarray:
    """Raw bits of scalar float type ``ty`` -> ``float64`` values (exact)."""
    b = np.asarray(bits).astype(np.uint64)
    if ty == "f16":
        return (b & U64(0xFFFF)).astype(np.uint16).view(np.float16).astype(np.float64)
    if ty == "bf16":
        return ((b & U64(0xFFFF)).astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    if ty == "f32":
        return (b & U64(0xFFFFFFFF)).astype(np.uint32).view(np.float32).astype(np.float64)
    if ty == "f64":
        return b.view(np.float64).copy()
    raise ValueError(f"not a scalar float type: {ty}")


def round_f64(x: np.ndarray, ty: str) -> np.ndarray:
    """Round ``float64`` values to the nearest ``ty`` value, ties to even (still as ``float64``)."""
    x = np.asarray(x, dtype=np.float64)
    if ty == "f64":
        return x.copy()
    p, emin, emax, _ = FORMATS[ty]
    out = x.copy()
    fin = np.isfinite(x) & (x != 0)
    if fin.any():
        v = x[fin]
        e = np.floor(np.log2(np.abs(v)))
        # log2 may be off by one next to powers of two: correct with exact comparisons
        e = np.where(np.ldexp(1.0, e.astype(np.int64)) > np.abs(v), e - 1, e)
        e = np.where(np.ldexp(1.0, (e + 1).astype(np.int64)) <= np.abs(v), e + 1, e)
        e = np.maximum(e, emin).astype(np.int64)
        quantum = e - (p - 1)
        r = np.ldexp(np.rint(np.ldexp(v, -quantum)), quantum)   # rint: ties to even, exact scaling
        biggest = np.ldexp(2.0 - 2.0 ** (1 - p), emax)
        r = np.where(np.abs(r) > biggest, np.copysign(np.inf, v), r)
        out[fin] = r
    return out


def encode(x: np.ndarray, ty: str) -> np.ndarray:
    """``float64`` values already representable in ``ty`` (see :func:`round_f64`) -> raw bits."""
    x = np.asarray(x, dtype=np.float64)
    if ty == "f16":
        return x.astype(np.float16).view(np.uint16).astype(np.uint64)
    if ty == "bf16":
        return (x.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint64)
    if ty == "f32":
        return x.astype(np.float32).view(np.uint32).astype(np.uint64)
    if ty == "f64":
        return x.view(np.uint64).copy()
    raise ValueError(f"not a scalar float type: {ty}")


def _round_fraction(q: Fraction, ty: str) -> float:
    """The ``ty`` value nearest the exact rational ``q`` (ties to even)."""
    if q == 0:
        return 0.0
    p, emin, emax, _ = FORMATS[ty]
    sign = -1.0 if q < 0 else 1.0
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, emin)
    quantum = Fraction(2) ** (e - (p - 1))
    n = a / quantum
    whole = n.numerator // n.denominator
    rest = n - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2):
        whole += 1
    r = float(whole * quantum)
    if r > float((2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax):
        return sign * float("inf")
    return sign * r


def _flush(x: np.ndarray, ty: str) -> np.ndarray:
    """``.ftz``: subnormal ``f32`` values become zero of the same sign."""
    if ty != "f32":
        return x
    tiny = np.abs(x) < 2.0 ** -126
    return np.where(tiny & (x != 0), np.copysign(0.0, x), x)


def evaluate(op: str, ty: str, mods: tuple[str, ...], operands: list) -> np.ndarray | None:
    """``op`` (``add``, ``sub``, ``mul``, ``fma``, ``div``, ``neg``, ``abs``, ``min``, ``max``,
    ``sqrt``, ``rcp``) of type ``ty`` with instruction modifiers ``mods`` on raw-bit operands ->
    raw bits, or ``None`` when the ISA does not fix the result bit for bit."""
    scalar, n = lanes(ty)
    if n == 2:
        halves = []
        for h in range(2):
            ops = [(np.asarray(o).astype(np.uint64) >> U64(16 * h)) & U64(0xFFFF) for o in operands]
            r = evaluate(op, scalar, mods, ops)
            if r is None:
                return None
            halves.append(r & U64(0xFFFF))
        return halves[0] | (halves[1] << U64(16))
    rounding = [m for m in mods if m in ("rn", "rz", "rm", "rp", "rni", "approx", "full")]
    if op in ("add", "sub", "mul", "fma") and rounding not in ([], ["rn"]):
        return None   # directed rounding is not modelled
    if op in ("div", "sqrt", "rcp") and rounding != ["rn"]:
        return None   # .approx / .full: the ISA bounds the error, it does not fix the bits
    ftz = "ftz" in mods
    xs = [decode(o, scalar) for o in operands]
    if ftz:
        xs = [_flush(x, scalar) for x in xs]
    with np.errstate(all="ignore"):
        if op == "add":
            r = round_f64(xs[0] + xs[1], scalar)
        elif op == "sub":
            r = round_f64(xs[0] - xs[1], scalar)
        elif op == "mul":
            r = round_f64(xs[0] * xs[1], scalar)
        elif op == "div":
            r = round_f64(xs[0] / xs[1], scalar)
        elif op == "rcp":
            r = round_f64(1.0 / xs[0], scalar)
        elif op == "sqrt":
            r = round_f64(np.sqrt(xs[0]), scalar)
        elif op == "fma":
            r = np.empty_like(xs[0])
            for i in range(r.size):
                a, b, c = xs[0][i], xs[1][i], xs[2][i]
                if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
                    r[i] = a * b + c
                else:
                    r[i] = _round_fraction(Fraction(a) * Fraction(b) + Fraction(c), scalar)
        elif op in ("neg", "abs"):
            if np.isnan(xs[0]).any():
                return None
            sign = U64(1 << (FORMATS[scalar][3] - 1))
            bits = np.asarray(operands[0]).astype(np.uint64)
            return bits ^ sign if op == "neg" else bits & ~sign
        elif op in ("min", "max"):
            a, b = xs
            zeros = (a == 0) & (b == 0) & (np.signbit(a) != np.signbit(b))
            if zeros.any() or "NaN" in mods:
                return None
            pick = np.fmin(a, b) if op == "min" else np.fmax(a, b)
            r = pick
        else:
            return None
    if np.isnan(r).any():
        return None       # NaN payloads are not modelled
    if "sat" in mods:
        r = np.where(np.isnan(r), 0.0, np.clip(r, 0.0, 1.0))
    if ftz:
        r = _flush(r, scalar)
    return encode(r, scalar)


# -- the instruction handler ------------------------------------------------------------------------
#: PTX opcode -> the operation :func:`evaluate` names
OPS = {"add": "add", "sub": "sub", "mul": "mul", "fma": "fma", "mad": "fma", "div": "div", "neg": "neg",
       "abs": "abs", "min": "min", "max": "max", "sqrt": "sqrt", "rcp": "rcp", "ex2": "ex2", "lg2": "lg2",
       "rsqrt": "rsqrt", "sin": "sin", "cos": "cos", "tanh": "tanh"}
_ARITY = {"neg": 1, "abs": 1, "sqrt": 1, "rcp": 1, "ex2": 1, "lg2": 1, "rsqrt": 1, "sin": 1, "cos": 1, "tanh": 1,
          "fma": 3}


#: PTX opcode (with the modifier that matters) -> the term operation the data algebra builds
TERM_OPS = {"add": "add", "sub": "sub", "mul": "mul", "fma": "fma", "div": "div", "neg": "neg", "abs": "abs",
            "min": "minnum", "max": "maxnum", "sqrt": "sqrt", "rcp": "rcp", "ex2": "exp2", "lg2": "log2",
            "rsqrt": "rsqrt", "sin": "sin", "cos": "cos", "tanh": "tanh"}


def term_op(op: str, mods) -> str:
    if op in ("min", "max") and "NaN" in mods:
        return {"min": "minimum", "max": "maximum"}[op]
    return TERM_OPS[op]


def op_float(m, ins, mask, ty: str) -> None:
    """A float instruction (``add.f32``, ``fma.rn.f16x2``, ``ex2.approx.ftz.f32`` ...), lane by lane
    for packed types: computed when every operand of every active thread is concrete and
    :func:`evaluate` fixes the result; otherwise handed to the machine's data algebra
    (``m.data_apply``), which refuses by default."""
    parts = ins.parts
    op = OPS.get(parts[0])
    if op is None or (parts[0] == "mad" and "rn" not in parts):
        raise SimError(f"PTX line {ins.line}: {ins.opcode}: this float instruction is not modelled "
                       f"({ins.text.strip()})")
    mods = tuple(p for p in parts[1:] if p != ty)
    scalar, n = lanes(ty)
    w = type_width(scalar)
    dst, *srcs = ins.operands
    if len(srcs) != _ARITY.get(op, 2):
        raise SimError(f"PTX line {ins.line}: {ins.opcode}: {len(srcs)} operands")
    data = [m.read(s, w * n) for s in srcs]
    out = []
    for h in range(n):
        ops = [d[:, h * w:(h + 1) * w] for d in data]
        out.append(_lane(m, ins, mask, op, scalar, mods, ops))
    m.write(dst, np.concatenate(out, axis=1), mask)


def _lane(m, ins, mask, op, scalar, mods, ops) -> np.ndarray:
    w = type_width(scalar)
    if all(concrete(b)[mask].all() for b in ops):
        r = evaluate(op, scalar, mods, [to_uint(np.clip(b, 0, 255)) for b in ops])
        if r is not None:
            return from_uint(r, w)
        if getattr(m, "terms", None) is None:
            raise SimError(f"PTX line {ins.line}: {ins.opcode}: the result on concrete operands is not fixed "
                           f"bit for bit by the ISA (approximate, directed rounding or NaN); not modelled")
    return m.data_apply(ins, term_op(op, mods), scalar, ops, [scalar] * len(ops), mask)


# -- conversions --------------------------------------------------------------------------------------
_ROUNDINGS = ("rn", "rz", "rm", "rp", "rna", "rni", "rzi", "rmi", "rpi")
_FP8 = {"e4m3": 1, "e5m2": 1}


def _scalar_width(t: str) -> int:
    return 1 if t in _FP8 else type_width(t)


def _split_type(t: str) -> tuple[str, int]:
    if t.endswith("x2"):
        return t[:-2], 2
    return t, 1


def is_float_cvt(parts) -> bool:
    types = [p for p in parts[1:] if _split_type(p)[0] in FORMATS or _split_type(p)[0] in _FP8 or p == "tf32"]
    return bool(types)


def op_cvt(m, ins, mask) -> None:
    """``cvt`` with a float on either side: ``cvt.f32.f16``, ``cvt.rn.f16.f32``, ``cvt.rn.f32.s32``,
    ``cvt.rzi.s32.f32``, ``cvt.rna.tf32.f32``, the packing ``cvt.rn.f16x2.f32 d, a, b`` (``a`` to
    the upper half) and fp8 ``cvt.rn.satfinite.e4m3x2.f32 d, a, b`` / ``cvt.rn.f16x2.e4m3x2 d, a``."""
    parts = ins.parts
    types = [p for p in parts[1:] if p not in _ROUNDINGS and p not in ("ftz", "sat", "satfinite", "relu")]
    if len(types) != 2:
        raise SimError(f"PTX line {ins.line}: {ins.opcode}: cannot read the conversion's types")
    dty, sty = types
    (dsc, dn), (ssc, sn) = _split_type(dty), _split_type(sty)
    rnd = next((p for p in parts[1:] if p in _ROUNDINGS), None)
    mods = tuple(p for p in parts[1:] if p not in types)
    dst, *srcs = ins.operands
    dw, sw = _scalar_width(dsc), _scalar_width(ssc)
    if dn == 2 and sn == 1:        # two sources packed: the first operand goes to the upper half
        if len(srcs) != 2:
            raise SimError(f"PTX line {ins.line}: {ins.opcode}: a packing conversion takes two sources")
        lanes_in = [m.read(srcs[1], sw), m.read(srcs[0], sw)]
    elif dn == sn:
        src = m.read(srcs[0], sw * sn)
        lanes_in = [src[:, i * sw:(i + 1) * sw] for i in range(sn)]
    else:
        raise SimError(f"PTX line {ins.line}: {ins.opcode}: this packing is not modelled")
    name = "cvt" if rnd in (None, "rn") or (rnd in ("rni",) and dsc.startswith(("s", "u"))) else "cvt." + rnd
    if dsc == "tf32":
        name = "cvt." + (rnd or "rna")
    out = []
    for b in lanes_in:
        r = None
        if concrete(b)[mask].all():
            r = _convert(to_uint(np.clip(b, 0, 255)), ssc, dsc, rnd, mods)
        if r is not None:
            out.append(from_uint(r, dw))
        elif getattr(m, "terms", None) is None:
            raise SimError(f"PTX line {ins.line}: {ins.opcode}: conversion of data or a result the ISA does "
                           f"not fix; not modelled")
        else:
            out.append(m.data_apply(ins, name, _term_type(dsc), [b], [_term_type(ssc)], mask))
    m.write(dst, np.concatenate(out, axis=1), mask)


def _term_type(t: str) -> str:
    return {"s8": "i8", "s16": "i16", "s32": "i32", "s64": "i64", "u8": "i8", "u16": "i16", "u32": "i32",
            "u64": "i64"}.get(t, t)


def _convert(bits: np.ndarray, src: str, dst: str, rnd, mods) -> np.ndarray | None:
    """A conversion of concrete values the ISA fixes (round to nearest even, or exact), else None."""
    if src in FORMATS:
        x = decode(bits, src)
        if "ftz" in mods:
            x = _flush(x, src)
        if np.isnan(x).any():
            return None
    elif src[0] in "su" and src[1:].isdigit():
        nb = int(src[1:])
        v = bits.astype(np.uint64) & U64((1 << nb) - 1 if nb < 64 else (1 << 64) - 1)
        if src[0] == "s":
            iv = v.astype(np.int64)
            if nb < 64:
                iv = np.where(iv >= 1 << (nb - 1), iv - (1 << nb), iv)
        else:
            iv = v.astype(np.int64)
        if (np.abs(iv) >= 1 << 53).any():
            return None
        x = iv.astype(np.float64)
    else:
        return None
    if dst in FORMATS:
        if rnd not in (None, "rn"):
            return None
        r = round_f64(x, dst)
        if "ftz" in mods:
            r = _flush(r, dst)
        if "sat" in mods:
            r = np.clip(r, 0.0, 1.0)
        return encode(r, dst)
    if dst[0] in "su" and dst[1:].isdigit() and rnd in ("rzi", "rni", "rmi", "rpi"):
        f = {"rzi": np.trunc, "rni": np.rint, "rmi": np.floor, "rpi": np.ceil}[rnd]
        nb = int(dst[1:])
        lo, hi = (-(1 << (nb - 1)), (1 << (nb - 1)) - 1) if dst[0] == "s" else (0, (1 << nb) - 1)
        iv = np.clip(f(x), lo, hi).astype(np.int64)
        return iv.astype(np.uint64) & U64((1 << nb) - 1 if nb < 64 else (1 << 64) - 1)
    return None


#: setp comparison -> (numpy comparison, result when an operand is NaN)
COMPARE = {"eq": (np.equal, False), "ne": (np.not_equal, False), "lt": (np.less, False),
           "le": (np.less_equal, False), "gt": (np.greater, False), "ge": (np.greater_equal, False),
           "equ": (np.equal, True), "neu": (np.not_equal, True), "ltu": (np.less, True),
           "leu": (np.less_equal, True), "gtu": (np.greater, True), "geu": (np.greater_equal, True)}


def compare(cmp: str, ty: str, a_bits, b_bits) -> np.ndarray:
    """``setp.CMP.ty`` on raw bits (``num``: neither NaN, ``nan``: either NaN)."""
    a, b = decode(a_bits, ty), decode(b_bits, ty)
    either = np.isnan(a) | np.isnan(b)
    if cmp == "num":
        return ~either
    if cmp == "nan":
        return either
    fn, on_nan = COMPARE[cmp]
    with np.errstate(all="ignore"):
        return np.where(either, on_nan, fn(a, b))


def op_setp_float(m, ins, mask, ty: str) -> None:
    """``setp.CMP.f32 p, a, b`` (and ``.ftz``): concrete operands are compared; data go to the
    machine's data algebra (``m.data_op`` with op ``cmp.CMP``)."""
    parts = ins.parts
    cmp = parts[1]
    if cmp not in COMPARE and cmp not in ("num", "nan") or ty not in FORMATS:
        raise SimError(f"PTX line {ins.line}: {ins.opcode}: this comparison is not modelled")
    if len(ins.operands) != 3 or "|" in ins.operands[0]:
        raise SimError(f"PTX line {ins.line}: setp with two destinations or a combining predicate")
    dst, a, b = ins.operands
    w = type_width(ty)
    data = [m.read(a, w), m.read(b, w)]
    if all(concrete(x)[mask].all() for x in data):
        va, vb = (to_uint(np.clip(x, 0, 255)) for x in data)
        if "ftz" in parts:
            va, vb = (encode(_flush(decode(v, ty), ty), ty) for v in (va, vb))
        m.write(dst, compare(cmp, ty, va, vb).astype(np.int64)[:, None], mask)
        return
    m.write(dst, m.data_apply(ins, f"cmp.{cmp}.{ty}", "i1", data, [ty, ty], mask), mask)
