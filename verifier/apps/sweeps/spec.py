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

Points come in **groups**: one shape, element type and set of adapter options, with the group's
layouts listed once by name and its pairs by name. Every point has a stable ``id`` (a hash of the
task, the group and the two layouts), which is how a resumed sweep skips what is done.
"""
from __future__ import annotations

import hashlib
import itertools
import string
import tomllib
from dataclasses import dataclass, field

from layoutverify.core.errors import LayoutError
from layoutverify.core.files import read_text

from . import triton_space

TASKS = ("prove", "analyze")
ELEMENT_BITS = {"f64": 64, "i64": 64, "f32": 32, "i32": 32, "tf32": 32, "f16": 16, "bf16": 16, "i16": 16,
                "f8": 8, "fp8": 8, "i8": 8}
TRITON_VERSIONS = ("3.6", "3.7", "3.8", "3.9")
MAX_POINTS = 1 << 34


@dataclass
class Group:
    """Points sharing shape, element type and adapter options."""
    key: str                                  # stable description, part of every point id
    task: str
    shape_a: tuple | None
    shape_b: tuple | None
    options: dict                             # adapter options (triton_version)
    element_type: str | None
    layouts: dict = field(default_factory=dict)   # name -> spec text ("triton:...")
    pairs: list = field(default_factory=list)     # [(a name, b name)]
    meta: dict = field(default_factory=dict)      # written into every record

    def point_id(self, a: str, b: str) -> str:
        return point_id(self.task, self.key, self.layouts[a], self.layouts[b])


def point_id(task: str, key: str, a_spec: str, b_spec: str) -> str:
    """The stable id of a point: a hash of the task, its group and the two layout specs."""
    return hashlib.blake2b(f"{task}|{key}|{a_spec}|{b_spec}".encode(), digest_size=8).hexdigest()


@dataclass
class Spec:
    task: str
    spaces: list   # ("triton", dict) | ("template", dict)
    source: str = "<spec>"

    def groups(self):
        for kind, sp in self.spaces:
            yield from (_triton_groups(self.task, sp) if kind == "triton" else _template_groups(self.task, sp))

    def count(self) -> int:
        return sum(len(g.pairs) for g in self.groups())


def _list(sp: dict, key: str, default, where: str):
    v = sp.get(key, default)
    if not isinstance(v, list) or not v:
        raise LayoutError(f"{where}: {key} must be a non-empty list, got {v!r}")
    return v


#: most elements a sweep shape may have (a tensor of 2^24 elements is far past any register tile)
MAX_SHAPE_ELEMENTS = 1 << 24


def _shape(v, where: str) -> tuple:
    if isinstance(v, str):
        from layoutverify.adapters import parse_shape
        shape = tuple(parse_shape(v))
    elif isinstance(v, list) and v and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in v):
        shape = tuple(v)
    else:
        raise LayoutError(f"{where}: bad shape {v!r} (want [64, 64] or \"64x64\")")
    n = 1
    for x in shape:
        n *= x
        if n > MAX_SHAPE_ELEMENTS:
            raise LayoutError(f"{where}: shape {'x'.join(map(str, shape))} has more than {MAX_SHAPE_ELEMENTS} "
                              f"elements (2^24), the sweep limit")
    return shape


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


def _check_triton(sp: dict, where: str) -> None:
    for side in ("a", "b"):
        for fam in _list(sp, side, None, where):
            if fam not in triton_space.FAMILIES:
                raise LayoutError(f"{where}: unknown family {fam!r} in {side} (known: {', '.join(triton_space.FAMILIES)})")
    for s in _list(sp, "shapes", None, where):
        _shape(s, where)
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
    lim = sp.get("limit")
    if lim is not None and (not isinstance(lim, int) or lim < 1):
        raise LayoutError(f"{where}: limit must be a positive integer")


def _triton_groups(task: str, sp: dict):
    left = sp.get("limit") or MAX_POINTS
    versions = sp.get("versions", [None])
    for version, etype, nw, shape in itertools.product(versions, sp.get("element_types", ["f16"]),
                                                        sp.get("num_warps", [4]),
                                                        [_shape(s, sp["_where"]) for s in sp["shapes"]]):
        if left <= 0:
            return
        opts = {"triton_version": str(version)} if version is not None else {}
        key = f"triton|{version}|{etype}|w{nw}|{'x'.join(map(str, shape))}"
        g = Group(key, task, shape, shape, opts, etype,
                  meta={"version": version, "element_type": etype, "num_warps": nw, "shape": list(shape)})
        sides = []
        for side in ("a", "b"):
            names = []
            for fam in sp[side]:
                for name, text in triton_space.instances(fam, shape, nw, sp.get(fam)):
                    g.layouts[name] = "triton:" + text
                    names.append(name)
            sides.append(names)
        for a, b in itertools.product(*sides):
            if left <= 0:
                break
            g.pairs.append((a, b))
            left -= 1
        if g.pairs:
            yield g


def _check_template(sp: dict, where: str) -> None:
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


def _template_groups(task: str, sp: dict):
    vars_ = {k: v for k, v in sp.get("vars", {}).items() if k != "zip"}
    ties = [list(t) for t in sp.get("vars", {}).get("zip", [])]
    tied = {n for t in ties for n in t}
    axes = [(t, list(zip(*(vars_[n] for n in t)))) for t in ties] + \
        [([n], [(x,) for x in vals]) for n, vals in vars_.items() if n not in tied]
    left = sp.get("limit") or MAX_POINTS
    for combo in itertools.product(*(vals for _, vals in axes)):
        if left <= 0:
            return
        env = {}
        for (names, _), vals in zip(axes, combo):
            env.update({n: str(v) for n, v in zip(names, vals)})
        sub = lambda t: string.Template(str(t)).substitute(env)  # noqa: E731
        a, b = sub(sp["a"]), sub(sp["b"])
        both = sp.get("shape")
        sa = sp.get("shape_a", both)
        sb = sp.get("shape_b", both)
        shape_a = _shape(sub(sa), sp["_where"]) if sa else None
        shape_b = _shape(sub(sb), sp["_where"]) if sb else None
        key = "template|" + "|".join(f"{k}={v}" for k, v in sorted(env.items()))
        g = Group(key, task, shape_a, shape_b, {}, None, layouts={"a": a, "b": b}, pairs=[("a", "b")],
                  meta={"vars": env, "a_spec": a, "b_spec": b})
        left -= 1
        yield g
