"""The installed Triton's own answer for a layout text, computed in a subprocess.

How: the text is put into a tiny TTGIR module as the type of a function argument
(``tensor<SHAPExf16, TEXT>`` for distributed encodings, ``!ttg.memdesc<SHAPExf16, TEXT,
#ttg.shared_memory, mutable>`` for shared ones; a whole type or alias definitions are used as
written), parsed by Triton's own MLIR parser (``ir.parse_mlir_module``), and the argument's
encoding is read back with ``GluonOpBuilder.get_gluon_layout_from_tensor`` /
``get_gluon_layout_from_memdesc`` (Triton's parse of the text, as a Gluon layout object) and
converted with ``GluonOpBuilder.to_linear_layout`` (Triton's ``toLinearLayout``). So both the
parse and the conversion are Triton's. If Triton rejects the text's *syntax* only because it is
an older spelling (``#triton_gpu.``, ``#ttg.mma``, ``CTAsPerCGA/CTASplitNum/CTAOrder``), the
text is re-printed in the current syntax from our parse and tried again; the resulting layout's
``name`` says so.

Why a subprocess: a malformed encoding can abort the process inside Triton's C++
(``LLVM ERROR``, failed assertions). A dead worker becomes :class:`~layoutverify.core.errors.NativeError`
for that case; the remaining cases run in a fresh worker. Many cases share one worker
(:func:`native_many`), about a millisecond each.

``padded_shared`` has no linear layout in Triton (padding is not F2-linear): :func:`native`
raises ``NativeError`` for it; ``native_many(..., raw=True)`` returns its linear component.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable

from layoutverify.core.errors import LayoutError, NativeError
from layoutverify.core.layout import Layout

#: seconds for one batch of cases in one worker
BATCH_TIMEOUT = 300

_ELEMENT_BY_BITS = {1: "i1", 8: "i8", 16: "f16", 32: "f32", 64: "f64"}


# ---------------------------------------------------------------------------------------------
# Building the request from the text
# ---------------------------------------------------------------------------------------------
def _dims(shape) -> str:
    return "x".join(str(int(s)) for s in shape)


def build_request(text: str, shape=None, **options) -> dict:
    """The module pieces for one case: ``{"prelude", "type", "shape", "memdesc", "modern"}``.

    ``modern`` is the same type written in the current syntax from our own parse (or None when
    that is the text itself or our parser fails).
    """
    from . import parser as P
    text = text.strip()
    try:
        parsed = P.parse_text(text)
    except LayoutError:
        parsed = None
    if parsed is None:
        # Our parser rejects it: hand it to Triton anyway, so Triton's own verdict is reported.
        if text.startswith(("tensor<", "!ttg.", "!triton_gpu.")):
            return {"prelude": "", "type": text, "shape": list(shape) if shape else None,
                    "memdesc": text.startswith("!"), "modern": None}
        if shape is None:
            raise NativeError("a shape is needed to ask Triton about this text (pass --shape)")
        memdesc = "shared" in text.split("<", 1)[0]
        return {"prelude": "", "type": _wrap(text, shape, memdesc, options.get("element_type")), "shape": list(shape),
                "memdesc": memdesc, "modern": None}
    attr = parsed.attr
    if attr is None:
        raise NativeError("the tensor type has no encoding attribute")
    memdesc = attr.kind in P.SHARED_KINDS
    buffers = None
    if parsed.container is not None:
        if shape is not None and tuple(shape) != tuple(parsed.shape):
            raise NativeError(f"--shape {_dims(shape)} disagrees with the type's shape {_dims(parsed.shape)}")
        shape = parsed.shape
        typ = parsed.main
        memdesc = parsed.container == "memdesc"
        elem = parsed.element_type
        if memdesc:
            # Triton's toLinearLayout(MemDescType): the allocation's trailing dims; for a
            # multi-buffered memdesc (more dims than the encoding), one buffer (see .memdesc)
            from . import memdesc as M
            shape = M.layout_shape(parsed)
            rank = M.encoding_rank(attr)
            if rank is not None and rank < len(shape):
                buffers = [int(b) for b in shape[:len(shape) - rank]]
                shape = shape[len(shape) - rank:]
    else:
        if shape is None:
            shape = _natural_shape(attr)
        if shape is None:
            raise NativeError(f"{P.describe(attr)} needs a shape to ask Triton (pass --shape)")
        elem = options.get("element_type") or _element_for(attr)
        typ = _wrap(parsed.main, shape, memdesc, elem)
    modern = None
    try:
        m_attr = modern_text(attr)
        if m_attr != attr.text:
            modern = {"prelude": "", "type": _wrap(m_attr, shape, memdesc, elem)}
    except LayoutError:
        modern = None
    out = {"prelude": parsed.prelude, "type": typ, "shape": [int(s) for s in shape], "memdesc": memdesc,
           "modern": modern}
    if buffers:
        out["buffers"] = buffers
    return out


def _wrap(attr_text: str, shape, memdesc: bool, elem: str | None) -> str:
    elem = elem or "f16"
    if memdesc:
        return f"!ttg.memdesc<{_dims(shape)}x{elem}, {attr_text}, #ttg.shared_memory, mutable>"
    return f"tensor<{_dims(shape)}x{elem}, {attr_text}>"


def _element_for(attr) -> str:
    bits = attr.params.get("elementBitWidth")
    if isinstance(bits, int) and not isinstance(bits, bool) and bits in _ELEMENT_BY_BITS:
        return _ELEMENT_BY_BITS[bits]
    return "f16"


def _natural_shape(attr):
    """``#ttg.linear`` / ``#ttg.shared_linear`` carry their own shape (inferred from the bases)."""
    from .ll import LL, dim_names
    keys = {"linear": ("register", "lane", "warp", "block"), "generic_linear": ("register", "lane", "warp", "block"),
            "shared_linear": ("offset", "block")}.get(attr.kind)
    if keys is None:
        if attr.kind == "padded_shared" and isinstance(attr.params.get("shape"), list):
            return tuple(attr.params["shape"])
        return None
    try:
        bases = {k: attr.params.get(k, []) for k in keys}
        rank = next(len(v[0]) for v in bases.values() if v)
        return tuple(s for _, s in LL.inferred(bases, dim_names(rank), require_surjective=False).outs)
    except Exception:  # malformed: let Triton say what is wrong, with a guess
        return None


# ---------------------------------------------------------------------------------------------
# Re-printing an attribute in the current (Triton 3.9) syntax
# ---------------------------------------------------------------------------------------------
def modern_text(attr) -> str:
    """``attr`` printed in current TTGIR syntax: ``#ttg.`` prefix, current kind names, and
    old CTA-layout parameters turned into ``CGALayout`` bases."""
    from .attr import Attr
    from .cga import OLD_PARAMS, cga_bases
    if "." in attr.kind:
        raise LayoutError(f"cannot re-print #{attr.kind}")
    params = dict(attr.params)
    if any(k in params for k in OLD_PARAMS):
        rank = _rank_of(attr)
        bases = cga_bases(attr, rank)
        for k in OLD_PARAMS:
            params.pop(k, None)
        if bases:
            params["CGALayout"] = bases
    if attr.kind == "shared":
        raise LayoutError("the old #triton_gpu.shared has no single current spelling")
    body = []
    positional = ""
    if "intervals" in params and "paddings" in params:
        positional = "[" + ", ".join(f"{i}:+{p}" for i, p in zip(params.pop("intervals"), params.pop("paddings"))) + "] "
    for k, v in params.items():
        body.append(f"{k} = {_value_text(v, Attr)}")
    if not body and not positional:
        return f"#ttg.{attr.kind}"
    return f"#ttg.{attr.kind}<{positional}{{{', '.join(body)}}}>"


def _rank_of(attr) -> int:
    for k in ("sizePerThread", "warpsPerCTA", "order", "CTAOrder"):
        v = attr.params.get(k)
        if isinstance(v, list):
            return len(v)
    raise LayoutError("cannot tell the rank")


def _value_text(v, Attr) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return "[" + ", ".join(_value_text(x, Attr) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_value_text(x, Attr)}" for k, x in v.items()) + "}"
    if isinstance(v, Attr):
        return modern_text(v)
    raise LayoutError(f"cannot print {v!r}")


# ---------------------------------------------------------------------------------------------
# Running the worker
# ---------------------------------------------------------------------------------------------
def _worker_env() -> dict:
    env = dict(os.environ)
    env.setdefault("TRITON_CACHE_DIR", tempfile.gettempdir() + "/layoutverify-triton-cache")
    env.pop("MLIR_ENABLE_DUMP", None)
    return env


def _worker_command(python: str | None) -> list[str]:
    """The worker's command line: this interpreter, or ``python`` (an interpreter holding another
    Triton release, of this Python version), which then also sees this interpreter's site
    directories, after its own, so that its Triton wins and this package imports."""
    if python is None:
        return [sys.executable, "-m", "layoutverify.adapters.triton.native", "--worker"]
    import site
    dirs = [d for d in site.getsitepackages() + [site.getusersitepackages()] if os.path.isdir(d)]
    boot = ("import site, sys\n"
            f"for d in {dirs!r}:\n    site.addsitedir(d)\n"
            "from layoutverify.adapters.triton.native import _worker\n_worker()\n")
    return [python, "-c", boot]


def _run_batch(requests: list[dict], timeout: float, lenient: bool = False,
               python: str | None = None) -> tuple[list[dict | None], str]:
    """Run ``requests`` through workers; a crash costs one case and a restart."""
    results: list[dict | None] = [None] * len(requests)
    version = ""
    todo = list(range(len(requests)))
    with tempfile.TemporaryDirectory(prefix="layoutverify-native-") as tmp:
        diag = os.path.join(tmp, "diag.txt")
        while todo:
            payload = json.dumps({"diag": diag, "dir": tmp, "lenient": lenient,
                                  "cases": [requests[i] for i in todo]})
            try:
                proc = subprocess.run(_worker_command(python), input=payload,
                                      capture_output=True, text=True, timeout=timeout, env=_worker_env(),
                                      cwd=tmp)
            except subprocess.TimeoutExpired:
                for i in todo:
                    results[i] = {"error": f"Triton did not answer within {timeout:.0f} s"}
                break
            done = 0
            for line in proc.stdout.splitlines():
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if "version" in msg:
                    version = msg["version"]
                    continue
                if "fatal" in msg:
                    for i in todo:
                        results[i] = {"error": msg["fatal"]}
                    return results, version
                if "i" in msg and 0 <= msg["i"] < len(todo):
                    results[todo[msg["i"]]] = msg
                    done = max(done, msg["i"] + 1)
            if done >= len(todo):
                break
            crashed = todo[done]
            why = _last_diagnostic(diag) or _tail(proc.stderr) or f"exit status {proc.returncode}"
            results[crashed] = {"error": f"Triton aborted on this layout: {why}", "crash": True}
            todo = todo[done + 1:]
    return results, version


def _last_diagnostic(path: str) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return ""
    return _tail(text)


def _tail(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith((" - ", "nanobind:"))
             and "leaked" not in ln and not ln.startswith("See https://nanobind")]
    for ln in lines:
        if "LLVM ERROR" in ln or "Assertion" in ln or "error:" in ln:
            return ln[:300]
    return lines[-1][:300] if lines else ""


def _to_layout(msg: dict, shape, version: str, raw: bool, buffers=None):
    """The worker's answer as a Layout (or NativeError). ``buffers``: the leading buffer dims of a
    multi-buffered memdesc; Triton answers for one buffer (its toLinearLayout cannot take the
    buffer dims), and that answer is repeated per buffer as ``memdesc_index`` addresses them
    (:mod:`.memdesc`), so it compares with :func:`parse`'s whole-allocation layout."""
    lay = _to_layout_one(msg, shape, version, raw)
    if buffers and isinstance(lay, Layout):
        from . import memdesc as M
        hw = "col" if "row" in lay.in_names else "offset"
        lay = M._with_buffers(lay, tuple(buffers), hw, None)
        lay.name = f"{lay.name} (one buffer from Triton, repeated for {'x'.join(map(str, buffers))} buffers)"
    return lay


def _to_layout_one(msg: dict, shape, version: str, raw: bool):
    if "error" in msg:
        return NativeError(f"installed Triton{' ' + version if version else ''}: {msg['error']}")
    ok = msg["ok"]
    if raw:
        return ok
    note = f"triton {version}".strip() + (" (text re-printed in current syntax)" if msg.get("modern") else "")
    if ok.get("padded"):
        return NativeError(f"installed Triton{' ' + version if version else ''} has no linear layout for "
                           f"padded_shared (padding is not F2-linear); its linear component is offset = "
                           f"{ok['offset']}, block = {ok['block']}")
    shp = ok.get("shape") or shape
    try:
        if ok.get("tmem"):
            return Layout.from_bases({"row": ok["row"], "col": ok["col"]}, list(shp), name=note)
        if "offset" in ok:
            return Layout.from_bases({"offset": ok["offset"], "block": ok["block"]}, list(shp), name=note)
        return Layout.from_bases({"register": ok["register"], "lane": ok["lane"], "warp": ok["warp"],
                                  "block": ok["block"]}, list(shp), name=note)
    except LayoutError as e:
        return NativeError(f"installed Triton gave a layout we cannot represent: {e}")


def native_many(cases: Iterable, *, raw: bool = False, printed: bool = False,
                timeout: float = BATCH_TIMEOUT, lenient: bool = False, python: str | None = None) -> list:
    """Triton's layouts for many cases at once, in one worker process.

    ``cases``: ``(text, shape)``, ``(text, shape, options)`` or ``{"text", "shape", "options"}``.
    Returns, in order, a :class:`~layoutverify.core.layout.Layout` or a :class:`NativeError` per case (with
    ``raw=True``: Triton's bases as a dict instead of a Layout; with ``printed=True`` as well, the
    dict also holds ``"printed"``: the module as Triton prints it, aliases and all). ``lenient``:
    skip Gluon's front-end argument checks (see :func:`_relax_gluon_checks`). A Blackwell
    tensor-memory encoding comes back over ``row, col`` (Gluon's object drops ``block``).
    ``python``: ask the Triton of another interpreter (same Python version) instead of the
    installed one, e.g. a virtual environment holding another release.
    """
    norm = []
    for c in cases:
        if isinstance(c, dict):
            norm.append((c["text"], c.get("shape"), dict(c.get("options") or {})))
        elif len(c) == 2:
            norm.append((c[0], c[1], {}))
        else:
            norm.append((c[0], c[1], dict(c[2] or {})))
    out: list[Any] = [None] * len(norm)
    reqs, where = [], []
    for k, (text, shape, opts) in enumerate(norm):
        try:
            req = build_request(text, shape, **opts)
            req["print"] = printed
            reqs.append(req)
            where.append(k)
        except NativeError as e:
            out[k] = e
        except LayoutError as e:
            out[k] = NativeError(str(e))
    if reqs:
        results, version = _run_batch(reqs, timeout, lenient, python)
        for k, req, msg in zip(where, reqs, results):
            out[k] = _to_layout(msg or {"error": "no answer"}, req["shape"], version, raw, req.get("buffers"))
    return out


def native(text: str, shape=None, **options) -> Layout:
    """Triton's own layout for ``text`` (see the module docstring); raises :class:`NativeError`."""
    res = native_many([(text, shape, options)])[0]
    if isinstance(res, Exception):
        raise res
    return res


# ---------------------------------------------------------------------------------------------
# The worker (runs in the subprocess: ``python -m layoutverify.adapters.triton.native --worker``)
# ---------------------------------------------------------------------------------------------
def _emit(obj) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _worker() -> None:
    job = json.loads(sys.stdin.read())
    diag_fd = os.open(job["diag"], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(diag_fd, 2)  # MLIR diagnostics and LLVM fatal errors land here
    try:
        import triton
        from triton._C.libtriton import gluon_ir, ir
        import triton.experimental.gluon.language  # noqa: F401  (the layout classes Triton returns)
    except Exception as e:  # noqa: BLE001
        _emit({"fatal": f"Triton with Gluon is not installed or failed to import ({type(e).__name__}: {e})"})
        return
    _emit({"version": getattr(triton, "__version__", "")})
    ctx = ir.context()
    ir.load_dialects(ctx)
    builder = gluon_ir.GluonOpBuilder(ctx)
    for name in ("get_gluon_layout_from_tensor", "get_gluon_layout_from_memdesc", "to_linear_layout"):
        if not hasattr(builder, name):
            _emit({"fatal": f"installed Triton {triton.__version__} lacks GluonOpBuilder.{name}"})
            return
    if job.get("lenient"):
        _relax_gluon_checks()
    mod_path = os.path.join(job["dir"], "case.mlir")
    for i, case in enumerate(job["cases"]):
        msg = _one_case(ir, builder, ctx, case, mod_path, diag_fd)
        if "error" in msg and case.get("modern"):
            alt = dict(case, **case["modern"])
            alt_msg = _one_case(ir, builder, ctx, alt, mod_path, diag_fd)
            if "ok" in alt_msg:
                msg = dict(alt_msg, modern=True)
        msg["i"] = i
        _emit(msg)


def _relax_gluon_checks() -> None:
    """Skip the argument checks of Gluon's Python layout classes (``verify()`` and the asserts of
    ``__post_init__``). Those are checks of Gluon's front end, not of Triton's MLIR parser and
    verifier: the attribute has already been parsed and verified by Triton when the worker wraps
    it in a Gluon object, so an encoding Gluon would not let a user construct (an ``amd_mfma``
    without ``version``, a one-element shared layout whose offset bases are empty) still reaches
    ``toLinearLayout`` unchanged. Used for the lit-test corpus (``native_many(lenient=True)``)."""
    import dataclasses
    import importlib
    import pkgutil
    import triton.experimental.gluon.language as gl
    mods = [gl]
    for info in pkgutil.walk_packages(gl.__path__, gl.__name__ + "."):
        try:
            mods.append(importlib.import_module(info.name))
        except Exception:  # noqa: BLE001  (optional back ends)
            continue
    for mod in mods:
        for obj in list(vars(mod).values()):
            if not (isinstance(obj, type) and dataclasses.is_dataclass(obj)) or obj.__module__ != mod.__name__:
                continue
            if callable(getattr(obj, "verify", None)):
                obj.verify = lambda self: None
            post = vars(obj).get("__post_init__")
            if post is not None:
                def lenient(self, _post=post):
                    try:
                        _post(self)
                    except AssertionError:
                        pass
                obj.__post_init__ = lenient


def _one_case(ir, builder, ctx, case: dict, mod_path: str, diag_fd: int) -> dict:
    os.ftruncate(diag_fd, 0)
    os.lseek(diag_fd, 0, os.SEEK_SET)
    src = (case.get("prelude") or "") + "\nmodule {\n  tt.func @f(%a: " + case["type"] + ") {\n    tt.return\n  }\n}\n"
    with open(mod_path, "w") as fh:
        fh.write(src)
    try:
        mod = ir.parse_mlir_module(mod_path, ctx)
    except Exception as e:  # noqa: BLE001
        return {"error": "rejected the text: " + (_read_diag(diag_fd) or str(e))}
    try:
        arg = mod.get_function("f").args(0)
        if case["memdesc"]:
            lay = builder.get_gluon_layout_from_memdesc(arg)
        else:
            lay = builder.get_gluon_layout_from_tensor(arg)
        extra = {"printed": mod.str_nodebug()} if case.get("print") else {}
        shape = case["shape"] or list(arg.get_shape())
        kind = type(lay).__name__
        if kind == "PaddedSharedLayout":
            return {"ok": {"padded": True, "offset": [list(b) for b in lay.offset_bases],
                           "block": [list(b) for b in (lay.cga_layout or [])],
                           "intervals": [list(p) for p in lay.interval_padding_pairs], "shape": list(shape), **extra}}
        ll = builder.to_linear_layout(lay._to_ir(builder), list(shape))
        lk = type(ll).__name__
        if lk == "DistributedLinearLayout":
            return {"ok": {"register": ll.reg_bases, "lane": ll.lane_bases, "warp": ll.warp_bases,
                           "block": ll.block_bases, "shape": list(ll.shape), **extra}}
        if lk == "_TensorMemoryLinearLayout":   # Blackwell TMEM; Gluon's object has no block bases
            return {"ok": {"row": ll.rows, "col": ll.cols, "shape": list(ll.shape), "tmem": True, **extra}}
        if lk == "SharedLinearLayout":
            return {"ok": {"offset": ll.offset_bases, "block": ll.block_bases, "shape": list(shape),
                           "alignment": getattr(ll, "alignment", None), **extra}}
        return {"error": f"to_linear_layout returned a {lk}, not a linear layout"}
    except Exception as e:  # noqa: BLE001
        diag = _read_diag(diag_fd)
        return {"error": f"{type(e).__name__}: {e}" + (f" ({diag})" if diag else "")}


def _read_diag(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    data = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
    text = data.decode(errors="replace")
    text = re.sub(r'loc\("[^"]*":\d+:\d+\):\s*', "", text)  # the position in our scratch module
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errs = [ln for ln in lines if "error" in ln.lower()]
    return " | ".join((errs or lines)[:3])[:500]


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        try:
            _worker()
        finally:
            sys.stdout.flush()
            os._exit(0)  # skip interpreter teardown: no nanobind leak report
