"""The compiled code beside a module (PTX, AMDGCN), read into memory instructions per source
location: what the scan attributes to each layout op as facts.

Both listings carry line tables: ``.file N "dir" "name"`` (or ``.file N "path"``) and
``.loc N LINE COL`` directives (LLVM's debug line info, which Triton emits from the TTGIR
locations); every instruction after a ``.loc`` belongs to that location, ``.loc N 0 0`` to none.
PTX lists a callee's location for an inlined ``@triton.jit`` helper first (``, inlined_at ...``
follows), which is the location the scan resolves an op's ``callsite`` to. Inside an inline
``asm`` block (``// begin inline asm`` .. ``// end inline asm``; AMDGCN ``;;#ASMSTART`` ..
``;;#ASMEND``) LLVM emits a ``.loc`` per line of the asm string, numbered on from the block's
location (line + 1, + 2, ...): the block's first ``.loc`` holds for all of it.

Instruction classes (:data:`CLASSES`), each with the bytes one lane moves (``width``):

``shared_store`` / ``shared_load``
    PTX ``st.shared`` / ``ld.shared`` (``.v2``/``.v4`` x the type's bytes); AMDGCN
    ``ds_write*`` / ``ds_read*`` (``_b8`` .. ``_b128``, ``u8``/``u16``; ``ds_*2*`` two accesses
    of the size; gfx950's transposing ``ds_read_b64_tr_b16`` 8 bytes).
``stmatrix`` / ``ldmatrix``
    PTX ``stmatrix``/``ldmatrix`` ``.x1/.x2/.x4``: width 4 bytes per matrix (one 8x8 b16 matrix is
    one 32-bit register per lane), ``matrices`` = x.
``shuffle``
    PTX ``shfl.sync``; AMDGCN ``ds_bpermute``/``ds_permute``/``ds_swizzle``,
    ``v_permlane16/32_swap`` (gfx950) and ``v_mov_b32_dpp``.
``barrier``
    PTX ``bar.sync``/``barrier.sync`` (CTA barriers; ``bar.warp.sync`` is not one); AMDGCN
    ``s_barrier``.
``global_load`` / ``global_store``
    PTX ``ld.global``/``st.global``; AMDGCN ``global_load*``/``buffer_load*``/``flat_load*`` and the
    stores (widths ``dword`` 4, ``dwordx2`` 8, ``dwordx4`` 16, ``short``/``ushort`` 2, ``byte`` 1).
``async_copy``
    global -> shared without registers: PTX ``cp.async.ca/cg.shared.global`` (its size operand),
    AMDGCN ``global_load_lds_*`` / ``buffer_load_* ... lds``.
``tma``
    PTX ``cp.async.bulk.tensor`` (one thread issues a whole tile).
``tmem_load`` / ``tmem_store``
    PTX ``tcgen05.ld`` / ``tcgen05.st``.
``dsmem_store`` / ``dsmem_load``
    PTX ``st.shared::cluster`` / ``ld.shared::cluster`` (another CTA's shared memory).
``data_move``
    register instructions that only move or select data: PTX ``prmt``, ``selp``, ``mov`` of a
    vector ``{...}`` (packing and unpacking); AMDGCN ``v_perm_b32``, ``v_cndmask_b32``,
    ``v_pack_b32_f16``.

Everything else (arithmetic, address computation, ``mma``/``wgmma``/``v_mfma``) is not a fact of
a layout op and is not classified.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from layoutverify.core.errors import LayoutError

MAX_ASM_BYTES = 128 << 20
CLASSES = ("shared_store", "shared_load", "stmatrix", "ldmatrix", "shuffle", "barrier", "global_load",
           "global_store", "async_copy", "tma", "tmem_load", "tmem_store", "dsmem_store", "dsmem_load", "data_move")

_ASM_BEGIN = ("// begin inline asm", ";;#ASMSTART")
_ASM_END = ("// end inline asm", ";;#ASMEND")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s*,?\s*"([^"]*)")?')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)")
_PRED = re.compile(r"^\s*(?:@!?%\w+\s+)?")
_PTX_TYPE_BYTES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "b32": 4,
                   "u32": 4, "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16,
                   "f16x2": 4, "bf16x2": 4}
_AMD_SUFFIX_BYTES = {"b8": 1, "u8": 1, "i8": 1, "b16": 2, "u16": 2, "i16": 2, "b32": 4, "b64": 8, "b96": 12,
                     "b128": 16, "byte": 1, "ubyte": 1, "sbyte": 1, "short": 2, "ushort": 2, "sshort": 2,
                     "dword": 4, "dwordx2": 8, "dwordx3": 12, "dwordx4": 16}


@dataclass(frozen=True)
class Instruction:
    """One classified instruction: its class, the bytes one lane moves, and where it is."""

    cls: str
    width: int          # bytes per lane (0: not a data access)
    line: int           # 1-based line in the listing
    text: str           # the instruction as written (trimmed)
    matrices: int = 0   # ldmatrix/stmatrix: 8x8 matrices per instruction


@dataclass
class CompiledCode:
    """Classified instructions of one listing, by source location ``(file name, line, col)``."""

    path: str
    kind: str                     # "ptx" or "amdgcn"
    lanes: int                    # lanes of a warp / wavefront
    by_location: dict = field(default_factory=dict)   # (file, line, col) -> [Instruction]
    unlocated: list = field(default_factory=list)     # instructions after .loc N 0 0 or before any .loc

    def at(self, file: str, line: int, col: int) -> list[Instruction]:
        """The instructions at source location ``(file, line, col)`` (the file matched by its base name)."""
        return self.by_location.get((_base(file), int(line), int(col)), [])


def _base(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def classify_ptx(line: str) -> Instruction | None:
    """The class of one PTX instruction line (None: not a fact of a layout op)."""
    body = _PRED.sub("", line, count=1).strip()
    if not body or body[0] in ".{}/$" or body.endswith(":"):
        return None
    op = body.split(None, 1)[0].rstrip(";")
    parts = op.split(".")
    head = parts[0]
    if head in ("st", "ld") and len(parts) > 1:
        space = parts[1]
        if space.startswith("shared"):
            if "cluster" in space:   # another CTA's shared memory (distributed shared memory)
                return Instruction("dsmem_store" if head == "st" else "dsmem_load", _ptx_width(parts), 0, body)
            return Instruction("shared_store" if head == "st" else "shared_load", _ptx_width(parts), 0, body)
        if space == "global":
            return Instruction("global_store" if head == "st" else "global_load", _ptx_width(parts), 0, body)
        return None
    if head in ("ldmatrix", "stmatrix"):
        x = next((int(p[1:]) for p in parts if re.fullmatch(r"x\d", p)), 1)
        return Instruction(head, 4 * x, 0, body, x)
    if head == "shfl":
        return Instruction("shuffle", 4, 0, body)
    if op in ("bar.sync", "barrier.sync", "barrier.sync.aligned", "bar.sync.aligned") or \
            (head in ("bar", "barrier") and len(parts) > 1 and parts[1] == "sync"):
        return Instruction("barrier", 0, 0, body)
    if op.startswith("cp.async.bulk.tensor"):
        return Instruction("tma", 0, 0, body)
    if op.startswith(("cp.async.ca.shared", "cp.async.cg.shared")):
        m = re.search(r"\],\s*(0x[0-9a-fA-F]+|\d+)", body)
        return Instruction("async_copy", int(m.group(1), 0) if m else 16, 0, body)
    if op.startswith("tcgen05.ld"):
        return Instruction("tmem_load", 0, 0, body)
    if op.startswith("tcgen05.st"):
        return Instruction("tmem_store", 0, 0, body)
    if head in ("prmt", "selp") or (head == "mov" and "{" in body):
        return Instruction("data_move", 0, 0, body)
    return None


def _ptx_width(parts: list[str]) -> int:
    vec = next((int(p[1:]) for p in parts if re.fullmatch(r"v\d", p)), 1)
    ty = next((p for p in reversed(parts) if p in _PTX_TYPE_BYTES), None)
    return vec * (_PTX_TYPE_BYTES[ty] if ty else 4)


_AMD_DS = re.compile(r"^ds_(write|read|store|load)(2st64|2)?_([a-z]+\d*)(?:_tr_b\d+|_d16(?:_hi)?)?")
_AMD_MEM = re.compile(r"^(global|buffer|flat)_(load|store)(?:_lds)?_([a-z]+\d*(?:x\d)?)")


def classify_amdgcn(line: str) -> Instruction | None:
    """The class of one AMDGCN instruction line (None: not a fact of a layout op)."""
    body = line.strip()
    if not body or body[0] in ".;" or body.endswith(":"):
        return None
    op = body.split(None, 1)[0]
    m = _AMD_DS.match(op)
    if m:
        kind, pair, size = m.groups()
        width = _AMD_SUFFIX_BYTES.get(size, 4) * (2 if pair else 1)
        if "_tr_" in op:
            width = 8 if op.startswith("ds_read_b64") else width
        cls = "shared_store" if kind in ("write", "store") else "shared_load"
        return Instruction(cls, width, 0, body)
    if op.startswith(("ds_bpermute", "ds_permute", "ds_swizzle", "v_permlane")) or op.startswith("v_mov_b32_dpp"):
        return Instruction("shuffle", 4, 0, body)
    if op == "s_barrier" or op.startswith("s_barrier_wait"):
        return Instruction("barrier", 0, 0, body)
    m = _AMD_MEM.match(op)
    if m:
        space, kind, size = m.groups()
        width = _AMD_SUFFIX_BYTES.get(size.replace("_d16", ""), 4)
        if kind == "load" and ("_lds_" in op or re.search(r"\blds\b", body)):
            return Instruction("async_copy", width, 0, body)
        return Instruction("global_store" if kind == "store" else "global_load", width, 0, body)
    if op.startswith(("v_perm_b32", "v_cndmask_b32", "v_pack_b32_f16")):
        return Instruction("data_move", 0, 0, body)
    return None


def read_compiled(path: str, kind: str | None = None) -> CompiledCode:
    """Read a ``.ptx`` or ``.amdgcn`` listing (kind from the suffix unless given)."""
    p = Path(path)
    kind = kind or ("ptx" if p.suffix == ".ptx" else "amdgcn" if p.suffix == ".amdgcn" else None)
    if kind not in ("ptx", "amdgcn"):
        raise LayoutError(f"{path}: compiled code must be .ptx or .amdgcn")
    try:
        if p.stat().st_size > MAX_ASM_BYTES:
            raise LayoutError(f"{path}: {p.stat().st_size} bytes is too large (limit {MAX_ASM_BYTES})")
        text = p.read_text(errors="replace")
    except OSError as e:
        raise LayoutError(f"cannot read {path}: {e.strerror or e}") from None
    return parse_compiled(text, kind, str(path))


def parse_compiled(text: str, kind: str, path: str = "<text>") -> CompiledCode:
    """Classify every instruction of a listing and file it under its ``.loc`` location."""
    lines = text.splitlines()
    files = {}
    for raw in lines:   # PTX lists its files at the end, AMDGCN at the start
        m = _FILE.match(raw)
        if m:
            files[m.group(1)] = _base(m.group(3) if m.group(3) else m.group(2))
    classify = classify_ptx if kind == "ptx" else classify_amdgcn
    code = CompiledCode(path=path, kind=kind, lanes=32 if kind == "ptx" else 64)
    cur = None
    in_asm = asm_located = False
    for n, raw in enumerate(lines, start=1):
        stripped = raw.strip()
        if stripped in _ASM_BEGIN:
            in_asm, asm_located = True, False
            continue
        if stripped in _ASM_END:
            in_asm = False
            continue
        m = _LOC.match(raw)
        if m:
            if in_asm and asm_located:
                continue   # LLVM numbers the lines of an inline asm string from its location: not new locations
            line, col = int(m.group(2)), int(m.group(3))
            cur = (files.get(m.group(1), m.group(1)), line, col) if line > 0 else None
            asm_located = in_asm
            continue
        ins = classify(raw)
        if ins is None:
            continue
        ins = Instruction(ins.cls, ins.width, n, ins.text[:160], ins.matrices)
        if cur is None:
            code.unlocated.append(ins)
        else:
            code.by_location.setdefault(cur, []).append(ins)
    return code
