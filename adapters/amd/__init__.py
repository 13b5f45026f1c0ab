"""AMD spec adapter: register layouts of MFMA (CDNA, wave64) and WMMA (RDNA3/RDNA4) instructions.

Accepted text (``amd:`` layouts); tokens are separated by ``.`` and matched case-insensitively::

    [ARCH.]MNEMONIC[.wave32|.wave64].OPERAND
        ARCH     = cdna1 | cdna2 | cdna3 | cdna4 | rdna3 | rdna4, or a gfx name (gfx908, gfx90a,
                   gfx940-942, gfx950, gfx11xx, gfx12xx). Optional for MFMA (its layout does not
                   depend on the generation; given, it must have the instruction); required for
                   WMMA, whose layouts differ between RDNA3 and RDNA4.
        MNEMONIC = as in AMD's ISA guides, with or without ``v_``: v_mfma_f32_32x32x8_f16,
                   v_mfma_f32_32x32x8f16 (CDNA1/2 spelling), v_mfma_f64_16x16x4_f64,
                   v_mfma_f32_4x4x4_16b_f16, v_wmma_f32_16x16x16_f16, CDNA4's
                   v_mfma_f32_16x16x128_f8f6f4 / v_mfma_scale_f32_32x32x64_f8f6f4, and the sparse
                   CDNA3 v_smfmac_* and RDNA4 v_swmmac_* (their A fragment is the packed M x K/2
                   matrix of non-zero values; the compression indices are not modelled)
        wave     = wave32 (WMMA default) | wave64 (MFMA is always wave64)
        OPERAND  = A (M x K) | B (K x N) | C or D (M x N)
      e.g. amd:v_mfma_f32_32x32x8_f16.A   amd:v_mfma_f32_16x16x16_f16.C
           amd:rdna3.v_wmma_f32_16x16x16_f16.B   amd:rdna4.v_wmma_f32_16x16x16_f16.wave64.C

Canonical form: hardware dims ``register`` (values per lane in VGPR order), ``lane`` (64 for
MFMA; 32 or 64 for WMMA), ``warp`` (1), ``block`` (1); logical dims ``dim0`` = row, ``dim1`` =
column (A: M x K, B: K x N, C/D: M x N), with a leading ``block`` dim for multi-block MFMA
(``_2b``, ``_4b``, ``_16b``). Modifiers (BLGP, CBSZ, ABID, OPSEL) are taken as 0.
:func:`list_fragments` lists every accepted canonical name; the rules are in
:mod:`layoutverify.adapters.amd.cdna` and :mod:`layoutverify.adapters.amd.rdna`.
"""
from __future__ import annotations

import re

from layoutverify.core.errors import LayoutError, UnsupportedError
from layoutverify.core.layout import Layout

from layoutverify.adapters.isa.fragment import Fragment
from layoutverify.adapters.isa.dotted import error, tokenize
from . import cdna as _cdna
from . import rdna as _rdna

__all__ = ["parse", "fragment", "list_fragments", "FRAGMENTS", "Fragment"]

ARCHS = ("cdna1", "cdna2", "cdna3", "cdna4", "rdna3", "rdna4")
_OPERANDS = {"a": "A", "b": "B", "c": "C", "d": "C"}


def _arch_of(word: str) -> str | None:
    """``gfx942`` -> ``cdna3``; a generation name stays; None if not an architecture."""
    w = word.lower()
    if w in ARCHS:
        return w
    gfx = {"gfx908": "cdna1", "gfx90a": "cdna2", "gfx940": "cdna3", "gfx941": "cdna3", "gfx942": "cdna3",
           "gfx950": "cdna4"}
    if w in gfx:
        return gfx[w]
    if re.fullmatch(r"gfx11[0-9][0-9]|gfx11", w):
        return "rdna3"
    if re.fullmatch(r"gfx12[0-9][0-9]|gfx12", w):
        return "rdna4"
    return None


def _mfma_names() -> list[str]:
    return [f"{n}.{op}" for n in _cdna.MFMA for op in ("A", "B", "C")]


_SPEC_START = re.compile(r"((cdna[0-9]|rdna[0-9]|gfx[0-9a-z]+)\.)?(v_)?(mfma|wmma|smfmac|swmmac)")


def looks_like(text: str) -> bool:
    """Whether unprefixed spec text names an AMD matrix instruction fragment (registry guessing)."""
    return bool(_SPEC_START.match(text.lstrip()))


def list_fragments(pattern: str | None = None) -> list[str]:
    """All canonical fragment names (sorted), optionally those containing ``pattern``."""
    return [n for n in sorted(FRAGMENTS) if pattern is None or pattern.lower() in n.lower()]


def parse(text: str, shape=None, **options) -> Layout:
    """Parse an ``amd:`` instruction operand into its canonical layout (see the module docstring)."""
    frag = fragment(text)
    if shape is not None and tuple(int(s) for s in shape) != frag.shape:
        raise LayoutError(f"{frag.name} is a {'x'.join(map(str, frag.shape))} fragment; "
                          f"shape {'x'.join(str(s) for s in shape)} does not match")
    return frag.layout()


def fragment(text: str) -> Fragment:
    """The :class:`Fragment` named by ``text``."""
    toks = tokenize(text, "AMD instruction")
    i = 0
    arch = _arch_of(toks[0].text)
    arch_tok = None
    if arch is not None:
        arch_tok, i = toks[0], 1
    if i >= len(toks):
        raise error("expected an MFMA or WMMA mnemonic after the architecture", text, None)
    mn_tok = toks[i]
    i += 1
    mnemonic = mn_tok.low if mn_tok.low.startswith("v_") else "v_" + mn_tok.low
    wave = None
    if i < len(toks) and toks[i].low in ("wave32", "wave64", "w32", "w64"):
        wave_tok = toks[i]
        wave = 32 if "32" in wave_tok.low else 64
        i += 1
    else:
        wave_tok = None
    if i >= len(toks):
        raise error(f"{mn_tok.text} needs an operand: A, B, C or D", text, None)
    op_tok = toks[i]
    if op_tok.low not in _OPERANDS:
        raise error("expected the operand A, B, C or D", text, op_tok, ["A", "B", "C", "D", "wave32", "wave64"])
    if i + 1 < len(toks):
        raise error("unexpected token after the operand", text, toks[i + 1])
    operand = _OPERANDS[op_tok.low]

    if mnemonic.startswith(_cdna.PREFIXES):
        inst = _cdna.MFMA.get(mnemonic)
        if inst is None:
            raise error("unknown MFMA instruction", text, mn_tok, _cdna.MFMA)
        if arch is not None and arch not in inst.archs:
            choices = [n for n, x in _cdna.MFMA.items() if arch in x.archs]
            raise error(f"{inst.name} is not a {arch} instruction (it is {'/'.join(inst.archs)})", text, mn_tok,
                        choices)
        if wave == 32:
            raise error("MFMA runs in wave64 only", text, wave_tok)
        return _cdna.fragment(inst, operand)
    if mnemonic.startswith(("v_wmma_", "v_swmmac_")):
        if arch is None and mnemonic.startswith("v_swmmac_"):
            arch = "rdna4"                     # SWMMAC exists on RDNA4 only
        if arch is None:
            raise error(f"{mn_tok.text} has different layouts on RDNA3 and RDNA4; write rdna3.{mn_tok.text} or "
                        f"rdna4.{mn_tok.text}", text, mn_tok)
        inst = _rdna.WMMA.get((arch, mnemonic))
        if inst is None:
            choices = [mn for (a, mn) in _rdna.WMMA if a == arch]
            if not choices:
                raise error(f"{arch} has no WMMA instructions (WMMA is RDNA3/RDNA4)", text, arch_tok,
                            ["rdna3", "rdna4"])
            raise error(f"unknown {arch} WMMA instruction", text, mn_tok, choices)
        return _rdna.fragment(inst, operand, wave or 32)
    raise error("expected a v_mfma_*, v_smfmac_*, v_wmma_* or v_swmmac_* instruction", text, mn_tok,
                list(_cdna.MFMA) + sorted({mn for (_, mn) in _rdna.WMMA}))


#: canonical name -> Fragment for every fragment this adapter knows
FRAGMENTS: dict[str, Fragment] = {n: fragment(n) for n in _mfma_names() + _rdna.names()}
