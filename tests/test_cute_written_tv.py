"""CuTe thread/value layouts written by hand are register layouts (``cute:tv:...``), and a memory
layout compared with a register layout is reported as such (``different_tensors``, method
``kinds``), not as ``not_equal``.

Oracles: the PTX ISA's ``mma.m16n8k16`` C fragment (``ptx:`` adapter, ISA figures) for CUTLASS's
``SM80_16x8_Row`` TV layout written out by hand; pycute evaluates any TV layout at every
(thread, value), and the canonical layout must put that element, read column-major over the tile,
at ``register = v, lane = t % 32, warp = t // 32`` (DESIGN.md §1).
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from layoutverify.adapters import parse_spec
from layoutverify.apps.cli import main
from layoutverify.core.compare import compare
from layoutverify.core.errors import LayoutError

#: CUTLASS ``SM80_16x8_Row`` (mma_traits_sm80.hpp): the C/D TV layout of SM80_16x8x*_F32..., as text
SM80_16x8_ROW = "((4,8),(2,2)):((32,1),(16,8))"


def _run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_written_tv_is_the_ptx_c_fragment():
    lay = parse_spec(f"cute:tv:{SM80_16x8_ROW}", shape=(16, 8))
    assert lay.kind == "register"
    assert dict(lay.in_dims) == {"register": 4, "lane": 32, "warp": 1, "block": 1}
    assert compare(lay, parse_spec("ptx:mma.m16n8k16.f32.C")).verdict == "equal"
    assert compare(lay, parse_spec("cute:SM80_16x8x16_F32F16F16F32_TN.C")).verdict == "equal"
    # the option spelling (corpora: options = { as = "register" }) is the same layout
    same = parse_spec(f"cute:{SM80_16x8_ROW}", shape=(16, 8), **{"as": "register"})
    assert same.fingerprint() == lay.fingerprint()


@pytest.mark.parametrize("text, tile", [
    ("((32,4),(2,2)):((2,64),(1,256))", (16, 32)),         # 4 warps, 128 threads, 512 elements
    ("((8,4,4),(2,4)):((4,1,128),(32,512))", (64, 32)),     # mixed strides, 4 warps
    ("((4,8),(2,2)):((32,1),(16,8))", (128,)),               # 1-D tile (the flat index: asked for with a shape)
    ("(64,(3,2)):(1,(64,192))", (192, 2)),                   # non-power-of-two values, 2 warps
])
def test_written_tv_matches_pycute_at_every_thread_and_value(text, tile):
    pycute = pytest.importorskip("pycute")
    lay = parse_spec(f"cute:tv:{text}", shape=tile)
    shape, stride = eval_tuple(text)
    ref = pycute.Layout(shape, stride)
    nthr, nval = pycute.size(shape[0]), pycute.size(shape[1])
    sizes = dict(lay.in_dims)
    assert sizes["register"] == nval and sizes["lane"] * sizes["warp"] == nthr
    t, v = np.meshgrid(np.arange(nthr), np.arange(nval), indexing="ij")
    t, v = t.ravel(), v.ravel()
    got = lay.apply({"register": v, "lane": t % 32, "warp": t // 32, "block": np.zeros_like(t)})
    tile = tile or (ref.cosize(),)
    for k in range(len(t)):
        idx = ref(int(t[k]), int(v[k]))
        want = []
        for x in tile:                                     # column-major over the tile
            want.append(idx % x)
            idx //= x
        assert list(got[k]) == want, (int(t[k]), int(v[k]))


def eval_tuple(text: str):
    """``"((4,8),(2,2)):((32,1),(16,8))"`` -> nested int tuples (test helper; literal_eval of our own constants)."""
    import ast
    s, d = text.split(":")
    return ast.literal_eval(s), ast.literal_eval(d)


def test_memory_vs_register_is_a_kind_difference(capsys):
    mem = parse_spec("cute:(16,8):(8,1)")
    reg = parse_spec("ptx:mma.m16n8k16.f32.C")
    assert mem.kind == "memory" and reg.kind == "register"
    for a, b in ((mem, reg), (reg, mem)):
        res = compare(a, b)
        assert res.verdict == "different_tensors" and res.method == "kinds"
        assert {res.witness["kind_a"], res.witness["kind_b"]} == {"memory", "register"}
        assert "different kinds" in res.reason
    # the same CuTe text, declared a TV layout, is comparable (and differs element by element)
    res = compare(parse_spec("cute:tv:(32,4):(4,1)", shape=(16, 8)), reg)
    assert res.verdict == "not_equal" and res.method != "kinds"
    rc, out, _ = _run(capsys, "prove", "cute:(16,8):(8,1)", "ptx:mma.m16n8k16.f32.C", "--json")
    doc = json.loads(out)
    assert rc == 1 and doc["verdict"] == "different_tensors" and doc["method"] == "kinds"
    rc, out, _ = _run(capsys, "prove", "cute:(16,8):(8,1)", "ptx:mma.m16n8k16.f32.C")
    assert rc == 1 and "different kinds: A is a memory layout" in out and "grids" not in out


def test_partial_written_tv_is_partial():
    # 32 threads x 2 values cover half of a 16x8 tile
    lay = parse_spec("cute:tv:(32,2):(2,1)", shape=(16, 8))
    full = parse_spec(f"cute:tv:{SM80_16x8_ROW}", shape=(16, 8))
    assert compare(lay, full).verdict == "different_tensors"


@pytest.mark.parametrize("text, shape, needle", [
    ("cute:tv:8:1", None, "two modes"),
    ("cute:tv:(32,4):(4,1)", (8, 8), "outside the 8x8 tile"),
    ("cute:tv:Sw<3,4,3> o (8,64):(64,1)", None, "swizzled"),
    ("cute:tv:SM80_16x8x16_F32F16F16F32_TN.C", None, None),          # an atom is a TV layout already
])
def test_written_tv_bad_input(text, shape, needle):
    if needle is None:
        assert parse_spec(text).kind == "register"
        return
    with pytest.raises(LayoutError, match=needle):
        parse_spec(text, shape=shape)


def test_as_register_contradiction_is_an_error():
    with pytest.raises(LayoutError, match="contradicts"):
        parse_spec(f"cute:tv:{SM80_16x8_ROW}", shape=(16, 8), **{"as": "memory"})
