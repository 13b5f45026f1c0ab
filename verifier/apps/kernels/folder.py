"""Finding compiled kernels on disk: a Triton cache, one kernel's folder, or a TTIR and a PTX file.

A kernel's folder (as Triton's cache writes it) holds ``NAME.ttir``, ``NAME.ptx`` and the metadata
``NAME.json`` (``num_warps``, ``target``, ``global_scratch_size``, ``triton_version`` ...); a Triton
cache is a directory of such folders. Files are read through :mod:`layoutverify.core.files`
(regular files, bounded size, strict UTF-8). An optional ``NAME.launch.json`` beside them gives the
launch (:class:`~.validate.Launch`).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from layoutverify.core.errors import LayoutError
from layoutverify.core.files import read_text

MAX_KERNEL_FILE = 32 << 20
MAX_KERNELS = 4096


@dataclass
class KernelFiles:
    """One compiled kernel's files: its TTIR and PTX paths, and optionally its metadata
    (``NAME.json``), its launch (``NAME.launch.json``) and the folder they came from."""
    name: str
    ttir: str
    ptx: str
    meta: str | None = None
    launch: str | None = None
    folder: str | None = None

    def read(self) -> tuple[str, str, dict, dict | None]:
        """``(TTIR text, PTX text, metadata, launch)``: the metadata ``{}`` and the launch ``None``
        when the kernel has no such file."""
        ttir = read_text(self.ttir, what="TTIR file", limit=MAX_KERNEL_FILE)
        ptx = read_text(self.ptx, what="PTX file", limit=MAX_KERNEL_FILE)
        meta = _json(self.meta, "metadata file") if self.meta else {}
        launch = _json(self.launch, "launch file") if self.launch else None
        return ttir, ptx, meta, launch


def _json(path: str, what: str) -> dict:
    text = read_text(path, what=what, limit=1 << 20)
    try:
        v = json.loads(text)
    except json.JSONDecodeError as e:
        raise LayoutError(f"{what} {path}: not JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(v, dict):
        raise LayoutError(f"{what} {path}: expected a JSON object")
    return v


def _folder_kernel(folder: str) -> KernelFiles | None:
    """The kernel in ``folder`` (its TTIR, PTX and metadata share a stem), or None."""
    try:
        names = sorted(os.listdir(folder))
    except OSError as e:
        raise LayoutError(f"cannot read the directory {folder}: {e.strerror}") from None
    ttirs = [n for n in names if n.endswith(".ttir")]
    for t in ttirs:
        stem = t[:-5]
        if stem + ".ptx" in names:
            meta = stem + ".json" if stem + ".json" in names else None
            launch = stem + ".launch.json" if stem + ".launch.json" in names else None
            return KernelFiles(stem, os.path.join(folder, t), os.path.join(folder, stem + ".ptx"),
                               os.path.join(folder, meta) if meta else None,
                               os.path.join(folder, launch) if launch else None, folder)
    return None


def find_kernels(paths: list[str]) -> list[KernelFiles]:
    """Kernels named by ``paths``: kernel folders, Triton caches (every kernel folder below), or a
    ``.ttir`` and a ``.ptx`` file of one kernel given together."""
    files = [p for p in paths if os.path.isfile(p)]
    dirs = [p for p in paths if os.path.isdir(p)]
    missing = [p for p in paths if p not in files and p not in dirs]
    if missing:
        raise LayoutError(f"no such file or directory: {missing[0]}")
    out: list[KernelFiles] = []
    if files:
        ttir = [f for f in files if f.endswith(".ttir")]
        ptx = [f for f in files if f.endswith(".ptx")]
        other = [f for f in files if f not in ttir and f not in ptx]
        if other or len(ttir) != 1 or len(ptx) != 1:
            raise LayoutError("give files as one .ttir and one .ptx of the same kernel (or folders); got "
                              + ", ".join(os.path.basename(f) for f in files))
        stem = os.path.splitext(ptx[0])[0]
        meta = stem + ".json" if os.path.isfile(stem + ".json") else None
        launch = stem + ".launch.json" if os.path.isfile(stem + ".launch.json") else None
        out.append(KernelFiles(os.path.basename(stem), ttir[0], ptx[0], meta, launch, None))
    for d in dirs:
        k = _folder_kernel(d)
        if k is not None:
            out.append(k)
            continue
        found = []
        for root, subdirs, _ in os.walk(d):
            subdirs.sort()
            for s in subdirs:
                k = _folder_kernel(os.path.join(root, s))
                if k is not None:
                    found.append(k)
                    if len(found) > MAX_KERNELS:
                        raise LayoutError(f"more than {MAX_KERNELS} kernels under {d}")
        if not found:
            raise LayoutError(f"no kernel (NAME.ttir with NAME.ptx) in {d} or its subdirectories")
        out += found
    return out
