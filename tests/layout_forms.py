"""One F2 map written in the other forms the canonical core accepts, for equal-pair tests.

Each form must compare ``equal`` to the original while reaching a different code path: the
XOR-of-digits expression is not built from declared bases (F2-linearity must be detected), and
the table form is an explicit ``Lookup`` (never F2-detected, so proofs go through z3/tables).
"""
from __future__ import annotations

from layoutverify import Layout
from layoutverify.core import expr as E


def digits_form(lay: Layout) -> Layout:
    """The map as XORed ``(x // 2**i) % 2 * c`` digits rather than declared bases."""
    acc = [E.Const(0)] * len(lay.out_sizes)
    for n, vecs in lay.f2_bases().items():
        for i, v in enumerate(vecs):
            digit = (E.Var(n) // (1 << i)) % 2
            acc = [x ^ (digit * c) if c else x for x, c in zip(acc, v)]
    return Layout(lay.in_dims, lay.out_dims, acc)


def lookup_form(lay: Layout) -> Layout:
    """The map as an explicit table indexed by the flat hardware index."""
    return Layout.from_table(lay.in_dims, lay.out_dims, lay.table(), detect_f2=False)
