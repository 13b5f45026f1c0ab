"""Whole-kernel validation (``layoutverify.apps.kernels``): the PTX of tutorial-style Triton kernels
against their own TTIR, element by element, without a GPU.

* Every kernel of ``tests/kernel_corpus.py`` compiled on the CPU for sm_80 and sm_90 by Triton 3.9
  and by 3.8 (its own environment, ``tests/triton_releases.py``) is ``valid``.
* The reference is right: the terms the TTIR interpreter stores, evaluated on concrete inputs,
  equal numpy's matmul and layer norm of the same inputs (an independent oracle).
* A mutation catalogue applied to the PTX is caught every time, with the first wrong element the
  mutation implies (the products a swapped register leaves out, the element a dropped mask
  writes, the access a removed barrier or wait leaves unordered); every *wrong value* carries a
  witness that numpy re-checks.
* Bad input is one line and exit 2; kernels outside the subset are ``unsupported`` (exit 3).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from kernel_cache import corpus_folders
from kernel_corpus import KERNELS, LAUNCH, positional_launch

from layoutverify.apps.kernels.folder import find_kernels
from layoutverify.apps.kernels.validate import Launch, validate_kernel, validate_kernel_folder

#: corpus kernels the tests validate (matmul_128 is the benchmark's: 128x128x64 on one core)
CASES = [(n, a) for n, spec in KERNELS.items() if n != "matmul_128" for a in spec["archs"]]


#: sm_90 kernels whose loop feeds wgmma from cp.async: Triton 3.3 - 3.6 omit the fence.proxy.async
#: the PTX ISA requires between the generic-proxy writes of cp.async and wgmma's async-proxy reads
#: (§9.7.15.4); 3.7.1 has it (the cherry-pick of triton-lang/triton#9610, #10537)
CP_ASYNC_WGMMA = [("matmul", 90), ("attention", 90), ("matmul_fp8_scaled", 90)]


@pytest.fixture(scope="module")
def corpus(triton_python):
    memo = {}

    def get(release: str, cases=None) -> dict:
        key = (release, tuple(cases or CASES))
        if key not in memo:
            memo[key] = corpus_folders(_python(triton_python, release), release,
                                       [f"{n}:{a}" for n, a in (cases or CASES)])
        return memo[key]
    return get


def _python(triton_python, release: str) -> str:
    """The release's interpreter; a release the environment mechanism does not offer skips."""
    try:
        return triton_python(release)
    except KeyError as e:
        pytest.skip(f"tests/triton_releases.py offers no Triton {release} here ({e})")


def _files(corpus, release, name, arch, cases=None):
    folder = corpus(release, cases)[(name, arch)]
    assert not folder.startswith("error:"), (name, arch, folder)
    kf, = find_kernels([folder])
    return kf


def _run(kf, name, ptx=None, launch=None):
    ttir, real_ptx, meta, _ = kf.read()
    return validate_kernel(ttir, ptx if ptx is not None else real_ptx, meta,
                           Launch.from_json(launch or positional_launch(name)), name=name)


# -- every corpus kernel is valid -------------------------------------------------------------------
@pytest.mark.parametrize("release", ["3.9", "3.8"])
@pytest.mark.parametrize("name,arch", CASES, ids=[f"{n}-sm{a}" for n, a in CASES])
def test_corpus_kernel_is_valid(corpus, release, name, arch):
    kf = _files(corpus, release, name, arch)
    out = _run(kf, name)
    assert out.triton.startswith(release + "."), out.triton
    assert out.verdict == "valid", (out.reason, out.first_wrong)
    assert out.elements > 0 and len(out.pids) == len(LAUNCH[name]["pids"])


# -- older releases and a real miscompile ---------------------------------------------------------
def test_the_corpus_compiled_by_triton_3_6_is_valid_but_for_the_proxy_fence(corpus):
    """Every corpus kernel Triton 3.6 compiles is valid, except the sm_90 kernels whose cp.async
    copies feed wgmma (:data:`CP_ASYNC_WGMMA`, checked below)."""
    cases = [c for c in CASES if c not in CP_ASYNC_WGMMA and KERNELS[c[0]].get("since", "3.6") <= "3.6"]
    got = corpus("3.6", cases)
    bad = []
    for name, arch in cases:
        folder = got[(name, arch)]
        if folder.startswith("error:"):
            bad.append((name, arch, folder))
            continue
        kf, = find_kernels([folder])
        out = _run(kf, name)
        if out.verdict != "valid":
            bad.append((name, arch, out.reason))
    assert not bad, bad


@pytest.mark.parametrize("release", ["3.7", "3.6", "3.5", "3.3"])
@pytest.mark.parametrize("name,arch", CP_ASYNC_WGMMA, ids=[f"{n}-sm{a}" for n, a in CP_ASYNC_WGMMA])
def test_cp_async_feeding_wgmma_needs_a_proxy_fence(corpus, release, name, arch):
    """Triton 3.3 - 3.6 compile the tutorial matmul (and attention, the fp8 matmul) for sm_90 with
    cp.async copies that wgmma reads without the fence.proxy.async the PTX ISA requires between the
    two proxies; the first wrong element is that wgmma's read of the first stage's first element.
    3.7.1 carries the fix (triton-lang/triton#10537, the cherry-pick of #9610)."""
    kf = _files(corpus, release, name, arch, CP_ASYNC_WGMMA)
    out = _run(kf, name)
    if release == "3.7":
        assert out.verdict == "valid", (out.reason, out.first_wrong)
        return
    assert out.verdict == "wrong", (out.verdict, out.reason)
    fw = out.first_wrong
    assert fw["what"] == "hazard" and "no fence.proxy.async" in fw["message"] and "wgmma" in fw["message"]
    first = {"matmul": "a_ptr[0, 0]", "matmul_fp8_scaled": "a_ptr[0]", "attention": "K["}[name]
    if release == "3.3":   # its TTIR names arguments by position: a_ptr is %arg0, K is %arg1
        first = {"matmul": "arg0[0, 0]", "matmul_fp8_scaled": "arg0[0]", "attention": "arg1["}[name]
    assert fw["element_held"].startswith(first), fw


# -- the reference against numpy ---------------------------------------------------------------------
def _reference_terms(kf, name):
    """The stored terms of the reference (run alone) for the launch's first program id."""
    from layoutverify.apps.kernels.memory import Memory  # noqa: F401
    from layoutverify.apps.kernels.reference import Reference
    from layoutverify.apps.kernels.validate import _setup
    from layoutverify.apps.kernels.ttir import parse_ttir
    from layoutverify.apps.ptxsim import parse_ptx
    ttir, ptx, meta, _ = kf.read()
    launch = Launch.from_json(LAUNCH[name])
    fn, prog = parse_ttir(ttir), parse_ptx(ptx)
    st = _setup(fn, prog, meta, launch)
    Reference(fn, st.terms, st.mem_ref, st.ref_args, launch.pids[0], launch.grid).run()
    return st


def _stored(st, buffer, elems):
    """Term ids the reference stored in ``buffer`` at element indices ``elems``."""
    from layoutverify.apps.kernels.terms import TYPE_BYTES
    from layoutverify.apps.ptxsim.state import TAG0
    r = [reg.name for reg in st.mem_ref.regions].index(buffer)
    eb = TYPE_BYTES[st.terms.regions[st.mem_ref.regions[r].term_region].dtype]
    base = st.mem_ref.base(r)
    codes = st.mem_ref.load((base + np.asarray(elems) * eb).astype(np.uint64), 1)[:, 0]
    return (codes - TAG0) // 8


def _values(st, name, shape, seed=1):
    """The witness values of buffer ``name``'s leaves (the inputs the Evaluator uses)."""
    from layoutverify.apps.kernels.match import leaf_values
    r = [reg.name for reg in st.terms.regions].index(name)
    ids = st.terms.leaf(r, np.arange(int(np.prod(shape))))
    return leaf_values(ids, seed).reshape(shape)


def test_reference_matmul_is_numpy_matmul(corpus):
    from layoutverify.apps.kernels.match import Evaluator
    kf = _files(corpus, "3.9", "matmul", 80)
    st = _reference_terms(kf, "matmul")
    a = _values(st, "a_ptr", (96, 144))
    b = _values(st, "b_ptr", (144, 128))
    want = (a @ b).astype(np.float32).astype(np.float16).astype(np.float64)   # fp32 accumulation exact here
    ev = Evaluator(st.terms, 1)
    rows, cols = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")   # program 0: the tile (0, 0)
    ids = _stored(st, "c_ptr", (rows * 128 + cols).reshape(-1))
    got = np.array([ev.value(int(t)) for t in ids]).reshape(64, 64)
    assert np.array_equal(got, want[:64, :64])


def test_reference_layer_norm_is_numpy_layer_norm(corpus):
    from layoutverify.apps.kernels.match import Evaluator
    kf = _files(corpus, "3.9", "layer_norm", 80)
    st = _reference_terms(kf, "layer_norm")
    x = _values(st, "X", (320,))[:300]            # row 0 (program 0), N = 300 columns
    w = _values(st, "W", (300,))
    b = _values(st, "B", (300,))
    eps = _values(st, "eps", (1,))[0]
    mean = x.mean()
    var = ((x - mean) ** 2).mean()
    want = (x - mean) / np.sqrt(var + eps) * w + b
    ev = Evaluator(st.terms, 1)
    got = np.array([ev.value(int(t)) for t in _stored(st, "Y", np.arange(300))])
    finite = np.isfinite(want)
    assert finite.sum() > 250 and np.allclose(got[finite], want[finite], rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("name,arch", [("matmul", 90), ("matmul_m16", 90), ("matmul_tma_persistent", 90),
                                       ("matmul_fp8_scaled", 90)])
def test_the_ptx_models_values_are_numpys(corpus, name, arch):
    """What the PTX machine says the kernel stores (wgmma descriptors and swizzles, mma.sync
    fragments, TMA boxes with out-of-bounds fill), evaluated on the GPU tests' inputs, is numpy's
    product of the same inputs: the values ``tests/test_gpu_kernel_models.py`` compares with the GPU."""
    from kernel_corpus import GPU_LAUNCH
    from layoutverify.apps.kernels import terms as T
    from layoutverify.apps.kernels.match import leaf_values
    from layoutverify.apps.kernels.validate import model_stores
    kf = _files(corpus, "3.9", name, arch, [(name, arch)])
    ttir, ptx, meta, _ = kf.read()
    launch = GPU_LAUNCH[name]
    got = model_stores(ttir, ptx, meta, Launch.from_json(launch))
    views = launch["views"]

    def inputs(region, shape):
        return leaf_values(((region + 1) << T.LEAF_BITS) | np.arange(int(np.prod(shape))), 1).reshape(shape)
    a, b = inputs(0, views["a_ptr"]), inputs(1, views["b_ptr"])
    if name == "matmul_tma_persistent":
        want = a @ b.T                             # b is N x K
    elif name == "matmul_fp8_scaled":
        want = (a @ b.T) * (inputs(3, [1])[0] * inputs(4, [1])[0])
    else:
        want = a @ b
    want = want.astype(np.float32).astype(np.float16).astype(np.float64).reshape(-1)
    c = got["c_ptr"]
    idx = np.array(sorted(c))
    assert len(idx) == want.size or name == "matmul_m16"
    assert np.array_equal(np.array([c[i] for i in idx]), want[idx])


# -- the mutation catalogue -------------------------------------------------------------------------------
def _sub_once(pattern, repl, text, flags=0):
    new, n = re.subn(pattern, repl, text, count=1, flags=flags)
    assert n == 1, f"the mutation found no {pattern!r}"
    return new


def _coords(text):
    """``name[r, c]`` pairs of a rendered product list, as ``(name, r, c)``."""
    return [(m.group(1), int(m.group(2)), int(m.group(3))) for m in re.finditer(r"(\w+)\[(\d+), (\d+)\]", text)]


def _wrong_value(out):
    assert out.verdict == "wrong", (out.verdict, out.reason)
    fw = out.first_wrong
    assert fw["what"] == "wrong value", fw
    assert fw["witness"]["expected_value"] != fw["witness"]["actual_value"]
    return fw


def _recheck_matmul_witness(kf, fw):
    """numpy re-computes the expected value of the first wrong element on the witness inputs."""
    from layoutverify.apps.kernels.match import leaf_values  # noqa: F401
    st = _reference_terms(kf, "matmul")
    seed = fw["witness"]["seed"]
    a = _values(st, "a_ptr", (96, 144), seed)
    b = _values(st, "b_ptr", (144, 128), seed)
    r, c = fw["tensor_index"]
    want = float(np.float16(np.float32(a[r] @ b[:, c])))
    assert fw["witness"]["expected_value"] == want != fw["witness"]["actual_value"]


def test_mutation_swapped_ldmatrix_destinations(corpus):
    kf = _files(corpus, "3.9", "matmul", 80)
    ptx = kf.read()[1]
    bad = _sub_once(r"(ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16 \{)(%r\d+), (%r\d+),", r"\1\3, \2,", ptx)
    fw = _wrong_value(_run(kf, "matmul", bad))
    _recheck_matmul_witness(kf, fw)
    dot = fw["dot"]
    assert dot["n_missing"] == dot["n_extra"] > 0
    # the swapped registers hold the 8x8 matrices of rows r and r + 8: the products trade A rows
    miss = [x for x in _coords(" ".join(dot["missing_products"])) if x[0] == "a_ptr"]
    extra = [x for x in _coords(" ".join(dot["extra_products"])) if x[0] == "a_ptr"]
    assert miss and extra and {abs(e[1] - m[1]) for m in miss for e in extra} == {8}
    assert all(m[1] == fw["tensor_index"][0] for m in miss)
    assert fw["writer"]["ptx_line"] > 0 and fw["writer"]["register"].startswith("%r")


def test_mutation_wrong_k_offset_in_a_shared_address(corpus):
    kf = _files(corpus, "3.9", "matmul", 90)
    ptx = kf.read()[1]
    # the second k16 step's A descriptor is the first one + 2 (32 bytes >> 4, k = 16): make it + 1
    # (16 bytes, k = 8): the step multiplies columns 8-23 of A instead of 16-31
    desc = re.search(r"bfe\.u32 \t(%r\d+), %r\d+, 4, 15;", ptx).group(1)
    bad = _sub_once(rf"(add\.s32 \t%r\d+, {re.escape(desc)}, )2;", r"\g<1>1;", ptx)
    fw = _wrong_value(_run(kf, "matmul", bad))
    dot = fw["dot"]
    assert dot["n_missing"] > 0 and dot["n_extra"] > 0
    miss_k = {x[2] for x in _coords(" ".join(dot["missing_products"])) if x[0] == "a_ptr"}
    extra_k = {x[2] for x in _coords(" ".join(dot["extra_products"])) if x[0] == "a_ptr"}
    assert miss_k and extra_k and min(extra_k) % 32 < min(miss_k) % 32


def test_mutation_second_k_step_reads_the_initial_accumulator(corpus):
    kf = _files(corpus, "3.9", "matmul", 80)
    lines = kf.read()[1].split("\n")
    seen, target = set(), None
    for i, ln in enumerate(lines):
        m = re.search(r"mma\.sync\.aligned\.\S+ (\{[^}]*\}), \{[^}]*\}, \{[^}]*\}, (\{[^}]*\});", ln)
        if m:
            if m.group(1) in seen:
                target = i
                break
            seen.add(m.group(1))
    assert target is not None
    lines[target] = re.sub(r", \{[^}]*\};$", ", { 0f00000000, 0f00000000, 0f00000000, 0f00000000 };", lines[target])
    fw = _wrong_value(_run(kf, "matmul", "\n".join(lines)))
    _recheck_matmul_witness(kf, fw)
    dot = fw["dot"]
    # the mutated mma runs in every iteration and restarts from zero: the stored sum holds one
    # k16 step's 16 products (the last), every earlier product is missing, none is extra
    assert dot["products_actual"] == 16 and dot["products_expected"] == 160
    assert dot["n_missing"] > 0 and dot["n_extra"] == 0


def test_mutation_removed_bar_sync(corpus):
    kf = _files(corpus, "3.9", "matmul", 80)
    lines = kf.read()[1].split("\n")
    # the barrier before a stage is refilled: the next copy or matrix load after it is a cp.async
    for i, ln in enumerate(lines):
        if ln.strip() == "bar.sync \t0;":
            nxt = next(x for x in lines[i + 1:] if re.search(r"cp\.async\.cg|ldmatrix|cp\.async\.wait", x))
            if "cp.async.cg" in nxt:
                lines[i] = ""
                break
    else:
        pytest.fail("no barrier before a stage refill")
    out = _run(kf, "matmul", "\n".join(lines))
    assert out.verdict == "wrong" and out.first_wrong["what"] == "hazard"
    assert "race" in out.first_wrong["message"] and out.first_wrong["element_held"].startswith(("a_ptr[", "b_ptr["))


def test_mutation_removed_cp_async_wait_group(corpus):
    kf = _files(corpus, "3.9", "matmul", 80)
    bad = re.sub(r"\n\s*cp\.async\.wait_group \t[1-9];", "\n", kf.read()[1])
    out = _run(kf, "matmul", bad)
    assert out.verdict == "wrong" and out.first_wrong["what"] == "hazard"
    assert "before the asynchronous copy" in out.first_wrong["message"]
    assert out.first_wrong["element_in_flight"].startswith(("a_ptr[", "b_ptr["))


def test_mutation_swizzle_xor_constant(corpus):
    kf = _files(corpus, "3.9", "matmul", 80)
    ptx = kf.read()[1]
    m = re.search(r"xor\.b32 \t(%r\d+), (%r\d+), (16|32|48|64|96|112);", ptx)
    bad = ptx[:m.start()] + f"xor.b32 \t{m.group(1)}, {m.group(2)}, {int(m.group(3)) ^ 16};" + ptx[m.end():]
    out = _run(kf, "matmul", bad)
    assert out.verdict == "wrong", out.reason
    fw = out.first_wrong
    if fw["what"] == "wrong value":
        _recheck_matmul_witness(kf, fw)
        assert fw["dot"]["n_missing"] > 0
    else:   # a copy landing on bytes another warp's copy owns is a race as well
        assert fw["what"] == "hazard"


def test_mutation_wrong_mma_operand_register(corpus):
    kf = _files(corpus, "3.9", "matmul", 80)
    ptx = kf.read()[1]
    bad = _sub_once(r"(mma\.sync\.aligned\.\S+ \{[^}]*\}, \{ )(%r\d+), (%r\d+)", r"\1\3, \3", ptx)
    fw = _wrong_value(_run(kf, "matmul", bad))
    _recheck_matmul_witness(kf, fw)
    assert fw["dot"]["n_missing"] == fw["dot"]["n_extra"] > 0


def test_mutation_tma_box_coordinate(corpus):
    kf = _files(corpus, "3.9", "matmul_tma_persistent", 90)
    ptx = kf.read()[1]
    loads = list(re.finditer(r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global\S* \[%r\d+\], \[(%rd\d+), \{(%r\d+), "
                             r"(%r\d+)\}\]", ptx))
    first_k = loads[0].group(2)
    third = next(m for m in loads if m.group(2) != first_k)     # a later k tile
    bad = ptx[:third.start(2)] + first_k + ptx[third.end(2):]
    fw = _wrong_value(_run(kf, "matmul_tma_persistent", bad))
    dot = fw["dot"]
    assert dot["n_missing"] > 0
    ks = {x[2] for x in _coords(" ".join(dot["missing_products"] + dot["extra_products"])) if x[0] == "a_ptr"}
    assert ks


def test_mutation_store_mask_dropped(corpus):
    kf = _files(corpus, "3.9", "layer_norm", 80)
    ptx = kf.read()[1]
    stores = list(re.finditer(r"@%p\d+ (st\.global\.b16)", ptx))
    last = stores[-1]
    bad = ptx[:last.start()] + last.group(1) + ptx[last.end():]
    out = _run(kf, "layer_norm", bad)
    assert out.verdict == "wrong"
    fw = out.first_wrong
    assert fw["what"].startswith("extra store") and fw["buffer"] == "Y"
    assert fw["element"] == 300                 # N = 300: the first column the mask cuts, row 0
    assert fw["writer"]["thread"] == 300 - 256  # the third 128-column block, thread 44
    assert fw["masked"] is True


# -- the command line ---------------------------------------------------------------------------------
def _cli(args, cli_env):
    return subprocess.run([sys.executable, "-m", "layoutverify", *args], capture_output=True, text=True,
                          env=cli_env, timeout=600)


def test_cli_validates_a_folder_and_reports_json(corpus, cli_env):
    folder = corpus("3.9")[("layer_norm", 80)]
    r = _cli(["validate", folder, "--arg", "N=300", "--arg", "stride=320", "--json", "-"], cli_env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["kind"] == "kernel_validation" and doc["summary"]["valid"] == 1 and doc["exit"] == 0
    assert doc["kernels"][0]["verdict"] == "valid" and doc["kernels"][0]["elements"] > 0


def test_cli_exit_codes_for_wrong_and_bad_input(corpus, cli_env, tmp_path):
    folder = corpus("3.9")[("layer_norm", 80)]
    kf, = find_kernels([folder])
    ttir, ptx, meta, _ = kf.read()
    bad_dir = tmp_path / "k"
    bad_dir.mkdir()
    (bad_dir / "layer_norm.ttir").write_text(ttir)
    (bad_dir / "layer_norm.ptx").write_text(re.sub(r"@%p\d+ (st\.global\.b16)", r"\1", ptx))
    (bad_dir / "layer_norm.json").write_text(json.dumps(meta))
    (bad_dir / "layer_norm.launch.json").write_text(json.dumps(LAUNCH["layer_norm"]))
    r = _cli(["validate", str(bad_dir)], cli_env)
    assert r.returncode == 1 and "wrong" in r.stdout and "first wrong element: Y[" in r.stdout
    for args, token in ((["validate", str(tmp_path / "none")], "no such file"),
                        (["validate", folder, "--arg", "N"], "NAME=INT"),
                        (["validate", folder, "--arg", "nope=3"], "no integer argument 'nope'"),
                        (["validate", folder, "--grid", "2,x"], "--grid")):
        r = _cli(args, cli_env)
        assert r.returncode == 2 and token in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1
    (bad_dir / "layer_norm.ttir").write_text("module {\n  tt.func public @k(%x: !tt.what<f16>) {\n    tt.return\n  }\n}\n")
    r = _cli(["validate", str(bad_dir)], cli_env)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "tt.what" in r.stderr


def test_kernels_outside_the_subset_are_unsupported(tmp_path):
    ttir = """module {
  tt.func public @k(%x: !tt.ptr<f32>) {
    %c = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
    %p = tt.splat %x : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>
    %q = tt.addptr %p, %c : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
    %v = tt.load %q : tensor<4x!tt.ptr<f32>>
    %s = "tt.scan"(%v) <{axis = 0 : i32, reverse = false}> ({
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tt.scan.return %t : f32
    }) : (tensor<4xf32>) -> tensor<4xf32>
    tt.store %q, %s : tensor<4x!tt.ptr<f32>>
    tt.return
  }
}"""
    ptx = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1, .param .u64 k_param_2)
.reqntid 32
{
ret;
}"""
    out = validate_kernel(ttir, ptx, {"num_warps": 1}, Launch())
    assert out.verdict == "unsupported" and "tt.scan" in out.reason


def test_validate_kernel_folder_is_the_scan_entry_point(corpus):
    folder = corpus("3.9")[("softmax", 90)]
    out = validate_kernel_folder(folder, LAUNCH["softmax"])
    assert out.verdict == "valid" and out.path == folder and out.arch == "sm90"


def test_tiles_over_the_bound_are_refused_with_a_clear_message():
    ttir = """module {
  tt.func public @big(%a: !tt.ptr<f16>, %b: !tt.ptr<f16>) {
    %cst = arith.constant dense<0.000000e+00> : tensor<256x128xf32>
    %ra = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %pa = tt.splat %a : !tt.ptr<f16> -> tensor<256x!tt.ptr<f16>>
    %qa = tt.addptr %pa, %ra : tensor<256x!tt.ptr<f16>>, tensor<256xi32>
    %ea = tt.expand_dims %qa {axis = 1 : i32} : tensor<256x!tt.ptr<f16>> -> tensor<256x1x!tt.ptr<f16>>
    %ba = tt.broadcast %ea : tensor<256x1x!tt.ptr<f16>> -> tensor<256x64x!tt.ptr<f16>>
    %xa = tt.load %ba : tensor<256x64x!tt.ptr<f16>>
    %rb = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %pb = tt.splat %b : !tt.ptr<f16> -> tensor<128x!tt.ptr<f16>>
    %qb = tt.addptr %pb, %rb : tensor<128x!tt.ptr<f16>>, tensor<128xi32>
    %eb = tt.expand_dims %qb {axis = 0 : i32} : tensor<128x!tt.ptr<f16>> -> tensor<1x128x!tt.ptr<f16>>
    %bb = tt.broadcast %eb : tensor<1x128x!tt.ptr<f16>> -> tensor<64x128x!tt.ptr<f16>>
    %xb = tt.load %bb : tensor<64x128x!tt.ptr<f16>>
    %d = tt.dot %xa, %xb, %cst, inputPrecision = tf32 : tensor<256x64xf16> * tensor<64x128xf16> -> tensor<256x128xf32>
    tt.return
  }
}"""
    ptx = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry big(.param .u64 big_param_0, .param .u64 big_param_1, .param .u64 big_param_2)
.reqntid 128
{
ret;
}"""
    out = validate_kernel(ttir, ptx, {"num_warps": 4}, Launch())
    assert out.verdict == "unsupported" and out.reason.startswith("refused:")
    assert "256x128x64" in out.reason and "smaller blocks" in out.reason


def test_scan_validate_checks_whole_kernels_of_a_cache(corpus, cli_env, tmp_path):
    """``scan --validate`` on a Triton cache validates every NVIDIA kernel folder (TTIR + PTX) as
    a whole, beside its conversions: the cache as compiled is valid; the same cache with the
    barrier before a stage refill removed fails the scan (exit 1) naming the kernel and the race."""
    import shutil
    src = corpus("3.9")[("matmul", 80)]
    cache = tmp_path / "cache"
    shutil.copytree(src, cache / os.path.basename(src))
    r = _cli(["scan", "--validate", "--json", "-", str(cache)], cli_env)
    assert r.returncode == 0, r.stderr[-2000:]
    section = json.loads(r.stdout)["validation"]["kernels"]
    assert section["verdicts"]["valid"] == 1 and section["verdicts"]["wrong"] == 0, section
    ptx_file = next((cache / os.path.basename(src)).glob("*.ptx"))
    lines = ptx_file.read_text().split("\n")
    for i, ln in enumerate(lines):
        if ln.strip() == "bar.sync \t0;":
            nxt = next(x for x in lines[i + 1:] if re.search(r"cp\.async\.cg|ldmatrix|cp\.async\.wait", x))
            if "cp.async.cg" in nxt:
                lines[i] = ""
                break
    ptx_file.write_text("\n".join(lines))
    r = _cli(["scan", "--validate", "--quiet", str(cache)], cli_env)
    assert r.returncode == 1, r.stdout + r.stderr[-2000:]
    assert "WRONG kernel matmul" in r.stdout and "race" in r.stdout
