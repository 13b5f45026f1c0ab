"""Writing claim outcomes: a terminal table, JUnit XML, JSON and Markdown (for CI summaries)."""
from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from layoutverify.apps.claims import Outcome
from layoutverify.core.files import write_text

_MARK = {"holds": "ok", "fails": "FAIL", "error": "ERROR", "known": "KNOWN", "finding": "FINDING"}


def summary(outcomes: list[Outcome]) -> Counter:
    """The number of outcomes per status."""
    return Counter(o.status for o in outcomes)


def _witness_line(w) -> str:
    return json.dumps(w, default=str) if w else ""    # the prover's order: hardware, a, b


def table(outcomes: list[Outcome], quiet: bool = False) -> str:
    """Fixed-width table: status, claim id, expected, got, method, time; failures explained.
    ``quiet``: only the failures (not the known differences) and the summary line."""
    if quiet:
        lines = []
        for o in outcomes:
            if not o.passed:
                lines.append(f"{_MARK[o.status]} {o.claim.id}: {o.message}")
                if o.witness:
                    lines.append(f"    witness: {_witness_line(o.witness)}")
        return "\n".join(lines + [summary_line(outcomes)])
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
    lines.append(summary_line(outcomes))
    return "\n".join(lines)


def summary_line(outcomes: list[Outcome]) -> str:
    """The line that closes the table: passed, failed (errors among them), known differences and
    computed findings."""
    c = summary(outcomes)
    return (f"{c['holds']} passed, {c['fails'] + c['error']} failed"
            + (f" ({c['error']} errors)" if c["error"] else "")
            + (f", {c['known']} known differences" if c["known"] else "")
            + (f", {c['finding']} computed findings" if c["finding"] else ""))


def write_junit(outcomes: list[Outcome], path: str | Path) -> None:
    """JUnit XML: one ``testsuite`` per corpus file, one ``testcase`` per claim."""
    suites: dict[str, list[Outcome]] = {}
    for o in outcomes:
        suites.setdefault(o.claim.source or "claims", []).append(o)
    root = ET.Element("testsuites", name="layoutverify", tests=str(len(outcomes)))
    for src, outs in suites.items():
        c = summary(outs)
        suite = ET.SubElement(root, "testsuite", name=Path(src).stem, tests=str(len(outs)),
                              failures=str(c["fails"]), errors=str(c["error"]), skipped=str(c["known"] + c["finding"]),
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
            elif o.status in ("known", "finding"):   # reported, not failing: JUnit's "skipped" with the reason
                el = ET.SubElement(case, "skipped", message=o.message,
                                   type="known_difference" if o.status == "known" else "computed_finding")
                el.text = f"a: {o.claim.a}\nb: {o.claim.b}\nwitness: {_witness_line(o.witness)}"
            out = ET.SubElement(case, "system-out")
            out.text = f"verdict: {o.got}; method: {o.method}"
    ET.indent(root)
    write_text(path, ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n", what="JUnit file")


def json_document(outcomes: list[Outcome]) -> dict:
    """The ``check`` JSON document (docs/json-schema.md)."""
    from layoutverify.apps.jsonout import document
    c = summary(outcomes)
    return document("check", {"summary": {"holds": c["holds"], "fails": c["fails"], "errors": c["error"],
                                          "known": c["known"], "findings": c["finding"],
                                          "total": len(outcomes)},
                              "passed": all(o.passed for o in outcomes),
                              "claims": [o.to_json() for o in outcomes]})


def write_json(outcomes: list[Outcome], path: str | Path) -> None:
    """Write the ``check`` JSON document to ``path`` (``-``: stdout)."""
    text = json.dumps(json_document(outcomes), indent=1, default=str) + "\n"
    if str(path) == "-":
        sys.stdout.write(text)
        return
    write_text(path, text, what="JSON file")


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def markdown(outcomes: list[Outcome]) -> str:
    c = summary(outcomes)
    bad = c["fails"] + c["error"]
    head = "all claims hold" if not bad else f"{bad} claim(s) do not hold"
    if not bad and c["known"]:
        head += f" ({c['known']} known differences)"
    lines = [f"## layoutverify: {head}", "",
             f"{c['holds']} hold, {c['fails']} fail, {c['error']} errors, {c['known']} known differences, "
             f"{c['finding']} computed findings, "
             f"{len(outcomes)} total.", "",
             "| | claim | expected | got | method | time |", "|---|---|---|---|---|---|"]
    for o in outcomes:
        icon = {"holds": "✅", "fails": "❌", "error": "⚠️", "known": "🔶", "finding": "🔎"}[o.status]
        lines.append(f"| {icon} | `{_md(o.claim.id)}` | {o.claim.expect} | {o.got or '-'} | {o.method or '-'} | "
                     f"{o.seconds * 1000:.0f} ms |")
    notes = [o for o in outcomes if o.status != "holds"]
    if notes:
        lines += ["", "### Why", ""]
        for o in notes:
            lines.append(f"- `{_md(o.claim.id)}`: {_md(o.message)}")
            if o.witness:
                lines.append(f"  - witness: `{_md(_witness_line(o.witness))}`")
    return "\n".join(lines) + "\n"
