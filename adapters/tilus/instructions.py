"""Layouts that Tilus defines in its own instruction modules, by reference (the oracle side).

A *reference* names where Tilus's definition lives; the layout comes from the installed tilus and is
mapped to the canonical form by Tilus's own ``get_global`` (:func:`.oracle.register_to_layout`):

* ``mma_dot:NAME:A|B|C``: ``AtomicMmaConfig.all_configs()[NAME]`` of
  ``tilus.ir.instructions.cuda.mma_dot`` (its ``la``/``lb``/``lc``);
* ``ldmatrix:NBYTES:false|true`` / ``stmatrix:...``: ``tilus.ir.layout.cuda.ldmatrix``'s
  ``LoadMatrixConfig`` / ``StoreMatrixConfig``;
* ``wgmma:M,N,INST_M,INST_N,INST_K``: ``generate_wgmma_register_layout`` of Tilus's wgmma layout rule;
* ``tcgen05_ldst:SHAPE`` (``32x32b``, ``16x64b``, ``16x128b``, ``16x256b``):
  ``tilus.ir.layout.cuda.tcgen05.ldst.get_ldst_layout``.
"""
from __future__ import annotations

from layoutverify.core.errors import LayoutError, NativeError, UnsupportedError
from layoutverify.core.layout import Layout

from .package import import_tilus

KINDS = ("mma_dot", "ldmatrix", "stmatrix", "wgmma", "tcgen05_ldst")


def _mma_dot(ref: str, rest: str):
    from tilus.ir.instructions.cuda.mma_dot import AtomicMmaConfig
    name, _, operand = rest.partition(":")
    configs = AtomicMmaConfig.all_configs()
    if name not in configs or operand not in ("A", "B", "C"):
        raise LayoutError(f"tilus native reference {ref!r}: no mma_dot config {name!r} operand {operand!r} "
                          f"(configs: {', '.join(sorted(configs))})")
    cfg = configs[name]
    return {"A": cfg.la, "B": cfg.lb, "C": cfg.lc}[operand]


def _matrix(ref: str, kind: str, rest: str):
    from tilus.ir.layout.cuda import ldmatrix as L
    nbytes, _, trans = rest.partition(":")
    if not nbytes.isdigit() or trans not in ("true", "false"):
        raise LayoutError(f"tilus native reference {ref!r}: write {kind}:NBYTES:true|false")
    configs = (L.LoadMatrixConfig if kind == "ldmatrix" else L.StoreMatrixConfig).all()
    found = [c for c in configs if c.nbytes == int(nbytes) and c.trans == (trans == "true")]
    if not found:
        raise LayoutError(f"tilus native reference {ref!r}: Tilus has no such {kind} config")
    return getattr(found[0], f"{kind}_layout")


def _wgmma(ref: str, rest: str):
    from tilus.ir.layout.inference.inference_rules.wgmma import generate_wgmma_register_layout
    parts = rest.split(",")
    if len(parts) != 5 or not all(p.strip().isdigit() for p in parts):
        raise LayoutError(f"tilus native reference {ref!r}: write wgmma:M,N,INST_M,INST_N,INST_K")
    return generate_wgmma_register_layout(*(int(p) for p in parts))


def _tcgen05_ldst(ref: str, rest: str):
    from tilus.hidet.ir.primitives.cuda.tcgen05 import Tcgen05LoadStoreShapeKind as Kind
    from tilus.ir.layout.cuda.tcgen05.ldst import get_ldst_layout
    kinds = {k.value.lstrip("."): k for k in Kind}
    if rest not in kinds:
        raise LayoutError(f"tilus native reference {ref!r}: Tilus's tcgen05 ld/st shapes are {', '.join(kinds)}")
    return get_ldst_layout(kinds[rest])


def instruction_layout(ref: str) -> Layout:
    """The canonical form of the layout ``ref`` names (see the module docstring).

    Raises :class:`UnsupportedError` when tilus (or the module) is not installed,
    :class:`LayoutError` for a bad reference, :class:`NativeError` when tilus itself fails."""
    kind, _, rest = ref.partition(":")
    build = {"mma_dot": lambda: _mma_dot(ref, rest), "ldmatrix": lambda: _matrix(ref, "ldmatrix", rest),
             "stmatrix": lambda: _matrix(ref, "stmatrix", rest), "wgmma": lambda: _wgmma(ref, rest),
             "tcgen05_ldst": lambda: _tcgen05_ldst(ref, rest)}.get(kind)
    if build is None:
        raise LayoutError(f"unknown tilus native reference {ref!r} ({', '.join(k + ':' for k in KINDS)})")
    try:
        import_tilus()      # with or without torch (see .package)
        lay = build()
    except ImportError as e:
        raise UnsupportedError(f"tilus is not installed (or moved its instruction modules): {e}") from None
    except LayoutError:
        raise
    except Exception as e:  # tilus's own assertion errors
        raise NativeError(f"tilus failed on {ref!r}: {type(e).__name__}: {e}") from None
    from .oracle import register_to_layout
    return register_to_layout(lay, name=f"tilus-native:{ref}")
