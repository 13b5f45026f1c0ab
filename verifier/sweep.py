"""A fixed, deterministic sweep of Triton encodings x shapes, for golden files.

The sweep is a regression net for the compiler: ``layoutverify snapshot --sweep triton`` under
two Triton versions (or before/after a compiler change), then ``layoutverify diff``. Names are
stable (they spell the parameters), so a diff lines up layouts by name.
"""
from __future__ import annotations

import itertools

from .snapshot import Entry


def _blocked(spt, tpw, wpc, order):
    return (f"#ttg.blocked<{{sizePerThread = {list(spt)}, threadsPerWarp = {list(tpw)}, "
            f"warpsPerCTA = {list(wpc)}, order = {list(order)}}}>")


def _mma(version, wpc, instr):
    return (f"#ttg.nvidia_mma<{{versionMajor = {version}, versionMinor = 0, warpsPerCTA = {list(wpc)}, "
            f"instrShape = {list(instr)}}}>")


def triton_sweep(limit: int | None = None) -> list[Entry]:
    out: list[Entry] = []
    shapes = [(16, 16), (32, 64), (64, 64), (128, 32)]
    for spt, tpw, wpc, order in itertools.product([(1, 1), (1, 4), (2, 2), (4, 1)], [(8, 4), (4, 8), (1, 32), (32, 1)],
                                                  [(1, 1), (4, 1), (2, 2), (1, 8)], [(1, 0), (0, 1)]):
        for shape in shapes[:2]:
            name = f"blocked-spt{spt[0]}x{spt[1]}-tpw{tpw[0]}x{tpw[1]}-wpc{wpc[0]}x{wpc[1]}-o{order[0]}{order[1]}-{shape[0]}x{shape[1]}"
            out.append(Entry(name, "triton:" + _blocked(spt, tpw, wpc, order), shape))
    for wpc in [(1, 1), (2, 2), (4, 1), (1, 4), (4, 2)]:
        for shape in shapes:
            v2 = _mma(2, wpc, (16, 8))
            out.append(Entry(f"mma2-wpc{wpc[0]}x{wpc[1]}-{shape[0]}x{shape[1]}", "triton:" + v2, shape))
            for op, kw in [(0, 2), (1, 2), (0, 4), (1, 4)]:
                out.append(Entry(f"dot{op}-k{kw}-mma2-wpc{wpc[0]}x{wpc[1]}-{shape[0]}x{shape[1]}",
                                 f"triton:#ttg.dot_op<{{opIdx = {op}, parent = {v2}, kWidth = {kw}}}>", shape))
    for wpc in [(4, 1), (8, 1), (4, 2)]:
        for n in (16, 64, 128):
            shape = (64 * wpc[0], n * wpc[1])
            out.append(Entry(f"mma3-wpc{wpc[0]}x{wpc[1]}-n{n}-{shape[0]}x{shape[1]}",
                             "triton:" + _mma(3, wpc, (16, n, 16)), shape))
    for dim in (0, 1):
        parent = _blocked((1, 4), (4, 8), (4, 1), (1, 0))
        out.append(Entry(f"slice{dim}-blocked-64", f"triton:#ttg.slice<{{dim = {dim}, parent = {parent}}}>", (64,)))
    return out[:limit] if limit else out
