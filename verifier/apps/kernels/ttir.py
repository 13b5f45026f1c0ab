"""TTIR text -> :class:`Function`: the ops of a Triton kernel before layouts and pipelining.

TTIR is MLIR printed in its custom form, one op a line, regions in braces::

    %acc = scf.for %k = %c0 to %K step %c32 iter_args(%a = %cst) -> (tensor<64x64xf32>) : i32 {
      %x = tt.load %ptrs, %mask, %other : tensor<64x32x!tt.ptr<f16>> loc(#loc12)
      scf.yield %y : tensor<64x64xf32>
    }
    %s = "tt.reduce"(%acc) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      ...
    }) : (tensor<128xf32>) -> f32

The reader keeps what the reference interpreter needs: result names, op name, operand names,
the attributes it reads (axis, range, predicates, order, padding ...), result types and regions.
``loc(...)`` annotations are resolved to source lines (``#locN = loc("file":line:col)`` and the
named and call-site forms that point at them). An op this reader does not know is kept with its
name; the interpreter refuses it (``unsupported: <op>``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from layoutverify.core.errors import ParseError

MAX_TTIR_BYTES = 8 << 20


@dataclass(frozen=True)
class TType:
    """A TTIR type: ``shape`` (``()`` for scalars) and element ``elem`` (``f16``, ``i32``, ``i1``,
    ``ptr<f16>``, ``desc<64x32xf16>``)."""
    shape: tuple
    elem: str

    @property
    def is_ptr(self) -> bool:
        """Whether the element is a pointer (``ptr<...>``)."""
        return self.elem.startswith("ptr<")

    @property
    def pointee(self) -> str:
        """The pointed-to element type of a pointer (``f16`` of ``ptr<f16>``)."""
        return self.elem[4:-1]

    def __str__(self):
        return ("x".join(map(str, self.shape)) + "x" if self.shape else "") + self.elem


@dataclass
class Op:
    """One TTIR op: result names, op name, operand names, the attributes read, result types,
    its regions (lists of blocks), its TTIR line and ``loc`` reference."""
    name: str
    results: list[str]
    operands: list[str]
    attrs: dict
    types: list[TType]                 # result types
    regions: list[list["Block"]] = field(default_factory=list)
    line: int = 0                      # TTIR line
    loc: str | None = None             # loc reference (#locN) or None
    operand_types: list[TType] = field(default_factory=list)


@dataclass
class Block:
    """A block of a region: its arguments (``^bb0(%a: f32, ...)``), their types and its ops."""
    args: list[str]
    arg_types: list[TType]
    ops: list[Op]


@dataclass
class Function:
    """A TTIR function (``tt.func``): its arguments (SSA names, types, attributes, source names),
    its body and the file's ``#loc`` table."""
    name: str
    args: list[str]                    # %names, in order
    arg_types: list[TType]
    arg_attrs: list[dict]              # e.g. {"tt.divisibility": 16}
    arg_names: list[str]               # source names (from loc("name"(...))), or the %name
    body: list[Op]
    locs: dict = field(default_factory=dict)   # #locN -> (file, line) or another #loc

    def source_line(self, loc: str | None):
        """``(file, line)`` of a loc reference, following named and call-site locations."""
        seen = 0
        while loc is not None and seen < 64:
            seen += 1
            v = self.locs.get(loc)
            if v is None or isinstance(v, tuple):
                return v
            loc = v
        return None


# -- types --------------------------------------------------------------------------------------
_ELEM = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64", "i1": "i1", "i8": "i8", "i16": "i16",
         "i32": "i32", "i64": "i64", "f8E4M3FN": "e4m3", "f8E5M2": "e5m2", "f8E4M3FNUZ": "e4m3fnuz",
         "f8E5M2FNUZ": "e5m2fnuz", "tf32": "tf32"}


def parse_type(text: str) -> TType:
    """A TTIR type in text (``tensor<64x32xf16>``, ``!tt.ptr<f16>``, ``i32`` ...) -> :class:`TType`."""
    t = text.strip()
    if t.startswith("tensor<") and t.endswith(">"):
        inner = t[7:-1]
        dims = []
        while True:
            m = re.match(r"(\d+)x", inner)
            if not m:
                break
            dims.append(int(m.group(1)))
            inner = inner[m.end():]
        el = parse_type(inner)
        return TType(tuple(dims), el.elem)
    if t.startswith("!tt.ptr<") and t.endswith(">"):
        inner = t[8:-1].split(",")[0].strip()
        return TType((), f"ptr<{parse_type(inner).elem}>")
    if t.startswith("!tt.tensordesc<") and t.endswith(">"):
        inner = t[len("!tt.tensordesc<"):-1]
        if inner.startswith("tensor<"):
            inner = inner[7:-1]
        return TType((), f"desc<{inner}>")
    if t in _ELEM:
        return TType((), _ELEM[t])
    raise ParseError(f"unsupported TTIR type {t!r}", token=t)


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside brackets."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


# -- locations -----------------------------------------------------------------------------------
_LOC_DEF = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$")


def _strip_locs(line: str) -> tuple[str, str | None]:
    """Remove every ``loc(...)`` (balanced) from ``line``; returns the text and the last op-level
    loc reference (``#locN``) found at the end of the line."""
    out, i, last = [], 0, None
    while True:
        j = line.find("loc(", i)
        if j < 0 or (j > 0 and (line[j - 1].isalnum() or line[j - 1] in "_.")):
            if j < 0:
                out.append(line[i:])
                break
            out.append(line[i:j + 4])
            i = j + 4
            continue
        out.append(line[i:j])
        depth, k = 0, j + 3
        while k < len(line):
            if line[k] == "(":
                depth += 1
            elif line[k] == ")":
                depth -= 1
                if depth == 0:
                    break
            elif line[k] == '"':
                k = line.index('"', k + 1)
            k += 1
        inner = line[j + 4:k]
        m = re.fullmatch(r"(#loc\d*)", inner.strip())
        last = m.group(1) if m else ("@" + inner if inner else None)
        i = k + 1
    return "".join(out).rstrip(), last


def _loc_value(body: str):
    m = re.match(r'^"([^"]*)":(\d+):(\d+)', body)
    if m:
        return (m.group(1), int(m.group(2)))
    m = re.match(r'^"[^"]*"\((#loc\d*)\)$', body)
    if m:
        return m.group(1)
    m = re.match(r"^callsite\((#loc\d*) at (#loc\d*)\)$", body)
    if m:
        return m.group(1)
    m = re.match(r"^fused\[(#loc\d*)", body)
    if m:
        return m.group(1)
    return None


# -- ops --------------------------------------------------------------------------------------------
_RESULTS = re.compile(r"^((?:%[\w$.]+(?::\d+)?)(?:\s*,\s*%[\w$.]+(?::\d+)?)*)\s*=\s*")


def _expand_results(text: str) -> list[str]:
    out = []
    for r in (t.strip() for t in text.split(",")):
        name, _, count = r.partition(":")
        if count:
            out += [f"{name}#{i}" for i in range(int(count))]
        else:
            out.append(name)
    return out


def _operand_names(text: str) -> list[str]:
    return re.findall(r"%[\w$.]+(?:#\d+)?", text)


def _attr_dict(text: str) -> dict:
    """``{axis = 1 : i32, start = 0 : i32}`` / ``<{...}>`` -> dict of ints / strings."""
    out = {}
    text = text.strip()
    if text.startswith("<{") and text.endswith("}>"):
        text = text[2:-2]
    elif text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    for part in _split_top(text):
        if "=" not in part:
            continue
        k, _, v = part.partition("=")
        v = v.strip()
        m = re.fullmatch(r"(-?\d+)\s*:\s*i\d+", v)
        if m:
            out[k.strip()] = int(m.group(1))
            continue
        m = re.fullmatch(r"array<i\d+:\s*([-\d,\s]*)>", v)
        if m:
            out[k.strip()] = [int(x) for x in m.group(1).split(",") if x.strip()]
            continue
        out[k.strip()] = v.strip('"')
    return out


class _Lines:
    def __init__(self, lines):
        self.lines = lines
        self.i = 0

    def next(self):
        while self.i < len(self.lines):
            no, text, loc = self.lines[self.i]
            self.i += 1
            if text.strip():
                return no, text.strip(), loc
        return None


def _parse_block_body(src: _Lines, closers=("}",)) -> tuple[list[Block], str]:
    """Ops up to a line starting with one of ``closers``; returns the blocks and the closing line."""
    blocks = [Block([], [], [])]
    while True:
        got = src.next()
        if got is None:
            raise ParseError("unterminated TTIR region")
        no, text, loc = got
        if text.startswith(closers):
            return blocks, text
        if text.startswith("^"):
            m = re.match(r"^\^[\w]+(?:\((.*)\))?:$", text)
            if not m:
                raise ParseError(f"TTIR line {no}: cannot read the block label {text[:60]!r}", token=text[:40])
            args, types = [], []
            for a in _split_top(m.group(1) or ""):
                n, _, t = a.partition(":")
                args.append(n.strip())
                types.append(parse_type(t))
            if blocks[-1].ops or blocks[-1].args:
                blocks.append(Block(args, types, []))
            else:
                blocks[-1] = Block(args, types, [])
            continue
        blocks[-1].ops.append(_parse_op(no, text, loc, src))


def _region_closing(text: str) -> str:
    return text


def _parse_op(no: int, text: str, loc, src: _Lines) -> Op:
    results: list[str] = []
    m = _RESULTS.match(text)
    if m:
        results = _expand_results(m.group(1))
        text = text[m.end():]
    if text.startswith('"'):
        return _parse_generic(no, text, loc, src, results)
    if text.startswith("scf.condition("):
        cond, _, rest = text[len("scf.condition("):].partition(")")
        op = Op(name="scf.condition", results=results, operands=[cond.strip()], attrs={}, types=[], line=no, loc=loc)
        op.operands += _operand_names(_types_after_colon(op, rest.strip()))
        return op
    name, _, rest = text.partition(" ")
    op = Op(name=name, results=results, operands=[], attrs={}, types=[], line=no, loc=loc)
    reader = _CUSTOM.get(name, _read_default)
    if rest.rstrip().endswith("{"):
        head = rest.rstrip()[:-1].rstrip()
        reader(op, head)
        regions = []
        while True:
            blocks, closing = _parse_block_body(src)
            regions.append(blocks)
            if closing.startswith(("} else {", "} do {")):
                continue
            break
        op.regions = regions
        tail = closing[1:].strip()
        if tail:
            _types_after_colon(op, tail)
        return op
    reader(op, rest)
    return op


def _parse_generic(no, text, loc, src, results) -> Op:
    m = re.match(r'^"([\w.]+)"\(([^)]*)\)\s*(<\{.*?\}>)?\s*(\(\{)?\s*(.*)$', text)
    if not m:
        raise ParseError(f"TTIR line {no}: cannot read {text[:60]!r}", token=text[:40])
    op = Op(name=m.group(1), results=results, operands=_operand_names(m.group(2)),
            attrs=_attr_dict(m.group(3) or ""), types=[], line=no, loc=loc)
    rest = m.group(5)
    if m.group(4):
        regions = []
        while True:
            blocks, closing = _parse_block_body(src, closers=("})", "}, {"))
            regions.append(blocks)
            if closing.startswith("}, {"):
                continue
            break
        op.regions = regions
        rest = closing[2:].strip()
    if ":" in rest:
        sig = rest.split(":", 1)[1]
        if "->" in sig:
            ins, outs = sig.split("->", 1)
            op.operand_types = [parse_type(t) for t in _split_top(ins.strip().strip("()"))]
            op.types = [parse_type(t) for t in _split_top(outs.strip().strip("()"))]
    return op


def _types_after_colon(op: Op, rest: str) -> str:
    """Read ``: type`` / ``: a -> b`` / ``: a to b`` at the end of an op; returns the text before."""
    head, sep, tail = rest.rpartition(" : ")
    if not sep:
        if rest.startswith(": "):
            head, tail = "", rest[2:]
        else:
            return rest
    tail = tail.strip()
    if " -> " in tail:
        ins, outs = tail.split(" -> ", 1)
        op.operand_types = [parse_type(t) for t in _split_top(ins.strip().strip("()")) if t]
        op.types = [parse_type(t) for t in _split_top(outs.strip().strip("()")) if t]
    elif " to " in tail:
        a, b = tail.split(" to ", 1)
        op.operand_types = [parse_type(a)]
        op.types = [parse_type(b)]
    else:
        ts = [parse_type(t) for t in _split_top(tail)]
        op.operand_types = ts
        op.types = ts[:1] * max(1, len(op.results)) if op.results else []
    return head


def _read_default(op: Op, rest: str) -> None:
    attrs = {}
    m = re.search(r"\{([^{}]*)\}", rest)
    if m and "=" in m.group(1):
        attrs = _attr_dict(m.group(1))
        rest = rest[:m.start()] + rest[m.end():]
    head = _types_after_colon(op, rest)
    op.attrs.update(attrs)
    op.operands = _operand_names(head)
    # keyword attributes written inline: "inputPrecision = tf32", "padding = 1 : i32"
    for k, v in re.findall(r"(\w+)\s*=\s*([\w.]+)", head):
        op.attrs.setdefault(k, v)


def _read_constant(op: Op, rest: str) -> None:
    head = _types_after_colon(op, rest)
    v = head.strip()
    m = re.fullmatch(r"dense<(.*)>", v)
    op.attrs["dense"] = bool(m)
    op.attrs["value"] = (m.group(1) if m else v).strip()


def _read_cmp(op: Op, rest: str) -> None:
    pred, _, tail = rest.partition(",")
    op.attrs["predicate"] = pred.strip()
    head = _types_after_colon(op, tail)
    op.operands = _operand_names(head)
    if op.operand_types:
        t = op.operand_types[0]
        op.types = [TType(t.shape, "i1")]


def _read_pid(op: Op, rest: str) -> None:
    head = _types_after_colon(op, rest)
    op.attrs["axis"] = {"x": 0, "y": 1, "z": 2}[head.strip().split()[0]]


def _read_range(op: Op, rest: str) -> None:
    _read_default(op, rest)


def _read_dot(op: Op, rest: str) -> None:
    head, _, sig = rest.rpartition(" : ")
    op.operands = _operand_names(head)
    for k, v in re.findall(r"(\w+)\s*=\s*([\w.]+)", head):
        op.attrs[k] = v
    a, rest2 = sig.split(" * ", 1)
    b, c = rest2.split(" -> ", 1)
    op.operand_types = [parse_type(a), parse_type(b)]
    op.types = [parse_type(c)]


def _read_for(op: Op, rest: str) -> None:
    m = re.match(r"^(%[\w$.]+)\s*=\s*(%[\w$.#]+)\s+to\s+(%[\w$.#]+)\s+step\s+(%[\w$.#]+)\s*(.*)$", rest)
    if not m:
        raise ParseError(f"TTIR line {op.line}: cannot read scf.for {rest[:80]!r}", token="scf.for")
    op.attrs["iv"] = m.group(1)
    op.operands = [m.group(2), m.group(3), m.group(4)]
    tail = m.group(5)
    it = re.search(r"iter_args\((.*?)\)\s*(->|:|$)", tail)
    op.attrs["iter_args"] = []
    if it:
        for a in _split_top(it.group(1)):
            n, _, v = a.partition("=")
            op.attrs["iter_args"].append(n.strip())
            op.operands.append(v.strip())
    ty = re.search(r"->\s*\((.*)\)\s*:", tail) or re.search(r"->\s*([^:]*?)\s*:", tail)
    if ty:
        op.types = [parse_type(t) for t in _split_top(ty.group(1))]
    op.attrs["extra"] = {k: v for k, v in re.findall(r"(\w+)\s*=\s*([\w.]+)", tail.split("{")[-1])} \
        if "{" in tail else {}


def _read_while(op: Op, rest: str) -> None:
    """``scf.while (%a = %init, ...) : (types) -> types``"""
    m = re.match(r"^\((.*?)\)\s*:\s*\((.*?)\)\s*->\s*(.*)$", rest.strip())
    if not m:
        raise ParseError(f"TTIR line {op.line}: cannot read scf.while {rest[:80]!r}", token="scf.while")
    op.attrs["before_args"] = []
    for a in _split_top(m.group(1)):
        n, _, v = a.partition("=")
        op.attrs["before_args"].append(n.strip())
        op.operands.append(v.strip())
    outs = m.group(3).strip().strip("()")
    op.types = [parse_type(t) for t in _split_top(outs)] if outs else []


def _read_if(op: Op, rest: str) -> None:
    m = re.match(r"^(%[\w$.#]+)\s*(?:->\s*\((.*)\)|->\s*(\S+))?", rest.strip())
    op.operands = [m.group(1)]
    tys = m.group(2) or m.group(3)
    op.types = [parse_type(t) for t in _split_top(tys)] if tys else []


def _read_yield(op: Op, rest: str) -> None:
    head = _types_after_colon(op, rest)
    op.operands = _operand_names(head)


def _read_descriptor_load(op: Op, rest: str) -> None:
    head = _types_after_colon(op, rest)
    op.operands = _operand_names(head)


def _read_make_desc(op: Op, rest: str) -> None:
    head, _, sig = rest.rpartition(" : ")
    op.operands = _operand_names(head)
    op.attrs["ranks"] = [len(_operand_names(g)) for g in re.findall(r"\[([^\]]*)\]", head)]
    parts = _split_top(sig)
    if len(parts) == 2:
        block = parts[1].strip()
        if block.startswith("<") and block.endswith(">"):
            block = block[1:-1]
        if block.startswith("tensor<"):
            block = block[7:-1]
        op.types = [TType((), f"desc<{block}>")]
        pm = re.search(r"padding\s*=\s*(\w+)", head)
        if pm:
            op.attrs["padding"] = pm.group(1)


_CUSTOM = {
    "arith.constant": _read_constant, "arith.cmpi": _read_cmp, "arith.cmpf": _read_cmp,
    "tt.get_program_id": _read_pid, "tt.get_num_programs": _read_pid, "tt.make_range": _read_range,
    "tt.dot": _read_dot, "scf.for": _read_for, "scf.if": _read_if, "scf.while": _read_while, "scf.yield": _read_yield,
    "tt.reduce.return": _read_yield, "tt.return": _read_yield, "tt.descriptor_load": _read_descriptor_load,
    "tt.descriptor_store": _read_descriptor_load, "tt.make_tensor_descriptor": _read_make_desc,
}


def parse_ttir(text: str) -> Function:
    """Parse the first ``tt.func`` of a TTIR module."""
    if len(text) > MAX_TTIR_BYTES:
        raise ParseError(f"TTIR text of {len(text)} bytes is too long (limit {MAX_TTIR_BYTES})")
    locs: dict = {}
    lines = []
    for no, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        m = _LOC_DEF.match(s)
        if m:
            locs[m.group(1)] = _loc_value(m.group(2))
            continue
        body, loc = _strip_locs(raw)
        lines.append((no, body, loc))
    src = _Lines(lines)
    while True:
        got = src.next()
        if got is None:
            raise ParseError("no tt.func in the TTIR text")
        no, s, loc = got
        if s.startswith("tt.func"):
            break
    header = s
    fm = re.match(r"^tt\.func\s+(?:public\s+|private\s+)?@([\w$.]+)\((.*)\)\s*(?:attributes\s*\{.*\})?\s*\{$",
                  header)
    if not fm:
        raise ParseError(f"TTIR line {no}: cannot read the function header", token=header[:60])
    args, types, attrs, names = [], [], [], []
    raw_header = next(r for n, r in enumerate(text.splitlines(), 1) if n == no)
    source_names = re.findall(r'(%[\w$.]+):[^,]*?loc\("([^"]+)"\(', raw_header)
    src_name = dict(source_names)
    for a in _split_top(fm.group(2)):
        n, _, rest = a.partition(":")
        rest = rest.strip()
        am = re.search(r"\{(.*)\}\s*$", rest)
        at = {}
        if am:
            at = _attr_dict(am.group(1))
            rest = rest[:am.start()].strip()
        args.append(n.strip())
        types.append(parse_type(rest))
        attrs.append(at)
        given = src_name.get(n.strip(), n.strip().lstrip("%"))
        # a host descriptor's shape and strides carry its source name too (Triton 3.6): keep the SSA name
        names.append(given if given not in names else n.strip().lstrip("%"))
    blocks, _ = _parse_block_body(src)
    return Function(name=fm.group(1), args=args, arg_types=types, arg_attrs=attrs, arg_names=names,
                    body=blocks[0].ops, locs=locs)
