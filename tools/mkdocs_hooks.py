"""MkDocs hooks of the documentation site (``mkdocs.yml``'s ``hooks``).

The API reference (``docs/api.md``) is read from the sources by mkdocstrings (griffe), which finds
a package by its folder name. The package ``layoutverify`` is mapped onto folders of other names
(pyproject.toml's ``package-dir``: ``verifier/`` is ``layoutverify``, ``adapters/`` is
``layoutverify.adapters``), so before each build :func:`on_config` lays the same mapping out as
links under ``build/api-src/layoutverify`` (``build/`` is not tracked), the folder
``mkdocs.yml`` gives mkdocstrings as its search path.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[1]
STAGE = ROOT / "build" / "api-src"
#: package -> source folder, as pyproject.toml's package-dir
MAPPING = {"layoutverify": "verifier", "layoutverify/adapters": "adapters", "layoutverify/corpora": "corpora"}


def stage() -> Path:
    """``build/api-src/layoutverify/...``: the package's layout, made of links to the sources."""
    shutil.rmtree(STAGE, ignore_errors=True)
    for package, folder in MAPPING.items():
        target = STAGE / package
        target.mkdir(parents=True, exist_ok=True)
        for entry in (ROOT / folder).iterdir():
            if entry.name == "__pycache__" or (target / entry.name).exists():
                continue
            os.symlink(entry, target / entry.name)
    return STAGE


@event_priority(100)       # before mkdocstrings' own on_config, which sets up its search path
def on_config(config, **kwargs):
    stage()
    return config
