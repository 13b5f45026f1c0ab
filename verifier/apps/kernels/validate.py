"""Validate one compiled kernel: its PTX against its TTIR, element by element, for one CTA per
program id.

For each program id of the launch, the TTIR (:mod:`.reference`) and the PTX
(:mod:`.machine`) run over the same symbolic inputs (:mod:`.memory`, :mod:`.terms`); afterwards
every byte either wrote to global memory is compared:

* an element both wrote must hold the same term (interned ids equal, or equal under
  :class:`~.match.Matcher`'s identities);
* an element only one of them wrote is wrong (a missing store, or a store the reference does not
  make: a dropped mask);
* terms that differ are *wrong* only when a concrete witness (:func:`~.match.witness`) tells them
  apart; otherwise the kernel is *unsupported* (an identity we do not know).

Verdicts: ``valid``, ``wrong`` (with the first wrong element), ``unsupported`` (the op, instruction
or identity outside the subset), ``unknown`` (out of time). A data race or an access to shared
memory before its asynchronous copy landed is ``wrong`` too (:class:`~layoutverify.apps.ptxsim.Hazard`):
it is wrong whatever the data.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from layoutverify.apps.ptxsim import Hazard, SimError, parse_ptx
from layoutverify.apps.ptxsim.state import TAG0, UNDEF, from_uint
from layoutverify.core.errors import LayoutError, ParseError

from . import terms as T
from .machine import SymbolicMachine, term_codes, who_decode
from .match import Matcher, explain_dots, render, witness
from .memory import Memory, MemoryError_
from .reference import RefError, Reference, Unsupported, Val
from .ttir import Function, TType, parse_ttir

DEFAULT_TIME_LIMIT = 300.0
#: integer arguments the launch does not give take this value (a multiple of 16, as Triton's
#: divisibility specialisation may require); the grid and program ids default to two programs
DEFAULT_INT_ARG = 64


class BadLaunch(LayoutError):
    """The launch does not fit the kernel (a missing or ill-typed argument, a value that breaks the
    compiled specialisation)."""


@dataclass
class Launch:
    """How the kernel is run: integer scalar arguments by source name, the grid and the program
    ids validated; ``views`` gives buffers a logical shape for messages (``{"a_ptr": [M, K]}``)."""
    args: dict = field(default_factory=dict)
    grid: tuple = (1, 1, 1)
    pids: list = field(default_factory=lambda: [(0, 0, 0)])
    views: dict = field(default_factory=dict)
    #: pointer arguments whose buffers hold concrete data (they steer control or addresses):
    #: ``{NAME: {"i32": [...]}}``, ``{"i64": [...]}`` or ``{"pointers": [SYMBOL, ...]}`` (the
    #: base addresses of symbolic buffers named in ``symbols``)
    buffers: dict = field(default_factory=dict)
    #: symbolic buffers that no argument names (reached through pointers in ``buffers``):
    #: ``{SYMBOL: {"dtype": "f16", "shape": [R, C]}}``
    symbols: dict = field(default_factory=dict)
    #: tensor descriptors passed by value (host-side ``TensorDescriptor``): ``{NAME: {"shape": [...],
    #: "strides": [...], "padding": "zero"}}``; each describes a symbolic buffer of its own
    descriptors: dict = field(default_factory=dict)

    @classmethod
    def from_json(cls, d: dict) -> "Launch":
        """A launch from its JSON document (``NAME.launch.json``); grid and program ids are padded to
        three axes."""
        grid = tuple(int(x) for x in (list(d.get("grid", [1])) + [1, 1])[:3])
        pids = [tuple(int(x) for x in (list(p) + [0, 0])[:3]) for p in d.get("pids", [[0]])]
        return cls(args=dict(d.get("args", {})), grid=grid, pids=pids, views=dict(d.get("views", {})),
                   buffers=dict(d.get("buffers", {})), symbols=dict(d.get("symbols", {})),
                   descriptors=dict(d.get("descriptors", {})))


@dataclass
class KernelOutcome:
    """The verdict on one kernel (``valid``, ``wrong``, ``unsupported``, ``unknown``), with the reason,
    the first wrong element, and the counts of what was compared and executed."""
    name: str
    verdict: str                       # valid | wrong | unsupported | unknown
    reason: str = ""
    first_wrong: dict | None = None
    pids: list = field(default_factory=list)
    elements: int = 0                  # stored elements compared (all program ids)
    unspecified: int = 0               # of them, elements the reference computes from undefined inputs
    instructions: int = 0              # PTX instructions executed (all program ids)
    seconds: float = 0.0
    arch: str | None = None
    triton: str | None = None
    path: str | None = None

    def to_json(self) -> dict:
        """The outcome as a JSON object (seconds rounded to the millisecond)."""
        return {"name": self.name, "verdict": self.verdict, "reason": self.reason, "first_wrong": self.first_wrong,
                "pids": [list(p) for p in self.pids], "elements": self.elements, "unspecified": self.unspecified,
                "instructions": self.instructions,
                "seconds": round(self.seconds, 3), "arch": self.arch, "triton": self.triton, "path": self.path}


class _Wrong(Exception):
    def __init__(self, info: dict):
        super().__init__(info.get("what", "wrong"))
        self.info = info


class _Undecided(Exception):
    """Terms differ structurally but agree on every witness: an identity we do not know."""


# -- setting up one run -------------------------------------------------------------------------------
def _int_arg(launch: Launch, name: str, index: int, ty: TType, attrs: dict) -> int:
    """The launch's value of argument ``name`` (or ``#index``: its position among the kernel's
    arguments, for TTIR that does not keep argument names, Triton < 3.4)."""
    key = name if name in launch.args else f"#{index}"
    if key not in launch.args:
        raise BadLaunch(f"the launch gives no value for the integer argument {name!r} "
                        f"(give it, e.g. --arg {name}=64)")
    v = launch.args[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise BadLaunch(f"argument {name!r} must be an integer, got {v!r}")
    div = attrs.get("tt.divisibility")
    if div and v % div:
        raise BadLaunch(f"argument {name!r} = {v} breaks the compiled specialisation (divisible by {div})")
    bits = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64}[ty.elem]
    if not -(1 << (bits - 1)) <= v < (1 << bits) and ty.elem != "i1":
        raise BadLaunch(f"argument {name!r} = {v} does not fit {ty.elem}")
    return v


@dataclass
class _Setup:
    terms: T.Terms
    mem_ref: Memory
    mem_ptx: Memory
    ref_args: list
    params: dict                      # PTX parameter name -> bytes
    tensormaps: dict                  # PTX parameter name -> the tensor map it holds by value
    outputs: list                     # region indices (every region is compared)
    unspecified: int = 0              # stored elements whose reference value depends on undefined inputs


def _setup(fn: Function, prog, meta: dict, launch: Launch) -> _Setup:
    terms = T.Terms()
    mref, mptx = Memory(terms), Memory(terms)
    ref_args, params, tensormaps = [], {}, {}
    ptx_params = prog.params
    n_desc = 0
    if len(ptx_params) < len(fn.args):
        raise Unsupported(f"unsupported: the PTX has {len(ptx_params)} parameters, the TTIR {len(fn.args)}")
    symbols = {}
    for sym, spec in launch.symbols.items():
        dtype = str(spec.get("dtype", "")) if isinstance(spec, dict) else ""
        if dtype not in T.TYPE_BYTES:
            raise BadLaunch(f"launch: symbol {sym!r} needs a dtype (one of {', '.join(sorted(T.TYPE_BYTES))})")
        shape = spec.get("shape")
        tr = terms.region(sym, dtype, shape)
        symbols[sym] = mref.add_symbolic(sym, dtype, shape, term_region=tr)
        mptx.add_symbolic(sym, dtype, shape, term_region=tr)
    for i, (name, ty, attrs) in enumerate(zip(fn.arg_names, fn.arg_types, fn.arg_attrs)):
        pname = ptx_params[i]
        if ty.is_ptr and not ty.shape and name in launch.buffers:
            data = _concrete_buffer(name, launch.buffers[name], symbols)
            base = mref.add_concrete(name, data)
            mptx.add_concrete(name, data)
            ref_args.append(Val("ptr", ty, np.array(base, dtype=np.int64)))
            params[pname] = from_uint(np.array([base], dtype=np.uint64), 8)[0]
        elif ty.is_ptr and not ty.shape:
            elem = ty.pointee
            if elem not in T.TYPE_BYTES:
                raise Unsupported(f"unsupported: a pointer to {elem} ({name})")
            view = launch.views.get(name)
            tr = terms.region(name, elem, view)
            base = mref.add_symbolic(name, elem, view, term_region=tr)
            if mptx.add_symbolic(name, elem, view, term_region=tr) != base:
                raise AssertionError("the two memories must place buffers alike")
            ref_args.append(Val("ptr", ty, np.array(base, dtype=np.int64)))
            params[pname] = from_uint(np.array([base], dtype=np.uint64), 8)[0]
        elif ty.elem in ("i1", "i8", "i16", "i32", "i64") and not ty.shape:
            v = _int_arg(launch, name, i, ty, attrs)
            ref_args.append(Val("int", ty, np.array(v, dtype=np.int64)))
            w = max(1, {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8}[ty.elem])
            params[pname] = from_uint(np.array([v & ((1 << (8 * w)) - 1)], dtype=np.uint64), w)[0]
        elif ty.elem.startswith("desc<"):
            ref_args.append(_host_descriptor(name, ty, launch, terms, mref, mptx, meta, n_desc, pname, params,
                                             tensormaps, fn.arg_names, fn.arg_types))
            n_desc += 1
        elif ty.elem in ("f16", "bf16", "f32", "f64") and not ty.shape:
            tr = terms.region(name, ty.elem)
            leaf = terms.leaf(tr, 0)
            ref_args.append(Val("data", ty, np.array(leaf, dtype=np.int64)))
            params[pname] = term_codes(np.array([leaf]), T.TYPE_BYTES[ty.elem])[0]
        else:
            raise Unsupported(f"unsupported: a kernel argument of type {ty} ({name})")
    # Triton's hidden parameters: global scratch and profile scratch pointers
    programs = int(np.prod(launch.grid))
    sizes = [int(meta.get("global_scratch_size") or 0) * programs,
             int(meta.get("profile_scratch_size") or 0) * programs]
    for j, pname in enumerate(ptx_params[len(fn.args):]):
        size = sizes[j] if j < len(sizes) else 0
        base = mref.add_scratch(f"scratch{j}", size)
        if mptx.add_scratch(f"scratch{j}", size) != base:
            raise AssertionError("the two memories must place buffers alike")
        params[pname] = from_uint(np.array([base], dtype=np.uint64), 8)[0]
    return _Setup(terms, mref, mptx, ref_args, params, tensormaps, list(range(len(mref.regions))))


#: element type -> tensor-map element type (PTX ISA tensormap.replace .elemtype)
_MAP_ELEMTYPE = {"f16": 6, "bf16": 10, "f32": 7, "f64": 9, "e4m3": 0, "e5m2": 0, "i8": 0, "i32": 3}


def _host_descriptor(name, ty, launch, terms, mref, mptx, meta, ordinal, pname, params, tensormaps, fn_names,
                     fn_types):
    """A tensor descriptor passed by value: a symbolic buffer of its own, the reference's
    :class:`Descriptor` over it, and the PTX's tensor map (from Triton's ``tensordesc_meta``)."""
    from layoutverify.apps.ptxsim.tma import TensorMap
    from .reference import Descriptor
    from .ttir import parse_type
    spec = launch.descriptors.get(name)
    if not isinstance(spec, dict) or "shape" not in spec:
        raise BadLaunch(f"the launch gives no tensor for the descriptor argument {name!r} "
                        f"(\"descriptors\": {{\"{name}\": {{\"shape\": [...], \"strides\": [...]}}}})")
    block_txt = ty.elem[5:-1]
    dims = []
    rest = block_txt
    while "x" in rest and rest.split("x", 1)[0].isdigit():
        d, rest = rest.split("x", 1)
        dims.append(int(d))
    elem = parse_type(rest).elem
    shape = [int(x) for x in spec["shape"]]
    strides = [int(x) for x in spec.get("strides", [])] or \
        [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    if len(shape) != len(dims) or len(strides) != len(dims) or strides[-1] != 1:
        raise BadLaunch(f"descriptor {name!r}: {len(dims)} dimensions with a last stride of 1")
    tr = terms.region(name, elem, shape)
    base = mref.add_symbolic(name, elem, shape, term_region=tr)
    mptx.add_symbolic(name, elem, shape, term_region=tr)
    padding = str(spec.get("padding", "zero"))
    metas = (meta or {}).get("tensordesc_meta") or []
    if ordinal >= len(metas):
        raise Unsupported(f"unsupported: the metadata gives no tensor-map layout (tensordesc_meta) for {name!r}")
    md = metas[ordinal]
    eb = T.TYPE_BYTES[elem]
    rank = len(dims)
    tensormaps[pname] = TensorMap(
        global_address=base, rank=rank - 1, box_dim={i: int(md["block_size"][rank - 1 - i]) for i in range(rank)},
        global_dim={i: shape[rank - 1 - i] for i in range(rank)},
        global_stride={i: strides[rank - 2 - i] * eb for i in range(rank - 1)},
        element_stride={i: 1 for i in range(rank)}, elemtype=int(md.get("elem_type", _MAP_ELEMTYPE.get(elem, 0))),
        swizzle_mode=int(md["swizzle"]), fill_mode=1 if padding == "nan" else 0)
    params[pname] = np.zeros(128, dtype=np.int64)
    owned = descriptor_arguments(fn_names, fn_types).get(name, [])
    for arg, x in zip(owned, list(shape) + list(strides)):
        launch.args.setdefault(arg, x)
    return Val("desc", ty, Descriptor(base, tuple(shape), tuple(strides), tuple(dims), elem, padding))


def descriptor_arguments(names, types) -> dict:
    """A host descriptor's argument -> the names of the arguments that follow it with its shape
    (one i32 per dimension) and strides (one i64 per dimension)."""
    out = {}
    for i, (n, t) in enumerate(zip(names, types)):
        if t.elem.startswith("desc<"):
            rank = t.elem[5:-1].count("x")
            out[n] = list(names[i + 1:i + 1 + 2 * rank])
    return out


def _concrete_buffer(name: str, spec, symbols: dict) -> bytes:
    if not isinstance(spec, dict) or len(spec) != 1:
        raise BadLaunch(f"launch: buffer {name!r} must be one of {{\"i32\": [...]}}, {{\"i64\": [...]}}, "
                        f"{{\"pointers\": [SYMBOL, ...]}}")
    (kind, values), = spec.items()
    if not isinstance(values, list) or len(values) > 1 << 16:
        raise BadLaunch(f"launch: buffer {name!r}: a list of at most 65536 values")
    if kind == "pointers":
        missing = [v for v in values if v not in symbols]
        if missing:
            raise BadLaunch(f"launch: buffer {name!r} points to {missing[0]!r}, which \"symbols\" does not declare")
        return b"".join(int(symbols[v]).to_bytes(8, "little") for v in values)
    widths = {"i8": 1, "i16": 2, "i32": 4, "i64": 8}
    if kind not in widths or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise BadLaunch(f"launch: buffer {name!r}: integers as i8, i16, i32 or i64")
    w = widths[kind]
    try:
        return b"".join(int(v).to_bytes(w, "little", signed=True) for v in values)
    except OverflowError:
        raise BadLaunch(f"launch: buffer {name!r}: a value does not fit {kind}") from None


# -- comparing ---------------------------------------------------------------------------------------
def _element_terms(terms: T.Terms, codes: np.ndarray, elem: str) -> np.ndarray:
    """Byte codes (n, w) -> term ids (-1: bytes of several values, -2: undefined bytes)."""
    n, w = codes.shape
    t0 = (codes[:, 0] - TAG0) // 8
    exact = (codes >= TAG0).all(axis=1) & ((codes - TAG0) == 8 * t0[:, None] + np.arange(w)[None, :]).all(axis=1)
    conc = ((codes >= 0) & (codes < 256)).all(axis=1)
    out = np.full(n, -1, dtype=np.int64)
    out[exact] = t0[exact]
    if conc.any():
        bits = sum(codes[conc][:, k].astype(np.int64) << (8 * k) for k in range(w))
        out[conc] = [terms.const(elem, int(b)) for b in bits]
    out[(codes == UNDEF).all(axis=1)] = -2
    return out


def _describe_writer(prog, who: int, nbytes_hint: int | None = None) -> dict:
    if who < 0:
        return {}
    pc, thread, byte = who_decode(who)
    ins = prog.instructions[pc]
    src = ins.operands[1] if len(ins.operands) > 1 else None
    regs = list(src) if isinstance(src, tuple) else [src]
    from layoutverify.apps.ptxsim.semantics import _ty
    from layoutverify.apps.ptxsim.state import type_width
    try:
        w = type_width(_ty(ins))
        reg = regs[min(byte // w, len(regs) - 1)]
    except Exception:
        reg = None
    out = {"ptx_line": ins.line, "instruction": ins.text.strip()[:160], "thread": thread, "lane": thread % 32,
           "warp": thread // 32, "register": reg}
    if ins.loc and ins.loc[0] in prog.files:
        out["source"] = f"{prog.files[ins.loc[0]].rsplit('/', 1)[-1]}:{ins.loc[1]}"
    return out


def _logical(fn: Function, ref: Reference, region: int, off: int, base: int) -> dict:
    """Where a global byte sits in the reference's view: the store op and the element's index in
    the stored tensor."""
    addr = base + off
    for site in ref.store_sites:
        hits = np.nonzero(site["addr"] == addr - (addr - base) % T.TYPE_BYTES[site["elem"]])[0]
        if hits.size:
            i = int(hits[-1])
            shape = tuple(site["shape"])
            idx = [int(x) for x in np.unravel_index(i, shape)] if shape else []
            src = fn.source_line(site["op"].loc)
            out = {"tensor_index": idx, "ttir_line": site["op"].line, "masked": not bool(site["mask"][i])}
            if src:
                out["source"] = f"{src[0].rsplit('/', 1)[-1]}:{src[1]}"
            return out
    return {}


def _compare(fn, prog, st: _Setup, ref: Reference) -> int:
    """Compare every written byte; returns the number of elements compared, raises _Wrong /
    _Undecided."""
    terms, matcher = st.terms, Matcher(st.terms)
    evaluators: dict = {}
    unspecified = 0
    wrongs = []
    undecided = None
    compared = 0
    for r in st.outputs:
        reg_ref, reg_ptx = st.mem_ref.regions[r], st.mem_ptx.regions[r]
        eo, ec, _ = st.mem_ref.written_bytes(r)
        ao, ac, aw = st.mem_ptx.written_bytes(r)
        if not eo.size and not ao.size:
            continue
        es = reg_ref.elem_bytes if reg_ref.kind == "symbolic" else 1
        elem = terms.regions[reg_ref.term_region].dtype if reg_ref.kind == "symbolic" else "i8"
        elements = np.union1d(eo // es, ao // es)
        base = st.mem_ref.base(r)
        idx = elements[:, None] * es + np.arange(es)[None, :]
        e_codes = st.mem_ref.load((base + idx.reshape(-1)).astype(np.uint64), 1).reshape(idx.shape)
        a_codes = st.mem_ptx.load((base + idx.reshape(-1)).astype(np.uint64), 1).reshape(idx.shape)
        e_written = np.isin(idx, eo).any(axis=1)
        a_written = np.isin(idx, ao).any(axis=1)
        who_of = dict(zip(ao.tolist(), aw.tolist()))
        e_t = _element_terms(terms, e_codes, elem)
        a_t = _element_terms(terms, a_codes, elem)
        compared += int(e_written.sum())
        differs = np.nonzero((e_t != a_t) | (e_written != a_written) | (e_t < 0))[0]
        for k in differs.tolist():
            off = int(elements[k]) * es
            who = who_of.get(off, who_of.get(off + es - 1, -1))
            info = {"buffer": reg_ref.name, "element": int(elements[k]), "byte_offset": off}
            if not a_written[k]:
                info["what"] = "missing store: the reference stores this element, the PTX does not"
                info["expected"] = render(terms, int(e_t[k])) if e_t[k] >= 0 else "?"
            elif not e_written[k]:
                info["what"] = "extra store: the PTX stores an element the reference does not (a dropped mask?)"
                info["actual"] = render(terms, int(a_t[k])) if a_t[k] >= 0 else "bytes of several values"
            elif a_t[k] == -1:
                info["what"] = "the PTX stores bytes of several values (or of a value of another width)"
            elif e_t[k] < 0:
                raise Unsupported("unsupported: the reference stores bytes it cannot read as one value")
            elif matcher.same(int(e_t[k]), int(a_t[k])):
                continue
            elif terms.has_undef(int(e_t[k])):
                unspecified += 1         # the reference's value depends on undefined inputs: any value is right
                continue
            else:
                w = witness(terms, int(e_t[k]), int(a_t[k]), evaluators=evaluators)
                if w is None:
                    if undecided is None:
                        undecided = (info, int(e_t[k]), int(a_t[k]))
                    continue
                info["what"] = "wrong value"
                info["expected"] = render(terms, int(e_t[k]))
                info["actual"] = render(terms, int(a_t[k]))
                info["witness"] = w
                ex = explain_dots(terms, int(e_t[k]), int(a_t[k]))
                if ex:
                    info["dot"] = ex
            info["writer"] = _describe_writer(prog, who)
            info.update(_logical(fn, ref, r, off, base))
            wrongs.append((who if who >= 0 else 1 << 62, off, info))
    if wrongs:
        wrongs.sort(key=lambda x: (x[0] >> 16, x[0] & 0xFFFF, x[1]))
        info = wrongs[0][2]
        info["n_wrong"] = len(wrongs)
        raise _Wrong(info)
    if undecided is not None:
        info, e, a = undecided
        raise _Undecided(f"unsupported: {info['buffer']}[{info['element']}] holds a term that differs in "
                         f"form from the reference's and agrees with it on every witness (an identity not in "
                         f"the list): expected {render(terms, e, 160)}, got {render(terms, a, 160)}")
    st.unspecified += unspecified
    return compared


# -- the entry points ---------------------------------------------------------------------------------
def validate_kernel(ttir: str, ptx: str, meta: dict | None, launch: Launch, *, name: str | None = None,
                    time_limit: float = DEFAULT_TIME_LIMIT) -> KernelOutcome:
    """Validate the PTX ``ptx`` against the TTIR ``ttir`` (Triton's metadata ``meta``) for every
    program id of ``launch``. Bad input (unreadable TTIR or PTX, a launch that does not fit the
    kernel) raises :class:`~layoutverify.core.errors.LayoutError`; everything else is an outcome."""
    meta = meta or {}
    t0 = time.perf_counter()
    fn = parse_ttir(ttir)
    prog = parse_ptx(ptx)
    out = KernelOutcome(name=name or fn.name, verdict="valid", arch=str(meta.get("arch") or prog.target or ""),
                        triton=meta.get("triton_version"))
    threads = int(meta.get("num_warps") or 0) * int(meta.get("warp_size") or 32) or prog.threads
    if not threads:
        raise BadLaunch("cannot tell the kernel's thread count (no num_warps in the metadata, no .reqntid)")
    deadline = t0 + time_limit
    try:
        for pid in launch.pids:
            if any(p >= g for p, g in zip(pid, launch.grid)):
                raise BadLaunch(f"program id {list(pid)} is outside the grid {list(launch.grid)}")
            st = _setup(fn, prog, meta, launch)
            ref = Reference(fn, st.terms, st.mem_ref, st.ref_args, pid, launch.grid)
            ref.run()
            m = SymbolicMachine(prog, threads=threads, memory=st.mem_ptx, terms=st.terms, pid=pid, grid=launch.grid)
            m.param_values.update(st.params)
            m.tensormaps = {m.param_address(p): tm for p, tm in st.tensormaps.items()}
            m.deadline = deadline
            m.run()
            out.instructions += m.traffic.instructions
            out.elements += _compare(fn, prog, st, ref)
            out.unspecified += st.unspecified
            out.pids.append(pid)
    except _Wrong as w:
        out.verdict, out.first_wrong = "wrong", w.info
        out.reason = w.info.get("what", "")
        out.pids.append(pid)
    except Hazard as e:
        out.verdict, out.reason = "wrong", str(e)
        out.first_wrong = _hazard_info(e, m, prog, st.terms)
        out.pids.append(pid)
    except (Unsupported, _Undecided) as e:
        out.verdict, out.reason = "unsupported", str(e)
    except TimeoutError as e:
        out.verdict, out.reason = "unknown", str(e)
    except T.TermLimit as e:
        out.verdict, out.reason = "unsupported", f"refused: {e}"
    except (SimError, MemoryError_, RefError) as e:
        out.verdict, out.reason = "unsupported", f"unsupported: {e}"
    out.seconds = time.perf_counter() - t0
    return out


def _hazard_info(e: Hazard, m, prog, terms: T.Terms) -> dict:
    """A hazard as a first wrong element: the PTX line and source, the shared byte and the element
    it holds (or that the copy in flight carries)."""
    info = {"what": "hazard", "message": str(e)}
    if e.line is not None:
        info["ptx_line"] = e.line
        ins = next((i for i in prog.instructions if i.line == e.line), None)
        if ins is not None and ins.loc and ins.loc[0] in prog.files:
            info["source"] = f"{prog.files[ins.loc[0]].rsplit('/', 1)[-1]}:{ins.loc[1]}"
    if e.byte is not None:
        info["shared_byte"] = e.byte
        code = m.in_flight_code(e.byte)
        held = "in_flight" if code is not None else "held"
        if code is None:
            code = int(m.shared.data[e.byte])
        if code >= TAG0:
            t, k = divmod(code - TAG0, 8)
            info[f"element_{held}"] = f"{render(terms, t, 120)} (byte {k})"
    return info


def default_launch(ttir: str, given: dict | None = None) -> Launch:
    """The launch of a kernel whose caller gives none (or gives part): every integer argument
    :data:`DEFAULT_INT_ARG`, two programs (0 and 1) on a grid of two; ``given`` (a launch JSON
    object) overrides."""
    fn = parse_ttir(ttir)
    launch = Launch.from_json(given or {"grid": [2, 1, 1], "pids": [[0, 0, 0], [1, 0, 0]]})
    owned = {a for v in descriptor_arguments(fn.arg_names, fn.arg_types).values() for a in v}
    ints = [n for n, t in zip(fn.arg_names, fn.arg_types) if t.elem in ("i1", "i8", "i16", "i32", "i64")
            and not t.shape and n not in owned]   # a descriptor's shape and strides come with it
    positions = {f"#{i}": n for i, (n, t) in enumerate(zip(fn.arg_names, fn.arg_types)) if n in ints}
    unknown = sorted(set(launch.args) - set(ints) - set(positions) - {k for k in launch.args if k.startswith("#")})
    if unknown:
        raise BadLaunch(f"the kernel {fn.name} has no integer argument {unknown[0]!r} (it has: "
                        f"{', '.join(ints) or 'none'})")
    given_by_position = {positions[k] for k in launch.args if k in positions}
    for n in ints:
        if n not in given_by_position:
            launch.args.setdefault(n, DEFAULT_INT_ARG)
    return launch


def validate_files(kf, launch: Launch | dict | None = None, *, time_limit: float = DEFAULT_TIME_LIMIT
                   ) -> KernelOutcome:
    """Validate the kernel of :class:`~.folder.KernelFiles` ``kf``. The launch is ``launch``, else
    the kernel's ``NAME.launch.json``, else :func:`default_launch`."""
    ttir, ptx, meta, file_launch = kf.read()
    if isinstance(launch, Launch):
        the_launch = launch
    else:
        the_launch = default_launch(ttir, launch if launch is not None else file_launch)
    out = validate_kernel(ttir, ptx, meta, the_launch, name=kf.name, time_limit=time_limit)
    out.path = kf.folder or kf.ptx
    return out


def validate_kernel_folder(path: str, launch: Launch | dict | None = None, *,
                           time_limit: float = DEFAULT_TIME_LIMIT) -> KernelOutcome:
    """Validate the one kernel in folder ``path`` (TTIR, PTX and metadata JSON, as Triton's cache
    writes them): the entry point ``scan --validate`` uses. Bad input raises
    :class:`~layoutverify.core.errors.LayoutError`."""
    from .folder import find_kernels
    kernels = find_kernels([path])
    if len(kernels) != 1:
        raise BadLaunch(f"{path} holds {len(kernels)} kernels; give one kernel's folder")
    return validate_files(kernels[0], launch, time_limit=time_limit)


def model_stores(ttir: str, ptx: str, meta: dict | None, launch: Launch, *, seed: int = 1,
                 check_proxy_fences: bool = False) -> dict:
    """What the PTX stores, by this interpreter's model of the hardware, when every input element
    takes its witness value (:func:`~.match.leaf_values` of ``seed``): ``{buffer: {element index:
    value}}`` over the launch's program ids, plus ``"__inputs__": {buffer or float argument: the
    leaf region}`` so that a caller can build the same inputs. The GPU tests compare these values
    with a run of the same PTX on the device."""
    from .match import Evaluator
    meta = meta or {}
    fn, prog = parse_ttir(ttir), parse_ptx(ptx)
    threads = int(meta.get("num_warps") or 0) * int(meta.get("warp_size") or 32) or prog.threads
    out: dict = {}
    for pid in launch.pids:
        st = _setup(fn, prog, meta, launch)
        m = SymbolicMachine(prog, threads=threads, memory=st.mem_ptx, terms=st.terms, pid=pid, grid=launch.grid)
        m.param_values.update(st.params)
        m.tensormaps = {m.param_address(p): tm for p, tm in st.tensormaps.items()}
        m.check_proxy_fences = check_proxy_fences
        m.run()
        ev = Evaluator(st.terms, seed)
        for r, reg in enumerate(st.mem_ptx.regions):
            if reg.kind != "symbolic":
                continue
            offs, codes, _ = st.mem_ptx.written_bytes(r)
            if not offs.size:
                continue
            es = reg.elem_bytes
            elems = np.unique(offs // es)
            idx = elems[:, None] * es + np.arange(es)[None, :]
            raw = st.mem_ptx.load((st.mem_ptx.base(r) + idx.reshape(-1)).astype(np.uint64), 1).reshape(idx.shape)
            ids = _element_terms(st.terms, raw, st.terms.regions[reg.term_region].dtype)
            vals = out.setdefault(reg.name, {})
            for e, t in zip(elems.tolist(), ids.tolist()):
                vals[e] = ev.value(int(t)) if t >= 0 else float("nan")
        out["__inputs__"] = {reg.name: i for i, reg in enumerate(st.terms.regions)}
    return out
