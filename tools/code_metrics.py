"""Code metrics of the package, read from the source with ``ast``: public docstring coverage and
code size.

* **Docstring coverage**: public classes, public methods (names without a leading ``_``,
  defined in a public class; a property's setter counts as its getter, an override of a method
  documented in a base class of the same module as documented, as ``inspect.getdoc`` reads it)
  and public module-level functions, per layer (``core``, ``adapters``, ``apps``, ``testing``)
  and in all.
* **Code size**: lines of code (not blank, not comments, not docstrings) per layer.

Usage::

    python tools/code_metrics.py                  # this checkout
    python tools/code_metrics.py --root ../base   # another checkout
    python tools/code_metrics.py --json           # machine-readable
"""
from __future__ import annotations

import argparse
import ast
import io
import json
import sys
import tokenize
from pathlib import Path

LAYERS = {"core": "verifier/core", "adapters": "adapters", "apps": "verifier/apps", "testing": "verifier/testing"}


def _code_lines(path: Path) -> int:
    """Lines holding code: not blank, not only a comment, not part of a docstring."""
    text = path.read_text()
    doc_lines: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                doc_lines.update(range(first.lineno, first.end_lineno + 1))
    code: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                        tokenize.ENDMARKER):
            continue
        for ln in range(tok.start[0], tok.end[0] + 1):
            if ln not in doc_lines:
                code.add(ln)
    return len(code)


def _public(name: str) -> bool:
    return not name.startswith("_")


def _documented_methods(tree) -> dict[str, set[str]]:
    """Class name -> its methods that have a docstring (classes of one module)."""
    return {c.name: {f.name for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and ast.get_docstring(f) is not None}
            for c in tree.body if isinstance(c, ast.ClassDef)}


def _docstrings(path: Path) -> dict:
    tree = ast.parse(path.read_text())
    documented = _documented_methods(tree)
    out = {"classes": [0, 0], "methods": [0, 0], "functions": [0, 0], "missing": []}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _public(node.name):
            has = ast.get_docstring(node) is not None
            out["functions"][0] += has
            out["functions"][1] += 1
            if not has:
                out["missing"].append(f"{path}:{node.lineno} {node.name}")
        if isinstance(node, ast.ClassDef) and _public(node.name):
            has = ast.get_docstring(node) is not None
            out["classes"][0] += has
            out["classes"][1] += 1
            if not has:
                out["missing"].append(f"{path}:{node.lineno} class {node.name}")
            for item in node.body:
                if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) or not _public(item.name):
                    continue
                if any(isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") for d in item.decorator_list):
                    continue  # documented on the getter
                has = ast.get_docstring(item) is not None or any(  # an override of a documented method
                    isinstance(b, ast.Name) and item.name in documented.get(b.id, ()) for b in node.bases)
                out["methods"][0] += has
                out["methods"][1] += 1
                if not has:
                    out["missing"].append(f"{path}:{item.lineno} {node.name}.{item.name}")
    return out


def metrics(root: Path) -> dict:
    res: dict = {"layers": {}, "total": {}}
    tot = {"code_lines": 0, "classes": [0, 0], "methods": [0, 0], "functions": [0, 0]}
    missing = []
    for layer, folder in LAYERS.items():
        d = root / folder
        if not d.exists():
            continue
        acc = {"code_lines": 0, "classes": [0, 0], "methods": [0, 0], "functions": [0, 0]}
        for path in sorted(d.rglob("*.py")):
            if layer == "core" and "apps" in path.parts:
                continue
            acc["code_lines"] += _code_lines(path)
            ds = _docstrings(path)
            for k in ("classes", "methods", "functions"):
                acc[k][0] += ds[k][0]
                acc[k][1] += ds[k][1]
            missing += [m.replace(str(root) + "/", "") for m in ds["missing"]]
        for k in ("classes", "methods", "functions"):
            acc[k + "_pct"] = round(100 * acc[k][0] / acc[k][1], 1) if acc[k][1] else None
        res["layers"][layer] = acc
        tot["code_lines"] += acc["code_lines"]
        for k in ("classes", "methods", "functions"):
            tot[k][0] += acc[k][0]
            tot[k][1] += acc[k][1]
    for k in ("classes", "methods", "functions"):
        tot[k + "_pct"] = round(100 * tot[k][0] / tot[k][1], 1) if tot[k][1] else None
    res["total"] = tot
    res["missing"] = missing
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--missing", action="store_true", help="list the public names without a docstring")
    args = ap.parse_args(argv)
    m = metrics(Path(args.root).resolve())
    if args.json:
        print(json.dumps(m, indent=1))
        return 0
    for layer, acc in list(m["layers"].items()) + [("total", m["total"])]:
        print(f"{layer:9s} code lines {acc['code_lines']:6d}   docstrings: classes {acc['classes'][0]}/{acc['classes'][1]} "
              f"({acc['classes_pct']}%), methods {acc['methods'][0]}/{acc['methods'][1]} ({acc['methods_pct']}%), "
              f"functions {acc['functions'][0]}/{acc['functions'][1]} ({acc['functions_pct']}%)")
    if args.missing:
        print("\n".join(m["missing"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
