"""Symbolic check of F2-linearity for layouts too large to tabulate.

A layout with power-of-two sizes is F2-linear iff it equals the XOR of its candidate bases
``L(2**i)`` at every hardware location. Over a table that is one numpy comparison
(:class:`~layoutverify.core.layout.Layout` does it); past the table limit this module asks z3 to refute
``exists x: L(x) != XOR_i x_i * L(2**i)``. A timeout counts as *not proven linear*, so the layout
is then treated by the general (non-F2) path, which stays sound.
"""
from __future__ import annotations

from layoutverify.core import expr as E


def prove_f2_linear(layout, bases, timeout_ms: int = 10_000) -> bool:
    import z3

    bounds = {n: s - 1 for n, s in layout.in_dims}
    cand = max((max(v) if v else 0) for vs in bases.values() for v in vs) if bases else 0
    width = E.bit_width(layout.exprs, bounds, extra=max(cand, max(layout.out_sizes)))
    env = {n: z3.BitVec(n, width) for n in layout.in_names}
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    for n, size in layout.in_dims:
        s.add(z3.ULT(env[n], size))
    diffs = []
    for d, e in enumerate(layout.exprs):
        lhs = E.to_z3(e, env, width)
        rhs = z3.BitVecVal(0, width)
        for n in layout.in_names:
            for b, v in enumerate(bases[n]):
                if v[d]:
                    bit = z3.Extract(b, b, env[n])
                    rhs = rhs ^ z3.If(bit == 1, z3.BitVecVal(v[d], width), z3.BitVecVal(0, width))
        diffs.append(lhs != rhs)
    s.add(z3.Or(*diffs) if diffs else z3.BoolVal(False))
    return s.check() == z3.unsat
