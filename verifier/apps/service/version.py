"""The service's tool version: results in the store are reused only by the same code."""
from __future__ import annotations

import hashlib
from pathlib import Path

_TOOL_VERSION: str | None = None


def tool_version() -> str:
    """``layoutverify X.Y.Z+<source hash> triton A.B.C``: results are reused only by the same code."""
    global _TOOL_VERSION
    if _TOOL_VERSION is None:
        import layoutverify
        import layoutverify.adapters as adapters_pkg
        h = hashlib.sha256()
        roots = [Path(layoutverify.__file__).parent / "core", Path(adapters_pkg.__file__).parent]
        for root in roots:
            for p in sorted(root.rglob("*")):
                if p.suffix in (".py", ".toml", ".json") and "__pycache__" not in p.parts:
                    h.update(str(p.relative_to(root)).encode())
                    h.update(p.read_bytes())
        try:
            from importlib import metadata
            triton = metadata.version("triton")
        except Exception:
            triton = "none"
        _TOOL_VERSION = f"layoutverify {layoutverify.__version__}+{h.hexdigest()[:12]} triton {triton}"
    return _TOOL_VERSION
