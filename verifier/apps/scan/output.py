"""Renderings of a scan document: terminal table (rich), Markdown, JUnit XML, HTML pages.

The JSON document itself (``--json``) is the result of :func:`layoutverify.apps.scan.scan_paths`:
``{"schema": "layoutverify/1", "kind": "scan", "kernels": [{"name", "path", "target", "num_warps",
"threads_per_warp", "num_ctas", "triton_version", "ops": [...], "findings": [...], "totals"}],
"summary"}``; each op as described in :mod:`.analysis`.
"""
from __future__ import annotations

import html
import re
from pathlib import Path
from xml.sax.saxutils import escape as xml_escape

COSTLY_MECHANISMS = ("intra_cta", "cross_cta", "intra_warp")


def _layout_name(t: str | None) -> str:
    if not t:
        return "-"
    m = re.search(r",\s*(#[^,>]+(?:<.*>)?)", t)
    return m.group(1)[:40] if m else t[:40]


def _row(op) -> list[str]:
    where = op["loc"]["text"] if op.get("loc") else f"line {op['module_line']}"
    src = _layout_name(op["source"]["type"])
    dst = _layout_name(op["target"]["type"]) if op.get("target") else (op.get("operand") or "-")
    mech = op.get("mechanism") or "-"
    tri = op.get("triton_mechanism") or "-"
    banks = op.get("bank_conflicts")
    bc = "-"
    if banks:
        r = next(iter(banks.values()))
        bc = f"{r['conflict_ways']}-way"
    fnd = ",".join(f["code"] for f in op["findings"]) or ("error" if op.get("error") else "")
    return [op["op"].split(".", 1)[-1], where, src, dst, op.get("verdict") or "-", mech, tri,
            str(op.get("elements_moved") if op.get("elements_moved") is not None else "-"),
            str(op.get("vector_width") or "-"), bc, f"{op['cost']['score']:g}", _ns(op), fnd]


def _ns(op) -> str:
    v = (op.get("cost") or {}).get("predicted_ns")
    return "-" if v is None else f"{v:.0f}"


HEADERS = ["op", "where", "source", "target", "verdict", "cheapest", "triton", "moved", "vec", "banks", "cost",
           "ns", "findings"]


def print_table(doc: dict, console=None) -> None:
    from rich.console import Console
    from rich.table import Table
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=200)
    for k in doc["kernels"]:
        t = Table(title=f"{k['name']}  ({k.get('target') or '?'}, {k.get('num_warps')} warps)  {k['path']}",
                  title_justify="left")
        for h in HEADERS:
            t.add_column(h, overflow="fold")
        for op in k["ops"]:
            t.add_row(*_row(op))
        console.print(t)
    s = doc["summary"]
    console.print(f"{s['kernels']} kernels, {s['ops']} layout ops, findings: "
                  + (", ".join(f"{c} {n}" for c, n in sorted(s["findings"].items())) or "none")
                  + (f"; {s['errors']} ops with unreadable layouts" if s["errors"] else ""))


def plain_table(doc: dict) -> str:
    out = []
    for k in doc["kernels"]:
        out.append(f"== {k['name']} ({k.get('target') or '?'}, {k.get('num_warps')} warps) {k['path']}")
        rows = [HEADERS] + [_row(op) for op in k["ops"]]
        w = [max(len(r[i]) for r in rows) for i in range(len(HEADERS))]
        out.extend("  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip() for r in rows)
    return "\n".join(out)


def markdown(doc: dict) -> str:
    s = doc["summary"]
    lines = ["## layoutverify scan", "",
             f"{s['kernels']} kernels, {s['ops']} layout ops; findings: "
             + (", ".join(f"`{c}` {n}" for c, n in sorted(s["findings"].items())) or "none"), "",
             "| kernel | target | ops | shared-memory conversions | cost | findings |", "|---|---|---|---|---|---|"]
    for k in doc["kernels"]:
        shared = k["totals"]["conversions_by_triton_mechanism"].get("intra_cta", 0)
        lines.append(f"| `{k['name']}` | {k.get('target') or '?'} | {k['totals']['ops']} | {shared} | "
                     f"{k['totals']['score']:g} | {k['totals']['findings']} |")
    found = [(k, f) for k in doc["kernels"] for f in k["findings"]]
    if found:
        lines += ["", "### Findings", "", "| kernel | where | op | finding | detail |", "|---|---|---|---|---|"]
        for k, f in found:
            lines.append(f"| `{k['name']}` | {f['where']} | `{f['op']}` | {f['severity']}: `{f['code']}` | "
                         f"{f['message'].replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def junit(doc: dict) -> str:
    """One test suite per kernel, one test case per op; a finding of severity warning or error is
    a failure, an unreadable layout is skipped."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>', "<testsuites>"]
    for k in doc["kernels"]:
        cases = []
        fails = skips = 0
        for op in k["ops"]:
            name = xml_escape(op["key"], {'"': "&quot;"})
            bad = [f for f in op["findings"] if f["severity"] in ("warning", "error")]
            body = ""
            if bad:
                fails += 1
                msg = "; ".join(f"{f['code']}: {f['message']}" for f in bad)
                body = f'<failure message="{xml_escape(msg, {chr(34): "&quot;"})}">{xml_escape(msg)}</failure>'
            elif op.get("error"):
                skips += 1
                body = f'<skipped message="{xml_escape(op["error"][:300], {chr(34): "&quot;"})}"/>'
            cases.append(f'    <testcase classname="{xml_escape(k["name"])}" name="{name}">{body}</testcase>')
        out.append(f'  <testsuite name="scan.{xml_escape(k["name"])}" tests="{len(cases)}" failures="{fails}" '
                   f'skipped="{skips}">')
        out.extend(cases)
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"


def _grid(spec: str | None) -> str:
    if not spec:
        return ""
    from layoutverify.adapters import parse_spec
    from layoutverify.core.errors import LayoutError
    from layoutverify.core.render import render_grid
    try:
        return render_grid(parse_spec(spec), max_cells=16384, max_holders=2)
    except LayoutError as e:
        return f"(not drawn: {e})"


def write_html(doc: dict, folder: str, max_grids: int = 4) -> list[str]:
    """``index.html`` and one page per kernel with the grids of its costliest conversions
    (source and target holders of each element)."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    style = ("<style>body{font-family:sans-serif} table{border-collapse:collapse} td,th{border:1px solid #ccc;"
             "padding:2px 6px;font-size:13px} pre{font-size:11px;overflow:auto;max-height:480px;"
             "background:#f7f7f7} .warning{color:#a60} .error{color:#c00}</style>")
    pages = []
    index = [f"<html><head><meta charset='utf-8'><title>layoutverify scan</title>{style}</head><body>",
             "<h1>layoutverify scan</h1><table><tr><th>kernel</th><th>target</th><th>ops</th><th>cost</th>"
             "<th>findings</th></tr>"]
    used = set()
    for k in doc["kernels"]:
        base = re.sub(r"[^\w.-]", "_", k["name"])
        fname = base
        n = 1
        while fname in used:
            n += 1
            fname = f"{base}_{n}"
        used.add(fname)
        fname += ".html"
        index.append(f"<tr><td><a href='{html.escape(fname)}'>{html.escape(k['name'])}</a></td>"
                     f"<td>{html.escape(str(k.get('target')))}</td><td>{k['totals']['ops']}</td>"
                     f"<td>{k['totals']['score']:g}</td><td>{k['totals']['findings']}</td></tr>")
        body = [f"<html><head><meta charset='utf-8'><title>{html.escape(k['name'])}</title>{style}</head><body>",
                f"<p><a href='index.html'>all kernels</a></p><h1>{html.escape(k['name'])}</h1>",
                f"<p>{html.escape(k['path'])}: target {html.escape(str(k.get('target')))}, {k.get('num_warps')} warps, "
                f"{k.get('threads_per_warp')} threads per warp, {k.get('num_ctas')} CTAs</p>",
                "<table><tr>" + "".join(f"<th>{h}</th>" for h in HEADERS) + "</tr>"]
        for op in k["ops"]:
            body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in _row(op)) + "</tr>")
        body.append("</table>")
        if k["findings"]:
            body.append("<h2>Findings</h2><ul>")
            for f in k["findings"]:
                body.append(f"<li class='{f['severity']}'>{html.escape(f['where'])} <code>{html.escape(f['op'])}</code>: "
                            f"{f['severity']} <b>{f['code']}</b>: {html.escape(f['message'])}</li>")
            body.append("</ul>")
        costly = sorted((op for op in k["ops"] if op["role"] in ("convert", "store", "load") and op["cost"]["score"] > 0),
                        key=lambda o: -o["cost"]["score"])[:max_grids]
        if costly:
            body.append("<h2>Costliest conversions</h2>")
        for op in costly:
            body.append(f"<h3>{html.escape(op['key'])}: {html.escape(str(op.get('triton_mechanism')))}, "
                        f"cost {op['cost']['score']:g}</h3>")
            if op.get("witness"):
                body.append(f"<p>why not cheaper: {html.escape(op['witness'].get('reason', ''))}</p>")
            for side in ("source", "target"):
                d = op.get(side) or {}
                t, spec = d.get("type"), d.get("spec")
                if t and spec and t.lstrip().startswith("tensor<"):
                    body.append(f"<h4>{side}: {html.escape(t)}</h4><pre>{html.escape(_grid(spec))}</pre>")
        body.append("</body></html>")
        (root / fname).write_text("\n".join(body))
        pages.append(str(root / fname))
    index.append("</table></body></html>")
    (root / "index.html").write_text("\n".join(index))
    return [str(root / "index.html")] + pages
