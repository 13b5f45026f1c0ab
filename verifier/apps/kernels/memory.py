"""Global memory of one validation run, shared by the TTIR reference and the PTX machine.

Memory is made of *regions*, each at its own base address ``(r + 1) << 40`` (so an address names
its region and offset, and pointer arithmetic stays concrete). A byte is a code of
:mod:`layoutverify.apps.ptxsim.state`: ``0..255`` concrete, ``UNDEF`` (-1) undefined, or
``TAG0 + 8 * term + k``, byte ``k`` of data term ``term``. A region is

* *symbolic*: byte ``o`` initially reads as byte ``o % size`` of leaf ``o // size`` (a distinct
  symbol per element; ``size`` its element type's bytes);
* *concrete*: given bytes (index tables, pointer arrays that steer control and addresses);
* *scratch*: undefined until written (Triton's global scratch).

Stores overwrite. Every byte written is remembered with who wrote it (for the report), so that
two runs (reference, PTX) can be compared byte for byte afterwards.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from layoutverify.apps.ptxsim.state import TAG0, UNDEF

from .terms import LEAF_BITS, TYPE_BYTES, Terms

REGION_SHIFT = 40
MAX_REGION_BYTES = 1 << 32


class MemoryError_(ValueError):
    """An access outside every region, or past a region's modelled window."""


@dataclass
class RegionState:
    """One region of global memory: its ``kind`` (``symbolic``, ``concrete``, ``scratch``), element
    size, addressable bytes, and per byte its code, whether it was written and by whom."""
    name: str
    kind: str                         # "symbolic", "concrete", "scratch"
    elem_bytes: int = 1
    term_region: int = -1             # the Terms region of a symbolic region
    limit: int = MAX_REGION_BYTES     # bytes addressable
    data: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))   # written/initial codes
    written: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=bool))
    who: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))    # writer of each byte (-1)


class Memory:
    """The global memory of one validation run: regions at base addresses ``(r + 1) << 40``."""

    def __init__(self, terms: Terms):
        self.terms = terms
        self.regions: list[RegionState] = []

    # -- regions -------------------------------------------------------------------------------------
    def base(self, r: int) -> int:
        """The base address of region ``r``: ``(r + 1) << 40``."""
        return (r + 1) << REGION_SHIFT

    def add_symbolic(self, name: str, dtype: str, shape=None, term_region: int | None = None) -> int:
        """A buffer of ``dtype`` symbols (the leaves of ``term_region``, a new one by default);
        returns its base address. Two memories that share term regions read the same symbols."""
        tr = self.terms.region(name, dtype, shape) if term_region is None else term_region
        eb = TYPE_BYTES[dtype]
        self.regions.append(RegionState(name, "symbolic", eb, tr, limit=eb << LEAF_BITS))
        return self.base(len(self.regions) - 1)

    def add_concrete(self, name: str, data: bytes) -> int:
        """A buffer holding the bytes ``data`` (its size is its limit); returns its base address."""
        st = RegionState(name, "concrete", limit=len(data))
        st.data = np.frombuffer(bytes(data), dtype=np.uint8).astype(np.int64)
        st.written = np.zeros(len(data), dtype=bool)
        st.who = np.full(len(data), -1, dtype=np.int64)
        self.regions.append(st)
        return self.base(len(self.regions) - 1)

    def add_scratch(self, name: str, size: int) -> int:
        """A buffer of ``size`` undefined bytes (global scratch); returns its base address."""
        st = RegionState(name, "scratch", limit=max(int(size), 0))
        self.regions.append(st)
        return self.base(len(self.regions) - 1)

    def region_of(self, addr: int) -> tuple[int, int]:
        """``(region, offset)`` of address ``addr``."""
        return (int(addr) >> REGION_SHIFT) - 1, int(addr) & ((1 << REGION_SHIFT) - 1)

    def _split(self, addr: np.ndarray, nbytes: int):
        a = np.asarray(addr).astype(np.uint64)
        reg = (a >> np.uint64(REGION_SHIFT)).astype(np.int64) - 1
        off = (a & np.uint64((1 << REGION_SHIFT) - 1)).astype(np.int64)
        bad = (reg < 0) | (reg >= len(self.regions))
        if bad.any():
            raise MemoryError_(f"global access at address {int(a[bad][0]):#x}, outside every buffer")
        return reg, off

    def _grow(self, st: RegionState, end: int) -> None:
        if end > st.limit:
            raise MemoryError_(f"access to byte {end - 1} of {st.name}, past its modelled size ({st.limit} bytes)")
        if end > st.data.size:
            n = max(end, 2 * st.data.size, 4096)
            n = min(n, st.limit) if st.kind != "concrete" else st.data.size
            data = np.full(n, UNDEF, dtype=np.int64)
            data[:st.data.size] = st.data
            written = np.zeros(n, dtype=bool)
            written[:st.written.size] = st.written
            who = np.full(n, -1, dtype=np.int64)
            who[:st.who.size] = st.who
            st.data, st.written, st.who = data, written, who

    # -- access --------------------------------------------------------------------------------------
    def load(self, addr, nbytes: int) -> np.ndarray:
        """``(len(addr), nbytes)`` byte codes read at ``addr``."""
        reg, off = self._split(addr, nbytes)
        out = np.empty((reg.size, nbytes), dtype=np.int64)
        for r in np.unique(reg):
            rows = reg == r
            st = self.regions[int(r)]
            o = off[rows][:, None] + np.arange(nbytes)[None, :]
            if (o < 0).any() or (o >= st.limit).any():
                raise MemoryError_(f"load of {st.name} at byte {int(o.max())}, past its modelled size "
                                   f"({st.limit} bytes)")
            if st.kind == "symbolic":
                leaf = self.terms.leaf(st.term_region, o // st.elem_bytes)
                codes = TAG0 + 8 * leaf + o % st.elem_bytes
            else:
                codes = np.full(o.shape, UNDEF, dtype=np.int64)
            if st.data.size:
                inside = o < st.data.size
                oi = np.where(inside, o, 0)
                take = inside & (st.written[oi] | (st.kind == "concrete"))
                codes = np.where(take, st.data[oi], codes)
            out[rows] = codes
        return out

    def store(self, addr, codes: np.ndarray, who=None) -> None:
        """Write ``codes`` (n, nbytes) at ``addr``; ``who`` (n, nbytes) says who wrote each byte (an
        int the writer decodes; -1: unknown)."""
        reg, off = self._split(addr, codes.shape[1])
        nbytes = codes.shape[1]
        for r in np.unique(reg):
            rows = np.nonzero(reg == r)[0]
            st = self.regions[int(r)]
            o = off[rows][:, None] + np.arange(nbytes)[None, :]
            end = int(o.max()) + 1
            if (o < 0).any():
                raise MemoryError_(f"store before the start of {st.name}")
            self._grow(st, end)
            st.data[o.reshape(-1)] = codes[rows].reshape(-1)
            st.written[o.reshape(-1)] = True
            st.who[o.reshape(-1)] = -1 if who is None else np.asarray(who)[rows].reshape(-1)

    def written_bytes(self, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Offsets, codes and writers of every byte written to region ``r``."""
        st = self.regions[r]
        if not st.written.size:
            e = np.empty(0, dtype=np.int64)
            return e, e, e
        offs = np.nonzero(st.written)[0]
        return offs, st.data[offs], st.who[offs]
