"""How a proof is shown: the one renderer of ``layoutverify prove``, :mod:`layoutverify.apps.api`
and the service.

* :func:`exit_code`: the exit status of a verdict (0 ``equal``; 0 ``equal_up_to_register_order``,
  1 with ``strict``; 1 ``not_equal`` / ``different_tensors``; 3 ``unknown``);
* :func:`proof_fields`: the fields of a ``proof`` document (docs/json-schema.md), in order: ``a``,
  ``b``, the result (``verdict``, ``method``, ``witness``, ``seconds``, ``reason``), then
  ``fingerprints``, ``tool_version``, ``exit`` and, where given, ``smt2`` and the caller's fields;
* :func:`proof_text`: the first lines ``prove`` prints (verdict, method and time, reason, witness);
* grids of holders around a witness, as data (:func:`grid`, :func:`grid_pair`: the service's web
  page draws them) and as text (:func:`side_by_side`: the CLI prints it). A cell lists the
  holders of one element, ``T{thread}:{register}`` or the offset, as ``show`` draws them.
"""
from __future__ import annotations

import json

import numpy as np

from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout

#: exit status by verdict (``equal_up_to_register_order`` is 1 with ``strict``)
EXIT = {"equal": 0, "equal_up_to_register_order": 0, "not_equal": 1, "different_tensors": 1, "unknown": 3}

#: largest number of hardware locations whose holders are listed per cell (grids as data)
MAX_GRID_LOCATIONS = 1 << 18
#: grids are drawn as text only for layouts with at most this many hardware locations
MAX_DRAWN_LOCATIONS = 1 << 18


def exit_code(verdict: str, strict: bool = False) -> int:
    """The exit status of ``verdict`` (3 for anything unknown)."""
    if verdict == "equal_up_to_register_order" and strict:
        return 1
    return EXIT.get(verdict, 3)


def proof_fields(result: dict, *, a: str | None, b: str | None, fingerprints: dict | None, code: int,
                 tool_version: str, smt2: str | None = None, **extra) -> dict:
    """The fields of a ``proof`` document: ``result`` is :meth:`Result.to_json`'s object (or the
    stored copy of one); ``extra`` fields (the service's ``cached``) come last."""
    out = {}
    if a is not None:
        out["a"] = a
    if b is not None:
        out["b"] = b
    out.update(result)
    out["fingerprints"] = fingerprints
    out["tool_version"] = tool_version
    out["exit"] = code
    if smt2:
        out["smt2"] = smt2
    out.update(extra)
    return out


def proof_text(doc: dict) -> list[str]:
    """The lines ``layoutverify prove`` prints first, from a proof document's fields."""
    lines = [f"verdict: {doc['verdict']}", f"method:  {doc['method']}  ({doc['seconds'] * 1000:.1f} ms)",
             f"reason:  {doc['reason']}"]
    if doc.get("witness"):
        lines.append(f"witness: {json.dumps(doc['witness'])}")
    return lines


def witness_elements(witness) -> tuple[list | None, list | None]:
    """The element to mark in A's grid and in B's grid (``prove``'s witness shapes)."""
    if not isinstance(witness, dict):
        return None, None
    if "element" in witness:
        return witness["element"], witness["element"]
    return witness.get("a"), witness.get("b")


def _window(shape, focus, window: int):
    """``(rows, cols, lead, r0, nr, c0, nc)``: a 2-D window of at most ``window`` rows and
    columns over the last two dims, centred on ``focus`` (its leading coordinates fixed)."""
    if focus is None or len(focus) != len(shape):
        focus = [0] * len(shape)
    if len(shape) == 1:
        rows, cols, lead, fr, fc = 1, shape[0], (), 0, focus[0]
    else:
        rows, cols, lead, fr, fc = shape[-2], shape[-1], tuple(focus[:-2]), focus[-2], focus[-1]
    return rows, cols, lead, fr, fc


# -- grids as data -------------------------------------------------------------------------------
def grid(layout: Layout, *, rows: tuple[int, int] | None = None, cols: tuple[int, int] | None = None,
         lead: tuple = ()) -> dict:
    """Holders of each element of a 2-D window: ``{"rows": [r0, r1), "cols": [c0, c1), "cells": [[labels]]}``.

    Labels are ``T{thread}:{register}`` (register layouts) or the offset (memory layouts), as
    ``layoutverify show`` draws them. ``lead`` fixes the leading coordinates of a >2-D tensor.
    """
    if layout.in_size() > MAX_GRID_LOCATIONS:
        raise LayoutError(f"grid not drawn: more than {MAX_GRID_LOCATIONS} hardware locations")
    from layoutverify.core.render import holder_labels
    labels = holder_labels(layout)
    shape = list(layout.out_sizes)
    if len(shape) == 1:
        shape = [1] + shape
        lead = ()
    nr, nc = shape[-2], shape[-1]
    r0, r1 = rows or (0, nr)
    c0, c1 = cols or (0, nc)
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    base = sum(int(x) * s for x, s in zip(lead, strides))
    cells = [[labels[base + r * strides[-2] + c] for c in range(c0, c1)] for r in range(r0, r1)]
    return {"rows": [r0, r1], "cols": [c0, c1], "shape": list(layout.out_sizes), "lead": list(lead), "cells": cells}


def grid_pair(a: Layout, b: Layout, witness: dict, *, window: int = 32) -> dict:
    """A's and B's grids as data, on the same window (at most ``window`` rows and columns) around
    the witness element: ``{"a": grid, "b": grid, "differ": [[bool]], "mark_a": [r, c] | None,
    "mark_b": ...}``. ``differ`` marks cells whose holders (as sets) differ between A and B."""
    if a.out_dims != b.out_dims:
        return {"drawn": False, "why": "the layouts cover different tensors"}
    shape = list(a.out_sizes)
    ea, eb = witness_elements(witness or {})
    rows, cols, lead, fr, fc = _window(shape, ea if ea is not None else eb, window)
    nr, nc = min(rows, window), min(cols, window)
    r0 = min(max(0, fr - nr // 2), rows - nr)
    c0 = min(max(0, fc - nc // 2), cols - nc)
    ga = grid(a, rows=(r0, r0 + nr), cols=(c0, c0 + nc), lead=lead)
    gb = grid(b, rows=(r0, r0 + nr), cols=(c0, c0 + nc), lead=lead)
    differ = [[sorted(x) != sorted(y) for x, y in zip(ra, rb)] for ra, rb in zip(ga["cells"], gb["cells"])]

    def mark(el):
        if el is None or len(el) != len(shape):
            return None
        if len(shape) == 1:
            r, c = 0, el[0]
        elif tuple(el[:-2]) != lead:
            return None
        else:
            r, c = el[-2], el[-1]
        return [r, c] if r0 <= r < r0 + nr and c0 <= c < c0 + nc else None

    return {"drawn": True, "a": ga, "b": gb, "differ": differ, "mark_a": mark(ea), "mark_b": mark(eb),
            "differing_cells": sum(map(sum, differ))}


# -- grids as text -------------------------------------------------------------------------------
def _cell_text(holders: list[str], max_holders: int = 2) -> str:
    if not holders:
        return "."
    if len(holders) > max_holders:
        return "|".join(holders[:max_holders]) + f"|+{len(holders) - max_holders}"
    return "|".join(holders)


def side_by_side(a: Layout, b: Layout, witness: dict, *, window: int = 16) -> str:
    """A's and B's grids next to each other around the witness element(s), as text: rows ``dim0``,
    columns ``dim1``, the witness cells in ``>...<``, every other cell whose holders differ
    between A and B marked ``*``."""
    if a.out_dims != b.out_dims:
        return ""
    if max(a.in_size(), b.in_size()) > MAX_DRAWN_LOCATIONS:
        return f"(grids not drawn: more than {MAX_DRAWN_LOCATIONS} hardware locations)"
    from layoutverify.core.render import holder_labels
    shape = a.out_sizes
    la, lb = holder_labels(a), holder_labels(b)
    ea, eb = witness_elements(witness)
    focus = ea if ea is not None else eb
    if focus is None:
        focus = [0] * len(shape)
    rows, cols, lead, fr, fc = _window(shape, focus, window)
    strides = np.cumprod([1] + list(reversed(shape)))[::-1][1:]

    def flat(r, c):
        coords = list(lead) + ([r, c] if len(shape) > 1 else [c])
        return int(sum(int(x) * int(s) for x, s in zip(coords, strides)))

    def marked(el):
        if el is None:
            return None
        if len(shape) == 1:
            return flat(0, el[0])
        return flat(el[-2], el[-1]) if tuple(el[:-2]) == lead else None

    wa, wb = marked(ea), marked(eb)
    nrows = min(rows, window)
    r0 = min(max(0, fr - nrows // 2), rows - nrows)
    texts_a = {}
    texts_b = {}
    width = 1
    for r in range(r0, r0 + nrows):
        for c in range(cols):
            f = flat(r, c)
            texts_a[f], texts_b[f] = _cell_text(la[f]), _cell_text(lb[f])
            width = max(width, len(texts_a[f]), len(texts_b[f]))
    ncols = min(cols, window, max(4, 72 // (width + 3)))
    c0 = min(max(0, fc - ncols // 2), cols - ncols)

    def draw(texts, labels, other, wflat, title):
        lines = [title]
        rw = len(str(r0 + nrows - 1))
        lines.append(" " * (rw + 2) + " ".join(str(c).rjust(width + 2) for c in range(c0, c0 + ncols)))
        for r in range(r0, r0 + nrows):
            cells = []
            for c in range(c0, c0 + ncols):
                f = flat(r, c)
                t = texts[f]
                if f == wflat:
                    t = f">{t}<"
                elif sorted(labels[f]) != sorted(other[f]):
                    t = f" {t}*"
                else:
                    t = f" {t} "
                cells.append(t.rjust(width + 2))
            lines.append(f"{str(r).rjust(rw)}: " + " ".join(cells))
        return lines

    where = ""
    if lead:
        where = f" slice [{', '.join(map(str, lead))}, :, :];"
    span = f"rows {r0}..{r0 + nrows - 1} of {rows}, columns {c0}..{c0 + ncols - 1} of {cols}"
    ga = draw(texts_a, la, lb, wa, "A")
    gb = draw(texts_b, lb, la, wb, "B")
    colw = max(len(l) for l in ga)
    out = [f"grids ({where} {span}; >x< witness, * holders differ):".replace("( ", "(")]
    for l1, l2 in zip(ga, gb):
        out.append(l1.ljust(colw) + "   |   " + l2)
    return "\n".join(out)
