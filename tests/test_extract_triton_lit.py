"""tools/extract_triton_lit.py on a small hand-written lit file: aliases per split, comments
(FileCheck lines) skipped, alias chains expanded, encoding-less types skipped, a shared encoding on a
tensor descriptor written as the memdesc it describes, module attributes kept, duplicates counted."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LIT = """// RUN: triton-opt %s -split-input-file | FileCheck %s
#blocked = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
#dot = #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>
#shared = #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
#smem = #ttg.shared_memory
// CHECK: tensor<32x32xf16, #ttg.blocked<{sizePerThread = [9]}>>
module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "cuda:90"} {
  tt.func @f(%a: tensor<64x64xf16, #blocked>, %b: tensor<128xi32>) {
    %0 = ttg.convert_layout %a : tensor<64x64xf16, #blocked> -> tensor<64x64xf16, #dot>
    %1 = ttg.local_alloc : () -> !ttg.memdesc<2x64x64xf16, #shared, #smem, mutable>
    %2 = tt.make_tensor_descriptor : !tt.tensordesc<tensor<64x64xf16, #shared>>
    tt.return
  }
}

// -----

#blocked = #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [64], warpsPerCTA = [8], order = [0]}>
module attributes {"ttg.num-warps" = 8 : i32} {
  tt.func @g(%a: tensor<512xf32, #blocked>, %c: tensor<64x64xf16, #undefined>) {
    tt.return
  }
}
"""


def _extractor():
    spec = importlib.util.spec_from_file_location("extract_triton_lit", ROOT / "tools" / "extract_triton_lit.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_pairs_of_a_lit_file(tmp_path):
    src = tmp_path / "triton"
    (src / "test" / "X").mkdir(parents=True)
    (src / "test" / "X" / "a.mlir").write_text(LIT)
    out = tmp_path / "pairs.jsonl"
    assert _extractor().main(["--src", str(src), "--commit", "0" * 40, "-o", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    meta, pairs = lines[0]["meta"], lines[1:]
    assert meta["commit"] == "0" * 40 and meta["files"] == 1
    by_text = {p["text"]: p for p in pairs}
    blocked = ("tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], "
               "warpsPerCTA = [4, 1], order = [1, 0]}>>")
    assert by_text[blocked]["uses"] == 2 and by_text[blocked]["origin"] == "test/X/a.mlir:9"
    assert by_text[blocked]["num_warps"] == 4 and by_text[blocked]["target"] == "cuda:90"
    dot = [p for p in pairs if p["kind"] == "dot_op"]
    assert len(dot) == 1 and "parent = #ttg.nvidia_mma<{versionMajor = 2" in dot[0]["text"]
    mem = [p for p in pairs if p["container"] == "memdesc"]
    assert {p["text"].split(",")[0] for p in mem} == {"!ttg.memdesc<2x64x64xf16", "!ttg.memdesc<64x64xf16"}
    assert all("#ttg.shared_memory" in p["text"] for p in mem)
    second = [p for p in pairs if p["shape"] == [512]]
    assert len(second) == 1 and second[0]["num_warps"] == 8 and "threadsPerWarp = [64]" in second[0]["text"]
    assert not any("sizePerThread = [9]" in p["text"] for p in pairs)          # CHECK lines are comments
    assert not any("#undefined" in p["text"] or p["shape"] == [128] for p in pairs)
    assert meta["pairs"] == len(pairs) == 5
