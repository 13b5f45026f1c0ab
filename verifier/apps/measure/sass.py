"""Instruction counts of the timed loop, read from its SASS (``nvdisasm -c`` of the cubin that
:mod:`.loop_worker` compiles on the CPU).

The loop is the kernel's largest backward branch: the instructions from the branch target's label
to the ``BRA`` that jumps back. Counts are per warp and per iteration (every warp of the CTA runs the
same loop), by class:

* ``shared_stores`` / ``shared_loads``: ``STS``, ``STSM`` / ``LDS``, ``LDSM``;
* ``shuffles``: ``SHFL``; ``barriers``: ``BAR``;
* ``local``: ``LDL`` / ``STL`` (register spills: ptxas ran out of registers);
* ``alu``: every other instruction except the loop's own branch (the consumer's ``LOP3``, data
  moves such as ``PRMT``/``MOV``/``SEL``, address arithmetic, the loop counter).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

_LABEL = re.compile(r"^(\.L_x_\d+):")
_INSTR = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P[0-9T]\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)\b(.*)$")
_BRANCH = re.compile(r"`\((\.L_x_\d+)\)")

CLASSES = {"STS": "shared_stores", "STSM": "shared_stores", "LDS": "shared_loads", "LDSM": "shared_loads",
           "SHFL": "shuffles", "BAR": "barriers", "LDL": "local", "STL": "local"}


@dataclass
class LoopCounts:
    """Warp-level instructions of one loop iteration, by class (see the module docstring)."""
    shared_stores: float = 0
    shared_loads: float = 0
    shuffles: float = 0
    barriers: float = 0
    local: float = 0
    alu: float = 0
    total: float = 0
    unroll: int = 1

    def to_json(self) -> dict:
        """The counts as JSON."""
        return asdict(self)


def _instructions(sass: str):
    """``(label or None, opcode, rest)`` per line: a label line gives ``(label, None, "")``."""
    for line in sass.splitlines():
        m = _LABEL.match(line)
        if m:
            yield m.group(1), None, ""
            continue
        m = _INSTR.match(line)
        if m:
            yield None, m.group(1), m.group(3)


def loops(sass: str) -> list[list[str]]:
    """Opcodes of every loop (a backward ``BRA`` and the instructions from its target label), in
    the kernel's order."""
    items = list(_instructions(sass))
    where: dict[str, int] = {}
    out = []
    for i, (label, op, rest) in enumerate(items):
        if label:
            where[label] = i
        elif op == "BRA":
            m = _BRANCH.search(rest)
            if m and m.group(1) in where:
                out.append([o for lab, o, _ in items[where[m.group(1)]:i] if o])
    return out


def _count(body: list[str]) -> LoopCounts:
    c = LoopCounts()
    for op in body:
        c.total += 1
        cls = CLASSES.get(op)
        if cls:
            setattr(c, cls, getattr(c, cls) + 1)
        else:
            c.alu += 1
    return c


def loop_counts(sass: str) -> LoopCounts:
    """Counts of one iteration of the timed loop. The compiler may unroll it: then the largest loop
    runs ``u`` iterations per trip and a remainder loop runs one; ``u`` is how many times the
    remainder loop's most frequent memory, shuffle or barrier opcode (else its most frequent opcode) occurs in the largest loop per occurrence in the remainder
    (rounded), and the largest loop's counts are divided by it (the steady state)."""
    bodies = [b for b in loops(sass) if b]
    if not bodies:
        return LoopCounts()
    big = max(bodies, key=len)
    small = min(bodies, key=len)
    c = _count(big)
    work = [o for o in small if o in CLASSES] or small
    op = max(set(work), key=work.count)
    u = max(1, round(big.count(op) / small.count(op)))
    c.unroll = u
    if u > 1:
        for k in ("shared_stores", "shared_loads", "shuffles", "barriers", "local", "alu", "total"):
            setattr(c, k, getattr(c, k) / u)
    return c


def compile_loops(cases: list[dict], python: str = sys.executable, timeout: float = 1800) -> dict:
    """``{case id: {"sass"} or {"error"}}`` for compile-worker cases, compiled by the Triton of the
    interpreter ``python`` (any release 3.6-3.9) in a subprocess."""
    from layoutverify.adapters import adapter
    import importlib
    worker = importlib.import_module(adapter("triton").__name__ + ".compile_worker")
    proc = subprocess.run([python, str(Path(__file__).with_name("loop_worker.py")), worker.__file__],
                          input="".join(json.dumps(c) + "\n" for c in cases), capture_output=True, text=True,
                          timeout=timeout)
    out = {}
    for line in proc.stdout.splitlines():
        d = json.loads(line)
        out[d.pop("id")] = d
    for c in cases:
        out.setdefault(c["id"], {"error": f"the loop worker stopped: {proc.stderr.strip()[-300:]}"})
    return out
