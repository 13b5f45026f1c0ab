"""IREE adapter: ``#iree_vector_ext.nested_layout<...>`` -> canonical register layouts.

Accepted text (IREE's assembly format; all seven fields, in this order; lists may be empty only
for a rank-0 layout, which has no canonical form)::

    #iree_vector_ext.nested_layout<subgroup_tile = [2, 1], batch_tile = [2, 4], outer_tile = [1, 1],
        thread_tile = [16, 4], element_tile = [1, 4], subgroup_strides = [1, 0], thread_strides = [1, 16]>

optionally named as in an MLIR file (``#nested = #iree_vector_ext.nested_layout<...>``) and
optionally followed by the vector type it lays out (``... : vector<64x64xf16>``). The vector shape
can also come from ``shape=``; without either it is the product of the tiles, and a given shape
must equal that product (IREE's ``isValidLayout``).

Semantics (IREE: ``VectorExtAttrs.td``, ``NestedLayoutAttr::computeThreadIds``,
``getDistributedShape``, ``basisFromSizesStrides``), per vector dim ``i``::

    index_i = ((((sg_i * batch_i + b_i) * outer_i + o_i) * thread_i + t_i) * element_i + e_i
    sg_i = (subgroup_id // subgroup_strides[i]) % subgroup_tile[i]     (0 when the stride is 0)
    t_i  = (thread_id   // thread_strides[i])   % thread_tile[i]       (0 when the stride is 0)

so subgroup x batch x outer x thread x element compose most significant first. ``thread_id`` is the
*flat* thread id ``lane + warp_size * warp`` (IREE delinearizes the workgroup thread id for both
splits; the subgroup id is ``thread_id // subgroup_size``). A zero stride on a dim of size > 1 leaves
the dim undistributed: only index 0 of that tile is held (a *partial* layout). Strides that
IREE's ``basisFromSizesStrides`` rejects (overlapping ranges, e.g. two dims with stride 1 and size
> 1) are rejected here too.

Canonical form (DESIGN.md §1): hardware ``register, lane, warp, block``:

* ``register``: the index into IREE's distributed (SIMT) vector, whose shape is
  ``[batch_0..batch_n-1, outer_0..outer_n-1, element_0..element_n-1]`` (``getDistributedShape``),
  flattened **row-major** (last element dim fastest);
* ``lane`` = ``thread_id % warp_size``: ``warp_size`` option, **default 64** (AMD wave64, where
  IREE uses these layouts for MFMA; IREE's test distribution also uses 64); pass 32 for wave32;
* ``warp`` = subgroup id: option ``num_subgroups``, default the span the subgroup (and thread)
  strides reach: ``max(subgroup_strides[i] * subgroup_tile[i])``; more subgroups replicate;
* ``block`` = 1.

:func:`native` asks IREE itself: it distributes ``vector.step``-encoded indices with IREE's own
``iree-opt`` (``transform.iree.test_gpu_vector_distribution``, subgroup size 64) and evaluates the
distributed IR per thread (a small interpreter for the arith/affine/vector ops it emits).
"""
from __future__ import annotations

import ast
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

import numpy as np

from layoutverify.core import expr as E
from layoutverify.core.errors import LayoutError, NativeError, ParseError, SizeLimitError, UnsupportedError
from layoutverify.core.layout import MAX_TABLE_LOCATIONS, Layout, logical_dims

FIELDS = ("subgroup_tile", "batch_tile", "outer_tile", "thread_tile", "element_tile",
          "subgroup_strides", "thread_strides")
TILES = FIELDS[:5]
PREFIX = "#iree_vector_ext.nested_layout"
KNOWN_OPTIONS = ("warp_size", "num_subgroups")
DEFAULT_WARP_SIZE = 64
MAX_TEXT = 100_000
MAX_RANK = 8
MAX_SIZE = 1 << 24


@dataclass(frozen=True)
class NestedLayout:
    """IREE's ``#iree_vector_ext.nested_layout``: per dim, the tiles (subgroup, batch, outer, thread,
    element; outermost first, each dim's extent their product) and the subgroup and thread strides
    (how the subgroup / lane id is split across dims)."""
    subgroup_tile: tuple
    batch_tile: tuple
    outer_tile: tuple
    thread_tile: tuple
    element_tile: tuple
    subgroup_strides: tuple
    thread_strides: tuple

    @property
    def rank(self) -> int:
        """The number of tensor dims."""
        return len(self.batch_tile)

    @property
    def shape(self) -> tuple:
        """The tensor shape: per dim, the product of its five tiles."""
        return tuple(int(np.prod([getattr(self, f)[i] for f in TILES])) for i in range(self.rank))

    @property
    def distributed_shape(self) -> tuple:
        """IREE's SIMT vector shape: batch..., outer..., element..."""
        return self.batch_tile + self.outer_tile + self.element_tile

    def __str__(self) -> str:
        body = ", ".join(f"{f} = [{', '.join(map(str, getattr(self, f)))}]" for f in FIELDS)
        return f"{PREFIX}<{body}>"

    def normalized(self) -> "NestedLayout":
        """IREE's ``NestedLayoutAttr::get``: strides of size-1 tiles become 0."""
        sg = tuple(0 if n == 1 else s for s, n in zip(self.subgroup_strides, self.subgroup_tile))
        th = tuple(0 if n == 1 else s for s, n in zip(self.thread_strides, self.thread_tile))
        return NestedLayout(self.subgroup_tile, self.batch_tile, self.outer_tile, self.thread_tile,
                            self.element_tile, sg, th)

    def span(self, which: str) -> int:
        """The ids spanned by the ``subgroup`` or ``thread`` tiles: the largest ``stride * tile`` of a
        dim that moves (1 if none)."""
        tiles, strides = (self.subgroup_tile, self.subgroup_strides) if which == "subgroup" else \
            (self.thread_tile, self.thread_strides)
        return max([s * n for s, n in zip(strides, tiles) if s > 0 and n > 1] or [1])


# ----------------------------------------------------------------------------------------------
# parsing
_TOKEN = re.compile(r"\s*(?:(?P<int>-?[0-9]+)|(?P<name>[A-Za-z_#][A-Za-z0-9_.$#]*)|(?P<punct>[<>\[\]=,:]))")


def _tokens(text: str):
    pos = 0
    out = []
    while True:
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            rest = text[pos:]
            if rest.strip():
                col = pos + len(rest) - len(rest.lstrip()) + 1
                raise ParseError("unexpected character", text, col, text[col - 1])
            break
        kind = m.lastgroup
        start = m.start(kind)
        out.append((kind, m.group(kind), start + 1))
        pos = m.end()
    out.append(("end", "<end>", len(text) + 1))
    return out


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self):
        return self.toks[self.i]

    def next(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def fail(self, msg, tok=None):
        kind, val, col = tok or self.peek()
        raise ParseError(msg, self.text, col, val)

    def expect(self, value, what=None):
        t = self.peek()
        if t[1] != value:
            self.fail(f"expected {what or repr(value)}")
        return self.next()

    def int_list(self, field):
        self.expect("[", f"'[' to start {field}")
        vals = []
        if self.peek()[1] == "]":
            self.next()
            return tuple(vals)
        while True:
            t = self.peek()
            if t[0] != "int":
                self.fail(f"expected an integer in {field}")
            self.next()
            v = int(t[1])
            if v < 0:
                self.fail(f"{field} entries must be non-negative", t)
            if v > MAX_SIZE:
                raise SizeLimitError(f"{field} entry {v} exceeds the limit {MAX_SIZE} at column {t[2]} (token {t[1]!r})")
            if field.endswith("_tile") and v < 1:
                self.fail(f"{field} entries must be positive", t)
            vals.append(v)
            if len(vals) > MAX_RANK:
                self.fail(f"{field} has more than {MAX_RANK} entries (rank limit)", t)
            if self.peek()[1] == ",":
                self.next()
                continue
            self.expect("]", f"',' or ']' in {field}")
            return tuple(vals)

    def layout(self):
        t = self.peek()
        # optional "#alias =" as written in MLIR files
        if t[0] == "name" and t[1] != PREFIX and t[1].startswith("#") and self.toks[self.i + 1][1] == "=":
            self.next()
            self.next()
            t = self.peek()
        if t[1] != PREFIX:
            self.fail(f"expected {PREFIX}<...>")
        self.next()
        self.expect("<")
        values = {}
        for k, field in enumerate(FIELDS):
            if k:
                self.expect(",", f"',' before {field}")
            ft = self.peek()
            if ft[1] != field:
                if ft[1] in FIELDS:
                    self.fail(f"field {ft[1]} out of order: IREE expects {field} here (fields: {', '.join(FIELDS)})")
                self.fail(f"expected field {field}")
            self.next()
            self.expect("=", f"'=' after {field}")
            values[field] = self.int_list(field)
        self.expect(">", "'>' to close the nested_layout")
        lay = NestedLayout(**values)
        ranks = {f: len(v) for f, v in values.items()}
        if len(set(ranks.values())) != 1:
            raise ParseError(f"all fields must have the same rank as the layout, got {ranks}", self.text, t[2], PREFIX)
        vec = None
        if self.peek()[1] == ":":
            self.next()
            vec = self.vector_type()
        if self.peek()[0] != "end":
            self.fail("unexpected text after the layout")
        return lay, vec

    def vector_type(self):
        t = self.peek()
        if t[0] != "name" or not t[1].startswith("vector"):
            self.fail("expected a vector<...> type")
        # the tokenizer reads "vector" then "<", then "16x16xf16" as a name or int+name
        self.next()
        self.expect("<")
        parts = []
        while self.peek()[1] != ">":
            if self.peek()[0] == "end":
                self.fail("unterminated vector type: missing '>'")
            kind, val, col = self.next()
            parts.append(val)
        self.next()
        body = "".join(parts)
        m = re.fullmatch(r"((?:[0-9]{1,12}x)*)([a-z][A-Za-z0-9_]*)", body)
        if not m or not _ELEMENT_TYPE.fullmatch(m.group(2)):
            self.fail(f"cannot read vector type vector<{body}>", t)
        dims = tuple(int(x) for x in m.group(1).split("x") if x)
        return dims


#: MLIR builtin element types of a ``vector<...>``
_ELEMENT_TYPE = re.compile(r"(?:i|si|ui)(?:[1-9][0-9]{0,3})|f16|f32|f64|bf16|tf32|index|"
                           r"f[468]E[0-9]M[0-9](?:FNUZ|FN|FNU|B11FNUZ)?")
#: largest tensor (number of elements) a nested layout may describe, as for Triton's tensor types
MAX_ELEMENTS = 1 << 32


def parse_attr(text: str) -> tuple[NestedLayout, tuple | None]:
    """The nested layout and the vector shape written after it (or None)."""
    if not isinstance(text, str):
        raise LayoutError(f"an IREE layout must be text, got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise ParseError(f"layout text of {len(text)} characters is too long", text, MAX_TEXT + 1)
    if not text.strip():
        raise ParseError("empty IREE layout text", text, 1)
    return _Parser(text).layout()


# ----------------------------------------------------------------------------------------------
def _check_basis(tiles, strides, what):
    """IREE's ``basisFromSizesStrides``: sorted by stride, each non-zero stride must be a multiple
    of the previous stride * size (no overlapping ranges)."""
    prev = 1
    for s, n in sorted((s, n) for s, n in zip(strides, tiles) if s > 0):
        if s % prev:
            raise LayoutError(f"{what} strides {list(strides)} with tiles {list(tiles)} overlap: IREE cannot "
                              f"delinearize them (basisFromSizesStrides fails)")
        prev = s * n


def _options(options):
    unknown = [k for k, v in options.items() if k not in KNOWN_OPTIONS and v is not None]
    if unknown:
        raise LayoutError(f"unknown IREE option(s) {', '.join(sorted(unknown))}; known: {', '.join(KNOWN_OPTIONS)}")
    ws = options.get("warp_size")
    ws = DEFAULT_WARP_SIZE if ws is None else ws
    ns = options.get("num_subgroups")
    for name, v in (("warp_size", ws), ("num_subgroups", ns)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise LayoutError(f"{name} must be a positive integer, got {v!r}")
    return ws, ns


def _resolve(text, shape, options):
    lay, vec = parse_attr(text)
    if lay.rank == 0:
        raise UnsupportedError("a rank-0 nested layout has no logical dims")
    lay = lay.normalized()
    implied = lay.shape
    if int(np.prod([float(s) for s in implied])) > MAX_ELEMENTS:
        raise SizeLimitError(f"nested layout of shape {list(implied)} has more than 2^32 elements")
    for given, what in ((vec, "the vector type"), (tuple(shape) if shape is not None else None, "shape")):
        if given is not None and tuple(given) != implied:
            raise LayoutError(f"{what} {list(given)} does not match the layout, whose tiles multiply to {list(implied)}")
    _check_basis(lay.subgroup_tile, lay.subgroup_strides, "subgroup")
    _check_basis(lay.thread_tile, lay.thread_strides, "thread")
    ws, ns = _options(options)
    warps = ns if ns is not None else max(lay.span("subgroup"), -(-lay.span("thread") // ws))
    return lay, ws, warps


def to_layout(lay: NestedLayout, warp_size: int = DEFAULT_WARP_SIZE, num_subgroups: int = 1, name=None) -> Layout:
    """Canonical ``(register, lane, warp, block) -> (dim0, ...)`` of a nested layout."""
    n = lay.rank
    regs = int(np.prod(lay.distributed_shape))
    if regs * warp_size * num_subgroups > (1 << 40):
        raise SizeLimitError("nested layout too large")
    lane, warp, reg = E.Var("lane"), E.Var("warp"), E.Var("register")
    # register: row-major over [batch..., outer..., element...]
    digits = {}
    div = 1
    names = [("batch", i) for i in range(n)] + [("outer", i) for i in range(n)] + [("element", i) for i in range(n)]
    for (kind, i), size in reversed(list(zip(names, lay.distributed_shape))):
        d = reg // div
        digits[(kind, i)] = d if div * size == regs else d % size
        div *= size

    def thread_digit(stride, size):
        if stride == 0 or size == 1:
            return E.Const(0)
        if stride * size <= warp_size and warp_size % (stride * size) == 0:
            d = lane // stride
            return d if stride * size == warp_size else d % size
        d = (lane + warp * warp_size) // stride
        return d % size

    def subgroup_digit(stride, size):
        if stride == 0 or size == 1:
            return E.Const(0)
        d = warp // stride
        return d if stride * size >= num_subgroups and num_subgroups % (stride * size) == 0 and stride * size == num_subgroups else d % size

    exprs = []
    for i in range(n):
        parts = [(subgroup_digit(lay.subgroup_strides[i], lay.subgroup_tile[i]), lay.subgroup_tile[i]),
                 (digits[("batch", i)], lay.batch_tile[i]),
                 (digits[("outer", i)], lay.outer_tile[i]),
                 (thread_digit(lay.thread_strides[i], lay.thread_tile[i]), lay.thread_tile[i]),
                 (digits[("element", i)], lay.element_tile[i])]
        acc, weight = E.Const(0), 1
        for d, size in reversed(parts):
            acc = acc + d * weight
            weight *= size
        exprs.append(acc)
    in_dims = [("register", regs), ("lane", warp_size), ("warp", num_subgroups), ("block", 1)]
    return Layout(in_dims, logical_dims(lay.shape), exprs, name=name)


_ALIAS_DEF = re.compile(r"#[\w.$-]+\s*=\s*#iree")


def looks_like(text: str) -> bool:
    """Whether unprefixed spec text is IREE's (used by the registry to guess the framework)."""
    t = text.lstrip()
    return t.startswith("#iree") or bool(_ALIAS_DEF.match(t))


def parse(text: str, shape=None, **options) -> Layout:
    """Parse an ``#iree_vector_ext.nested_layout<...>`` into a canonical layout (see module doc)."""
    lay, ws, warps = _resolve(text, shape, options)
    return to_layout(lay, ws, warps, name="iree:" + str(lay)[len(PREFIX):][:80])


def nested_from_mma(outer, thread, tstrides, element, subgroup=None, batch=None, subgroup_strides=None) -> NestedLayout:
    """The nested layout IREE builds from an ``MMASingleSubgroupLayout`` (outer/thread/tstrides/
    element), with optional subgroup and batch tiles (default 1)."""
    n = len(thread)
    one = (1,) * n
    return NestedLayout(tuple(subgroup or one), tuple(batch or one), tuple(outer), tuple(thread), tuple(element),
                        tuple(subgroup_strides or (0,) * n), tuple(tstrides)).normalized()


# ----------------------------------------------------------------------------------------------
# native: IREE's own distribution, evaluated per thread
NATIVE_WARP_SIZE = 64       # the subgroup size of IREE's test distribution transform


def _iree_opt() -> str:
    try:
        from iree.compiler.tools import binaries
        path = binaries.find_tool("iree-opt")
    except Exception:
        path = shutil.which("iree-opt")
    if not path:
        raise NativeError("iree-opt (pip package iree-base-compiler) is not installed; the IREE oracle needs it")
    return path


def _step_function(name: str, lay: NestedLayout) -> str:
    """A function computing the row-major flat index of every element of the vector, anchored to
    ``lay`` with ``iree_vector_ext.to_layout``."""
    shape = lay.shape
    n = len(shape)
    full = "x".join(map(str, shape)) + "xindex"
    lines = [f"func.func @{name}() -> vector<{full}> {{"]
    acc = None
    stride = 1
    for d in reversed(range(n)):
        s = shape[d]
        lines.append(f"  %s{d} = vector.step : vector<{s}xindex>")
        if n == 1:
            cur = f"%s{d}"
        else:
            moved = [shape[j] for j in range(n) if j != d] + [s]
            mt = "x".join(map(str, moved)) + "xindex"
            lines.append(f"  %b{d} = vector.broadcast %s{d} : vector<{s}xindex> to vector<{mt}>")
            if d == n - 1:
                cur = f"%b{d}"
            else:
                # moved dims: (others in order) + d; permutation putting d back in place
                others = [j for j in range(n) if j != d]
                perm = [others.index(j) if j != d else n - 1 for j in range(n)]
                lines.append(f"  %t{d} = vector.transpose %b{d}, [{', '.join(map(str, perm))}] : vector<{mt}> to vector<{full}>")
                cur = f"%t{d}"
        if stride != 1:
            lines.append(f"  %c{d} = arith.constant dense<{stride}> : vector<{full}>")
            lines.append(f"  %m{d} = arith.muli {cur}, %c{d} : vector<{full}>")
            cur = f"%m{d}"
        if acc is None:
            acc = cur
        else:
            lines.append(f"  %a{d} = arith.addi {acc}, {cur} : vector<{full}>")
            acc = f"%a{d}"
        stride *= s
    lines.append(f"  %l = iree_vector_ext.to_layout {acc} to layout({lay}) : vector<{full}>")
    lines.append(f"  return %l : vector<{full}>")
    lines.append("}")
    return "\n".join(lines)


_TRANSFORM = """
builtin.module attributes { transform.with_named_sequence } {
  transform.named_sequence @__transform_main(%variant_op: !transform.any_op {transform.readonly}) {
    %f = transform.structured.match ops{["func.func"]} in %variant_op : (!transform.any_op) -> !transform.any_op
    transform.iree.test_gpu_vector_distribution %f : !transform.any_op
    transform.yield
  }
}
"""


def distribute_with_iree(layouts: list[NestedLayout], timeout: float = 120) -> str:
    """Run IREE's distribution on step-encoded functions (one per layout); the distributed IR."""
    src = "\n".join(_step_function(f"f{k}", lay) for k, lay in enumerate(layouts)) + _TRANSFORM
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(src)
        path = f.name
    try:
        proc = subprocess.run([_iree_opt(), "--iree-transform-dialect-interpreter", "--canonicalize", "--cse",
                               "--mlir-print-local-scope", path], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise NativeError("iree-opt timed out distributing the layout") from None
    finally:
        import os
        os.unlink(path)
    if proc.returncode != 0:
        raise NativeError(f"iree-opt failed (exit {proc.returncode}): {proc.stderr.strip()[:500]}")
    return proc.stdout


def native(text: str, shape=None, **options) -> Layout:
    """IREE's own answer: distribute with ``iree-opt`` and evaluate every thread (warp size 64)."""
    lay, ws, warps = _resolve(text, shape, options)
    if ws != NATIVE_WARP_SIZE:
        raise UnsupportedError(f"IREE's test distribution uses subgroup size {NATIVE_WARP_SIZE}; "
                               f"native() cannot check warp_size={ws}")
    return native_many([lay], num_subgroups=[warps])[0]


def native_many(layouts: list[NestedLayout], num_subgroups: list[int] | None = None) -> list[Layout]:
    """:func:`native` for many layouts with one ``iree-opt`` run."""
    ir_text = distribute_with_iree(layouts)
    funcs = _Interpreter.functions(ir_text)
    out = []
    for k, lay in enumerate(layouts):
        warps = (num_subgroups or [None] * len(layouts))[k] or max(lay.span("subgroup"),
                                                                  -(-lay.span("thread") // NATIVE_WARP_SIZE))
        threads = NATIVE_WARP_SIZE * warps
        regs = int(np.prod(lay.distributed_shape))
        if threads * regs > MAX_TABLE_LOCATIONS:
            raise SizeLimitError("layout too large to evaluate natively")
        packed = _Interpreter(threads).run(funcs[f"f{k}"])           # (threads, *distributed_shape)
        if tuple(packed.shape[1:]) != lay.distributed_shape:
            raise NativeError(f"IREE distributed to {list(packed.shape[1:])}, expected {list(lay.distributed_shape)}")
        flat = packed.reshape(threads * regs)                      # row t * regs + r: register fastest
        coords = np.stack(np.unravel_index(flat, lay.shape), axis=1)
        in_dims = [("register", regs), ("lane", NATIVE_WARP_SIZE), ("warp", warps), ("block", 1)]
        out.append(Layout.from_table(in_dims, logical_dims(lay.shape), coords, name="iree-native:" + str(lay)[len(PREFIX):][:60]))
    return out


def _is(cls, x) -> bool:
    """``isinstance`` across MLIR Python binding versions (older ones need ``cls.isinstance``)."""
    if isinstance(x, cls):
        return True
    check = getattr(cls, "isinstance", None)
    return bool(check(x)) if check is not None else False


class _Interpreter:
    """Evaluates the distributed function for all threads at once: every value is an array whose
    first axis is the thread id."""

    def __init__(self, threads: int):
        self.T = threads

    @staticmethod
    def functions(ir_text: str) -> dict:
        from iree.compiler import ir
        ctx = ir.Context()
        module = ir.Module.parse(ir_text, ctx)
        out = {}
        for op in module.body.operations:
            o = op.operation
            if o.name == "func.func":
                name = str(o.attributes["sym_name"]).strip('"')
                out[name] = o
        # keep the context alive with the ops
        out["__ctx__"] = (ctx, module)
        return out

    def run(self, func):
        from iree.compiler import ir
        self.ir = ir
        env = {}
        block = func.regions[0].blocks[0]
        for op in block.operations:
            o = op.operation
            name = o.name
            if name == "func.return":
                return env[o.operands[0]]
            args = [env[v] for v in o.operands]
            res = self.eval(o, name, args)
            if len(o.results) == 1:
                env[o.results[0]] = res
            else:
                for r, v in zip(o.results, res):
                    env[r] = v
        raise NativeError("distributed function has no return")

    def _shape(self, value):
        t = value.type
        if _is(self.ir.VectorType, t):
            return tuple(self.ir.VectorType(t).shape)
        return ()

    def _b(self, x, shape):
        """Broadcast a per-thread value to (T, *shape)."""
        x = np.asarray(x, dtype=np.int64)
        if x.ndim == 0:
            return np.broadcast_to(x, (self.T,) + shape)
        return np.broadcast_to(x.reshape((x.shape[0],) + (1,) * (len(shape) - (x.ndim - 1)) + x.shape[1:]), (self.T,) + shape)

    def _ints(self, attr):
        return [int(x) for x in attr]

    def eval(self, o, name, args):
        ir = self.ir
        T = self.T
        rshape = self._shape(o.results[0]) if len(o.results) else ()
        if name == "arith.constant":
            a = o.attributes["value"]
            s = str(a)
            m = re.match(r"dense<(.*)>\s*:", s)
            if m:
                vals = np.asarray(ast.literal_eval(m.group(1)), dtype=np.int64)
                return self._b(np.broadcast_to(vals, rshape)[None], rshape)
            return np.full((T,), int(ir.IntegerAttr(a).value), dtype=np.int64)
        if name == "gpu.thread_id":
            return np.arange(T, dtype=np.int64)
        if name == "vector.step":
            return self._b(np.arange(rshape[0], dtype=np.int64)[None], rshape)
        if name in ("arith.addi", "arith.muli", "arith.subi", "arith.divui", "arith.divsi", "arith.remui",
                    "arith.remsi", "arith.floordivsi", "arith.andi", "arith.ori", "arith.xori", "arith.shli",
                    "arith.shrui", "arith.shrsi", "arith.minui", "arith.maxui", "arith.minsi", "arith.maxsi"):
            a, b = (self._b(x, rshape) for x in args)
            fn = {"arith.addi": np.add, "arith.muli": np.multiply, "arith.subi": np.subtract,
                  "arith.divui": np.floor_divide, "arith.divsi": np.floor_divide, "arith.floordivsi": np.floor_divide,
                  "arith.remui": np.mod, "arith.remsi": np.mod, "arith.andi": np.bitwise_and,
                  "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor, "arith.shli": np.left_shift,
                  "arith.shrui": np.right_shift, "arith.shrsi": np.right_shift, "arith.minui": np.minimum,
                  "arith.maxui": np.maximum, "arith.minsi": np.minimum, "arith.maxsi": np.maximum}[name]
            return fn(a, b)
        if name in ("arith.index_cast", "arith.index_castui", "iree_vector_ext.to_simd", "iree_vector_ext.to_simt"):
            return args[0]
        if name == "vector.broadcast":
            return self._b(args[0], rshape)
        if name == "vector.shape_cast":
            return np.asarray(args[0]).reshape((T,) + rshape)
        if name == "vector.transpose":
            perm = self._ints(o.attributes["permutation"])
            return np.transpose(args[0], [0] + [p + 1 for p in perm])
        if name == "vector.extract":
            pos = self._ints(o.attributes["static_position"])
            x = args[0]
            dyn = iter(args[1:])
            idx = tuple(int(next(dyn)[0]) if p < -(1 << 62) else p for p in pos)
            return x[(slice(None),) + idx]
        if name == "vector.insert":
            pos = self._ints(o.attributes["static_position"])
            val, dest = args[0], np.array(args[1])
            dyn = iter(args[2:])
            idx = tuple(int(next(dyn)[0]) if p < -(1 << 62) else p for p in pos)
            dest[(slice(None),) + idx] = val
            return dest
        if name in ("vector.insert_strided_slice", "vector.extract_strided_slice"):
            offs = self._ints(o.attributes["offsets"])
            if name == "vector.extract_strided_slice":
                sizes = self._ints(o.attributes["sizes"])
                sl = tuple(slice(a, a + s) for a, s in zip(offs, sizes))
                return args[0][(slice(None),) + sl]
            src, dest = args[0], np.array(args[1])
            lead = len(dest.shape) - len(src.shape)
            sl = tuple(slice(a, a + 1) if k < lead else slice(a, a + src.shape[1 + k - lead])
                       for k, a in enumerate(offs))
            dest[(slice(None),) + sl] = src.reshape(dest[(slice(None),) + sl].shape)
            return dest
        if name == "vector.from_elements":
            return np.stack([self._b(a, ()) for a in args], axis=1).reshape((T,) + rshape)
        if name == "affine.delinearize_index":
            basis = self._ints(o.attributes["static_basis"])
            dyn = iter(args[1:])
            basis = [int(next(dyn)[0]) if b < -(1 << 62) else b for b in basis]
            nres = len(o.results)
            x = self._b(args[0], ())
            outs = []
            for b in reversed(basis[len(basis) - (nres - 1):] if nres == len(basis) + 1 else basis[1:]):
                outs.append(x % b)
                x = x // b
            outs.append(x)
            return list(reversed(outs))
        if name == "affine.linearize_index":
            nidx = len(o.operands) - sum(1 for b in self._ints(o.attributes["static_basis"]) if b < -(1 << 62))
            idx = [self._b(a, ()) for a in args[:nidx]]
            basis = self._ints(o.attributes["static_basis"])
            dyn = iter(args[nidx:])
            basis = [int(next(dyn)[0]) if b < -(1 << 62) else b for b in basis]
            if len(basis) == len(idx) - 1:
                basis = [None] + basis
            acc = np.zeros((T,), dtype=np.int64)
            for i, b in zip(idx, basis):
                acc = acc * (b if b is not None else 1) + i
            return acc
        if name == "affine.apply":
            amap = o.attributes["map"].value
            vals = [self._b(a, ()) for a in args]
            dims, syms = vals[:amap.n_dims], vals[amap.n_dims:]
            return self._affine(amap.results[0], dims, syms)
        raise NativeError(f"the IREE interpreter does not know {name}")

    def _affine(self, e, dims, syms):
        ir = self.ir
        if _is(ir.AffineConstantExpr, e):
            return np.full((self.T,), ir.AffineConstantExpr(e).value, dtype=np.int64)
        if _is(ir.AffineDimExpr, e):
            return dims[ir.AffineDimExpr(e).position]
        if _is(ir.AffineSymbolExpr, e):
            return syms[ir.AffineSymbolExpr(e).position]
        for cls, fn in ((ir.AffineAddExpr, np.add), (ir.AffineMulExpr, np.multiply), (ir.AffineModExpr, np.mod),
                        (ir.AffineFloorDivExpr, np.floor_divide),
                        (ir.AffineCeilDivExpr, lambda a, b: -((-a) // b))):
            if _is(cls, e):
                b = cls(e)
                return fn(self._affine(b.lhs, dims, syms), self._affine(b.rhs, dims, syms))
        raise NativeError(f"unknown affine expression {e}")
