"""Terminal rendering of a layout as a grid over the logical tensor.

Each cell shows who holds that element, like Triton's tensor view and Tilus's grid:

* register layouts: ``T{thread}:{register}`` with the flat thread id
  ``thread = lane + lanes * warp`` (DESIGN.md §1); ``B{block}:`` is prefixed when the layout has
  more than one block (Triton's spelling); replicated elements list every holder joined by ``|``.
* memory layouts: the offset (``B{block}:`` prefix as above).
* partial layouts: ``.`` marks an element nobody holds.

Rows are ``dim0`` and columns ``dim1``; a 1-D tensor is one row; for rank > 2 every 2-D slice
over the last two dims is printed under its leading index.
"""
from __future__ import annotations

import itertools

import numpy as np


def holder_labels(layout) -> list[list[str]]:
    """For each flat logical element (row-major), the labels of its holders in hardware order."""
    hw = layout.hardware_indices()
    flat = layout.flat_table()
    idx = {n: hw[:, i] for i, n in enumerate(layout.in_names)}
    nblocks = layout.in_size("block")
    if layout.kind == "memory":
        places = [n for n in layout.in_names if n != "block"]
        if places == ["offset"]:
            base = [str(int(o)) for o in idx["offset"]]
        else:       # e.g. tensor memory: "row,col"
            cols = [np.broadcast_to(idx[n], flat.shape) for n in places]
            base = [",".join(str(int(c[k])) for c in cols) for k in range(len(flat))]
    else:
        lanes = layout.in_size("lane")
        thread = idx.get("lane", 0) + lanes * idx.get("warp", 0)
        thread = np.broadcast_to(thread, flat.shape)
        reg = np.broadcast_to(idx.get("register", 0), flat.shape)
        base = [f"T{int(t)}:{int(r)}" for t, r in zip(thread, reg)]
    if nblocks > 1:
        blocks = idx["block"]
        base = [f"B{int(b)}:{s}" for b, s in zip(blocks, base)]
    cells: list[list[str]] = [[] for _ in range(layout.out_size())]
    for f, lab in zip(flat.tolist(), base):
        cells[f].append(lab)
    return cells


def render_grid(layout, *, max_cells: int = 4096, max_holders: int | None = 4, window: int | None = None,
                width: int | None = None) -> str:
    """The grid as text. Refuses (with a note) tensors of more than ``max_cells`` elements;
    cells with more than ``max_holders`` holders (None: no limit) end in ``|+N``. At most
    ``window`` rows and ``window`` columns are drawn (from the top left; None: all), and at most the
    columns whose lines fit in ``width`` characters (None: no limit); a last line says what was
    left out."""
    shape = layout.out_sizes
    if layout.out_size() > max_cells:
        return f"(grid of {layout.out_size()} elements not drawn; limit {max_cells})"
    cells = holder_labels(layout)
    texts = []
    for c in cells:
        if not c:
            texts.append(".")
        elif max_holders is not None and len(c) > max_holders:
            texts.append("|".join(c[:max_holders]) + f"|+{len(c) - max_holders}")
        else:
            texts.append("|".join(c))
    if len(shape) == 1:
        shape2 = (1, shape[0])
        lead = [()]
    else:
        shape2 = shape[-2:]
        lead = list(itertools.product(*(range(s) for s in shape[:-2])))
    rows, cols = shape2
    show_rows = rows if window is None else min(rows, window)
    show_cols = cols if window is None else min(cols, window)
    shown = [texts[li * rows * cols + r * cols + c]
             for li in range(len(lead)) for r in range(show_rows) for c in range(show_cols)]
    colw = max(max((len(t) for t in shown), default=1), len(str(show_cols - 1)))
    label = len(str(show_rows - 1))
    if width is not None:       # each column takes colw + 1 characters after the "NN:" label
        show_cols = max(1, min(show_cols, (width - label - 1) // (colw + 1)))
    out = []
    for li, l in enumerate(lead):
        if l:
            out.append(f"[{', '.join(map(str, l))}, :, :]")
        out.append(" " * (label + 2) + " ".join(str(c).rjust(colw) for c in range(show_cols)))
        base = li * rows * cols
        for r in range(show_rows):
            line = " ".join(texts[base + r * cols + c].rjust(colw) for c in range(show_cols))
            out.append(f"{str(r).rjust(label)}: {line}")
    cut = []
    if show_rows < rows:
        cut.append(f"rows 0-{show_rows - 1} of {rows}")
    if show_cols < cols:
        cut.append(f"columns 0-{show_cols - 1} of {cols}")
    if cut:
        out.append(f"({' and '.join(cut)} drawn; --window {max(rows, cols)} draws all)")
    return "\n".join(out)
