"""Read one TTGIR module as text: its aliases, locations, attributes, functions and ops.

This is a line reader for the printed form of a module (what Triton writes to its cache, to
``TRITON_KERNEL_DUMP`` folders and, with ``MLIR_ENABLE_DUMP``, to stderr), not a full MLIR
parser: layout *attributes* are left as text and handed to the Triton adapter. What it keeps:

* alias definitions ``#blocked1 = #ttg.blocked<...>`` (layouts, shared layouts, memory spaces);
* location aliases ``#loc3 = loc(...)`` (see :mod:`.locations`);
* module attributes ``ttg.num-warps``, ``ttg.threads-per-warp``, ``ttg.num-ctas``, ``ttg.target``;
* each function's header line (its arguments, their types and ``tt.divisibility``-style
  attributes: the kernel's signature, see :mod:`.identity`) and whether it is public;
* every op line: its name, the function it is in, its 1-based line, the types of its signature
  (operand types before ``->``, result types after; ``tensor<...>`` and ``!ttg.memdesc<...>``
  only; a result printed as a bare ``<...>``, as ``async_copy_global_to_local`` does, is a
  memdesc) and its ``loc(...)``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from layoutverify.core.errors import LayoutError

from .locations import LocationTable

MAX_MODULE_CHARS = 64 << 20

_ALIAS_DEF = re.compile(r"^\s*(#[A-Za-z_][\w$.-]*)\s*=\s*(.*\S)\s*$")
_MODULE = re.compile(r"^\s*module\b(.*)$")
_FUNC = re.compile(r"\btt\.func\b[^@]*@([\w$.-]+)")
_OP = re.compile(r'^\s*(?:(?:%[\w#:$.-]+\s*,\s*)*%[\w#:$.-]+\s*=\s*)?"?([a-z_][a-z0-9_]*\.[a-z_][a-z0-9_.]*)"?')
_INT_ATTR = r'"?{key}"?\s*=\s*(\d+)'
_STR_ATTR = r'"?{key}"?\s*=\s*"([^"]*)"'
_TYPE_START = re.compile(r"(tensor<|!ttg\.memdesc<|!tt\.memdesc<|!triton_gpu\.memdesc<)")


@dataclass
class Op:
    """One op line of the module: op name, enclosing function, 1-based line, text, operand and
    result types (layouts still as text) and its ``loc(...)``."""
    name: str
    function: str | None
    line: int
    text: str
    operand_types: list[str]
    result_types: list[str]
    loc_text: str | None

    @property
    def types(self) -> list[str]:
        """The operand types, then the result types."""
        return self.operand_types + self.result_types


@dataclass
class Module:
    """A TTGIR module as read: aliases, locations, the module attributes (warps, threads per
    warp, CTAs, target), its functions and ops, and the Triton cache's metadata and compiled code."""
    path: str
    aliases: dict[str, str]
    locations: LocationTable
    num_warps: int | None
    threads_per_warp: int | None
    num_ctas: int | None
    target: str | None
    functions: list[str]
    ops: list[Op] = field(default_factory=list)
    headers: dict = field(default_factory=dict)    # function name -> its ``tt.func`` line
    public: list = field(default_factory=list)     # names of the public functions (the kernels)
    metadata: dict = field(default_factory=dict)  # from a Triton cache's <kernel>.json
    asm: dict = field(default_factory=dict)        # "ptx"/"amdgcn" -> path of the compiled code

    @property
    def kernel(self) -> str:
        """The kernel's name: the metadata's, else the first public function, else the first function
        (``?`` when there is none)."""
        if self.metadata.get("name"):
            return self.metadata["name"]
        names = self.public or self.functions
        return names[0] if names else "?"

    def expand(self, type_text: str) -> str:
        """``type_text`` with every alias replaced by its definition (recursively)."""
        return expand_aliases(type_text, self.aliases)


def expand_aliases(text: str, aliases: dict[str, str], depth: int = 0) -> str:
    if depth > 32 or "#" not in text:
        return text

    def sub(m):
        name = m.group(0)
        val = aliases.get(name)
        return name if val is None else expand_aliases(val, aliases, depth + 1)

    return re.sub(r"#[A-Za-z_][\w$-]*(?:\.[\w$-]+)*", sub, text)


def _balanced_end(text: str, start: int) -> int:
    """Index just past the ``>`` closing the ``<`` that ends the match starting at ``start``
    (``->`` arrows inside do not count)."""
    depth = 0
    i = start
    while i < len(text):
        ch = text[i]
        if ch == "<":
            depth += 1
        elif ch == ">" and not (i > 0 and text[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def strip_loc(line: str) -> tuple[str, str | None]:
    """(the op without its trailing ``loc(...)``, the loc text or None)."""
    s = line.rstrip()
    if not s.endswith(")"):
        return s, None
    idx = s.rfind(" loc(")
    while idx >= 0:
        depth = 0
        for j in range(idx + 1, len(s)):
            if s[j] == "(":
                depth += 1
            elif s[j] == ")":
                depth -= 1
                if depth == 0:
                    if j == len(s) - 1:
                        return s[:idx].rstrip(), s[idx + 1:]
                    break
        idx = s.rfind(" loc(", 0, idx)
    return s, None


def signature_types(body: str) -> tuple[list[str], list[str]]:
    """Operand and result types (tensor / memdesc only) of an op's printed signature."""
    colon = _signature_colon(body)
    sig = body[colon + 1:] if colon >= 0 else ""
    # ttg.async_copy_global_to_local prints its result memdesc without the type name: -> <64x32xf16, ...>
    sig = re.sub(r"(->\s*)<", r"\1!ttg.memdesc<", sig)
    found = []
    pos = 0
    while True:
        m = _TYPE_START.search(sig, pos)
        if not m:
            break
        end = _balanced_end(sig, m.end() - 1)
        if end < 0:
            break
        found.append((m.start(), sig[m.start():end]))
        pos = end
    arrow = _top_arrow(sig)
    ops = [t for p, t in found if arrow < 0 or p < arrow]
    res = [t for p, t in found if arrow >= 0 and p > arrow]
    return ops, res


def _signature_colon(body: str) -> int:
    """The ``:`` starting the type signature: the first one outside brackets, braces and strings
    that is followed by a space (``4 : i32`` inside attribute dicts is skipped by depth)."""
    depth, instr = 0, False
    for i, ch in enumerate(body):
        if ch == '"':
            instr = not instr
        if instr:
            continue
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>" and not (ch == ">" and i and body[i - 1] == "-"):
            depth -= 1
        elif ch == ":" and depth == 0 and i + 1 < len(body) and body[i + 1] == " " and i and body[i - 1] == " ":
            return i
    return -1


def _top_arrow(sig: str) -> int:
    depth = 0
    for i, ch in enumerate(sig):
        if ch in "([{<":
            depth += 1
        elif ch == ">" and i and sig[i - 1] == "-":
            if depth == 0:
                return i - 1
        elif ch in ")]}>":
            depth -= 1
    return -1


def _module_attrs(line: str) -> dict:
    out = {}
    for key, name in (("ttg.num-warps", "num_warps"), ("ttg.threads-per-warp", "threads_per_warp"),
                      ("ttg.num-ctas", "num_ctas"), ("triton_gpu.num-warps", "num_warps"),
                      ("triton_gpu.threads-per-warp", "threads_per_warp"), ("triton_gpu.num-ctas", "num_ctas")):
        m = re.search(_INT_ATTR.format(key=re.escape(key)), line)
        if m and name not in out:
            out[name] = int(m.group(1))
    for key in ("ttg.target", "triton_gpu.target"):
        m = re.search(_STR_ATTR.format(key=re.escape(key)), line)
        if m:
            out["target"] = m.group(1)
            break
    return out


def read_module(text: str, path: str = "<text>", *, op_filter=None) -> Module:
    """Read a printed TTGIR module. ``op_filter(name) -> bool`` keeps only the ops it accepts."""
    if len(text) > MAX_MODULE_CHARS:
        raise LayoutError(f"{path}: module of {len(text)} characters is too large (limit {MAX_MODULE_CHARS})")
    aliases: dict[str, str] = {}
    loc_aliases: dict[str, str] = {}
    attrs: dict = {}
    functions: list[str] = []
    headers: dict = {}
    public: list = []
    ops: list[Op] = []
    current = None
    saw_module = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s or s.startswith("//"):
            continue
        if s.startswith("#"):
            m = _ALIAS_DEF.match(s)
            if m:
                name, value = m.group(1), m.group(2)
                if value.startswith("loc("):
                    loc_aliases[name] = value
                else:
                    aliases[name] = value
            continue
        if not saw_module:
            mm = _MODULE.match(s)
            if mm:
                saw_module = True
                attrs = _module_attrs(s)
                continue
        fm = _FUNC.search(s)
        if fm and ("tt.func" in s.split("@", 1)[0]):
            current = fm.group(1)
            functions.append(current)
            headers.setdefault(current, s)
            if re.search(r"\btt\.func\s+public\b", s):
                public.append(current)
            continue
        om = _OP.match(s)
        if not om:
            continue
        name = om.group(1)
        if op_filter is not None and not op_filter(name):
            continue
        body, loc = strip_loc(s)
        operands, results = signature_types(body)
        ops.append(Op(name, current, lineno, s, operands, results, loc))
    if not saw_module and not functions:
        raise LayoutError(f"{path}: no TTGIR module found (no 'module' line and no tt.func)")
    return Module(path=path, aliases=aliases, locations=LocationTable(loc_aliases),
                  num_warps=attrs.get("num_warps"), threads_per_warp=attrs.get("threads_per_warp"),
                  num_ctas=attrs.get("num_ctas"), target=attrs.get("target"), functions=functions, ops=ops,
                  headers=headers, public=public)
