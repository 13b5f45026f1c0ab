"""Corpora: layouts and equivalence claims as TOML data files.

A corpus file holds any number of claims and named layouts. This one is checked as written by
``tests/test_friction.py`` (``layoutverify check`` on it passes)::

    [defaults]                      # optional: applies to every claim/layout of the file
    shape = [32, 32]

    [[claim]]
    name = "mma-v2-C-vs-cute"       # unique within the file
    a = "triton:#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>"
    b = "cute:tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2,2,1):(2,1,0), C, tile=(32,32))"
    expect = "equal"
    tags = ["mma.m16n8k16"]
    note = "warpsPerCTA = [2, 2] numbers warps along N first: CuTe's atom layout (2,2,1):(2,1,0)"
    fragment = "mma.m16n8k16.f32.C"

    [[claim]]
    name = "mma-v2-C-to-blocked"
    a = "triton:#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>"
    b = "triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
    expect = "intra_cta"            # a conversion class: the cheapest mechanism that suffices
    num_warps = 4

    [[inexpressible]]               # an atlas cell the framework cannot express (and why)
    fragment = "ldmatrix.x4"
    framework = "triton"
    note = "Triton picks ldmatrix inside the local_load lowering; no TTGIR encoding names it"

    [[layout]]                      # a named layout, recorded by `layoutverify snapshot`
    name = "blocked-4x8"
    spec = "triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
    shape = [64, 64]

The keys of a claim:

* ``name`` (unique within the file), ``a``, ``b``: the two layouts, ``FRAMEWORK:TEXT``;
* ``expect``: a verdict (``equal``, ``equal_up_to_register_order``, ``not_equal``,
  ``different_tensors``) or a conversion class A -> B (``no_op``, ``register_permute``,
  ``intra_warp``, ``intra_cta``, ``cross_cta``, ``impossible``);
* ``shape`` (``shape_a`` / ``shape_b`` set one side only); ``options`` (adapter options of both
  sides, e.g. ``{ warp_size = 32 }``; ``options_a`` / ``options_b``);
* ``tags``, ``note``; ``fragment`` (the atlas row) and ``framework`` (the atlas column, default
  b's framework);
* ``known``: a KNOWN DIFFERENCE. ``expect`` stays what is believed true (the spec); ``known`` is
  what the framework is known to answer instead. The claim then passes as "known" while the
  difference reproduces exactly, and FAILS once it no longer does (fixed: remove ``known``);
* ``num_warps``: the module's num-warps; a register layout with another warp count is a
  ``num_warps`` warning;
* ``subtile_offsets = [0, 32]``: b is a sub-tile of a at these offsets (extract_slice,
  memdesc_subview); ``not_restriction`` when b's layout is not a's restricted to the tile;
* ``expect_warnings = ["replicated_registers"]``: exactly these warning codes (of a, b and the
  sub-tile check) must fire, else the claim fails; without it, warnings are printed by ``check``
  and never fail a claim;
* ``native = "mma_dot:m16n8k16v1_f16_f32:A"``: where the atlas's ``--native`` mode gets the
  framework's own layout for side b (see :mod:`layoutverify.apps.atlas`); default: b's text
  through the framework's ``native``.

Claims are checked by :mod:`layoutverify.apps.commands.check`; a claim *holds* when the verdict (or the
conversion class) is exactly the expected one. ``unknown`` never holds. A conversion class may
also be ``impossible`` (A does not hold every element B needs).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from layoutverify.core.errors import LayoutError
from layoutverify.core.files import read_text

VERDICT_EXPECTATIONS = ("equal", "equal_up_to_register_order", "not_equal", "different_tensors")
CONVERSION_EXPECTATIONS = ("no_op", "register_permute", "intra_warp", "intra_cta", "cross_cta", "impossible")

_CLAIM_KEYS = {"name", "a", "b", "shape", "shape_a", "shape_b", "options", "options_a", "options_b",
               "expect", "tags", "note", "fragment", "framework", "timeout_ms", "known", "native",
               "num_warps", "subtile_offsets", "expect_warnings"}
_LAYOUT_KEYS = {"name", "spec", "shape", "options", "tags", "note"}
_INEXPRESSIBLE_KEYS = {"fragment", "framework", "note"}
MAX_TIMEOUT_MS = 86_400_000
_TOP_KEYS = {"claim", "layout", "inexpressible", "defaults", "title", "description"}


@dataclass
class Claim:
    """One claim of a corpus: layouts ``a`` and ``b`` (specs, shapes, adapter options), the expected
    verdict or conversion class, and what the atlas and ``check`` read (tags, fragment, framework,
    known difference, warnings)."""
    name: str
    a: str
    b: str
    expect: str
    shape_a: tuple | None = None
    shape_b: tuple | None = None
    options_a: dict = field(default_factory=dict)
    options_b: dict = field(default_factory=dict)
    tags: list = field(default_factory=list)
    note: str = ""
    fragment: str | None = None
    framework: str | None = None
    timeout_ms: int = 20_000
    known: str | None = None
    native: str | None = None
    source: str = ""
    num_warps: int | None = None
    subtile_offsets: tuple | None = None
    expect_warnings: tuple | None = None

    @property
    def column(self) -> str:
        """The atlas column: ``framework`` or, by default, the framework of side ``b``."""
        if self.framework:
            return self.framework
        head, sep, _ = self.b.partition(":")
        return head.strip().lower() if sep else "?"

    @property
    def kind(self) -> str:
        """``conversion`` for an expected conversion class, else ``verdict``."""
        return "conversion" if self.expect in CONVERSION_EXPECTATIONS else "verdict"

    @property
    def id(self) -> str:
        """``file::name`` (the name alone for a claim without a file)."""
        return f"{Path(self.source).stem}::{self.name}" if self.source else self.name


@dataclass
class NamedLayout:
    """A named layout of a corpus (recorded by ``snapshot``): its spec, shape and adapter options."""
    name: str
    spec: str
    shape: tuple | None = None
    options: dict = field(default_factory=dict)
    source: str = ""


@dataclass
class Inexpressible:
    """An atlas cell that the framework cannot express, with the reason."""
    fragment: str
    framework: str
    note: str
    source: str = ""


@dataclass
class Corpus:
    """What corpus files hold: claims, named layouts and the atlas cells that cannot be expressed."""
    claims: list[Claim] = field(default_factory=list)
    layouts: list[NamedLayout] = field(default_factory=list)
    inexpressible: list[Inexpressible] = field(default_factory=list)


def _shape(v, where: str):
    if v is None:
        return None
    if isinstance(v, str):
        from layoutverify.adapters import parse_shape
        return parse_shape(v)
    if not isinstance(v, list) or not v or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in v):
        raise LayoutError(f"{where}: shape must be a list of positive integers, got {v!r}")
    from layoutverify.adapters import parse_shape
    try:   # the same limits (rank, element count) as --shape
        return parse_shape("x".join(map(str, v)))
    except LayoutError as e:
        raise LayoutError(f"{where}: {e}") from None


def _options(v, where: str, *specs: str) -> dict:
    """An options table, checked against the adapter options of each spec's framework."""
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise LayoutError(f"{where}: options must be a table, got {v!r}")
    from layoutverify.adapters import FRAMEWORKS, check_options, guess_framework
    for spec in specs:
        head, sep, _ = spec.partition(":")
        try:
            fw = head.strip().lower() if sep and head.strip().lower() in FRAMEWORKS else guess_framework(spec)
        except LayoutError:
            continue   # the spec itself is bad: that claim reports it when checked
        try:
            check_options(fw, v)
        except LayoutError as e:
            raise LayoutError(f"{where}: {e}") from None
    return dict(v)


def _warning_fields(raw: dict, where: str) -> dict:
    """``num_warps``, ``subtile_offsets``, ``expect_warnings`` of a claim, checked."""
    from layoutverify.core.properties import WARNING_CODES
    out: dict = {}
    nw = raw.get("num_warps")
    if nw is not None:
        if not isinstance(nw, int) or isinstance(nw, bool) or nw < 1:
            raise LayoutError(f"{where}: num_warps must be a positive integer, got {nw!r}")
        out["num_warps"] = nw
    off = raw.get("subtile_offsets")
    if off is not None:
        if not isinstance(off, list) or not off or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                                           for x in off):
            raise LayoutError(f"{where}: subtile_offsets must be a list of non-negative integers, got {off!r}")
        out["subtile_offsets"] = tuple(off)
    ew = raw.get("expect_warnings")
    if ew is not None:
        if not isinstance(ew, list) or not all(isinstance(x, str) for x in ew):
            raise LayoutError(f"{where}: expect_warnings must be a list of warning codes")
        bad = [x for x in ew if x not in WARNING_CODES]
        if bad:
            raise LayoutError(f"{where}: unknown warning code(s) {bad} (known: {', '.join(WARNING_CODES)})")
        out["expect_warnings"] = tuple(sorted(set(ew)))
    return out


def load_file(path: str | Path) -> Corpus:
    """Parse one corpus file; a malformed file raises :class:`LayoutError` naming file and entry."""
    path = Path(path)
    text = read_text(path, what="corpus")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise LayoutError(f"{path}: not valid TOML: {e}") from None
    except RecursionError:
        raise LayoutError(f"{path}: TOML nested too deeply") from None
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise LayoutError(f"{path}: unknown top-level key(s) {sorted(unknown)}")
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise LayoutError(f"{path}: [defaults] must be a table")
    bad = set(defaults) - ((_CLAIM_KEYS | _LAYOUT_KEYS) - {"name"})   # names are per entry
    if bad:
        raise LayoutError(f"{path}: [defaults]: unknown key(s) {sorted(bad)}")
    for key in ("title", "description"):
        if key in data and not isinstance(data[key], str):
            raise LayoutError(f"{path}: {key} must be a string")
    out = Corpus()
    names: set[str] = set()
    for key in ("claim", "layout", "inexpressible"):
        if not isinstance(data.get(key, []), list):
            raise LayoutError(f"{path}: {key!r} must be an array of tables ([[{key}]])")
    for i, raw in enumerate(data.get("claim", [])):
        where = f"{path}: claim #{i + 1}"
        if not isinstance(raw, dict):
            raise LayoutError(f"{where}: must be a table")
        raw = {**{k: v for k, v in defaults.items() if k in _CLAIM_KEYS}, **raw}
        bad = set(raw) - _CLAIM_KEYS
        if bad:
            raise LayoutError(f"{where}: unknown key(s) {sorted(bad)}")
        for key in ("name", "a", "b", "expect"):
            if not isinstance(raw.get(key), str) or not raw[key].strip():
                raise LayoutError(f"{where}: needs a non-empty string {key!r}")
        where = f"{path}: claim {raw['name']!r}"
        if raw["name"] in names:
            raise LayoutError(f"{where}: duplicate name")
        names.add(raw["name"])
        if raw["expect"] not in VERDICT_EXPECTATIONS + CONVERSION_EXPECTATIONS:
            raise LayoutError(f"{where}: expect {raw['expect']!r} is not one of "
                              f"{', '.join(VERDICT_EXPECTATIONS + CONVERSION_EXPECTATIONS)}")
        shape = _shape(raw.get("shape"), where)
        opts = _options(raw.get("options"), where, raw["a"], raw["b"])
        tags = raw.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise LayoutError(f"{where}: tags must be a list of strings")
        timeout = raw.get("timeout_ms", 20_000)
        if not isinstance(timeout, int) or isinstance(timeout, bool) or not 0 < timeout <= MAX_TIMEOUT_MS:
            raise LayoutError(f"{where}: timeout_ms must be a positive integer of at most {MAX_TIMEOUT_MS} (a day)")
        for key in ("fragment", "framework", "native", "note"):
            if key in raw and not isinstance(raw[key], str):
                raise LayoutError(f"{where}: {key} must be a string")
        known = raw.get("known")
        if known is not None:
            allowed = (VERDICT_EXPECTATIONS if raw["expect"] in VERDICT_EXPECTATIONS else CONVERSION_EXPECTATIONS)
            allowed = allowed + ("error",)
            if known not in allowed:
                raise LayoutError(f"{where}: known {known!r} is not one of {', '.join(allowed)}")
            if known == raw["expect"]:
                raise LayoutError(f"{where}: known {known!r} equals expect: a known difference must differ")
        warn_fields = _warning_fields(raw, where)
        out.claims.append(Claim(
            name=raw["name"], a=raw["a"], b=raw["b"], expect=raw["expect"],
            shape_a=_shape(raw.get("shape_a"), where) or shape, shape_b=_shape(raw.get("shape_b"), where) or shape,
            options_a={**opts, **_options(raw.get("options_a"), where, raw["a"])},
            options_b={**opts, **_options(raw.get("options_b"), where, raw["b"])},
            tags=list(tags), note=str(raw.get("note", "")), fragment=raw.get("fragment"),
            framework=raw.get("framework"), timeout_ms=timeout, known=known, native=raw.get("native"),
            source=str(path), **warn_fields))
    lnames: set[str] = set()
    for i, raw in enumerate(data.get("layout", [])):
        where = f"{path}: layout #{i + 1}"
        if not isinstance(raw, dict):
            raise LayoutError(f"{where}: must be a table")
        raw = {**{k: v for k, v in defaults.items() if k in _LAYOUT_KEYS}, **raw}
        bad = set(raw) - _LAYOUT_KEYS
        if bad:
            raise LayoutError(f"{where}: unknown key(s) {sorted(bad)}")
        for key in ("name", "spec"):
            if not isinstance(raw.get(key), str) or not raw[key].strip():
                raise LayoutError(f"{where}: needs a non-empty string {key!r}")
        if raw["name"] in lnames:
            raise LayoutError(f"{path}: layout {raw['name']!r}: duplicate name")
        lnames.add(raw["name"])
        out.layouts.append(NamedLayout(raw["name"], raw["spec"], _shape(raw.get("shape"), where),
                                       _options(raw.get("options"), where, raw["spec"]), str(path)))
    for i, raw in enumerate(data.get("inexpressible", [])):
        where = f"{path}: inexpressible #{i + 1}"
        if not isinstance(raw, dict):
            raise LayoutError(f"{where}: must be a table")
        bad = set(raw) - _INEXPRESSIBLE_KEYS
        if bad:
            raise LayoutError(f"{where}: unknown key(s) {sorted(bad)}")
        for key in ("fragment", "framework", "note"):
            if not isinstance(raw.get(key), str) or not raw[key].strip():
                raise LayoutError(f"{where}: needs a non-empty string {key!r}")
        out.inexpressible.append(Inexpressible(raw["fragment"], raw["framework"], raw["note"], str(path)))
    return out


def corpus_files(paths) -> list[Path]:
    """Expand directories to their ``*.toml`` files (sorted; ``*_suite.toml`` measurement suites
    left out); keep files as given."""
    files: list[Path] = []
    for p in paths:
        if not str(p).strip():
            raise LayoutError("empty corpus path")
        p = Path(p)
        if p.is_dir():
            # *_suite.toml files are measurement suites (apps/measure), not claims
            files.extend(sorted(f for f in p.rglob("*.toml") if not f.name.endswith("_suite.toml")))
        elif p.exists():
            files.append(p)
        else:
            raise LayoutError(f"no such corpus file or directory: {str(p)!r}")
    if not files:
        raise LayoutError("no corpus files (*.toml) found in " + ", ".join(map(str, paths)))
    return files


def load(paths) -> Corpus:
    """The claims, named layouts and inexpressible entries of every corpus file under ``paths``."""
    out = Corpus()
    for f in corpus_files(paths):
        c = load_file(f)
        out.claims.extend(c.claims)
        out.layouts.extend(c.layouts)
        out.inexpressible.extend(c.inexpressible)
    return out
