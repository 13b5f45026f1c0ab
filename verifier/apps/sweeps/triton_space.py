"""Triton encoding families for sweeps: every instance is ``(name, text)`` with a stable name
that spells its parameters (so results line up across runs and Triton versions).

Families and their default parameter grids (a spec's ``[triton.<family>]`` table overrides any
list):

``blocked``     ``size_per_thread`` x ``threads_per_warp`` (lanes = the warp size) x every 2-D
                split of ``num_warps`` over ``warpsPerCTA`` x ``order``
``nvidia_mma``  v2 (``instrShape = [16, 8]``) over every warp split; v3 (``[16, n, 16]`` for
                ``n`` in ``wgmma_n``, warps ``[num_warps, 1]``) where ``num_warps`` is a multiple of 4
``dot_op``      ``opIdx`` 0/1 x ``k_width`` over mma v2 parents (every warp split)
``slice``       ``dim`` 0/1/2 of 3-D blocked parents (for 2-D tensors) or 0/1 of 2-D parents (1-D)
``linear``      ``linear_count`` random surjective linear layouts (seeded by shape and warps)

Only 2-D (and, for ``slice``/``blocked``, 1-D) tensors; 32 lanes (NVIDIA encodings).
"""
from __future__ import annotations

import itertools
import random

DEFAULTS = {
    "blocked": {"size_per_thread": [[1, 1], [1, 2], [1, 4], [1, 8], [2, 2], [4, 1], [2, 4], [4, 4]],
                "threads_per_warp": [[1, 32], [2, 16], [4, 8], [8, 4], [16, 2], [32, 1]],
                "order": [[1, 0], [0, 1]]},
    "nvidia_mma": {"versions": [2, 3], "wgmma_n": [16, 32, 64]},
    "dot_op": {"op_idx": [0, 1], "k_width": [1, 2, 4]},
    "slice": {"dims": [0, 1, 2]},
    "linear": {"linear_count": 8},
}
FAMILIES = tuple(DEFAULTS)


def warp_splits(n: int) -> list[tuple[int, int]]:
    out = []
    a = 1
    while a <= n:
        out.append((a, n // a))
        a *= 2
    return out


def _l(xs) -> str:
    return "[" + ", ".join(str(int(x)) for x in xs) + "]"


_BLOCKED = "#ttg.blocked<{{sizePerThread = {}, threadsPerWarp = {}, warpsPerCTA = {}, order = {}}}>"


def blocked_text(spt, tpw, wpc, order) -> str:
    return _BLOCKED.format(_l(spt), _l(tpw), _l(wpc), _l(order))


def mma_text(version, wpc, instr) -> str:
    return (f"#ttg.nvidia_mma<{{versionMajor = {version}, versionMinor = 0, warpsPerCTA = {_l(wpc)}, "
            f"instrShape = {_l(instr)}}}>")


def _tag(xs) -> str:
    return "x".join(str(int(x)) for x in xs)


def instances(family: str, shape, num_warps: int, params: dict | None = None) -> list[tuple[str, str]]:
    """``[(name, text), ...]`` of ``family`` for a tensor of ``shape`` and ``num_warps`` warps."""
    p = dict(DEFAULTS[family])
    p.update(params or {})
    rank = len(shape)
    out: list[tuple[str, str]] = []
    if family == "blocked":
        if rank == 2:
            # each parameter value spelled once (tag, list), not once per instance
            spell = [[(_tag(v), _l(v)) for v in vs] for vs in (p["size_per_thread"], p["threads_per_warp"],
                                                               warp_splits(num_warps), p["order"])]
            for (ts, ls), (tt, lt), (tw, lw), (to, lo) in itertools.product(*spell):
                out.append((f"blocked-s{ts}-t{tt}-w{tw}-o{to}", _BLOCKED.format(ls, lt, lw, lo)))
        elif rank == 1:
            for spt in sorted({s[-1] for s in p["size_per_thread"]}):
                out.append((f"blocked-s{spt}-w{num_warps}", blocked_text([spt], [32], [num_warps], [0])))
    elif family == "nvidia_mma" and rank == 2:
        if 2 in p["versions"]:
            for wpc in warp_splits(num_warps):
                if shape[0] % 16 == 0 and shape[1] % 8 == 0:
                    out.append((f"mma2-w{_tag(wpc)}", mma_text(2, wpc, (16, 8))))
        if 3 in p["versions"] and num_warps % 4 == 0 and shape[0] >= 16 * num_warps:
            for n in p["wgmma_n"]:
                if shape[1] >= n:
                    out.append((f"mma3-n{n}-w{num_warps}x1", mma_text(3, (num_warps, 1), (16, n, 16))))
    elif family == "dot_op" and rank == 2:
        for wpc in warp_splits(num_warps):
            parent = mma_text(2, wpc, (16, 8))
            for op, kw in itertools.product(p["op_idx"], p["k_width"]):
                out.append((f"dot{op}-k{kw}-mma2-w{_tag(wpc)}",
                            f"#ttg.dot_op<{{opIdx = {op}, parent = {parent}, kWidth = {kw}}}>"))
    elif family == "slice":
        if rank == 2:
            parents = [((1, 1, 2), (2, 4, 4)), ((1, 2, 1), (4, 4, 2)), ((2, 1, 1), (1, 8, 4))]
            for (spt, tpw), wpc in itertools.product(parents, warp_splits(num_warps)[:3]):
                w3 = (1,) + tuple(wpc)
                parent = blocked_text(spt, tpw, w3, (2, 1, 0))
                for d in p["dims"]:
                    if d < 3:
                        out.append((f"slice{d}-s{_tag(spt)}-t{_tag(tpw)}-w{_tag(w3)}",
                                    f"#ttg.slice<{{dim = {d}, parent = {parent}}}>"))
        elif rank == 1:
            for wpc in warp_splits(num_warps):
                parent = blocked_text((1, 4), (4, 8), wpc, (1, 0))
                for d in (0, 1):
                    out.append((f"slice{d}-w{_tag(wpc)}", f"#ttg.slice<{{dim = {d}, parent = {parent}}}>"))
    elif family == "linear" and rank == 2:
        rnd = random.Random(f"linear-{shape}-{num_warps}")
        for i in range(int(p["linear_count"])):
            out.append((f"linear{i}", _random_linear(rnd, shape, num_warps)))
    return out


def _random_linear(rnd, shape, num_warps) -> str:
    """A random surjective F2 layout: the tensor's unit bases shuffled over registers, 5 lane and
    log2(num_warps) warp slots; lane/warp slots beyond the tensor broadcast (zero)."""
    units = [[1 << b if d == k else 0 for k in range(len(shape))]
             for d, s in enumerate(shape) for b in range(s.bit_length() - 1)]
    rnd.shuffle(units)
    nl, nw = 5, num_warps.bit_length() - 1
    lane, warp, reg = units[:nl], units[nl:nl + nw], units[nl + nw:]
    lane += [[0] * len(shape)] * (nl - len(lane))
    warp += [[0] * len(shape)] * (nw - len(warp))

    def b(vs):
        return "[" + ", ".join(_l(v) for v in vs) + "]"

    return f"#ttg.linear<{{register = {b(reg)}, lane = {b(lane)}, warp = {b(warp)}, block = []}}>"
