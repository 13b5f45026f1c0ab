"""Regenerate the example kernels of ``corpora/kernels/`` (used by ``docs/guides/validate-kernels.md``).

    python tests/make_kernel_examples.py

Each example is a kernel folder as Triton's cache writes it (``NAME.ttir``, ``NAME.ptx``,
``NAME.json``) plus ``NAME.launch.json`` (:data:`kernel_corpus.LAUNCH`):

* ``layer_norm`` (Triton 3.9, sm_80): valid;
* ``layer_norm_dropped_mask``: the same PTX with the guard of the last global store removed;
* ``matmul_sm90_triton3.6`` and ``matmul_sm90_triton3.7``: the tutorial matmul for sm_90 compiled
  by Triton 3.6.0 (cp.async feeds wgmma without fence.proxy.async) and 3.7.1 (fixed).

Compiling uses the release environments of ``tests/triton_releases.py``.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "corpora" / "kernels"
sys.path.insert(0, str(HERE))


def _copy(folder: str, name: str, dest: Path, ptx_edit=None) -> None:
    from kernel_corpus import LAUNCH
    dest.mkdir(parents=True, exist_ok=True)
    src = Path(folder)
    for ext in ("ttir", "ptx", "json"):
        text = (src / f"{name}.{ext}").read_text()
        if ext == "ptx" and ptx_edit is not None:
            text = ptx_edit(text)
        (dest / f"{name}.{ext}").write_text(text)
    (dest / f"{name}.launch.json").write_text(json.dumps(LAUNCH[name], indent=1) + "\n")


def _drop_last_store_guard(ptx: str) -> str:
    stores = list(re.finditer(r"@%p\d+ (st\.global\.b16)", ptx))
    last = stores[-1]
    return ptx[:last.start()] + last.group(1) + ptx[last.end():]


def main() -> int:
    from kernel_cache import corpus_folders
    from triton_releases import Interpreters
    interp = Interpreters()
    new = corpus_folders(interp.resolve("3.9"), "3.9", ["layer_norm:80"])
    shutil.rmtree(OUT, ignore_errors=True)
    _copy(new[("layer_norm", 80)], "layer_norm", OUT / "layer_norm")
    _copy(new[("layer_norm", 80)], "layer_norm", OUT / "layer_norm_dropped_mask", _drop_last_store_guard)
    for release in ("3.6", "3.7"):
        got = corpus_folders(interp.resolve(release), release, ["matmul:90"])
        _copy(got[("matmul", 90)], "matmul", OUT / f"matmul_sm90_triton{release}")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
