"""PTX text -> :class:`Program`: the first ``.entry`` function's instructions, register
declarations, parameters and labels.

An instruction is ``[@[!]%p] opcode operand, operand, ...;``. Operands stay text except that a
vector ``{a, b}`` becomes a tuple, an address ``[base + off]`` becomes ``("addr", base, off)`` and a
tensor address ``[map, {c0, c1}]`` (``cp.async.bulk.tensor``) becomes ``("tensor", map, (c0, c1))``.
Braced blocks inside the body (inline assembly) are scopes: their ``.reg`` names and labels are
renamed ``name@N`` (``N`` the scope's number) so that two blocks may use the same local names.
Comments are dropped, but an instruction whose line carries ``// lv-observe`` is flagged
``observe`` (the marker the conversion kernel puts on every observed register). Debug sections,
``.loc`` and ``.file`` directives are skipped. Anything else unexpected raises
:class:`~layoutverify.core.errors.ParseError` naming the line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from layoutverify.core.errors import ParseError

OBSERVE_MARK = "lv-observe"

_REG_DECL = re.compile(r"\.reg\s+\.(\w+)\s+(%?[\w$@]+)(?:<(\d+)>)?\s*;")
_PARAM = re.compile(r"\.param\s+[^,()]*?([A-Za-z_$][\w$]*)\s*(?:\[\d+\])?\s*(?:,|\)|$)")
_NTID = re.compile(r"\.(?:reqntid|maxntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?")
_LABEL = re.compile(r"^([$\w@]+):$")
_LABEL_THEN = re.compile(r"^([$\w@]+):(?!:)\s*(\S.*)$")
_PARAM_TYPE = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+"
                         r"(?:\.ptr\s+(?:\.\w+\s+(?:\d+\s+)?)*)?([A-Za-z_$][\w$]*)\s*(?:\[(\d+)\])?")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', re.M)
_GUARD = re.compile(r"^@(!?)(%?[\w$@]+)\s+")


@dataclass
class Instruction:
    """One PTX instruction: opcode, operands, guard predicate (``@p`` or ``@!p``), the observe
    marker, PTX line, text and the last ``.loc`` before it."""
    opcode: str                  # e.g. "ld.shared.v4.b32"
    operands: list               # text, tuples (vectors) or ("addr", base, offset)
    guard: str | None = None     # predicate register, or None
    negate: bool = False         # @!%p
    observe: bool = False        # carries the // lv-observe marker
    line: int = 0                # 1-based line number in the PTX text
    text: str = ""
    loc: tuple | None = None     # (file number, source line) of the last .loc before it

    @cached_property
    def parts(self) -> list[str]:
        """The opcode split at its dots: ``ld.shared.v4.b32`` -> ``[ld, shared, v4, b32]``."""
        return self.opcode.split(".")


@dataclass
class Program:
    """A parsed PTX kernel: its instructions, labels, declared registers, parameters, thread
    count, target and ``.file`` table."""
    name: str
    instructions: list[Instruction]
    labels: dict[str, int]                       # label -> index of the next instruction
    registers: dict[str, str] = field(default_factory=dict)   # register name -> declared type ("b32", "pred")
    reg_prefixes: dict[str, str] = field(default_factory=dict)  # "%r" -> "b32" (from %r<58>)
    params: list[str] = field(default_factory=list)
    threads: int | None = None                   # .reqntid / .maxntid (x*y*z)
    target: str | None = None
    param_types: dict[str, tuple[str, int]] = field(default_factory=dict)  # name -> (type, count)
    files: dict[int, str] = field(default_factory=dict)                     # .file number -> path


def _split_operands(text: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _operand(tok: str, lineno: int):
    tok = tok.strip()
    if tok.startswith("{"):
        if not tok.endswith("}"):
            raise ParseError(f"PTX line {lineno}: unterminated vector operand {tok!r}", token=tok)
        return tuple(t.strip() for t in tok[1:-1].split(","))
    if tok.startswith("["):
        if not tok.endswith("]"):
            raise ParseError(f"PTX line {lineno}: unterminated address operand {tok!r}", token=tok)
        inner = re.sub(r"\s+", "", tok[1:-1])
        tm = re.fullmatch(r"([%\w$.@]+),\{([^{}]*)\}", inner)
        if tm:
            return ("tensor", tm.group(1), tuple(c for c in tm.group(2).split(",") if c))
        m = re.fullmatch(r"([%\w$.@]+)(?:([+-])(0x[0-9a-fA-F]+|\d+))?", inner)
        if not m:
            raise ParseError(f"PTX line {lineno}: unsupported address {tok!r}", token=tok)
        off = int(m.group(3), 0) if m.group(3) else 0
        return ("addr", m.group(1), -off if m.group(2) == "-" else off)
    return tok


def parse_ptx(ptx: str) -> Program:
    """Parse the first ``.entry`` function of ``ptx``."""
    lines = ptx.splitlines()
    target = None
    start = None
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith(".target"):
            target = s.split()[1].rstrip(",;")
        if ".entry" in s and not s.startswith("//"):
            start = i
            break
    if start is None:
        raise ParseError("no .entry function in the PTX text")
    name = re.search(r"\.entry\s+([\w$]+)", lines[start]).group(1)
    params: list[str] = []
    threads = None
    i = start
    # header: parameters up to the body's opening brace
    param_types: dict[str, tuple[str, int]] = {}
    while i < len(lines) and lines[i].strip() != "{":
        for m in _PARAM.finditer(lines[i]):
            params.append(m.group(1))
        for m in _PARAM_TYPE.finditer(lines[i]):
            param_types[m.group(2)] = (m.group(1), int(m.group(3) or 1))
        m = _NTID.search(lines[i])
        if m:
            threads = 1
            for g in m.groups():
                threads *= int(g) if g else 1
        i += 1
    if i >= len(lines):
        raise ParseError("the .entry function has no body")
    body = list(range(i + 2, len(lines) + 1))    # after the body's opening brace
    local_names = _scope_locals(lines, body)
    instructions: list[Instruction] = []
    labels: dict[str, int] = {}
    registers: dict[str, str] = {}
    prefixes: dict[str, str] = {}
    pending = ""
    pending_line = 0
    pending_observe = False
    loc = None
    for lineno, raw, s, scopes in _scoped_lines(lines, body):
        observe = OBSERVE_MARK in raw
        if s.startswith(".loc"):
            lm = re.match(r"\.loc\s+(\d+)\s+(\d+)", s)
            loc = (int(lm.group(1)), int(lm.group(2))) if lm else loc
            continue
        if s.startswith((".file", ".pragma")):
            continue
        s = _rename_locals(s, scopes, local_names)
        m = _LABEL.match(s)
        if m:
            labels[m.group(1)] = len(instructions)
            continue
        m = _LABEL_THEN.match(s) if not pending else None
        if m:
            labels[m.group(1)] = len(instructions)
            s = m.group(2)
        if s.startswith(".reg"):
            for m in _REG_DECL.finditer(s):
                ty, nm, count = m.groups()
                if count is not None:
                    prefixes[nm] = ty
                else:
                    registers[nm] = ty
            continue
        if s.startswith(".shared") or s.startswith(".local"):
            raise ParseError(f"PTX line {lineno}: local declarations ({s.split()[0]}) are not supported", token=s)
        pending = (pending + " " + s).strip()
        pending_observe |= observe
        pending_line = pending_line or lineno
        while ";" in pending:
            stmt, pending = pending.split(";", 1)
            stmt = stmt.strip()
            pending = pending.strip()
            if stmt:
                ins = _instruction(stmt, pending_line, pending_observe)
                ins.loc = loc
                instructions.append(ins)
            pending_observe = False
            pending_line = lineno if pending else 0
    files = {int(m.group(1)): m.group(2) for m in _FILE.finditer(ptx)}
    return Program(name=name, instructions=instructions, labels=labels, registers=registers, reg_prefixes=prefixes,
                   params=params, threads=threads, target=target, param_types=param_types, files=files)


def _scoped_lines(lines, body):
    """The body's statements line by line, braces taken as nested scopes: yields ``(line number,
    raw line, text without its comment, enclosing scope numbers)`` for every line that is neither
    empty nor a brace. Scope 0 is the body's own; nested scopes are numbered in the order they
    open (the list yielded is live: innermost last). Ends at the body's closing brace."""
    scopes, n = [0], 0
    for lineno in body:
        raw = lines[lineno - 1]
        s = raw.split("//", 1)[0].strip()
        if not s:
            continue
        if s == "{":
            n += 1
            scopes.append(n)
            continue
        if s == "}":
            if len(scopes) == 1:
                break
            scopes.pop()
            continue
        yield lineno, raw, s, scopes


def _scope_locals(lines, body) -> dict[int, set[str]]:
    """Scope number -> the register names and labels declared in it (scopes below the body's own)."""
    out: dict[int, set[str]] = {}
    for _, _, s, scopes in _scoped_lines(lines, body):
        if scopes[-1] == 0:
            continue
        names = out.setdefault(scopes[-1], set())
        m = _LABEL.match(s) or _LABEL_THEN.match(s)
        if m:
            names.add(m.group(1))
        elif s.startswith(".reg"):
            for m in _REG_DECL.finditer(s):
                names.add(m.group(2))
    return out


def _rename_locals(s: str, scopes: list[int], local_names) -> str:
    """Rename the names declared in the enclosing nested scopes (innermost first) ``name@scope``."""
    for sc in reversed(scopes[1:]):
        for name in local_names.get(sc, ()):
            s = re.sub(r"(?<![\w$%@])" + re.escape(name) + r"(?![\w$@])", f"{name}@{sc}", s)
    return s


def _instruction(stmt: str, lineno: int, observe: bool) -> Instruction:
    guard, negate = None, False
    m = _GUARD.match(stmt)
    if m:
        negate, guard = m.group(1) == "!", m.group(2)
        stmt = stmt[m.end():]
    m = re.match(r"(\S+)\s*(.*)$", stmt, re.S)
    head, rest = (m.group(1), m.group(2)) if m else (stmt, "")
    if not re.fullmatch(r"[a-z][\w.:]*", head):
        raise ParseError(f"PTX line {lineno}: cannot read the instruction {stmt!r}", token=head)
    ops = [_operand(t, lineno) for t in _split_operands(rest.strip())] if rest.strip() else []
    return Instruction(opcode=head, operands=ops, guard=guard, negate=negate, observe=observe, line=lineno,
                       text=stmt)
