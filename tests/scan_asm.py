"""Instructions of compiled code (PTX, AMDGCN) attributed to source locations, for checking the
scan's predictions against what the compiler emitted (tests/test_scan.py).

Both formats carry line tables: ``.file N "dir" "name"`` (or ``.file N "path"``) and
``.loc N LINE COL`` directives; every instruction after a ``.loc`` belongs to that location.
Instruction classes (per the PTX ISA and the AMD CDNA3 ISA):

* ``shared``: PTX ``st.shared``/``ld.shared``/``stmatrix``/``ldmatrix`` and ``cp.async`` (a copy
  global -> shared: the store side of ``async_copy_global_to_local``); AMDGCN
  ``ds_write*``/``ds_read*``/``ds_store*``/``ds_load*``;
* ``shuffle``: PTX ``shfl.sync``; AMDGCN ``ds_bpermute``/``ds_permute``/``ds_swizzle``,
  ``v_permlane*`` and DPP moves (``row_*``/``quad_perm`` modifiers);
"""
from __future__ import annotations

import re

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s*,?\s*"([^"]*)")?')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)")
PTX_CLASSES = {
    "shared": re.compile(r"^\s*(?:@!?%p\d+\s+)?(st\.shared|ld\.shared|stmatrix|ldmatrix|cp\.async\.c[ag]\.shared)\b"),
    "shuffle": re.compile(r"^\s*(?:@!?%p\d+\s+)?shfl\.sync\b"),
}
AMDGCN_CLASSES = {
    "shared": re.compile(r"^\s*ds_(write|read|store|load)\w*"),
    "shuffle": re.compile(r"^\s*(ds_bpermute|ds_permute|ds_swizzle|v_permlane\w*|\w+.*\b(row_\w+|quad_perm|row_bcast))"),
}


def by_location(text: str, classes: dict) -> dict[tuple[str, int, int], dict[str, int]]:
    """``(file basename, line, col) -> {class: count}`` over the whole listing."""
    files: dict[str, str] = {}
    lines = text.splitlines()
    for line in lines:  # PTX lists its files at the end
        m = _FILE.match(line)
        if m:
            name = m.group(3) if m.group(3) else m.group(2)
            files[m.group(1)] = name.replace("\\", "/").rsplit("/", 1)[-1]
    cur = None
    out: dict = {}
    for line in lines:
        m = _LOC.match(line)
        if m:
            cur = (files.get(m.group(1), m.group(1)), int(m.group(2)), int(m.group(3)))
            continue
        for cls, rx in classes.items():
            if rx.match(line):
                d = out.setdefault(cur, {})
                d[cls] = d.get(cls, 0) + 1
    return out


def classes_for(asm_path: str) -> dict:
    text = open(asm_path).read()
    return by_location(text, PTX_CLASSES if asm_path.endswith(".ptx") else AMDGCN_CLASSES)
