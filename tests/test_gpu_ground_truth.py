"""On a GPU: compiled Gluon code places each element in the thread our canonical form says.

Layouts come from several frameworks' adapters (Triton encodings, PTX ISA fragments, CuTe
atoms, Tilus expressions), go through the canonical form into a Gluon
``DistributedLinearLayout``, and a kernel records which hardware thread holds each element.
Skipped without a GPU (CI has none).
"""
from __future__ import annotations

import pytest

from layoutverify.adapters import parse_spec

pytestmark = pytest.mark.gpu

CASES = [
    ("triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>", (64, 64)),
    ("triton:#ttg.blocked<{sizePerThread = [2, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 2], order = [0, 1]}>", (32, 32)),
    ("triton:#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>", (32, 32)),
    ("triton:#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 64, 16]}>", (64, 64)),
    ("triton:#ttg.dot_op<{opIdx = 0, parent = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2}>", (32, 32)),
    ("triton:#ttg.dot_op<{opIdx = 1, parent = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2}>", (32, 32)),
    ("ptx:mma.m16n8k16.f16.A", None),
    ("ptx:mma.m16n8k16.f16.B", None),
    ("ptx:mma.m16n8k16.f32.C", None),
    ("ptx:wgmma.m64n64k16.f32.D", None),
    ("ptx:ldmatrix.x4", None),
    ("tilus:local(2, 1).spatial(8, 4).local(1, 2)", None),
    ("cute:SM80_16x8x16_F32F16F16F32_TN.C", None),
]


@pytest.mark.parametrize("spec,shape", CASES, ids=[c[0][:48] for c in CASES])
def test_gpu_places_elements_where_the_layout_says(spec, shape):
    from layoutverify.apps.measure.ground_truth import check_on_gpu
    try:
        layout = parse_spec(spec, shape=shape)
    except Exception as e:  # an adapter not present in this build
        pytest.skip(f"cannot build {spec}: {e}")
    res = check_on_gpu(layout)
    assert res["ok"], f"{res['n_mismatches']} of {res['elements']} elements misplaced, e.g. {res['mismatches'][:5]}"


def test_gpu_catches_a_wrong_layout():
    """The check can fail: a layout whose lane bases are swapped disagrees with the GPU."""
    from layoutverify import Layout
    from layoutverify.apps.measure.ground_truth import thread_tags, expected_holders
    good = parse_spec("ptx:mma.m16n8k16.f32.C")
    f2 = good.f2_bases()
    swapped = dict(f2)
    swapped["lane"] = [f2["lane"][1], f2["lane"][0]] + f2["lane"][2:]
    bad = Layout.from_bases(swapped, good.out_sizes)
    tags = thread_tags(good).reshape(-1)
    holders = expected_holders(bad)
    assert any(int(t) not in h for t, h in zip(tags, holders))
