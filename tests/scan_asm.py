"""Instructions of compiled code (PTX, AMDGCN) attributed to source locations: the tests' own
reading of a listing, written apart from ``layoutverify.apps.scan.compiled`` so that the scan's
facts are checked against an independent count (tests/test_scan.py, tests/test_scan_tutorials.py).

Both formats carry line tables: ``.file N "dir" "name"`` (or ``.file N "path"``) and
``.loc N LINE COL`` directives; every instruction after a ``.loc`` belongs to that location
(``.loc N 0 0``: none). Inside an inline asm block LLVM numbers the ``.loc`` lines on from the
block's first one, one per asm line (PTX ISA ``.loc``; LLVM's AsmPrinter), so the block's first
``.loc`` holds for the whole block. Instruction classes, per the PTX ISA and the AMD CDNA3/CDNA4
ISA guides, with the bytes one lane moves:

* ``shared_store``/``shared_load``: PTX ``st.shared``/``ld.shared`` (not ``::cluster``), AMDGCN
  ``ds_write*``/``ds_read*`` (``ds_*2*``: twice the size; ``*_tr_b*``: 8 bytes);
* ``ldmatrix``/``stmatrix``: 4 bytes per 8x8 matrix (``.x1/.x2/.x4``);
* ``shuffle``: PTX ``shfl.sync``; AMDGCN ``ds_bpermute``/``ds_permute``/``ds_swizzle``,
  ``v_permlane*``, ``v_mov_b32_dpp``;
* ``barrier``: PTX ``bar.sync``/``barrier.sync``; AMDGCN ``s_barrier``;
* ``global_load``/``global_store``: PTX ``ld.global``/``st.global``; AMDGCN ``global_*``,
  ``buffer_*``, ``flat_*`` loads and stores (not those to LDS);
* ``async_copy``: PTX ``cp.async.ca/cg.shared.global`` (its size operand); AMDGCN loads to LDS.
"""
from __future__ import annotations

import functools
import re

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s*,?\s*"([^"]*)")?')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)")
_PTX_BYTES = {"8": 1, "16": 2, "32": 4, "64": 8, "128": 16}
_AMD_BYTES = {"b8": 1, "u8": 1, "i8": 1, "b16": 2, "u16": 2, "i16": 2, "b32": 4, "b64": 8, "b96": 12, "b128": 16,
              "ubyte": 1, "sbyte": 1, "byte": 1, "ushort": 2, "sshort": 2, "short": 2, "dword": 4, "dwordx2": 8,
              "dwordx3": 12, "dwordx4": 16}


def _ptx(line: str):
    s = re.sub(r"^\s*@!?%\w+\s+", "", line).strip()
    m = re.match(r"(st|ld)\.shared(?:::cta)?((?:\.\w+)*)\s", s)
    if m:
        mods = m.group(2).split(".")
        vec = next((int(x[1:]) for x in mods if re.fullmatch(r"v\d", x)), 1)
        size = next((_PTX_BYTES[x[1:]] for x in reversed(mods) if re.fullmatch(r"[bsuf]\d+", x)), 4)
        return ("shared_store" if m.group(1) == "st" else "shared_load"), vec * size
    m = re.match(r"(st|ld)\.global((?:\.[\w:]+)*)\s", s)
    if m:
        mods = m.group(2).split(".")
        vec = next((int(x[1:]) for x in mods if re.fullmatch(r"v\d", x)), 1)
        size = next((_PTX_BYTES[x[1:]] for x in reversed(mods) if re.fullmatch(r"[bsuf]\d+", x)), 4)
        return ("global_store" if m.group(1) == "st" else "global_load"), vec * size
    m = re.match(r"(ldmatrix|stmatrix)\S*\.x(\d)", s)
    if m:
        return m.group(1), 4 * int(m.group(2))
    if re.match(r"shfl\.sync", s):
        return "shuffle", 4
    if re.match(r"(bar|barrier)\.sync\b", s):
        return "barrier", 0
    m = re.match(r"cp\.async\.c[ag]\.shared\S*\s.*?\],\s*(0x[0-9a-fA-F]+|\d+)", s)
    if m:
        return "async_copy", int(m.group(1), 0)
    return None


def _amdgcn(line: str):
    s = line.strip()
    m = re.match(r"ds_(write|read|store|load)(2st64|2)?_(\w+?)(_tr_\w+|_d16\w*)?(\s|$)", s)
    if m:
        size = 8 if m.group(4) and m.group(4).startswith("_tr") else _AMD_BYTES.get(m.group(3), 4) * (2 if m.group(2) else 1)
        return ("shared_store" if m.group(1) in ("write", "store") else "shared_load"), size
    if re.match(r"(ds_bpermute|ds_permute|ds_swizzle|v_permlane|v_mov_b32_dpp)", s):
        return "shuffle", 4
    if re.match(r"s_barrier(\s|$)", s):
        return "barrier", 0
    m = re.match(r"(global|buffer|flat)_(load|store)(_lds)?_(\w+?)(\s|$)", s)
    if m:
        size = _AMD_BYTES.get(m.group(4), 4)
        if m.group(3) or (m.group(2) == "load" and re.search(r"\blds\b", s)):
            return "async_copy", size
        return ("global_store" if m.group(2) == "store" else "global_load"), size
    return None


@functools.lru_cache(maxsize=256)
def class_counts(asm_path: str) -> dict:
    """``(file name, line, col) -> {class: {bytes per lane: count}, ("lines", class): {line no}}``."""
    text = open(asm_path).read()
    classify = _ptx if asm_path.endswith(".ptx") else _amdgcn
    lines = text.splitlines()
    files = {}
    for line in lines:
        m = _FILE.match(line)
        if m:
            files[m.group(1)] = (m.group(3) or m.group(2)).replace("\\", "/").rsplit("/", 1)[-1]
    out: dict = {}
    cur, asm_block, asm_loc = None, False, False
    for n, line in enumerate(lines, start=1):
        t = line.strip()
        if t in ("// begin inline asm", ";;#ASMSTART"):
            asm_block, asm_loc = True, False
            continue
        if t in ("// end inline asm", ";;#ASMEND"):
            asm_block = False
            continue
        m = _LOC.match(line)
        if m:
            if not (asm_block and asm_loc):
                cur = (files.get(m.group(1), m.group(1)), int(m.group(2)), int(m.group(3))) if int(m.group(2)) else None
                asm_loc = asm_block
            continue
        got = classify(line)
        if got is None or cur is None:
            continue
        cls, width = got
        d = out.setdefault(cur, {})
        d.setdefault(cls, {})
        d[cls][width] = d[cls].get(width, 0) + 1
        d.setdefault(("lines", cls), set()).add(n)
    return out


def classes_for(asm_path: str) -> dict:
    """``(file name, line, col) -> {"shared": n, "shuffle": n}`` (the coarse classes of
    tests/test_scan.py: shared-memory instructions of any kind, and shuffles)."""
    out: dict = {}
    for loc, d in class_counts(asm_path).items():
        shared = sum(sum(d.get(c, {}).values()) for c in ("shared_store", "shared_load", "ldmatrix", "stmatrix",
                                                          "async_copy"))
        shuffle = sum(d.get("shuffle", {}).values())
        row = {}
        if shared:
            row["shared"] = shared
        if shuffle:
            row["shuffle"] = shuffle
        if row:
            out[loc] = row
    return out
