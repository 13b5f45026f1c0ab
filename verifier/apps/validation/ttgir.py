"""The conversion kernel as TTGIR text, in the dialect of a Triton release older than 3.6 (which
have no Gluon, or a different one, to build it from Python).

The kernel is the one :mod:`layoutverify.adapters.triton.compile_worker` builds with Gluon: load
the row-major tile in layout ``A`` (element ``i`` at ``in_ptr + i``), ``convert_layout`` it to
``B``, pass every 32-bit word of ``B``'s registers through an inline ``mov.b32`` marked
``// lv-observe`` (``tt.elementwise_inline_asm``, ``32 / bits`` elements a word), and store it
in ``B`` at the same offsets. Offsets are built as Triton builds them for ``ptr + r[:, None] * N +
c[None, :]``: ``make_range`` in the two slices of the layout, ``expand_dims``, ``broadcast``.

Layouts come as the compile worker's JSON specs (``blocked``, ``mma``, ``dot``, ``slice``,
``linear``) and are written in the release's spelling. Three generations of the text:

* 2.1 - 2.3: ``triton_gpu`` dialect, ``#triton_gpu.mma``, CTA fields spelled out, parenthesised
  operand types, ``!tt.ptr<T, 1>``, ``cache``/``evict`` attributes on loads and stores,
  ``"triton_gpu.compute-capability"`` on the module;
* 3.0 - 3.2: ``triton_gpu`` dialect, ``#triton_gpu.nvidia_mma``, ``triton_gpu.target``;
* 3.3 - 3.5: the ``ttg`` dialect.

``#linear`` encodings exist from 3.3; a linear spec for an older release is refused.
"""
from __future__ import annotations

from layoutverify.core.errors import UnsupportedError

#: the compile worker's dtype names -> MLIR element types
ELEMENT_TYPES = {"fp8": "f8E4M3FN", "i8": "i8", "f16": "f16", "bf16": "bf16", "i16": "i16", "f32": "f32",
                 "i32": "i32"}
BITS = {"fp8": 8, "i8": 8, "f16": 16, "bf16": 16, "i16": 16, "f32": 32, "i32": 32}


class Dialect:
    """How a release spells the kernel (see the module docstring)."""

    def __init__(self, release: tuple[int, int]):
        self.release = release
        self.legacy = release < (3, 0)
        self.prefix = "ttg" if release >= (3, 3) else "triton_gpu"
        self.mma_name = "mma" if self.legacy else "nvidia_mma"
        self.has_linear = release >= (3, 3)

    def ptr(self, elem: str) -> str:
        """The pointer type to ``elem`` (with the address space before 3.0)."""
        return f"!tt.ptr<{elem}, 1>" if self.legacy else f"!tt.ptr<{elem}>"

    def cast(self, operand: str, src: str, dst: str) -> str:
        """``%x : SRC -> DST`` as the one-operand cast-like ops print it."""
        return f"{operand} : ({src}) -> {dst}" if self.legacy else f"{operand} : {src} -> {dst}"

    def module_attrs(self, num_warps: int, arch: int) -> str:
        """The module's attributes: one CTA, ``num_warps`` warps of 32 threads, and the target
        (``compute-capability`` before 3.0, ``target = cuda:ARCH`` after)."""
        p = self.prefix
        attrs = [f'"{p}.num-ctas" = 1 : i32', f'"{p}.num-warps" = {num_warps} : i32',
                 f'"{p}.threads-per-warp" = 32 : i32']
        if self.legacy:
            attrs.insert(0, f'"{p}.compute-capability" = {arch} : i32')
        else:
            attrs.append(f'{p}.target = "cuda:{arch}"')
        return ", ".join(attrs)


def _ints(xs) -> str:
    return "[" + ", ".join(str(int(x)) for x in xs) + "]"


def _cta_fields(rank: int) -> str:
    return (f"CTAsPerCGA = {_ints([1] * rank)}, CTASplitNum = {_ints([1] * rank)}, "
            f"CTAOrder = {_ints(range(rank - 1, -1, -1))}")


def encoding(spec: dict, dialect: Dialect, rank: int) -> str:
    """The layout attribute of a compile-worker spec, in ``dialect``'s spelling."""
    p, k = dialect.prefix, spec["kind"]
    if k == "blocked":
        cta = f", {_cta_fields(rank)}" if dialect.release < (3, 2) else ""
        return (f"#{p}.blocked<{{sizePerThread = {_ints(spec['spt'])}, threadsPerWarp = {_ints(spec['tpw'])}, "
                f"warpsPerCTA = {_ints(spec['wpc'])}, order = {_ints(spec['order'])}{cta}}}>")
    if k == "mma":
        major, minor = spec["version"]
        cta = f", {_cta_fields(rank)}" if dialect.release < (3, 2) else ""
        instr = f", instrShape = {_ints(spec['instr'])}" if (major, minor) != (1, 0) else ""
        return (f"#{p}.{dialect.mma_name}<{{versionMajor = {major}, versionMinor = {minor}, "
                f"warpsPerCTA = {_ints(spec['warps'])}{cta}{instr}}}>")
    if k == "dot":
        return (f"#{p}.dot_op<{{opIdx = {spec['op']}, parent = {encoding(spec['parent'], dialect, rank)}, "
                f"kWidth = {spec['k_width']}}}>")
    if k == "slice":
        return f"#{p}.slice<{{dim = {spec['dim']}, parent = {encoding(spec['parent'], dialect, rank + 1)}}}>"
    if k == "linear":
        if not dialect.has_linear:
            raise UnsupportedError(f"Triton {'.'.join(map(str, dialect.release))} has no #linear encoding: this "
                                   "layout cannot be written for it")
        bases = ", ".join(f"{name} = [{', '.join(_ints(v) for v in spec[key])}]"
                          for name, key in (("register", "reg"), ("lane", "lane"), ("warp", "warp"),
                                            ("block", "block")))
        return f"#{p}.linear<{{{bases}}}>"
    raise UnsupportedError(f"no TTGIR spelling for a {k!r} layout")


class _Body:
    """SSA statements of the kernel, numbered in order."""

    def __init__(self):
        self.lines: list[str] = []
        self.n = 0

    def let(self, text: str) -> str:
        name = f"%{self.n}"
        self.n += 1
        self.lines.append(f"    {name} = {text}")
        return name

    def do(self, text: str) -> None:
        self.lines.append(f"    {text}")


def _pointers(body: _Body, d: Dialect, base: str, layout: str, shape: tuple, elem: str) -> str:
    """``base + r[:, None] * N + c[None, :]`` (or ``base + r``) as a tensor of pointers in ``layout``."""
    ptrs = d.ptr(elem)
    if len(shape) == 1:
        (m,) = shape
        ty = f"tensor<{m}xi32, {layout}>"
        off = body.let(f"tt.make_range {{end = {m} : i32, start = 0 : i32}} : {ty}")
        pty = f"tensor<{m}x{ptrs}, {layout}>"
    else:
        m, n = shape
        p = d.prefix
        rows_ty = f"tensor<{m}xi32, #{p}.slice<{{dim = 1, parent = {layout}}}>>"
        cols_ty = f"tensor<{n}xi32, #{p}.slice<{{dim = 0, parent = {layout}}}>>"
        col_ty, row_ty, full = f"tensor<{m}x1xi32, {layout}>", f"tensor<1x{n}xi32, {layout}>", \
            f"tensor<{m}x{n}xi32, {layout}>"
        r = body.let(f"tt.make_range {{end = {m} : i32, start = 0 : i32}} : {rows_ty}")
        r = body.let(f"tt.expand_dims {d.cast(r + ' {axis = 1 : i32}', rows_ty, col_ty)}")
        stride = body.let(f"arith.constant dense<{n}> : {col_ty}")
        r = body.let(f"arith.muli {r}, {stride} : {col_ty}")
        r = body.let(f"tt.broadcast {d.cast(r, col_ty, full)}")
        c = body.let(f"tt.make_range {{end = {n} : i32, start = 0 : i32}} : {cols_ty}")
        c = body.let(f"tt.expand_dims {d.cast(c + ' {axis = 0 : i32}', cols_ty, row_ty)}")
        c = body.let(f"tt.broadcast {d.cast(c, row_ty, full)}")
        off = body.let(f"arith.addi {r}, {c} : {full}")
        ty = full
        pty = f"tensor<{m}x{n}x{ptrs}, {layout}>"
    splat = body.let(f"tt.splat {d.cast(base, ptrs, pty)}")
    return body.let(f"tt.addptr {splat}, {off} : {pty}, {ty}")


def stores_in(spec: dict, release: tuple[int, int]) -> bool:
    """Whether ``release`` can store a tensor in this layout: before 3.3 (linear layouts for dot
    operands) the lowering of ``tt.store`` in a dot-operand layout aborts; such a kernel only
    observes ``B``'s registers."""
    while spec["kind"] == "slice":
        spec = spec["parent"]
    return spec["kind"] != "dot" or release >= (3, 3)


def conversion_kernel(a: dict, b: dict, shape, dtype: str, *, num_warps: int, arch: int,
                      release: tuple[int, int], observe: bool = True, store: bool = True) -> str:
    """The TTGIR module of the conversion kernel ``A -> B`` for Triton ``release`` (without the
    store when ``store`` is false)."""
    if dtype not in ELEMENT_TYPES:
        raise UnsupportedError(f"no TTGIR element type for dtype {dtype!r}")
    shape = tuple(int(s) for s in shape)
    if len(shape) not in (1, 2):
        raise UnsupportedError(f"the conversion kernel is 1-D or 2-D, not {len(shape)}-D")
    d = Dialect(release)
    elem = ELEMENT_TYPES[dtype]
    rank = len(shape)
    enc_a, enc_b = encoding(a, d, rank), encoding(b, d, rank)
    dims = "x".join(str(s) for s in shape)
    ty_a, ty_b = f"tensor<{dims}x{elem}, #A>", f"tensor<{dims}x{elem}, #B>"
    body = _Body()
    src = _pointers(body, d, "%in", "#A", shape, elem)
    if d.legacy:
        x = body.let(f"tt.load {src} {{cache = 1 : i32, evict = 1 : i32, isVolatile = false}} : {ty_a}")
    else:
        x = body.let(f"tt.load {src} : tensor<{dims}x{d.ptr(elem)}, #A>")
    y = body.let(f"{d.prefix}.convert_layout {d.cast(x, ty_a, ty_b)}")
    if observe:
        pack = 32 // BITS[dtype]
        y = body.let(f'tt.elementwise_inline_asm "mov.b32 $0, $1; // lv-observe" {{constraints = "=r,r", '
                     f'packed_element = {pack} : i32, pure = false}} {y} : {ty_b} -> {ty_b}')
    if store:
        dst = _pointers(body, d, "%out", "#B", shape, elem)
        if d.legacy:
            body.do(f"tt.store {dst}, {y} {{cache = 1 : i32, evict = 1 : i32}} : {ty_b}")
        else:
            body.do(f"tt.store {dst}, {y} : tensor<{dims}x{d.ptr(elem)}, #B>")
    body.do("tt.return")
    arg = f"{d.ptr(elem)} {{tt.divisibility = 16 : i32}}"
    return "\n".join([
        f"#A = {enc_a}",
        f"#B = {enc_b}",
        f"module attributes {{{d.module_attrs(num_warps, arch)}}} {{",
        f"  tt.func public @cvt(%in: {arg}, %out: {arg}) {{",
        *body.lines,
        "  }",
        "}",
        "",
    ])
