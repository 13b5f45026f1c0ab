"""Golden files of layouts, and their semantic diff (compiler regression testing).

``snapshot`` records, for every named layout, its spec, its canonical normal form (F2 bases or
explicit table) and its fingerprint, plus the versions of the frameworks that produced it.
``diff`` compares two golden files layout by layout: an unchanged fingerprint means the same
layout; a changed one is re-proved from the two normal forms, giving the verdict and a witness
(the hardware location whose element moved). Layouts only in one file are listed as added or
removed.

Layouts are matched by their **key** (:func:`layout_key`): the spec text (whitespace runs
collapsed), the shape and the adapter options, i.e. what was asked, not where it was written
down, so two snapshots of the same layouts taken from corpus files with other names match. The
names (``corpus-stem::claim::a``) are labels for the report; a layout asked for by several claims
is recorded once, under its first name, with all its names. The Triton semantics chosen with
``--triton-version`` is not part of the key: it is what two snapshots are compared across.

Golden file (JSON, format 2; format 1 files, without ``key``/``options``/``names``, are read too)::

    {"format": 2, "versions": {"layoutverify": "0.2.0", "triton": "3.9.0", "triton_semantics": "3.9"},
     "layouts": {"NAME": {"key": "...", "names": ["NAME", ...], "spec": "...", "shape": [..] | null,
                          "options": {...}, "source": "adapter" | "native",
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

FORMAT = 2
READABLE_FORMATS = (1, 2)


def layout_key(spec: str, shape=None, options: dict | None = None) -> str:
    """The stable key a layout is matched by across golden files: spec text, shape, options."""
    key = " ".join(str(spec).split())
    if shape:
        key += " @" + "x".join(str(int(s)) for s in shape)
    if options:
        key += " " + json.dumps(options, sort_keys=True, default=str)
    return key


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
    """One layout to record: a label (``corpus-stem::claim::a``), the spec, shape and options."""
    name: str
    spec: str
    shape: tuple | None = None
    options: dict | None = None

    @property
    def key(self) -> str:
        """The layout's key in a golden file (:func:`layout_key` of spec, shape and options)."""
        return layout_key(self.spec, self.shape, self.options)


def unique(entries: list[Entry]) -> tuple[list[Entry], dict[str, list[str]]]:
    """The entries with distinct keys (the first name kept), and each kept name's list of all names."""
    first: dict[str, Entry] = {}
    names: dict[str, list[str]] = {}
    for e in entries:
        if e.key in first:
            names[first[e.key].name].append(e.name)
        else:
            first[e.key] = e
            names[e.name] = [e.name]
    return list(first.values()), names


def record(entries: list[Entry], *, native: bool = False, on_error=None, triton_version: str | None = None) -> dict:
    """Build a golden document. With ``native``, layouts come from the installed framework
    where its adapter offers ``native`` (the compiler under test) and can answer for that text,
    else from our adapter (pycute, CuTe's native here, has no MMA/copy atoms: those come from our
    catalogue, ``"source": "adapter"``). ``triton_version`` reads ``triton:`` specs with that
    release's semantics where an entry's options name none; it is recorded as
    ``versions["triton_semantics"]``. Entries with the same key are recorded once.

    Native Triton layouts are computed in ONE subprocess for all entries
    (:func:`layoutverify.adapters.triton.native.native_many`); other frameworks' ``native`` run per entry."""
    from layoutverify.adapters import adapter, split_spec
    from layoutverify.core.errors import UnsupportedError
    entries, all_names = unique(entries)
    if native and triton_version is not None:
        installed = adapter("triton").version.installed()
        if installed != triton_version:
            raise LayoutError(f"--triton-version {triton_version} does not apply with --native: the installed "
                              f"Triton ({installed or 'none'}) answers for itself")
    built: list = [None] * len(entries)
    sources: list[str] = ["adapter"] * len(entries)
    options: list[dict] = [dict(e.options or {}) for e in entries]
    batch: list[int] = []
    for i, e in enumerate(entries):
        try:
            fw, text = split_spec(e.spec)
            mod = adapter(fw)
        except LayoutError as err:
            built[i] = err
            continue
        if fw == "triton" and triton_version is not None:
            options[i].setdefault("triton_version", triton_version)
        if native and fw == "triton" and hasattr(mod, "native_many"):
            batch.append(i)
            sources[i] = "native"
            continue
        built[i] = None
        if native and hasattr(mod, "native"):
            try:
                built[i] = mod.native(text, shape=e.shape, **options[i])
                sources[i] = "native"
            except UnsupportedError:
                built[i] = None           # the framework cannot be asked about this text: our adapter
            except LayoutError as err:
                built[i] = err
        if built[i] is None:
            try:
                built[i] = mod.parse(text, shape=e.shape, **options[i])
            except LayoutError as err:
                built[i] = err
    if batch:
        native_many = adapter("triton").native_many
        cases = [(split_spec(entries[i].spec)[1], entries[i].shape, options[i]) for i in batch]
        for i, res in zip(batch, native_many(cases)):
            built[i] = res
    layouts = {}
    for e, lay, src in zip(entries, built, sources):
        if isinstance(lay, Exception):
            if on_error is None:
                raise LayoutError(f"layout {e.name!r}: {lay}") from None
            on_error(e, lay)
            continue
        layouts[e.name] = {"key": e.key, "names": all_names[e.name], "spec": e.spec,
                           "shape": list(e.shape) if e.shape else None, "options": dict(e.options or {}),
                           "source": src, "fingerprint": lay.fingerprint(), "normal_form": lay.to_json()}
    versions = framework_versions()
    if any(split_spec_safe(e.spec) == "triton" for e in entries):
        versions["triton_semantics"] = "native" if native else \
            adapter("triton").version.normalize(triton_version)
    return {"format": FORMAT, "versions": versions, "layouts": layouts}


def split_spec_safe(spec: str) -> str | None:
    """The framework of ``spec``, or None where it names none."""
    from layoutverify.adapters import split_spec
    try:
        return split_spec(spec)[0]
    except LayoutError:
        return None


_ENTRY_FIELDS = {"spec": str, "fingerprint": str, "normal_form": dict}


def load_golden(path: str | Path) -> dict:
    """Read and check a golden file (format 1 or 2); anything else is a :class:`LayoutError`."""
    text = read_text(path, what="golden file")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise LayoutError(f"{path}: not a JSON golden file: {e}") from None
    except RecursionError:
        raise LayoutError(f"{path}: not a golden file: JSON nested too deeply") from None
    if not isinstance(doc, dict) or isinstance(doc.get("format"), bool) or doc.get("format") not in READABLE_FORMATS \
            or not isinstance(doc.get("layouts"), dict):
        raise LayoutError(f"{path}: not a layoutverify golden file (format {' or '.join(map(str, READABLE_FORMATS))})")
    if not isinstance(doc.get("versions", {}), dict):
        raise LayoutError(f"{path}: 'versions' must be an object")
    for name, entry in doc["layouts"].items():
        if not isinstance(entry, dict):
            raise LayoutError(f"{path}: layout {name!r} must be an object")
        for field_name, typ in _ENTRY_FIELDS.items():
            if not isinstance(entry.get(field_name), typ):
                raise LayoutError(f"{path}: layout {name!r}: {field_name!r} must be a{'n object' if typ is dict else ' string'}")
        shape = entry.get("shape")
        if shape is not None and not (isinstance(shape, list) and all(isinstance(s, int) and not isinstance(s, bool)
                                                                       and s > 0 for s in shape)):
            raise LayoutError(f"{path}: layout {name!r}: 'shape' must be null or a list of positive integers")
        if not isinstance(entry.get("options", {}), dict):
            raise LayoutError(f"{path}: layout {name!r}: 'options' must be an object")
        if "key" in entry and not isinstance(entry["key"], str):
            raise LayoutError(f"{path}: layout {name!r}: 'key' must be a string")
    return doc


def keyed(doc: dict) -> dict[str, tuple[str, dict]]:
    """``key -> (name, entry)`` of a golden document; format 1 entries get their key computed.
    Where several entries share a key (hand-made files), the first name in sorted order wins."""
    out: dict[str, tuple[str, dict]] = {}
    for name in sorted(doc["layouts"]):
        entry = doc["layouts"][name]
        key = entry.get("key") or layout_key(entry["spec"], entry.get("shape"), entry.get("options"))
        out.setdefault(key, (name, entry))
    return out


@dataclass
class Change:
    """A difference between two golden files for one layout: ``changed`` (with the verdict and witness
    of old against new), ``added`` or ``removed``."""
    name: str
    status: str             # "changed" | "added" | "removed"
    verdict: str | None = None
    witness: dict | None = None
    reason: str = ""
    old_spec: str | None = None
    new_spec: str | None = None
    key: str | None = None
    old_name: str | None = None   # when the old file labelled the layout otherwise

    def to_json(self) -> dict:
        """The fields that are set, as JSON."""
        return {k: v for k, v in vars(self).items() if v is not None}


def common_count(old: dict, new: dict) -> int:
    """How many layouts (keys) the two documents share."""
    return len(set(keyed(old)) & set(keyed(new)))


def diff(old: dict, new: dict, timeout_ms: int = 20_000) -> list[Change]:
    """Semantic differences between two golden documents, matched by key, sorted by name."""
    from layoutverify.core.batch import Prover
    prover = Prover(timeout_ms=timeout_ms)
    a, b = keyed(old), keyed(new)
    out: list[Change] = []
    for key in set(a) | set(b):
        if key not in b:
            name, ea = a[key]
            out.append(Change(name, "removed", old_spec=ea["spec"], key=key))
            continue
        if key not in a:
            name, eb = b[key]
            out.append(Change(name, "added", new_spec=eb["spec"], key=key))
            continue
        (name_a, ea), (name, eb) = a[key], b[key]
        if ea.get("fingerprint") == eb.get("fingerprint") and ea.get("normal_form") == eb.get("normal_form"):
            continue
        la, lb = _layout(ea, name_a, "old"), _layout(eb, name, "new")
        res = prover.prove(la, lb)
        if res.verdict == "equal":
            # same layout, another fingerprint (e.g. a different but equivalent normal form)
            continue
        witness = res.witness
        if witness is not None and res.verdict == "not_equal":
            recheck_witness(la, lb, witness)
        out.append(Change(name, "changed", res.verdict, witness, res.reason, ea.get("spec"), eb.get("spec"),
                          key=key, old_name=name_a if name_a != name else None))
    return sorted(out, key=lambda c: (c.name, c.status))


def _layout(entry: dict, name: str, side: str) -> Layout:
    try:
        Layout.check_json(entry["normal_form"])
        nf = dict(entry["normal_form"])
        if isinstance(nf.get("bases"), dict):
            # JSON tools (and our sorted dump) reorder keys: put the bases back in in_dims order,
            # which Layout.from_json reads them in
            order = [d[0] for d in nf["in_dims"]]
            nf["bases"] = {k: nf["bases"][k] for k in order if k in nf["bases"]} | \
                {k: v for k, v in nf["bases"].items() if k not in order}
        return Layout.from_json(nf)
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
