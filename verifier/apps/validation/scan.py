"""``scan --validate``: validate every distinct ``convert_layout`` of a scan, and every scanned
NVIDIA kernel whose cache folder holds its TTIR and PTX as a whole (:func:`validate_scanned_kernels`).

Each conversion op of the scan document (:mod:`layoutverify.apps.scan`) becomes a
:class:`~.conversion.Conversion`: its two layouts as the scan read them, the tensor shape, the
element type of the tensor, the module's target (``cuda:<arch>``) and Triton release (the cache
metadata's, else ``--triton-version``, else the installed one's). Conversions equal in
``(A, B, shape, dtype, target, release)`` are validated once; the result lists every op that
has it. Ops that cannot be validated (an AMD target, 64-bit or 1-bit elements, layouts the
scan could not read) are listed as ``unsupported`` with the reason, without compiling anything.
"""
from __future__ import annotations

import re

from .conversion import Conversion, validate_many
from .releases import WHEELS, major_minor

#: MLIR element types -> the kernel's dtype (the kernel moves bytes: 8-bit floats travel as i8)
ELEMENT_DTYPES = {"f16": "f16", "bf16": "bf16", "f32": "f32", "i32": "i32", "i16": "i16", "i8": "i8",
                  "f8E4M3FN": "fp8", "f8E5M2": "i8", "f8E4M3FNUZ": "i8", "f8E5M2FNUZ": "i8", "tf32": "f32"}


def _element_type(type_text: str) -> str | None:
    m = re.match(r"\s*tensor<\s*(?:\d+\s*x\s*)+([A-Za-z0-9_]+)", type_text or "")
    return m.group(1) if m else None


def _release(kernel: dict, triton_version: str | None, default: str) -> str:
    v = major_minor(str(kernel.get("triton_version") or ""))
    if v in WHEELS:
        return v
    return triton_version or default


def _conversion(kernel: dict, op: dict, release: str) -> Conversion | str:
    """The conversion of one ``convert`` op, or why it cannot be validated."""
    target = kernel.get("target") or ""
    if not target.startswith("cuda:"):
        return f"target {target or 'unknown'}: the interpreter executes NVIDIA PTX"
    try:
        arch = int(target.split(":", 1)[1])
    except ValueError:
        return f"target {target}: not a CUDA compute capability"
    if op.get("error") or not (op.get("source") or {}).get("spec") or not (op.get("target") or {}).get("spec"):
        return f"the scan could not read its layouts: {op.get('error') or 'no layout'}"
    elem = _element_type(op["source"].get("type") or "")
    dtype = ELEMENT_DTYPES.get(elem or "")
    if dtype is None:
        return f"element type {elem or '?'}: the kernel observes 8-, 16- and 32-bit elements"
    if dtype == "fp8" and arch < 89:
        dtype = "i8"
    return Conversion(op["source"]["spec"], op["target"]["spec"], tuple(op["source"]["shape"]), dtype, arch, release)


def validate_scan(doc: dict, *, triton_version: str | None = None, default_release: str = "3.9",
                  interpreters=None, cache_dir: str | None = None, progress=None) -> dict:
    """The ``validation`` section of a scan document (see docs/json-schema.md)."""
    groups: dict = {}
    skipped: dict = {}
    for k in doc.get("kernels", []):
        release = _release(k, triton_version, default_release)
        for op in k.get("ops", []):
            if op.get("role") != "convert":
                continue
            ref = {"kernel": k.get("name"), "path": k.get("path"), "key": op.get("key"), "where": _where(op)}
            c = _conversion(k, op, release)
            if isinstance(c, str):
                skipped.setdefault(c, []).append(ref)
                continue
            groups.setdefault(c.key(), (c, []))[1].append(ref)
    todo = [c for c, _ in groups.values()]
    results = validate_many(todo, interpreters=interpreters, cache_dir=cache_dir, progress=progress) if todo else []
    entries = []
    for (c, refs), v in zip(groups.values(), results):
        entries.append(dict(v.to_json(), ops=refs))
    for reason, refs in skipped.items():
        entries.append({"conversion": None, "verdict": "unsupported", "reason": reason, "ops": refs})
    counts = {"correct": 0, "wrong": 0, "unsupported": 0}
    for e in entries:
        counts[e["verdict"]] = counts.get(e["verdict"], 0) + 1
    entries.sort(key=lambda e: ({"wrong": 0, "unsupported": 1, "correct": 2}[e["verdict"]], str(e["ops"][0])))
    return {"distinct": len(groups), "ops": sum(len(e["ops"]) for e in entries), "verdicts": counts,
            "wrong": counts["wrong"] > 0, "results": entries}


def _where(op: dict) -> str | None:
    loc = op.get("loc") or {}
    return f"{loc.get('file')}:{loc.get('line')}" if loc.get("file") else None


def render_validation(section: dict) -> str:
    """A few lines for the terminal: the counts, then every wrong conversion with its first
    wrong element and where its ops are."""
    v = section["verdicts"]
    lines = [f"validate: {section['distinct']} distinct conversions ({section['ops']} ops): {v['correct']} correct, "
             f"{v['wrong']} wrong, {v['unsupported']} not validated"]
    for e in section["results"]:
        if e["verdict"] != "wrong":
            continue
        c = e["conversion"]
        ops = ", ".join(f"{r['kernel']} {r['where'] or r['key']}" for r in e["ops"][:3])
        lines.append(f"  WRONG (Triton {e['triton']}, sm_{c['arch'][3:]}, {c['dtype']}, "
                     f"{'x'.join(map(str, c['shape']))}) at {ops}")
        f = e.get("first_wrong")
        if f:
            lines.append(f"    first wrong: {f['b_location']} of B should hold {f['expected']} "
                         f"(A held it at {f['expected_held_in_a_at']}), received {f['received']}")
        elif e.get("reason"):
            lines.append(f"    {e['reason']}")
    return "\n".join(lines)



def validate_scanned_kernels(doc: dict, *, time_limit: float | None = None, progress=None) -> dict:
    """Whole-kernel validation (:mod:`layoutverify.apps.kernels`) of every scanned NVIDIA kernel
    whose folder holds its TTIR and PTX (a Triton cache's kernel folder): the PTX against the
    TTIR, element by element. Kernels without them (MLIR dumps, AMD targets) are counted as not
    validated, with the reason. Returns ``{"verdicts": {...}, "results": [outcome JSON, ...]}``."""
    import os

    from layoutverify.apps.kernels.folder import find_kernels
    from layoutverify.apps.kernels.validate import DEFAULT_TIME_LIMIT, validate_files
    from layoutverify.core.errors import LayoutError
    folders: dict[str, list[str]] = {}
    results = []
    for k in doc.get("kernels", []):
        path = k.get("path") or ""
        folder = os.path.dirname(path) if path and os.path.isfile(path) else None
        if not (k.get("target") or "").startswith("cuda:"):
            results.append({"name": k.get("name"), "path": path, "verdict": "unsupported",
                            "reason": f"target {k.get('target') or 'unknown'}: the interpreter executes NVIDIA PTX"})
        elif folder is None:
            results.append({"name": k.get("name"), "path": path, "verdict": "unsupported",
                            "reason": "no kernel folder with TTIR and PTX (an MLIR dump or a lone TTGIR file)"})
        else:
            folders.setdefault(folder, []).append(k.get("name"))
    for i, (folder, names) in enumerate(sorted(folders.items()), 1):
        if progress:
            progress(i, len(folders), names[0])
        try:
            kernels = find_kernels([folder])
        except LayoutError as e:
            results.append({"name": names[0], "path": folder, "verdict": "unsupported", "reason": str(e)})
            continue
        for kf in kernels:
            o = validate_files(kf, None, time_limit=time_limit or DEFAULT_TIME_LIMIT)
            results.append(o.to_json())
    counts: dict[str, int] = {"valid": 0, "wrong": 0, "unsupported": 0, "unknown": 0}
    for r in results:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    order = {"wrong": 0, "unknown": 1, "unsupported": 2, "valid": 3}
    results.sort(key=lambda r: (order.get(r["verdict"], 4), str(r.get("path")), str(r.get("name"))))
    return {"verdicts": counts, "wrong": counts["wrong"] > 0, "results": results}


def render_kernel_validation(section: dict) -> str:
    """The counts of whole-kernel validation, then each wrong kernel with its reason."""
    v = section["verdicts"]
    lines = [f"validate: {sum(v.values())} kernels: {v['valid']} valid, {v['wrong']} wrong, "
             f"{v['unsupported'] + v['unknown']} not validated"]
    for r in section["results"]:
        if r["verdict"] == "wrong":
            lines.append(f"  WRONG kernel {r['name']} ({r.get('path')}): {r.get('reason', '')}")
    return "\n".join(lines)


def scan_validation(doc: dict, triton_version: str | None, *, show: bool) -> dict:
    """``scan --validate``: :func:`validate_scan` with the environments, kernel cache and notices
    of the ``validate`` command; prints :func:`render_validation` when ``show``."""
    import sys

    from layoutverify.core.errors import LayoutError

    from .releases import Interpreters, Unavailable, cache_root, default_release
    interpreters = Interpreters(notice=lambda text: print(f"layoutverify: {text}", file=sys.stderr, flush=True))
    try:
        section = validate_scan(doc, triton_version=triton_version, default_release=default_release(),
                                interpreters=interpreters, cache_dir=str(cache_root() / "kernels"))
    except Unavailable as e:
        raise LayoutError(f"scan --validate: no Triton environment: {e}") from None
    section["kernels"] = validate_scanned_kernels(doc)
    section["wrong"] = section["wrong"] or section["kernels"]["wrong"]
    if show:
        print(render_validation(section))
        print(render_kernel_validation(section["kernels"]))
    return section
