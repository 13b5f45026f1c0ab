"""The catalogue of CuTe MMA and copy atoms, read from ``atoms.toml`` (data, not code).

An :class:`MmaAtom` holds CUTLASS's ``MMA_Traits``: ``Shape_MNK``, ``ThrID`` and the A/B/C TV
layouts ``(thread, value) -> column-major tile index`` (A: M x K, B: N x K, C: M x N). A
:class:`CopyAtom` holds ``Copy_Traits``: ``ThrID`` and the Src/Dst TV layouts ``(thread, value) ->
bit``. GMMA (SM90 warpgroup) atoms are expanded from families over N; ``_SS`` atoms read A and B
from shared-memory descriptors, so only their C is a register layout, ``_RS`` atoms also hold A in
registers. The GMMA shared-memory layout atoms ``GMMA::Layout_{K,MN}_{INTER,SW32,SW64,SW128}_Atom<T>``
are ``upcast<sizeof_bits<T>>`` of their bit-level definitions.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from layoutverify.core.errors import LayoutError, UnsupportedError

from .algebra import upcast
from .layout import CuteLayout
from .literal import evaluate_literal
from .swizzle import ComposedLayout

CATALOGUE = Path(__file__).with_name("atoms.toml")
OPERANDS = ("A", "B", "C")


def _load_toml() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore
        except ModuleNotFoundError:
            raise LayoutError("reading the CuTe atom catalogue needs Python 3.11 (tomllib) or the tomli package") from None
    with open(CATALOGUE, "rb") as f:
        return tomllib.load(f)


@dataclass(frozen=True)
class MmaAtom:
    """A CuTe MMA atom (``MMA_Traits``): its ``(M, N, K)``, the thread id layout ``thr_id`` and each
    operand's thread/value layout (``(thread, value) -> (m, k)`` etc., column-major tile; ``None``
    for an operand read from shared memory through a descriptor)."""
    name: str
    shape_mnk: tuple[int, int, int]
    thr_id: CuteLayout
    A: CuteLayout | None
    B: CuteLayout | None
    C: CuteLayout
    ptx: str
    source: str = ""

    def tv(self, operand: str) -> CuteLayout:
        """The thread/value layout of operand ``A``, ``B`` or ``C``; an operand that is not held in
        registers is an :class:`UnsupportedError`."""
        lay = getattr(self, operand)
        if lay is None:
            raise UnsupportedError(f"{self.name}: operand {operand} is read from shared memory through a GMMA "
                                   f"descriptor, not held in registers; only "
                                   f"{', '.join(o for o in OPERANDS if getattr(self, o) is not None)} are register layouts")
        return lay

    def tile(self, operand: str) -> tuple[int, int]:
        """CuTe's tile of the operand, first dim fastest: A (M, K), B (N, K), C (M, N)."""
        m, n, k = self.shape_mnk
        return {"A": (m, k), "B": (n, k), "C": (m, n)}[operand]

    def operands(self) -> list[str]:
        """The operands held in registers (of ``A``, ``B``, ``C``)."""
        return [o for o in OPERANDS if getattr(self, o) is not None]


@dataclass(frozen=True)
class CopyAtom:
    """A CuTe copy atom (``Copy_Traits``): the thread id layout and the source and destination
    thread/value layouts (``(thread, value) -> bit offset``); ``registers`` names the side held in
    registers."""
    name: str
    thr_id: CuteLayout
    src: CuteLayout
    dst: CuteLayout
    registers: str          # "src" or "dst": the side held in registers
    ptx: str
    source: str = ""

    def tv(self, operand: str) -> CuteLayout:
        """The thread/value layout of side ``Src`` or ``Dst``."""
        return {"Src": self.src, "Dst": self.dst}[operand]


def _layout(text: str, named: dict) -> CuteLayout | ComposedLayout:
    if text.startswith("@"):
        key = text[1:]
        if key not in named:
            raise LayoutError(f"atoms.toml: unknown layout alias {text}")
        text = named[key]
    try:
        return evaluate_literal(text)
    except LayoutError as e:
        raise LayoutError(f"atoms.toml: {text!r} is not a layout: {e}") from None


def _resolve(table: dict, name: str, seen=()) -> dict:
    entry = dict(table[name])
    like = entry.pop("like", None)
    if like is None:
        return entry
    if like in seen or like not in table:
        raise LayoutError(f"atoms.toml: bad 'like' chain at {name}")
    base = _resolve(table, like, seen + (name,))
    base.update(entry)
    return base


@lru_cache(maxsize=None)
def _catalogue():
    data = _load_toml()
    named = data.get("layouts", {})
    mma: dict[str, MmaAtom] = {}
    for name in data.get("mma", {}):
        e = _resolve(data["mma"], name)
        mma[name] = MmaAtom(
            name=name, shape_mnk=tuple(e["shape_mnk"]), thr_id=_layout(e["thr_id"], named),
            A=_layout(e["A"], named), B=_layout(e["B"], named), C=_layout(e["C"], named),
            ptx=e["ptx"], source=e.get("source", ""))
    for fam in data.get("gmma", {}):
        e = _resolve(data["gmma"], fam)
        for n in e["n"]:
            for ab in ("SS", "RS"):
                def sub(s: str) -> str:
                    return s.replace("{N8}", str(n // 8)).replace("{N}", str(n)).replace("{AB}", ab)
                name = sub(e["name"])
                mma[name] = MmaAtom(
                    name=name, shape_mnk=(64, n, e["k"]), thr_id=_layout(e["thr_id"], named),
                    A=_layout(e["A_RS"], named) if ab == "RS" else None, B=None,
                    C=_layout(sub(e["C"]), named), ptx=sub(e["ptx"]), source=e.get("source", ""))
    copy: dict[str, CopyAtom] = {}
    raw_copy = data.get("copy", {})
    for name, e in raw_copy.items():
        if "swap_of" in e:
            b = raw_copy[e["swap_of"]]
            thr, src, dst = b["thr_id"], b["dst"], b["src"]
        else:
            thr, src, dst = e["thr_id"], e["src"], e["dst"]
        copy[name] = CopyAtom(name=name, thr_id=_layout(thr, named), src=_layout(src, named),
                              dst=_layout(dst, named), registers=e["registers"], ptx=e["ptx"],
                              source=e.get("source", ""))
    smem = {k: v for k, v in data.get("smem", {}).items()}
    types = {k: int(v) for k, v in data.get("types", {}).items()}
    return mma, copy, smem, types


def mma_atoms() -> dict[str, MmaAtom]:
    return _catalogue()[0]


def copy_atoms() -> dict[str, CopyAtom]:
    return _catalogue()[1]


def smem_atom_names() -> list[str]:
    return sorted(_catalogue()[2])


def type_bits(name: str) -> int:
    """``sizeof_bits`` of a CuTe element type name (``half_t``, ``cutlass::bfloat16_t``, ``float``)."""
    types = _catalogue()[3]
    short = name.split("::")[-1]
    if short not in types:
        raise LayoutError(f"unknown element type {name!r}; known: {', '.join(sorted(types))}")
    return types[short]


def smem_atom(name: str, bits: int) -> ComposedLayout:
    """``GMMA::Layout_..._Atom<T>`` for a ``bits``-bit element type: ``upcast<bits>`` of the bit layout."""
    table = _catalogue()[2]
    if name not in table:
        raise LayoutError(f"unknown GMMA shared-memory layout atom {name!r}; known: {', '.join(sorted(table))}")
    base = _layout(table[name], {})
    return upcast(base, bits)


def find_atom(name: str):
    """The MMA or copy atom called ``name`` (CUTLASS's spelling), or None."""
    short = name.split("::")[-1]
    mma, copy = mma_atoms(), copy_atoms()
    return mma.get(short) or copy.get(short)
