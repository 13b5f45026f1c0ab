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
    """The outcome of one conversion kernel's run: whether every location of ``B`` holds its
    element, the mismatches (the first ten kept in JSON), the output check, traffic and errors."""
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
        """The run as a JSON object (at most ten mismatches and ten output errors)."""
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


def _observed_registers(grid: np.ndarray, n_observed: int) -> tuple[list | None, dict]:
    """``(the registers of B in the order the kernel observes them, {register: its replicas})``.

    A *replica* is a register that holds, thread by thread, the elements of an earlier register
    (B's register bases are zero or dependent). When Triton keeps them, every register is
    observed; when it computes elementwise ops once per distinct register (the first of each set
    of replicas, in register order) and hands the result to the replicas, only those are
    observed, and each replica is checked with the value its first register received. ``None``
    when neither count matches."""
    nreg = grid.shape[1]
    first: dict = {}
    replicas: dict = {}
    for r in range(nreg):
        rep = first.setdefault(grid[:, r].tobytes(), r)
        replicas.setdefault(rep, []).append(r)
    if n_observed >= nreg:
        return list(range(nreg)), {r: [r] for r in range(nreg)}
    if n_observed >= len(replicas):
        return sorted(replicas), replicas
    return None, replicas


def run_conversion(ptx: str, element_bytes: int, elements: int, threads: int | None = None) -> Machine:
    """Execute the kernel; returns the machine after the run (observed words, stores, traffic)."""
    prog = parse_ptx(ptx)
    m = Machine(prog, threads=threads, element_bytes=element_bytes, input_elements=elements)
    m.run()
    return m


def check_conversion(ptx: str, b: Layout, element_bytes: int, *, max_report: int = 20,
                     check_output: bool = True, up_to_register_order: bool = False) -> ConversionRun:
    """Run ``ptx`` (the conversion kernel to layout ``b``) and check every register of every thread
    (and, with ``check_output``, the stored tile). With ``up_to_register_order`` each thread must
    hold the elements ``B`` gives it in any register order (for compilers whose register numbering
    of ``B`` is another convention); a wrong register is then reported with an element the thread
    misses."""
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
    observed, replicas = _observed_registers(grid, len(words) * per_word)
    if observed is None:
        return ConversionRun(ok=False, error=f"observed {len(words)} words, B has {nreg} registers "
                                              f"({len(replicas)} distinct; {per_word} a word)", traffic=m.traffic)
    for k, word in enumerate(words[: -(-len(observed) // per_word)]):
        for j in range(per_word):
            if k * per_word + j < len(observed):
                r = observed[k * per_word + j]
                for copy in replicas[r]:  # a replica holds what its first register holds
                    got[:, copy, :] = word[:, j * element_bytes:(j + 1) * element_bytes]
    want = TAG0 + 8 * grid[:, :, None] + np.arange(element_bytes)[None, None, :]
    expected = grid.copy()
    if up_to_register_order:
        bad_mask = np.zeros((threads, nreg), dtype=bool)
        for t in range(threads):
            held, owed = [tuple(x) for x in got[t].tolist()], [tuple(x) for x in want[t].tolist()]
            if sorted(held) == sorted(owed):
                continue
            missing = [int(e) for e, w in zip(grid[t], owed) if w not in held]
            wrong = [w not in owed for w in held]
            bad_mask[t] = wrong if any(wrong) else True
            for r, e in zip(np.nonzero(bad_mask[t])[0], missing + [int(grid[t, 0])] * nreg):
                expected[t, r] = e
    else:
        bad_mask = (got != want).any(axis=2)
    bad = np.argwhere(bad_mask)
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
                           "expected": [int(c) for c in np.unravel_index(int(expected[t, r]), b.out_sizes)],
                           "got": got_txt})
    # the stored tile: byte o of the output must be byte o of the input
    out_errors = []
    stores = m.glob.stores.get(1, {})
    for o in range(n_el * element_bytes if check_output else 0):
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
