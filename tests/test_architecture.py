"""The three layers, read from the source's own imports (every import statement, lazy ones too).

* core (``layoutverify.core``) imports only the core;
* an adapter (``layoutverify.adapters.<framework>``) imports only the core and its own framework's
  modules, and the ISA adapters (``ptx``, ``amd``) their shared helpers ``layoutverify.adapters.isa``
  (which import only the core); the registry (``layoutverify.adapters``) imports only the core;
* applications (``layoutverify.apps``) import the core, other applications and the adapters'
  registry ``layoutverify.adapters`` -- never an adapter module directly;
* the tests' and benchmarks' helpers (``layoutverify.testing``: oracles, generators) import only
  the core, and nothing of the tool imports them;
* no module imports itself back through a chain of imports (no cycles).

Module names come from the package-directory mapping in ``pyproject.toml``: ``verifier/`` is
``layoutverify``, ``adapters/`` is ``layoutverify.adapters``.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"verifier": "layoutverify", "adapters": "layoutverify.adapters", "corpora": "layoutverify.corpora"}


def _modules() -> dict[str, tuple[Path, bool]]:
    """module name -> (file, is_package)."""
    out = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = list(rel.parts)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            out[".".join([package, *parts])] = (path, is_pkg)
    return out


MODULES = _modules()


def _imports(name: str) -> set[str]:
    """The project modules that module ``name`` imports, anywhere in its body."""
    path, is_pkg = MODULES[name]
    package = name if is_pkg else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str, names=()):
        for n in names:
            if f"{target}.{n}" in MODULES:
                found.add(f"{target}.{n}")
                break
        else:
            if target in MODULES:
                found.add(target)
        for n in names:      # `from pkg import a, b`: every submodule named
            if f"{target}.{n}" in MODULES:
                found.add(f"{target}.{n}")

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("layoutverify"):
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("layoutverify"):
                add(target, [a.name for a in node.names])
    found.discard(name)
    return found


GRAPH = {name: _imports(name) for name in MODULES}


def _layer(name: str) -> str:
    if name.startswith("layoutverify.core"):
        return "core"
    if name == "layoutverify.adapters":
        return "registry"
    if name.startswith("layoutverify.adapters."):
        return "adapter:" + name.split(".")[2]
    if name.startswith("layoutverify.apps"):
        return "apps"
    if name.startswith("layoutverify.corpora"):
        return "data"
    if name.startswith("layoutverify.testing"):
        return "testing"
    return "top"


def _allowed(src: str, dst: str) -> bool:
    a, b = _layer(src), _layer(dst)
    if a in ("core", "data", "testing"):
        return b == "core" or (a == "testing" and b == "testing")
    if b == "testing":
        return False
    if a == "registry":
        return b == "core"
    if a.startswith("adapter:"):
        return b == "core" or b == a or (b == "adapter:isa" and a in ("adapter:ptx", "adapter:amd"))
    if a == "apps":
        return b in ("core", "apps", "registry", "data", "top")
    return True      # the top-level package re-exports and __main__ start the CLI


def test_the_graph_was_read():
    assert "layoutverify.core.layout" in MODULES and "layoutverify.adapters.triton" in MODULES
    assert "layoutverify.core.layout" in GRAPH["layoutverify.core.compare"]
    assert "layoutverify.adapters" in GRAPH["layoutverify.apps.claims"]


@pytest.mark.parametrize("layer", ["core", "registry", "adapter", "apps", "testing", "top"])
def test_layers_import_only_downwards(layer):
    bad = sorted(f"{src} -> {dst}" for src, deps in GRAPH.items() for dst in deps
                 if _layer(src).startswith(layer) and not _allowed(src, dst))
    assert not bad, "imports that cross the layers:\n" + "\n".join(bad)


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in GRAPH:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    cycles = _cycles()
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_cycle_finder_finds_a_planted_cycle():
    saved = dict(GRAPH)
    try:
        GRAPH["layoutverify.core.errors"] = GRAPH["layoutverify.core.errors"] | {"layoutverify.core.layout"}
        assert any("layoutverify.core.errors" in c for c in _cycles())
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


def test_one_version():
    """The version is written once, as the package's ``__version__``: pyproject.toml reads it
    from there (the built wheel's version is checked in tests/test_wheel.py)."""
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "layoutverify.__version__"}
