"""Writing claim outcomes: a terminal table, JUnit XML, JSON and Markdown (for CI summaries)."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from .claims import Outcome

_MARK = {"holds": "ok", "fails": "FAIL", "error": "ERROR"}


def summary(outcomes: list[Outcome]) -> Counter:
    return Counter(o.status for o in outcomes)


def _witness_line(w) -> str:
    return json.dumps(w, sort_keys=True, default=str) if w else ""


def table(outcomes: list[Outcome]) -> str:
    """Fixed-width table: status, claim id, expected, got, method, time; failures explained."""
    rows = [("", "claim", "expect", "got", "method", "time")]
    for o in outcomes:
        rows.append((_MARK[o.status], o.claim.id, o.claim.expect, o.got or "-", o.method or "-",
                     f"{o.seconds * 1000:.0f} ms"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    for o in outcomes:
        if o.status != "holds":
            lines.append(f"{_MARK[o.status]} {o.claim.id}: {o.message}")
            if o.witness:
                lines.append(f"    witness: {_witness_line(o.witness)}")
    c = summary(outcomes)
    lines.append(f"{c['holds']} passed, {c['fails'] + c['error']} failed"
                 + (f" ({c['error']} errors)" if c["error"] else ""))
    return "\n".join(lines)


def write_junit(outcomes: list[Outcome], path: str | Path) -> None:
    """JUnit XML: one ``testsuite`` per corpus file, one ``testcase`` per claim."""
    suites: dict[str, list[Outcome]] = {}
    for o in outcomes:
        suites.setdefault(o.claim.source or "claims", []).append(o)
    root = ET.Element("testsuites", name="layoutverify", tests=str(len(outcomes)))
    for src, outs in suites.items():
        c = summary(outs)
        suite = ET.SubElement(root, "testsuite", name=Path(src).stem, tests=str(len(outs)),
                              failures=str(c["fails"]), errors=str(c["error"]), skipped="0",
                              time=f"{sum(o.seconds for o in outs):.3f}", file=src)
        for o in outs:
            case = ET.SubElement(suite, "testcase", classname=Path(src).stem, name=o.claim.name,
                                 time=f"{o.seconds:.3f}")
            if o.status == "fails":
                el = ET.SubElement(case, "failure", message=o.message, type=o.got or "fails")
                el.text = f"a: {o.claim.a}\nb: {o.claim.b}\nwitness: {_witness_line(o.witness)}"
            elif o.status == "error":
                el = ET.SubElement(case, "error", message=o.message, type="error")
                el.text = f"a: {o.claim.a}\nb: {o.claim.b}"
            out = ET.SubElement(case, "system-out")
            out.text = f"verdict: {o.got}; method: {o.method}"
    ET.indent(root)
    Path(path).write_text(ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n")


def write_json(outcomes: list[Outcome], path: str | Path) -> None:
    c = summary(outcomes)
    doc = {"summary": {"holds": c["holds"], "fails": c["fails"], "errors": c["error"], "total": len(outcomes)},
           "claims": [o.to_json() for o in outcomes]}
    Path(path).write_text(json.dumps(doc, indent=1, default=str) + "\n")


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def markdown(outcomes: list[Outcome]) -> str:
    c = summary(outcomes)
    head = "all claims hold" if c["holds"] == len(outcomes) else f"{c['fails'] + c['error']} claim(s) do not hold"
    lines = [f"## layoutverify: {head}", "",
             f"{c['holds']} hold, {c['fails']} fail, {c['error']} errors, {len(outcomes)} total.", "",
             "| | claim | expected | got | method | time |", "|---|---|---|---|---|---|"]
    for o in outcomes:
        icon = {"holds": "✅", "fails": "❌", "error": "⚠️"}[o.status]
        lines.append(f"| {icon} | `{_md(o.claim.id)}` | {o.claim.expect} | {o.got or '-'} | {o.method or '-'} | "
                     f"{o.seconds * 1000:.0f} ms |")
    bad = [o for o in outcomes if o.status != "holds"]
    if bad:
        lines += ["", "### Why", ""]
        for o in bad:
            lines.append(f"- `{_md(o.claim.id)}`: {_md(o.message)}")
            if o.witness:
                lines.append(f"  - witness: `{_md(_witness_line(o.witness))}`")
    return "\n".join(lines) + "\n"
