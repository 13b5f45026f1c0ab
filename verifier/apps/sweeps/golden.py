"""A fixed, deterministic sweep of Triton encodings x shapes, for golden files.

The sweep is a regression net for the compiler: ``layoutverify snapshot --sweep triton`` under
two Triton versions (or before/after a compiler change), then ``layoutverify diff``. Names are
stable (they spell the parameters), so a diff lines up layouts by name.
"""
from __future__ import annotations

import itertools

from layoutverify.apps.snapshot import Entry


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
    for wpc in [(4, 1), (8, 1)]:
        for n, kw in ((64, 2), (128, 2), (64, 4)):
            v3 = _mma(3, wpc, (16, n, 16 * kw // 2))
            out.append(Entry(f"dot0-k{kw}-mma3-wpc{wpc[0]}x{wpc[1]}-n{n}-{64 * wpc[0]}x64",
                             f"triton:#ttg.dot_op<{{opIdx = 0, parent = {v3}, kWidth = {kw}}}>", (64 * wpc[0], 64)))
    for dim in (0, 1):
        parent = _blocked((1, 4), (4, 8), (4, 1), (1, 0))
        out.append(Entry(f"slice{dim}-blocked-64", f"triton:#ttg.slice<{{dim = {dim}, parent = {parent}}}>", (64,)))
        mma = _mma(2, (2, 2), (16, 8))
        out.append(Entry(f"slice{dim}-mma2-64", f"triton:#ttg.slice<{{dim = {dim}, parent = {mma}}}>", (64,)))
    out.extend(_amd_sweep())
    for vec, per, mx, order in [(8, 1, 8, (1, 0)), (4, 2, 4, (1, 0)), (8, 1, 8, (0, 1)), (1, 1, 1, (1, 0))]:
        out.append(Entry(f"swizzled-v{vec}p{per}m{mx}-o{order[0]}{order[1]}-64x64",
                         f"triton:#ttg.swizzled_shared<{{vec = {vec}, perPhase = {per}, maxPhase = {mx}, "
                         f"order = {list(order)}}}>", (64, 64)))
    for sw, tr, bits in [(128, "false", 16), (64, "false", 16), (32, "true", 16), (64, "false", 8)]:
        out.append(Entry(f"nvmma-sw{sw}-t{tr[0]}-b{bits}-64x64",
                         f"triton:#ttg.nvmma_shared<{{swizzlingByteWidth = {sw}, transposed = {tr}, "
                         f"elementBitWidth = {bits}}}>", (64, 64)))
    return out[:limit] if limit else out


def _amd_sweep() -> list[Entry]:
    """CDNA MFMA (wave64) and RDNA WMMA (wave32) accumulators and dot operands."""
    out: list[Entry] = []
    for version, instr, kws in [(3, (32, 32, 8), (4,)), (3, (16, 16, 16), (4,)), (4, (32, 32, 16), (8,)),
                                (4, (16, 16, 32), (8,))]:
        for wpc in [(1, 1), (2, 2), (4, 1)]:
            for transposed in ("false", "true"):
                mfma = (f"#ttg.amd_mfma<{{version = {version}, warpsPerCTA = {list(wpc)}, "
                        f"instrShape = {list(instr)}, isTransposed = {transposed}}}>")
                tag = f"mfma{version}-{instr[0]}x{instr[1]}x{instr[2]}-wpc{wpc[0]}x{wpc[1]}-t{transposed[0]}"
                out.append(Entry(f"{tag}-64x64", "triton:" + mfma, (64, 64)))
                if transposed == "true":
                    continue
                for op in (0, 1):
                    for kw in kws:
                        out.append(Entry(f"dot{op}-k{kw}-{tag}-64x64",
                                         f"triton:#ttg.dot_op<{{opIdx = {op}, parent = {mfma}, kWidth = {kw}}}>",
                                         (64, 64)))
    for version, kw in [(1, 16), (2, 8)]:
        wmma = (f"#ttg.amd_wmma<{{version = {version}, isTranspose = false, ctaLayout = {{warp = [[0, 1]]}}, "
                f"instrShape = [16, 16, 16]}}>")
        out.append(Entry(f"wmma{version}-w2-32x32", "triton:" + wmma, (32, 32)))
        for op in (0, 1):
            out.append(Entry(f"dot{op}-k{kw}-wmma{version}-w2-32x32",
                             f"triton:#ttg.dot_op<{{opIdx = {op}, parent = {wmma}, kWidth = {kw}}}>", (32, 32)))
    return out
