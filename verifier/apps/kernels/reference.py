"""The reference: a TTIR function executed for one program id, with symbolic data.

Integers, masks and pointers are concrete numpy arrays (control and addresses are concrete);
float values are arrays of term ids (:mod:`.terms`); the memory is :class:`~.memory.Memory`.
Loads read byte codes and read them back as terms; stores write the terms' bytes. After
:meth:`Reference.run` the memory holds what the kernel wrote.

An op outside the supported subset raises :class:`Unsupported` naming it; anything the kernel does
wrong by its own semantics (a load from outside every buffer) raises :class:`RefError`.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

from layoutverify.apps.ptxsim.state import TAG0, UNDEF

from . import terms as T
from .memory import Memory, MemoryError_
from .ttir import Block, Function, Op, TType

INT_BITS = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64}
FLOAT_ELEMS = ("f16", "bf16", "f32", "f64", "e4m3", "e5m2", "tf32")
MAX_LOOP_STEPS = 1 << 16
MAX_ELEMENTS = 1 << 16          # elements of one tensor value


class Unsupported(Exception):
    """An op or form the reference does not model; the message names it."""


class RefError(Exception):
    """The TTIR does something undefined for this launch (an access outside every buffer)."""


@dataclass
class Val:
    """A value: ``kind`` ``int`` (concrete integers, masks), ``ptr`` (addresses), ``data`` (term ids)
    or ``desc`` (a tensor descriptor, ``v`` a :class:`Descriptor`)."""
    kind: str
    ty: TType
    v: object

    @property
    def shape(self):
        """The shape of the value's type (``()`` for a scalar)."""
        return self.ty.shape


@dataclass
class Descriptor:
    """``tt.make_tensor_descriptor``: base address, shape, strides (elements), block shape, element."""
    base: int
    shape: tuple
    strides: tuple
    block: tuple
    elem: str
    padding: str = "zero"


def wrap(v: np.ndarray, bits: int, signed: bool = True) -> np.ndarray:
    """Integers reduced to ``bits`` bits (two's complement when ``signed``)."""
    v = np.asarray(v).astype(np.int64)
    if bits >= 64:
        return v
    m = (1 << bits) - 1
    u = v & m
    if signed and bits > 1:
        u = np.where(u >= 1 << (bits - 1), u - (1 << bits), u)
    return u


def float_bits(text: str, ty: str) -> int:
    """The raw bits of a TTIR float literal (``1.44269502``, ``0xFF800000``, ``-inf``) in ``ty``."""
    from layoutverify.apps.ptxsim import floats
    t = text.strip()
    if t.lower().startswith("0x"):
        return int(t, 16)
    x = float(t)
    if ty == "tf32":
        ty = "f32"
    if ty in ("e4m3", "e5m2"):
        raise Unsupported(f"fp8 constant {t}")
    return int(floats.encode(floats.round_f64(np.array([x]), ty), ty)[0])


class Reference:
    """The TTIR function ``fn`` run for program id ``pid`` of ``grid`` on arguments ``args``: data as
    terms of ``terms``, global memory ``memory``."""

    def __init__(self, fn: Function, terms: T.Terms, memory: Memory, args: list[Val], pid, grid):
        self.fn = fn
        self.terms = terms
        self.mem = memory
        self.pid = tuple(int(p) for p in pid)
        self.grid = tuple(int(g) for g in grid)
        self.env: dict[str, Val] = dict(zip(fn.args, args))
        self.stores = 0
        self.store_sites: list[dict] = []   # per tt.store: the op and its element addresses

    # -- running ---------------------------------------------------------------------------------
    def run(self) -> None:
        """Execute the function body; afterwards the memory holds what the kernel stored."""
        self._block(self.fn.body)

    def _block(self, ops: list[Op]):
        for op in ops:
            if op.name in ("scf.yield", "tt.reduce.return"):
                return [self.env[o] for o in op.operands]
            if op.name == "scf.condition":
                return ("condition", self.scalar(op.operands[0]), [self.env[o] for o in op.operands[1:]])
            if op.name == "tt.return":
                return None
            handler = _HANDLERS.get(op.name)
            if handler is None:
                raise Unsupported(f"unsupported: {op.name} (TTIR line {op.line})")
            try:
                out = handler(self, op)
            except MemoryError_ as e:
                raise RefError(f"TTIR line {op.line}: {op.name}: {e}") from None
            if out is not None:
                outs = out if isinstance(out, list) else [out]
                for name, val in zip(op.results, outs):
                    if isinstance(val.v, np.ndarray) and val.v.size > MAX_ELEMENTS:
                        raise Unsupported(f"a tensor of {val.v.size} elements (TTIR line {op.line}); the limit "
                                          f"is {MAX_ELEMENTS}")
                    self.env[name] = val
        return None

    def get(self, name: str) -> Val:
        """The value of SSA name ``name``; a name used before it is defined raises :class:`Unsupported`."""
        v = self.env.get(name)
        if v is None:
            raise Unsupported(f"unsupported: the value {name} is not defined where it is used")
        return v

    # -- helpers ---------------------------------------------------------------------------------
    def ints(self, name: str) -> np.ndarray:
        """The concrete integers (or addresses) of ``name``; a value computed from data raises
        :class:`Unsupported`."""
        v = self.get(name)
        if v.kind not in ("int", "ptr"):
            raise Unsupported(f"unsupported: an integer computed from data ({name}) steers control or addresses")
        return np.asarray(v.v)

    def scalar(self, name: str) -> int:
        """The integer value of scalar ``name`` (the first element of its array)."""
        a = self.ints(name)
        return int(a.reshape(-1)[0])


def _shape(ty: TType):
    return ty.shape


def _full(ty: TType, value):
    return np.full(ty.shape, value, dtype=np.int64) if ty.shape else np.array(value, dtype=np.int64)


# -- constants, ranges, shape ops -----------------------------------------------------------------------
def _constant(r: Reference, op: Op):
    ty = op.types[0]
    text = op.attrs["value"]
    if ty.elem in INT_BITS:
        if text in ("true", "false"):
            v = 1 if text == "true" else 0
        else:
            v = int(text, 0)
        return Val("int", ty, wrap(_full(ty, v), INT_BITS[ty.elem]))
    if ty.elem in FLOAT_ELEMS:
        if text.startswith("["):
            raise Unsupported("unsupported: a dense constant with several values")
        t = r.terms.const(ty.elem, float_bits(text, ty.elem))
        return Val("data", ty, _full(ty, t))
    raise Unsupported(f"unsupported: constant of type {ty}")


def _make_range(r: Reference, op: Op):
    return Val("int", op.types[0], np.arange(op.attrs["start"], op.attrs["end"], dtype=np.int64))


def _pid(r: Reference, op: Op):
    return Val("int", op.types[0], np.array(r.pid[op.attrs["axis"]], dtype=np.int64))


def _num_programs(r: Reference, op: Op):
    return Val("int", op.types[0], np.array(r.grid[op.attrs["axis"]], dtype=np.int64))


def _splat(r: Reference, op: Op):
    v = r.get(op.operands[0])
    ty = op.types[0]
    return Val(v.kind, ty, np.broadcast_to(np.asarray(v.v), ty.shape).copy())


def _broadcast(r: Reference, op: Op):
    v = r.get(op.operands[0])
    return Val(v.kind, op.types[0], np.broadcast_to(np.asarray(v.v), op.types[0].shape).copy())


def _expand_dims(r: Reference, op: Op):
    v = r.get(op.operands[0])
    return Val(v.kind, op.types[0], np.expand_dims(np.asarray(v.v), op.attrs["axis"]))


def _reshape(r: Reference, op: Op):
    v = r.get(op.operands[0])
    return Val(v.kind, op.types[0], np.asarray(v.v).reshape(op.types[0].shape))


def _trans(r: Reference, op: Op):
    v = r.get(op.operands[0])
    order = op.attrs.get("order")
    return Val(v.kind, op.types[0], np.transpose(np.asarray(v.v), order).copy())


def _join(r: Reference, op: Op):
    a, b = (r.get(o) for o in op.operands)
    return Val(a.kind, op.types[0], np.stack([np.asarray(a.v), np.asarray(b.v)], axis=-1))


def _split(r: Reference, op: Op):
    v = r.get(op.operands[0])
    a = np.asarray(v.v)
    return [Val(v.kind, op.types[0], a[..., 0].copy()), Val(v.kind, op.types[0], a[..., 1].copy())]


# -- integer arithmetic ----------------------------------------------------------------------------
def _int_binary(fn, unsigned=False):
    def handler(r: Reference, op: Op):
        a, b = (r.get(o) for o in op.operands)
        ty = op.types[0]
        if a.kind == "data" or b.kind == "data":
            raise Unsupported(f"unsupported: integer arithmetic on data ({op.name}, TTIR line {op.line})")
        bits = INT_BITS.get(ty.elem, 64)
        x, y = np.asarray(a.v), np.asarray(b.v)
        if unsigned:
            x, y = x & ((1 << bits) - 1), y & ((1 << bits) - 1)
        with np.errstate(all="ignore"):
            out = fn(x, y, bits)
        return Val("int", ty, wrap(out, bits))
    return handler


def _div_trunc(x, y, bits):
    if (y == 0).any():
        raise RefError("integer division by zero")
    q = np.abs(x) // np.abs(y)
    return np.where((x < 0) != (y < 0), -q, q)


def _rem_trunc(x, y, bits):
    return x - _div_trunc(x, y, bits) * y


def _shr_s(x, y, bits):
    return np.where(y >= bits, np.where(x < 0, -1, 0), x >> np.minimum(y, 63))


def _shl(x, y, bits):
    return np.where(y >= bits, 0, x << np.minimum(y, 63))


def _shr_u(x, y, bits):
    return np.where(y >= bits, 0, (x & ((1 << bits) - 1 if bits < 64 else -1)) >> np.minimum(y, 63))


_CMPI = {"eq": np.equal, "ne": np.not_equal, "slt": np.less, "sle": np.less_equal, "sgt": np.greater,
         "sge": np.greater_equal, "ult": np.less, "ule": np.less_equal, "ugt": np.greater, "uge": np.greater_equal}


def _cmpi(r: Reference, op: Op):
    a, b = (r.get(o) for o in op.operands)
    if a.kind == "data" or b.kind == "data":
        raise Unsupported(f"unsupported: integer comparison of data (TTIR line {op.line})")
    pred = op.attrs["predicate"]
    x, y = np.asarray(a.v), np.asarray(b.v)
    if pred.startswith("u"):
        bits = INT_BITS.get(a.ty.elem, 64)
        x, y = x & ((1 << bits) - 1), y & ((1 << bits) - 1)
    return Val("int", op.types[0], _CMPI[pred](x, y).astype(np.int64))


def _ext_int(signed):
    def handler(r: Reference, op: Op):
        v = r.get(op.operands[0])
        if v.kind == "data":
            raise Unsupported(f"unsupported: integer cast of data (TTIR line {op.line})")
        src = INT_BITS[op.operand_types[0].elem] if op.operand_types else 32
        x = np.asarray(v.v)
        if not signed:
            x = x & ((1 << src) - 1)
        return Val("int", op.types[0], wrap(x, INT_BITS[op.types[0].elem]))
    return handler


def _select(r: Reference, op: Op):
    c, a, b = (r.get(o) for o in op.operands)
    if c.kind == "int":
        cond = np.asarray(c.v) != 0
        if a.kind != b.kind:
            ta, tb = _as_terms(r, a, op.types[0]), _as_terms(r, b, op.types[0])
            return Val("data", op.types[0], np.where(cond, ta, tb))
        return Val(a.kind, op.types[0], np.where(cond, np.asarray(a.v), np.asarray(b.v)))
    ty = op.types[0]
    ta, tb = _as_terms(r, a, ty), _as_terms(r, b, ty)
    out = r.terms.apply_many("select", ty.elem, np.asarray(c.v), ta, tb)
    return Val("data", ty, out)


def _as_terms(r: Reference, v: Val, ty: TType) -> np.ndarray:
    if v.kind == "data":
        return np.asarray(v.v)
    if v.kind == "int":
        bits = INT_BITS.get(ty.elem, 64)
        vals = np.asarray(v.v) & ((1 << bits) - 1 if bits < 64 else -1)
        return np.vectorize(lambda x: r.terms.const(ty.elem, int(x)), otypes=[np.int64])(vals)
    raise Unsupported(f"unsupported: a {v.kind} value used as data")


# -- pointers and memory ---------------------------------------------------------------------------
def _addptr(r: Reference, op: Op):
    p, off = (r.get(o) for o in op.operands)
    if off.kind != "int":
        raise Unsupported(f"unsupported: a pointer offset computed from data (TTIR line {op.line})")
    ty = op.types[0]
    eb = T.TYPE_BYTES.get(ty.pointee)
    if eb is None:
        raise Unsupported(f"unsupported: pointer to {ty.pointee}")
    addr = np.asarray(p.v).astype(np.int64) + np.asarray(off.v).astype(np.int64) * eb
    return Val("ptr", ty, np.broadcast_to(addr, ty.shape).copy() if ty.shape else addr)


def _codes_to_terms(r: Reference, codes: np.ndarray, elem: str) -> np.ndarray:
    """Byte codes (n, w) -> one term id per row: the term whose bytes they are, a constant when all
    are concrete; a row mixing bytes of several terms is a reinterpretation we do not model."""
    n, w = codes.shape
    out = np.empty(n, dtype=np.int64)
    data = codes >= TAG0
    whole = data.all(axis=1)
    t0 = (codes[:, 0] - TAG0) // 8
    exact = whole & ((codes - TAG0) == (8 * t0[:, None] + np.arange(w)[None, :])).all(axis=1)
    conc = ((codes >= 0) & (codes < 256)).all(axis=1)
    undef = (codes == UNDEF).all(axis=1)
    for i in range(n):
        if exact[i]:
            t = int(t0[i])
            if T.TYPE_BYTES.get(r.terms.type_of(t), 0) != w:
                raise Unsupported(f"unsupported: a {elem} load reads part of a {r.terms.type_of(t)} value")
            out[i] = t
        elif conc[i]:
            bits = int(sum(int(codes[i, k]) << (8 * k) for k in range(w)))
            out[i] = r.terms.const(elem, bits)
        elif undef[i]:
            out[i] = r.terms.const(elem, 0) if False else _undef(r, elem)
        else:
            raise Unsupported("unsupported: a load that reads bytes of several values as one")
    return out


def _undef(r: Reference, elem: str) -> int:
    return r.terms._make("undef", elem, ())


def _term_codes(r: Reference, ids: np.ndarray, w: int) -> np.ndarray:
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    return TAG0 + 8 * ids[:, None] + np.arange(w)[None, :]


def _load(r: Reference, op: Op):
    ptr = r.get(op.operands[0])
    ty = op.types[0] if op.types else None
    pty = ptr.ty
    elem = pty.pointee
    out_ty = TType(pty.shape, elem)
    w = T.TYPE_BYTES.get(elem)
    if w is None:
        raise Unsupported(f"unsupported: load of {elem}")
    addr = np.asarray(ptr.v).reshape(-1)
    mask = np.ones(addr.shape, dtype=bool)
    if len(op.operands) > 1:
        mv = r.get(op.operands[1])
        if mv.kind != "int":
            raise Unsupported("unsupported: a load mask computed from data")
        mask = np.broadcast_to(np.asarray(mv.v) != 0, pty.shape).reshape(-1)
    other = None
    if len(op.operands) > 2:
        ov = r.get(op.operands[2])
        other = np.broadcast_to(np.asarray(_as_terms(r, ov, out_ty) if elem in FLOAT_ELEMS else ov.v),
                                pty.shape).reshape(-1)
    if elem in FLOAT_ELEMS:
        vals = np.full(addr.shape, _undef(r, elem), dtype=np.int64)
        if mask.any():
            vals[mask] = _codes_to_terms(r, r.mem.load(addr[mask].astype(np.uint64), w), elem)
        if other is not None:
            vals[~mask] = other[~mask]
        return Val("data", out_ty, vals.reshape(pty.shape) if pty.shape else vals.reshape(()))
    # integer loads: concrete memory gives integers; symbolic memory gives data
    codes = r.mem.load(addr[mask].astype(np.uint64), w) if mask.any() else np.zeros((0, w), dtype=np.int64)
    if ((codes >= 0) & (codes < 256)).all():
        vals = np.zeros(addr.shape, dtype=np.int64)
        if mask.any():
            vals[mask] = sum(codes[:, k] << (8 * k) for k in range(w))
        if other is not None:
            vals[~mask] = np.asarray(other)[~mask]
        vals = wrap(vals, INT_BITS.get(elem, 64))
        return Val("int", out_ty, vals.reshape(pty.shape) if pty.shape else vals.reshape(()))
    raise Unsupported(f"unsupported: integer data loaded from a symbolic buffer ({elem}, TTIR line {op.line})")


def _store(r: Reference, op: Op):
    ptr, val = r.get(op.operands[0]), r.get(op.operands[1])
    elem = ptr.ty.pointee
    w = T.TYPE_BYTES[elem]
    addr = np.asarray(ptr.v).reshape(-1)
    mask = np.ones(addr.shape, dtype=bool)
    if len(op.operands) > 2:
        mv = r.get(op.operands[2])
        if mv.kind != "int":
            raise Unsupported("unsupported: a store mask computed from data")
        mask = np.broadcast_to(np.asarray(mv.v) != 0, ptr.ty.shape).reshape(-1)
    vv = np.broadcast_to(np.asarray(val.v), ptr.ty.shape).reshape(-1)
    if val.kind == "data":
        codes = _term_codes(r, vv, w)
    elif val.kind == "int":
        u = vv & ((1 << (8 * w)) - 1 if w < 8 else -1)
        codes = np.stack([(u >> (8 * k)) & 0xFF for k in range(w)], axis=1)
    else:
        raise Unsupported("unsupported: storing a pointer or descriptor")
    r.store_sites.append({"op": op, "shape": ptr.ty.shape, "addr": addr.copy(), "mask": mask.copy(),
                          "elem": elem})
    if mask.any():
        r.mem.store(addr[mask].astype(np.uint64), codes[mask])
    r.stores += 1


# -- floats -------------------------------------------------------------------------------------------
def _float_op(name):
    def handler(r: Reference, op: Op):
        ty = op.types[0]
        vals = [_as_terms(r, r.get(o), ty) for o in op.operands]
        return Val("data", ty, r.terms.apply_many(name, ty.elem, *vals))
    return handler


def _cast(name):
    def handler(r: Reference, op: Op):
        v = r.get(op.operands[0])
        ty = op.types[0]
        src = op.operand_types[0] if op.operand_types else v.ty
        if v.kind == "int":
            if name == "cvt.si" or name == "cvt.ui":
                bits = INT_BITS[src.elem]
                x = np.asarray(v.v)
                ids = np.vectorize(lambda a: r.terms.apply("cvt" if name == "cvt.si" else "cvt.u", ty.elem,
                                                           r.terms.const(src.elem, int(a) & ((1 << bits) - 1))),
                                   otypes=[np.int64])(x)
                return Val("data", ty, ids)
            raise Unsupported(f"unsupported: {op.name} of an integer")
        opname = "cvt" if name in ("cvt", "cvt.si") else name
        return Val("data", ty, r.terms.apply_many(opname, ty.elem, np.asarray(v.v)))
    return handler


_CMPF = {"oeq": "cmp.eq", "one": "cmp.ne", "olt": "cmp.lt", "ole": "cmp.le", "ogt": "cmp.gt", "oge": "cmp.ge",
         "ueq": "cmp.equ", "une": "cmp.neu", "ult": "cmp.ltu", "ule": "cmp.leu", "ugt": "cmp.gtu",
         "uge": "cmp.geu", "ord": "cmp.num", "uno": "cmp.nan"}


def _cmpf(r: Reference, op: Op):
    a, b = (r.get(o) for o in op.operands)
    src = op.operand_types[0] if op.operand_types else a.ty
    pred = _CMPF.get(op.attrs["predicate"])
    if pred is None:
        raise Unsupported(f"unsupported: arith.cmpf {op.attrs['predicate']}")
    ta, tb = _as_terms(r, a, src), _as_terms(r, b, src)
    f = np.vectorize(lambda x, y: r.terms.apply(pred + "." + src.elem, "i1", int(x), int(y)), otypes=[np.int64])
    return Val("data", op.types[0], f(ta, tb))


# -- dot and reductions --------------------------------------------------------------------------------
def _dot(r: Reference, op: Op):
    a, b, c = (r.get(o) for o in op.operands[:3])
    ty = op.types[0]
    if a.kind != "data" or b.kind != "data":
        raise Unsupported("unsupported: tt.dot of integer operands")
    A, B = np.asarray(a.v), np.asarray(b.v)
    if A.ndim != 2:
        raise Unsupported("unsupported: batched tt.dot")
    m, k = A.shape
    n = B.shape[1]
    if m * n > T.MAX_TILE or m * n * k > T.MAX_DOT:
        raise T.TermLimit(f"a {m}x{n}x{k} tt.dot (TTIR line {op.line}) is larger than this validator takes "
                          f"(at most {T.MAX_TILE} output elements and {T.MAX_DOT} products per dot, e.g. 128x128x128)"
                          f"; validate the kernel compiled with smaller blocks")
    prec = op.attrs.get("inputPrecision", "tf32")
    if a.ty.elem == "f32" and prec in ("tf32", "tf32x3"):
        if prec != "tf32":
            raise Unsupported(f"unsupported: tt.dot inputPrecision = {prec}")
        A = r.terms.apply_many("cvt.rna", "tf32", A)
        B = r.terms.apply_many("cvt.rna", "tf32", B)
    C = _as_terms(r, c, ty)
    aa = np.broadcast_to(A[:, None, :], (m, n, k)).reshape(m * n, k)
    bb = np.broadcast_to(B.T[None, :, :], (m, n, k)).reshape(m * n, k)
    d = r.terms.dots_accumulate(ty.elem, np.asarray(C).reshape(-1), aa, bb)
    return Val("data", ty, d.reshape(m, n))


_COMBINERS = {"arith.addf": "add", "arith.maxnumf": "maxnum", "arith.minnumf": "minnum",
              "arith.maximumf": "maximum", "arith.minimumf": "minimum"}
_INT_COMBINERS = {"arith.addi": np.add.reduce, "arith.maxsi": np.maximum.reduce, "arith.minsi": np.minimum.reduce,
                  "arith.andi": np.bitwise_and.reduce, "arith.ori": np.bitwise_or.reduce,
                  "arith.xori": np.bitwise_xor.reduce}


def _reduce(r: Reference, op: Op):
    if len(op.operands) != 1 or len(op.regions) != 1:
        raise Unsupported("unsupported: tt.reduce over several operands")
    block: Block = op.regions[0][0]
    body = [o for o in block.ops if o.name != "tt.reduce.return"]
    if len(body) != 1 or sorted(body[0].operands) != sorted(block.args):
        raise Unsupported("unsupported: a tt.reduce whose combiner is not one add/max/min")
    comb = body[0].name
    v = r.get(op.operands[0])
    axis = op.attrs["axis"]
    a = np.moveaxis(np.asarray(v.v), axis, -1)
    ty = op.types[0] if op.types else TType(a.shape[:-1], v.ty.elem)
    if v.kind == "int":
        fn = _INT_COMBINERS.get(comb)
        if fn is None:
            raise Unsupported(f"unsupported: integer reduction with {comb}")
        return Val("int", ty, wrap(fn(a, axis=-1), INT_BITS.get(v.ty.elem, 64)))
    red = _COMBINERS.get(comb)
    if red is None:
        raise Unsupported(f"unsupported: reduction with {comb}")
    flat = a.reshape(-1, a.shape[-1])
    out = np.array([r.terms.reduce(red, v.ty.elem, row) for row in flat], dtype=np.int64)
    return Val("data", ty, out.reshape(a.shape[:-1]))


# -- control flow -------------------------------------------------------------------------------------
def _for(r: Reference, op: Op):
    lb, ub, step = (r.scalar(o) for o in op.operands[:3])
    carried = [r.get(o) for o in op.operands[3:]]
    body: Block = op.regions[0][0]
    names = [op.attrs["iv"]] + op.attrs["iter_args"]
    if step <= 0:
        raise Unsupported("unsupported: scf.for with a step that is not positive")
    if (ub - lb) // step > MAX_LOOP_STEPS:
        raise Unsupported(f"unsupported: a loop of more than {MAX_LOOP_STEPS} iterations")
    iv_ty = TType((), "i32")
    i = lb
    while i < ub:
        r.env[names[0]] = Val("int", iv_ty, np.array(i, dtype=np.int64))
        for n, v in zip(names[1:], carried):
            r.env[n] = v
        got = r._block(body.ops)
        carried = got if got is not None else []
        i += step
    return carried or None


def _while(r: Reference, op: Op):
    """``scf.while``: the before region computes the condition and the values it passes on; the
    after region (the body) runs while the condition holds."""
    carried = [r.get(o) for o in op.operands]
    before, after = op.regions[0][0], op.regions[1][0]
    names = op.attrs["before_args"]
    for _ in range(MAX_LOOP_STEPS):
        for n, v in zip(names, carried):
            r.env[n] = v
        got = r._block(before.ops)
        if not (isinstance(got, tuple) and got[0] == "condition"):
            raise Unsupported("unsupported: an scf.while whose first region does not end in scf.condition")
        _, cond, passed = got
        if not cond:
            return passed or None
        for n, v in zip(after.args, passed):
            r.env[n] = v
        carried = r._block(after.ops) or []
    raise Unsupported(f"unsupported: a loop of more than {MAX_LOOP_STEPS} iterations")


def _int_to_ptr(r: Reference, op: Op):
    v = r.get(op.operands[0])
    if v.kind != "int":
        raise Unsupported("unsupported: a pointer made from data")
    return Val("ptr", op.types[0], np.asarray(v.v).astype(np.int64))


def _ptr_to_int(r: Reference, op: Op):
    v = r.get(op.operands[0])
    return Val("int", op.types[0], np.asarray(v.v).astype(np.int64))


def _if(r: Reference, op: Op):
    c = r.scalar(op.operands[0])
    region = op.regions[0] if c else (op.regions[1] if len(op.regions) > 1 else None)
    if region is None:
        return None
    got = r._block(region[0].ops)
    return got or None


# -- tensor descriptors ----------------------------------------------------------------------------
def _make_desc(r: Reference, op: Op):
    base = r.get(op.operands[0])
    rank = op.attrs["ranks"][0]
    shape = tuple(r.scalar(o) for o in op.operands[1:1 + rank])
    strides = tuple(r.scalar(o) for o in op.operands[1 + rank:1 + 2 * rank])
    block_txt = op.types[0].elem[5:-1]
    dims = []
    rest = block_txt
    while "x" in rest and rest.split("x", 1)[0].isdigit():
        d, rest = rest.split("x", 1)
        dims.append(int(d))
    elem = TType((), rest).elem
    from .ttir import parse_type
    elem = parse_type(rest).elem
    pad = op.attrs.get("padding", "zero")
    return Val("desc", op.types[0], Descriptor(int(base.v), shape, strides, tuple(dims), elem,
                                               "nan" if "nan" in str(pad) else "zero"))


def _desc_elements(d: Descriptor, coords):
    """Per element of the block: its index in the tensor, whether it is inside the tensor, its address."""
    grids = np.meshgrid(*[np.arange(b) for b in d.block], indexing="ij")
    idx = [g + c for g, c in zip(grids, coords)]
    inside = np.ones(d.block, dtype=bool)
    for i, s in zip(idx, d.shape):
        inside &= (i >= 0) & (i < s)
    eb = T.TYPE_BYTES[d.elem]
    off = sum(i.astype(np.int64) * st for i, st in zip(idx, d.strides))
    return inside, d.base + off * eb


def _desc_load(r: Reference, op: Op):
    desc = r.get(op.operands[0]).v
    coords = [r.scalar(o) for o in op.operands[1:]]
    inside, addr = _desc_elements(desc, coords)
    ty = op.types[0]
    w = T.TYPE_BYTES[desc.elem]
    fill = r.terms.const(desc.elem, 0 if desc.padding == "zero" else float_bits("nan", desc.elem))
    vals = np.full(addr.shape, fill, dtype=np.int64)
    if inside.any():
        vals[inside] = _codes_to_terms(r, r.mem.load(addr[inside].astype(np.uint64), w), desc.elem)
    return Val("data", ty, vals.reshape(ty.shape))


def _desc_store(r: Reference, op: Op):
    desc = r.get(op.operands[0]).v
    coords = [r.scalar(o) for o in op.operands[1:-1]]
    val = r.get(op.operands[-1])
    inside, addr = _desc_elements(desc, coords)
    w = T.TYPE_BYTES[desc.elem]
    ids = np.asarray(_as_terms(r, val, TType(desc.block, desc.elem))).reshape(desc.block)
    r.store_sites.append({"op": op, "shape": desc.block, "addr": addr.reshape(-1).copy(),
                          "mask": inside.reshape(-1).copy(), "elem": desc.elem})
    if inside.any():
        r.mem.store(addr[inside].astype(np.uint64), _term_codes(r, ids[inside], w))
    r.stores += 1


def _fp_to_fp(r: Reference, op: Op):
    v = r.get(op.operands[0])
    ty = op.types[0]
    rnd = op.attrs.get("rounding", "")
    name = "cvt" if not rnd or "rtne" in rnd else "cvt.rz"
    return Val("data", ty, r.terms.apply_many(name, ty.elem, np.asarray(v.v)))


_HANDLERS = {
    "arith.constant": _constant, "tt.make_range": _make_range, "tt.get_program_id": _pid,
    "tt.get_num_programs": _num_programs, "tt.splat": _splat, "tt.broadcast": _broadcast,
    "tt.expand_dims": _expand_dims, "tt.reshape": _reshape, "tt.trans": _trans, "tt.join": _join, "tt.split": _split,
    "arith.addi": _int_binary(lambda x, y, b: x + y), "arith.subi": _int_binary(lambda x, y, b: x - y),
    "arith.muli": _int_binary(lambda x, y, b: x * y), "arith.divsi": _int_binary(_div_trunc),
    "arith.remsi": _int_binary(_rem_trunc), "arith.divui": _int_binary(lambda x, y, b: x // np.where(y == 0, 1, y), True),
    "arith.remui": _int_binary(lambda x, y, b: x % np.where(y == 0, 1, y), True),
    "arith.andi": _int_binary(lambda x, y, b: x & y), "arith.ori": _int_binary(lambda x, y, b: x | y),
    "arith.xori": _int_binary(lambda x, y, b: x ^ y), "arith.shli": _int_binary(_shl),
    "arith.shrsi": _int_binary(_shr_s), "arith.shrui": _int_binary(_shr_u, True),
    "arith.minsi": _int_binary(lambda x, y, b: np.minimum(x, y)),
    "arith.maxsi": _int_binary(lambda x, y, b: np.maximum(x, y)),
    "arith.minui": _int_binary(lambda x, y, b: np.minimum(x, y), True),
    "arith.maxui": _int_binary(lambda x, y, b: np.maximum(x, y), True),
    "arith.ceildivsi": _int_binary(lambda x, y, b: -((-x) // y)),
    "arith.cmpi": _cmpi, "arith.extsi": _ext_int(True), "arith.extui": _ext_int(False),
    "arith.trunci": _ext_int(True), "arith.index_cast": _ext_int(True), "arith.select": _select,
    "tt.addptr": _addptr, "tt.load": _load, "tt.store": _store,
    "arith.addf": _float_op("add"), "arith.subf": _float_op("sub"), "arith.mulf": _float_op("mul"),
    "arith.divf": _float_op("div"), "arith.maxnumf": _float_op("maxnum"), "arith.minnumf": _float_op("minnum"),
    "arith.maximumf": _float_op("maximum"), "arith.minimumf": _float_op("minimum"), "arith.negf": _float_op("neg"),
    "math.absf": _float_op("abs"), "math.exp": _float_op("exp"), "math.exp2": _float_op("exp2"),
    "math.log2": _float_op("log2"), "math.log": _float_op("log"), "math.sqrt": _float_op("sqrt"),
    "math.rsqrt": _float_op("rsqrt"), "math.fma": _float_op("fma"), "tt.precise_sqrt": _float_op("sqrt"),
    "tt.precise_divf": _float_op("div"),
    "arith.extf": _cast("cvt"), "arith.truncf": _cast("cvt"), "arith.sitofp": _cast("cvt.si"),
    "arith.uitofp": _cast("cvt.ui"), "tt.fp_to_fp": _fp_to_fp, "arith.cmpf": _cmpf,
    "tt.dot": _dot, "tt.reduce": _reduce, "scf.for": _for, "scf.if": _if, "scf.while": _while,
    "tt.int_to_ptr": _int_to_ptr, "tt.ptr_to_int": _ptr_to_int,
    "tt.make_tensor_descriptor": _make_desc, "tt.descriptor_load": _desc_load, "tt.descriptor_store": _desc_store,
}
