"""The adapter registry: every framework's module keeps callable ``parse``/``native`` entry
points whatever submodules get imported, and specs without a prefix go to the right framework."""
from __future__ import annotations

import importlib
import pkgutil

import pytest

import layoutverify.adapters
from layoutverify.core.errors import LayoutError


@pytest.mark.parametrize("framework", sorted(layoutverify.adapters.FRAMEWORKS))
def test_entry_points_survive_importing_every_submodule(framework):
    mod = layoutverify.adapters.adapter(framework)
    if hasattr(mod, "__path__"):
        for info in pkgutil.walk_packages(mod.__path__, mod.__name__ + "."):
            importlib.import_module(info.name)
    assert callable(mod.parse)
    if hasattr(mod, "native"):
        assert callable(mod.native), f"{framework}: a submodule named 'native' shadows the native() function"


@pytest.mark.parametrize("text,framework", [
    ("#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>", "triton"),
    ("tensor<16x16xf16, #ttg.linear<{register = [], lane = [], warp = [], block = []}>>", "triton"),
    ("#triton_gpu.blocked<{sizePerThread = [1, 1]}>", "triton"),
    ("((2,4),8):((1,16),2)", "cute"),
    ("Sw<3,4,3> o (8,64):(64,1)", "cute"),
    ("SM80_16x8x16_F32F16F16F32_TN.A", "cute"),
    ("tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2,2,1), C)", "cute"),
    ("local(2, 1).spatial(8, 4).local(1, 2)", "tilus"),
    ("RegisterLayout(shape=[4], mode_shape=[4], spatial_modes=[0], local_modes=[])", "tilus"),
    ("#iree_vector_ext.nested_layout<subgroup_tile = [1]>", "iree"),
    ("mma.m16n8k16.f16.A", "ptx"),
    ("ldmatrix.x4.trans", "ptx"),
    ("v_mfma_f32_32x32x8_f16.A", "amd"),
    ("gfx942.v_mfma_f32_16x16x16_f16.C", "amd"),
])
def test_framework_is_guessed_from_text(text, framework):
    assert layoutverify.adapters.guess_framework(text) == framework
    assert layoutverify.adapters.split_spec(text)[0] == framework


def test_prefix_wins_and_unknown_text_is_a_clear_error(tmp_path):
    assert layoutverify.adapters.split_spec("cute:(4,8):(8,1)") == ("cute", "(4,8):(8,1)")
    with pytest.raises(LayoutError, match="cannot tell which framework"):
        layoutverify.adapters.split_spec("hello world")
    with pytest.raises(LayoutError, match="cannot read layout file"):
        layoutverify.adapters.split_spec("triton:@" + str(tmp_path / "missing.mlir"))
    f = tmp_path / "l.txt"
    f.write_text("(4,8):(8,1)\n")
    assert layoutverify.adapters.split_spec(f"cute:@{f}") == ("cute", "(4,8):(8,1)")
    for bad in ("", "x", "0x0", "4x-1", "a,b", "1x" * 9 + "1"):
        with pytest.raises(LayoutError):
            layoutverify.adapters.parse_shape(bad)
    assert layoutverify.adapters.parse_shape("[64, 32]") == (64, 32) == layoutverify.adapters.parse_shape("64x32")
