"""Translation validation of one conversion kernel: run its PTX with tagged input and compare.

The kernel is :mod:`layoutverify.adapters.triton.compile_worker`'s: it loads the tile (element
``i`` of the row-major tile at byte ``i * element_bytes`` of the input) in layout ``A``, converts
it to ``B``, passes every 32-bit word of ``B``'s registers through an observed ``mov`` (register
order, ``4 / element_bytes`` registers a word, the first in the low bytes) and stores the tile.

:func:`check_conversion` says, for every hardware location ``(register, lane, warp)`` of ``B``,
whether the register holds exactly the data bytes of the element ``B`` puts there, and whether
every element reached its place in the output.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from layoutverify.core.layout import Layout

from .machine import Machine, SimError, Traffic
from .parser import parse_ptx
from .state import TAG0, describe_byte


@dataclass
class ConversionRun:
    ok: bool
    mismatches: list = field(default_factory=list)       # [{location, expected, got}]
    n_mismatches: int = 0
    locations: int = 0
    output_ok: bool = True
    output_errors: list = field(default_factory=list)
    traffic: Traffic | None = None
    instructions: int = 0
    error: str | None = None

    def to_json(self) -> dict:
        return {"ok": self.ok, "n_mismatches": self.n_mismatches, "mismatches": self.mismatches[:10],
                "locations": self.locations, "output_ok": self.output_ok, "output_errors": self.output_errors[:10],
                "traffic": self.traffic.to_json() if self.traffic else None, "instructions": self.instructions,
                "error": self.error}


def _expected_elements(b: Layout) -> np.ndarray:
    """``grid[thread, register]`` = flat row-major element ``B`` puts there (threads ``lane + 32*warp``)."""
    hw = b.hardware_indices()
    names = b.in_names
    col = {n: (hw[:, names.index(n)] if n in names else np.zeros(len(hw), np.int64))
           for n in ("register", "lane", "warp", "block")}
    if (col["block"] != 0).any():
        raise SimError("the conversion kernel runs one CTA; B has several blocks")
    flat = np.ravel_multi_index(tuple(b.table().T) if b.table().ndim == 2 else (b.table(),), b.out_sizes)
    thread = col["lane"] + b.in_size("lane") * col["warp"]
    grid = np.full((int(thread.max()) + 1, b.in_size("register")), -1, dtype=np.int64)
    grid[thread, col["register"]] = flat
    return grid


def run_conversion(ptx: str, element_bytes: int, elements: int, threads: int | None = None) -> Machine:
    """Execute the kernel; returns the machine after the run (observed words, stores, traffic)."""
    prog = parse_ptx(ptx)
    m = Machine(prog, threads=threads, element_bytes=element_bytes, input_elements=elements)
    m.run()
    return m


def check_conversion(ptx: str, b: Layout, element_bytes: int, *, max_report: int = 20) -> ConversionRun:
    """Run ``ptx`` (the conversion kernel to layout ``b``) and check every register of every thread."""
    n_el = b.out_size()
    grid = _expected_elements(b)
    threads = grid.shape[0]
    try:
        m = run_conversion(ptx, element_bytes, n_el, threads=threads)
    except SimError as e:
        return ConversionRun(ok=False, error=str(e))
    nreg = grid.shape[1]
    per_word = max(1, 4 // element_bytes)
    got = np.full((threads, nreg, element_bytes), -1, dtype=np.int64)
    words = m.observed
    if len(words) * per_word < nreg:
        return ConversionRun(ok=False, error=f"observed {len(words)} words, B has {nreg} registers "
                                              f"({per_word} a word)", traffic=m.traffic)
    for k, word in enumerate(words[: -(-nreg // per_word)]):
        for j in range(per_word):
            r = k * per_word + j
            if r < nreg:
                got[:, r, :] = word[:, j * element_bytes:(j + 1) * element_bytes]
    want = TAG0 + 8 * grid[:, :, None] + np.arange(element_bytes)[None, None, :]
    bad = np.argwhere((got != want).any(axis=2))
    mismatches = []
    for t, r in bad[:max_report]:
        t, r = int(t), int(r)
        g = got[t, r]
        if (g >= TAG0).all() and len({(int(x) - TAG0) // 8 for x in g}) == 1:
            e = (int(g[0]) - TAG0) // 8
            got_txt = list(int(c) for c in np.unravel_index(e, b.out_sizes))
        else:
            got_txt = [describe_byte(int(x)) for x in g]
        mismatches.append({"location": {"register": r, "lane": t % 32, "warp": t // 32},
                           "expected": [int(c) for c in np.unravel_index(int(grid[t, r]), b.out_sizes)],
                           "got": got_txt})
    # the stored tile: byte o of the output must be byte o of the input
    out_errors = []
    stores = m.glob.stores.get(1, {})
    for o in range(n_el * element_bytes):
        v = stores.get(o)
        want_b = TAG0 + 8 * (o // element_bytes) + o % element_bytes
        if v is None or v[0] != want_b:
            out_errors.append({"element": [int(c) for c in np.unravel_index(o // element_bytes, b.out_sizes)],
                               "byte": o % element_bytes,
                               "got": "nothing" if v is None else describe_byte(v[0]),
                               "thread": None if v is None else v[1]})
            if len(out_errors) >= max_report:
                break
    if m.glob.conflicts:
        out_errors.append({"conflicting_stores": len(m.glob.conflicts)})
    ok = not len(bad) and not out_errors
    return ConversionRun(ok=ok, mismatches=mismatches, n_mismatches=int(len(bad)), locations=threads * nreg,
                         output_ok=not out_errors, output_errors=out_errors, traffic=m.traffic,
                         instructions=m.traffic.instructions)
