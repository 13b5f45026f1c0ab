"""Shared-memory bank model (verifier/core/banks.py).

Expected values are derived by hand from the hardware rules (32 banks of 4-byte words; a
wavefront serves one word per bank; same word = broadcast; 8-byte accesses in half-warp phases,
16-byte accesses in quarter-warp phases), and, where Triton offers it, compared with Gluon's
``bank_conflicts`` (``GluonOpBuilder.get_shared_bank_conflicts`` -> ``bankConflictsMemDesc``,
the excess wavefronts per wavefront) run in a subprocess.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from layoutverify.core.banks import bank_conflicts
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout

ROWS = [[1, 0], [2, 0], [4, 0], [8, 0], [16, 0]]
COLS = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16]]


def row_major(m, n) -> Layout:
    """offset -> (row, col) of an unswizzled row-major m x n tile."""
    return Layout.from_table([("offset", m * n)], [m, n], np.stack(np.divmod(np.arange(m * n), n), axis=1))


def test_column_access_fp32_is_32_way():
    # lane l reads (l, c): byte 128*l + 4c, word 32*l + c, bank c for every lane -> 32 words in one bank
    reg = Layout.from_bases({"register": COLS, "lane": ROWS}, [32, 32])
    r = bank_conflicts(reg, row_major(32, 32), 32, max_vector_bytes=4)
    assert (r.vector, r.conflict_ways, r.wavefronts, r.ideal_wavefronts) == (1, 32, 32, 1)
    assert r.instructions == 32 and r.total_wavefronts == 32 * 32
    assert r.triton_bank_conflicts == 31
    assert r.witness["lanes"] == list(range(32)) and len(r.witness["words"]) == 32


def test_column_access_vectorized_is_8_way_per_quarter_warp():
    # each lane holds its whole row: 16-byte vectors (4 words, banks 4k..4k+3); a quarter-warp of 8
    # lanes (8 rows) hits 8 distinct words of the same bank -> 8 wavefronts per phase, 4 phases
    reg = Layout.from_bases({"register": COLS, "lane": ROWS}, [32, 32])
    r = bank_conflicts(reg, row_major(32, 32), 32)
    assert (r.vector, r.access_bytes, r.lanes_per_phase) == (4, 16, 8)
    assert (r.conflict_ways, r.wavefronts, r.ideal_wavefronts, r.instructions) == (8, 32, 4, 8)


def test_row_access_is_conflict_free():
    reg = Layout.from_bases({"register": ROWS, "lane": COLS}, [32, 32])
    r = bank_conflicts(reg, row_major(32, 32), 32)
    assert (r.vector, r.conflict_ways, r.wavefronts, r.ideal_wavefronts) == (1, 1, 1, 1)


def test_xor_swizzle_makes_column_access_conflict_free():
    # offset(r, c) = 32 r + (c ^ r): column c is spread over banks c ^ r, all distinct
    table = np.zeros((1024, 2), dtype=np.int64)
    for r in range(32):
        for c in range(32):
            table[32 * r + (c ^ r)] = (r, c)
    shared = Layout.from_table([("offset", 1024)], [32, 32], table)
    assert shared.is_f2_linear()
    reg = Layout.from_bases({"register": COLS, "lane": ROWS}, [32, 32])
    r = bank_conflicts(reg, shared, 32, max_vector_bytes=4)
    assert (r.conflict_ways, r.wavefronts) == (1, 1)


def test_broadcast_read_is_one_wavefront():
    # every lane reads the same element: one word
    reg = Layout.from_bases({"register": ROWS + COLS, "lane": [[0, 0]] * 5}, [32, 32])
    r = bank_conflicts(reg, row_major(32, 32), 32, max_vector_bytes=4)
    assert (r.conflict_ways, r.wavefronts) == (1, 1)


def test_fp16_lanes_sharing_a_word_do_not_conflict():
    # lane l reads (0, l) in f16: lanes 2k and 2k+1 share word k; 16 words in 16 banks
    reg = Layout.from_bases({"register": ROWS, "lane": COLS}, [32, 32])
    r = bank_conflicts(reg, row_major(32, 32), 16)
    assert (r.vector, r.access_bytes, r.conflict_ways) == (1, 2, 1)


def test_two_rows_in_one_instruction_are_2_way():
    # lanes 0-15 read row 0 cols 0-15, lanes 16-31 row 1: word 32 + c shares bank c with word c
    reg = Layout.from_bases({"register": [[2, 0], [4, 0], [8, 0], [16, 0], [0, 16]],
                             "lane": [[0, 1], [0, 2], [0, 4], [0, 8], [1, 0]]}, [32, 32])
    r = bank_conflicts(reg, row_major(32, 32), 32)
    assert (r.vector, r.conflict_ways, r.wavefronts) == (1, 2, 2)
    assert r.witness["bank"] in range(16) and len(r.witness["words"]) == 2


def test_8_byte_accesses_use_two_half_warp_phases():
    # f32 pairs: lane l holds (0, 2l), (0, 2l+1) of a 1 x 64 row: 256 contiguous bytes
    reg = Layout.from_bases({"register": [[0, 1]], "lane": [[0, 2], [0, 4], [0, 8], [0, 16], [0, 32]]}, [1, 64])
    r = bank_conflicts(reg, row_major(1, 64), 32)
    assert (r.vector, r.access_bytes, r.lanes_per_phase) == (2, 8, 16)
    assert (r.conflict_ways, r.wavefronts, r.ideal_wavefronts) == (1, 2, 2)


def test_non_power_of_two_padding_row_is_conflict_free():
    # a 32 x 33 f32 tile, row-major: column c of row l is word 33 l + c, bank (l + c) % 32
    shared = row_major(32, 33)
    assert not shared.is_f2_linear()
    reg = Layout.from_modes([("register", 33), ("lane", 32)], [32, 33],
                            {"register": [(33, [0, 1])], "lane": [(32, [1, 0])]})
    r = bank_conflicts(reg, shared, 32, max_vector_bytes=4)
    assert (r.conflict_ways, r.wavefronts, r.instructions) == (1, 1, 33)
    # the same access without the padding column: 32 x 32, all lanes in one bank
    reg32 = Layout.from_modes([("register", 32), ("lane", 32)], [32, 32],
                              {"register": [(32, [0, 1])], "lane": [(32, [1, 0])]})
    assert bank_conflicts(reg32, row_major(32, 32), 32, max_vector_bytes=4).conflict_ways == 32


def test_vector_rule_uniform_vs_simt():
    # the second register pair is stored swapped in memory: a legal SIMT vector (the slot of each
    # register is the same in every lane) but not the same slot order in every run
    table = np.zeros((64, 2), dtype=np.int64)
    for r in range(2):
        for c in range(32):
            o = 32 * r + c
            table[o ^ (1 if (c // 2) % 2 else 0)] = (r, c)
    shared = Layout.from_table([("offset", 64)], [2, 32], table)
    reg = Layout.from_bases({"register": [[0, 1], [0, 2]], "lane": [[0, 4], [0, 8], [0, 16], [1, 0], [0, 0]]}, [2, 32])
    assert bank_conflicts(reg, shared, 32, vector_rule="simt").vector == 4
    assert bank_conflicts(reg, shared, 32).vector == 1  # Triton's rule refuses the permuted runs


def test_bad_input():
    reg = Layout.from_bases({"register": COLS, "lane": ROWS}, [32, 32])
    with pytest.raises(LayoutError):
        bank_conflicts(reg, row_major(32, 32), 12)
    with pytest.raises(LayoutError):
        bank_conflicts(reg, row_major(16, 64), 32)
    with pytest.raises(LayoutError):
        bank_conflicts(row_major(32, 32), row_major(32, 32), 32)
    with pytest.raises(LayoutError):
        bank_conflicts(reg, reg, 32)


# ---------------------------------------------------------------------------------------------
# Triton's bank_conflicts as an oracle
def brute_force_ways(reg: Layout, shared: Layout, bits: int, vector: int) -> int:
    """An independent, loop-by-loop count of the documented rule for a given vector width: each
    lane's elements are grouped into aligned runs of ``vector`` offsets; a lane's ``i``-th run
    (ordered by lowest register) goes to instruction ``i``; per instruction and phase of
    ``128 / max(access bytes, 4)`` lanes, the largest number of distinct words in one bank."""
    inv = {}
    for o, el in enumerate(shared.table()):
        inv.setdefault(tuple(int(x) for x in el), o)
    nbytes = bits // 8
    per_phase = 128 // max(vector * nbytes, 4)
    names = reg.in_names
    runs = {}  # (block, warp, lane) -> {run start offset: lowest register}
    for loc, el in zip(reg.hardware_indices(), reg.table()):
        hw = dict(zip(names, (int(x) for x in loc)))
        o = inv[tuple(int(x) for x in el)]
        key = (hw.get("block", 0), hw.get("warp", 0), hw["lane"])
        start = o - o % vector
        runs.setdefault(key, {})
        runs[key][start] = min(runs[key].get(start, 1 << 30), hw["register"])
    words = {}  # (block, warp, instruction, phase) -> {bank: set of words}
    for (blk, warp, lane), starts in runs.items():
        for i, start in enumerate(sorted(starts, key=lambda s: starts[s])):
            first, last = start * nbytes // 4, ((start + vector) * nbytes - 1) // 4
            for w in range(first, last + 1):
                words.setdefault((blk, warp, i, lane // per_phase), {}).setdefault(w % 32, set()).add(w)
    return max(len(ws) for banks in words.values() for ws in banks.values())


def _oracle_worker():  # pragma: no cover - subprocess
    import contextlib
    import io
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    from triton._C.libtriton import gluon_ir, ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonASTSource

    @gluon.jit
    def kernel(reg_type: gl.constexpr, shared_type: gl.constexpr):
        c: gl.constexpr = gl.bank_conflicts(reg_type, shared_type)
        gl.static_print("BANKS", c)

    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    ctx = ir.context()
    ir.load_dialects(ctx)
    b = gluon_ir.GluonOpBuilder(ctx)
    dts = {8: gl.int8, 16: gl.float16, 32: gl.float32}
    for line in sys.stdin:
        c = json.loads(line)
        out = {"id": c["id"]}
        try:
            shape = c["shape"]
            reg = gl.BlockedLayout(*c["reg"])
            sh = gl.SwizzledSharedLayout(*c["swizzled"]) if "swizzled" in c else \
                gl.NVMMASharedLayout(c["nvmma"][0], c["bits"], transposed=c["nvmma"][1])
            rl = b.to_linear_layout(reg._to_ir(b), shape)
            sl = b.to_linear_layout(sh._to_ir(b), shape)
            out["reg"] = {"register": rl.reg_bases, "lane": rl.lane_bases, "warp": rl.warp_bases}
            out["shared"] = {"offset": sl.offset_bases}
            consts = {"reg_type": gl.distributed_type(dts[c["bits"]], shape, reg),
                      "shared_type": gl.shared_memory_descriptor_type(dts[c["bits"]], shape, sh, shape)}
            src = GluonASTSource(kernel, {k: "constexpr" for k in consts}, constexprs=consts)
            options = backend.parse_options({"num_warps": c["num_warps"]})
            cctx = ir.context()
            ir.load_dialects(cctx)
            backend.load_dialects(cctx)
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(), cctx)
            out["triton"] = int(buf.getvalue().split("BANKS")[-1].split()[0])
        except Exception as e:
            out["error"] = f"{type(e).__name__}: {str(e)[:200]}"
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


def _oracle_cases(n=220, seed=7):
    rnd = random.Random(seed)
    cases = []
    while len(cases) < n:
        shape = [1 << rnd.randint(4, 7), 1 << rnd.randint(4, 7)]
        nw = rnd.choice([1, 2, 4, 8])
        t0, w0 = 1 << rnd.randint(0, 5), 1 << rnd.randint(0, nw.bit_length() - 1)
        reg = [[1 << rnd.randint(0, 3), 1 << rnd.randint(0, 3)], [t0, 32 // t0], [w0, nw // w0], rnd.choice([[1, 0], [0, 1]])]
        bits = rnd.choice([8, 16, 32])
        c = {"id": len(cases), "shape": shape, "num_warps": nw, "reg": reg, "bits": bits}
        if rnd.random() < 0.6:
            c["swizzled"] = [1 << rnd.randint(0, 3), 1 << rnd.randint(0, 2), 1 << rnd.randint(0, 3), rnd.choice([[1, 0], [0, 1]])]
        else:
            tr = rnd.random() < 0.3
            inner = (shape[0] if tr else shape[1]) * bits // 8
            c["nvmma"] = [rnd.choice([x for x in (0, 32, 64, 128) if x <= inner]), tr]
        cases.append(c)
    return cases


def _run_oracle(cases):
    env = dict(os.environ, TRITON_DEFAULT_FP_FUSION="1", PYTHONWARNINGS="ignore")
    results, todo = {}, list(cases)
    while todo:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--oracle"], input="".join(
            json.dumps(c) + "\n" for c in todo), capture_output=True, text=True, env=env, timeout=300)
        for line in p.stdout.splitlines():
            r = json.loads(line)
            results[r["id"]] = r
        todo = [c for c in todo if c["id"] not in results]
        if todo:  # the worker died on todo[0] (a Triton abort): record it and go on
            results[todo[0]["id"]] = {"id": todo[0]["id"], "error": f"crash (exit {p.returncode})"}
            todo = todo[1:]
    return results


def test_bank_conflicts_agree_with_triton():
    pytest.importorskip("triton")
    try:
        from triton.experimental.gluon import language as gl
    except ImportError:
        pytest.skip("this Triton has no Gluon")
    if not hasattr(gl, "bank_conflicts"):
        pytest.skip("this Triton has no gl.bank_conflicts")
    cases = _oracle_cases()
    res = _run_oracle(cases)
    ok = [c for c in cases if "triton" in res[c["id"]]]
    assert len(ok) >= 200, [res[c["id"]].get("error") for c in cases if c not in ok][:5]
    agree, understated = 0, []
    for c in ok:
        r = res[c["id"]]
        reg = Layout.from_bases(r["reg"], c["shape"])
        shared = Layout.from_bases(r["shared"], c["shape"])
        ours = bank_conflicts(reg, shared, c["bits"])
        if ours.triton_bank_conflicts == r["triton"]:
            agree += 1
            continue
        # Disagreement: re-count independently, loop by loop, at our vector width
        understated.append((c, r["triton"], ours.triton_bank_conflicts, ours.vector))
        assert brute_force_ways(reg, shared, c["bits"], ours.vector) == ours.conflict_ways, c
        # The only kind seen: Triton's F2 formula under-counts when accesses are narrower than a
        # word and a lane's offset differs from a conflicting lane's inside the word (a swizzle
        # that moves sub-word elements): words are what banks serve.
        assert ours.conflict_ways - 1 > r["triton"] and ours.access_bytes < 4, (c, r["triton"], ours.to_json())
    print(f"\nbank conflicts: {agree}/{len(ok)} agree with Triton; Triton under-counts {len(understated)}: "
          f"{[(u[0]['shape'], u[0]['reg'], u[0].get('swizzled') or u[0].get('nvmma'), u[0]['bits'], u[1], u[2]) for u in understated[:3]]}")
    assert agree >= 0.95 * len(ok)


def test_triton_understates_sub_word_swizzle():
    """A worked case (found by the sweep above): an int8 16x128 blocked [1,4],[4,8],[2,1] tile
    stored through swizzled_shared(vec=2, perPhase=1, maxPhase=2). Rows 0..3 of one warp start at
    bytes 0, 128, 256, 384 and the swizzle only moves 2-byte pieces inside 4-byte words, so lanes
    of all four rows hit banks 0..7 with 4 distinct words each: 4-way. Triton reports 1 excess
    access (2-way)."""
    reg = Layout.from_bases({"register": [[0, 1], [0, 2], [0, 32], [0, 64], [8, 0]],
                             "lane": [[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]], "warp": [[4, 0]]}, [16, 128])
    shared = Layout.from_bases({"offset": [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [0, 32], [0, 64], [1, 2],
                                           [2, 0], [4, 0], [8, 0]]}, [16, 128])
    r = bank_conflicts(reg, shared, 8)
    assert (r.vector, r.conflict_ways) == (2, 4)
    assert brute_force_ways(reg, shared, 8, 2) == 4
    w = r.witness
    assert len(w["words"]) == 4 and len({x % 32 for x in w["words"]}) == 1 and w["bank"] == w["words"][0] % 32


if __name__ == "__main__":  # pragma: no cover
    if "--oracle" in sys.argv:
        _oracle_worker()
