"""The ``mma.sp`` metadata operand ``e`` (operand ``E``) against the PTX ISA's statements and CUTLASS.

ISA statements (§9.7.14.6.1), transcribed here as data independently of the adapter:

* which threads of a group of four hold metadata ("One thread ... a value in {0, 1, 2, 3}",
  "A thread-pair ... either 0 (threads T0, T1) or 1 (threads T2, T3)", "All threads ... must be 0");
* the index width (2 bits per non-zero for 2:4, per non-zero pair for the 4-bit 4:8 types; "the
  4-bit index" for .tf32 1:2) and the 32-bit metadata register.

From these alone: the selected threads' 32-bit registers must hold exactly one index per non-zero
(or pair) of the 16 x K matrix A, so each (row, packed column) is described once.

CUTLASS (``nvidia-cutlass`` headers): ``ELayout`` of ``SM120_SPARSE_16x8x64_TN`` (the
``mma.sp::ordered_metadata.m16n8k64`` f8f6f4 atom) and ``SM120_SPARSE_16x8x128_TN_VS`` (``m16n8k128``
e2m1), and per warp the SM90 ``wgmma.sp`` ``ELayout_64x32`` (16-bit, K 32), ``ELayout_64x16`` (.tf32,
K 16) and ``ELayout_64x64`` (8-bit, K 64): (thread, value) -> dense (M, K), one value per
``32 / values`` metadata bits, in bit order. Each of our index fields must cover exactly the
values of its bits, all in our row and in the dense chunk of our packed column.
"""
import re
from pathlib import Path

import pytest

from layoutverify.adapters import ptx
from layoutverify.adapters.ptx import sparse_meta
from layoutverify.core.errors import LayoutError

# (shape, A type) -> (metadata threads per group, index bits, dense chunk width, non-zeros (pairs for
# 4-bit) per chunk, K) -- ISA §9.7.14.6.1
ISA_META = {
    ("m16n8k16", "f16"): (1, 2, 4, 2, 16), ("m16n8k16", "bf16"): (1, 2, 4, 2, 16),
    ("m16n8k32", "f16"): (2, 2, 4, 2, 32), ("m16n8k32", "bf16"): (2, 2, 4, 2, 32),
    ("m16n8k8", "tf32"): (1, 4, 2, 1, 8), ("m16n8k16", "tf32"): (2, 4, 2, 1, 16),
    ("m16n8k32", "s8"): (2, 2, 4, 2, 32), ("m16n8k32", "u8"): (2, 2, 4, 2, 32),
    **{("m16n8k64", t): (4, 2, 4, 2, 64) for t in ("s8", "u8", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1")},
    ("m16n8k64", "s4"): (2, 2, 8, 2, 64), ("m16n8k64", "u4"): (2, 2, 8, 2, 64),
    **{("m16n8k128", t): (4, 2, 8, 2, 128) for t in ("s4", "u4", "e2m1")},
}


def _cells(layout):
    hw = layout.hardware_indices()
    return {tuple(int(x) for x in h[:2]): tuple(int(v) for v in c) for h, c in zip(hw, layout.table())}


def test_every_metadata_operand_is_modelled():
    assert set(sparse_meta.MMA_SP_E) == set(ISA_META)


@pytest.mark.parametrize("key", sorted(ISA_META))
def test_metadata_follows_the_isa_text(key):
    threads, bits, chunk, nz, k = ISA_META[key]
    frag = ptx.fragment(f"mma.sp.{key[0]}.{key[1]}.E")
    assert frag.registers * bits == 32, "one 32-bit metadata register per thread"
    fields = 16 * (k // chunk) * nz                  # one index per non-zero (pair) of the 16 x K A
    assert fields * bits == threads * 8 * 32, "the selected threads of the 8 groups hold all the indices"
    cells = _cells(frag.layout())
    selected = [t for t in range(4) if t < threads]  # selector 0: T0 / T0,T1 / T0..T3
    seen = set()
    for gid in range(8):
        for t in range(4):
            held = [cells[(j, gid * 4 + t)] for j in range(frag.registers)]
            # the selector chooses among lanes t, t + threads, ...: they must describe the same fields
            assert held == [cells[(j, gid * 4 + t % threads)] for j in range(frag.registers)]
            assert all(row in (gid, gid + 8) for row, _ in held), "a group's metadata is for its rows"
            if t in selected:
                seen.update(held)
    assert len(seen) == fields == 16 * frag.cols, "each non-zero (pair) of A is indexed exactly once"
    a = ptx.fragment(f"mma.sp.{key[0]}.{key[1]}.A")
    assert frag.cols == (a.cols // 2 if chunk == 8 else a.cols), "E columns are A's packed columns (pairs)"


def _header(name):
    try:
        import cutlass_library
    except ImportError:
        pytest.skip("nvidia-cutlass not installed")
    p = Path(cutlass_library.__file__).parent / "source/include/cute/atom" / name
    if not p.exists():
        pytest.skip(f"{name} not in this nvidia-cutlass")
    return p.read_text()


def _elayout(text, anchor):
    """The first ``using ELayout = Layout<...>;`` (or ``using anchor = ...``) after ``anchor``."""
    i = text.index(anchor)
    m = re.search(r"using ELayout\w*\s*=\s*(Layout<.*?>)\s*;", text[i:], re.S)
    assert m, anchor
    from layoutverify.adapters.cute.interp import evaluate_text
    return evaluate_text(" ".join(m.group(1).split()))


CUTLASS_E = [
    # (header, anchor, rows M of the ELayout, our fragment)
    ("mma_traits_sm120_sparse.hpp", "struct MMA_Traits<SM120::SPARSE::SM120_SPARSE_16x8x64_TN<", 16,
     "mma.sp::ordered_metadata.m16n8k64.e4m3.E"),
    ("mma_traits_sm120_sparse.hpp", "SM120_SPARSE_16x8x128_TN_VS<a_type, b_type, c_type, sf_type, VS>>\n{", 16,
     "mma.sp::ordered_metadata.m16n8k128.e2m1.E"),
    ("mma_traits_sm90_gmma_sparse.hpp", "using ELayout_64x32", 64, "mma.sp.m16n8k32.f16.E"),
    ("mma_traits_sm90_gmma_sparse.hpp", "using ELayout_64x16", 64, "mma.sp.m16n8k16.tf32.E"),
    ("mma_traits_sm90_gmma_sparse.hpp", "using ELayout_64x64", 64, "mma.sp.m16n8k64.s8.E"),
]


@pytest.mark.parametrize("header,anchor,m,name", CUTLASS_E, ids=[c[3] for c in CUTLASS_E])
def test_metadata_matches_cutlass_elayout(header, anchor, m, name):
    text = _header(header)
    tv = _elayout(text, anchor)
    frag = ptx.fragment(name)
    shape, atype = frag.name.split(".")[2:4]
    _, bits, chunk, nz, _ = ISA_META[(shape, atype)]
    n_thr, n_val = tv.mode(0).size(), tv.mode(1).size()
    assert n_thr in (32, 128) and (bits * n_val) % 32 == 0
    vals_per_field = bits * n_val // 32
    cells = _cells(frag.layout())
    for lane in range(32):                               # warp 0 of a warpgroup atom
        for j in range(frag.registers):
            row, pc = cells[(j, lane)]
            dense = [int(tv(lane + n_thr * v)) for v in range(j * vals_per_field, (j + 1) * vals_per_field)]
            assert {d % m for d in dense} == {row}, (lane, j, row, [(d % m, d // m) for d in dense])
            assert {(d // m) // chunk for d in dense} == {pc // nz}, (lane, j, pc, [d // m for d in dense])
            assert j % nz == pc % nz, "indices of one chunk in bit order"


def test_metadata_operand_names_and_errors():
    assert ptx.fragment("mma.sp.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32.E").name == "mma.sp.m16n8k32.bf16.E"
    with pytest.raises(LayoutError, match="f32"):
        ptx.fragment("mma.sp.m16n8k16.f32.E")
    with pytest.raises(LayoutError):
        ptx.fragment("mma.m16n8k16.f16.E")             # dense mma has no metadata operand


# wgmma.sp metadata of the whole warpgroup (128 threads) against CUTLASS's SM90 sparse GMMA ELayouts
WGMMA_E = [
    # (ELayout name, our fragment, (index bits, dense chunk width, non-zeros per chunk))
    ("ELayout_64x32", "wgmma.sp.m64n64k32.f16.E", (2, 4, 2)),
    ("ELayout_64x32", "wgmma.sp.m64n256k32.bf16.E", (2, 4, 2)),
    ("ELayout_64x16", "wgmma.sp.m64n8k16.tf32.E", (4, 2, 1)),
    ("ELayout_64x64", "wgmma.sp.m64n128k64.e4m3.E", (2, 4, 2)),
    ("ELayout_64x64", "wgmma.sp.m64n64k64.s8.E", (2, 4, 2)),
]


@pytest.mark.parametrize("elayout,name,facts", WGMMA_E, ids=[c[1] for c in WGMMA_E])
def test_wgmma_sp_metadata_matches_cutlass_for_the_warpgroup(elayout, name, facts):
    text = _header("mma_traits_sm90_gmma_sparse.hpp")
    m = re.search(rf"using {elayout}\s*=\s*(Layout<.*?>)\s*;", text, re.S)
    assert m, elayout
    from layoutverify.adapters.cute.interp import evaluate_text
    tv = evaluate_text(" ".join(m.group(1).split()))
    bits, chunk, nz = facts
    frag = ptx.fragment(name)
    assert (frag.rows, frag.layout().hardware_indices().shape[0]) == (64, frag.registers * 128)
    n_thr, n_val = tv.mode(0).size(), tv.mode(1).size()
    assert n_thr == 128 and (bits * n_val) % 32 == 0
    per_field = bits * n_val // 32
    cells = {tuple(int(x) for x in h[:3]): tuple(int(v) for v in c)
             for h, c in zip(frag.layout().hardware_indices(), frag.layout().table())}
    covered = set()
    for thread in range(128):
        lane, warp = thread % 32, thread // 32
        for j in range(frag.registers):
            row, pc = cells[(j, lane, warp)]
            dense = [int(tv(thread + n_thr * v)) for v in range(j * per_field, (j + 1) * per_field)]
            assert {d % 64 for d in dense} == {row}, (thread, j, row, [(d % 64, d // 64) for d in dense])
            assert {(d // 64) // chunk for d in dense} == {pc // nz}, (thread, j, pc, [d // 64 for d in dense])
            assert j % nz == pc % nz, "indices of one chunk in bit order"
            covered.update(dense)
    # every dense (row, k) of the 64 x K A is described (by the selected threads of CuTe's stride-0 modes)
    k = int(name.split("k")[1].split(".")[0])
    assert covered == set(range(64 * k))


def test_wgmma_sp_metadata_names_and_errors():
    assert ptx.fragment("wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.bf16.bf16.E").name == \
        "wgmma.sp.m64n64k32.bf16.E"
    # N does not change the metadata
    a, b = ptx.fragment("wgmma.sp.m64n64k32.f16.E"), ptx.fragment("wgmma.sp.m64n256k32.f16.E")
    assert (a.layout().table() == b.layout().table()).all()
    for bad in ("wgmma.sp.m64n64k32.f32.E", "wgmma.sp.m64n64k32.tf32.E", "wgmma.sp.m64n64k16.f16.E"):
        with pytest.raises(LayoutError):
            ptx.fragment(bad)
    # warp 0 of the warpgroup is the mma.sp metadata of the same chunking
    for wg, mma in (("wgmma.sp.m64n64k32.f16.E", "mma.sp.m16n8k32.f16.E"),
                    ("wgmma.sp.m64n64k16.tf32.E", "mma.sp.m16n8k16.tf32.E"),
                    ("wgmma.sp.m64n64k64.e5m2.E", "mma.sp.m16n8k64.e5m2.E")):
        w, s = ptx.fragment(wg), ptx.fragment(mma)
        cw = {tuple(int(x) for x in h[:3]): tuple(int(v) for v in c)
              for h, c in zip(w.layout().hardware_indices(), w.layout().table())}
        for (j, lane), cell in _cells(s.layout()).items():
            for warp in range(4):
                assert cw[(j, lane, warp)] == (cell[0] + 16 * warp, cell[1])
