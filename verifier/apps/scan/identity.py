"""What a compiled kernel *is*, so that two scans pair the same kernel and not merely the same name.

A kernel's **identity** is

* ``name`` (the public ``tt.func``; the cache metadata's ``name`` where there is one);
* ``target`` (``cuda:90``, ``hip:gfx942``: metadata ``target``, else ``ttg.target``);
* ``num_warps``, ``num_ctas`` (metadata, else ``ttg.num-warps`` / ``ttg.num-ctas``) and
  ``num_stages`` (metadata only: a module does not record it; ``None`` elsewhere);
* the **specialisation**:

  - ``signature``: every argument of the kernel as the module types it, with the attributes
    Triton specialises on (``tt.divisibility = 16``, ...): ``!tt.ptr<f16>:div16, i32:div16, f32``.
    fp16 and fp8 versions of one kernel differ here;
  - ``constexprs``: the metadata's ``constants``/``constexprs`` where a cache records them
    (Triton 3.6 - 3.9 do not);
  - ``tiles``: the shapes of the tensors the kernel loads from and stores to global memory and
    of the operands of its matrix instructions (sorted, distinct; a multi-buffered shared
    operand counts without its buffer dim). Block-size ``constexpr`` values, which Triton's
    cache does not record, appear here: the autotune configurations of a matmul differ in their
    tiles, their warps or their stages. The shapes of what the compiler converts or stages in
    between are left out, so a compiler that drops a conversion or buffers differently does not
    change the kernel's identity.

The **key** is that identity as one deterministic text (:func:`identity_key`). The compiling
release (``triton_version``), the cache's hash folder and the file's path are not part of it:
the same configuration compiled by Triton 3.8 and 3.9 is the same kernel.
"""
from __future__ import annotations

import re

from .ops import transfers

_ARG = re.compile(r"%[\w$.-]+\s*:\s*")


def _split_top(text: str, sep: str = ",") -> list[str]:
    out, depth, cur, instr = [], 0, [], False
    for i, ch in enumerate(text):
        if ch == '"' and (i == 0 or text[i - 1] != "\\"):
            instr = not instr
        if not instr:
            if ch in "([{<":
                depth += 1
            elif ch in ")]}>" and not (ch == ">" and i and text[i - 1] == "-"):
                depth -= 1
            elif ch == sep and depth == 0:
                out.append("".join(cur))
                cur = []
                continue
        cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur))
    return out


def _arguments(header: str) -> str | None:
    """The text between the parentheses of ``tt.func ... @name(...)``."""
    at = header.find("@")
    start = header.find("(", at)
    if at < 0 or start < 0:
        return None
    depth = 0
    for i in range(start, len(header)):
        if header[i] == "(":
            depth += 1
        elif header[i] == ")":
            depth -= 1
            if depth == 0:
                return header[start + 1:i]
    return None


def signature(header: str | None) -> list[str]:
    """The kernel's argument types with their specialisation attributes, in order:
    ``%a: !tt.ptr<f16> {tt.divisibility = 16 : i32} loc(...)`` -> ``!tt.ptr<f16>:div16``."""
    if not header:
        return []
    args = _arguments(header)
    if args is None:
        return []
    out = []
    for arg in _split_top(args):
        arg = re.sub(r"\s+loc\(.*\)\s*$", "", arg.strip())
        arg = _ARG.sub("", arg, count=1)
        attrs = ""
        brace = arg.find("{")
        if brace >= 0:
            attrs, arg = arg[brace:], arg[:brace]
        tags = []
        for key, value in re.findall(r"([\w.]+)\s*=\s*([-\w]+)", attrs):
            short = key.rsplit(".", 1)[-1]
            tags.append("div" + value if short == "divisibility" else f"{short}={value}")
        out.append(arg.strip() + "".join(":" + t for t in sorted(tags)))
    return out


TILE_ROLES = ("global_load", "global_store", "operand")


def _shape(type_text: str | None) -> list[int] | None:
    m = re.match(r"\s*(?:tensor|!\w+\.memdesc)<\s*((?:\d+\s*x\s*)+)", type_text or "")
    return [int(x) for x in re.findall(r"\d+", m.group(1))] if m else None


def tiles(module) -> list[str]:
    """Distinct shapes (``128x64``) of the tensors a kernel loads from and stores to global
    memory, copies into shared memory, and multiplies, sorted (see the module docstring)."""
    from .ops import ASYNC_COPY
    shapes = set()
    for op in module.ops:
        for tr in transfers(op):
            if tr.role not in TILE_ROLES and op.name not in ASYNC_COPY:
                continue
            dims = _shape(tr.source)
            if dims is None:
                continue
            if tr.role == "operand" and "memdesc" in (tr.source or "") and len(dims) > 2:
                dims = dims[-2:]
            shapes.add("x".join(str(d) for d in dims))
    return sorted(shapes, key=lambda s: ([int(x) for x in s.split("x")], s))


def identity(module) -> dict:
    """The identity of a module's kernel (see the module docstring)."""
    from .target import metadata_target
    meta = module.metadata or {}
    header = module.headers.get(module.kernel) if getattr(module, "headers", None) else None
    consts = meta.get("constexprs", meta.get("constants"))
    out = {"name": module.kernel,
           "target": metadata_target(meta) or module.target,
           "num_warps": meta.get("num_warps", module.num_warps),
           "num_stages": meta.get("num_stages"),
           "num_ctas": meta.get("num_ctas", module.num_ctas),
           "signature": signature(header),
           "tiles": tiles(module)}
    if isinstance(consts, dict) and consts:
        out["constexprs"] = {str(k): consts[k] for k in sorted(consts, key=str)}
    return out


def specialisation(ident: dict) -> str:
    """The specialisation as one line for reports: warps, stages, CTAs, signature, tiles."""
    parts = [f"warps={ident.get('num_warps')}"]
    if ident.get("num_stages") is not None:
        parts.append(f"stages={ident['num_stages']}")
    if ident.get("num_ctas") not in (None, 1):
        parts.append(f"ctas={ident['num_ctas']}")
    if ident.get("constexprs"):
        parts.append(",".join(f"{k}={v}" for k, v in ident["constexprs"].items()))
    if ident.get("signature"):
        parts.append("(" + ", ".join(ident["signature"]) + ")")
    if ident.get("tiles"):
        parts.append("tiles " + ",".join(ident["tiles"]))
    return " ".join(parts)


def identity_key(ident: dict) -> str:
    """The identity as one deterministic text: what two scans pair kernels by."""
    return f"{ident.get('name')} [{ident.get('target') or '?'}] {specialisation(ident)}"


def compatible(a: dict, b: dict) -> bool:
    """Whether two identities may be the same kernel when one of them lacks a field (a module
    read from an ``MLIR_ENABLE_DUMP`` log has no ``num_stages``): every field known on both
    sides is equal."""
    for k in ("name", "target", "num_warps", "num_stages", "num_ctas", "signature", "tiles", "constexprs"):
        x, y = a.get(k), b.get(k)
        if x is not None and y is not None and x != y:
            return False
    return True
