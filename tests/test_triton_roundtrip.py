"""What Triton itself prints parses, in our adapter, to Triton's own layout.

Triton parses a tiny module whose argument has the layout, prints it back (``str_nodebug()``: the
``#blocked = ...`` / ``#mma = ...`` alias definitions Triton chooses, nested aliases such as
``parent = #mma``, the current ``CGALayout`` syntax) and computes its linear layout. We parse the
printed alias definitions plus the printed ``tensor<...>`` / ``!ttg.memdesc<...>`` type and must
get exactly Triton's bases. For the AMD and shared kinds (converted by other modules) the check is
on the parse: the printed text parses, to the same kind, with every parameter of the original.
Old spellings are checked against their documented meaning in the current syntax.
"""
from __future__ import annotations

import re

import pytest

import triton_oracle as O

pytestmark = pytest.mark.skipif(not O.have_triton(), reason="needs Triton >= 3.5 with Gluon (the oracle)")

SEED = 4242
PER_KIND = 40


def printed_type(module_text: str) -> str:
    """Alias definitions + the argument's type, from a module Triton printed."""
    lines = module_text.splitlines()
    prelude = [ln for ln in lines[:next(i for i, ln in enumerate(lines) if ln.startswith("module"))]
               if ln.startswith("#")]
    m = re.search(r"%arg0: (.*)\) \{\s*$", module_text, re.M)
    assert m, module_text
    return "\n".join(prelude + [m.group(1)])


def raw_layout(raw: dict):
    from layoutverify.core.layout import Layout
    if "offset" in raw:
        return Layout.from_bases({"offset": raw["offset"], "block": raw["block"]}, raw["shape"])
    return Layout.from_bases({k: raw[k] for k in ("register", "lane", "warp", "block")}, raw["shape"])


def canon(v):
    """Parsed values without positions/text, for comparing two parses."""
    from layoutverify.adapters.triton.attr import Attr
    if isinstance(v, Attr):
        return ("attr", v.kind, tuple(sorted((k, canon(x)) for k, x in v.params.items())))
    if isinstance(v, list):
        return tuple(canon(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, canon(x)) for k, x in v.items()))
    return v


@pytest.fixture(scope="module")
def printed_core():
    cases = O.sweep_cases(SEED, PER_KIND)
    from layoutverify.adapters.triton.native import native_many
    raws = native_many([(t, s) for _, t, s in cases], raw=True, printed=True)
    return cases, raws


def test_printed_core_kinds_parse_to_triton_layout(printed_core):
    """Printed text parses to Triton's layout; where the installed release rejects a case (e.g.
    Triton 3.6/3.7 on some slices of ``#ttg.linear``), our parse for that release rejects it too."""
    from layoutverify.adapters.triton import parse
    from layoutverify.core.errors import LayoutError
    cases, raws = printed_core
    bad, compared, kinds, rejected = [], 0, set(), []
    for (kind, text, shape), raw in zip(cases, raws):
        if isinstance(raw, Exception):
            with pytest.raises(LayoutError):
                parse(text, shape=shape, triton_version=O.TRITON_VERSION)
            rejected.append((text, str(raw)))
            continue
        typ = printed_type(raw["printed"])
        ours = parse(typ, triton_version=O.TRITON_VERSION)
        msg = O.compare(ours, raw_layout(raw))
        if msg:
            bad.append((typ, msg))
        compared += 1
        kinds.add(kind)
    assert not bad, bad[:3]
    assert compared + len(rejected) == len(cases) >= 200
    assert len(rejected) <= 0.05 * len(cases), rejected[:3]
    assert kinds == set(O.GENERATORS)


def test_printed_text_uses_aliases(printed_core):
    """The check above really went through Triton's alias form (not only inline attributes)."""
    _, raws = printed_core
    typs = [printed_type(r["printed"]) for r in raws if not isinstance(r, Exception)]
    assert sum(1 for t in typs if t.startswith("#blocked")) > 20
    assert sum(1 for t in typs if "parent = #mma" in t) > 10
    assert sum(1 for t in typs if "CGALayout" in t) > 10


OTHER_KINDS = [
    ("#ttg.amd_mfma<{version = 3, warpsPerCTA = [2, 2], instrShape = [32, 32, 8], isTransposed = true}>", (64, 64)),
    ("#ttg.amd_mfma<{version = 4, warpsPerCTA = [4, 1], instrShape = [16, 16, 32], isTransposed = false, "
     "tilesPerWarp = [2, 2], elementBitWidth = 64}>", (64, 64)),
    ("#ttg.amd_wmma<{version = 3, isTranspose = true, ctaLayout = {warp = [[0, 1], [1, 0]]}, "
     "instrShape = [16, 16, 32]}>", (64, 64)),
    ("#ttg.dot_op<{opIdx = 1, parent = #ttg.amd_wmma<{version = 2, isTranspose = false, "
     "ctaLayout = {warp = [[0, 1], [1, 0]]}}>, kWidth = 8}>", (64, 64)),
    ("#ttg.dot_op<{opIdx = 0, parent = #ttg.amd_mfma<{version = 3, warpsPerCTA = [2, 2], "
     "instrShape = [32, 32, 8], isTransposed = true}>, kWidth = 8}>", (64, 64)),
    ("#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>", (64, 64)),
    ("#ttg.swizzled_shared<{vec = 4, perPhase = 2, maxPhase = 4, order = [0, 1], CGALayout = [[1, 0]]}>", (64, 64)),
    ("#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>", (64, 64)),
    ("#ttg.nvmma_shared<{swizzlingByteWidth = 64, transposed = true, elementBitWidth = 8}>", (64, 64)),
    ("#ttg.padded_shared<[32:+4] {order = [1, 0], shape = [64, 64]}>", (64, 64)),
    ("#ttg.padded_shared<[32:+4, 64:+8] {offset = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [0, 32], [1, 0], "
     "[2, 0], [4, 0], [8, 0], [16, 0], [32, 0]], block = []}>", (64, 64)),
    ("#ttg.shared_linear<{offset = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [0, 32], [1, 0], [2, 0], [4, 0], "
     "[8, 0], [16, 0], [32, 0]]}, alignment = 16>", (64, 64)),
]


#: Triton 3.6 writes amd_wmma's warps as warpsPerCTA (ctaLayout came with #8946, Triton 3.7)
OTHER_KINDS_36 = {
    OTHER_KINDS[2][0]: "#ttg.amd_wmma<{version = 3, isTranspose = true, warpsPerCTA = [2, 2], instrShape = [16, 16, 32]}>",
    OTHER_KINDS[3][0]: ("#ttg.dot_op<{opIdx = 1, parent = #ttg.amd_wmma<{version = 2, isTranspose = false, "
                        "warpsPerCTA = [2, 2]}>, kWidth = 8}>"),
}


def other_kinds():
    """OTHER_KINDS in the installed release's spelling. Triton 3.6's to_linear_layout cannot
    convert shared layouts (the native worker then has no answer), so they are left out there."""
    if O.TRITON_VERSION == "3.6":
        return [(OTHER_KINDS_36.get(t, t), s) for t, s in OTHER_KINDS if "shared" not in t]
    return OTHER_KINDS


def test_printed_other_kinds_parse():
    from layoutverify.adapters.triton.native import native_many
    from layoutverify.adapters.triton.parser import SHARED_KINDS, parse_text
    kinds = other_kinds()
    raws = native_many(kinds, raw=True, printed=True)
    for (text, shape), raw in zip(kinds, raws):
        assert not isinstance(raw, Exception), (text, raw)
        typ = printed_type(raw["printed"])
        original = parse_text(text).attr
        printed = parse_text(typ)
        assert printed.shape == shape
        assert printed.container == ("memdesc" if original.kind in SHARED_KINDS else "tensor")
        assert printed.attr.kind == original.kind
        got = dict(canon(printed.attr)[2])
        for k, v in canon(original)[2]:
            if k in ("offset", "block", "order", "shape") and original.kind == "padded_shared":
                continue  # Triton may reprint the linear component in its short form
            assert got.get(k) == v, (k, text, typ)


# -- old spellings, against their documented meaning in today's syntax ----------------------
OLD_VS_NEW = [
    # CTASplitNum = 2 along dim0 of 2 CTAs: the second CTA holds the next tile down dim0
    ("#triton_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0], "
     "CTAsPerCGA = [2, 1], CTASplitNum = [2, 1], CTAOrder = [1, 0]}>",
     "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0], "
     "CGALayout = [[1, 0]]}>", (64, 64)),
    # 4 CTAs, split 2 along dim1 (the most minor in CTAOrder), the other 2 replicate
    ("#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1], "
     "CTAsPerCGA = [2, 2], CTASplitNum = [1, 2], CTAOrder = [1, 0]}>",
     "#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1], "
     "CGALayout = [[0, 1], [0, 0]]}>", (32, 64)),
    # default CTA layout written out: one CTA
    ("#triton_gpu.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [1], order = [0], "
     "CTAsPerCGA = [1], CTASplitNum = [1], CTAOrder = [0]}>",
     "#ttg.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>", (512,)),
    # #triton_gpu.mma is today's nvidia_mma; Ampere's instrShape defaults to [16, 8]
    ("#triton_gpu.mma<{versionMajor = 2, warpsPerCTA = [4, 1]}>",
     "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 8]}>", (64, 64)),
    ("#triton_gpu.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1], CTAsPerCGA = [1, 1], "
     "CTASplitNum = [1, 1], CTAOrder = [1, 0], instrShape = [16, 8]}>",
     "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 8]}>", (32, 32)),
    ("#triton_gpu.slice<{dim = 0, parent = #triton_gpu.dot_op<{opIdx = 1, parent = #triton_gpu.mma<{versionMajor = 2, "
     "versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2}>}>",
     "#ttg.slice<{dim = 0, parent = #ttg.dot_op<{opIdx = 1, parent = #ttg.nvidia_mma<{versionMajor = 2, "
     "versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2}>}>", (64,)),
]


def test_old_spellings_mean_what_the_new_ones_mean():
    from layoutverify.adapters.triton import parse
    theirs = O.oracle([(new, shape) for _, new, shape in OLD_VS_NEW])
    for (old, new, shape), t in zip(OLD_VS_NEW, theirs):
        assert not isinstance(t, Exception), (new, t)
        assert O.compare(parse(old, shape=shape, triton_version=O.TRITON_VERSION), t) is None, old


def test_native_accepts_old_spellings_by_reprinting():
    """Triton 3.9 no longer parses ``#triton_gpu.``; native() re-prints and says so in the name."""
    from layoutverify.adapters.triton import native
    old, new, shape = OLD_VS_NEW[0]
    lay = native(old, shape=shape)
    assert "re-printed" in (lay.name or "")
    assert O.compare(lay, O.oracle([(new, shape)])[0]) is None
