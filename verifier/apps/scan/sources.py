"""Find TTGIR modules on disk.

A path may be

* a file: ``*.ttgir``, ``*.mlir``, or any text file holding a printed module or an
  ``MLIR_ENABLE_DUMP`` log (``// -----// IR Dump Before ...`` headers). A log holds one
  compilation after another (an autotuner's configurations, one kernel for several targets):
  each compilation's dumps run TTIR, then TTGIR, then LLVM, so every maximal run of consecutive
  TTGIR dumps of one kernel and target is one compilation, and its last dump (the module as it
  reaches the LLVM lowering) is kept: five autotune configurations scan as five modules;
* a folder, searched recursively for ``*.ttgir`` and ``*.mlir``: a Triton cache
  (``~/.triton/cache``, ``$TRITON_CACHE_DIR``) or a ``TRITON_KERNEL_DUMP`` folder, where each
  kernel sits in a hash folder as ``<kernel>.ttgir`` beside ``<kernel>.json`` (its metadata:
  target, ``num_warps``, ``triton_version``, ...) and the compiled ``<kernel>.ptx`` /
  ``<kernel>.amdgcn``, which are recorded with the module.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from layoutverify.core.errors import LayoutError

from .module import Module, read_module
from .ops import is_scanned_op

SUFFIXES = (".ttgir", ".mlir")
_DUMP_HEADER = re.compile(r"^// -----// (?:IR Dump (?:Before|After) (.*?) //----- //|(\w+ internal IR Dump .*?))\s*$",
                          re.M)
MAX_FILE_BYTES = 256 << 20


def _read(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise LayoutError(f"{path}: {size} bytes is too large to scan (limit {MAX_FILE_BYTES})")
        return path.read_text(errors="replace")
    except OSError as e:
        raise LayoutError(f"cannot read {path}: {e.strerror or e}") from None


def module_files(paths) -> list[Path]:
    """Expand folders into their ``*.ttgir`` / ``*.mlir`` files (sorted, stable)."""
    out: list[Path] = []
    for p in paths:
        p = Path(os.path.expanduser(str(p)))
        if p.is_dir():
            found = sorted(q for q in p.rglob("*") if q.suffix in SUFFIXES and q.is_file())
            out.extend(found)
        elif p.is_file():
            out.append(p)
        elif p.exists():
            raise LayoutError(f"cannot scan {p}: not a regular file or folder (a device, FIFO or socket)")
        else:
            raise LayoutError(f"no such file or folder: {p}")
    return out


def _metadata(path: Path) -> tuple[dict, dict]:
    """The cache metadata ``<stem>.json`` and compiled code beside a module file."""
    meta, asm = {}, {}
    j = path.with_suffix(".json")
    if j.is_file():
        try:
            meta = json.loads(j.read_text())
            if not isinstance(meta, dict):
                meta = {}
        except (OSError, ValueError):
            meta = {}
    for ext in ("ptx", "amdgcn", "llir"):
        q = path.with_suffix("." + ext)
        if q.is_file():
            asm[ext] = str(q.resolve())
    return meta, asm


def split_dumps(text: str) -> list[tuple[str, str]] | None:
    """``MLIR_ENABLE_DUMP`` output: ``[(pass header, module text), ...]``; None if not a dump."""
    heads = list(_DUMP_HEADER.finditer(text))
    if not heads:
        return None
    out = []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        out.append((m.group(1) or m.group(2), text[m.end():end]))
    return out


def _is_ttgir(text: str) -> bool:
    return "tt.func" in text and ("ttg." in text or "triton_gpu." in text)


def load_file(path: Path) -> list[Module]:
    text = _read(path)
    dumps = split_dumps(text)
    if dumps is None:
        mod = read_module(text, str(path), op_filter=is_scanned_op)
        mod.metadata, mod.asm = _metadata(path)
        return [mod]
    mods = []
    seen: dict[str, int] = {}
    for kernel, header, body in compilations(dumps):
        seen[kernel] = seen.get(kernel, 0) + 1
        mod = read_module(body, f"{path}#{kernel}@{seen[kernel]}", op_filter=is_scanned_op)
        mod.metadata = {"name": kernel, "dump_pass": header, "dump_compilation": seen[kernel]}
        mods.append(mod)
    if not mods:
        raise LayoutError(f"{path}: an MLIR dump without any TTGIR module")
    return mods


def compilations(dumps: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """``(kernel, pass header, module text)`` of the last TTGIR dump of every compilation in a
    log (see the module docstring), in log order."""
    out = []
    run_key = None
    for header, body in dumps:
        if not _is_ttgir(body):
            run_key = None
            continue
        m = re.search(r"\btt\.func\s+public\b[^@\n]*@([\w$.-]+)", body) or \
            re.search(r"\btt\.func\b[^@\n]*@([\w$.-]+)", body)
        kernel = m.group(1) if m else "?"
        t = re.search(r'ttg\.target"?\s*=\s*"([^"]*)"', body)
        key = (kernel, t.group(1) if t else None)
        if key == run_key:
            out[-1] = (kernel, header, body)
        else:
            out.append((kernel, header, body))
            run_key = key
    return out


def find_modules(paths, skipped: list | None = None) -> list[Module]:
    """Every module under ``paths`` (see the module docstring), ordered by kernel name and
    target. A file named on the command line must hold TTGIR (else an error); files found by
    searching a folder that hold something else (a TTIR ``.mlir``, ...) are skipped and listed
    in ``skipped``."""
    mods: list[Module] = []
    explicit = {str(Path(os.path.expanduser(str(p)))) for p in paths}
    for f in module_files(paths):
        if str(f) not in explicit and not _is_ttgir(_read(f)):
            if skipped is not None:
                skipped.append(str(f))
            continue
        mods.extend(load_file(f))
    mods.sort(key=lambda m: (m.kernel, m.target or "", m.path))
    return mods
