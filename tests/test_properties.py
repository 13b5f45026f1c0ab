"""Properties of one layout (verifier/core/properties.py), against hand-derived facts.

Triton bases below are the ones Triton's ``to_linear_layout`` prints for the named encodings
(e.g. DESIGN.md §2 shows BlockedLayout([2, 2], [8, 4], [1, 2], [1, 0]) on 16 x 16).
"""
from __future__ import annotations

import numpy as np
import pytest

from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout
from layoutverify.core.properties import access_pattern, properties, replication

# BlockedLayout([2, 2], [8, 4], [1, 2], [1, 0]) on [16, 16], as printed by Triton (DESIGN.md §2)
BLOCKED = Layout.from_bases({"register": [[0, 1], [1, 0]], "lane": [[0, 2], [0, 4], [2, 0], [4, 0], [8, 0]],
                             "warp": [[0, 8]], "block": []}, [16, 16])


def test_bijective_blocked_layout():
    p = properties(BLOCKED)
    assert (p["injective"], p["surjective"], p["bijective"], p["f2_linear"]) == (True, True, True, True)
    assert p["holders"] == {"min": 1, "max": 1}
    assert p["replication"] == {"register": 1, "lane": 1, "warp": 1, "block": 1}
    assert p["registers_per_thread"] == 4 and p["threads"] == 64
    assert p["contiguity"] == 2  # sizePerThread 2 along the last dim
    assert p["zero_bases"] == {"register": [], "lane": [], "warp": [], "block": []}


def test_zero_basis_doubles_replication():
    # BlockedLayout([1, 1], [8, 4], [4, 1], [1, 0]) on 16 x 4: the CTA tile is 32 x 4, so warps
    # 0/2 and 1/3 hold the same rows (a zero warp basis)
    lay = Layout.from_bases({"register": [], "lane": [[0, 1], [0, 2], [1, 0], [2, 0], [4, 0]],
                             "warp": [[8, 0], [0, 0]]}, [16, 4])
    p = properties(lay)
    assert p["replication"] == {"register": 1, "lane": 1, "warp": 2}
    assert p["zero_bases"]["warp"] == [1]
    assert (p["injective"], p["surjective"]) == (False, True)
    assert p["holders"] == {"min": 2, "max": 2} and p["replication_uniform"]


def test_equal_bases_replicate_through_the_kernel():
    # lane bits 3 and 4 both map to row 1: lanes l and l ^ 0b11000 hold the same element
    lay = Layout.from_bases({"register": [[0, 1]], "lane": [[0, 2], [0, 4], [0, 8], [1, 0], [1, 0]]}, [2, 16])
    p = properties(lay)
    assert p["replication"]["lane"] == 2 and p["replication"]["register"] == 1
    assert p["zero_bases"]["lane"] == []


def test_partial_layout():
    lay = Layout.from_bases({"register": [[0, 1]], "lane": [[0, 0], [1, 0]]}, [4, 2])
    p = properties(lay)
    assert not p["surjective"] and p["uncovered"] == 4 and p["uncovered_example"] == [2, 0]
    assert p["holders"]["min"] == 2


def test_non_f2_and_non_uniform_replication():
    # mixed radix with 3 warps: not F2; a table where only lanes 0 and 1 share an element
    lay = Layout.from_modes([("register", 2), ("lane", 4), ("warp", 3)], [3, 8],
                            {"register": [(2, [0, 1])], "lane": [(4, [0, 2])], "warp": [(3, [1, 0])]})
    p = properties(lay)
    assert not p["f2_linear"] and p["bijective"] and "zero_bases" not in p
    t = Layout.from_table([("lane", 4)], [4], [[0], [0], [1], [2]])
    rep, uniform = replication(t)
    assert rep == {"lane": 2} and not uniform


def test_memory_layout_bank_conflicts():
    row_major = Layout.from_bases({"offset": [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16],
                                              [1, 0], [2, 0], [4, 0], [8, 0], [16, 0]]}, [32, 32])
    p = properties(row_major, element_bits=32)
    assert p["kind"] == "memory" and p["bijective"]
    b = p["bank_conflicts"]
    # row: 32 consecutive words; column: word 32 l for lane l, all in bank 0
    assert b["row"]["conflict_ways"] == 1 and b["column"]["conflict_ways"] == 32
    # 16-byte vectors along a row: 4 quarter-warp phases, one wavefront each
    assert (b["row_vector"]["vector"], b["row_vector"]["wavefronts"], b["row_vector"]["conflict_ways"]) == (4, 4, 1)
    # XOR swizzle (offset bits 0-4 of the column XOR the row): the column read is conflict-free
    swz = Layout.from_bases({"offset": [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16],
                                        [1, 1], [2, 2], [4, 4], [8, 8], [16, 16]]}, [32, 32])
    assert properties(swz, element_bits=32)["bank_conflicts"]["column"]["conflict_ways"] == 1


def test_fp16_column_read_of_a_128_byte_row_is_32_way():
    # 64 x 64 f16 row-major: rows are 128 bytes, so (l, 0) for lanes 0..31 is word 32 l: bank 0
    lay = Layout.from_bases({"offset": [[0, 1 << i] for i in range(6)] + [[1 << i, 0] for i in range(6)]}, [64, 64])
    b = properties(lay, element_bits=16)["bank_conflicts"]
    assert b["column"]["conflict_ways"] == 32 and b["row"]["conflict_ways"] == 1
    assert b["row_vector"]["vector"] == 8


def test_access_pattern_orders():
    lay = access_pattern([4, 16], order="row")
    t = {tuple(int(x) for x in hw): tuple(int(x) for x in el) for hw, el in zip(lay.hardware_indices(), lay.table())}
    assert t[(0, 5)] == (0, 5) and t[(1, 0)] == (2, 0)  # register 1 starts at flat 32
    col = access_pattern([4, 16], order="column")
    t = {tuple(int(x) for x in hw): tuple(int(x) for x in el) for hw, el in zip(col.hardware_indices(), col.table())}
    assert t[(0, 5)] == (1, 1)  # column-major flat 5 = (5 % 4, 5 // 4)
    with pytest.raises(LayoutError):
        access_pattern([3, 5], vector=2)


def test_bad_input():
    with pytest.raises(LayoutError):
        properties("not a layout")
    with pytest.raises(LayoutError):
        properties(Layout.from_bases({"offset": [[0, 1]]}, [1, 2]), element_bits=3)


def test_cli_properties_and_analyze(capsys):
    import json

    from layoutverify.apps.cli import main
    blocked = "triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
    other = "triton:#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>"
    try:
        rc = main(["analyze", blocked, "--shape", "64x64", "--json"])
    except SystemExit as e:  # pragma: no cover - the analyze command must not exit by itself
        rc = e.code
    out = capsys.readouterr().out
    if rc == 2 and "adapter" in out + capsys.readouterr().err:
        pytest.skip("the Triton adapter is not available")
    assert rc == 0
    doc = json.loads(out)
    assert doc["schema"] == "layoutverify/1" and doc["kind"] == "properties"
    p = doc["layouts"]["A"]
    assert p["layout_kind"] == "register" and p["bijective"] and p["contiguity"] == 4
    assert main(["analyze", blocked, other, "--shape", "64x64", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["mechanism"] == "intra_cta" and r["witness"]["rules_out"] == "intra_warp"
    assert main(["analyze", blocked, other, "--shape", "64x64",
                 "--shared", "triton:#ttg.swizzled_shared<{vec = 4, perPhase = 1, maxPhase = 8, order = [1, 0]}>"]) == 0
    text = capsys.readouterr().out
    assert "mechanism: intra_cta" in text and "bank conflicts, store a" in text
    assert main(["analyze", blocked, other, "--shape", "64x64", "--element-bits", "12"]) == 2
    assert main(["analyze", blocked, "triton:#ttg.blocked<{sizePerThread = [1]", "--shape", "64x64"]) == 2
