"""RDNA WMMA (``v_wmma_*``) register layouts, wave32 and wave64.

Source of the facts: AMD's Matrix Instruction Calculator 1.3.2 (ROCm/amd_matrix_instruction_calculator),
gfx11 (RDNA3) and gfx12 (RDNA4) register rules. The calculator states them element -> (register,
lane); here they are restated hardware -> element. For the A operand ``i`` is the row and ``k``
the column; for B, ``i`` is the column and ``k`` the row (same rule). ``register`` counts values
in increasing VGPR and bit order.

RDNA3 (gfx11), all 16x16x16:

* A/B: lane ``l`` holds all 16 values of K of row (A) / column (B) ``l % 16``: value ``e`` is
  ``k = e``. Lanes ``l`` and ``l + 16`` (and ``+32``, ``+48`` in wave64) hold the same values: the
  operand is replicated across the half-waves.
* C/D: row = ``(wave / 16) * r + l // 16``, col = ``l % 16`` (8 values in wave32, 4 in wave64).
  16-bit results (``v_wmma_f16_*``, ``v_wmma_bf16_*``) use one half of each VGPR (OPSEL picks
  which); the positions are the same.

RDNA4 (gfx12), dense instructions, no replication:

* 16-bit inputs: wave32 ``k = 8 * (e // 4) + 4 * (l // 16) + e % 4`` (8 values);
  wave64 ``k = 8 * (l // 32) + 4 * ((l // 16) % 2) + e`` (4 values).
* 8-bit inputs: wave32 ``k = 8 * (l // 16) + e`` (8 values);
  wave64 ``k = 4 * (l // 32) + 8 * ((l // 16) % 2) + e`` (4 values).
* 4-bit inputs, K = 16: wave32 ``k = 8 * (l // 16) + e`` (8 values); wave64 uses only half the
  wave (not modelled). K = 32: wave32 ``k = 16 * (l // 16) + e`` (16 values);
  wave64 ``k = 8 * (l // 32) + 16 * ((l // 16) % 2) + e`` (8 values).
* C/D: wave32 row = ``8 * (l // 16) + r``; wave64 row = ``8 * ((l // 16) % 2) + 4 * (l // 32) + r``;
  col = ``l % 16``.

RDNA4 sparse ``v_swmmac_*`` (16x16xK, A 2:4 sparse): the calculator gives, per register slot, the
4-wide span of K that holds its two non-zeros. Numbered in order, the non-zeros form the packed
``16 x K/2`` A, placed exactly by the dense rule above for a K/2 instruction of the same input type
(the ``v_swmmac_*.A`` fragment is that packed matrix; the compression indices are not modelled).
B (dense, ``K x 16``, ``K * 16 / wave`` values per lane) follows:

* 16-bit inputs: wave32 ``k = 16 * (e // 8) + 8 * (l // 16) + e % 8``; wave64 ``k = 8 * (l // 16) + e``.
* 8- and 4-bit inputs: wave32 ``k = (K / 2) * (l // 16) + e``;
  wave64 ``k = (K / 2) * ((l // 16) % 2) + (K / 4) * (l // 32) + e``.

``v_swmmac_i32_16x16x32_iu4`` in wave64 ignores lanes 32-63 for A (not modelled, like its dense
K = 16 sibling).
"""
from __future__ import annotations

from dataclasses import dataclass

from layoutverify.core.errors import UnsupportedError

from layoutverify.adapters.isa.fragment import Fragment

CALC = "AMD Matrix Instruction Calculator 1.3.2"
BITS = {"f16": 16, "bf16": 16, "iu8": 8, "fp8": 8, "bf8": 8, "iu4": 4, "f32": 32, "i32": 32}


@dataclass(frozen=True)
class Wmma:
    """One RDNA WMMA instruction: ``D (16 x 16) = A (16 x k) * B (k x 16) + C`` on a wave32 (sparse: A
    holds half its columns), with its operand types and architecture."""
    name: str
    arch: str            #: "rdna3" or "rdna4"
    k: int
    in_type: str
    out_type: str
    sparse: bool = False      #: swmmac: A is the packed 16 x K/2 matrix of non-zeros

    @property
    def a_cols(self) -> int:
        """Columns of A held in registers: ``k``, or ``k / 2`` for the sparse (SWMMAC) forms."""
        return self.k // 2 if self.sparse else self.k

    @property
    def in_bits(self) -> int:
        """Bits of an A/B element."""
        return BITS[self.in_type]

    @property
    def out_bits(self) -> int:
        """Bits of a C/D element."""
        return BITS[self.out_type]


def _table() -> dict[tuple[str, str], Wmma]:
    rows = []
    for arch in ("rdna3", "rdna4"):
        rows += [
            ("v_wmma_f32_16x16x16_f16", arch, 16, "f16", "f32"),
            ("v_wmma_f32_16x16x16_bf16", arch, 16, "bf16", "f32"),
            ("v_wmma_f16_16x16x16_f16", arch, 16, "f16", "f16"),
            ("v_wmma_bf16_16x16x16_bf16", arch, 16, "bf16", "bf16"),
            ("v_wmma_i32_16x16x16_iu8", arch, 16, "iu8", "i32"),
            ("v_wmma_i32_16x16x16_iu4", arch, 16, "iu4", "i32"),
        ]
    rows.append(("v_wmma_i32_16x16x32_iu4", "rdna4", 32, "iu4", "i32"))
    for a in ("fp8", "bf8"):
        for b in ("fp8", "bf8"):
            rows.append((f"v_wmma_f32_16x16x16_{a}_{b}", "rdna4", 16, a, "f32"))
    out = {(r[1], r[0]): Wmma(*r) for r in rows}
    sparse = [("v_swmmac_f32_16x16x32_f16", 32, "f16", "f32"), ("v_swmmac_f32_16x16x32_bf16", 32, "bf16", "f32"),
              ("v_swmmac_f16_16x16x32_f16", 32, "f16", "f16"), ("v_swmmac_bf16_16x16x32_bf16", 32, "bf16", "bf16"),
              ("v_swmmac_i32_16x16x32_iu8", 32, "iu8", "i32"), ("v_swmmac_i32_16x16x32_iu4", 32, "iu4", "i32"),
              ("v_swmmac_i32_16x16x64_iu4", 64, "iu4", "i32")]
    for a in ("fp8", "bf8"):
        for b in ("fp8", "bf8"):
            sparse.append((f"v_swmmac_f32_16x16x32_{a}_{b}", 32, a, "f32"))
    for name, k, t, o in sparse:
        out[("rdna4", name)] = Wmma(name, "rdna4", k, t, o, sparse=True)
    return out


#: (arch, mnemonic) -> instruction facts
WMMA: dict[tuple[str, str], Wmma] = _table()
WAVES = (32, 64)


def _sparse_b_k(inst: Wmma, wave: int):
    """(values per lane, k(e, lane)) of the dense B of an RDNA4 ``v_swmmac_*``."""
    k = inst.k
    if inst.in_bits == 16:
        if wave == 32:
            return 16, lambda e, l: (e >> 3) * 16 + (l >> 4) * 8 + (e & 7)
        return 8, lambda e, l: (l >> 4) * 8 + e
    if wave == 32:
        return k // 2, lambda e, l: (l >> 4) * (k // 2) + e
    return k // 4, lambda e, l: ((l >> 4) & 1) * (k // 2) + (l >> 5) * (k // 4) + e


def _input_k(inst: Wmma, wave: int, operand: str = "A"):
    """(values per lane, k(e, lane)) for an input operand, or raise if not modelled."""
    if inst.sparse:
        if operand == "B":
            return _sparse_b_k(inst, wave)
        if inst.in_bits == 4 and inst.k == 32 and wave == 64:
            raise UnsupportedError(f"{inst.name} in wave64 ignores lanes 32-63 for A; not modelled")
        # the packed 16 x K/2 A sits as the dense A of a K/2 instruction of the same input type
        inst = Wmma(inst.name, inst.arch, inst.k // 2, inst.in_type, inst.out_type)
    if inst.arch == "rdna3":
        return 16, lambda e, l: e
    bits = inst.in_bits
    if bits == 16:
        if wave == 32:
            return 8, lambda e, l: (e >> 2) * 8 + (l >> 4) * 4 + (e & 3)
        return 4, lambda e, l: (l >> 5) * 8 + ((l >> 4) & 1) * 4 + e
    if bits == 8:
        if wave == 32:
            return 8, lambda e, l: (l >> 4) * 8 + e
        return 4, lambda e, l: (l >> 5) * 4 + ((l >> 4) & 1) * 8 + e
    # 4-bit
    if inst.k == 16:
        if wave == 32:
            return 8, lambda e, l: (l >> 4) * 8 + e
        raise UnsupportedError(f"{inst.name} in wave64 uses only half of the wave; not modelled")
    if wave == 32:
        return 16, lambda e, l: (l >> 4) * 16 + e
    return 8, lambda e, l: (l >> 5) * 8 + ((l >> 4) & 1) * 16 + e


def _output_row(inst: Wmma, wave: int):
    """(values per lane, row(r, lane)) of C/D."""
    if inst.arch == "rdna3":
        per = wave // 16
        return 16 * 16 // wave, lambda r, l: r * per + (l >> 4)
    if wave == 32:
        return 8, lambda r, l: (l >> 4) * 8 + r
    return 4, lambda r, l: ((l >> 4) & 1) * 8 + (l >> 5) * 4 + r


def fragment(inst: Wmma, operand: str, wave: int = 32) -> Fragment:
    """The A, B or C (= D) fragment of one WMMA instruction in wave32 or wave64."""
    suffix = "" if wave == 32 else ".wave64"
    name = f"{inst.arch}.{inst.name}{suffix}.{operand}"
    note = ""
    if operand in ("A", "B"):
        regs, kfun = _input_k(inst, wave, operand)
        if inst.arch == "rdna3":
            note = f"replicated: lanes l, l+16{', l+32, l+48' if wave == 64 else ''} hold the same values"

        def coords(r, lane, warp):
            outer, k = lane % 16, kfun(r, lane)
            return (outer, k) if operand == "A" else (k, outer)

        rows, cols = (16, inst.a_cols) if operand == "A" else (inst.k, 16)
    else:
        regs, rowfun = _output_row(inst, wave)

        def coords(r, lane, warp):
            return rowfun(r, lane), lane % 16

        rows, cols = 16, 16
        if inst.out_bits == 16 and inst.arch == "rdna3":
            note = "16-bit results occupy one half of each VGPR (OPSEL selects which); register counts values"
    return Fragment(name=name, operand=operand, rows=rows, cols=cols, registers=regs, coords=coords,
                    source=f"{CALC} ({'gfx11' if inst.arch == 'rdna3' else 'gfx12'} register rule)",
                    lanes=wave, note=note)


def names() -> list[str]:
    out = []
    for (arch, mn), inst in WMMA.items():
        for wave in WAVES:
            for op in ("A", "B", "C"):
                if arch == "rdna4" and wave == 64 and inst.in_bits == 4 and inst.a_cols == 16 and op == "A":
                    continue
                if arch == "rdna4" and wave == 64 and inst.in_bits == 4 and inst.k == 16 and op == "B":
                    continue
                out.append(f"{arch}.{mn}{'' if wave == 32 else '.wave64'}.{op}")
    return out
