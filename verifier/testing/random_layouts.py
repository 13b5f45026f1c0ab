"""Seeded random mixed-radix (shape:stride) layouts and their mutants, shared by the tests and
the benchmarks (one generator, so both exercise the same family).

A *mode recipe* is ``(in_dims, shape, modes)`` for :meth:`Layout.from_modes`: hardware dims
with their sizes, a 2-D logical shape, and per hardware dim its modes ``(size, [stride0,
stride1])`` fastest first. Generators take a :class:`random.Random` so that results depend
only on the seed.
"""
from __future__ import annotations

import numpy as np

from layoutverify.core import expr as E
from layoutverify.core.layout import Layout


def _assign(rng, hw: dict, replicate_p: float):
    """Give every mode of size > 1 a logical dim and a mixed-radix place value in it (random
    order within the dim); with probability ``replicate_p``, one mode gets stride 0."""
    allm = [(k, j, s) for k, ms in hw.items() for j, s in enumerate(ms) if s > 1]
    owner = {m: rng.randrange(2) for m in allm}
    if replicate_p and rng.random() < replicate_p and allm:
        owner[rng.choice(allm)] = None
    strides, shape = {}, [1, 1]
    for d in range(2):
        mine = [m for m in allm if owner[m] == d]
        rng.shuffle(mine)
        place = 1
        for m in mine:
            strides[m] = place
            place *= m[2]
        shape[d] = place
    in_dims = [(k, int(np.prod(ms))) for k, ms in hw.items()]
    modes = {k: [(s, [strides[(k, j, s)] if owner.get((k, j, s)) == 0 else 0,
                      strides[(k, j, s)] if owner.get((k, j, s)) == 1 else 0]) if s > 1 else (1, [0, 0])
                 for j, s in enumerate(ms)] for k, ms in hw.items()}
    return in_dims, shape, modes


def random_modes(rng):
    """A random bijective mixed-radix layout: hardware modes of sizes 2, 3, 4, each assigned to
    a logical dim, strides the mixed-radix place values within that dim (random order)."""
    hw = {"register": [rng.choice([2, 3, 4]) for _ in range(rng.randint(1, 2))],
          "lane": rng.choice([[4, 8], [2, 16], [8, 4], [32]]),
          "warp": [rng.choice([1, 2, 3])]}
    return _assign(rng, hw, 0.0)


def modes_recipe(rng, max_locations):
    """A random mixed-radix layout (sizes 2, 3, 4, 5, 6 per mode) onto a 2-D tile, bijective,
    with an occasional stride-0 (replicating) mode, at most ``max_locations`` locations."""
    while True:
        hw = {"register": [rng.choice([1, 2, 3, 4]) for _ in range(2)],
              "lane": rng.choice([[4, 8], [2, 16], [8, 4], [32]]),
              "warp": [rng.choice([1, 2, 3, 4, 6])],
              "block": [rng.choice([1, 1, 2, 3, 5, 8, 16, 32])]}
        n = int(np.prod([np.prod(v) for v in hw.values()]))
        if n <= max_locations:
            break
    return _assign(rng, hw, 0.25)


def mode_mutants(rng, in_dims, shape, modes):
    """Named mutants of a mode recipe: ``(kind, in_dims, modes)`` for swapped strides, swapped
    mode sizes, a replicating (stride-0) mode, an extra replicating warp, reordered registers."""
    out = []
    flat = [(n, j) for n, ms in modes.items() for j, (s, st) in enumerate(ms) if s > 1]
    if len(flat) >= 2:
        (n1, j1), (n2, j2) = rng.sample(flat, 2)
        m = {n: list(ms) for n, ms in modes.items()}
        m[n1][j1], m[n2][j2] = (modes[n1][j1][0], modes[n2][j2][1]), (modes[n2][j2][0], modes[n1][j1][1])
        out.append(("swap_strides", in_dims, m))
    for n, ms in modes.items():
        if len(ms) == 2 and ms[0][0] != ms[1][0]:
            m = {**modes, n: [(ms[1][0], ms[0][1]), (ms[0][0], ms[1][1])]}
            out.append(("mode_size", in_dims, m))
            break
    n, j = rng.choice(flat)
    m = {k: list(v) for k, v in modes.items()}
    m[n][j] = (modes[n][j][0], [0, 0])
    out.append(("replicate", in_dims, m))
    nd = [(k, s * 2 if k == "warp" else s) for k, s in in_dims]
    out.append(("extra_warp", nd, {**modes, "warp": list(modes["warp"]) + [(2, [0, 0])]}))
    regs = modes["register"]
    if len(regs) >= 2 and regs[0][0] != regs[1][0]:
        out.append(("register_permutation", in_dims, {**modes, "register": regs[::-1]}))
    return out


def modes_near_miss(rng, in_dims, shape, modes):
    """One random near miss of a mode recipe: swapped strides, reversed registers or a stride
    set to 0."""
    m = {k: list(v) for k, v in modes.items()}
    flat = [(k, j) for k, ms in m.items() for j, (s, st) in enumerate(ms) if s > 1]
    kind = rng.choice(["swap", "regperm", "zero"])
    if kind == "regperm" and len([x for x in m["register"] if x[0] > 1]) >= 2:
        m["register"] = m["register"][::-1]
    elif kind == "swap" and len(flat) >= 2:
        (k1, j1), (k2, j2) = rng.sample(flat, 2)
        m[k1][j1], m[k2][j2] = (modes[k1][j1][0], modes[k2][j2][1]), (modes[k2][j2][0], modes[k1][j1][1])
    else:
        k, j = rng.choice(flat)
        m[k][j] = (m[k][j][0], [0, 0])
    return m


def in_shape(in_dims, shape, modes) -> bool:
    """Whether a mode layout stays inside its shape (interval bounds are exact for sums of
    digits times strides)."""
    lay = Layout.from_modes(in_dims, shape, modes)
    bounds = {k: s - 1 for k, s in in_dims}
    return all(E.upper_bound(e, bounds) < s for e, s in zip(lay.exprs, shape))


def mixed_radix_expr(in_dims, shape, modes, offset=(0, 0)):
    """The same map with each digit written ``x % (p*s) // p`` (not how from_modes writes it),
    plus ``offset`` (per logical dim)."""
    acc = [E.Const(offset[0]), E.Const(offset[1])]
    for k, ms in modes.items():
        p = 1
        for s, st in ms:
            if s > 1:
                digit = (E.Var(k) % (p * s)) // p
                acc = [x + digit * c if c else x for x, c in zip(acc, st)]
            p *= s
    return Layout(in_dims, [("dim0", shape[0]), ("dim1", shape[1])], acc)


def swizzle_layout(rows: int, cols: int, kind: str, variant: int = 0) -> Layout:
    """A ``rows x cols`` shared-memory layout (hardware dim ``offset``, row-major, ``dim1``
    fastest) whose column is swizzled by the row: ``kind="xor"``: ``col ^ ((row + variant) % 8)``
    (``col ^ (row % 8)`` for variant 0); ``kind="rot"``: ``(col + row + variant) % cols``."""
    off = E.Var("offset")
    r, c = off // cols, off % cols
    if kind == "xor":
        col = c ^ ((r + variant) % 8) if variant else c ^ (r % 8)
    else:
        col = (c + r + variant) % cols
    return Layout([("offset", rows * cols)], [("dim0", rows), ("dim1", cols)], [r, col])
