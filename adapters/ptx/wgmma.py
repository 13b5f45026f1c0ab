"""Register fragments of ``wgmma.mma_async`` (PTX ISA §9.7.15.5.1.1, "Register Fragments").

A warpgroup is 4 consecutive warps (128 threads); here ``warp`` is the warp's index within the
warpgroup (``%warpid % 4`` for an aligned warpgroup). The ISA gives these fragments as figures
only (Figures 148-155 in PTX ISA 8.7); the formulas below are read off them:

* Accumulator D, ``m64nNkK`` for every K (Figures 149, 151, 153, 155): warp ``w`` holds rows
  ``16w .. 16w+15``; within them the layout is the ``mma.m16n8`` C fragment repeated ``N/8``
  times along N, so ``d_i`` with ``i = 4j + c`` is element ``c`` of the m16n8 C fragment of
  column block ``j``::

      row = 16 * warp + groupID + 8 * ((i >> 1) & 1)
      col = 8 * (i >> 2) + threadID_in_group * 2 + (i & 1)

  N/2 values per thread (``.f32``/``.s32`` registers, or N/4 ``.f16x2`` registers unpacked).
* A in registers (Figures 148, 150, 152): warp ``w`` holds rows ``16w .. 16w+15`` of the 64 x K
  tile with the ``mma`` A fragment of the same K and element width: ``m16n8k16`` .f16 for k16,
  ``m16n8k8`` .tf32 for k8, ``m16n8k32`` 8-bit for k32.

N ranges (ISA §9.7.15.2 Matrix Shape / the fragment tables): f16/f32 accumulators
``N = 8, 16, ..., 256``; s32 accumulators ``N = 8, 16, 24, 32, 48, 64, ..., 256``.
"""
from __future__ import annotations

from . import mma
from layoutverify.adapters.isa.fragment import Fragment, bit
from .mma import group_id, thread_in_group

ISA = "PTX ISA §9.7.15.5.1.1"

N_FLOAT = tuple(range(8, 257, 8))
N_INT = (8, 16, 24, 32) + tuple(range(48, 257, 16))

#: K -> (section, A types, {D type: valid N}); k256 (.b1) is listed for D only: its A figure has no
#: formula we could transcribe.
SHAPES = {
    16: ("1", ("f16", "bf16"), {"f16": N_FLOAT, "f32": N_FLOAT}),
    8: ("2", ("tf32",), {"f32": N_FLOAT}),
    32: ("3", ("s8", "u8", "e4m3", "e5m2"), {"s32": N_INT, "f32": N_FLOAT, "f16": N_FLOAT}),
    256: ("4", (), {"s32": N_INT}),
}

#: K -> (registers per thread, mma A fragment formula of the same K and element width)
_A_PER_WARP = {16: (8, mma.a_m16n8k16_f16), 8: (4, mma.a_m16n8k8_tf32), 32: (16, mma.a_m16n8k32_i8)}


def d_m64n(r, lane, warp):
    """Accumulator D (Figures 149/151/153/155): row = 16 * warp + groupID + 8 * ((i >> 1) & 1);
    col = 8 * (i >> 2) + threadID_in_group * 2 + (i & 1)."""
    return warp * 16 + group_id(lane) + bit(r, 1) * 8, (r >> 2) * 8 + thread_in_group(lane) * 2 + bit(r, 0)


def _a_warpgroup(per_warp):
    def a(r, lane, warp):
        row, col = per_warp(r, lane, warp)
        return warp * 16 + row, col
    a.__doc__ = f"A in registers: rows 16 * warp + the rows of {per_warp.__name__}."
    return a


def fragment(n: int, k: int, operand: str, dtype: str) -> Fragment | None:
    """The fragment of ``wgmma.m64n{n}k{k}`` operand ``A`` or ``C`` (= D), or None if the ISA has none."""
    spec = SHAPES.get(k)
    if spec is None:
        return None
    section, a_types, d_types = spec
    if n not in N_FLOAT:
        return None
    name = f"wgmma.m64n{n}k{k}.{dtype}.{'A' if operand == 'A' else 'D'}"
    src = f"{ISA}.{section}"
    if operand == "A":
        if dtype not in a_types or k not in _A_PER_WARP:
            return None
        if dtype in ("s8", "u8") and n not in N_INT:    # integer A needs an .s32 accumulator
            return None
        regs, per_warp = _A_PER_WARP[k]
        return Fragment(name=name, operand="A", rows=64, cols=k, registers=regs, coords=_a_warpgroup(per_warp),
                        source=src, warps=4)
    if dtype not in d_types or n not in d_types[dtype]:
        return None
    return Fragment(name=name, operand="C", rows=64, cols=n, registers=n // 2, coords=d_m64n, source=src, warps=4)


def names() -> list[str]:
    """Every wgmma fragment name (A for each valid N, D for each valid N and accumulator type)."""
    out = []
    for k, (_, a_types, d_types) in SHAPES.items():
        for dtype, ns in d_types.items():
            out += [f"wgmma.m64n{n}k{k}.{dtype}.D" for n in ns]
        if k in _A_PER_WARP:
            for t in a_types:
                ns = N_INT if t in ("s8", "u8") else N_FLOAT
                out += [f"wgmma.m64n{n}k{k}.{t}.A" for n in ns]
    return out


def valid_types(k: int, operand: str) -> list[str]:
    spec = SHAPES.get(k)
    if spec is None:
        return []
    if operand == "A":
        return list(spec[1]) if k in _A_PER_WARP else []
    return list(spec[2])
