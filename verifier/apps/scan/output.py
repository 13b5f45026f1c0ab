"""Renderings of a scan document: terminal table (rich), Markdown, JUnit XML, HTML pages.

The JSON document itself (``--json``) is the result of :func:`layoutverify.apps.scan.scan_paths`
(docs/json-schema.md, ``scan``). Every rendering names a kernel by its name, target and
specialisation (:mod:`.identity`), lists findings most severe first and ops in module order.

The HTML report (:func:`write_html`) leads with what costs: per kernel its findings, then its
costliest ops, each with the holder grids of its layouts and the instructions it compiled to,
then the kernel's Python source with every line annotated by the layout ops there and their
cost (as Compiler Explorer maps source to assembly), then every op in a sortable table where
trivial ops (views, matrix operands, ops that cost nothing) are folded away. The pages are self
contained: inline CSS and a few lines of plain JavaScript for sorting, nothing fetched.
"""
from __future__ import annotations

import html
import re
from pathlib import Path
from xml.sax.saxutils import escape as xml_escape

from .findings import is_failure, sort_key

COSTLY_MECHANISMS = ("intra_cta", "cross_cta", "intra_warp")
MAX_SOURCE_BYTES = 4 << 20


def _layout_name(t: str | None) -> str:
    if not t:
        return "-"
    m = re.search(r",\s*(#[^,>]+(?:<.*>)?)", t)
    return m.group(1)[:40] if m else t[:40]


def kernel_title(k: dict) -> str:
    """``name [target] specialisation`` (what identifies the kernel, :mod:`.identity`)."""
    spec = k.get("specialisation")
    return f"{k['name']} [{k.get('target') or '?'}]" + (f" {spec}" if spec else "")


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
            str(op.get("vector_width") or "-"), bc, _instr(op), f"{op['cost']['score']:g}", _basis(op), fnd]


def _instr(op) -> str:
    ins = (op.get("cost") or {}).get("instructions") or {}
    short = {"shared_store": "st.sh", "shared_load": "ld.sh", "global_store": "st.gl", "global_load": "ld.gl",
             "shuffle": "shfl", "barrier": "bar", "ldmatrix": "ldm", "stmatrix": "stm", "async_copy": "cp",
             "tma": "tma", "dsmem_store": "st.dsm", "dsmem_load": "ld.dsm", "tmem_load": "tld", "tmem_store": "tst"}
    return " ".join(f"{short.get(k, k)}{v:g}" for k, v in ins.items() if v) or "-"


def _basis(op) -> str:
    return {"compiled": "asm", "mixed": "asm+est", "layouts": "est", "none": "-"}.get(
        (op.get("cost") or {}).get("facts_from"), "-")


HEADERS = ["op", "where", "source", "target", "verdict", "cheapest", "triton", "moved", "vec", "banks",
           "instructions/thread", "cost", "from", "findings"]


def print_table(doc: dict, console=None) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=220)
    for k in doc["kernels"]:
        t = Table(title=escape(f"{kernel_title(k)}  {k['path']}"), title_justify="left")
        for h in HEADERS:
            t.add_column(h, overflow="fold")
        for op in k["ops"]:
            t.add_row(*(escape(c) for c in _row(op)))
        console.print(t)
    console.print(escape(summary_line(doc)))


def summary_line(doc: dict) -> str:
    s = doc["summary"]
    return (f"{s['kernels']} kernels, {s['ops']} layout ops, findings: "
            + (", ".join(f"{c} {n}" for c, n in sorted(s["findings"].items())) or "none")
            + (f"; {s['errors']} ops with unreadable layouts" if s["errors"] else ""))


def plain_table(doc: dict) -> str:
    out = []
    for k in doc["kernels"]:
        out.append(f"== {kernel_title(k)} {k['path']}")
        rows = [HEADERS] + [_row(op) for op in k["ops"]]
        w = [max(len(r[i]) for r in rows) for i in range(len(HEADERS))]
        out.extend("  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip() for r in rows)
    out.append(summary_line(doc))
    return "\n".join(out)


def _md(s) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def markdown(doc: dict) -> str:
    s = doc["summary"]
    lines = ["## layoutverify scan", "",
             f"{s['kernels']} kernels, {s['ops']} layout ops; findings: "
             + (", ".join(f"`{c}` {n}" for c, n in sorted(s["findings"].items())) or "none"), "",
             "| kernel | target | specialisation | ops | shared-memory conversions | cost | costs from | findings |",
             "|---|---|---|---|---|---|---|---|"]
    for k in doc["kernels"]:
        shared = k["totals"]["conversions_by_triton_mechanism"].get("intra_cta", 0)
        lines.append(f"| `{_md(k['name'])}` | {_md(k.get('target') or '?')} | {_md(k.get('specialisation') or '')} | "
                     f"{k['totals']['ops']} | {shared} | {k['totals']['score']:g} | {k.get('facts_from', '-')} | "
                     f"{k['totals']['findings']} |")
    found = sorted(((k, f) for k in doc["kernels"] for f in k["findings"]),
                   key=lambda kf: (sort_key(kf[1]), kernel_title(kf[0])))
    if found:
        lines += ["", "### Findings", "", "| severity | kernel | where | op | finding | detail |",
                  "|---|---|---|---|---|---|"]
        for k, f in found:
            lines.append(f"| {f['severity']} | `{_md(k['name'])}` [{_md(k.get('target'))}] | {_md(f['where'])} | "
                         f"`{_md(f['op'])}` | `{f['code']}` | {_md(f['message'])} |")
    return "\n".join(lines) + "\n"


def _attr(s: str) -> str:
    return xml_escape(s, {'"': "&quot;"})


def junit(doc: dict) -> str:
    """One test suite per kernel (named by name, target and specialisation), one test case per
    op. A finding a compiler change can fix (:func:`.findings.is_failure`: fixable, warning or
    error) is a failure; other findings go to the case's output; an unreadable layout is
    skipped. With a baseline, a ``scan.baseline`` suite holds one case per kernel of either scan:
    a kernel that got worse, or vanished (unless accepted), fails."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>', "<testsuites>"]
    for k in doc["kernels"]:
        cases = []
        fails = skips = 0
        title = kernel_title(k)
        for op in k["ops"]:
            bad = [f for f in op["findings"] if is_failure(f)]
            info = [f for f in op["findings"] if not is_failure(f)]
            body = ""
            if bad:
                fails += 1
                msg = "; ".join(f"{f['code']}: {f['message']}" for f in bad)
                body = f'<failure message="{_attr(msg)}" type="{_attr(bad[0]["code"])}">{xml_escape(msg)}</failure>'
            elif op.get("error"):
                skips += 1
                body = f'<skipped message="{_attr(op["error"][:300])}"/>'
            if info:
                body += "<system-out>" + xml_escape("; ".join(f"{f['severity']} {f['code']}: {f['message']}"
                                                               for f in info)) + "</system-out>"
            cases.append(f'    <testcase classname="{_attr(title)}" name="{_attr(op["key"])}">{body}</testcase>')
        out.append(f'  <testsuite name="{_attr("scan." + title)}" tests="{len(cases)}" failures="{fails}" '
                   f'skipped="{skips}">')
        out.append(f'    <properties><property name="target" value="{_attr(str(k.get("target")))}"/>'
                   f'<property name="specialisation" value="{_attr(k.get("specialisation") or "")}"/>'
                   f'<property name="path" value="{_attr(k["path"])}"/></properties>')
        out.extend(cases)
        out.append("  </testsuite>")
    cmp = doc.get("baseline")
    if cmp is not None:
        cases, fails = [], 0
        for e in cmp["kernels"]:
            body = ""
            if e["worse"]:
                fails += 1
                if e["status"] == "vanished":
                    msg = "the kernel vanished (absent from this scan)"
                else:
                    rows = e.get("costlier", [])
                    msg = (f"{len(rows)} op(s) costlier: " + "; ".join(
                        f"{r['key']} {r['old']['score']:g} -> {r['new']['score']:g}" for r in rows[:10])) if rows \
                        else "new ops made the kernel costlier"
                body = f'<failure message="{_attr(msg)}" type="{e["status"]}">{xml_escape(msg)}</failure>'
            cases.append(f'    <testcase classname="scan.baseline" name="{_attr(e["name"])}">{body}</testcase>')
        if not doc["kernels"] and any(e["status"] == "vanished" for e in cmp["kernels"]):
            fails += 1
            msg = "; ".join(cmp.get("reasons") or ["the scan found no kernel"])
            cases.append(f'    <testcase classname="scan.baseline" name="kernels found">'
                         f'<failure message="{_attr(msg)}">{xml_escape(msg)}</failure></testcase>')
        out.append(f'  <testsuite name="scan.baseline" tests="{len(cases)}" failures="{fails}" skipped="0">')
        out.extend(cases)
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# HTML
_STYLE = ("<style>body{font-family:sans-serif;margin:1.2em} table{border-collapse:collapse;margin:.4em 0}"
          "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px;vertical-align:top} th{background:#eee;"
          "cursor:pointer} pre{font-size:11px;overflow:auto;max-height:480px;background:#f7f7f7;margin:.2em 0}"
          ".error{color:#c00} .warning{color:#a60} .info{color:#468} .src td{font-family:monospace;"
          "font-size:12px;border:none;padding:0 6px;white-space:pre} .src tr.hot{background:#fff3d6}"
          ".src .ann{color:#555;font-family:sans-serif} .num{text-align:right} details{margin:.4em 0}"
          "code{font-size:12px}</style>")
_SORT_JS = ("<script>function lvSort(th){var t=th.closest('table'),i=Array.prototype.indexOf.call("
            "th.parentNode.children,th),b=t.tBodies[0],r=Array.prototype.slice.call(b.rows),d=th.dataset.d==='a'?"
            "'d':'a';th.dataset.d=d;r.sort(function(x,y){var p=x.cells[i].textContent,q=y.cells[i].textContent,"
            "m=parseFloat(p),n=parseFloat(q),c=(!isNaN(m)&&!isNaN(n))?m-n:p.localeCompare(q);return d==='a'?c:-c});"
            "r.forEach(function(x){b.appendChild(x)})}</script>")


def _e(s) -> str:
    return html.escape(str(s))


def _sortable(headers: list[str], rows: list[list[str]], numeric=()) -> list[str]:
    out = ["<table class='sortable'><thead><tr>" + "".join(f"<th onclick='lvSort(this)'>{_e(h)}</th>"
                                                          for h in headers) + "</tr></thead><tbody>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td class='{'num' if i in numeric else ''}'>{c}</td>"
                                     for i, c in enumerate(r)) + "</tr>")
    out.append("</tbody></table>")
    return out


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


def trivial(op: dict) -> bool:
    """Ops folded away in the HTML report: views and matrix operands (no instruction of their
    own) and ops that cost nothing and have no finding."""
    if op["findings"]:
        return False
    return op["role"] in ("view", "operand") or not (op.get("cost") or {}).get("score")


def _read_source(path: str) -> list[str] | None:
    p = Path(path)
    try:
        if not p.is_file() or p.stat().st_size > MAX_SOURCE_BYTES:
            return None
        return p.read_text(errors="replace").splitlines()
    except OSError:
        return None


def _source_section(k: dict) -> list[str]:
    """The kernel's Python source, every line with its layout ops and their cost."""
    by_file: dict = {}
    for op in k["ops"]:
        if op.get("loc"):
            by_file.setdefault(op["loc"]["file"], {}).setdefault(op["loc"]["line"], []).append(op)
    out = []
    for file, by_line in sorted(by_file.items()):
        lines = _read_source(file)
        out.append(f"<h3>{_e(file)}</h3>")
        if lines is None:
            out.append("<p>(source not readable here; ops by line:)</p>")
            lines = []
        first = max(1, min(by_line) - 3)
        last = min(len(lines), max(by_line) + 3) if lines else max(by_line)
        out.append("<table class='src'>")
        for n in range(first, last + 1):
            ops = by_line.get(n, [])
            cost = sum(o["cost"]["score"] for o in ops)
            ann = "; ".join(f"{o['op'].split('.', 1)[-1]} {o.get('triton_mechanism') or o['role']} "
                            f"{o['cost']['score']:g}" for o in ops if not trivial(o))
            folded = sum(1 for o in ops if trivial(o))
            if folded:
                ann += ("; " if ann else "") + f"{folded} trivial"
            text = lines[n - 1] if 0 < n <= len(lines) else ""
            cls = " class='hot'" if cost > 0 else ""
            out.append(f"<tr{cls}><td class='num'>{n}</td><td>{_e(text)}</td>"
                       f"<td class='ann'>{_e(ann)}{(' (cost %g)' % cost) if cost else ''}</td></tr>")
        out.append("</table>")
    return out


def _op_detail(op: dict) -> list[str]:
    out = [f"<h3>{_e(op['key'])}: {_e(op.get('triton_mechanism') or op['role'])}, cost {op['cost']['score']:g}"
           f" ({_e(op['cost'].get('facts_from'))})</h3>"]
    c = op["cost"]
    facts = ", ".join(f"{k} {v:g}" for k, v in (c.get("instructions") or {}).items())
    out.append(f"<p>instructions per thread: {_e(facts or 'none')}; predicted {c.get('predicted_ns', 0):g} ns "
               f"({_e(c.get('time_basis', ''))})</p>")
    if c.get("estimate"):
        est = ", ".join(f"{k} {v:g}" for k, v in c["estimate"]["instructions"].items())
        out.append(f"<p>estimate from the layouts: {_e(est or 'none')}, cost {c['estimate']['cycles']:g}</p>")
    for n in c.get("notes", []):
        out.append(f"<p class='info'>{_e(n)}</p>")
    if op.get("witness"):
        out.append(f"<p>why not cheaper: {_e(op['witness'].get('reason', ''))}</p>")
    comp = op.get("compiled") or {}
    if comp.get("lines"):
        listing = "\n".join(f"{x['line']:>6}  {x['text']}" for x in comp["lines"])
        out.append(f"<details open><summary>{_e(comp.get('asm'))} at this location</summary><pre>{_e(listing)}</pre>"
                   f"</details>")
    for side in ("source", "target"):
        d = op.get(side) or {}
        t, spec = d.get("type"), d.get("spec")
        if t and spec and t.lstrip().startswith("tensor<"):
            out.append(f"<details><summary>{side}: {_e(t)}</summary><pre>{_e(_grid(spec))}</pre></details>")
    return out


def write_html(doc: dict, folder: str, max_costly: int = 6) -> list[str]:
    """``index.html`` (kernels, sortable) and one page per kernel (see the module docstring)."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    head = "<html><head><meta charset='utf-8'><title>@TITLE@</title>" + _STYLE + _SORT_JS + "</head><body>"
    pages = []
    index = [head.replace("@TITLE@", "layoutverify scan"), "<h1>layoutverify scan</h1>",
             f"<p>{_e(summary_line(doc))}</p>"]
    rows = []
    used = set()
    for k in doc["kernels"]:
        base = re.sub(r"[^\w.-]", "_", f"{k['name']}-{k.get('target') or ''}")
        fname, n = base, 1
        while fname in used:
            n += 1
            fname = f"{base}_{n}"
        used.add(fname)
        fname += ".html"
        worst = min((f["severity"] for f in k["findings"]), key=lambda s: {"error": 0, "warning": 1}.get(s, 2),
                    default="")
        rows.append([f"<a href='{_e(fname)}'>{_e(k['name'])}</a>", _e(k.get("target")), _e(k.get("specialisation")),
                     str(k["totals"]["ops"]), f"{k['totals']['score']:g}", str(k["totals"]["findings"]), _e(worst),
                     _e(k.get("facts_from", ""))])
        pages.append(_kernel_page(k, root / fname, head, max_costly))
    order = sorted(range(len(rows)), key=lambda i: -doc["kernels"][i]["totals"]["score"])
    index += _sortable(["kernel", "target", "specialisation", "ops", "cost", "findings", "worst", "costs from"],
                       [rows[i] for i in order], numeric=(3, 4, 5))
    cmp = doc.get("baseline")
    if cmp is not None:
        from .baseline import render_baseline
        index.append(f"<h2>Against the baseline</h2><pre>{_e(render_baseline(cmp))}</pre>")
    index.append("</body></html>")
    (root / "index.html").write_text("\n".join(index))
    return [str(root / "index.html")] + pages


def _kernel_page(k: dict, path: Path, head: str, max_costly: int) -> str:
    body = [head.replace("@TITLE@", _e(kernel_title(k))), "<p><a href='index.html'>all kernels</a></p>",
            f"<h1>{_e(k['name'])} [{_e(k.get('target'))}]</h1>",
            f"<p>{_e(k.get('specialisation') or '')}</p>",
            f"<p>{_e(k['path'])}; costs from {_e(k.get('facts_from'))}; time: {_e(k.get('time_basis', ''))}; "
            f"total cost {k['totals']['score']:g}</p>"]
    body.append("<h2>Findings</h2>")
    if k["findings"]:
        body.append("<ul>")
        for f in sorted(k["findings"], key=sort_key):
            body.append(f"<li class='{_e(f['severity'])}'>{_e(f['severity'])} <b>{_e(f['code'])}</b> "
                        f"{'(fixable)' if f.get('fixable') else ''} {_e(f['where'])} <code>{_e(f['op'])}</code>: "
                        f"{_e(f['message'])}</li>")
        body.append("</ul>")
    else:
        body.append("<p>none</p>")
    costly = sorted((op for op in k["ops"] if op["cost"]["score"] > 0),
                    key=lambda o: (-o["cost"]["score"], o["key"]))[:max_costly]
    body.append("<h2>Costliest ops</h2>")
    if not costly:
        body.append("<p>no op costs anything</p>")
    for op in costly:
        body += _op_detail(op)
    body.append("<h2>Source</h2>")
    body += _source_section(k)
    shown = [op for op in k["ops"] if not trivial(op)]
    folded = [op for op in k["ops"] if trivial(op)]
    body.append(f"<h2>All ops ({len(shown)} shown, {len(folded)} trivial folded)</h2>")
    body += _sortable(HEADERS, [[_e(c) for c in _row(op)] for op in shown], numeric=(7, 8, 11))
    if folded:
        body.append(f"<details><summary>{len(folded)} trivial ops (views, matrix operands, ops that cost nothing)"
                    f"</summary>")
        body += _sortable(HEADERS, [[_e(c) for c in _row(op)] for op in folded], numeric=(7, 8, 11))
        body.append("</details>")
    body.append("</body></html>")
    path.write_text("\n".join(body))
    return str(path)
