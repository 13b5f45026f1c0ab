"""MLIR locations -> ``file:line:col`` of the Python source where Triton recorded them.

Forms read (as MLIR prints them, inline or through ``#locN = loc(...)`` aliases that may appear
anywhere in the module, usually at its end):

* ``loc("file.py":12:5)`` (a file location; ``to L:C`` ranges keep their start);
* ``loc("name"(CHILD))`` (a name location: Triton names values after Python variables);
* ``loc(callsite(CALLEE at CALLER))``: the callee's location, with the caller chain kept in
  ``called_from`` (an inlined ``@triton.jit`` helper);
* ``loc(fused[A, B, ...])`` / ``loc(fused<...>[...])``: the first part that resolves;
* ``loc(unknown)``: no location.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_FILE = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:\s*(\d+)\s*:\s*(\d+)')
_NAME = re.compile(r'"((?:[^"\\]|\\.)*)"\s*\(')
_ALIAS = re.compile(r"#[A-Za-z_][\w$.-]*")
MAX_DEPTH = 64


@dataclass
class Location:
    """A source location ``file:line:col``, with the name of a named location and the call
    sites it was inlined from (innermost caller first)."""
    file: str
    line: int
    col: int
    name: str | None = None
    called_from: list = field(default_factory=list)  # [(file, line, col), ...] innermost caller first

    def short(self) -> str:
        """``base-name:line:col``."""
        base = self.file.replace("\\", "/").rsplit("/", 1)[-1]
        return f"{base}:{self.line}:{self.col}"

    def to_json(self) -> dict:
        """The location as a JSON object (``text`` its short form, call sites as short forms)."""
        out = {"file": self.file, "line": self.line, "col": self.col, "text": self.short()}
        if self.name:
            out["name"] = self.name
        if self.called_from:
            out["called_from"] = [f"{f.replace(chr(92), '/').rsplit('/', 1)[-1]}:{l}:{c}" for f, l, c in self.called_from]
        return out


def _split_top(text: str, sep: str) -> list[str]:
    """Split at ``sep`` outside brackets and strings."""
    out, depth, cur, i, instr = [], 0, [], 0, False
    while i < len(text):
        ch = text[i]
        if ch == '"' and (i == 0 or text[i - 1] != "\\"):
            instr = not instr
        if not instr:
            if ch in "([{<":
                depth += 1
            elif ch in ")]}>":
                depth -= 1
            elif depth == 0 and text.startswith(sep, i):
                out.append("".join(cur))
                cur = []
                i += len(sep)
                continue
        cur.append(ch)
        i += 1
    out.append("".join(cur))
    return out


class LocationTable:
    """Resolves location text against the module's ``#locN`` aliases (memoised)."""

    def __init__(self, aliases: dict[str, str]):
        self.aliases = aliases  # "#loc3" -> the text inside loc(...)
        self._memo: dict[str, Location | None] = {}

    def resolve(self, text: str | None, depth: int = 0) -> Location | None:
        """The source location of ``loc(...)`` text or a ``#locN`` alias (through call-site, named
        and fused locations), or ``None`` (unknown, or a cycle)."""
        if text is None or depth > MAX_DEPTH:
            return None
        t = text.strip()
        if t.startswith("loc(") and t.endswith(")"):
            t = t[4:-1].strip()
        if t in self._memo:
            return self._memo[t]
        self._memo[t] = None  # cycles resolve to nothing
        loc = self._resolve(t, depth)
        self._memo[t] = loc
        return loc

    def _resolve(self, t: str, depth: int) -> Location | None:
        if not t or t == "unknown":
            return None
        if _ALIAS.fullmatch(t):
            return self.resolve(self.aliases.get(t), depth + 1)
        if t.startswith("callsite(") and t.endswith(")"):
            parts = _split_top(t[len("callsite("):-1], " at ")
            callee = self.resolve(parts[0], depth + 1)
            caller = self.resolve(parts[1], depth + 1) if len(parts) > 1 else None
            if callee is None:
                return caller
            chain = []
            if caller is not None:
                chain = [(caller.file, caller.line, caller.col)] + list(caller.called_from)
            return Location(callee.file, callee.line, callee.col, callee.name, list(callee.called_from) + chain)
        if t.startswith("fused"):
            lb = t.find("[")
            if lb >= 0 and t.endswith("]"):
                for part in _split_top(t[lb + 1:-1], ","):
                    loc = self.resolve(part, depth + 1)
                    if loc is not None:
                        return loc
            return None
        m = _FILE.match(t)
        if m and (m.end() == len(t) or t[m.end():].lstrip().startswith("to")):
            return Location(m.group(1), int(m.group(2)), int(m.group(3)))
        m = _NAME.match(t)
        if m and t.endswith(")"):
            inner = self.resolve(t[m.end():-1], depth + 1)
            if inner is not None:
                return Location(inner.file, inner.line, inner.col, inner.name or m.group(1), inner.called_from)
            return None
        if t.startswith('"') and t.endswith('"'):  # a bare name location
            return None
        return None
