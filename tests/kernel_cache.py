"""The kernel corpus (``tests/kernel_corpus.py``) compiled by a Triton release, cached on disk.

Kernels are compiled in a subprocess by the release's own interpreter
(``tests/triton_releases.py``) into the Triton cache ``<cache root>/kernel-corpus/<release>``
(``TRITON_CACHE_DIR``). Triton keys its cache by the kernel's source, options and its own
version, so a second run (the next test session, CI's next job on the same runner) is a cache hit
and compiles nothing.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from triton_releases import cache_root

HERE = Path(__file__).resolve().parent
COMPILE_TIMEOUT_S = 900


def corpus_folders(python: str, release: str, items: list[str] | None = None) -> dict:
    """``{(kernel, arch): folder}`` of the corpus kernels ``items`` (``NAME:ARCH``; default all)
    compiled by ``python``'s Triton ``release``; a kernel that failed to compile maps to its error."""
    cache = cache_root() / "kernel-corpus" / release
    cache.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TRITON_CACHE_DIR=str(cache), TRITON_DEFAULT_FP_FUSION="1")
    env.pop("PYTHONPATH", None)
    out = subprocess.run([python, str(HERE / "kernel_corpus.py"), str(cache), *(items or [])], capture_output=True,
                         text=True, timeout=COMPILE_TIMEOUT_S, env=env, cwd=str(HERE))
    found = {}
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            found[(r["kernel"], r["arch"])] = r.get("dir") or ("error: " + r.get("error", "?"))
    if not found:
        raise RuntimeError(f"the kernel corpus did not compile with Triton {release}: {out.stderr[-2000:]}")
    return found
