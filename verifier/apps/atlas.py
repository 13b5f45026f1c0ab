"""The fragment atlas: every matrix-instruction fragment x every framework, proved.

Rows are *fragments* (one operand of one instruction: ``mma.m16n8k16.f16.A``, ``wgmma.m64n64k16.f32.D``,
``ldmatrix.x4``, ``v_mfma_f32_32x32x8_f16.C``, ...). Columns are frameworks (Triton, CuTe, Tilus, IREE).
A cell comes from the atlas corpus (``corpora/atlas/*.toml``, format in :mod:`layoutverify.apps.corpus`): claims
with ``fragment`` and ``framework`` fields whose side ``a`` is the ISA fragment (``ptx:`` / ``amd:``) and
side ``b`` the framework's layout for that instruction, and ``[[inexpressible]]`` entries for cells the
framework cannot express (with the reason). A cell reads:

``equal``                       proved: the framework's layout is the ISA fragment, register for register;
``equal_up_to_register_order``  every thread holds the ISA's elements, in another register order (or twice);
``differs``                     ``not_equal`` / ``different_tensors``, with a witness;
``not expressible``             the framework has no way to say it (the note says why);
``error``                       the text did not build (e.g. an adapter missing from this build).

Findings are **computed**: every claim expects the ISA's fragment (``expect = "equal"``); where the
framework answers otherwise, the cell shows the verdict and the atlas lists it with its witness,
whether or not the corpus says so beforehand. A claim marked ``known`` additionally *pins* the
difference (its note explains it): the atlas fails (``ok`` false, exit 1) when a pinned difference
no longer reproduces, when a cell errs, or when a verdict is ``unknown``; an unpinned difference is
a *computed finding* (marked so) and does not fail the atlas, since showing what the frameworks do is
the atlas's job.

**Native mode** (``--native``) checks the frameworks themselves, not only our reading of them: side
``b`` is rebuilt by the installed framework and compared with the ISA fragment *and* with our
adapter's parse of the same text. Where the claim names a ``native`` reference, that is where the
framework's own definition lives; otherwise the text itself goes to the framework:

* Triton: the text through Triton's own parser and ``toLinearLayout`` (:func:`layoutverify.adapters.triton.native.native_many`,
  one subprocess for all Triton cells);
* Tilus: ``native = "mma_dot:NAME:A|B|C"``, ``"ldmatrix:NBYTES:false|true"`` / ``"stmatrix:..."``,
  ``"wgmma:M,N,INST_M,INST_N,INST_K"``, ``"tcgen05_ldst:SHAPE"`` name layouts defined in Tilus's
  instruction modules (:mod:`layoutverify.adapters.tilus.instructions`), mapped to the canonical form by
  Tilus's own ``get_global``; otherwise Tilus builds the expression (:func:`layoutverify.adapters.tilus.native`);
* IREE: ``iree-opt`` distributes the nested layout (:func:`layoutverify.adapters.iree.native`);
* CuTe: :func:`layoutverify.adapters.cute.native`: MMA and copy atoms from CUTLASS's C++ traits
  (``MMA_Traits``/``Copy_Traits`` compiled from the headers in the nvidia-cutlass wheel, results
  cached), other layouts through pycute; without a C++ compiler the cell says native checking is
  unavailable.

Every native answer comes from the framework's adapter (``layoutverify.adapters.adapter(fw).native``);
the atlas holds no framework code.
"""
from __future__ import annotations

import html
import importlib.resources
import json
from dataclasses import dataclass, field
from pathlib import Path

from layoutverify.apps.claims import Outcome, check_claims
from layoutverify.apps.corpus import Claim, Corpus, load as load_corpus
from layoutverify.core.errors import LayoutError, NativeError, UnsupportedError

#: preferred column order; other frameworks found in the corpus follow
COLUMNS = ("triton", "cute", "tilus", "iree")
DIFFERS = ("not_equal", "different_tensors")
DEFAULT_CORPUS = Path(str(importlib.resources.files("layoutverify.corpora") / "atlas"))

_ICON = {"equal": "✅", "equal_up_to_register_order": "🔁", "differs": "❌", "inexpressible": "—",
         "error": "⚠️", "unavailable": "·"}
_WORD = {"equal": "equal", "equal_up_to_register_order": "equal up to register order", "differs": "differs",
         "inexpressible": "not expressible", "error": "error", "unavailable": "native unavailable"}
_TEXT = {"equal": "=", "equal_up_to_register_order": "~", "differs": "x", "inexpressible": "-", "error": "!",
         "unavailable": "?"}


def category(verdict: str | None) -> str:
    """The atlas category of a verdict: equal / equal_up_to_register_order / differs / error."""
    if verdict in ("equal", "equal_up_to_register_order"):
        return verdict
    if verdict in DIFFERS:
        return "differs"
    return "error"


@dataclass
class Native:
    """The installed framework's own layout for side ``b``, compared with the ISA and with our parse."""
    status: str                     # "ok" | "unavailable" | "error"
    source: str = ""                # where the layout came from
    verdict: str | None = None      # ISA fragment vs native
    witness: dict | None = None
    adapter_verdict: str | None = None   # our parse of b vs native (equal: our adapter reads it right)
    adapter_witness: dict | None = None
    message: str = ""

    @property
    def agrees(self) -> bool | None:
        """Whether our adapter's parse of b is exactly the framework's layout (None: not checked)."""
        return None if self.adapter_verdict is None else self.adapter_verdict == "equal"

    def to_json(self) -> dict:
        """The fields that are set, as JSON."""
        return {k: v for k, v in vars(self).items() if v not in (None, "")}


@dataclass
class Entry:
    """One claim of a cell with its outcome (and, in native mode, the framework's own answer)."""
    outcome: Outcome
    native: Native | None = None

    @property
    def claim(self) -> Claim:
        """The claim this entry checked."""
        return self.outcome.claim

    @property
    def category(self) -> str:
        """The verdict category of the outcome (``error`` when the claim could not be checked)."""
        return category(self.outcome.got) if self.outcome.status != "error" else "error"

    @property
    def finding(self) -> bool:
        """A framework disagrees with the ISA: a known difference, an unexpected failure, or a
        native answer that is not the expected one."""
        if self.outcome.status in ("known", "fails", "finding"):
            return True
        return bool(self.native and self.native.status == "ok" and self.native.verdict != self.claim.expect)

    @property
    def computed(self) -> bool:
        """A difference from the ISA found by the check itself, not written in the corpus: the claim
        has no ``known`` label and the answer is a proved verdict (not an error or ``unknown``)."""
        o = self.outcome
        return (o.status in ("fails", "finding") and self.claim.known is None
                and category(o.got) in ("differs", "equal_up_to_register_order"))

    def to_json(self) -> dict:
        """The entry as JSON: the claim, expectation, outcome, category, witness and finding (and the
        native answer, when asked)."""
        o = self.outcome
        d = {"claim": o.claim.id, "b": o.claim.b, "expect": o.claim.expect, "status": o.status, "got": o.got,
             "category": self.category, "message": o.message, "witness": o.witness, "known": o.claim.known,
             "computed_finding": self.computed or None, "note": o.claim.note or None}
        if self.native is not None:
            d["native"] = self.native.to_json()
        return {k: v for k, v in d.items() if v is not None}


@dataclass
class Cell:
    """One atlas cell: a fragment (row) in one framework (column), with the claims that check it, or
    why the framework cannot express it."""
    fragment: str
    framework: str
    entries: list[Entry] = field(default_factory=list)
    inexpressible: str | None = None

    @property
    def category(self) -> str | None:
        """The worst category of the cell's entries (None: no claim)."""
        if self.inexpressible is not None and not self.entries:
            return "inexpressible"
        order = ("error", "differs", "equal_up_to_register_order", "equal")
        cats = [e.category for e in self.entries]
        for c in order:
            if c in cats:
                return c
        return None

    @property
    def native_category(self) -> str | None:
        """The category of the framework's own answers (``--native``), ``None`` when none was asked."""
        nat = [e.native for e in self.entries if e.native is not None]
        if not nat:
            return None
        if any(n.status == "error" for n in nat):
            return "error"
        oks = [n for n in nat if n.status == "ok"]
        if not oks:
            return "unavailable"
        order = ("differs", "equal_up_to_register_order", "equal")
        cats = [category(n.verdict) for n in oks]
        for c in ("error",) + order:
            if c in cats:
                return c
        return None

    def to_json(self) -> dict:
        """The cell as JSON."""
        d = {"fragment": self.fragment, "framework": self.framework, "category": self.category,
             "entries": [e.to_json() for e in self.entries]}
        if self.inexpressible is not None:
            d["inexpressible"] = self.inexpressible
        if self.native_category is not None:
            d["native_category"] = self.native_category
        return d


@dataclass
class Atlas:
    """The fragment atlas: fragments (rows) by frameworks (columns), each cell the claims that check a
    framework's layout of the fragment against the ISA."""
    fragments: list[str]
    frameworks: list[str]
    cells: dict                       # (fragment, framework) -> Cell
    spec: dict                        # fragment -> the spec text (side a)
    native: bool = False
    notes: dict = field(default_factory=dict)   # framework -> what its adapter says users should know

    def cell(self, fragment: str, framework: str) -> Cell | None:
        """The cell of ``fragment`` in ``framework``, or ``None``."""
        return self.cells.get((fragment, framework))

    def entries(self) -> list[Entry]:
        """Every checked claim of every cell."""
        return [e for c in self.cells.values() for e in c.entries]

    def findings(self) -> list[tuple[Cell, Entry]]:
        """The entries where a framework disagrees with the ISA, with their cells."""
        return [(c, e) for c in self.cells.values() for e in c.entries if e.finding]

    @property
    def ok(self) -> bool:
        """Every claim passes or is a computed finding (see the module doc), and in native mode every
        framework answer agrees with our adapter wherever it could be asked."""
        for e in self.entries():
            if not e.outcome.passed and not e.computed:
                return False
            if e.native is not None and (e.native.status == "error" or e.native.agrees is False):
                return False
        return True

    def counts(self) -> dict:
        """The number of cells per category."""
        out: dict = {}
        for c in self.cells.values():
            k = c.category or "none"
            out[k] = out.get(k, 0) + 1
        return out

    def to_json(self) -> dict:
        """The atlas as JSON (cells sorted by fragment and framework)."""
        return {"fragments": self.fragments, "frameworks": self.frameworks, "native": self.native,
                "spec": self.spec, "counts": self.counts(), "ok": self.ok,
                "cells": [self.cells[k].to_json() for k in sorted(self.cells)], "notes": self.notes}


# ---------------------------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------------------------
def atlas_claims(corpus: Corpus) -> list[Claim]:
    return [c for c in corpus.claims if c.fragment]


def build(paths=None, *, native: bool = False, jobs: int | None = None, progress=None) -> Atlas:
    """Check every atlas claim of the corpus ``paths`` (default ``corpora/atlas``) and lay them out."""
    corpus = load_corpus([str(p) for p in (paths or [DEFAULT_CORPUS])])
    claims = atlas_claims(corpus)
    if not claims and not corpus.inexpressible:
        raise LayoutError("no atlas claims (claims with a `fragment` field) in " +
                          ", ".join(map(str, paths or [DEFAULT_CORPUS])))
    outcomes = check_claims(claims, jobs=jobs, progress=progress)
    natives = native_answers(claims) if native else [None] * len(claims)
    fragments: list[str] = []
    spec: dict = {}
    cells: dict = {}
    seen_fw: set = set()
    for claim, outcome, nat in zip(claims, outcomes, natives):
        frag, fw = claim.fragment, claim.column
        if frag not in spec:
            fragments.append(frag)
            spec[frag] = claim.a
        seen_fw.add(fw)
        cells.setdefault((frag, fw), Cell(frag, fw)).entries.append(Entry(outcome, nat))
    for ix in corpus.inexpressible:
        if ix.fragment not in spec:
            fragments.append(ix.fragment)
            spec[ix.fragment] = _isa_spec(ix.fragment)
        seen_fw.add(ix.framework)
        cell = cells.setdefault((ix.fragment, ix.framework), Cell(ix.fragment, ix.framework))
        cell.inexpressible = ix.note
    frameworks = [f for f in COLUMNS if f in seen_fw] + sorted(seen_fw - set(COLUMNS))
    vendor = {"ptx": 0, "amd": 1}
    fragments.sort(key=lambda f: vendor.get(spec[f].split(":", 1)[0], 2))   # NVIDIA rows first (stable)
    return Atlas(fragments, frameworks, cells, spec, native, _framework_notes(frameworks))


def _framework_notes(frameworks) -> dict:
    """Each adapter's ``NOTES``: where the framework's code and its documentation disagree, and
    which one the adapter reads (e.g. Tilus's ``flatten``)."""
    from layoutverify.adapters import adapter
    out = {}
    for fw in frameworks:
        try:
            notes = list(getattr(adapter(fw), "NOTES", ()))
        except (LayoutError, ImportError):
            continue
        if notes:
            out[fw] = notes
    return out


def _isa_spec(fragment: str) -> str:
    """``ptx:NAME`` / ``amd:NAME`` when an ISA adapter knows the fragment (a row with no claim yet),
    else ""."""
    from layoutverify.adapters import adapter
    for fw in ("ptx", "amd"):
        try:
            if fragment in adapter(fw).FRAGMENTS:
                return f"{fw}:{fragment}"
        except (LayoutError, ImportError, AttributeError):
            continue
    return ""


# ---------------------------------------------------------------------------------------------
# Native answers
# ---------------------------------------------------------------------------------------------
def _split(spec: str) -> tuple[str, str]:
    from layoutverify.adapters import split_spec
    return split_spec(spec)


def native_answers(claims: list[Claim]) -> list[Native]:
    """For each claim, side ``b`` as the installed framework builds it, compared with side ``a``
    (the ISA) and with our adapter's parse of ``b``. Triton cells share one subprocess."""
    out: list[Native | None] = [None] * len(claims)
    layouts: list = [None] * len(claims)
    sources: list[str] = [""] * len(claims)
    triton_idx, triton_cases = [], []
    for i, c in enumerate(claims):
        try:
            fw, text = _split(c.b)
        except LayoutError as e:
            out[i] = Native("error", message=str(e))
            continue
        if fw == "triton":
            triton_idx.append(i)
            triton_cases.append((text, c.shape_b, c.options_b))
            continue
        try:
            layouts[i], sources[i] = _native_one(fw, text, c)
        except _Unavailable as e:
            out[i] = Native("unavailable", message=str(e))
        except (LayoutError, NativeError) as e:
            out[i] = Native("error", message=str(e))
    if triton_cases:
        try:
            from layoutverify.adapters import adapter
            res = adapter("triton").native_many(triton_cases)
        except (ImportError, LayoutError, AttributeError) as e:
            res = [_Unavailable(f"Triton native unavailable: {e}")] * len(triton_cases)
        for i, r in zip(triton_idx, res):
            if isinstance(r, _Unavailable):
                out[i] = Native("unavailable", message=str(r))
            elif isinstance(r, Exception):
                unavailable = "not installed" in str(r) or "lacks GluonOpBuilder" in str(r)
                out[i] = Native("unavailable" if unavailable else "error", message=str(r))
            else:
                layouts[i], sources[i] = r, r.name or "triton"
    for i, c in enumerate(claims):
        if out[i] is None:
            out[i] = _judge(c, layouts[i], sources[i])
    return out  # type: ignore[return-value]


class _Unavailable(Exception):
    """The framework (or its native hook) is not installed here."""


def _native_one(fw: str, text: str, claim: Claim):
    """(layout, source) of side b from the installed framework ``fw``, through its adapter's ``native()``
    (a claim's ``native`` reference is passed on as ``reference=``)."""
    from layoutverify.adapters import adapter
    try:
        mod = adapter(fw)
    except (LayoutError, ImportError) as e:
        raise _Unavailable(f"the {fw} adapter is not available: {e}") from None
    if not hasattr(mod, "native"):
        raise _Unavailable(f"the {fw} adapter has no native() (no installed framework to ask)")
    kw = dict(claim.options_b)
    if claim.native:
        kw["reference"] = claim.native
    try:
        lay = _guard(lambda: mod.native(text, shape=claim.shape_b, **kw), fw)
    except UnsupportedError as e:
        raise _Unavailable(f"no native {fw} answer here: {e}") from None
    return lay, _SOURCES.get(fw, fw) + (f" {claim.native}" if claim.native else "") + _source_detail(lay)


#: how each framework's native answer is obtained (for the report)
_SOURCES = {"tilus": "tilus", "iree": "iree-opt", "cute": "cute", "triton": "triton"}


def _source_detail(layout) -> str:
    """The adapter's own note of where a native layout came from, if its name carries one
    (``cute-cpp:`` = compiled CUTLASS C++, ``pycute:`` = the Python CuTe)."""
    name = getattr(layout, "name", "") or ""
    for prefix, what in (("cute-cpp:", " (CUTLASS C++ traits, compiled)"), ("pycute:", " (pycute)"),
                         ("tilus-native:", "")):
        if name.startswith(prefix):
            return what
    return ""


def _guard(fn, fw: str):
    try:
        return fn()
    except (LayoutError, NativeError):
        raise
    except ImportError as e:
        raise _Unavailable(f"{fw} is not installed: {e}") from None


def _judge(claim: Claim, native_layout, source: str) -> Native:
    from layoutverify.adapters import parse_spec

    from layoutverify.apps.claims import _jsonable
    from layoutverify.core.compare import compare
    try:
        spec = parse_spec(claim.a, shape=claim.shape_a, **claim.options_a)
        ours = parse_spec(claim.b, shape=claim.shape_b, **claim.options_b)
        r1 = compare(spec, native_layout, timeout_ms=claim.timeout_ms)
        r2 = compare(ours, native_layout, timeout_ms=claim.timeout_ms)
    except LayoutError as e:
        return Native("error", source, message=str(e))
    return Native("ok", source, r1.verdict, _jsonable(r1.witness), r2.verdict, _jsonable(r2.witness),
                  r1.reason if r1.verdict != "equal" else "")


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------
def _witness_text(w) -> str:
    if not w:
        return ""
    if isinstance(w, dict) and "hardware" in w:
        loc = ", ".join(f"{k}={v}" for k, v in w["hardware"].items())
        a = "nothing" if w.get("a") is None else tuple(w["a"])
        b = "nothing" if w.get("b") is None else tuple(w["b"])
        return f"at {loc}: ISA {a}, framework {b}"
    return json.dumps(w, sort_keys=True, default=str)


def _entry_label(cell: Cell, e: Entry) -> str:
    return e.claim.name.split("/", 1)[-1] if len(cell.entries) > 1 else ""


def _cell_text(cell: Cell | None, native: bool) -> tuple[str, str]:
    """(short text, category) of a cell for Markdown/plain rendering."""
    if cell is None:
        return "", "none"
    cat = cell.category
    if cat == "inexpressible":
        return f"{_ICON[cat]} not expressible", cat
    parts = []
    for e in cell.entries:
        label = _entry_label(cell, e)
        txt = f"{_ICON[e.category]} {_WORD[e.category]}"
        if e.outcome.status == "known":
            txt += " (finding)"
        elif e.computed:
            txt += " (computed finding)"
        elif e.outcome.status == "fails":
            txt += " (UNEXPECTED)"
        if native and e.native is not None:
            txt += "; native " + _native_word(e.native)
        parts.append(f"{label}: {txt}" if label else txt)
    return "<br>".join(parts), cat or "none"


def _native_word(n: Native) -> str:
    if n.status != "ok":
        return f"{_ICON['error' if n.status == 'error' else 'unavailable']} {n.status}"
    w = f"{_ICON[category(n.verdict)]} {_WORD[category(n.verdict)]}"
    if n.agrees is False:
        w += " ≠ our parse"
    return w


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def markdown(atlas: Atlas) -> str:
    """The atlas as a Markdown document: the matrix, then findings and inexpressible cells."""
    lines = ["# Fragment atlas", "",
             "Rows: instruction fragments (the ISA's register layout, `ptx:`/`amd:`). Columns: what each framework "
             "says the layout of that fragment is. " + ("Each cell shows our adapter's parse of the framework's "
                                                         "text and, after `native`, the installed framework's own "
                                                         "answer." if atlas.native else
                                                         "Run with `--native` to ask the installed frameworks "
                                                         "themselves."),
             "",
             f"Legend: {_ICON['equal']} proven equal, {_ICON['equal_up_to_register_order']} equal up to register "
             f"order, {_ICON['differs']} differs (witness below), {_ICON['inexpressible']} not expressible, "
             f"{_ICON['error']} error, {_ICON['unavailable']} native unavailable; blank: no claim.", ""]
    c = atlas.counts()
    lines.append(f"{len(atlas.fragments)} fragments x {len(atlas.frameworks)} frameworks: "
                 + ", ".join(f"{v} {_WORD.get(k, k)}" for k, v in sorted(c.items())) + ".")
    lines += ["", "| fragment | " + " | ".join(atlas.frameworks) + " |",
              "|---|" + "---|" * len(atlas.frameworks)]
    for frag in atlas.fragments:
        row = [f"`{_md(frag)}`"]
        for fw in atlas.frameworks:
            row.append(_md(_cell_text(atlas.cell(frag, fw), atlas.native)[0]))
        lines.append("| " + " | ".join(row) + " |")
    finds = atlas.findings()
    lines += ["", f"## Findings ({len(finds)})", ""]
    if not finds:
        lines.append("None: every framework agrees with the ISA wherever it can express the fragment.")
    for cell, e in finds:
        o = e.outcome
        lines.append(f"- **{_md(cell.fragment)} / {cell.framework}** (`{_md(o.claim.id)}`): expected "
                     f"{o.claim.expect}, got {o.got or o.status}"
                     + (" (known difference)" if o.status == "known" else
                        " (computed: not in the corpus)" if e.computed else
                        " (UNEXPECTED)" if o.status == "fails" else ""))
        lines.append(f"  - framework text: `{_md(o.claim.b)}`")
        if o.witness:
            lines.append(f"  - witness: {_md(_witness_text(o.witness))}")
        if e.native is not None and e.native.status == "ok":
            lines.append(f"  - native ({_md(e.native.source)}): {e.native.verdict}"
                         + (f", {_md(_witness_text(e.native.witness))}" if e.native.witness else ""))
        if o.claim.note:
            lines.append(f"  - {_md(o.claim.note)}")
    disagree = [(c, e) for c in atlas.cells.values() for e in c.entries
                if e.native is not None and (e.native.agrees is False or e.native.status == "error")]
    if atlas.native:
        lines += ["", f"## Our adapters vs the installed frameworks ({len(disagree)} disagreements)", ""]
        if not disagree:
            lines.append("Every native answer equals our adapter's parse of the same text.")
        for cell, e in disagree:
            n = e.native
            lines.append(f"- **{_md(cell.fragment)} / {cell.framework}**: "
                         + (f"native error: {_md(n.message)}" if n.status == "error" else
                            f"our parse vs {_md(n.source)}: {n.adapter_verdict}, "
                            f"{_md(_witness_text(n.adapter_witness))}"))
        unavailable = sorted({(c.framework, e.native.message) for c in atlas.cells.values() for e in c.entries
                              if e.native is not None and e.native.status == "unavailable"})
        for fw, msg in unavailable:
            lines.append(f"- {fw}: native checking unavailable: {_md(msg)}")
    if atlas.notes:
        lines += ["", "## Framework notes", ""]
        for fw, notes in atlas.notes.items():
            lines += [f"- **{fw}**: {_md(n)}" for n in notes]
    ix = [c for c in atlas.cells.values() if c.inexpressible is not None]
    lines += ["", f"## Not expressible ({len(ix)} cells)", ""]
    notes: dict = {}
    for c in ix:
        notes.setdefault((c.framework, c.inexpressible), []).append(c.fragment)
    for (fw, note), frags in notes.items():
        lines.append(f"- **{fw}** ({len(frags)}: {', '.join(f'`{f}`' for f in frags)}): {_md(note)}")
    return "\n".join(lines) + "\n"


_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em; }
table.atlas { border-collapse: collapse; font-size: 13px; }
table.atlas th, table.atlas td { border: 1px solid #ccc; padding: 3px 6px; vertical-align: top; }
td.equal { background: #e3f6e3; } td.equal_up_to_register_order { background: #fff6d5; }
td.differs { background: #fbe0e0; } td.inexpressible { background: #eee; color: #777; }
td.error { background: #f9d0f0; } td.none { background: #fff; }
.finding { font-weight: bold; } code { font-size: 12px; }
"""


def render_html(atlas: Atlas) -> str:
    """A standalone HTML page: the matrix (cells carry ``data-category`` and a ``title`` with the
    witness), findings and inexpressible cells."""
    esc = html.escape
    out = ["<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\"><title>Fragment atlas</title>",
           f"<style>{_CSS}</style></head><body>", "<h1>Fragment atlas</h1>",
           f"<p>{len(atlas.fragments)} fragments x {len(atlas.frameworks)} frameworks"
           + ("; native answers from the installed frameworks" if atlas.native else "") + ".</p>",
           '<table class="atlas" id="atlas"><thead><tr><th>fragment</th><th>spec</th>'
           + "".join(f"<th>{esc(fw)}</th>" for fw in atlas.frameworks) + "</tr></thead><tbody>"]
    for frag in atlas.fragments:
        row = [f'<tr data-fragment="{esc(frag)}"><th><code>{esc(frag)}</code></th>'
               f"<td><code>{esc(atlas.spec.get(frag, ''))}</code></td>"]
        for fw in atlas.frameworks:
            cell = atlas.cell(frag, fw)
            text, cat = _cell_text(cell, atlas.native)
            tip = []
            if cell is not None:
                if cell.inexpressible:
                    tip.append(cell.inexpressible)
                for e in cell.entries:
                    tip.append(e.claim.b)
                    if e.outcome.witness:
                        tip.append("witness: " + _witness_text(e.outcome.witness))
                    if e.native is not None and e.native.status == "ok" and e.native.witness:
                        tip.append("native witness: " + _witness_text(e.native.witness))
            attrs = f' class="{cat}" data-framework="{esc(fw)}" data-category="{cat}"'
            if atlas.native and cell is not None and cell.native_category:
                attrs += f' data-native="{cell.native_category}"'
            if tip:
                attrs += f' title="{esc(chr(10).join(tip))}"'
            cls = ' class="finding"' if cell is not None and any(e.finding for e in cell.entries) else ""
            body = "<br>".join(esc(p) for p in text.split("<br>"))
            row.append(f"<td{attrs}><span{cls}>{body}</span></td>")
        out.append("".join(row) + "</tr>")
    out.append("</tbody></table>")
    finds = atlas.findings()
    out.append(f'<h2>Findings ({len(finds)})</h2><ul id="findings">')
    for cell, e in finds:
        o = e.outcome
        item = (f"<li data-claim=\"{esc(o.claim.id)}\"><b>{esc(cell.fragment)} / {esc(cell.framework)}</b>: "
                f"expected {esc(o.claim.expect)}, got {esc(str(o.got or o.status))}. "
                f"<code>{esc(o.claim.b)}</code>")
        if o.witness:
            item += f"<br>witness: {esc(_witness_text(o.witness))}"
        if e.native is not None and e.native.status == "ok":
            item += f"<br>native ({esc(e.native.source)}): {esc(str(e.native.verdict))}"
        if o.claim.note:
            item += f"<br>{esc(o.claim.note)}"
        out.append(item + "</li>")
    out.append("</ul>")
    ix = [c for c in atlas.cells.values() if c.inexpressible is not None]
    out.append(f'<h2>Not expressible ({len(ix)} cells)</h2><ul id="inexpressible">')
    for c in ix:
        out.append(f"<li><b>{esc(c.fragment)} / {esc(c.framework)}</b>: {esc(c.inexpressible or '')}</li>")
    out.append("</ul>")
    if atlas.notes:
        out.append('<h2>Framework notes</h2><ul id="notes">')
        for fw, notes in atlas.notes.items():
            out += [f"<li><b>{esc(fw)}</b>: {esc(n)}</li>" for n in notes]
        out.append("</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def text(atlas: Atlas) -> str:
    """A compact plain-text matrix for the terminal (= equal, ~ register order, x differs,
    - not expressible, ! error; a second mark after / is the native answer)."""
    w = max([len(f) for f in atlas.fragments] + [8])
    head = "fragment".ljust(w) + "  " + "  ".join(fw.ljust(7) for fw in atlas.frameworks)
    lines = [head]
    for frag in atlas.fragments:
        cells = []
        for fw in atlas.frameworks:
            cell = atlas.cell(frag, fw)
            mark = "." if cell is None or cell.category is None else _TEXT[cell.category]
            if cell is not None and any(e.outcome.status == "known" for e in cell.entries):
                mark += "*"
            if cell is not None and any(e.computed for e in cell.entries):
                mark += "+"
            elif cell is not None and any(e.outcome.status == "fails" for e in cell.entries):
                mark += "!"
            if atlas.native and cell is not None and cell.native_category:
                mark += "/" + _TEXT.get(cell.native_category, "?")
            cells.append(mark.ljust(7))
        lines.append(frag.ljust(w) + "  " + "  ".join(cells))
    c = atlas.counts()
    lines.append("legend: = equal, ~ equal up to register order, x differs, - not expressible, ! error, "
                 ". no claim; * finding (known difference), + computed finding (not in the corpus)"
                 + ("; /X native answer" if atlas.native else ""))
    lines.append(f"{len(atlas.fragments)} fragments, {len(atlas.findings())} findings; cells: "
                 + ", ".join(f"{v} {_WORD.get(k, k)}" for k, v in sorted(c.items())))
    return "\n".join(lines)
