"""The CuTe adapter's modules import one way (issue 10 §2): no cycle, even through function-level
imports, so ``atoms`` never needs the interpreter that needs it."""
import ast
from pathlib import Path

import layoutverify.adapters.cute as cute

PKG = Path(cute.__file__).parent


def _edges() -> dict[str, set[str]]:
    """module -> the sibling modules it imports (at any depth of the file)."""
    mods = {p.stem for p in PKG.glob("*.py") if p.stem != "__init__"}
    out = {}
    for m in mods:
        deps = set()
        for node in ast.walk(ast.parse((PKG / f"{m}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    deps.add(node.module.split(".")[0])
                else:
                    deps.update(a.name for a in node.names)
        out[m] = deps & mods
    return out


def test_no_import_cycle():
    edges = _edges()
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(m, path):
        if state.get(m) == 1:
            cycle.extend(path[path.index(m):] + [m])
            return True
        if state.get(m) == 2:
            return False
        state[m] = 1
        if any(visit(d, path + [m]) for d in sorted(edges[m])):
            return True
        state[m] = 2
        return False

    for m in sorted(edges):
        if visit(m, []):
            break
    assert not cycle, " -> ".join(cycle)


def test_atoms_do_not_need_the_interpreter():
    edges = _edges()
    assert "interp" not in edges["atoms"] and "interp" not in edges["tv"]
    assert "atoms" in edges["interp"]           # the one direction that remains
