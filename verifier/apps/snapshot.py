"""Golden files of layouts, and their semantic diff (compiler regression testing).

``snapshot`` records, for every named layout, its spec, its canonical normal form (F2 bases or
explicit table) and its fingerprint, plus the versions of the frameworks that produced it.
``diff`` compares two golden files layout by layout: an unchanged fingerprint means the same
layout; a changed one is re-proved from the two normal forms, giving the verdict and a witness
(the hardware location whose element moved). Layouts only in one file are listed as added or
removed.

Golden file (JSON)::

    {"format": 1, "versions": {"layoutverify": "0.1.0", "triton": "3.9.0"},
     "layouts": {"NAME": {"spec": "...", "shape": [..] | null, "source": "adapter" | "native",
                          "fingerprint": "...", "normal_form": {...}}}}
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from layoutverify.core.errors import LayoutError
from layoutverify.core.files import read_text
from layoutverify.core.layout import Layout

FORMAT = 1


def framework_versions() -> dict:
    from importlib import metadata

    from layoutverify import __version__
    out = {"layoutverify": __version__}
    for dist in ("triton", "nvidia-cutlass", "tilus"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


@dataclass
class Entry:
    name: str
    spec: str
    shape: tuple | None = None
    options: dict | None = None


def record(entries: list[Entry], *, native: bool = False, on_error=None) -> dict:
    """Build a golden document. With ``native``, layouts come from the installed framework
    where its adapter offers ``native`` (the compiler under test), else from our adapter.

    Native Triton layouts are computed in ONE subprocess for all entries
    (:func:`layoutverify.adapters.triton.native.native_many`); other frameworks' ``native`` run per entry."""
    from layoutverify.adapters import adapter, split_spec
    built: list = [None] * len(entries)
    sources: list[str] = ["adapter"] * len(entries)
    batch: list[int] = []
    for i, e in enumerate(entries):
        try:
            fw, text = split_spec(e.spec)
            mod = adapter(fw)
        except LayoutError as err:
            built[i] = err
            continue
        if native and fw == "triton" and hasattr(mod, "native_many"):
            batch.append(i)
            sources[i] = "native"
            continue
        use_native = native and hasattr(mod, "native")
        sources[i] = "native" if use_native else "adapter"
        try:
            built[i] = (mod.native if use_native else mod.parse)(text, shape=e.shape, **(e.options or {}))
        except LayoutError as err:
            built[i] = err
    if batch:
        from layoutverify.adapters.triton import native_many
        cases = [(split_spec(entries[i].spec)[1], entries[i].shape, entries[i].options or {}) for i in batch]
        for i, res in zip(batch, native_many(cases)):
            built[i] = res
    layouts = {}
    for e, lay, src in zip(entries, built, sources):
        if isinstance(lay, Exception):
            if on_error is None:
                raise LayoutError(f"layout {e.name!r}: {lay}") from None
            on_error(e, lay)
            continue
        layouts[e.name] = {"spec": e.spec, "shape": list(e.shape) if e.shape else None, "source": src,
                           "fingerprint": lay.fingerprint(), "normal_form": lay.normal_form()}
    return {"format": FORMAT, "versions": framework_versions(), "layouts": layouts}


def load_golden(path: str | Path) -> dict:
    text = read_text(path, what="golden file")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise LayoutError(f"{path}: not a JSON golden file: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("layouts"), dict):
        raise LayoutError(f"{path}: not a layoutverify golden file (format {FORMAT})")
    return doc


@dataclass
class Change:
    name: str
    status: str             # "changed" | "added" | "removed"
    verdict: str | None = None
    witness: dict | None = None
    reason: str = ""
    old_spec: str | None = None
    new_spec: str | None = None

    def to_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def diff(old: dict, new: dict, timeout_ms: int = 20_000) -> list[Change]:
    """Semantic differences between two golden documents, sorted by name."""
    from layoutverify.core.compare import compare
    a, b = old["layouts"], new["layouts"]
    out: list[Change] = []
    for name in sorted(set(a) | set(b)):
        if name not in b:
            out.append(Change(name, "removed", old_spec=a[name]["spec"]))
        elif name not in a:
            out.append(Change(name, "added", new_spec=b[name]["spec"]))
        elif a[name].get("fingerprint") != b[name].get("fingerprint") or \
                a[name].get("normal_form") != b[name].get("normal_form"):
            la, lb = _layout(a[name], name, "old"), _layout(b[name], name, "new")
            res = compare(la, lb, timeout_ms=timeout_ms)
            if res.verdict == "equal":
                # same layout, another fingerprint (e.g. a different but equivalent normal form)
                continue
            witness = res.witness
            if witness is not None and res.verdict == "not_equal":
                recheck_witness(la, lb, witness)
            out.append(Change(name, "changed", res.verdict, witness, res.reason,
                              a[name].get("spec"), b[name].get("spec")))
    return out


def _layout(entry: dict, name: str, side: str) -> Layout:
    try:
        nf = dict(entry["normal_form"])
        if isinstance(nf.get("bases"), dict):
            # JSON tools (and our sorted dump) reorder keys: put the bases back in in_dims order,
            # which Layout.from_normal_form reads them in
            order = [d[0] for d in nf["in_dims"]]
            nf["bases"] = {k: nf["bases"][k] for k in order if k in nf["bases"]} | \
                {k: v for k, v in nf["bases"].items() if k not in order}
        return Layout.from_normal_form(nf)
    except (KeyError, TypeError, ValueError, LayoutError) as e:
        raise LayoutError(f"{side} golden file: layout {name!r} has a malformed normal form ({e})") from None


def recheck_witness(la: Layout, lb: Layout, witness: dict) -> None:
    """Evaluate a ``not_equal`` witness location on both layouts, independently of the prover,
    and check it shows what it claims: the two elements there differ."""
    loc = witness["hardware"]
    got = []
    for lay in (la, lb):
        sizes = dict(lay.in_dims)
        if any(int(i) >= sizes.get(d, 1) for d, i in loc.items()):   # no such location in this layout
            got.append(None)
            continue
        row = [int(loc.get(d, 0)) for d in lay.in_names]
        got.append([int(x) for x in lay.apply(np.asarray([row]))[0]])
    if got != [witness.get("a"), witness.get("b")] or got[0] == got[1]:
        raise AssertionError(f"internal: witness {witness} does not re-check: layouts give {got}")
    witness["rechecked"] = True
