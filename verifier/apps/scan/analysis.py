"""Per-op reports of a scan: layouts, verdict, mechanisms, facts, cost and findings.

For every transfer (see :mod:`.ops`) of every module:

* ``source`` / ``target``: the types as printed and the shape;
* ``verdict``: for ``convert`` and ``view``, :func:`layoutverify.core.compare.compare` of the two;
* ``mechanism``: for ``convert``, the cheapest sufficient one (:func:`layoutverify.core.conversion.analyze`),
  with the witness ruling out the next cheaper, and ``register_move`` (``rename`` or ``select``)
  where the threads keep their elements; ``triton_mechanism``: what Triton's lowering uses
  (:mod:`.triton_choice`; for the other roles the memory instruction family);
* ``elements_moved``, ``vector_width``; ``bank_conflicts`` of shared-memory stores and loads
  through the op's own shared layout, under the target's bank model (:mod:`.target`);
* ``cost`` (:mod:`.facts`): the instructions the op executes, read from the compiled code at its
  source location where the cache holds PTX or AMDGCN (:mod:`.attribution`), else estimated
  from the layouts (``facts_from``), priced by the cost model of :mod:`layoutverify.core.cost`;
  ``score`` is that price in model cycles per CTA, the number the baseline gate compares;
* ``findings`` (:mod:`.findings`), each with the op's source location.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass

from layoutverify.adapters import parse_spec
from layoutverify.core.errors import LayoutError

from . import findings as F
from .attribution import attribute
from .facts import cost_of, estimate_counts, fastest_run, global_lines, matrix_instruction, rename_or_select, totals
from .identity import identity, identity_key, specialisation
from .ops import ASYNC_COPY, transfers
from .target import metadata_target, target_of
from .triton_choice import triton_choice

SCHEMA = "layoutverify/2"
KIND = "scan"
TRITON_VERSIONS = ("3.6", "3.7", "3.8", "3.9")
RANK = {"no_op": 0, "register_permute": 0, "intra_warp": 1, "intra_cta": 2, "cross_cta": 3, "impossible": 4}
#: finding code -> severity (kept for readers of the old table; see findings.FINDINGS)
FINDINGS = {code: sev for code, (sev, _) in F.FINDINGS.items()}
ELEMENT_BITS = {"f64": 64, "i64": 64, "f32": 32, "i32": 32, "tf32": 32, "f16": 16, "bf16": 16, "i16": 16,
                "i8": 8, "i1": 8}
MAX_ANALYZED_ELEMENTS = 1 << 20
COSTED_ROLES = ("convert", "store", "load", "global_load", "global_store")


@dataclass
class ScanOptions:
    """How a scan reads and analyses a module: the Triton release's semantics, the solver's time
    limit, the largest layout analysed, and whether to read facts from the compiled code."""
    triton_version: str | None = None   # default: the module's (cache metadata), else installed
    timeout_ms: int = 10_000
    max_elements: int = MAX_ANALYZED_ELEMENTS
    compiled: bool = True               # read facts from the compiled code beside the module


def element_bits(type_text: str) -> int | None:
    """Bits of the element type of ``tensor<64x64xf16, ...>`` / ``!ttg.memdesc<...>``; of the
    pointee for a tensor of pointers (``tensor<64x!tt.ptr<f16>>``: 16)."""
    m = re.match(r"\s*(?:tensor|!\w+\.memdesc)<\s*(?:(?:\d+|\?)\s*x\s*)*([^,>]+(?:<[^>]*>)?)", type_text)
    if not m:
        return None
    t = m.group(1).strip()
    p = re.match(r"!tt\.ptr<\s*([^,>]+)", t)
    if p:
        t = p.group(1).strip()
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


def _register_checks(lay, module, cache: _Cache) -> list[dict]:
    """Findings of one register layout against its module."""
    out = []
    if lay.kind != "register":
        return out
    want = {"warp": module.num_warps, "lane": module.threads_per_warp, "block": module.num_ctas}
    attr = {"warp": "ttg.num-warps", "lane": "ttg.threads-per-warp", "block": "ttg.num-ctas"}
    for dim, n in want.items():
        if n and lay.in_size(dim) != n and not (dim == "block" and lay.in_size(dim) == 1):
            out.append(F.finding("warp_count_mismatch", f"the layout has {lay.in_size(dim)} {dim}s, the module "
                                                        f"{attr[dim]} = {n}"))
    if any(s == 1 for s in lay.out_sizes):
        # a broadcast of a lower-rank tensor (128x1 row statistics in an MMA/MFMA layout): the copies
        # come from the encoding's tile along the size-1 dim, which no layout of that parent avoids
        return out
    key = ("rep", lay.fingerprint())
    rep = cache.results.get(key)
    if rep is None:
        from layoutverify.core.properties import replication
        rep = replication(lay)[0].get("register", 1) if lay.in_size() <= (1 << 22) else 1
        cache.results[key] = rep
    if rep > 1:
        out.append(F.finding("replicated_registers", f"each thread holds some element in {rep} registers "
                                                     f"({lay.in_size('register')} registers per thread)"))
    return out


def analyze_transfer(tr, op_name: str, module, target, cache: _Cache, options: ScanOptions, op_text: str = "") -> dict:
    """The layout part of one transfer's report (see the module docstring); costs come later.
    Layout errors are recorded, not raised. ``_estimate``/``_conflict`` (private) are the
    layout-only instruction counts."""
    version = _version(module, options)
    if tr.role == "store" and tr.target:
        bits = element_bits(tr.target) or 16
    else:
        bits = element_bits(tr.target or tr.source or "") or element_bits(tr.source or "") or 16
    rec: dict = {"role": tr.role, "source": {"type": short_type(tr.source)},
                 "target": {"type": short_type(tr.target)} if tr.target else None,
                 "element_bits": bits, "verdict": None, "mechanism": None, "triton_mechanism": None,
                 "elements_moved": None, "vector_width": None, "bank_conflicts": None, "findings": [],
                 "_estimate": {}, "_conflict": {}, "_elements": 0}
    if tr.operand:
        rec["operand"] = tr.operand
    try:
        src = _parse(cache, module, tr.source, version)
        dst = _parse(cache, module, tr.target, version) if tr.target else None
    except LayoutError as e:
        rec["error"] = str(e)
        return rec
    rec["source"]["spec"] = "triton:" + module.expand(tr.source)
    if dst is not None:
        rec["target"]["spec"] = "triton:" + module.expand(tr.target)
    rec["source"]["shape"] = list(src.out_sizes)
    rec["source"]["fingerprint"] = src.fingerprint()
    rec["_elements"] = src.out_size()
    if dst is not None:
        rec["target"]["shape"] = list(dst.out_sizes)
        rec["target"]["fingerprint"] = dst.fingerprint()
    for lay, text in ((src, tr.source), (dst, tr.target)):
        if lay is not None and text.lstrip().startswith("tensor<"):
            for f in _register_checks(lay, module, cache):
                if not any(g["code"] == f["code"] and g["message"] == f["message"] for g in rec["findings"]):
                    rec["findings"].append(f)
    big = max(src.in_size(), dst.in_size() if dst is not None else 0) > options.max_elements
    if big:
        rec["note"] = f"more than {options.max_elements} hardware locations: not analysed"
        return rec
    eb = max(1, bits // 8)
    try:
        if tr.role == "convert":
            _convert(rec, src, dst, bits, cache, options, version)
            rec["_estimate"], rec["_conflict"] = estimate_counts(
                "convert", op_name, src=src, dst=dst, element_bytes=eb, mechanism=rec["triton_mechanism"],
                move=rec.get("register_move"))
        elif tr.role in ("store", "load"):
            reg, mem = (src, dst) if tr.role == "store" else (dst, src)
            rec["triton_mechanism"] = "shared_store" if tr.role == "store" else "shared_load"
            reg_type = module.expand(tr.target if tr.role == "load" else tr.source)
            _banks(rec, reg, mem, bits, cache, target, reg_type if op_name not in ASYNC_COPY else None)
            rep = next(iter(rec["bank_conflicts"].values())) if rec.get("bank_conflicts") else None
            rec["_estimate"], rec["_conflict"] = estimate_counts(tr.role, op_name, element_bytes=eb,
                                                                 banks_report=rep, target=target, reg_type=reg_type,
                                                                 fill=" other " in op_text)
        elif tr.role in ("global_load", "global_store"):
            rec["triton_mechanism"] = tr.role
            rec["_estimate"], rec["_conflict"] = estimate_counts(tr.role, op_name, src=src, element_bytes=eb)
            rec["vector_width"] = max([w // eb for w in rec["_estimate"].get(tr.role, {})] or [None])
            rec["_layout"] = src
        elif tr.role in ("tmem_load", "tmem_store"):
            rec["triton_mechanism"] = tr.role
            rec["note"] = "tensor-memory access: tcgen05.ld/st, counted, not costed"
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
    return rec


def _verdict(a, b, cache, options) -> str:
    key = ("cmp", a.fingerprint(), b.fingerprint())
    v = cache.results.get(key)
    if v is None:
        from layoutverify.core.compare import compare
        v = compare(a, b, timeout_ms=options.timeout_ms).verdict
        cache.results[key] = v
    return v


def _required_encoding(target_type: str | None) -> str | None:
    """The encoding a consumer demands of a conversion's result, when the type says so: a matrix
    instruction's register operand (``#ttg.dot_op``)."""
    if target_type and re.search(r"#(?:ttg|triton_gpu)\.dot_op<|#dot_op", target_type):
        return "a matrix instruction's register operand (#ttg.dot_op)"
    return None


def _convert(rec, src, dst, bits, cache, options, version=None):
    from layoutverify.core.conversion import analyze
    rec["verdict"] = _verdict(src, dst, cache, options)
    key = ("cvt", src.fingerprint(), dst.fingerprint(), version)
    hit = cache.results.get(key)
    if hit is None:
        rep = analyze(src, dst, timeout_ms=options.timeout_ms)
        choice = triton_choice(src, dst, version)
        move = rename_or_select(src, dst, max(1, bits // 8)) if rep.mechanism == "register_permute" else None
        hit = (rep, choice, move)
        cache.results[key] = hit
    rep, choice, move = hit
    rec["mechanism"] = rep.mechanism
    rec["witness"] = rep.witness
    rec["elements_moved"] = rep.elements_moved
    rec["vector_width"] = rep.vector_width
    rec["triton_mechanism"] = choice.mechanism
    rec["triton_rule"] = choice.rule
    if move:
        rec["register_move"] = move
    if rep.mechanism == "no_op":
        required = _required_encoding(rec["target"]["type"] if rec.get("target") else None)
        if required:
            rec["findings"].append(F.finding("required_no_op_conversion",
                                             f"the two layouts are equal; the IR requires the conversion: the "
                                             f"result is {required}, a distinct encoding (no instruction is emitted)"))
        else:
            rec["findings"].append(F.finding("no_op_conversion",
                                             "the two layouts are equal: the conversion moves nothing and a "
                                             "compiler can drop it"))
    if choice.mechanism is not None and RANK[choice.mechanism] > RANK.get(rep.mechanism, 0) \
            and rep.mechanism != "no_op":
        need = move if rep.mechanism == "register_permute" else rep.mechanism
        rec["findings"].append(F.finding("shared_where_cheaper_suffices",
                                         F.cheaper_message(choice.mechanism, choice.rule, need)))


def _banks(rec, reg, mem, bits, cache, target, reg_type=None):
    """The bank report of a store or load through the op's shared layout (``rec["bank_conflicts"]``
    and a ``bank_conflicts`` finding): the per-thread vector model of
    :func:`layoutverify.core.banks.bank_conflicts`, or the gathering model of
    :func:`~layoutverify.core.banks.gathered_bank_conflicts` where Triton lowers the access to
    ``ldmatrix``/``stmatrix`` or gfx950's transposing reads (:func:`.facts.matrix_instruction`)."""
    if reg.kind != "register" or mem.kind != "memory":
        rec["note"] = "not a register <-> shared-memory pair"
        return
    if target.bank_arch is None:
        rec["note"] = f"no shared-memory bank model for {target.text}: bank conflicts not computed"
        return
    from layoutverify.core.banks import bank_conflicts, gathered_bank_conflicts
    if reg.out_sizes != mem.out_sizes:
        reg = _in_allocation(reg, mem)
        rec["note"] = ("the tensor is a sub-tile of its allocation (a memdesc_subslice view): banks computed "
                       "for the sub-tile at the allocation's origin")
    ebits = max(8, bits) if bits <= 64 else 64
    key = ("bank", reg.fingerprint(), mem.fingerprint(), tuple(getattr(mem, "padding", None) or ()), bits,
           target.bank_arch, reg_type)
    hit = cache.results.get(key)
    if hit is None:
        rep = bank_conflicts(reg, mem, ebits, arch=target.bank_arch).to_json()
        special = matrix_instruction(rec["role"], reg_type, target, ebits, rep["access_bytes"])
        if special is not None:
            gathered = gathered_bank_conflicts(reg, mem, ebits, arch=target.bank_arch,
                                               access_bytes=8 if special == "ds_read_tr" else 16,
                                               phases="lanes" if special == "ds_read_tr" else "words")
            rep = dict(gathered.to_json(), instruction=special,
                       per_thread_vector_model={k: rep[k] for k in ("vector", "access_bytes", "conflict_ways",
                                                                    "total_wavefronts", "total_ideal")})
        hit = cache.results[key] = rep
    rep = hit
    rec["bank_conflicts"] = {rec["triton_mechanism"]: rep}
    rec["vector_width"] = rep["vector"]
    if rep["conflict_ways"] > 1:
        how = f" through {rep['instruction']}" if rep.get("instruction") else ""
        rec["findings"].append(F.finding(
            "bank_conflicts", f"{rep['conflict_ways']}-way bank conflicts{how} ({target.bank_arch}, {rep['banks']} "
                              f"banks): {rep['total_wavefronts']} wavefronts per warp where {rep['total_ideal']} "
                              f"would do"))


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


# ---------------------------------------------------------------------------------------------
def _global_lines(rec: dict, counts: dict, compiled: bool) -> dict | None:
    """``{class: {width: lines per warp instruction}}`` of a global access (:func:`.facts.global_lines`).
    Memory is taken to be contiguous along the dim the layout's registers run along (Triton's
    coalescing pass orders a layout after its pointers' contiguity); the widths are the compiled
    code's where it has them. A compiled access narrower than the layout's runs (an unaligned
    pointer, a mask, or a layout whose fastest dim is not memory's) is priced along that dim too:
    more instructions, each touching the lines its lanes' elements lie in."""
    lay = rec.get("_layout")
    role = rec["role"]
    if lay is None or role not in counts:
        return None
    eb = max(1, rec["element_bits"] // 8)
    d, _ = fastest_run(lay)
    rank = len(lay.out_sizes)
    d = rank - 1 if d is None else d
    mem = d
    out = {}
    for w in counts[role]:
        v = global_lines(lay, eb, max(1, w // eb), mem)
        if v is not None:
            out[w] = v
    return {role: out}


def _cost(rec: dict, target, warps: int) -> dict:
    """The op's ``cost`` entry from its estimate and, where attributed, its compiled facts."""
    eb = max(1, rec["element_bits"] // 8)
    kw = dict(warps=warps, elements=rec["_elements"], element_bytes=eb, conflict=rec["_conflict"])
    est = rec["_estimate"]
    comp = rec.get("_compiled")
    if comp is not None:
        counts, basis = comp, ("compiled" if not rec.get("_estimated_classes") else "mixed")
    else:
        counts, basis = est, "layouts"
    lines = _global_lines(rec, counts, basis != "layouts")
    priced = cost_of(counts, target, lines=lines, **kw)
    out = {"model": "layoutverify.core.cost", "facts_from": basis, "instructions": totals(counts),
           "widths": {cls: {str(w): round(n, 3) for w, n in sorted(by.items())} for cls, by in sorted(counts.items())},
           "facts": priced["facts"], "cycles": priced["cycles"], "score": round(priced["cycles"], 1),
           "predicted_ns": priced["predicted_ns"], "time_basis": target.time_basis()}
    if rec["_conflict"]:
        out["conflict_factor"] = {k: round(v, 3) for k, v in sorted(rec["_conflict"].items())}
    notes = []
    if basis == "layouts":
        notes.append(rec.get("_attribution") or ("estimated from the layouts (no compiled code beside the module)"
                                                 if rec.get("_no_asm") else "estimated from the layouts"))
    elif rec.get("_attribution"):
        notes.append(rec["_attribution"])
    for cls, why in rec.get("_estimated_classes", []):
        notes.append(f"{cls}: estimated from the layouts ({why})")
    if notes:
        out["notes"] = notes
    if lines:
        out["lines_per_access"] = {cls: {str(w): round(v, 3) for w, v in sorted(by.items())} for cls, by in lines.items()}
    if basis != "layouts":
        e = cost_of(est, target, lines=_global_lines(rec, est, False), **kw)
        out["estimate"] = {"instructions": totals(est), "cycles": e["cycles"], "facts": e["facts"]}
    return out


def _global_findings(rec: dict) -> None:
    """``global_access_not_vectorised``: the compiled code moves fewer bytes per global access
    than the layout's contiguous run per thread allows (the layout's fastest dim is not the
    memory's, or alignment or a mask forbid the vector: each thread's run is split into narrower
    accesses)."""
    if rec["role"] not in ("global_load", "global_store") or rec["cost"]["facts_from"] == "layouts":
        return
    est = rec["_estimate"].get(rec["role"], {})
    got = rec["_compiled"].get(rec["role"], {}) if rec.get("_compiled") else {}
    if not est or not got:
        return
    want, have = max(est), max(got)
    if have < want:
        n_est, n_got = sum(est.values()), sum(got.values())
        rec["findings"].append(F.finding(
            "global_access_not_vectorised",
            f"{n_got:g} {rec['role'].replace('_', ' ')}s of {have} bytes per thread where the layout's contiguous "
            f"runs allow {n_est:g} of {want} bytes: the layout's fastest dim is not contiguous in memory, or the "
            f"pointers are not known to be aligned"))


def scan_module(module, options: ScanOptions, cache: _Cache | None = None) -> dict:
    cache = cache or _Cache()
    t0 = time.perf_counter()
    meta_t = metadata_target(module.metadata)
    target = target_of(module.target or meta_t, module.threads_per_warp)
    warps = module.num_warps or module.metadata.get("num_warps") or 4
    records = []
    seen: dict = {}
    for op in module.ops:
        trs = transfers(op)
        if not trs:
            continue
        loc = module.locations.resolve(op.loc_text)
        for tr in trs:
            rec = analyze_transfer(tr, op.name, module, target, cache, options, op.text)
            where = loc.short() if loc else f"line{op.line}"
            base = f"{op.name}@{where}" + (f":{tr.operand}" if tr.operand else "")
            seen[base] = seen.get(base, 0) + 1
            head = {"key": f"{base}#{seen[base]}", "op": op.name, "function": op.function, "module_line": op.line,
                    "loc": loc.to_json() if loc else None}
            head.update(rec)
            records.append(head)
    compiled, asm_note = _compiled_code(module, options)
    if compiled is not None:
        attribute(records, module, compiled)
    for r in records:
        r["_no_asm"] = compiled is None
        if r["role"] in COSTED_ROLES and "error" not in r:
            r["cost"] = _cost(r, target, warps)
            if compiled is not None:
                r["compiled"] = {"asm": compiled.kind, "lines": [{"line": n, "text": t} for n, t in r["_lines"]]}
            _global_findings(r)
        else:
            r["cost"] = {"model": "layoutverify.core.cost", "facts_from": "none", "instructions": {}, "cycles": 0.0,
                         "score": 0.0, "predicted_ns": 0.0}
        where = r["loc"]["text"] if r.get("loc") else f"{module.path}:{r['module_line']}"
        for f in r["findings"]:
            f["where"] = where
        for k in [k for k in r if k.startswith("_")]:
            del r[k]
    ident = identity(module)
    findings = sorted((dict(f, op=o["op"], key=o["key"]) for o in records for f in o["findings"]), key=F.sort_key)
    by_role: dict = {}
    by_triton: dict = {}
    by_basis: dict = {}
    for o in records:
        by_role[o["role"]] = by_role.get(o["role"], 0) + 1
        if o["role"] == "convert" and o.get("triton_mechanism"):
            by_triton[o["triton_mechanism"]] = by_triton.get(o["triton_mechanism"], 0) + 1
        if o["role"] in COSTED_ROLES:
            b = o["cost"]["facts_from"]
            by_basis[b] = by_basis.get(b, 0) + 1
    out = {
        "name": module.kernel, "path": module.path, "target": target.text,
        "identity": ident, "identity_key": identity_key(ident), "specialisation": specialisation(ident),
        "num_warps": module.num_warps, "threads_per_warp": module.threads_per_warp, "num_ctas": module.num_ctas,
        "num_stages": ident.get("num_stages"),
        "triton_version": module.metadata.get("triton_version"), "asm": module.asm,
        "facts_from": "compiled" if compiled is not None else "layouts",
        "time_basis": target.time_basis(),
        "ops": records, "findings": findings,
        "totals": {"ops": len(records), "by_role": by_role, "conversions_by_triton_mechanism": by_triton,
                   "costs_by_basis": by_basis,
                   "findings": len(findings), "errors": sum(1 for o in records if o.get("error")),
                   "score": round(sum(o["cost"]["score"] for o in records), 1)},
        "seconds": round(time.perf_counter() - t0, 4),
    }
    if asm_note:
        out["asm_note"] = asm_note
    if module.metadata.get("dump_pass"):
        out["dump_pass"] = module.metadata["dump_pass"]
    return out


def _compiled_code(module, options: ScanOptions):
    """The module's compiled code (PTX preferred, else AMDGCN), read; ``(None, why)`` without."""
    if not options.compiled:
        return None, "compiled code not read (--no-compiled)"
    path = module.asm.get("ptx") or module.asm.get("amdgcn")
    if not path:
        return None, None
    from .compiled import read_compiled
    try:
        return read_compiled(path), None
    except LayoutError as e:
        return None, f"compiled code unreadable: {e}"


def scan_modules(modules, options: ScanOptions, progress=None) -> dict:
    """The scan document of ``modules``; ``progress(done, total, name)`` after each module.
    Kernels are listed in the order of their identity keys (then paths): deterministic for any
    cache folder names."""
    from layoutverify import __version__
    cache = _Cache()
    kernels = []
    t0 = time.perf_counter()
    for i, m in enumerate(modules):
        kernels.append(scan_module(m, options, cache))
        if progress is not None:
            progress(i + 1, len(modules), m.kernel)
    kernels.sort(key=lambda k: (k["identity_key"], k["path"]))
    findings: dict = {}
    for k in kernels:
        for f in k["findings"]:
            findings[f["code"]] = findings.get(f["code"], 0) + 1
    return {"schema": SCHEMA, "kind": KIND, "tool": f"layoutverify {__version__}",
            "options": {"triton_version": options.triton_version},
            "kernels": kernels,
            "summary": {"kernels": len(kernels), "ops": sum(k["totals"]["ops"] for k in kernels),
                        "findings": dict(sorted(findings.items())),
                        "errors": sum(k["totals"]["errors"] for k in kernels),
                        "score": round(sum(k["totals"]["score"] for k in kernels), 1),
                        "seconds": round(time.perf_counter() - t0, 3)}}
