"""``layoutverify scan``: read what a compiler leaves behind (TTGIR modules, Triton caches and
dumps), find every op that changes or materialises a layout, and report what each costs.

Pieces, one job each:

* :mod:`.sources` finds modules on disk (files, Triton cache / ``TRITON_KERNEL_DUMP`` folders,
  ``MLIR_ENABLE_DUMP`` logs) with their metadata;
* :mod:`.module` reads one TTGIR module (aliases, locations, module attributes, ops);
* :mod:`.locations` turns ``loc(...)`` into ``file:line:col``;
* :mod:`.ops` says which ops matter, what layouts each one moves between and which compiled
  instructions it emits;
* :mod:`.identity` says what a kernel is (name, target, warps, stages, specialisation);
* :mod:`.target` maps a target to its lanes, bank model and cost-model basis;
* :mod:`.triton_choice` predicts the mechanism Triton's lowering uses for a conversion;
* :mod:`.compiled` reads PTX / AMDGCN into instructions by source location;
* :mod:`.attribution` gives each layout op the compiled instructions at its location;
* :mod:`.facts` estimates an op's instructions from its layouts and prices instructions;
* :mod:`.findings` holds the finding codes, severities and wording;
* :mod:`.analysis` builds the per-op reports, costs and findings;
* :mod:`.baseline` compares a scan with an earlier one (the CI gate);
* :mod:`.output` renders tables, JSON, Markdown, JUnit and HTML.
"""
from __future__ import annotations



def scan_paths(paths, options=None, progress=None) -> dict:
    """Scan files and folders; the JSON-able scan document (see :mod:`.output`)."""
    from .analysis import ScanOptions, scan_modules
    from .sources import find_modules
    options = options or ScanOptions()
    modules = find_modules(paths)
    return scan_modules(modules, options, progress=progress)
