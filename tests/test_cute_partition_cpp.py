"""``partition_A/B`` of a GMMA ``_SS`` atom over a shared-memory layout, against compiled CuTe C++
(``make_tiled_mma(atom).get_slice(t).partition_A(make_tensor(make_smem_ptr(...), sA))``, its
position-independent layout): the partition's modes (``((AtomM, AtomK), RestM, RestK)``) print as
C++'s, and every coordinate lands on the same element offset through the swizzle."""
from __future__ import annotations

import random

import pytest

from cute_cpp import harness
from layoutverify.adapters.cute import evaluate, parse
from layoutverify.adapters.cute.cutlass_traits import HEADERS, cpp_mma_type
from layoutverify.core.errors import LayoutError

#: draws we refuse (and CuTe C++ rejects at compile time: "Shape/Stride Divisibility Condition")
REFUSED: list[str] = []


def _cases(seed: int = 7):
    rng = random.Random(seed)
    out = []
    atoms = ["SM90_64x64x16_F16F16F16_SS", "SM90_64x128x16_F32F16F16_SS", "SM90_64x32x16_F32BF16BF16_SS",
             "SM90_64x256x16_F16F16F16_SS", "SM90_64x96x16_F32F16F16_SS"]
    smem = [f"Layout_{m}_{s}_Atom" for m in ("K", "MN") for s in ("INTER", "SW32", "SW64", "SW128")]
    # the 16-bit GMMA smem atoms' extents (rows x cols of an M/N x K operand): K-major atoms are
    # 8 x (8, 16, 32, 64), MN-major atoms (8, 16, 32, 64) x 8
    ext = {"INTER": 8, "SW32": 16, "SW64": 32, "SW128": 64}
    i = 0
    while len(out) < 32:
        atom = rng.choice(atoms)
        op = rng.choice("AB")
        m, n = 64, int(atom.split("x")[1])
        rows = (m if op == "A" else n) * rng.choice([1, 2])
        cols = 16 * rng.choice([1, 2, 4])
        sm = rng.choice(smem)
        w = ext[sm.split("_")[2]]
        if (cols % w if "_K_" in sm else rows % w):
            continue                           # tile_to_shape's static_assert: the atom must divide the tile
        text = f"partition_{op}({atom}, tile_to_shape(GMMA::{sm}<half_t>, ({rows},{cols})))"
        try:
            evaluate(text)
        except LayoutError:
            REFUSED.append(text)               # CuTe's divisibility static_asserts: C++ would not compile it
            continue
        i = len(out)
        thread = rng.randrange(128)
        cpp = ("{ auto s_ = tile_to_shape(GMMA::%s<half_t>{}, make_shape(I(%d),I(%d)));"
               " auto m_ = make_tiled_mma(%s{});"
               " auto t_ = m_.get_slice(%d).partition_%s(make_tensor(make_smem_ptr((half_t*)nullptr), s_));"
               ' emit("p%d", as_position_independent_swizzle_tensor(t_).layout()); }'
               % (sm, rows, cols, cpp_mma_type(atom), thread, op, i))
        out.append((f"p{i}", text, cpp))
    return out


CASES = _cases()


@pytest.fixture(scope="module")
def cpp():
    tc = harness.toolchain()
    if isinstance(tc, str):
        pytest.skip(tc)
    exe = harness.build({"partition": harness.program([(cid, c) for cid, _, c in CASES], extra_headers=HEADERS)},
                        tc)["partition"]
    return harness.run(exe)


@pytest.mark.parametrize("cid,text", [(c[0], c[1]) for c in CASES], ids=[c[0] for c in CASES])
def test_partition_matches_cute_cpp(cpp, cid, text):
    printed, table = cpp[cid]
    ours = evaluate(text)
    if " o _0 o " in printed:
        c_inner = printed.split(" o _0 o ", 1)[1]
    else:                                   # INTERleaved atoms: C++ drops the identity swizzle Sw<0,4,3>
        c_inner = printed
        assert ours.outer.is_identity(), (text, printed)
    assert str(ours.inner) == harness.plain(c_inner), f"{text}\n  C++: {printed}\n  ours: {ours}"
    assert [int(x) for x in ours.offsets()] == table, text
    lay = parse(text)                    # a memory layout: offset -> partition coordinate
    assert lay.kind == "memory"


def test_register_operands_are_not_shared_memory():
    from layoutverify.core.errors import UnsupportedError
    with pytest.raises(UnsupportedError, match="_RS"):
        evaluate("partition_A(SM90_64x64x16_F32F16F16_RS, tile_to_shape(GMMA::Layout_K_SW128_Atom<half_t>, (64,64)))")


def test_refused_draws_are_divisibility_failures():
    """e.g. an MN-major 64-row swizzle atom tiled to 192 rows cannot be split in N = 96 tiles: C++'s
    static_assert "Shape Divisibility Condition"; we say the same, naming the shapes."""
    for text in REFUSED:
        with pytest.raises(LayoutError, match="divisibility"):
            evaluate(text)
