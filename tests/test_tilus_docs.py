"""The examples of Tilus's register-layout documentation, drawn by us and by tilus.

For each example of the Tilus docs ("Register Layout": ``local(3, 4)``, ``spatial(3, 2)``,
``local(3, 4).spatial(2, 3)``, ``spatial(2, 3).local(3, 4)``, the ``mma.m16n8k8`` C fragment
``repeat(2, 1).spatial(8, 4).repeat(1, 2)``, ``reduce(spatial(3, 4), dims=[0])``, ``local``/
``column_local``/``spatial``/``column_spatial(2, 3)``), the grid our canonical layout renders
(:meth:`layoutverify.core.layout.Layout.render`, cells ``T{thread}:{register}``) must hold, cell by cell,
the same ``(thread, local)`` pairs as the table tilus's own ``visualize_layout`` prints (cells
``t: i`` or ``[t0, t1, ...]: i``), and the header line tilus prints must be our printed form.

The documentation's worked "mapping process" example (shape [4, 6], mode_shape [2, 2, 3, 2],
spatial_modes [0, 2], local_modes [3, 1]) is checked against the formulas the docs derive for it.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

tilus = pytest.importorskip("tilus")

from tilus.ir.layout.ops import register_ops as R  # noqa: E402
from tilus.ir.layout.register_layout import register_layout as t_register_layout, visualize_layout  # noqa: E402

import layoutverify.adapters.tilus as T  # noqa: E402

#: (our text, the same layout built with tilus's functions)
DOC_EXAMPLES = [
    ("local(3, 4)", lambda: R.local(3, 4)),
    ("spatial(3, 2)", lambda: R.spatial(3, 2)),
    ("local(3, 4).spatial(2, 3)", lambda: R.local(3, 4).spatial(2, 3)),
    ("spatial(2, 3).local(3, 4)", lambda: R.spatial(2, 3).local(3, 4)),
    ("repeat(2, 1).spatial(8, 4).repeat(1, 2)", lambda: R.local(2, 1).spatial(8, 4).local(1, 2)),
    ("spatial(3, 4)", lambda: R.spatial(3, 4)),
    ("reduce(spatial(3, 4), dims=[0])", lambda: R.reduce(R.spatial(3, 4), dims=[0])),
    ("local(2, 3)", lambda: R.local(2, 3)),
    ("column_local(2, 3)", lambda: R.column_local(2, 3)),
    ("spatial(2, 3)", lambda: R.spatial(2, 3)),
    ("column_spatial(2, 3)", lambda: R.column_spatial(2, 3)),
]

#: more layouts drawn the same way: 3-D (tilus prints one table per leading index), replication
EXTRA = [
    ("local(2, 1, 1).spatial(1, 2, 3)", lambda: R.local(2, 1, 1).spatial(1, 2, 3)),
    ("replicated(2, 3, num_workers=2)", lambda: R.replicated(2, 3, num_workers=2)),
    ("reduce(spatial(2, 3, 2).local(1, 1, 2), dims=[1], keepdims=True)",
     lambda: R.reduce(R.spatial(2, 3, 2).local(1, 1, 2), dims=[1], keepdims=True)),
    ("RegisterLayout(shape=[4, 6], mode_shape=[2, 2, 3, 2], spatial_modes=[0, 2], local_modes=[3, 1])",
     lambda: t_register_layout([4, 6], [2, 2, 3, 2], [0, 2], [3, 1])),
]


def tilus_cells(text: str) -> tuple[str, list[list[frozenset]]]:
    """Header line and the cells of every table ``visualize_layout`` printed (tables in order)."""
    lines = text.splitlines()
    header = lines[0]
    rows = []
    for line in lines[1:]:
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            rows.append([_tilus_cell(c) for c in cells])
    return header, rows


def _tilus_cell(cell: str) -> frozenset:
    threads, local = cell.rsplit(":", 1)
    threads = threads.strip()
    ts = [int(x) for x in threads.strip("[]").split(",")] if threads.startswith("[") else [int(threads)]
    return frozenset((t, int(local)) for t in ts)


def our_cells(grid: str) -> list[list[frozenset]]:
    """Cells of :meth:`Layout.render`'s grid (rows ``r: cell cell ...``; slices one after another)."""
    rows = []
    for line in grid.splitlines():
        m = re.match(r"^\s*\d+: (.*)$", line)
        if not m:
            continue
        row = []
        for cell in m.group(1).split():
            holders = set()
            for h in cell.split("|"):
                t, r = re.fullmatch(r"T(\d+):(\d+)", h).groups()
                holders.add((int(t), int(r)))
            row.append(frozenset(holders))
        rows.append(row)
    return rows




@pytest.mark.parametrize("text,build", DOC_EXAMPLES + EXTRA, ids=[t for t, _ in DOC_EXAMPLES + EXTRA])
def test_grid_matches_tilus_visualize_layout(text, build):
    tl = build()
    header, want = tilus_cells(visualize_layout(tl))
    ours = T.parse(text)
    got = our_cells(ours.render(max_holders=64))
    assert sum(len(r) for r in want) == int(np.prod(tl.shape))     # tilus drew every element
    assert got == want
    assert header == T.to_tilus_text(text)


def test_doc_example_count():
    # every register-layout example of the documentation page is covered
    assert len(DOC_EXAMPLES) == 11


def test_mapping_process_example_formulas():
    """Docs: element (i, j) is in thread (i // 2) * 3 + (j // 2) at local (j % 2) * 2 + (i % 2)."""
    lay = T.parse("RegisterLayout(shape=[4, 6], mode_shape=[2, 2, 3, 2], spatial_modes=[0, 2], local_modes=[3, 1])")
    hw = lay.hardware_indices()
    coords = lay.table()
    thread = hw[:, lay.in_names.index("lane")] + lay.in_size("lane") * hw[:, lay.in_names.index("warp")]
    reg = hw[:, lay.in_names.index("register")]
    i, j = coords[:, 0], coords[:, 1]
    assert np.array_equal(thread, (i // 2) * 3 + (j // 2))
    assert np.array_equal(reg, (j % 2) * 2 + (i % 2))
    assert lay.is_bijective()


def test_reduce_example_replication():
    """Docs: after reduce(spatial(3, 4), dims=[0]) element 0 is held by threads 0, 4 and 8."""
    lay = T.parse("reduce(spatial(3, 4), dims=[0])")
    holders = lay.holder_counts()
    assert holders.tolist() == [3, 3, 3, 3]
    rows = lay.table()[:, 0]
    lanes = lay.hardware_indices()[:, lay.in_names.index("lane")]
    assert sorted(lanes[rows == 0].tolist()) == [0, 4, 8]


def test_mma_c_fragment_example_multiwarp_split_keeps_grid():
    """The doc's m16n8k8 C layout, cut into warps of 8 lanes: thread ids (lane + 8 * warp) and the
    grid are unchanged."""
    text = "repeat(2, 1).spatial(8, 4).repeat(1, 2)"
    a = our_cells(T.parse(text).render(max_holders=64))
    b = our_cells(T.parse(text, warp_size=8).render(max_holders=64))
    assert a == b
    assert T.parse(text, warp_size=8).in_size("warp") == 4
