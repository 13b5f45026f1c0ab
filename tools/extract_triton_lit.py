#!/usr/bin/env python3
"""Extract the (encoding, shape) pairs of Triton's MLIR lit tests as a test corpus.

Reads every ``test/**/*.mlir`` of a Triton checkout at one commit and writes, one JSON object a
line, each distinct layout use found there: a ``tensor<SHAPExELEM, #enc>`` or
``!ttg.memdesc<SHAPExELEM, #enc, #space[, mutable][, ALLOC]>`` type with its aliases expanded,
so each line stands alone. Only these extracted pairs are written (data, with ``file:line`` of
their first use and the commit); none of Triton's test code is copied.

Usage::

    python tools/extract_triton_lit.py --git /path/to/triton/.git --commit <sha> \\
        -o corpora/triton_lit/pairs.jsonl
    python tools/extract_triton_lit.py --src /path/to/checkout --commit <sha> -o ...

How the text is read (MLIR's own lexical rules, as far as layouts need them):

* ``// -----`` splits a file into independent inputs (``--split-input-file``); aliases are
  scoped to their split.
* ``//`` starts a comment (FileCheck lines are comments, so their patterns are not read).
* ``#name = VALUE`` at the start of a line defines an alias; an alias use is ``#name`` not
  followed by a ``.`` (``#ttg.blocked`` is a dialect attribute). Aliases expand recursively.
* A type is ``tensor<`` or ``!ttg.memdesc<`` (also ``!triton_gpu.memdesc<``) up to its matching
  ``>``; one without an encoding (``tensor<128xi32>``) is not a pair. A shared-memory encoding
  used on a ``tensor<>`` (tensor descriptors) is written as the ``!ttg.memdesc`` it describes.
* Module attributes ``"ttg.num-warps"``, ``"ttg.threads-per-warp"`` and ``ttg.target`` of the
  enclosing ``module`` are kept with the pair (``num_warps``, ``threads_per_warp``, ``target``).
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

SPLIT = re.compile(r"^// -----\s*$", re.M)
ALIAS_DEF = re.compile(r"^[ \t]*#([A-Za-z_][\w$.-]*)[ \t]*=[ \t]*", re.M)
ALIAS_USE = re.compile(r"#([A-Za-z_][\w$-]*)(?![\w$.-])")
TYPE_START = re.compile(r"(?<![\w.$!])(tensor|!ttg\.memdesc|!triton_gpu\.memdesc)<")
MODULE = re.compile(r"\bmodule\b[^{\n]*?attributes\s*\{")
SHAPE = re.compile(r"\s*((?:\d+\s*x\s*)+)")
#: encodings of memory layouts (those a ``tensor<>`` may carry only as a descriptor's block type)
SHARED_KINDS = ("shared", "swizzled_shared", "nvmma_shared", "padded_shared", "shared_linear",
                "amd_rotating_shared", "partitioned_shared")
MAX_EXPANSION = 200_000


def strip_comments(text: str) -> str:
    """Drop ``//`` comments (outside strings), keeping line numbers."""
    out = []
    for line in text.split("\n"):
        in_str = False
        cut = len(line)
        i = 0
        while i < len(line):
            c = line[i]
            if c == '"' and (i == 0 or line[i - 1] != "\\"):
                in_str = not in_str
            elif not in_str and line.startswith("//", i):
                cut = i
                break
            i += 1
        out.append(line[:cut])
    return "\n".join(out)


def balanced(text: str, start: int) -> int:
    """End (exclusive) of the bracketed group opening at ``text[start]`` (``<``, ``{``, ``[``, ``(``)."""
    pairs = {"<": ">", "{": "}", "[": "]", "(": ")"}
    stack = []
    i = start
    in_str = False
    while i < len(text):
        c = text[i]
        if in_str:
            if c == '"' and text[i - 1] != "\\":
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "-" and text.startswith("->", i):
            i += 2
            continue
        elif c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        elif c in ">}])":
            return -1          # mismatched
        i += 1
    return -1


def attribute_end(text: str, start: int) -> int:
    """End of the attribute value starting at ``start`` (``#dialect.name[<...>]`` or ``#alias``)."""
    m = re.compile(r"#[A-Za-z_][\w$.-]*").match(text, start)
    if not m:
        return -1
    end = m.end()
    if end < len(text) and text[end] == "<":
        end = balanced(text, end)
    return end


def aliases_of(split: str) -> dict[str, str]:
    """The alias definitions of one split: name -> value text (attributes only)."""
    out = {}
    for m in ALIAS_DEF.finditer(split):
        v0 = m.end()
        if not split.startswith("#", v0):
            continue          # loc(...), affine maps: not attributes we read
        end = attribute_end(split, v0)
        if end > 0:
            out[m.group(1)] = " ".join(split[v0:end].split())
    return out


def expand(text: str, aliases: dict[str, str], depth: int = 0) -> str:
    if depth > 20 or len(text) > MAX_EXPANSION:
        raise ValueError("alias expansion too deep")

    def sub(m):
        name = m.group(1)
        return expand(aliases[name], aliases, depth + 1) if name in aliases else m.group(0)
    return ALIAS_USE.sub(sub, text)


def top_level_items(body: str) -> list[str]:
    """Split a type body at its top-level commas."""
    items, depth, cur = [], 0, []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "-" and body.startswith("->", i):
            cur.append("->")
            i += 2
            continue
        if c in "<{[(":
            depth += 1
        elif c in ">}])":
            depth -= 1
        if c == "," and depth == 0:
            items.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    items.append("".join(cur).strip())
    return items


def module_attrs(split: str, pos: int) -> dict:
    """``num_warps``, ``threads_per_warp``, ``target`` of the last module opened before ``pos``."""
    out: dict = {}
    last = None
    for m in MODULE.finditer(split, 0, pos):
        last = m
    if last is None:
        return out
    end = balanced(split, last.end() - 1)
    body = split[last.end():end if end > 0 else len(split)]
    for key, name in (("num_warps", "ttg.num-warps"), ("threads_per_warp", "ttg.threads-per-warp")):
        m = re.search(r'"' + re.escape(name) + r'"\s*=\s*(\d+)', body)
        if m:
            out[key] = int(m.group(1))
    m = re.search(r'ttg\.target"?\s*=\s*"([^"]*)"', body)
    if m:
        out["target"] = m.group(1)
    return out


def pairs_of_file(rel: str, text: str):
    """Yield one dict per layout-carrying type in ``text`` (in order, duplicates included)."""
    line_base = 0
    raw_splits = SPLIT.split(text)
    for raw in raw_splits:
        split = strip_comments(raw)
        aliases = aliases_of(split)
        for m in TYPE_START.finditer(split):
            open_at = m.end() - 1
            end = balanced(split, open_at)
            if end < 0:
                continue
            body = split[open_at + 1:end - 1]
            sm = SHAPE.match(body)
            if not sm:
                continue
            shape = [int(x) for x in re.findall(r"\d+", sm.group(1))]
            items = top_level_items(body[sm.end():])
            element = items[0]
            rest = items[1:]
            if not rest or not rest[0].startswith("#"):
                continue
            try:
                enc = expand(rest[0], aliases)
                extra = [expand(x, aliases) for x in rest[1:]]
            except (ValueError, RecursionError):
                continue
            if re.search(r"#(?![A-Za-z_][\w$-]*\.)[A-Za-z_]", enc):
                continue          # an alias defined elsewhere (not in this split): not self-contained
            enc = " ".join(enc.split())
            container = "tensor" if m.group(1) == "tensor" else "memdesc"
            kind = re.match(r"#(?:ttg|triton_gpu)\.([A-Za-z_]+)", enc)
            kind = kind.group(1) if kind else None
            if container == "tensor" and kind in SHARED_KINDS:
                container, extra = "memdesc", ["#ttg.shared_memory"]
            if container == "tensor":
                typ = f"tensor<{'x'.join(map(str, shape))}x{element}, {enc}>"
            else:
                typ = f"!ttg.memdesc<{'x'.join(map(str, shape))}x{element}, {', '.join([enc] + extra)}>"
            line = line_base + split.count("\n", 0, m.start()) + 1
            rec = {"text": typ, "shape": shape, "container": container, "kind": kind, "element": element,
                   "encoding": enc, "origin": f"{rel}:{line}"}
            rec.update(module_attrs(split, m.start()))
            yield rec
        line_base += raw.count("\n") + 1


def read_tree(args) -> list[tuple[str, str]]:
    if args.git:
        names = subprocess.run(["git", "--git-dir", args.git, "ls-tree", "-r", "--name-only", args.commit, "--",
                                "test"], check=True, capture_output=True, text=True).stdout.split()
        files = []
        for n in sorted(names):
            if n.endswith(".mlir"):
                blob = subprocess.run(["git", "--git-dir", args.git, "show", f"{args.commit}:{n}"], check=True,
                                      capture_output=True).stdout.decode("utf-8", "replace")
                files.append((n, blob))
        return files
    root = Path(args.src)
    return [(str(p.relative_to(root)), p.read_text(errors="replace"))
            for p in sorted((root / "test").rglob("*.mlir"))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--git", help="a Triton git directory")
    src.add_argument("--src", help="a Triton checkout (work tree)")
    ap.add_argument("--commit", required=True, help="the Triton commit the files come from (cited in the output)")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)
    files = read_tree(args)
    seen: dict[str, dict] = {}
    uses = 0
    for rel, text in files:
        for rec in pairs_of_file(rel, text):
            uses += 1
            key = rec["text"]
            if key in seen:
                seen[key]["uses"] += 1
                continue
            rec["uses"] = 1
            seen[key] = rec
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    header = {"source": "https://github.com/triton-lang/triton", "commit": args.commit,
              "files": len(files), "type_uses": uses, "pairs": len(seen),
              "extractor": "tools/extract_triton_lit.py"}
    with out.open("w") as fh:
        fh.write(json.dumps({"meta": header}) + "\n")
        for rec in seen.values():
            fh.write(json.dumps(rec, sort_keys=True) + "\n")
    print(f"{len(files)} files, {uses} layout uses, {len(seen)} distinct pairs -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
