"""Per-op reports of a scan: layouts, verdict, mechanisms, numbers, cost and findings.

For every transfer (see :mod:`.ops`) of every module:

* ``source`` / ``target``: the types as printed and the shape;
* ``verdict``: for ``convert`` and ``view``, :func:`layoutverify.core.compare.compare` of the two;
* ``mechanism``: for ``convert``, the cheapest sufficient one (:func:`layoutverify.core.conversion.analyze`),
  with the witness ruling out the next cheaper; ``triton_mechanism``: what Triton's lowering
  uses (:mod:`.triton_choice`; for the other roles the memory instruction family);
* ``elements_moved``, ``vector_width``; ``bank_conflicts`` of shared-memory stores and loads
  through the op's own shared layout (:mod:`layoutverify.core.banks`);
* ``cost``: estimated instructions per thread (see :func:`estimate_cost`) and ``score``, the
  number the baseline gate compares (shared-memory wavefronts + shuffles + barriers); for
  conversions also ``predicted_ns``, the GPU cost model's time (:mod:`layoutverify.core.cost`,
  H100, one CTA, facts estimated from the two layouts and Triton's mechanism);
* ``findings``: see :data:`FINDINGS`, each with the op's source location.
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass

from layoutverify.adapters import parse_spec
from layoutverify.core.errors import LayoutError

from .ops import transfers
from .triton_choice import triton_choice

SCHEMA = "layoutverify/1"
KIND = "scan"
TRITON_VERSIONS = ("3.6", "3.7", "3.8", "3.9")
RANK = {"no_op": 0, "register_permute": 0, "intra_warp": 1, "intra_cta": 2, "cross_cta": 3, "impossible": 4}
#: finding code -> severity
FINDINGS = {
    "warp_count_mismatch": "error",          # a layout's warps/lanes/blocks disagree with the module
    "shared_where_cheaper_suffices": "warning",  # Triton uses shared memory (or shuffles) needlessly
    "no_op_conversion": "warning",           # convert_layout between equal layouts
    "bank_conflicts": "warning",             # a shared store/load with n-way bank conflicts
    "replicated_registers": "info",          # a thread holds the same element in several registers
}
ELEMENT_BITS = {"f64": 64, "i64": 64, "f32": 32, "i32": 32, "tf32": 32, "f16": 16, "bf16": 16, "i16": 16,
                "i8": 8, "i1": 8}
MAX_ANALYZED_ELEMENTS = 1 << 20


@dataclass
class ScanOptions:
    triton_version: str | None = None   # default: the module's (cache metadata), else installed
    timeout_ms: int = 10_000
    max_elements: int = MAX_ANALYZED_ELEMENTS


def element_bits(type_text: str) -> int | None:
    """Bits of the element type of ``tensor<64x64xf16, ...>`` / ``!ttg.memdesc<...>``; pointers 64."""
    m = re.match(r"\s*(?:tensor|!\w+\.memdesc)<\s*(?:(?:\d+|\?)\s*x\s*)*([^,>]+(?:<[^>]*>)?)", type_text)
    if not m:
        return None
    t = m.group(1).strip()
    if t.startswith("!tt.ptr"):
        return 64
    if t in ELEMENT_BITS:
        return ELEMENT_BITS[t]
    m2 = re.match(r"[a-z]*?(\d+)", t)
    if t.startswith(("f8", "fp8")) or "E4M3" in t or "E5M2" in t:
        return 8
    if t.startswith(("f4", "fp4", "i4")):
        return 4
    return int(m2.group(1)) if m2 else None


def short_type(type_text: str | None, limit: int = 200) -> str | None:
    if type_text is None:
        return None
    return type_text if len(type_text) <= limit else type_text[:limit - 3] + "..."


class _Cache:
    def __init__(self):
        self.layouts: dict = {}
        self.results: dict = {}


def _version(module, options: ScanOptions) -> str | None:
    if options.triton_version:
        return options.triton_version
    v = str(module.metadata.get("triton_version") or "")
    mm = ".".join(v.split(".")[:2])
    return mm if mm in TRITON_VERSIONS else None


def _parse(cache: _Cache, module, type_text: str, version):
    text = module.expand(type_text)
    key = (text, version)
    hit = cache.layouts.get(key)
    if hit is not None:
        if isinstance(hit, Exception):
            raise hit
        return hit
    opts = {"triton_version": version} if version else {}
    try:
        try:
            lay = parse_spec("triton:" + text, **opts)
        except LayoutError as e:
            # a multi-buffered memdesc (<3x64x64xf16, #shared>): the encoding covers the trailing dims
            m = re.match(r"(\s*!\w+\.memdesc<\s*)((?:\d+\s*x\s*)+)(.*)", text, re.S)
            if not (m and "rank" in str(e)):
                raise
            dims = re.findall(r"\d+", m.group(2))
            lay = None
            for k in range(1, len(dims)):
                try:
                    lay = parse_spec("triton:" + m.group(1) + "x".join(dims[k:]) + "x" + m.group(3), **opts)
                    break
                except LayoutError:
                    continue
            if lay is None:
                raise
    except LayoutError as e:
        cache.layouts[key] = e
        raise
    cache.layouts[key] = lay
    return lay


def _register_checks(lay, module, cache: _Cache) -> list[tuple[str, str]]:
    """(code, message) findings of one register layout against its module."""
    out = []
    if lay.kind != "register":
        return out
    want = {"warp": module.num_warps, "lane": module.threads_per_warp, "block": module.num_ctas}
    for dim, n in want.items():
        if n and lay.in_size(dim) not in (n,) and not (dim == "block" and lay.in_size(dim) == 1):
            out.append(("warp_count_mismatch", f"the layout has {lay.in_size(dim)} {dim}s, the module "
                                               f"{'ttg.num-warps' if dim == 'warp' else 'ttg.threads-per-warp' if dim == 'lane' else 'ttg.num-ctas'} = {n}"))
    key = ("rep", lay.fingerprint())
    rep = cache.results.get(key)
    if rep is None:
        from layoutverify.core.properties import replication
        rep = replication(lay)[0].get("register", 1) if lay.in_size() <= (1 << 22) else 1
        cache.results[key] = rep
    if rep > 1:
        out.append(("replicated_registers", f"each thread holds some element in {rep} registers "
                                            f"({lay.in_size('register')} registers per thread)"))
    return out


def distinct_per_thread(layout) -> int:
    """Distinct elements one thread holds (the largest over threads): ``2 ** rank`` of the
    register bases for F2 layouts, counted on the table otherwise."""
    bases = layout.f2_bases()
    if bases is not None:
        from layoutverify.core import f2 as F2
        pack = F2.Packing(layout.out_sizes)
        return 1 << F2.rank(pack.pack(v) for v in bases.get("register", []))
    import numpy as np
    from layoutverify.core.banks import dense_ids, distributed_columns
    c = distributed_columns(layout)
    thread = dense_ids(c["block"], c["warp"], c["lane"])
    pairs = np.unique(thread * layout.out_size() + c["element"])
    return int(np.bincount(pairs // layout.out_size()).max(initial=1))


def estimate_cost(role: str, mechanism: str | None, *, src=None, dst=None, bits: int = 16,
                  elements_moved: int = 0, banks: dict | None = None) -> dict:
    """Estimated instructions per thread for the mechanism Triton uses (an instruction-count
    model until a GPU cost model exists):

    * registers only: 0;
    * warp shuffles: one ``shfl`` per 32-bit word a thread receives from another lane
      (``elements_moved / threads`` elements of ``bits`` bits);
    * shared memory (``convert``): the source's distinct elements per thread stored and the
      target's loaded (replicated registers are moved once), 16 bytes per instruction (Triton 3.9 picks the scratch buffer's swizzling to vectorise; this is the
      best case, a lower bound: each thread moves at most 16 bytes per shared-memory
      instruction), plus 2 barriers;
    * ``store`` / ``load`` through a shared layout: the bank model's instructions and wavefronts.

    ``score`` = shuffles + shared-memory wavefronts (instructions where no bank model applies)
    + barriers."""
    ins = {"shfl": 0, "shared_store": 0, "shared_load": 0, "barrier": 0}
    wavefronts = 0
    if role == "convert" and mechanism in ("intra_cta", "cross_cta"):
        out_bound = "lower_bound"
    else:
        out_bound = "estimate"
    if role == "convert" and mechanism == "intra_warp" and dst is not None:
        threads = dst.in_size("lane") * dst.in_size("warp") * dst.in_size("block")
        per_thread = elements_moved / max(1, threads)
        ins["shfl"] = int(math.ceil(per_thread * max(1, bits) / 32))
    elif role == "convert" and mechanism in ("intra_cta", "cross_cta") and src is not None and dst is not None:
        ebytes = max(1, bits // 8)
        for key, lay in (("shared_store", src), ("shared_load", dst)):
            ins[key] = int(math.ceil(distinct_per_thread(lay) * ebytes / 16))
        ins["barrier"] = 2
        wavefronts = ins["shared_store"] + ins["shared_load"]
    elif role in ("store", "load") and banks:
        rep = next(iter(banks.values()))
        ins["shared_store" if role == "store" else "shared_load"] = int(rep["instructions"])
        wavefronts = int(rep["total_wavefronts"])
    score = ins["shfl"] + wavefronts + ins["barrier"]
    return {"model": "instruction-count", "instructions": ins, "accuracy": out_bound, "score": score,
            "predicted_ns": None}


def analyze_transfer(tr, module, cache: _Cache, options: ScanOptions) -> dict:
    """The report of one transfer (see the module docstring); layout errors are recorded, not raised."""
    version = _version(module, options)
    bits = element_bits(tr.target or tr.source or "") or 16
    if tr.role in ("store", "tmem_store") and tr.target:
        bits = element_bits(tr.target) or bits
    rec: dict = {"role": tr.role, "source": {"type": short_type(tr.source)},
                 "target": {"type": short_type(tr.target)} if tr.target else None,
                 "element_bits": bits, "verdict": None, "mechanism": None, "triton_mechanism": None,
                 "elements_moved": None, "vector_width": None, "bank_conflicts": None, "findings": []}
    if tr.operand:
        rec["operand"] = tr.operand
    try:
        src = _parse(cache, module, tr.source, version)
        dst = _parse(cache, module, tr.target, version) if tr.target else None
    except LayoutError as e:
        rec["error"] = str(e)
        rec["cost"] = estimate_cost(tr.role, None)
        return rec
    rec["source"]["spec"] = "triton:" + module.expand(tr.source)
    if dst is not None:
        rec["target"]["spec"] = "triton:" + module.expand(tr.target)
    rec["source"]["shape"] = list(src.out_sizes)
    rec["source"]["fingerprint"] = src.fingerprint()
    if dst is not None:
        rec["target"]["shape"] = list(dst.out_sizes)
        rec["target"]["fingerprint"] = dst.fingerprint()
    for lay, text in ((src, tr.source), (dst, tr.target)):
        if lay is not None and text.lstrip().startswith("tensor<"):
            for code, msg in _register_checks(lay, module, cache):
                if not any(f["code"] == code and f["message"] == msg for f in rec["findings"]):
                    rec["findings"].append({"code": code, "severity": FINDINGS[code], "message": msg})
    big = max(src.in_size(), dst.in_size() if dst is not None else 0) > options.max_elements
    if big:
        rec["note"] = f"more than {options.max_elements} hardware locations: not analysed"
        rec["cost"] = estimate_cost(tr.role, None)
        return rec
    try:
        if tr.role == "convert":
            _convert(rec, src, dst, bits, cache, options, version)
        elif tr.role in ("store", "load"):
            reg, mem = (src, dst) if tr.role == "store" else (dst, src)
            rec["triton_mechanism"] = "shared_store" if tr.role == "store" else "shared_load"
            _banks(rec, reg, mem, bits, cache)
        elif tr.role in ("tmem_load", "tmem_store"):
            rec["triton_mechanism"] = tr.role
            rec["note"] = "tensor-memory access: tcgen05.ld/st, not modelled"
        elif tr.role == "view":
            rec["triton_mechanism"] = "none"
            if src.out_sizes == dst.out_sizes:
                rec["verdict"] = _verdict(src, dst, cache, options)
            else:
                first = _first_buffer(src, dst)
                if first is not None:
                    rec["verdict"] = _verdict(first, dst, cache, options)
                    rec["note"] = "verdict of the view against the first buffer of the multi-buffered source"
        else:
            rec["triton_mechanism"] = "none"
    except LayoutError as e:
        rec["error"] = str(e)
    rec["cost"] = estimate_cost(tr.role, rec.get("triton_mechanism"), src=src, dst=dst, bits=bits,
                                elements_moved=rec.get("elements_moved") or 0, banks=rec.get("bank_conflicts"))
    if tr.role == "convert" and rec.get("triton_mechanism"):
        ns = _predicted_ns(src, dst, rec["triton_mechanism"], bits)
        rec["cost"]["predicted_ns"] = ns
        if ns is not None:
            rec["cost"]["predicted_for"] = "H100, one CTA (layoutverify.core.cost, facts estimated from the layouts)"
            for f in rec["findings"]:
                if f["code"] == "shared_where_cheaper_suffices":
                    best = _predicted_ns(src, dst, rec["mechanism"], bits)
                    if best is not None and ns > best:
                        f["saving_ns"] = round(ns - best, 2)
                        f["message"] += f" (cost model: {ns:.0f} ns -> {best:.0f} ns per CTA on an H100)"
    return rec


def _predicted_ns(src, dst, mechanism: str, bits: int):
    """The GPU cost model's time for Triton's mechanism (None where the model does not apply)."""
    try:
        from layoutverify.core.cost import estimate_facts, predicted_conversion_ns
    except ImportError:  # pragma: no cover - the model ships with the core
        return None
    try:
        return round(float(predicted_conversion_ns(estimate_facts(src, dst, mechanism, bits))), 2)
    except (LayoutError, KeyError, ValueError, ZeroDivisionError):
        return None


def _verdict(a, b, cache, options) -> str:
    key = ("cmp", a.fingerprint(), b.fingerprint())
    v = cache.results.get(key)
    if v is None:
        from layoutverify.core.compare import compare
        v = compare(a, b, timeout_ms=options.timeout_ms).verdict
        cache.results[key] = v
    return v


def _convert(rec, src, dst, bits, cache, options, version=None):
    from layoutverify.core.conversion import analyze
    rec["verdict"] = _verdict(src, dst, cache, options)
    key = ("cvt", src.fingerprint(), dst.fingerprint(), version)
    hit = cache.results.get(key)
    if hit is None:
        rep = analyze(src, dst, timeout_ms=options.timeout_ms)
        choice = triton_choice(src, dst, version)
        hit = (rep, choice)
        cache.results[key] = hit
    rep, choice = hit
    rec["mechanism"] = rep.mechanism
    rec["witness"] = rep.witness
    rec["elements_moved"] = rep.elements_moved
    rec["vector_width"] = rep.vector_width
    rec["triton_mechanism"] = choice.mechanism
    rec["triton_rule"] = choice.rule
    if rep.mechanism == "no_op":
        rec["findings"].append({"code": "no_op_conversion", "severity": FINDINGS["no_op_conversion"],
                                "message": "the two layouts are equal: the conversion moves nothing"})
    if choice.mechanism is not None and RANK[choice.mechanism] > RANK.get(rep.mechanism, 0) and rep.mechanism != "no_op":
        words = {"intra_cta": "shared memory", "intra_warp": "warp shuffles", "cross_cta": "distributed shared memory"}
        need = {"register_permute": "register moves", "intra_warp": "warp shuffles",
                "intra_cta": "shared memory"}[rep.mechanism]
        rec["findings"].append({"code": "shared_where_cheaper_suffices",
                                "severity": FINDINGS["shared_where_cheaper_suffices"],
                                "message": f"Triton uses {words[choice.mechanism]} ({choice.rule}); {need} suffice"})


def _banks(rec, reg, mem, bits, cache):
    if reg.kind != "register" or mem.kind != "memory":
        rec["note"] = "not a register <-> shared-memory pair"
        return
    from layoutverify.core.banks import bank_conflicts
    if reg.out_sizes != mem.out_sizes:
        reg = _in_allocation(reg, mem)
        rec["note"] = ("the tensor is a sub-tile of its allocation (a memdesc_subslice view): banks computed "
                       "for the sub-tile at the allocation's origin")
    key = ("bank", reg.fingerprint(), mem.fingerprint(), bits)
    rep = cache.results.get(key)
    if rep is None:
        rep = bank_conflicts(reg, mem, max(8, bits) if bits <= 64 else 64).to_json()
        cache.results[key] = rep
    rec["bank_conflicts"] = {rec["triton_mechanism"]: rep}
    rec["vector_width"] = rep["vector"]
    if rep["conflict_ways"] > 1:
        rec["findings"].append({"code": "bank_conflicts", "severity": FINDINGS["bank_conflicts"],
                                "message": f"{rep['conflict_ways']}-way bank conflicts: {rep['total_wavefronts']} "
                                           f"wavefronts per warp where {rep['total_ideal']} would do"})


def _first_buffer(src, dst):
    """Buffer 0 of a multi-buffered shared layout ``src`` (shape ``(n, ...) + dst shape``) as a
    layout of ``dst``'s shape, or None: the offsets ``[0, size of dst)`` of ``src``, which must
    all hold elements of buffer 0 (leading coordinates 0). Single-block layouts only."""
    from layoutverify.core.layout import Layout
    k = len(src.out_sizes) - len(dst.out_sizes)
    if src.kind != "memory" or k <= 0 or tuple(src.out_sizes[k:]) != tuple(dst.out_sizes):
        return None
    if src.in_names != ("offset",) or src.in_size() > MAX_ANALYZED_ELEMENTS:
        return None
    n = dst.out_size()
    table = src.table()[:n]
    if len(table) < n or table[:, :k].any():
        return None
    return Layout.from_table((("offset", n),), dst.out_dims, table[:, k:])


def _in_allocation(reg, mem):
    """``reg`` (a sub-tile, e.g. 64x16 of a 64x32 allocation) as a partial layout over ``mem``'s
    shape, at the origin: same F2 bases, larger logical dims."""
    from layoutverify.core.layout import Layout
    if len(reg.out_sizes) != len(mem.out_sizes) or any(r > m for r, m in zip(reg.out_sizes, mem.out_sizes)):
        raise LayoutError(f"register tile {list(reg.out_sizes)} does not fit the allocation {list(mem.out_sizes)}")
    bases = reg.f2_bases()
    if bases is None:
        raise LayoutError(f"register tile {list(reg.out_sizes)} of allocation {list(mem.out_sizes)}: "
                          f"only F2 layouts are placed in a larger allocation")
    return Layout.from_bases({k: [list(v) for v in vs] for k, vs in bases.items()}, mem.out_sizes)


def scan_module(module, options: ScanOptions, cache: _Cache | None = None) -> dict:
    cache = cache or _Cache()
    t0 = time.perf_counter()
    ops_out = []
    seen: dict = {}
    for op in module.ops:
        loc = module.locations.resolve(op.loc_text)
        for tr in transfers(op):
            rec = analyze_transfer(tr, module, cache, options)
            where = loc.short() if loc else f"line{op.line}"
            base = f"{op.name}@{where}" + (f":{tr.operand}" if tr.operand else "")
            seen[base] = seen.get(base, 0) + 1
            head = {"key": f"{base}#{seen[base]}", "op": op.name, "function": op.function, "module_line": op.line,
                    "loc": loc.to_json() if loc else None}
            head.update(rec)
            for f in head["findings"]:
                f["where"] = loc.short() if loc else f"{module.path}:{op.line}"
            ops_out.append(head)
    findings = [dict(f, op=o["op"], key=o["key"]) for o in ops_out for f in o["findings"]]
    by_role: dict = {}
    by_triton: dict = {}
    for o in ops_out:
        by_role[o["role"]] = by_role.get(o["role"], 0) + 1
        if o["role"] == "convert" and o.get("triton_mechanism"):
            by_triton[o["triton_mechanism"]] = by_triton.get(o["triton_mechanism"], 0) + 1
    return {
        "name": module.kernel, "path": module.path, "target": module.target or _meta_target(module.metadata),
        "num_warps": module.num_warps, "threads_per_warp": module.threads_per_warp, "num_ctas": module.num_ctas,
        "triton_version": module.metadata.get("triton_version"), "asm": module.asm,
        "ops": ops_out, "findings": findings,
        "totals": {"ops": len(ops_out), "by_role": by_role, "conversions_by_triton_mechanism": by_triton,
                   "findings": len(findings), "errors": sum(1 for o in ops_out if o.get("error")),
                   "score": sum(o["cost"]["score"] for o in ops_out)},
        "seconds": round(time.perf_counter() - t0, 4),
    }


def _meta_target(meta: dict) -> str | None:
    t = meta.get("target")
    if isinstance(t, dict) and "backend" in t:
        return f"{t['backend']}:{t.get('arch')}"
    return None


def scan_modules(modules, options: ScanOptions, progress=None) -> dict:
    """The scan document of ``modules``; ``progress(done, total, name)`` after each module."""
    from layoutverify import __version__
    cache = _Cache()
    kernels = []
    t0 = time.perf_counter()
    for i, m in enumerate(modules):
        kernels.append(scan_module(m, options, cache))
        if progress is not None:
            progress(i + 1, len(modules), m.kernel)
    findings = {}
    for k in kernels:
        for f in k["findings"]:
            findings[f["code"]] = findings.get(f["code"], 0) + 1
    return {"schema": SCHEMA, "kind": KIND, "tool": f"layoutverify {__version__}",
            "options": {"triton_version": options.triton_version},
            "kernels": kernels,
            "summary": {"kernels": len(kernels), "ops": sum(k["totals"]["ops"] for k in kernels),
                        "findings": findings, "errors": sum(k["totals"]["errors"] for k in kernels),
                        "score": sum(k["totals"]["score"] for k in kernels),
                        "seconds": round(time.perf_counter() - t0, 3)}}
