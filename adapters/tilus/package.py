"""Importing the installed ``tilus`` package for its layout functions, with or without torch.

tilus's package ``__init__`` imports torch, which its kernels, tensors and benchmarks use; the
layout functions this adapter calls (``tilus.ir.layout`` and its ops, the instruction configs of
:mod:`.instructions`) never touch it. So tilus serves as a layout oracle in an environment without
torch, installed with ``pip install --no-deps tilus apache-tvm-ffi tabulate tqdm filelock`` (the
tests' oracle environment is made that way: ``tests/oracle_envs.py``).

:func:`import_tilus` imports it: plainly when torch can be imported; otherwise with a placeholder
module bound to the name ``torch`` only while tilus's modules load. Any attribute of the
placeholder raises ``ModuleNotFoundError``, so a tilus function that does need torch fails
loudly instead of answering; the placeholder leaves ``sys.modules`` afterwards, so every later
``import torch`` elsewhere still finds no torch.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types

#: the tilus modules this adapter and the tests use, loaded while the placeholder is bound
MODULES = (
    "tilus",
    "tilus.ir.layout",
    "tilus.ir.layout.ops.register_ops",
    "tilus.ir.layout.ops.shared_ops",
    "tilus.ir.layout.register_layout",
    "tilus.ir.layout.shared_layout",
    "tilus.ir.layout.cuda.ldmatrix",
    "tilus.ir.layout.cuda.tcgen05.ldst",
    "tilus.ir.layout.inference.inference_rules.wgmma",
    "tilus.ir.instructions.cuda.mma_dot",
    "tilus.ir.utils.veceval",
    "tilus.hidet.ir.dtypes",
    "tilus.hidet.ir.expr",
    "tilus.hidet.ir.primitives.cuda.tcgen05",
)

_LOCK = threading.Lock()


class _NoTorch(types.ModuleType):
    """Stands for torch while tilus loads without it; any use raises."""

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise ModuleNotFoundError(f"torch is not installed, and tilus used torch.{name} "
                                  "(its layout functions should not need it)", name="torch")


def torch_available() -> bool:
    if isinstance(sys.modules.get("torch"), _NoTorch):
        return False
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def import_tilus() -> types.ModuleType:
    """The ``tilus`` package (imported once); raises ``ImportError`` when tilus is not installed."""
    if "tilus" in sys.modules and sys.modules["tilus"] is not None:
        return sys.modules["tilus"]
    with _LOCK:
        if "tilus" in sys.modules and sys.modules["tilus"] is not None:
            return sys.modules["tilus"]
        if importlib.util.find_spec("tilus") is None:
            raise ModuleNotFoundError("No module named 'tilus'", name="tilus")
        if torch_available():
            for name in MODULES:
                importlib.import_module(name)
            return sys.modules["tilus"]
        # tvm_ffi (a tilus dependency) looks for torch itself when it loads and copes with its
        # absence: load it before the placeholder is bound
        importlib.import_module("tvm_ffi")
        placeholder = _NoTorch("torch")
        sys.modules["torch"] = placeholder
        try:
            for name in MODULES:
                importlib.import_module(name)
        except BaseException:
            for name in [m for m in sys.modules if m == "tilus" or m.startswith("tilus.")]:
                del sys.modules[name]
            raise
        finally:
            if sys.modules.get("torch") is placeholder:
                del sys.modules["torch"]
        return sys.modules["tilus"]
