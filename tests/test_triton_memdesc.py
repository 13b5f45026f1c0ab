"""``!ttg.memdesc`` reading (allocation shape, buffer dims, MemDescType::verify's checks),
``partitioned_shared``, and the encodings Triton rejects that we used to accept.

Expected values: Triton's ``toLinearLayout(MemDescType)`` reads ``allocShape.take_back(rank)``
(LinearLayoutConversions.cpp); ``partitionedSharedToLinearLayout``'s documented example
("Partition 0: [P0|P2|P4|P6], Partition 1: [P1|P3|P5|P7]"); the installed Triton where it answers.
"""
from __future__ import annotations

import numpy as np
import pytest

from layoutverify.adapters import triton as T
from layoutverify.core.errors import LayoutError

from triton_oracle import have_triton

SW = "#ttg.swizzled_shared<{vec = 2, perPhase = 2, maxPhase = 4, order = [1, 0]}>"


def _md(shape, enc=SW, rest="#ttg.shared_memory, mutable"):
    return f"!ttg.memdesc<{shape}xf16, {enc}, {rest}>"


def test_subslice_view_reads_the_allocation():
    """A 64x64 view of a 128x128 allocation is the allocation's layout (Triton's take_back)."""
    view = T.parse(_md("64x64", rest="#ttg.shared_memory, mutable, 128x128"))
    whole = T.parse(_md("128x128"))
    assert view.f2_bases() == whole.f2_bases()
    assert view.view_shape == (64, 64) and view.layout_shape == (128, 128) and view.buffers == ()
    assert "128x128 allocation" in view.name


def test_one_buffer_of_a_multibuffered_allocation():
    one = T.parse(_md("64x16", rest="#ttg.shared_memory, mutable, 3x64x16"))
    assert one.f2_bases() == T.parse(_md("64x16")).f2_bases()


def test_three_buffers_are_consecutive_copies():
    """3 buffers (not a power of two): offset o holds buffer o // 1024, the one-buffer layout at o % 1024."""
    lay = T.parse(_md("3x64x16"))
    one = T.parse(_md("64x16"))
    assert lay.buffers == (3,) and lay.in_dims == (("offset", 3 * 1024),)
    assert not lay.is_f2_linear() and lay.is_bijective()
    t = lay.table()
    off = np.arange(3 * 1024)
    assert (t[:, 0] == off // 1024).all()
    assert (t[:, 1:] == one.table()[off % 1024]).all()


@pytest.mark.parametrize("text,words", [
    (_md("64x64", rest="mutable"), ["memory space"]),
    ("!ttg.memdesc<64x64xf16, " + SW + ">", ["memory space"]),
    (_md("64x64", rest="#ttng.tensor_memory"), ["SharedMemorySpace"]),
    (_md("64x64", rest="#ttg.shared_memory, 32x64"), ["larger than its allocation"]),
    (_md("64x48"), ["power of two"]),
    (_md("64", enc=SW), ["rank 2", "64"]),
    ("!ttg.memdesc<4x4xf32, #ttg.shared_linear<{offset = [[0, 1], [0, 2], [1, 0], [2, 0]], block = [], "
     "alignment = 16}>, #ttg.shared_memory>", ["alignment must be specified outside"]),
    ("tensor<4xi32, #ttg.linear<{register = [[1], [3]], lane = [], warp = [], block = []}>>",
     ["permutation matrix"]),
])
def test_rejected_as_triton_rejects(text, words):
    with pytest.raises(LayoutError) as e:
        T.parse(text)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_partitioned_follows_tritons_documented_example():
    """numPartitions = 2, numGroups = 4, shape [128, 32], partitionDim = 0: 8 pieces of 16 rows;
    partition 0 holds pieces 0, 2, 4, 6 one after the other, partition 1 pieces 1, 3, 5, 7."""
    inner = "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>"
    lay = T.parse(f"!ttg.memdesc<128x32xf16, #ttg.partitioned_shared<{{numPartitions = 2, numGroups = 4, "
                  f"partitionDim = 0, partitionLayout = {inner}}}>, #ttg.shared_memory>")
    assert lay.in_dims == (("offset", 2048), ("partition", 2), ("block", 1))
    hw = lay.hardware_indices()
    rows = lay.table()[:, 0]
    piece = rows // 16
    partition, group = hw[:, 1], hw[:, 0] // (16 * 32)
    assert (piece == partition + 2 * group).all()


@pytest.mark.skipif(not have_triton(), reason="needs the installed Triton")
def test_partitioned_offsets_match_triton():
    inner = "#ttg.swizzled_shared<{vec = 2, perPhase = 1, maxPhase = 4, order = [1, 0]}>"
    texts = [f"!ttg.memdesc<{s}xf16, #ttg.partitioned_shared<{{numPartitions = {p}, numGroups = {g}, "
             f"partitionDim = {d}, partitionLayout = {inner}}}>, #ttg.shared_memory>"
             for s, p, g, d in (("64x32", 2, 2, 0), ("64x64", 4, 1, 1), ("128x32", 2, 4, 0), ("32x128", 2, 2, 1))]
    theirs = T.native_many([(t, None) for t in texts], lenient=True)
    for t, th in zip(texts, theirs):
        assert not isinstance(th, Exception), th
        ours = T.parse(t).f2_bases()
        assert {"offset": ours["offset"], "block": ours["block"]} == th.f2_bases(), t


GENERIC = [
    "tensor<32xf16, #ttg<linear<{register=[], lane=[[1],[2],[4],[8],[16]], warp=[], block=[]}>>>",
    "tensor<64x32xf16, #ttg<blocked<{sizePerThread=[1, 2],threadsPerWarp=[8, 4],warpsPerCTA=[2, 2],order=[1, 0]}>>>",
    "!ttg.memdesc<64x32xf16, #ttg<swizzled_shared<{vec = 2, perPhase = 1, maxPhase = 4, order = [1, 0]}>>, "
    "#ttg<shared_memory>>",
]


@pytest.mark.parametrize("text", GENERIC)
def test_generic_mlir_spelling_is_the_same_attribute(text):
    """``#ttg<linear<...>>`` is MLIR's generic form of ``#ttg.linear<...>``; Triton reads both."""
    pretty = text.replace("#ttg<", "#ttg.", 1)
    pretty = pretty.replace(">>>", ">>", 1) if pretty.startswith("tensor") else pretty
    if pretty.startswith("!"):
        pretty = pretty.replace("}>>, #ttg<shared_memory>>", "}>, #ttg.shared_memory>")
    assert T.parse(text).f2_bases() == T.parse(pretty).f2_bases()


@pytest.mark.skipif(not have_triton(), reason="needs the installed Triton")
def test_generic_spelling_matches_triton():
    theirs = T.native_many([(t, None) for t in GENERIC[:2]], lenient=True)
    for t, th in zip(GENERIC, theirs):
        assert not isinstance(th, Exception), th
        assert T.parse(t).f2_bases() == th.f2_bases()


def test_linear_with_a_key_triton_skips():
    """async_ops_to_llvm_gfx1250.mlir:144 writes ``order = [1, 0]`` in a #ttg.linear; Triton's parser
    skips it (checked by tests/test_triton_lit.py); we read the same bases and name the key."""
    base = "tensor<32xf16, #ttg.linear<{register=[], lane=[[1],[2],[4],[8],[16]], warp=[], block=[]%s}>>"
    lay = T.parse(base % ", order = [0]")
    assert lay.f2_bases() == T.parse(base % "").f2_bases()
    assert "'order'" in lay.name and "ignores" in lay.name
    with pytest.raises(LayoutError, match="block"):
        T.parse("tensor<32xf16, #ttg.linear<{register=[], lane=[[1],[2],[4],[8],[16]], warp=[]}>>")


@pytest.mark.skipif(not have_triton(), reason="needs the installed Triton")
def test_native_of_a_multibuffered_memdesc_agrees_with_parse():
    """Triton answers for one buffer; native() repeats it per buffer, so `show --native` agrees."""
    for text in (_md("2x64x16"), _md("3x64x16")):
        ours, theirs = T.parse(text), T.native(text)
        assert ours.out_dims == theirs.out_dims and ours.fingerprint() == theirs.fingerprint(), text
