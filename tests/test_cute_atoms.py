"""Every MMA and copy atom of the CuTe catalogue is proven equal to the PTX fragment it issues.

Expected values come from the PTX ISA: the ``layoutverify.adapters.ptx`` adapter transcribes the ISA's
fragment formulas, and a few of them are written again here, independently, from the ISA text
(``groupID = %laneid >> 2``, ``threadID_in_group = %laneid % 4``). The catalogue itself is checked
against CUTLASS's C++ traits in ``test_cute_algebra_cpp.py``; here its *meaning* is checked.

Each atom names the instruction it issues (``atoms.toml``: ``ptx``, from CUTLASS's
``cute/arch/*.hpp`` asm strings); the PTX fragment of operand X is ``<ptx>.X`` (``D`` for a
wgmma accumulator). The qualifiers ``.satfinite`` and ``.xor.popc`` do not change fragments and are
dropped before asking the PTX adapter (its grammar does not take them after the types, where
CUTLASS writes them).

Known disagreement, asserted: CUTLASS 4.2's ``SM80_16x8x32_S32S4S4S32_TN`` (and its U4 variants)
has ``BLayout`` stride ``(32,1)`` for the thread mode where the ISA needs ``(64,1)``: threads 0 and
1 of a group both hold k = 4..7 and k = 20..31 has no holder. The checker reports
``different_tensors`` with such an element. CUTLASS fixed it after 4.2 (NVIDIA/cutlass PR #3140).
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from layoutverify.adapters.cute import parse
from layoutverify.adapters.cute.atoms import copy_atoms, mma_atoms
from layoutverify.core import expr as E
from layoutverify.core.layout import Layout

ptx = pytest.importorskip("layoutverify.adapters.ptx")
compare_mod = pytest.importorskip("layoutverify.core.compare")
compare = compare_mod.compare

#: atoms whose CUTLASS 4.2 traits disagree with the ISA (see the module docstring)
CUTLASS_BUGS = {
    ("SM80_16x8x32_S32S4S4S32_TN", "B"): "NVIDIA/cutlass PR #3140: BLayout thread stride 32 should be 64",
    ("SM80_16x8x32_S32U4U4S32_TN", "B"): "inherits SM80_16x8x32_S32S4S4S32_TN's BLayout (PR #3140)",
}


def ptx_name(instr: str, operand: str) -> str:
    instr = re.sub(r"\.satfinite$", "", instr)
    instr = re.sub(r"\.(xor|and)\.popc$", "", instr)
    if instr.startswith("wgmma") and operand == "C":
        operand = "D"
    return f"{instr}.{operand}"


MMA_CASES = [(name, op) for name, atom in sorted(mma_atoms().items()) for op in atom.operands()]
COPY_CASES = sorted(copy_atoms())


def test_catalogue_covers_the_brief():
    names = set(mma_atoms())
    for n in ["SM70_8x8x4_F32F16F16F32_TN", "SM75_16x8x8_F32F16F16F32_TN", "SM80_16x8x8_F32F16F16F32_TN",
              "SM80_16x8x16_F32F16F16F32_TN", "SM80_16x8x16_F32BF16BF16F32_TN", "SM80_16x8x4_F32TF32TF32F32_TN",
              "SM80_16x8x8_F32TF32TF32F32_TN", "SM80_16x8x16_S32S8S8S32_TN", "SM80_16x8x32_S32S8S8S32_TN",
              "SM80_16x8x32_S32S4S4S32_TN", "SM80_16x8x64_S32S4S4S32_TN", "SM80_8x8x4_F64F64F64F64_TN"]:
        assert n in names, n
    for n in (8, 16, 64, 128, 256):
        assert f"SM90_64x{n}x16_F32F16F16_SS" in names and f"SM90_64x{n}x16_F32F16F16_RS" in names
    assert {"SM75_U32x1_LDSM_N", "SM75_U32x2_LDSM_N", "SM75_U32x4_LDSM_N", "SM75_U16x2_LDSM_T",
            "SM75_U16x4_LDSM_T", "SM75_U16x8_LDSM_T"} <= set(copy_atoms())


@pytest.mark.parametrize("name,op", MMA_CASES, ids=[f"{n}.{o}" for n, o in MMA_CASES])
def test_mma_atom_equals_ptx_fragment(name, op):
    atom = mma_atoms()[name]
    ours = parse(f"{name}.{op}")
    spec = ptx.parse(ptx_name(atom.ptx, op))
    res = compare(ours, spec)
    if (name, op) in CUTLASS_BUGS:
        assert res.verdict == "different_tensors", CUTLASS_BUGS[(name, op)]
        # the witness is a real element: k held by one side and not the other
        el = res.witness["element"]
        holders_ours = (ours.flat_table() == el[0] * ours.shape[1] + el[1]).sum()
        holders_spec = (spec.flat_table() == el[0] * spec.shape[1] + el[1]).sum()
        assert (holders_ours == 0) != (holders_spec == 0)
        return
    assert res.verdict == "equal", f"{name}.{op} vs {ptx_name(atom.ptx, op)}: {res.verdict} {res.witness}"


@pytest.mark.parametrize("name", COPY_CASES)
def test_copy_atom_equals_ptx_fragment(name):
    atom = copy_atoms()[name]
    ours = parse(name)                       # the register side (Dst of ldmatrix, Src of stmatrix)
    spec = ptx.parse(atom.ptx)
    res = compare(ours, spec)
    assert res.verdict == "equal", f"{name} vs {atom.ptx}: {res.verdict} {res.witness}"


def test_equal_verdicts_agree_with_tables():
    """The explicit-table strategy agrees with the automatic one on a spread of atoms."""
    for name, op in MMA_CASES[::17]:
        atom = mma_atoms()[name]
        ours, spec = parse(f"{name}.{op}"), ptx.parse(ptx_name(atom.ptx, op))
        assert compare(ours, spec, method="table").verdict == compare(ours, spec).verdict


# ---------------------------------------------------------------------------------------------
# independent transcriptions of the ISA (PTX ISA 8.x, "Matrix Fragments for mma.m16n8k16")
# ---------------------------------------------------------------------------------------------
def _isa_layout(registers, rows, cols, row_col):
    r, lane = np.meshgrid(np.arange(registers), np.arange(32), indexing="ij")
    r, lane = r.T.ravel(), lane.T.ravel()          # register fastest
    # flat order: register fastest, then lane
    order = np.argsort(lane * registers + r, kind="stable")
    r, lane = r[order], lane[order]
    group, tig = lane >> 2, lane % 4
    row, col = row_col(r, group, tig)
    return Layout.from_table([("register", registers), ("lane", 32), ("warp", 1), ("block", 1)],
                             [("dim0", rows), ("dim1", cols)], np.stack([row, col], axis=1))


ISA = {
    # A f16: row = groupID for a0,a1,a4,a5 else +8; col = tig*2 + (i & 1), + 8 for i >= 4
    "SM80_16x8x16_F32F16F16F32_TN.A": (8, 16, 16, lambda i, g, t: (g + 8 * ((i >> 1) & 1), t * 2 + (i & 1) + 8 * (i >> 2))),
    # B f16: row = tig*2 + (i & 1), + 8 for i >= 2; col = groupID
    "SM80_16x8x16_F32F16F16F32_TN.B": (4, 16, 8, lambda i, g, t: (t * 2 + (i & 1) + 8 * (i >> 1), g)),
    # C: row = groupID for c0,c1 else +8; col = tig*2 + (i & 1)
    "SM80_16x8x16_F32F16F16F32_TN.C": (4, 16, 8, lambda i, g, t: (g + 8 * (i >> 1), t * 2 + (i & 1))),
    # tf32 m16n8k8 A: row = groupID for a0,a2 else +8; col = tig for a0,a1 else +4
    "SM80_16x8x8_F32TF32TF32F32_TN.A": (4, 16, 8, lambda i, g, t: (g + 8 * (i & 1), t + 4 * (i >> 1))),
    # int8 m16n8k32 A: row = groupID for a0..a3, a8..a11 else +8; col = tig*4 + (i & 3), +16 for i >= 8
    "SM80_16x8x32_S32S8S8S32_TN.A": (16, 16, 32, lambda i, g, t: (g + 8 * ((i >> 2) & 1), t * 4 + (i & 3) + 16 * (i >> 3))),
    # f64 m8n8k4 A: row = groupID, col = tig
    "SM80_8x8x4_F64F64F64F64_TN.A": (1, 8, 4, lambda i, g, t: (g, t)),
}


@pytest.mark.parametrize("spec", sorted(ISA))
def test_atoms_against_isa_formulas_written_here(spec):
    regs, rows, cols, fn = ISA[spec]
    expected = _isa_layout(regs, rows, cols, fn)
    ours = parse(spec)
    assert ours.in_sizes == expected.in_sizes and ours.out_sizes == expected.out_sizes
    assert np.array_equal(ours.table(), expected.table())


def test_ldmatrix_x4_trans_from_the_isa():
    """``.trans``: lane l holds column l >> 2, rows 2*(l % 4) + j of each matrix (j = half of r_m)."""
    ours = parse("SM75_U16x8_LDSM_T")
    t = ours.table()
    hw = ours.hardware_indices()
    reg, lane = hw[:, 0], hw[:, 1]
    m, j = reg >> 1, reg & 1
    assert np.array_equal(t[:, 0], 8 * m + 2 * (lane % 4) + j)
    assert np.array_equal(t[:, 1], lane >> 2)


# ---------------------------------------------------------------------------------------------
# structure of the canonical forms
# ---------------------------------------------------------------------------------------------
def test_sm70_quadpairs_replicate():
    """SM70's ThrID (4,2):(1,16): each quadpair runs its own 8x8x4 product, so every element of
    the fragment has 4 holders, one per quadpair, and lanes 0 and 4 hold the same elements."""
    lay = parse("SM70_8x8x4_F32F16F16F32_TN.C")
    assert lay.in_sizes == (8, 32, 1, 1)
    assert (lay.holder_counts() == 4).all()
    t = lay.table().reshape(32, 8, 2)     # [lane][register]
    assert np.array_equal(t[0], t[4]) and np.array_equal(t[16], t[20])
    assert not np.array_equal(t[0], t[16])


def test_b_is_transposed_to_k_by_n():
    lay = parse("SM80_16x8x16_F16F16F16F16_TN.B")
    assert lay.shape == (16, 8)          # K x N, as in the ISA; CuTe's own tile is N x K


def test_gmma_warpgroup_dims():
    lay = parse("SM90_64x256x16_F32F16F16_SS.C")
    assert lay.in_sizes == (128, 32, 4, 1) and lay.shape == (64, 256)
    a = parse("SM90_64x64x16_F32F16F16_RS.A")
    assert a.in_sizes == (8, 32, 4, 1) and a.shape == (64, 16)


def test_gmma_n96_is_not_f2_but_still_equal():
    lay = parse("SM90_64x96x16_F32F16F16_SS.C")
    assert not lay.is_f2_linear()         # N/8 = 12 value repetitions
    assert compare(lay, ptx.parse("wgmma.m64n96k16.f32.f16.f16.D")).verdict == "equal"


@pytest.mark.parametrize("name", ["SM80_16x8x16_F32F16F16F32_TN", "SM75_16x8x8_F32F16F16F32_TN",
                                  "SM70_8x8x4_F32F16F16F32_NT", "SM80_8x8x4_F64F64F64F64_TN",
                                  "SM90_64x32x16_F32F16F16_RS"])
def test_tiled_mma_of_one_atom_is_the_atom(name):
    """Two code paths: the atom read through ThrID, and CuTe's TiledMMA algebra with a 1x1x1 layout."""
    for op in mma_atoms()[name].operands():
        a = parse(f"{name}.{op}")
        b = parse(f"tiled_mma({name}, (1,1,1), {op})")
        assert compare(a, b).verdict == "equal", (name, op)
