"""Property warnings (layoutverify.core.properties): replicated registers, a warp count other than
the module's num-warps, a sub-tile that is not its parent's restriction; and the CLI / corpus
fields that surface them.

Expected outcomes come from Triton's own lit tests (triton-lang/triton df82d98): its verifier
rejects the extract_slice cases of ``test/Conversion/amd/invalid_extractslice_to_llvm.mlir``
("No source register holds the element ...", "Lane and warp dim basis must match ...") and
accepts those of ``test/TritonGPU/amd/amd-extractslice-op.mlir``; it rejects a blocked layout of
8 warps in a ``"ttg.num-warps" = 4`` module (``test/TritonGPU/verify-blocked-layout.mlir``,
"warps per CTA").
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from layoutverify.adapters import triton as T
from layoutverify.core.properties import layout_warnings, properties, register_copies, subtile_warning

B1 = "#ttg.blocked<{sizePerThread = [8, 1], threadsPerWarp = [4, 16], warpsPerCTA = [8, 1], order = [1, 0]}>"
B2 = "#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [4, 16], warpsPerCTA = [8, 1], order = [1, 0]}>"


def _t(shape, enc):
    return T.parse(f"tensor<{'x'.join(map(str, shape))}xi32, {enc}>")


# extract_slice cases: (parent shape, parent enc, offsets, child shape, child enc, Triton accepts)
SLICES = [
    ((256, 128), B1, (0, 0), (256, 16), B1, True),            # amd-extractslice-op.mlir:10
    ((256, 128), "#ttg.linear<{register = [[1, 0], [2, 0], [4, 0], [0, 16], [0, 32], [0, 64]], lane = [[0, 1], "
     "[0, 2], [0, 4], [0, 8], [8, 0], [16, 0]], warp = [[32, 0], [64, 0], [128, 0]], block = []}>", (0, 0),
     (256, 16), "#ttg.linear<{register = [[1, 0], [2, 0], [4, 0]], lane = [[0, 1], [0, 2], [0, 4], [0, 8], [8, 0], "
     "[16, 0]], warp = [[32, 0], [64, 0], [128, 0]], block = []}>", True),   # amd-extractslice-op.mlir:25
    ((1024,), "#ttg.linear<{register=[[1], [256], [512]], lane=[[2], [4], [8], [16], [32], [64]], warp=[[128]], "
     "block=[]}>", (0,), (256,), "#ttg.linear<{register=[[1]], lane=[[2], [4], [8], [16], [32], [64]], "
     "warp=[[128]], block=[]}>", True),                                        # amd-extractslice-op.mlir:54
    ((256, 128), B1, (0, 0), (256, 2), B1, False),            # invalid_extractslice_to_llvm.mlir:8
    ((256, 128), B1, (0, 5), (256, 16), B1, False),           # :20, no source register holds [0, 5]
    ((256, 128), B1, (0, 0), (256, 16), B2, False),           # :44
    ((64, 32), "#ttg.linear<{register=[[1, 0], [2, 0]], lane=[[4, 0], [8, 0], [16, 0], [0, 1], [0, 2], [0, 4]], "
     "warp=[[0, 0], [0, 8]], block=[]}>", (0, 0), (32, 16),
     "#ttg.linear<{register=[[1, 0]], lane=[[4, 0], [8, 0], [16, 0], [0, 1], [0, 2], [0, 4]], "
     "warp=[[2, 0], [0, 8]], block=[]}>", False),                             # :120
]


@pytest.mark.parametrize("ps,pe,off,cs,ce,ok", SLICES)
def test_extract_slice_restriction_matches_tritons_verifier(ps, pe, off, cs, ce, ok):
    w = subtile_warning(_t(ps, pe), _t(cs, ce), off)
    assert (w is None) == ok, w
    if w is not None:
        assert w["code"] == "not_restriction" and "element" in w


def test_memdesc_subview_restriction():
    """A memdesc subslice keeps the parent's addressing: the parent's swizzled layout over its
    allocation, read on the tile, is a restriction; a fresh layout for the tile's own shape is not."""
    enc = "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>"
    parent = T.parse(f"!ttg.memdesc<128x128xf16, {enc}, #ttg.shared_memory, mutable>")
    fresh = T.parse(f"!ttg.memdesc<64x64xf16, {enc}, #ttg.shared_memory, mutable>")
    assert subtile_warning(parent, parent, (0, 0)) is None
    w = subtile_warning(parent, fresh, (64, 0))
    assert w is not None and w["code"] == "not_restriction"


def test_replicated_registers():
    lay = T.parse("tensor<16xf32, #ttg.linear<{register = [[0], [1]], lane = [[2], [4], [8], [0], [0]], "
                  "warp = [], block = []}>>")
    assert register_copies(lay) == 2
    codes = [w["code"] for w in layout_warnings(lay)]
    assert codes == ["replicated_registers"]
    clean = T.parse("tensor<16xf32, #ttg.linear<{register = [[1]], lane = [[2], [4], [8], [0], [0]], "
                    "warp = [], block = []}>>")
    assert layout_warnings(clean) == []


def test_num_warps_from_the_lit_corpus():
    """verify-blocked-layout.mlir:36: warpsPerCTA = [4, 2] in a num-warps = 4 module ("warps per CTA")."""
    lay = T.parse("tensor<8x1xf32, #ttg.blocked<{sizePerThread=[1, 1], threadsPerWarp=[32, 1], "
                  "warpsPerCTA=[4, 2], order=[0, 1]}>>")
    w = layout_warnings(lay, num_warps=4)
    assert [x["code"] for x in w] == ["num_warps"] and w[0]["warps"] == 8
    assert layout_warnings(lay, num_warps=8) == []
    assert properties(lay, num_warps=4)["warnings"] == w


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "layoutverify.apps.cli", *args], capture_output=True, text=True,
                          timeout=120)


def test_analyze_cli_warns():
    a = f"triton:tensor<256x128xi32, {B1}>"
    b = f"triton:tensor<256x16xi32, {B2}>"
    r = _cli("analyze", a, b, "--subtile", "0,0", "--num-warps", "4")
    assert r.returncode == 0, r.stderr
    assert "warning (not_restriction)" in r.stdout and "warning (num_warps)" in r.stdout
    r = _cli("analyze", a, "--subtile", "0,0")
    assert r.returncode == 2 and "--subtile needs two layouts" in r.stderr
    r = _cli("analyze", "triton:!ttg.memdesc<64x64xf16, #ttg.swizzled_shared<{vec=1,perPhase=1,maxPhase=1,"
             "order=[1,0]}>, #ttg.shared_memory>", "--arch", "cdna3", "--json")
    assert r.returncode == 0, r.stderr
    bc = json.loads(r.stdout)["layouts"]["A"]["bank_conflicts"]["column"]
    assert bc["arch"] == "cdna3" and bc["lanes_per_phase"] == 32
    assert _cli("analyze", a, "--arch", "gfx9000").returncode == 2


def test_corpus_asserts_warnings(tmp_path):
    corpus = tmp_path / "w.toml"
    corpus.write_text(textwrap.dedent(f'''
        [[claim]]
        name = "bad-slice"
        a = "triton:tensor<256x128xi32, {B1}>"
        b = "triton:tensor<256x16xi32, {B2}>"
        expect = "different_tensors"
        num_warps = 8
        subtile_offsets = [0, 0]
        expect_warnings = ["not_restriction"]

        [[claim]]
        name = "good-slice-wrong-warps"
        a = "triton:tensor<256x128xi32, {B1}>"
        b = "triton:tensor<256x16xi32, {B1}>"
        expect = "different_tensors"
        num_warps = 4
        subtile_offsets = [0, 0]
        expect_warnings = ["not_restriction"]
    '''))
    r = _cli("check", str(corpus), "-j", "1")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "expected warnings ['not_restriction'], got ['num_warps']" in r.stdout
    assert "warning:" in r.stderr and "not_restriction" in r.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('[[claim]]\nname = "x"\na = "triton:#ttg.blocked<{sizePerThread=[1],threadsPerWarp=[32],'
                   'warpsPerCTA=[1],order=[0]}>"\nb = "triton:#ttg.blocked<{sizePerThread=[1],threadsPerWarp=[32],'
                   'warpsPerCTA=[1],order=[0]}>"\nshape = [32]\nexpect = "equal"\nexpect_warnings = ["nope"]\n')
    r = _cli("check", str(bad))
    assert r.returncode == 2 and "unknown warning code" in r.stderr
