"""The scan's TTGIR reader on the forms MLIR and Triton print (module attributes, aliases,
locations, op signatures, dumps), one form per test; the expected values are read off the text."""
from __future__ import annotations

import json
import re

import pytest

from layoutverify.apps.scan.locations import LocationTable
from layoutverify.apps.scan.module import read_module, signature_types, strip_loc
from layoutverify.apps.scan.ops import transfers
from layoutverify.apps.scan.sources import find_modules, split_dumps
from layoutverify.core.errors import LayoutError

MODULE = '''#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#loc = loc("/src/kernels.py":10:1)
#mma = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
#shared = #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
#smem = #ttg.shared_memory
module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:80", "ttg.threads-per-warp" = 32 : i32} {
  tt.func public @kern(%arg0: !tt.ptr<f16> loc("x"(#loc))) attributes {noinline = false} {
    %0 = ttg.convert_layout %x : tensor<64x64xf16, #blocked> -> tensor<64x64xf16, #mma> loc(#loc5)
    %1 = ttg.local_alloc %0 : (tensor<64x64xf16, #mma>) -> !ttg.memdesc<64x64xf16, #shared, #smem> loc(#loc6)
    %2 = ttg.local_load %1 : !ttg.memdesc<64x64xf16, #shared, #smem> -> tensor<64x64xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>> loc(#loc7)
    %3 = tt.dot %2, %b, %c, inputPrecision = tf32 : tensor<64x64xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>> * tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>> -> tensor<64x64xf32, #mma> loc(#loc8)
    %4 = ttg.async_copy_global_to_local %p, %m mask %k {contiguity = 8 : i32} : tensor<64x64x!tt.ptr<f16>, #blocked> -> <64x64xf16, #shared, #smem, mutable> loc(#loc9)
    %5:2 = "ttg.memdesc_index"(%m, %i) : (!ttg.memdesc<3x64x64xf16, #shared, #smem, mutable>, i32) -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable> loc(unknown)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc1 = loc("/src/kernels.py":12:5)
#loc2 = loc("/src/helpers.py":3:9)
#loc3 = loc("/src/kernels.py":20:7)
#loc5 = loc("y"(#loc1))
#loc6 = loc(callsite(#loc2 at #loc3))
#loc7 = loc(fused[#loc4, "name"(#loc1)])
#loc4 = loc(unknown)
#loc8 = loc(callsite(callsite(#loc2 at #loc1) at #loc3))
#loc9 = loc(#loc10)
#loc10 = loc(#loc9)
'''


def _mod():
    return read_module(MODULE, "kern.ttgir")


def test_module_attributes_and_functions():
    m = _mod()
    assert (m.num_warps, m.threads_per_warp, m.num_ctas, m.target) == (4, 32, 1, "cuda:80")
    assert m.functions == ["kern"] and m.kernel == "kern"
    assert set(m.aliases) == {"#blocked", "#mma", "#shared", "#smem"}
    assert [op.name for op in m.ops] == ["ttg.convert_layout", "ttg.local_alloc", "ttg.local_load", "tt.dot",
                                         "ttg.async_copy_global_to_local", "ttg.memdesc_index", "tt.return"]


def test_old_triton_gpu_spelling_of_module_attributes():
    text = MODULE.replace("ttg.num-warps", "triton_gpu.num-warps").replace("ttg.threads-per-warp",
                                                                            "triton_gpu.threads-per-warp")
    m = read_module(text)
    assert (m.num_warps, m.threads_per_warp) == (4, 32)


def test_locations():
    m = _mod()
    locs = {op.name: m.locations.resolve(op.loc_text) for op in m.ops}
    cvt = locs["ttg.convert_layout"]
    assert (cvt.file, cvt.line, cvt.col, cvt.name) == ("/src/kernels.py", 12, 5, "y")
    alloc = locs["ttg.local_alloc"]  # callsite(callee at caller): the callee, called from the caller
    assert (alloc.file, alloc.line, alloc.col) == ("/src/helpers.py", 3, 9)
    assert alloc.called_from == [("/src/kernels.py", 20, 7)]
    assert alloc.to_json()["called_from"] == ["kernels.py:20:7"]
    load = locs["ttg.local_load"]  # fused: the first part that resolves (unknown does not)
    assert (load.line, load.col, load.name) == (12, 5, "name")
    dot = locs["tt.dot"]  # nested call sites: innermost callee, callers innermost first
    assert (dot.file, dot.line) == ("/src/helpers.py", 3)
    assert dot.called_from == [("/src/kernels.py", 12, 5), ("/src/kernels.py", 20, 7)]
    assert locs["ttg.async_copy_global_to_local"] is None  # an alias cycle resolves to nothing
    assert locs["ttg.memdesc_index"] is None  # loc(unknown)
    assert locs["tt.return"].short() == "kernels.py:10:1"


def test_location_forms_directly():
    t = LocationTable({"#a": 'loc("f.py":1:2)'})
    assert t.resolve('loc("f.py":7:3 to 7:9)').line == 7
    assert t.resolve("loc(fused<#x>[#a])").col == 2
    assert t.resolve("loc(nonsense)") is None


def test_signatures():
    m = _mod()
    sig = {op.name: (op.operand_types, op.result_types) for op in m.ops}
    assert sig["ttg.convert_layout"] == (["tensor<64x64xf16, #blocked>"], ["tensor<64x64xf16, #mma>"])
    ins, outs = sig["tt.dot"]
    assert len(ins) == 2 and outs == ["tensor<64x64xf32, #mma>"] and "opIdx = 1" in ins[1]
    ins, outs = sig["ttg.async_copy_global_to_local"]
    assert ins == ["tensor<64x64x!tt.ptr<f16>, #blocked>"]
    assert outs == ["!ttg.memdesc<64x64xf16, #shared, #smem, mutable>"]
    ins, outs = sig["ttg.memdesc_index"]  # generic form, two results
    assert ins == ["!ttg.memdesc<3x64x64xf16, #shared, #smem, mutable>"]
    assert outs == ["!ttg.memdesc<64x64xf16, #shared, #smem, mutable>"]
    body, loc = strip_loc('%1 = arith.constant 4 : i32 loc("a"(#loc3))')
    assert body == "%1 = arith.constant 4 : i32" and loc == 'loc("a"(#loc3))'
    assert signature_types("%x = tt.reduce %y {axis = 1 : i32} : tensor<4xf32, #blocked> -> f32") == \
        (["tensor<4xf32, #blocked>"], [])


def test_transfers_and_alias_expansion():
    m = _mod()
    got = {op.name: [(t.role, t.operand) for t in transfers(op)] for op in m.ops}
    assert got["ttg.convert_layout"] == [("convert", None)]
    assert got["ttg.local_alloc"] == [("store", None)]
    assert got["ttg.local_load"] == [("load", None)]
    assert got["tt.dot"] == [("operand", "A"), ("operand", "B"), ("operand", "C")]
    assert got["ttg.async_copy_global_to_local"] == [("store", None)]
    assert got["ttg.memdesc_index"] == [("view", None)]
    assert got["tt.return"] == []
    (load,) = [op for op in m.ops if op.name == "ttg.local_load"]
    text = m.expand(load.result_types[0])
    assert "#mma" not in text and "parent = #ttg.nvidia_mma<{versionMajor = 2" in text


def test_scan_of_the_module(tmp_path):
    """End to end on the hand-written module: every transfer analysed, none unreadable; the
    multi-buffered memdesc view (3 x 64 x 64) is read over its trailing dims."""
    p = tmp_path / "kern.ttgir"
    p.write_text(MODULE)
    from layoutverify.apps.cli import main
    out = tmp_path / "s.json"
    assert main(["scan", str(p), "--json", str(out), "--quiet"]) == 0
    doc = json.loads(out.read_text())
    (k,) = doc["kernels"]
    assert k["totals"]["errors"] == 0, [o.get("error") for o in k["ops"]]
    (view,) = [o for o in k["ops"] if o["role"] == "view"]
    assert view["verdict"] == "equal"


def test_mlir_dump_keeps_the_last_ttgir_module_per_kernel(tmp_path):
    before = MODULE.replace('"ttg.num-warps" = 4', '"ttg.num-warps" = 8')
    other = MODULE.replace("@kern(", "@other(")
    llvm = "module attributes {} {\n  llvm.func @kern() {\n  }\n}\n"
    text = ("// -----// IR Dump Before TritonGPUCoalesce (tritongpu-coalesce) ('builtin.module' operation) //----- //\n"
            + before
            + "// -----// IR Dump Before TritonGPURemoveLayoutConversions (tritongpu-remove-layout-conversions) "
              "('builtin.module' operation) //----- //\n" + MODULE
            + "// -----// IR Dump Before ConvertTritonGPUToLLVM (convert-triton-gpu-to-llvm) ('builtin.module' "
              "operation) //----- //\n" + llvm
            + "// -----// IR Dump Before TritonGPUCoalesce (tritongpu-coalesce) ('builtin.module' operation) //----- //\n"
            + other)
    assert len(split_dumps(text)) == 4
    p = tmp_path / "dump.txt"
    p.write_text(text)
    mods = find_modules([p])
    assert [m.kernel for m in mods] == ["kern", "other"]
    assert mods[0].num_warps == 4  # the later dump of kern, not the first (8 warps) nor the LLVM one
    assert "RemoveLayoutConversions" in mods[0].metadata["dump_pass"]


def test_mlir_dump_keeps_every_compilation(tmp_path):
    """A real ``MLIR_ENABLE_DUMP`` log of one process that compiles the five autotune
    configurations of a matmul for sm_90 and one of them for gfx942: six compilations, six
    modules (each the last TTGIR dump of its compilation), five for sm_90 and one for gfx942,
    each with the specialisation of its configuration."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    pytest.importorskip("triton")
    tests = Path(__file__).resolve().parent
    sys.path.insert(0, str(tests))
    from scan_tutorials import MATMUL_CONFIGS
    cases = ",".join(f"grouped_matmul_fp16_cfg{i}" for i in range(len(MATMUL_CONFIGS)))
    env = dict(os.environ, MLIR_ENABLE_DUMP="1", TRITON_ALWAYS_COMPILE="1", TRITON_DEFAULT_FP_FUSION="1",
               PYTHONWARNINGS="ignore")
    log = tmp_path / "dump.log"
    with open(log, "w") as err:
        for only, target in ((cases, "sm90"), ("grouped_matmul_fp16_cfg0", "gfx942")):
            p = subprocess.run([sys.executable, str(tests / "scan_tutorials.py"), str(tmp_path / "cache"), "--only",
                                only, target], env=env, stdout=subprocess.PIPE, stderr=err, text=True, timeout=900)
            assert p.returncode == 0 and '"ok": true' in p.stdout, p.stdout
    mods = find_modules([log])
    targets = sorted(m.target for m in mods)
    assert targets == ["cuda:90"] * 5 + ["hip:gfx942"], targets
    from layoutverify.apps.scan.identity import identity
    sm90 = [identity(m) for m in mods if m.target == "cuda:90"]
    assert len({(i["num_warps"], tuple(i["tiles"])) for i in sm90}) == 5
    warps = sorted(i["num_warps"] for i in sm90)
    assert warps == sorted(c[4] for c in MATMUL_CONFIGS)
    for m in mods:   # the last TTGIR dump: the module as it reaches the LLVM lowering
        assert re.match(r"Convert\w*GPUToLLVM", m.metadata["dump_pass"]), m.metadata["dump_pass"]


def test_folders_skip_non_ttgir_files_and_files_must_be_ttgir(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "k.ttgir").write_text(MODULE)
    (tmp_path / "a" / "k.ttir.mlir").write_text("module {\n  tt.func @k() {\n  }\n}\n")  # TTIR: no layouts
    skipped = []
    mods = find_modules([tmp_path], skipped=skipped)
    assert len(mods) == 1 and skipped == [str(tmp_path / "a" / "k.ttir.mlir")]
    bad = tmp_path / "notes.mlir"
    bad.write_bytes(b"\x00\x01garbage")
    with pytest.raises(LayoutError):
        find_modules([bad])
