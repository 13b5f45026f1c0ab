"""Sweep specs (TOML) and the points they enumerate.

```toml
task = "prove"                    # "prove" (verdict of A vs B) or "analyze" (conversion A -> B)

[[triton]]                        # Triton encodings: families of A x families of B, per group
a = ["blocked"]
b = ["nvidia_mma", "dot_op", "slice", "linear"]
shapes = [[64, 64], [128, 128]]
num_warps = [4, 8]
element_types = ["f16"]           # element bits for bank-conflict / vector analysis
versions = ["3.9"]                # the Triton adapter's triton_version option
limit = 100000                    # optional: at most this many points from this space
[triton.blocked]                  # optional: override a family's parameter lists
size_per_thread = [[1, 4], [2, 2]]

[[template]]                      # anything else (CuTe atoms x tilers, ...): $name placeholders
a = "cute:tiled_mma(SM80_16x8x16_F32F16F16F32_TN, $tiler, C, tile=$tile)"
b = "triton:#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = $warps, instrShape = [16, 8]}>"
shape_b = "$shape"                # optional shapes for A / B (shape = both)
[template.vars]                   # lists; "zip" = [[...], ...] ties lists together instead of a product
zip = [["tiler", "tile", "warps", "shape"]]
tiler = ["(2,2,1)", "(4,1,1)"]
tile = ["(32,16)", "(64,8)"]
warps = ["[2, 2]", "[4, 1]"]
shape = ["32x16", "64x8"]
```

Every key is checked here (one line naming the bad key or value, exit 2); the points the spec
describes, and their numbering, are :mod:`.space`'s. ``limit`` is per space: at most that many
points (``[[triton]]``) or combinations (``[[template]]``).
"""
from __future__ import annotations

import hashlib
import json
import string
import tomllib
from dataclasses import dataclass

from layoutverify.core.errors import LayoutError
from layoutverify.core.files import read_text

from . import triton_space
from .space import Space, shape_of

TASKS = ("prove", "analyze")
ELEMENT_BITS = {"f64": 64, "i64": 64, "f32": 32, "i32": 32, "tf32": 32, "f16": 16, "bf16": 16, "i16": 16,
                "f8": 8, "fp8": 8, "i8": 8}
TRITON_VERSIONS = ("3.6", "3.7", "3.8", "3.9")


@dataclass
class Spec:
    """A parsed spec: its task and its spaces (``("triton" | "template", table)``, in file order)."""
    task: str
    spaces: list   # ("triton", dict) | ("template", dict)
    source: str = "<spec>"

    def space(self) -> Space:
        """The numbered points (:class:`~.space.Space`)."""
        return Space(self)

    def groups(self):
        """The groups of the spec's points, in order."""
        return self.space().groups()

    def count(self) -> int:
        """The number of points in the spec."""
        return self.space().points

    def canonical(self) -> dict:
        """What the points depend on, nothing else (not the file's path, comments or spelling):
        the task and the spaces' tables."""
        return {"task": self.task,
                "spaces": [[kind, {k: v for k, v in sp.items() if not k.startswith("_")}] for kind, sp in self.spaces]}

    def fingerprint(self) -> str:
        """A hash of :meth:`canonical` and :data:`NUMBERING` (results of another fingerprint are
        another sweep's)."""
        text = json.dumps([NUMBERING, self.canonical()], sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:32]


#: the version of the numbering of points (:mod:`.space`, :mod:`.triton_space`): bumped whenever a
#: change of code gives a spec's points other indices, so that old results are refused, not mixed
NUMBERING = "sweep-points/2"


def _list(sp: dict, key: str, default, where: str):
    v = sp.get(key, default)
    if not isinstance(v, list) or not v:
        raise LayoutError(f"{where}: {key} must be a non-empty list, got {v!r}")
    return v


def load_spec(path: str) -> Spec:
    text = read_text(path, what="sweep spec", limit=1 << 22)
    return parse_spec_text(text, path)


def parse_spec_text(text: str, source: str = "<spec>") -> Spec:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise LayoutError(f"{source}: not valid TOML: {e}") from None
    except RecursionError:
        raise LayoutError(f"{source}: TOML nested too deeply") from None
    task = data.get("task", "prove")
    if task not in TASKS:
        raise LayoutError(f"{source}: task must be one of {', '.join(TASKS)}, got {task!r}")
    unknown = set(data) - {"task", "triton", "template"}
    if unknown:
        raise LayoutError(f"{source}: unknown key(s) {', '.join(sorted(unknown))} (want task, [[triton]], [[template]])")
    spaces = []
    for kind in ("triton", "template"):
        items = data.get(kind, [])
        if isinstance(items, dict):
            items = [items]
        if not isinstance(items, list):
            raise LayoutError(f"{source}: [[{kind}]] must be tables")
        for i, sp in enumerate(items):
            where = f"{source}: [[{kind}]] #{i + 1}"
            if not isinstance(sp, dict):
                raise LayoutError(f"{where}: must be a table")
            (_check_triton if kind == "triton" else _check_template)(sp, where)
            spaces.append((kind, dict(sp, _where=where)))
    if not spaces:
        raise LayoutError(f"{source}: no [[triton]] or [[template]] space")
    return Spec(task, spaces, source)


TRITON_KEYS = ("a", "b", "shapes", "num_warps", "element_types", "versions", "limit") + triton_space.FAMILIES
TEMPLATE_KEYS = ("a", "b", "shape", "shape_a", "shape_b", "vars", "limit")


def _check_keys(sp: dict, known: tuple, where: str) -> None:
    unknown = sorted(set(sp) - set(known))
    if unknown:
        raise LayoutError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))} (known: {', '.join(known)})")


def _check_limit(sp: dict, where: str) -> None:
    lim = sp.get("limit")
    if lim is not None and (not isinstance(lim, int) or isinstance(lim, bool) or lim < 1):
        raise LayoutError(f"{where}: limit must be a positive integer, got {lim!r}")


def _check_triton(sp: dict, where: str) -> None:
    _check_keys(sp, TRITON_KEYS, where)
    for side in ("a", "b"):
        for fam in _list(sp, side, None, where):
            if fam not in triton_space.FAMILIES:
                raise LayoutError(f"{where}: unknown family {fam!r} in {side} (known: {', '.join(triton_space.FAMILIES)})")
    for s in _list(sp, "shapes", None, where):
        shape_of(s, where)
    for w in _list(sp, "num_warps", [4], where):
        if not isinstance(w, int) or w < 1 or w & (w - 1) or w > 64:
            raise LayoutError(f"{where}: num_warps must be powers of two up to 64, got {w!r}")
    for e in _list(sp, "element_types", ["f16"], where):
        if e not in ELEMENT_BITS:
            raise LayoutError(f"{where}: unknown element type {e!r} (known: {', '.join(ELEMENT_BITS)})")
    for v in _list(sp, "versions", [None], where):
        if v is not None and str(v) not in TRITON_VERSIONS:
            raise LayoutError(f"{where}: Triton version {v!r} not one of {', '.join(TRITON_VERSIONS)}")
    for fam in triton_space.FAMILIES:
        if fam in sp and not isinstance(sp[fam], dict):
            raise LayoutError(f"{where}: [{fam}] must be a table of parameter lists")
        for k in (sp.get(fam) or {}):
            if k not in triton_space.DEFAULTS[fam]:
                raise LayoutError(f"{where}: unknown {fam} parameter {k!r} (known: {', '.join(triton_space.DEFAULTS[fam])})")
    _check_limit(sp, where)


def _check_template(sp: dict, where: str) -> None:
    _check_keys(sp, TEMPLATE_KEYS, where)
    _check_limit(sp, where)
    for side in ("a", "b"):
        if not isinstance(sp.get(side), str) or not sp[side].strip():
            raise LayoutError(f"{where}: {side} must be a layout spec template")
    vars_ = sp.get("vars", {})
    if not isinstance(vars_, dict):
        raise LayoutError(f"{where}: [vars] must be a table of lists")
    names = set()
    for tmpl in (sp["a"], sp["b"], sp.get("shape", ""), sp.get("shape_a", ""), sp.get("shape_b", "")):
        for m in string.Template.pattern.finditer(str(tmpl)):
            n = m.group("named") or m.group("braced")
            if n:
                names.add(n)
    missing = names - set(vars_)
    if missing:
        raise LayoutError(f"{where}: placeholders without values: {', '.join(sorted(missing))}")
    for k, v in vars_.items():
        if k == "zip":
            if not isinstance(v, list) or not all(isinstance(t, list) for t in v):
                raise LayoutError(f"{where}: vars.zip must be a list of lists of names")
            for tie in v:
                lens = {len(vars_.get(n, [])) for n in tie}
                if len(lens) != 1 or any(n not in vars_ for n in tie):
                    raise LayoutError(f"{where}: zipped vars {tie} must all exist and have the same length")
        elif not isinstance(v, list) or not v:
            raise LayoutError(f"{where}: vars.{k} must be a non-empty list")
