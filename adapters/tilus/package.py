"""Importing the installed ``tilus`` package for its layout functions, with or without its runtime.

tilus's package ``__init__`` imports torch and CUDA's runtime bindings (``cuda.bindings.runtime``),
which its kernels, tensors and benchmarks use; the layout functions this adapter calls
(``tilus.ir.layout`` and its ops, the instruction configs of :mod:`.instructions`) never touch
them. So tilus serves as a layout oracle in an environment without them, installed with
``pip install --no-deps tilus apache-tvm-ffi tabulate tqdm filelock`` (the tests' oracle
environment is made that way: ``tests/oracle_envs.py``; tilus's ``cuda.bindings`` is not even a
declared requirement: it comes with the CUDA build of torch).

:func:`import_tilus` imports it: plainly when those modules import; otherwise with a placeholder
bound to each missing one (and its missing parent packages) only while tilus's modules load. Any
attribute of a placeholder raises ``ModuleNotFoundError``, so a tilus function that does need
torch or CUDA fails loudly instead of answering; the placeholders leave ``sys.modules``
afterwards, so every later ``import torch`` elsewhere still finds no torch.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types

#: the tilus modules this adapter and the tests use, loaded while the placeholders are bound
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
#: what tilus imports at load time for its runtime only (never in the layout functions). torch's
#: placeholder raises on any attribute; the CUDA runtime's hands out stand-ins for its names,
#: because tilus names ``cudart.cudaDeviceProp`` in a class annotation as it loads: a stand-in
#: raises when it is called, indexed or asked for an attribute (any use of the runtime).
RUNTIME_MODULES = {"torch": False, "cuda.bindings.runtime": True}
#: tilus's own dependencies that look for torch themselves when they load, and cope without it:
#: loaded before any placeholder is bound
LOADED_FIRST = ("tvm_ffi",)

_LOCK = threading.Lock()


def _absent_error(what: str, module: str) -> ModuleNotFoundError:
    return ModuleNotFoundError(f"{module} is not installed, and tilus used {what} (its layout functions "
                               "should not need it)", name=module)


class _Absent(types.ModuleType):
    """Stands for a module tilus imports but its layout functions do not use; any use raises
    (a lenient one hands out a :class:`_StandIn` per name, which raises when used)."""

    def __init__(self, name: str, lenient: bool = False):
        super().__init__(name)
        vars(self)["_lenient"] = lenient

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if vars(self).get("_lenient"):
            return _StandIn(f"{self.__name__}.{name}", self.__name__)
        raise _absent_error(f"{self.__name__}.{name}", self.__name__)


class _StandIn:
    """A name of an absent module, as named in an annotation; calling, indexing or reading an
    attribute of it raises."""

    __slots__ = ("_what", "_module")

    def __init__(self, what: str, module: str):
        object.__setattr__(self, "_what", what)
        object.__setattr__(self, "_module", module)

    def __getattr__(self, name: str):
        raise _absent_error(f"{self._what}.{name}", self._module)

    def __call__(self, *args, **kwargs):
        raise _absent_error(f"{self._what}()", self._module)

    def __getitem__(self, key):
        raise _absent_error(f"{self._what}[...]", self._module)

    def __repr__(self) -> str:
        return f"<absent {self._what}>"


def _importable(name: str) -> bool:
    if isinstance(sys.modules.get(name.split(".")[0]), _Absent):
        return False
    try:
        importlib.import_module(name)
        return True
    except Exception:  # noqa: BLE001 - absent, or present but unusable here (a CUDA library missing)
        return False


def _bind_placeholders(names: dict) -> list[str]:
    """Bind a placeholder to each module of ``names`` (name -> lenient; and to each missing parent
    package); returns the names bound, for :func:`_unbind`."""
    bound: list[str] = []
    for name, lenient in names.items():
        parts = name.split(".")
        parent = None
        for i in range(1, len(parts) + 1):
            dotted = ".".join(parts[:i])
            module = sys.modules.get(dotted)
            if module is None:
                module = _Absent(dotted, lenient=lenient and dotted == name)
                module.__path__ = []            # a package, for the submodules below it
                sys.modules[dotted] = module
                bound.append(dotted)
            if parent is not None and isinstance(parent, _Absent):
                setattr(parent, parts[i - 1], module)
            parent = module
    return bound


def _unbind(bound: list[str]) -> None:
    for name in bound:
        if isinstance(sys.modules.get(name), _Absent):
            del sys.modules[name]


def torch_available() -> bool:
    """Whether torch can be found (without importing it)."""
    if isinstance(sys.modules.get("torch"), _Absent):
        return False
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def import_tilus() -> types.ModuleType:
    """The ``tilus`` package (imported once); raises ``ImportError`` when tilus is not installed."""
    if sys.modules.get("tilus") is not None:
        return sys.modules["tilus"]
    with _LOCK:
        if sys.modules.get("tilus") is not None:
            return sys.modules["tilus"]
        if importlib.util.find_spec("tilus") is None:
            raise ModuleNotFoundError("No module named 'tilus'", name="tilus")
        for name in LOADED_FIRST:
            try:
                importlib.import_module(name)
            except ImportError:
                pass                            # tilus's own import says what is missing
        missing = {name: lenient for name, lenient in RUNTIME_MODULES.items() if not _importable(name)}
        bound = _bind_placeholders(missing)
        try:
            for name in MODULES:
                importlib.import_module(name)
        except BaseException:
            for name in [m for m in sys.modules if m == "tilus" or m.startswith("tilus.")]:
                del sys.modules[name]
            raise
        finally:
            _unbind(bound)
        return sys.modules["tilus"]
