"""CDNA MFMA (``v_mfma_*``, wave64) register layouts.

Source of the facts: AMD's Matrix Instruction Calculator (ROCm/amd_matrix_instruction_calculator,
version 1.3.2), whose instruction tables give M, N, K, the number of blocks B and the element
types, and whose gfx9 (CDNA) register rule places matrix elements in lanes and registers. The
rule is restated here in the hardware -> element direction (all instructions below are dense;
the BLGP, CBSZ and ABID modifiers are taken as 0):

* **A** (B blocks of M x K) and **B** (B blocks of K x N; ``i`` is then the column ``j`` and
  ``k`` the row). Each lane holds ``E = K * M * B / 64`` consecutive values of K in consecutive
  register slots. For value ``e`` of lane ``l``::

      i = l % M        block = (l // M) % B        k = (l // (M * B)) * E + e

  (e.g. ``v_mfma_f32_32x32x8_f16`` A: lane ``l`` holds row ``l % 32``, k = ``4 * (l // 32) + e``).
* **C/D** (B blocks of M x N): values are written in "multi-rows" ``H`` rows tall (``H = 4`` for
  32-bit results, ``H = 1`` for 64-bit ones) and N lanes wide; ``mpr = 64 / N`` multi-rows share a
  register; ``bpr = max(1, 64 * H / (M * N))`` blocks share a register. For value (register) ``r``
  of lane ``l``::

      j = l % N
      if bpr == 1:  block = r // (M*N/64),  r' = r % (M*N/64)
      else:         block = (l // N) % bpr, r' = r
      i = (r' // H) * (H * mpr) + ((l // (N * bpr)) % mpr) * H + r' % H

  (e.g. 32x32, f32: row = ``8 * (r // 4) + 4 * (l // 32) + r % 4``, col = ``l % 32``; the 64-bit
  ``v_mfma_f64_16x16x4_f64``: row = ``4 * r + l // 16``, col = ``l % 16``).

``register`` counts values (a 16-bit input value is half a VGPR, a 64-bit value two VGPRs), in
increasing VGPR and bit order. Multi-block instructions (``_2b``, ``_4b``, ``_16b``) compute B
independent products; their logical tensor is ``(block, row, col)``.

CDNA4 (gfx950) adds ``v_mfma_f32_32x32x16_{f16,bf16}``, ``v_mfma_f32_16x16x32_{f16,bf16}``,
``v_mfma_i32_32x32x32_i8``, ``v_mfma_i32_16x16x64_i8`` and the f8f6f4 family
``v_mfma_f32_{16x16x128,32x32x64}_f8f6f4`` and ``v_mfma_scale_f32_{16x16x128,32x32x64}_f8f6f4``
(A and B of any of fp8/bf8/fp6/bf6/fp4, chosen by CBSZ/BLGP; the scale variant adds one E8M0
scale per lane and 32 values of K, which does not move the values). The calculator 1.3.2 does not
list CDNA4; these are registered with the same CDNA rule, counting *values* (an f8f6f4 lane holds
32 values of K whatever their width: 8, 6 or 4 bits), which is the CDNA4 ISA's "32 K values per
lane, lanes ``16 * (k // 32) + i``" for 16x16x128 and Triton's gfx950 layouts (the tests compare
them).

**Sparse** ``v_smfmac_*`` (CDNA3; AMD calls them 4:2 structured sparsity): A is stored compressed,
``M x K/2`` non-zero values, two for every four of K; its dense position comes from the
compression indices in SrcC (not modelled). The calculator places the packed A exactly as the
dense rule of an ``M x N x K/2`` instruction (lane ``l`` value ``e``: ``k/2 = (l // M) * E + e``),
and B (dense, ``K x N``) and D by the dense rule; the fragment ``v_smfmac_*.A`` is therefore the
``M x K/2`` packed matrix.
"""
from __future__ import annotations

from dataclasses import dataclass

from layoutverify.adapters.isa.fragment import Fragment

CALC = "AMD Matrix Instruction Calculator 1.3.2 (gfx9 register rule)"

BITS = {"f32": 32, "xf32": 32, "f16": 16, "bf16": 16, "i8": 8, "fp8": 8, "bf8": 8, "f64": 64, "i32": 32,
        "f8f6f4": 8}


@dataclass(frozen=True)
class Mfma:
    """One CDNA MFMA instruction: ``D (m x n) = A (m x k) * B (k x n) + C`` per block, with its operand
    types, block count and the CDNA generations that have it."""
    name: str                  #: canonical mnemonic
    archs: tuple[str, ...]     #: CDNA generations that have it
    m: int
    n: int
    k: int
    blocks: int
    in_type: str
    out_type: str
    source: str = CALC
    sparse: bool = False       #: smfmac: A is the packed M x K/2 matrix of non-zeros

    @property
    def a_cols(self) -> int:
        """Columns of the A fragment: K, or K/2 for the packed A of a sparse instruction."""
        return self.k // 2 if self.sparse else self.k


def _table() -> dict[str, Mfma]:
    """Instruction facts: (mnemonic, archs, M, N, K, blocks, in type, out type)."""
    c12, c2, c3, c4 = ("cdna1", "cdna2"), ("cdna2",), ("cdna3",), ("cdna4",)
    rows = [
        # CDNA1/CDNA2 mnemonics (no underscore before the type)
        ("v_mfma_f32_32x32x1f32", c12, 32, 32, 1, 2, "f32", "f32"),
        ("v_mfma_f32_16x16x1f32", c12, 16, 16, 1, 4, "f32", "f32"),
        ("v_mfma_f32_4x4x1f32", c12, 4, 4, 1, 16, "f32", "f32"),
        ("v_mfma_f32_32x32x2f32", c12, 32, 32, 2, 1, "f32", "f32"),
        ("v_mfma_f32_16x16x4f32", c12, 16, 16, 4, 1, "f32", "f32"),
        ("v_mfma_f32_32x32x4f16", c12, 32, 32, 4, 2, "f16", "f32"),
        ("v_mfma_f32_16x16x4f16", c12, 16, 16, 4, 4, "f16", "f32"),
        ("v_mfma_f32_4x4x4f16", c12, 4, 4, 4, 16, "f16", "f32"),
        ("v_mfma_f32_32x32x8f16", c12, 32, 32, 8, 1, "f16", "f32"),
        ("v_mfma_f32_16x16x16f16", c12, 16, 16, 16, 1, "f16", "f32"),
        ("v_mfma_i32_32x32x4i8", c12, 32, 32, 4, 2, "i8", "i32"),
        ("v_mfma_i32_16x16x4i8", c12, 16, 16, 4, 4, "i8", "i32"),
        ("v_mfma_i32_4x4x4i8", c12, 4, 4, 4, 16, "i8", "i32"),
        ("v_mfma_i32_32x32x8i8", c12, 32, 32, 8, 1, "i8", "i32"),
        ("v_mfma_i32_16x16x16i8", c12, 16, 16, 16, 1, "i8", "i32"),
        ("v_mfma_f32_32x32x2bf16", c12, 32, 32, 2, 2, "bf16", "f32"),
        ("v_mfma_f32_16x16x2bf16", c12, 16, 16, 2, 4, "bf16", "f32"),
        ("v_mfma_f32_4x4x2bf16", c12, 4, 4, 2, 16, "bf16", "f32"),
        ("v_mfma_f32_32x32x4bf16", c12, 32, 32, 4, 1, "bf16", "f32"),
        ("v_mfma_f32_16x16x8bf16", c12, 16, 16, 8, 1, "bf16", "f32"),
        ("v_mfma_f32_32x32x4bf16_1k", c2, 32, 32, 4, 2, "bf16", "f32"),
        ("v_mfma_f32_16x16x4bf16_1k", c2, 16, 16, 4, 4, "bf16", "f32"),
        ("v_mfma_f32_4x4x4bf16_1k", c2, 4, 4, 4, 16, "bf16", "f32"),
        ("v_mfma_f32_32x32x8bf16_1k", c2, 32, 32, 8, 1, "bf16", "f32"),
        ("v_mfma_f32_16x16x16bf16_1k", c2, 16, 16, 16, 1, "bf16", "f32"),
        ("v_mfma_f64_16x16x4f64", c2, 16, 16, 4, 1, "f64", "f64"),
        ("v_mfma_f64_4x4x4f64", c2, 4, 4, 4, 4, "f64", "f64"),
        # CDNA3 mnemonics
        ("v_mfma_f32_16x16x8_xf32", c3, 16, 16, 8, 1, "xf32", "f32"),
        ("v_mfma_f32_32x32x4_xf32", c3, 32, 32, 4, 1, "xf32", "f32"),
        ("v_mfma_f32_32x32x1_2b_f32", c3, 32, 32, 1, 2, "f32", "f32"),
        ("v_mfma_f32_16x16x1_4b_f32", c3, 16, 16, 1, 4, "f32", "f32"),
        ("v_mfma_f32_4x4x1_16b_f32", c3, 4, 4, 1, 16, "f32", "f32"),
        ("v_mfma_f32_32x32x2_f32", c3, 32, 32, 2, 1, "f32", "f32"),
        ("v_mfma_f32_16x16x4_f32", c3, 16, 16, 4, 1, "f32", "f32"),
        ("v_mfma_f32_32x32x4_2b_f16", c3, 32, 32, 4, 2, "f16", "f32"),
        ("v_mfma_f32_16x16x4_4b_f16", c3, 16, 16, 4, 4, "f16", "f32"),
        ("v_mfma_f32_4x4x4_16b_f16", c3, 4, 4, 4, 16, "f16", "f32"),
        ("v_mfma_f32_32x32x8_f16", c3, 32, 32, 8, 1, "f16", "f32"),
        ("v_mfma_f32_16x16x16_f16", c3, 16, 16, 16, 1, "f16", "f32"),
        ("v_mfma_i32_32x32x4_2b_i8", c3, 32, 32, 4, 2, "i8", "i32"),
        ("v_mfma_i32_16x16x4_4b_i8", c3, 16, 16, 4, 4, "i8", "i32"),
        ("v_mfma_i32_4x4x4_16b_i8", c3, 4, 4, 4, 16, "i8", "i32"),
        ("v_mfma_i32_32x32x16_i8", c3, 32, 32, 16, 1, "i8", "i32"),
        ("v_mfma_i32_16x16x32_i8", c3, 16, 16, 32, 1, "i8", "i32"),
        ("v_mfma_f32_32x32x4_2b_bf16", c3, 32, 32, 4, 2, "bf16", "f32"),
        ("v_mfma_f32_16x16x4_4b_bf16", c3, 16, 16, 4, 4, "bf16", "f32"),
        ("v_mfma_f32_4x4x4_16b_bf16", c3, 4, 4, 4, 16, "bf16", "f32"),
        ("v_mfma_f32_32x32x8_bf16", c3, 32, 32, 8, 1, "bf16", "f32"),
        ("v_mfma_f32_16x16x16_bf16", c3, 16, 16, 16, 1, "bf16", "f32"),
        ("v_mfma_f64_16x16x4_f64", c3, 16, 16, 4, 1, "f64", "f64"),
        ("v_mfma_f64_4x4x4_4b_f64", c3, 4, 4, 4, 4, "f64", "f64"),
    ]
    for a in ("fp8", "bf8"):
        for b in ("fp8", "bf8"):
            rows.append((f"v_mfma_f32_16x16x32_{a}_{b}", c3, 16, 16, 32, 1, a, "f32"))
            rows.append((f"v_mfma_f32_32x32x16_{a}_{b}", c3, 32, 32, 16, 1, a, "f32"))
    out = {r[0]: Mfma(*r) for r in rows}
    cdna4 = "CDNA4 (gfx950) instruction; CDNA register rule of " + CALC
    for t in ("f16", "bf16"):
        out[f"v_mfma_f32_32x32x16_{t}"] = Mfma(f"v_mfma_f32_32x32x16_{t}", c4, 32, 32, 16, 1, t, "f32", cdna4)
        out[f"v_mfma_f32_16x16x32_{t}"] = Mfma(f"v_mfma_f32_16x16x32_{t}", c4, 16, 16, 32, 1, t, "f32", cdna4)
    out["v_mfma_i32_32x32x32_i8"] = Mfma("v_mfma_i32_32x32x32_i8", c4, 32, 32, 32, 1, "i8", "i32", cdna4)
    out["v_mfma_i32_16x16x64_i8"] = Mfma("v_mfma_i32_16x16x64_i8", c4, 16, 16, 64, 1, "i8", "i32", cdna4)
    for pre in ("v_mfma_f32", "v_mfma_scale_f32"):
        for (m, k) in ((16, 128), (32, 64)):
            name = f"{pre}_{m}x{m}x{k}_f8f6f4"
            out[name] = Mfma(name, c4, m, m, k, 1, "f8f6f4", "f32", cdna4)
    # CDNA3 sparse (smfmac): calculator 1.3.2, A packed to K/2
    sparse = [("v_smfmac_f32_16x16x32_f16", 16, 32, "f16", "f32"), ("v_smfmac_f32_32x32x16_f16", 32, 16, "f16", "f32"),
              ("v_smfmac_f32_16x16x32_bf16", 16, 32, "bf16", "f32"),
              ("v_smfmac_f32_32x32x16_bf16", 32, 16, "bf16", "f32"),
              ("v_smfmac_i32_16x16x64_i8", 16, 64, "i8", "i32"), ("v_smfmac_i32_32x32x32_i8", 32, 32, "i8", "i32")]
    for a in ("bf8", "fp8"):
        for b in ("bf8", "fp8"):
            sparse += [(f"v_smfmac_f32_16x16x64_{a}_{b}", 16, 64, a, "f32"),
                       (f"v_smfmac_f32_32x32x32_{a}_{b}", 32, 32, a, "f32")]
    for name, m, k, t, o in sparse:
        out[name] = Mfma(name, c3, m, m, k, 1, t, o, CALC + ", sparse A (4:2) packed to K/2", sparse=True)
    return out


MFMA: dict[str, Mfma] = _table()

#: mnemonic prefixes of the CDNA instructions in :data:`MFMA` (dense MFMA and sparse SMFMAC)
PREFIXES = ("v_mfma_", "v_smfmac_")


def input_coords(inst: Mfma, operand: str):
    """``coords(register, lane, warp)`` of operand A (``(block,) row i, col k``) or B (``(block,) row k, col j``)."""
    m_or_n = inst.m if operand == "A" else inst.n
    depth = inst.a_cols if operand == "A" else inst.k      # packed A of smfmac: K/2
    per_lane = depth * m_or_n * inst.blocks // 64
    if per_lane * (64 // (m_or_n * inst.blocks)) != depth:
        raise AssertionError(f"{inst.name}: K={inst.k} does not fill wave64 with {per_lane} values per lane")

    def coords(r, lane, warp):
        outer = lane % m_or_n
        block = (lane // m_or_n) % inst.blocks
        k = (lane // (m_or_n * inst.blocks)) * per_lane + r
        pos = (outer, k) if operand == "A" else (k, outer)
        return pos if inst.blocks == 1 else (block,) + pos

    return per_lane, coords


def output_coords(inst: Mfma):
    """``coords(register, lane, warp)`` of C/D (``(block,) row i, col j``)."""
    m, n, nb = inst.m, inst.n, inst.blocks
    height = 1 if BITS[inst.out_type] == 64 else 4
    mpr = 64 // n
    bpr = max(1, 64 * height // (m * n))
    regs = nb * m * n // 64
    if bpr > 1 and bpr != nb:
        raise AssertionError(f"{inst.name}: {nb} blocks, {bpr} per register: outside the CDNA rule's cases")
    per_block = max(1, m * n // 64)

    def coords(r, lane, warp):
        j = lane % n
        if bpr == 1:
            block, rr = r // per_block, r % per_block
        else:
            block, rr = (lane // n) % bpr, r
        i = (rr // height) * (height * mpr) + ((lane // (n * bpr)) % mpr) * height + rr % height
        return (i, j) if nb == 1 else (block, i, j)

    return regs, coords


def fragment(inst: Mfma, operand: str) -> Fragment:
    """The A, B or C (= D) fragment of one MFMA instruction."""
    if operand in ("A", "B"):
        regs, coords = input_coords(inst, operand)
        rows, cols = (inst.m, inst.a_cols) if operand == "A" else (inst.k, inst.n)
    else:
        regs, coords = output_coords(inst)
        rows, cols = inst.m, inst.n
    return Fragment(name=f"{inst.name}.{operand}", operand=operand, rows=rows, cols=cols, registers=regs,
                    coords=coords, source=inst.source, lanes=64, blocks=inst.blocks)
