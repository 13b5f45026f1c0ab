"""CUTLASS's own MMA/copy atom layouts, compiled from its C++ headers (the native CuTe answer).

Our catalogue (``atoms.toml``) transcribes CUTLASS's ``MMA_Traits<...>`` / ``Copy_Traits<...>``. This
module asks the headers themselves: one generated program prints, for every atom of the catalogue,
``ThrID`` and each operand's TV layout (``ALayout``/``BLayout``/``CLayout``, ``SrcLayout``/``DstLayout``),
compiled once with g++ against the nvidia-cutlass wheel's headers (:mod:`.cpp`). The printed layouts
are read back as literal CuTe layouts and turned into atoms, which then go through the same
TV -> canonical conversion as ours, so a difference shows where our transcription (or CUTLASS) is off.

The program's output is cached beside its binary (``traits.json``): after the first compile (about a
minute), asking costs a file read.
"""
from __future__ import annotations

import json
from functools import lru_cache

from layoutverify.core.errors import LayoutError, UnsupportedError

from . import cpp
from .atoms import CopyAtom, MmaAtom, copy_atoms, mma_atoms
from .literal import evaluate_literal

HEADERS = r"""
#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm70.hpp>
#include <cute/atom/mma_traits_sm75.hpp>
#include <cute/atom/mma_traits_sm80.hpp>
#include <cute/atom/mma_traits_sm90.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/atom/copy_traits_sm75.hpp>
#include <cute/atom/copy_traits_sm90.hpp>
#include <cute/atom/mma_atom.hpp>
"""


def cpp_mma_type(name: str) -> str:
    """The C++ type of a catalogue MMA atom (GMMA float atoms are templates on the operand majors)."""
    if name.startswith("SM90_64x"):
        if "_S32" in name:            # integer GMMA ops are plain structs
            return name
        return f"{name}<>" if name.endswith("_TN") else f"{name}<GMMA::Major::K,GMMA::Major::K>"
    return name


def _cases() -> list[tuple[str, str]]:
    out = []
    for name, atom in mma_atoms().items():
        t = f"MMA_Traits<{cpp_mma_type(name)}>"
        out.append((f"mma|{name}|ThrID", f"typename {t}::ThrID{{}}"))
        for op in atom.operands():
            out.append((f"mma|{name}|{op}", f"typename {t}::{op}Layout{{}}"))
    for name in copy_atoms():
        t = f"Copy_Traits<{name}>"
        out.append((f"copy|{name}|ThrID", f"typename {t}::ThrID{{}}"))
        for op in ("Src", "Dst"):
            out.append((f"copy|{name}|{op}", f"typename {t}::{op}Layout{{}}"))
    return out


@lru_cache(maxsize=1)
def printed_traits() -> dict[str, str]:
    """``"mma|NAME|A"`` (``ThrID``, ``A``/``B``/``C``; copy: ``Src``/``Dst``) -> CuTe's print of the
    layout, from the compiled headers. Raises :class:`UnsupportedError` without a toolchain."""
    tc = cpp.toolchain()
    if isinstance(tc, str):
        raise UnsupportedError(f"native CuTe atoms need the CUTLASS C++ headers compiled: {tc}")
    source = cpp.program(_cases(), extra_headers=HEADERS)
    exe = cpp.build({"traits": source}, tc)["traits"]
    cache = exe.with_name("traits.json")
    if cache.exists():
        try:
            return json.loads(cache.read_text())
        except (OSError, ValueError):
            pass
    out = {cid: printed for cid, (printed, _) in cpp.run(exe).items()}
    tmp = cache.with_suffix(f".tmp{id(out)}")
    tmp.write_text(json.dumps(out))
    tmp.replace(cache)
    return out


def _layout(key: str):
    table = printed_traits()
    if key not in table:
        raise LayoutError(f"CUTLASS printed nothing for {key}")
    return evaluate_literal(cpp.plain(table[key]))


def mma_atom(name: str) -> MmaAtom:
    """The MMA atom ``name`` with CUTLASS's compiled ``ThrID`` and operand layouts (tile shape and
    PTX instruction from our catalogue)."""
    ours = mma_atoms().get(name)
    if ours is None:
        raise UnsupportedError(f"{name} is not in the atom catalogue")
    ops = {op: _layout(f"mma|{name}|{op}") for op in ours.operands()}
    return MmaAtom(name=name, shape_mnk=ours.shape_mnk, thr_id=_layout(f"mma|{name}|ThrID"),
                   A=ops.get("A"), B=ops.get("B"), C=ops["C"], ptx=ours.ptx,
                   source="CUTLASS C++ MMA_Traits (compiled)")


def copy_atom(name: str) -> CopyAtom:
    """The copy atom ``name`` with CUTLASS's compiled ``ThrID``, ``SrcLayout`` and ``DstLayout``."""
    ours = copy_atoms().get(name)
    if ours is None:
        raise UnsupportedError(f"{name} is not in the atom catalogue")
    return CopyAtom(name=name, thr_id=_layout(f"copy|{name}|ThrID"), src=_layout(f"copy|{name}|Src"),
                    dst=_layout(f"copy|{name}|Dst"), registers=ours.registers, ptx=ours.ptx,
                    source="CUTLASS C++ Copy_Traits (compiled)")
