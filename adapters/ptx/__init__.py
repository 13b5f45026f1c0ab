"""PTX spec adapter: register fragments of NVIDIA matrix instructions, from the PTX ISA's formulas.

Accepted text (``ptx:`` layouts). Tokens are separated by ``.`` and matched case-insensitively;
the operand letter is written upper case in canonical names::

    mma[.sync][.aligned].SHAPE[.LAYOUT[.LAYOUT]].TYPES.OPERAND
        SHAPE   = m8n8k4 | m8n8k16 | m8n8k32 | m8n8k128 | m16n8k4 | m16n8k8 | m16n8k16
                | m16n8k32 | m16n8k64 | m16n8k128 | m16n8k256
        LAYOUT  = row | col. Two tokens are PTX's ``.alayout.blayout``; one token is the named
                  operand's own layout. Only m8n8k4 .f16 A/B depend on it (default A row, B col);
                  every other shape accepts only ``.row.col``.
        TYPES   = the operand's element type (A/B: f16 bf16 tf32 f64 s8 u8 e4m3 e5m2 e3m2 e2m3 e2m1
                  s4 u4 b1; C/D: the accumulator type f16 f32 f64 s32), or the instruction's four
                  types ``DTYPE.ATYPE.BTYPE.CTYPE`` in PTX order (operand C takes CTYPE, D DTYPE)
        OPERAND = A (M x K) | B (K x N) | C or D (M x N; same fragment)
      e.g. mma.m16n8k16.f16.A  mma.m16n8k16.f32.C  mma.m16n8k32.s8.B  mma.m8n8k4.col.f16.A
           mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32.B

    wgmma[.mma_async][.sp][.sync][.aligned].m64nNkK.TYPES.OPERAND
        K = 16 (f16 bf16 / D f16 f32), 8 (tf32 / D f32), 32 (s8 u8 e4m3 e5m2 / D s32 f32 f16),
            256 (D s32); N = 8..256 in steps of 8 (s32: 8 16 24 32 48 64 ... 256)
        TYPES   = one element type, or PTX's DTYPE.ATYPE.BTYPE (A takes ATYPE, C/D DTYPE)
        OPERAND = D or C (64 x N accumulator) | A (64 x K operand in registers); 4 warps
      e.g. wgmma.m64n128k16.f32.D  wgmma.m64n64k16.f16.A  wgmma.sp.m64n64k32.f16.A
        .sp: K = 32 (f16 bf16), 16 (tf32), 64 (8-bit); A is the packed 64 x K/2 matrix of
        non-zeros (see :mod:`layoutverify.adapters.ptx.sparse`), D as for the dense shape, E the
        metadata of the warpgroup (takes ATYPE; :mod:`layoutverify.adapters.ptx.sparse_meta`)

    mma.sp[::ordered_metadata][.sync][.aligned].SHAPE[.row.col].TYPES.OPERAND
        SHAPE = m16n8k8 (tf32) | m16n8k16 (f16 bf16 tf32) | m16n8k32 (f16 bf16 s8 u8)
              | m16n8k64 (8-bit, s4 u4) | m16n8k128 (s4 u4 e2m1)
        A is the packed M x K/2 matrix of non-zeros; B and C/D as the ISA's dense fragments or,
        where the ISA draws B (m16n8k32 f16, m16n8k16 tf32, m16n8k64 8-bit, m16n8k128 4-bit), its figures;
        OPERAND E = the metadata operand e (takes ATYPE): index field -> (row, packed column)
        (see :mod:`layoutverify.adapters.ptx.sparse_meta`)
      e.g. mma.sp.m16n8k16.f16.A  mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32.A

    tcgen05.ld|st[.sync][.aligned].SHAPE.xNUM[.b32]
        SHAPE = 32x32b | 16x64b | 16x128b | 16x256b | 16x32bx2;  NUM = 1 2 4 ... 128
        (register, lane) -> (TMEM lane, 32-bit column); see :mod:`layoutverify.adapters.ptx.tcgen05`
      e.g. tcgen05.ld.16x256b.x1  tcgen05.st.sync.aligned.32x32b.x4.b32

    ldmatrix[.sync][.aligned][.m8n8].x1|x2|x4[.trans][.shared[::cta]][.b16]   (also stmatrix)
      the 8*num x 8 tile whose rows the threads address (``shape`` may rearrange the 8x8
      matrices, see :mod:`layoutverify.adapters.ptx.ldmatrix`); e.g. ldmatrix.x4, ldmatrix.x2.trans

Canonical form: hardware dims ``register`` (per-thread element index in the ISA's order, packed
registers unpacked: a0, a1, ...), ``lane`` (32), ``warp`` (1; 4 = the warpgroup for wgmma),
``block`` (1); logical dims ``dim0`` = row, ``dim1`` = column of the operand matrix (A: M x K,
B: K x N, C/D: M x N). :func:`list_fragments` lists every accepted canonical name.
"""
from __future__ import annotations

import re

from layoutverify.core.errors import LayoutError, UnsupportedError
from layoutverify.core.layout import Layout

from . import ldmatrix as _ldm
from . import mma as _mma
from . import sparse as _sparse
from . import tcgen05 as _tcgen05
from . import wgmma as _wgmma
from layoutverify.adapters.isa.fragment import Fragment
from layoutverify.adapters.isa.dotted import Token, error, tokenize

__all__ = ["parse", "fragment", "list_fragments", "FRAGMENTS", "Fragment"]

OPCODES = ("mma", "wgmma", "ldmatrix", "stmatrix", "tcgen05")
_OPERANDS = {"a": "A", "b": "B", "c": "C", "d": "C"}
_ALL_TYPES = ("f16", "bf16", "tf32", "f32", "f64", "s8", "u8", "s4", "u4", "s32", "b1",
              "e4m3", "e5m2", "e3m2", "e2m3", "e2m1")


def looks_like(text: str) -> bool:
    """Whether unprefixed spec text names a PTX fragment (used by the registry to guess the framework)."""
    return text.lstrip().startswith(tuple(op + "." for op in OPCODES + ("tcgen05",)))


def list_fragments(pattern: str | None = None) -> list[str]:
    """All canonical fragment names (sorted), optionally those containing ``pattern``."""
    names = sorted(FRAGMENTS)
    return [n for n in names if pattern is None or pattern.lower() in n.lower()]


def parse(text: str, shape=None, **options) -> Layout:
    """Parse a ``ptx:`` fragment name into its canonical layout (see the module docstring).

    ``shape`` must match the fragment's (rows, cols); for ldmatrix/stmatrix it picks how the
    8x8 matrices are arranged."""
    frag = fragment(text, shape=shape)
    if shape is not None and tuple(int(s) for s in shape) != frag.shape:
        raise LayoutError(f"{frag.name} is a {'x'.join(map(str, frag.shape))} fragment; "
                          f"shape {'x'.join(str(s) for s in shape)} does not match")
    return frag.layout()


def fragment(text: str, shape=None) -> Fragment:
    """The :class:`Fragment` named by ``text``."""
    toks = tokenize(text, "PTX fragment")
    op = toks[0]
    if op.low not in OPCODES:
        raise error("unknown PTX instruction", text, op, OPCODES)
    cur = _Cursor(text, toks)
    if op.low == "mma":
        return _parse_mma(cur)
    if op.low == "wgmma":
        return _parse_wgmma(cur)
    if op.low == "tcgen05":
        return _parse_tcgen05(cur)
    return _parse_ldmatrix(cur, op.low, shape)


class _Cursor:
    def __init__(self, text: str, toks: list[Token]):
        self.text, self.toks, self.i = text, toks, 1

    def peek(self) -> Token | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> Token | None:
        t = self.peek()
        if t is not None:
            self.i += 1
        return t

    def skip(self, *words: str) -> None:
        """Skip optional qualifiers, each at most once, in the order given."""
        for w in words:
            t = self.peek()
            if t is not None and t.low == w:
                self.i += 1

    def rest(self) -> list[Token]:
        return self.toks[self.i:]

    def error(self, msg, tok, choices=None):
        return error(msg, self.text, tok, choices)


def _types_and_operand(cur: _Cursor, what: str, full: int = 4,
                       metadata: bool = False) -> tuple[Token, str, Token]:
    """Parse ``TYPES.OPERAND`` at the end of an mma/wgmma name: (type token, operand, operand token).

    TYPES is one element type, or the instruction's full type list: ``full`` = 4 for mma
    (DTYPE.ATYPE.BTYPE.CTYPE), 3 for wgmma (DTYPE.ATYPE.BTYPE). ``metadata``: also accept operand
    ``E`` (mma.sp's metadata ``e``, which takes ATYPE)."""
    rest = cur.rest()
    if not rest:
        raise cur.error(f"{what} needs an element type and an operand (A, B, C or D)", None)
    op_tok = rest[-1]
    if metadata and op_tok.low == "e":
        type_toks = rest[:-1]
        if len(type_toks) == full:
            for t in type_toks:
                if t.low not in _ALL_TYPES:
                    raise cur.error("unknown element type", t, _ALL_TYPES)
            return type_toks[1], "E", op_tok
        if len(type_toks) == 1:
            return type_toks[0], "E", op_tok
        if not type_toks:
            raise cur.error(f"{what} needs an element type before the operand", op_tok)
        raise cur.error("give one element type (ATYPE) or the four types DTYPE.ATYPE.BTYPE.CTYPE", type_toks[0])
    if op_tok.low not in _OPERANDS:
        if op_tok.low in _ALL_TYPES:
            raise cur.error(f"{what} needs the operand (A, B, C or D) after the element type", None)
        raise cur.error("expected the operand A, B, C or D last", op_tok, ["A", "B", "C", "D"])
    operand = _OPERANDS[op_tok.low]
    type_toks = rest[:-1]
    if len(type_toks) == full and full > 1:   # DTYPE.ATYPE.BTYPE[.CTYPE] as PTX writes them
        ctype = type_toks[3] if full == 4 else type_toks[0]
        type_tok = {"a": type_toks[1], "b": type_toks[2], "c": ctype, "d": type_toks[0]}[op_tok.low]
        for t in type_toks:
            if t.low not in _ALL_TYPES:
                raise cur.error("unknown element type", t, _ALL_TYPES)
    elif len(type_toks) == 1:
        type_tok = type_toks[0]
    elif not type_toks:
        raise cur.error(f"{what} needs an element type before the operand", op_tok)
    else:
        bad = type_toks[1] if type_toks[0].low in _ALL_TYPES else type_toks[0]
        spelled = "four types DTYPE.ATYPE.BTYPE.CTYPE" if full == 4 else "three types DTYPE.ATYPE.BTYPE"
        raise cur.error(f"give one element type or the {spelled}", bad)
    return type_tok, operand, op_tok


def _take_sparse(cur: _Cursor) -> bool:
    """Consume ``.sp`` / ``.sp::ordered_metadata`` (same fragments; only the metadata order differs)."""
    t = cur.peek()
    if t is not None and t.low in ("sp", "sp::ordered_metadata"):
        cur.take()
        return True
    return False


def _parse_mma(cur: _Cursor) -> Fragment:
    if _take_sparse(cur):
        return _parse_mma_sp(cur)
    cur.skip("sync", "aligned")
    shapes = _mma.shapes()
    shape_tok = cur.take()
    if shape_tok is None:
        raise cur.error("mma needs a shape", None, shapes)
    shape = shape_tok.low
    if shape not in shapes:
        if re.fullmatch(r"m[0-9]+n[0-9]+k[0-9]+", shape):
            raise cur.error("the PTX ISA defines no mma fragments of this shape", shape_tok, shapes)
        raise cur.error("expected an mma shape", shape_tok, shapes)
    layout_toks = []
    while cur.peek() is not None and cur.peek().low in ("row", "col"):
        if len(layout_toks) == 2:
            raise cur.error("at most two layout qualifiers (.alayout.blayout)", cur.peek())
        layout_toks.append(cur.take())
    type_tok, operand, op_tok = _types_and_operand(cur, f"mma.{shape}")
    dtype = type_tok.low

    # the layout qualifier that applies to this operand
    lay_tok = None
    if len(layout_toks) == 2:
        lay_tok = {"A": layout_toks[0], "B": layout_toks[1]}.get(operand)
    elif len(layout_toks) == 1:
        lay_tok = layout_toks[0]
        if operand == "C":
            raise cur.error("C/D fragments have no layout qualifier; write .alayout.blayout or none", lay_tok)
    layout = ""
    if _mma.layout_dependent(shape, operand) and (shape, operand, "row", dtype) in _mma.MMA:
        layout = lay_tok.low if lay_tok is not None else ("row" if operand == "A" else "col")
    elif lay_tok is not None:
        want = "row" if operand == "A" else "col"
        if lay_tok.low != want:
            raise cur.error(f"mma.{shape}.{dtype} takes {operand} in .{want} layout only (.row.col)", lay_tok)
    frag = _mma.MMA.get((shape, operand, layout, dtype))
    if frag is None:
        types = sorted({k[3] for k in _mma.MMA if k[0] == shape and k[1] == operand})
        kind = "accumulator (C/D)" if operand == "C" else operand
        raise cur.error(f"mma.{shape} has no {type_tok.text} {kind} fragment", type_tok, types)
    return frag


def _parse_mma_sp(cur: _Cursor) -> Fragment:
    cur.skip("sync", "aligned")
    shapes = _sparse.shapes()
    shape_tok = cur.take()
    if shape_tok is None or shape_tok.low not in shapes:
        raise cur.error("expected an mma.sp shape", shape_tok, shapes)
    shape = shape_tok.low
    lays = []
    while cur.peek() is not None and cur.peek().low in ("row", "col"):
        lays.append(cur.take())
    if lays and [t.low for t in lays] != ["row", "col"]:
        raise cur.error("mma.sp takes A .row and B .col only (.row.col)", lays[0])
    type_tok, operand, op_tok = _types_and_operand(cur, f"mma.sp.{shape}", metadata=True)
    dtype = type_tok.low
    frag = _sparse.MMA_SP.get((shape, operand, dtype))
    if frag is None:
        types = sorted({k[2] for k in _sparse.MMA_SP if k[0] == shape and k[1] == operand})
        kind = {"C": "accumulator (C/D)", "E": "metadata (E)"}.get(operand, operand)
        raise cur.error(f"mma.sp.{shape} has no {type_tok.text} {kind} fragment", type_tok, types)
    return frag


def _parse_wgmma(cur: _Cursor) -> Fragment:
    cur.skip("mma_async")
    sparse = _take_sparse(cur)
    cur.skip("sync", "aligned")
    shape_tok = cur.take()
    if shape_tok is None:
        raise cur.error("wgmma needs a shape m64nNkK", None)
    m = re.fullmatch(r"m([0-9]+)n([0-9]+)k([0-9]+)", shape_tok.low)
    if not m:
        raise cur.error("expected a wgmma shape m64nNkK (e.g. m64n128k16)", shape_tok,
                        ["m64n128k16", "m64n64k16", "m64n128k8", "m64n128k32"])
    mm, n, k = (int(g) for g in m.groups())
    if sparse:
        return _parse_wgmma_sp(cur, shape_tok, mm, n, k)
    if mm != 64 or k not in _wgmma.SHAPES:
        raise cur.error("wgmma shapes are m64nNk8, m64nNk16, m64nNk32, m64nNk256", shape_tok)
    if n not in _wgmma.N_FLOAT:
        raise cur.error(f"wgmma N must be a multiple of 8 from 8 to 256, got {n}", shape_tok)
    type_tok, operand, op_tok = _types_and_operand(cur, f"wgmma.{shape_tok.text}", full=3)
    if operand == "B":
        raise cur.error("wgmma reads B from shared memory; only A (in registers) and D have register fragments",
                        op_tok)
    frag = _wgmma.fragment(n, k, operand, type_tok.low)
    if frag is None:
        types = _wgmma.valid_types(k, operand)
        what = "accumulator D" if operand == "C" else "register A"
        if type_tok.low in types:
            raise cur.error(f"wgmma.m64nNk{k} with {what} .{type_tok.low} does not allow N = {n}", shape_tok)
        if not types:
            raise UnsupportedError(f"wgmma.m64nNk{k} {what} fragments are not modelled")
        raise cur.error(f"wgmma.m64nNk{k} has no .{type_tok.text} {what} fragment", type_tok, types)
    return frag


def _parse_wgmma_sp(cur: _Cursor, shape_tok: Token, mm: int, n: int, k: int) -> Fragment:
    if mm != 64 or k not in _sparse.WGMMA_SP:
        raise cur.error("wgmma.sp shapes are m64nNk16 (tf32), m64nNk32 (f16, bf16), m64nNk64 (8-bit)", shape_tok)
    type_tok, operand, op_tok = _types_and_operand(cur, f"wgmma.sp.{shape_tok.text}", full=3, metadata=True)
    if operand == "B":
        raise cur.error("wgmma reads B from shared memory; only A (in registers), D and the metadata E have "
                        "register fragments", op_tok)
    frag = _sparse.wgmma_sp_fragment(n, k, operand, type_tok.low)
    if frag is None:
        what = {"C": "accumulator D", "E": "metadata E"}.get(operand, "register A")
        raise cur.error(f"wgmma.sp.m64n{n}k{k} has no .{type_tok.text} {what} fragment", type_tok)
    return frag


def _parse_tcgen05(cur: _Cursor) -> Fragment:
    op_tok = cur.take()
    if op_tok is None or op_tok.low not in ("ld", "st"):
        raise cur.error("tcgen05 has register fragments for .ld and .st only", op_tok, ["ld", "st"])
    cur.skip("sync", "aligned")
    shape_tok = cur.take()
    if shape_tok is None or shape_tok.low not in _tcgen05.SHAPES:
        raise cur.error(f"tcgen05.{op_tok.low} needs a shape", shape_tok, list(_tcgen05.SHAPES))
    num_tok = cur.take()
    nums = [f"x{n}" for n in _tcgen05.NUMS]
    if num_tok is None or num_tok.low not in nums:
        raise cur.error(f"tcgen05.{op_tok.low}.{shape_tok.low} needs the repetition count .num", num_tok, nums)
    t = cur.take()
    if t is not None and t.low in ("pack::16b", "unpack::16b"):
        raise UnsupportedError(f"tcgen05.{op_tok.low}.{t.text} (two 16-bit values per register) is not modelled")
    if t is not None and t.low != "b32":
        raise cur.error(f"unexpected qualifier for tcgen05.{op_tok.low}", t, ["b32"])
    t = cur.take()
    if t is not None:
        raise cur.error("unexpected token after tcgen05's type", t)
    return _tcgen05.fragment(f"tcgen05.{op_tok.low}", shape_tok.low, int(num_tok.low[1:]))


def _parse_ldmatrix(cur: _Cursor, op: str, shape) -> Fragment:
    cur.skip("sync", "aligned")
    t = cur.peek()
    if t is not None and re.fullmatch(r"m[0-9]+n[0-9]+", t.low):
        if t.low != "m8n8":
            raise UnsupportedError(f"{op}.{t.text} (8-bit and sub-byte matrices) is not modelled; only .m8n8 .b16")
        cur.take()
    num_tok = cur.take()
    if num_tok is None or num_tok.low not in _ldm.NUMS:
        raise cur.error(f"{op} needs the matrix count .x1, .x2 or .x4", num_tok, list(_ldm.NUMS))
    trans = False
    if cur.peek() is not None and cur.peek().low == "trans":
        cur.take()
        trans = True
    t = cur.peek()
    if t is not None and t.low in ("shared", "shared::cta"):
        cur.take()
    t = cur.take()
    if t is not None:
        if t.low == "b8":
            raise UnsupportedError(f"{op} .b8 (sm_100 8-bit matrices) is not modelled; only .b16")
        if t.low != "b16":
            raise cur.error(f"unexpected qualifier for {op}", t, ["trans", "shared", "b16"])
    t = cur.take()
    if t is not None:
        raise cur.error(f"unexpected token after {op}'s type", t)
    return _ldm.fragment(op, _ldm.NUMS[num_tok.low], trans, shape)


def _all_names() -> list[str]:
    return ([f.name for f in _mma.MMA.values()] + _wgmma.names() + _ldm.names() + _sparse.mma_sp_names()
            + _sparse.wgmma_sp_names() + _tcgen05.names())


#: canonical name -> Fragment for every fragment this adapter knows
FRAGMENTS: dict[str, Fragment] = {n: fragment(n) for n in _all_names()}
