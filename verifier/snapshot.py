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

from .errors import LayoutError
from .layout import Layout

FORMAT = 1


def framework_versions() -> dict:
    from importlib import metadata

    from . import __version__
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
    where its adapter offers ``native`` (the compiler under test), else from our adapter."""
    from adapters import adapter, split_spec
    layouts = {}
    for e in entries:
        fw, text = split_spec(e.spec)
        mod = adapter(fw)
        use_native = native and hasattr(mod, "native")
        try:
            lay = (mod.native if use_native else mod.parse)(text, shape=e.shape, **(e.options or {}))
        except LayoutError as err:
            if on_error is None:
                raise LayoutError(f"layout {e.name!r}: {err}") from None
            on_error(e, err)
            continue
        layouts[e.name] = {"spec": e.spec, "shape": list(e.shape) if e.shape else None,
                           "source": "native" if use_native else "adapter",
                           "fingerprint": lay.fingerprint(), "normal_form": lay.normal_form()}
    return {"format": FORMAT, "versions": framework_versions(), "layouts": layouts}


def load_golden(path: str | Path) -> dict:
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as e:
        raise LayoutError(f"cannot read golden file {str(path)!r}: {e.strerror}") from None
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
    from .compare import compare
    a, b = old["layouts"], new["layouts"]
    out: list[Change] = []
    for name in sorted(set(a) | set(b)):
        if name not in b:
            out.append(Change(name, "removed", old_spec=a[name]["spec"]))
        elif name not in a:
            out.append(Change(name, "added", new_spec=b[name]["spec"]))
        elif a[name]["fingerprint"] != b[name]["fingerprint"]:
            la = Layout.from_normal_form(a[name]["normal_form"])
            lb = Layout.from_normal_form(b[name]["normal_form"])
            res = compare(la, lb, timeout_ms=timeout_ms)
            out.append(Change(name, "changed", res.verdict, res.witness, res.reason,
                              a[name]["spec"], b[name]["spec"]))
    return out
