"""Writes corpora/conversion_suite.toml: the conversion pairs that `layoutverify measure`, the PTX
interpreter tests and the emitted-mechanism tests run (issue 13). Run from the repository root;
the TOML is committed, this script documents how it was made."""
from __future__ import annotations

import sys


def blocked(spt, tpw, wpc, order):
    return (f"triton:#ttg.blocked<{{sizePerThread = {spt}, threadsPerWarp = {tpw}, warpsPerCTA = {wpc}, "
            f"order = {order}}}>")


def mma2(w):
    return f"#ttg.nvidia_mma<{{versionMajor = 2, versionMinor = 0, warpsPerCTA = {w}, instrShape = [16, 8]}}>"


def mma3(w, n):
    return f"#ttg.nvidia_mma<{{versionMajor = 3, versionMinor = 0, warpsPerCTA = {w}, instrShape = [16, {n}, 16]}}>"


def dot(op, parent, kw):
    return f"triton:#ttg.dot_op<{{opIdx = {op}, parent = {parent}, kWidth = {kw}}}>"


def sl(dim, parent_spec):
    return f"triton:#ttg.slice<{{dim = {dim}, parent = {parent_spec.split(':', 1)[1]}}}>"


def linear(reg, lane, warp):
    return f"triton:#ttg.linear<{{register = {reg}, lane = {lane}, warp = {warp}, block = []}}>"


B1 = blocked([1, 4], [4, 8], [4, 1], [1, 0])
B2 = blocked([4, 1], [8, 4], [1, 4], [0, 1])
B3 = blocked([1, 8], [8, 4], [4, 1], [1, 0])
B4 = blocked([1, 1], [1, 32], [4, 1], [1, 0])
B5 = blocked([2, 2], [8, 4], [2, 2], [1, 0])
B6 = blocked([1, 4], [8, 4], [4, 1], [1, 0])
B7 = blocked([1, 4], [4, 8], [1, 4], [1, 0])
B8 = blocked([8, 1], [4, 8], [1, 4], [0, 1])
W8A = blocked([1, 8], [4, 8], [8, 1], [1, 0])
W8B = blocked([8, 1], [8, 4], [1, 8], [0, 1])
B1W = blocked([1, 2], [8, 4], [1, 1], [1, 0])       # one warp
B1W2 = blocked([2, 1], [4, 8], [1, 1], [0, 1])
B1D = "triton:#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>"
B1D2 = "triton:#ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>"
B3D = "triton:#ttg.blocked<{sizePerThread = [1, 1, 4], threadsPerWarp = [2, 4, 4], warpsPerCTA = [4, 1, 1], order = [2, 1, 0]}>"
M22, M41, M14, M24 = mma2([2, 2]), mma2([4, 1]), mma2([1, 4]), mma2([2, 4])
V64, V128, V32 = mma3([4, 1], 64), mma3([4, 1], 128), mma3([4, 1], 32)
T = "triton:"
# one-warp / four-warp linear layouts of a 16x32 tile for the shuffle family
LIN_A = ([[0, 1], [0, 2]], [[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]], [[4, 0], [8, 0]])
LIN_REG_LANE = ([[0, 4], [0, 2]], [[0, 1], [0, 8], [0, 16], [1, 0], [2, 0]], [[4, 0], [8, 0]])
LIN_LANE_PERM = ([[0, 1], [0, 2]], [[1, 0], [0, 8], [0, 16], [0, 4], [2, 0]], [[4, 0], [8, 0]])
LIN_TWO_SWAPS = ([[0, 4], [0, 8]], [[0, 1], [0, 2], [0, 16], [1, 0], [2, 0]], [[4, 0], [8, 0]])
LIN_LANE_WARP = ([[0, 1], [0, 2]], [[0, 4], [0, 8], [4, 0], [1, 0], [2, 0]], [[0, 16], [8, 0]])
LIN_REG_WARP = ([[4, 0], [0, 2]], [[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]], [[0, 1], [8, 0]])
LIN_REG_PERM = ([[0, 2], [0, 1]], [[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]], [[4, 0], [8, 0]])

PAIRS = [
    # blocked <-> blocked, transposes included
    ("blocked-transpose", B1, B2, [64, 64], "f16"),
    ("blocked-transpose", B1, B2, [128, 128], "f16"),
    ("blocked-transpose", B1, B2, [64, 64], "f32"),
    ("blocked-transpose", B1, B2, [64, 64], "fp8"),
    ("blocked-transpose", B2, B1, [128, 128], "f32"),
    ("blocked-transpose", B8, B1, [128, 128], "fp8"),
    ("blocked-transpose", B3, B2, [128, 128], "f32"),
    ("blocked-transpose", W8A, W8B, [128, 128], "f16"),
    ("blocked", B1, B3, [64, 64], "f16"),
    ("blocked", B1, B4, [128, 128], "f16"),
    ("blocked", B4, B1, [64, 64], "f32"),
    ("blocked", B5, B1, [64, 64], "f16"),
    ("blocked", B1, B6, [64, 64], "f32"),
    ("blocked", B1, B7, [128, 128], "f16"),
    ("blocked", B1, B1, [64, 64], "f16"),
    ("blocked", B3, B1, [128, 128], "bf16"),
    # blocked <-> mma v2
    ("mma-blocked", T + M22, B1, [64, 64], "f32"),
    ("mma-blocked", T + M22, B1, [128, 128], "f16"),
    ("mma-blocked", T + M41, B1, [128, 128], "f32"),
    ("mma-blocked", T + M14, B2, [64, 64], "f16"),
    ("mma-blocked", T + M22, B5, [64, 64], "f16"),
    ("blocked-mma", B1, T + M22, [64, 64], "f16"),
    ("blocked-mma", B2, T + M41, [128, 128], "f32"),
    # wgmma accumulator (mma v3) <-> blocked
    ("wgmma-blocked", T + V64, B1, [64, 64], "f32"),
    ("wgmma-blocked", T + V128, B1, [128, 128], "f32"),
    ("wgmma-blocked", T + V128, B1, [128, 128], "f16"),
    ("wgmma-blocked", T + V64, B2, [64, 64], "f16"),
    ("wgmma-blocked", T + V32, B3, [64, 64], "f32"),
    ("blocked-wgmma", B1, T + V64, [64, 64], "f16"),
    # mma -> dot operand, several warp shapes
    ("mma-dot", T + M22, dot(0, M22, 2), [64, 64], "f16"),
    ("mma-dot", T + M22, dot(1, M22, 2), [64, 64], "f16"),
    ("mma-dot", T + M41, dot(0, M41, 2), [64, 64], "f16"),
    ("mma-dot", T + M41, dot(1, M41, 2), [64, 64], "f16"),
    ("mma-dot", T + M14, dot(0, M14, 2), [64, 64], "f16"),
    ("mma-dot", T + M14, dot(1, M14, 2), [128, 128], "f16"),
    ("mma-dot", T + M22, dot(0, M22, 4), [64, 64], "fp8"),
    ("mma-dot", T + M41, dot(0, M41, 1), [64, 64], "f32"),
    ("mma-dot", T + M24, dot(0, M24, 2), [128, 128], "f16"),
    ("mma-dot", T + M24, dot(1, M24, 2), [128, 128], "bf16"),
    ("wgmma-dot", T + V64, dot(0, V64, 2), [64, 64], "f16"),
    ("blocked-dot", B1, dot(0, M22, 2), [64, 64], "f16"),
    ("blocked-dot", B1, dot(1, M22, 2), [128, 128], "f16"),
    ("dot-blocked", dot(0, M22, 2), B1, [64, 64], "f16"),
    # slices
    ("slice", sl(0, B1), sl(1, B1), [64], "f32"),
    ("slice", sl(0, B1), sl(1, B1), [128], "f16"),
    ("slice", sl(1, B1), B1D, [128], "f32"),
    ("slice", B1D2, sl(0, B2), [128], "f32"),
    ("slice", sl(0, T + M22), B1D, [64], "f32"),
    ("slice", sl(1, T + M22), sl(0, T + M22), [64], "f16"),
    ("slice-2d", sl(2, B3D), B1, [64, 64], "f16"),
    # replicated layouts (tile larger than the tensor, broadcast lanes or warps)
    ("replicated", B1, B2, [16, 16], "f16"),
    ("replicated", B4, B1, [8, 16], "f32"),
    ("replicated", sl(0, B1), sl(1, B1), [16], "f32"),
    ("replicated", T + M22, B1, [16, 16], "f16"),
    ("replicated", B1, T + M41, [32, 32], "f32"),
    # linear layouts: register/lane exchanges (shuffles), lane/warp exchanges
    ("linear-shuffle", linear(*LIN_A), linear(*LIN_REG_LANE), [16, 32], "f32"),
    ("linear-shuffle", linear(*LIN_A), linear(*LIN_REG_LANE), [16, 32], "f16"),
    ("linear-shuffle", linear(*LIN_A), linear(*LIN_REG_LANE), [16, 32], "fp8"),
    ("linear-shuffle", linear(*LIN_A), linear(*LIN_LANE_PERM), [16, 32], "f32"),
    ("linear-shuffle", linear(*LIN_REG_LANE), linear(*LIN_LANE_PERM), [16, 32], "f16"),
    ("linear-regperm", linear(*LIN_A), linear(*LIN_REG_PERM), [16, 32], "f32"),
    ("linear-shared", linear(*LIN_A), linear(*LIN_TWO_SWAPS), [16, 32], "f32"),
    ("linear-shared", linear(*LIN_A), linear(*LIN_LANE_WARP), [16, 32], "f16"),
    ("linear-shared", linear(*LIN_A), linear(*LIN_REG_WARP), [16, 32], "f32"),
    # layouts from other frameworks (imported as #ttg.linear)
    ("cute", "cute:SM80_16x8x16_F32F16F16F32_TN.C", B1W, [16, 8], "f32"),
    ("cute", "cute:SM80_16x8x16_F32F16F16F32_TN.A", B1W2, [16, 16], "f16"),
    ("cute", B1W, "cute:SM80_16x8x16_F32F16F16F32_TN.B", [16, 8], "f16"),
    ("tilus", "tilus:local(2, 1).spatial(8, 4).local(1, 2)", "ptx:mma.m16n8k16.f32.C", [16, 8], "f32"),
    ("tilus", "tilus:local(2, 1).spatial(8, 4).local(1, 2)", B1W, [16, 8], "f16"),
    ("tilus", "tilus:local(2, 1).spatial(8, 4).local(1, 4)", "ptx:mma.m16n8k16.f16.A", [16, 16], "f16"),
    ("ptx", "ptx:mma.m16n8k16.f16.A", B1W2, [16, 16], "f16"),
    ("ptx", "ptx:ldmatrix.x4", "ptx:mma.m16n8k16.f16.A", [16, 16], "f16"),
    ("ptx", "ptx:wgmma.m64n64k16.f32.D", B1, [64, 64], "f32"),
]


def q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(out=sys.stdout):
    print("# Conversion pairs for `layoutverify measure`, the PTX interpreter and the emitted-mechanism", file=out)
    print("# tests (issue 13). Generated by benchmarks/make_conversion_suite.py; `family` groups pairs in", file=out)
    print("# the plots. dtype: fp8 | f16 | bf16 | f32. shape: the tile (one CTA).", file=out)
    seen = {}
    for fam, a, b, shape, dtype in PAIRS:
        n = seen[fam] = seen.get(fam, 0) + 1
        print(file=out)
        print("[[pair]]", file=out)
        print(f'name = "{fam}-{n}-{dtype}-{"x".join(map(str, shape))}"', file=out)
        print(f'family = "{fam}"', file=out)
        print(f"a = {q(a)}", file=out)
        print(f"b = {q(b)}", file=out)
        print(f"shape = {shape}", file=out)
        print(f'dtype = "{dtype}"', file=out)


if __name__ == "__main__":
    main()
