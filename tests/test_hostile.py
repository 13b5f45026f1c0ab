"""Hostile input: no text, file or option a user can give makes the CLI hang, blow up or crash.

Every case runs ``layoutverify`` and checks the contract of :mod:`layoutverify.apps.cli`: bad input
ends with exit status 2 and exactly one line on stderr, ``layoutverify[ COMMAND]: error: ...``
(no traceback, no ``internal error``, never exit 70), within a wall-time limit; valid input ends
with 0 or 1. Most cases run in this process through :func:`layoutverify.apps.cli.main` (with a
timer that interrupts a hang); the ones about devices, FIFOs and memory run as real subprocesses
(``python -m layoutverify``) under an address-space limit (``RLIMIT_AS``), so that a read of
``/dev/zero`` or a huge allocation fails the test instead of the machine.

The suite has four parts: a table of hand-written texts per adapter (triton, cute, tilus, iree, ptx,
amd); files (``@FILE`` layouts, corpus TOML, golden JSON, atlas corpora, output paths); options of
every subcommand; and hypothesis-generated mutations of valid texts per adapter (truncation,
duplicated tokens, huge numbers, non-ASCII digits, deep nesting, random bytes).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layoutverify.apps.cli import main

#: wall-time limit of one in-process case (seconds); bad input must be refused far faster
IN_PROCESS_LIMIT_S = 10
#: wall-time and address-space limits of one subprocess case
SUBPROCESS_LIMIT_S = 20
MEMORY_LIMIT = 2 << 30

ERROR_LINE = re.compile(r"^layoutverify(?: [a-z]+)?: error: \S.*$")


class Hang(Exception):
    """Raised by the timer when an in-process case runs past its limit."""


def _alarm(signum, frame):
    raise Hang(f"still running after {IN_PROCESS_LIMIT_S} s")


def run_in_process(argv: list[str]) -> tuple[int, str, str]:
    """``main(argv)`` with stdout/stderr captured, interrupted after :data:`IN_PROCESS_LIMIT_S`."""
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, IN_PROCESS_LIMIT_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as e:  # main should return, but never let a stray exit end pytest
                rc = e.code if isinstance(e.code, int) else 2
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return rc, out.getvalue(), err.getvalue()


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_subprocess(argv: list[str], cwd=None) -> tuple[int, str, str]:
    """``python -m layoutverify ARGV`` under :data:`MEMORY_LIMIT` bytes of address space."""
    env = {k: v for k, v in os.environ.items() if k != "LAYOUTVERIFY_DEBUG"}
    env["COLUMNS"] = "100"
    p = subprocess.run([sys.executable, "-m", "layoutverify", *argv], capture_output=True, text=True,
                       timeout=SUBPROCESS_LIMIT_S, preexec_fn=_limit_memory, cwd=cwd, env=env,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def json_error(out: str) -> str | None:
    """The message of a ``--json`` error object on stdout (the CLI's JSON schema), else None."""
    try:
        doc = json.loads(out)
    except ValueError:
        return None
    if isinstance(doc, dict) and doc.get("kind") == "error" and doc.get("exit") == 2:
        return str(doc.get("error", {}).get("message", ""))
    return None


def assert_refused(rc: int, err: str, must_mention: str | None = None, argv=None, out: str = ""):
    """Exit 2 and exactly one error line (naming ``must_mention`` when given); under ``--json`` the
    error may instead be one JSON error object on stdout with nothing on stderr."""
    where = f"argv={argv!r}\nstderr={err[-2000:]!r}\nstdout={out[-500:]!r}"
    if not err and argv and "--json" in argv and json_error(out) is not None:
        assert rc == 2, where
        if must_mention is not None:
            assert re.search(must_mention, json_error(out), re.IGNORECASE), where
        return
    assert "Traceback" not in err, where
    assert "internal error" not in err, where
    assert rc == 2, f"exit {rc}, expected 2; {where}"
    lines = err.splitlines()
    assert len(lines) == 1, f"{len(lines)} stderr lines, expected 1; {where}"
    assert ERROR_LINE.match(lines[0]), where
    if must_mention is not None:
        assert re.search(must_mention, lines[0], re.IGNORECASE), f"error does not mention {must_mention!r}; {where}"


def assert_clean(rc: int, err: str, argv=None):
    """Valid or invalid, the input was handled: exit 0/1/3, or 2 with one error line."""
    where = f"argv={argv!r}\nstderr={err[-2000:]!r}"
    assert "Traceback" not in err, where
    assert "internal error" not in err, where
    assert rc in (0, 1, 2, 3), f"exit {rc}; {where}"
    if rc == 2:
        assert_refused(rc, err, argv=argv)


def refused(argv, must_mention=None, *, subprocess_=False, cwd=None):
    t0 = time.monotonic()
    rc, out, err = (run_subprocess(argv, cwd=cwd) if subprocess_ else run_in_process(argv))
    assert_refused(rc, err, must_mention, argv, out)
    assert time.monotonic() - t0 < (SUBPROCESS_LIMIT_S if subprocess_ else IN_PROCESS_LIMIT_S)
    return out, err


def accepted(argv):
    rc, out, err = run_in_process(argv)
    assert "Traceback" not in err and rc in (0, 1), f"argv={argv!r} exit {rc} stderr={err[-2000:]!r}"
    return out


# ------------------------------------------------------------------------------------------------
# Valid texts per adapter: the seeds that the mutations below start from (each must be accepted).
BLOCKED = ("#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], "
           "order = [1, 0]}>")
MMA2 = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>"
LINEAR = ("#ttg.linear<{register = [[1, 0], [0, 1]], lane = [[0, 2], [0, 4], [2, 0], [4, 0], [8, 0]], "
          "warp = [], block = []}>")
IREE = ("#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], batch_tile = [1, 1], outer_tile = [1, 1], "
        "thread_tile = [16, 4], element_tile = [1, 4], subgroup_strides = [0, 0], thread_strides = [1, 16]>")
TILED_MMA = "tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2,2,1), C, tile=(32,32))"

#: framework -> [(text, --shape or None)]
SEEDS = {
    "triton": [(BLOCKED, "64x64"), (f"tensor<64x64xf16, {BLOCKED}>", None), (MMA2, "32x32"), (LINEAR, "16x16"),
               (f"#ttg.slice<{{dim = 1, parent = {BLOCKED}}}>", "64"),
               ("#ttg.dot_op<{opIdx = 0, parent = " + MMA2 + ", kWidth = 2}>", "32x32"),
               ("#ttg.swizzled_shared<{vec = 4, perPhase = 1, maxPhase = 8, order = [1, 0]}>", "32x32"),
               ("#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>", "64x64")],
    "cute": [("(4,8):(8,1)", None), ("((2,2),(2,3)):((4,1),(2,8))", None), ("Sw<3,3,3> o (64,64):(64,1)", None),
             ("coalesce(composition((4,8):(8,1), right_inverse((4,8):(8,1))))", None), ("logical_divide(24:1, 4:3)", None),
             ("SM80_16x8x16_F32F16F16F32_TN.A", None), (TILED_MMA, None),
             ("make_layout((4,8), LayoutRight)", None)],
    "tilus": [("local(2, 1).spatial(8, 4)", None), ("column_spatial(4, 8).local(4, 1)", None),
              ("RegisterLayout(shape=[4, 8], mode_shape=[4, 2, 4], spatial_modes=[1, -4, 2], local_modes=[0])", None),
              ("shared_compose(shared_row_major(2, 2), shared_row_major(4, 8))", None)],
    "iree": [(IREE, None)],
    "ptx": [("mma.m16n8k16.f16.A", None), ("wgmma.m64n32k16.f32.D", None), ("ldmatrix.x4.trans", None),
            ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32.C", None)],
    "amd": [("v_mfma_f32_32x32x8_f16.C", None), ("rdna3.v_wmma_f16_16x16x16_f16.C", None),
            ("v_mfma_f32_16x16x32_bf16.A", None)],
}
SEED_CASES = [(fw, text, shape) for fw, seeds in SEEDS.items() for text, shape in seeds]


def show(fw: str, text: str, shape: str | None = None) -> list[str]:
    return ["show", f"{fw}:{text}", "--no-grid"] + (["--shape", shape] if shape else [])


@pytest.mark.parametrize("fw,text,shape", SEED_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(SEED_CASES)])
def test_seed_is_valid(fw, text, shape):
    accepted(show(fw, text, shape))


# ------------------------------------------------------------------------------------------------
# Hand-written hostile layout texts: (framework, text, --shape, what the error must mention or None)
DEEP = 5000
HUGE = str(10 ** 40)
BIG = str(2 ** 63)
FULLWIDTH_4 = "\uff14"     # '４'
ARABIC_3 = "\u0663"        # '٣'
DEVANAGARI_8 = "\u096e"    # '८'
#: "what the error must mention" for inputs that may be valid: any clean outcome (0/1, or 2 with one line)
ANY = object()


def blocked(spt="[1, 4]", tpw="[4, 8]", wpc="[4, 1]", order="[1, 0]"):
    return f"#ttg.blocked<{{sizePerThread = {spt}, threadsPerWarp = {tpw}, warpsPerCTA = {wpc}, order = {order}}}>"


TEXT_CASES = [
    # --- triton ---
    ("triton", "", "64x64", "empty"),
    ("triton", "   ", "64x64", "empty"),
    ("triton", "#ttg.blocked<{", "64x64", None),
    ("triton", BLOCKED[:-2], "64x64", None),
    ("triton", BLOCKED + ">", "64x64", None),
    ("triton", BLOCKED + BLOCKED, "64x64", None),
    ("triton", blocked(wpc="[1048576, 1048576]"), "64x64", None),
    ("triton", blocked(wpc=f"[{BIG}, 1]"), "64x64", None),
    ("triton", blocked(wpc=f"[{HUGE}, 1]"), "64x64", None),
    ("triton", blocked(wpc="[0, 1]"), "64x64", None),
    ("triton", blocked(wpc="[-4, 1]"), "64x64", None),
    ("triton", blocked(spt="[1048576, 1048576]"), "64x64", ANY),   # Triton wraps registers around the shape
    ("triton", blocked(spt=f"[{FULLWIDTH_4}, 4]"), "64x64", None),
    ("triton", blocked(tpw=f"[4, {ARABIC_3}]"), "64x64", None),
    ("triton", blocked(order="[1, 0" + ", 0" * 10000 + "]"), "64x64", None),
    ("triton", blocked(tpw="[" * DEEP + "]" * DEEP), "64x64", None),
    ("triton", "#ttg.blocked<" + "{" * DEEP + "}" * DEEP + ">", "64x64", None),
    ("triton", "#ttg.slice<{dim = 0, parent = " * 2000 + BLOCKED + "}>" * 2000, "64", None),
    ("triton", f"tensor<64x64xq13, {BLOCKED}>", None, "q13"),
    ("triton", f"tensor<64x64xf16x, {BLOCKED}>", None, None),
    ("triton", f"tensor<0x64xf16, {BLOCKED}>", None, None),
    ("triton", f"tensor<-64x64xf16, {BLOCKED}>", None, None),
    ("triton", f"tensor<{HUGE}x64xf16, {BLOCKED}>", None, None),
    ("triton", f"tensor<4294967296x4294967296xf16, {BLOCKED}>", None, None),
    ("triton", f"tensor<6{FULLWIDTH_4}x64xf16, {BLOCKED}>", None, None),
    ("triton", f"tensor<64x6{DEVANAGARI_8}xf16, {BLOCKED}>", None, None),
    ("triton", f"tensor<64x64xf16, {BLOCKED}", None, None),
    ("triton", f"tensor<64x64xf16>", None, None),
    ("triton", f"tensor<{'64x' * 40}f16, {BLOCKED}>", None, None),
    ("triton", "#ttg.linear<{register = [[1, 0]], lane = [[" + BIG + ", 0]], warp = [], block = []}>", "16x16", None),
    ("triton", "#ttg.linear<{register = " + "[" * DEEP + "]" * DEEP + ", lane = [], warp = [], block = []}>",
     "16x16", None),
    ("triton", "#ttg.linear<{register = [" + ", ".join(["[1, 0]"] * 100) + "], lane = [], warp = [], block = []}>",
     "16x16", None),
    ("triton", MMA2.replace("[2, 2]", "[65536, 65536]"), "32x32", None),
    ("triton", MMA2.replace("versionMajor = 2", "versionMajor = " + HUGE), "32x32", None),
    ("triton", MMA2.replace("[16, 8]", "[0, 8]"), "32x32", None),
    ("triton", "#ttg.swizzled_shared<{vec = " + BIG + ", perPhase = 1, maxPhase = 8, order = [1, 0]}>", "32x32", None),
    ("triton", "#ttg.swizzled_shared<{vec = 4, perPhase = 0, maxPhase = 8, order = [1, 0]}>", "32x32", None),
    ("triton", "#ttg.nvmma_shared<{swizzlingByteWidth = 99999999, transposed = false, elementBitWidth = 16}>",
     "64x64", None),
    ("triton", "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 0}>", "64x64", None),
    ("triton", BLOCKED, "4294967296x2", None),
    ("triton", BLOCKED, "1" + "x1" * 20, None),
    ("triton", "#ttg.blocked<{sizePerThread = [1, 4] threadsPerWarp = [4, 8]}>", "64x64", None),
    ("triton", '#ttg.blocked<{sizePerThread = "' + "a" * 100 + '}>', "64x64", None),
    ("triton", "#ttg.blocked<{sizePerThread = [0x" + "f" * 40 + ", 4]}>", "64x64", None),
    ("triton", "#blocked = " + BLOCKED + "\n" + "#blocked = " + BLOCKED, "64x64", None),
    ("triton", "#blocked", "64x64", None),
    ("triton", "\x00\x01\x02", "64x64", None),
    ("triton", "#ttg.blocked<{sizePerThread = [1, 4]\u202e}>", "64x64", None),
    # --- cute ---
    ("cute", "", None, "empty"),
    ("cute", "(", None, None),
    ("cute", ")", None, None),
    ("cute", "(4,8):", None, None),
    ("cute", ":(8,1)", None, None),
    ("cute", "(4,8):(8,1,2)", None, None),
    ("cute", "(4,8):(8,1)(4,8)", None, None),
    ("cute", "(" * DEEP + "4" + ")" * DEEP + ":1", None, None),
    ("cute", "(" * 100000, None, None),
    ("cute", "Sw<30,30,30> o (64,64):(64,1)", None, None),
    ("cute", "Sw<3,3,30> o (64,64):(64,1)", None, ANY),            # CuTe allows it: |S| >= B
    ("cute", "Sw<-1,3,3> o (64,64):(64,1)", None, None),
    ("cute", f"Sw<3,3,{HUGE}> o (64,64):(64,1)", None, None),
    ("cute", f"Sw<{BIG},3,3> o (64,64):(64,1)", None, None),
    ("cute", "Sw<3,3,3>", None, None),
    ("cute", "Sw<7,0,7> o 65536:65536", None, "hole"),              # once a 4 GiB table of offsets
    ("cute", "(65536,65536):(65536,65536)", None, None),
    ("cute", "Sw<3,3,3> o Sw<3,3,3> o (64,64):(64,1)", None, None),
    ("cute", "(1000000000,1000000000):(1,1000000000)", None, None),
    ("cute", f"({BIG},2):(1,1)", None, None),
    ("cute", f"({HUGE},2):(1,1)", None, None),
    ("cute", "(4,8):(" + BIG + ",1)", None, None),
    ("cute", "(0,4):(1,1)", None, None),
    ("cute", "(4,8):(-8,1)", None, None),
    ("cute", "(-4,8):(8,1)", None, None),
    ("cute", f"({FULLWIDTH_4},8):(8,1)", None, None),
    ("cute", f"(4,8):(8,{ARABIC_3})", None, None),
    ("cute", f"_{DEVANAGARI_8}", None, None),
    ("cute", "tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (100000,100000,1), C)", None, None),
    ("cute", "tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (65536,65536,65536), C)", None, None),
    ("cute", f"tiled_mma(SM80_16x8x16_F32F16F16F32_TN, ({BIG},1,1), C)", None, None),
    ("cute", "tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2,2,1), C, tile=(99999999,99999999))", None, None),
    ("cute", "tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (0,2,1), C)", None, None),
    ("cute", "tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2,2,1), Q)", None, None),
    ("cute", "tiled_mma(SM80_NOPE_TN, (2,2,1), C)", None, None),
    ("cute", "tiled_mma(" * 3000 + ")" * 3000, None, None),
    ("cute", "composition(" * 3000 + "4:1" + ")" * 3000, None, None),
    ("cute", "logical_divide(24:1, 0:3)", None, None),
    ("cute", "logical_divide(24:1, 4:0)", None, None),
    ("cute", f"logical_product((2,2):(4,1), {BIG}:1)", None, None),
    ("cute", f"blocked_product((2,5):(5,1), ({BIG},4):(1,3))", None, None),
    ("cute", "raked_product((65536,65536):(1,65536), (65536,65536):(1,65536))", None, None),
    ("cute", "make_layout((65536,65536,65536), LayoutRight)", None, None),
    ("cute", "make_layout((4,8), LayoutNope)", None, None),
    ("cute", "complement((4,8):(8,1), " + BIG + ")", None, None),
    ("cute", "complement(filter(16), (0))", None, "cotarget"),          # once a ZeroDivisionError
    ("cute", "complement(4:2, (4,0))", None, "cotarget"),
    ("cute", "right_inverse((4,8):(0,1))", None, None),
    ("cute", "SM80_16x8x16_F32F16F16F32_TN.Z", None, None),
    ("cute", "SM80_16x8x16_F32F16F16F32_TN." + "A." * 100, None, None),
    ("cute", "Layout<Shape<_4,_8>, Stride<_8>>", None, None),
    ("cute", "Layout<" * 3000 + ">" * 3000, None, None),
    ("cute", "upcast<0>((4,8):(8,1))", None, None),
    ("cute", f"upcast<{BIG}>((4,8):(8,1))", None, ANY),
    ("cute", "downcast<65536>((65536,65536):(65536,1))", None, None),
    ("cute", "smem_ptr[99999999999999999999999999999999b](unset) o (4,8):(8,1)", None, None),
    ("cute", "(4,8):(8,1)\x00", None, None),
    # --- tilus ---
    ("tilus", "", None, "empty"),
    ("tilus", "local(", None, None),
    ("tilus", "local(2, 1).", None, None),
    ("tilus", "local(2, 1).spatial(8, 4", None, None),
    ("tilus", f"local({BIG}, 1)", None, None),
    ("tilus", f"local({HUGE}, 1)", None, None),
    ("tilus", "local(65536, 65536).spatial(65536, 65536)", None, None),
    ("tilus", "spatial(1048576, 1048576)", None, None),
    ("tilus", "local(0, 1)", None, None),
    ("tilus", "local(-2, 1)", None, None),
    ("tilus", f"local({FULLWIDTH_4}, 1)", None, None),
    ("tilus", f"local(2, {ARABIC_3})", None, None),
    ("tilus", "local(2.5, 1)", None, None),
    ("tilus", "local(1e9, 1)", None, None),
    ("tilus", "local(2, 1) + 1", None, None),
    ("tilus", "local(2, 1).__class__", None, None),
    ("tilus", "__import__('os').system('true')", None, None),
    ("tilus", "local(*[2, 1])", None, None),
    ("tilus", "local(**{'a': 1})", None, None),
    ("tilus", "lambda: 1", None, None),
    ("tilus", "local(2, 1)" + ".local(1, 1)" * 20000, None, None),
    ("tilus", "local(" * DEEP + ")" * DEEP, None, None),
    ("tilus", "local(" + "(" * DEEP + "2" + ")" * DEEP + ", 1)", None, None),
    ("tilus", "local(" + "[" * 150 + "2" + "]" * 150 + ", 1)", None, None),
    ("tilus", "local(" + "-" * 100000 + "2, 1)", None, None),
    ("tilus", "local(" + "+".join(["1"] * 100000) + ", 1)", None, None),
    ("tilus", "local(2 ** 2 ** 2 ** 2 ** 2 ** 2, 1)", None, None),
    ("tilus", "local(10 ** 100000, 1)", None, None),
    ("tilus", "local(" + "9" * 5000 + ", 1)", None, None),
    ("tilus", "RegisterLayout(shape=[4, 8], mode_shape=[4, 2, 4], spatial_modes=[1, -4, 2], local_modes=[7])",
     None, None),
    ("tilus", f"RegisterLayout(shape=[{BIG}, 8], mode_shape=[4, 2, 4], spatial_modes=[1, -4, 2], local_modes=[0])",
     None, None),
    ("tilus", "RegisterLayout(shape=[4, 8], mode_shape=[4, 2, 4], spatial_modes=[1, -" + BIG + ", 2], "
              "local_modes=[0])", None, None),
    ("tilus", "RegisterLayout(shape=4)", None, None),
    ("tilus", "shared_row_major(" + BIG + ", 4)", None, None),
    ("tilus", "shared_row_major(65536, 65536, 65536)", None, None),
    ("tilus", "shared_row_major(0, 4)", None, None),
    ("tilus", "Swizzle(30, 30, 30)", None, None),
    ("tilus", f"Swizzle({BIG}, 3, 3)", None, None),
    ("tilus", "\x00local(2, 1)", None, None),
    ("tilus", "local(2, 1)\n\nimport os", None, None),
    ("tilus", "local(2, 1); local(2, 1)", None, None),
    ("tilus", "f'{local(2,1)}'", None, None),
    # --- iree ---
    ("iree", "", None, "empty"),
    ("iree", IREE[:-1], None, None),
    ("iree", IREE[:40], None, None),
    ("iree", IREE.replace("thread_tile = [16, 4]", "thread_tile = [" + BIG + ", 4]"), None, None),
    ("iree", IREE.replace("thread_tile = [16, 4]", "thread_tile = [" + HUGE + ", 4]"), None, None),
    ("iree", IREE.replace("thread_tile = [16, 4]", "thread_tile = [0, 4]"), None, None),
    ("iree", IREE.replace("thread_tile = [16, 4]", "thread_tile = [-16, 4]"), None, None),
    ("iree", IREE.replace("thread_tile = [16, 4]", f"thread_tile = [1{DEVANAGARI_8}, 4]"), None, None),
    ("iree", IREE.replace("[1, 16]", f"[1, 1{ARABIC_3}]"), None, None),
    ("iree", IREE.replace("batch_tile = [1, 1]", "batch_tile = [65536, 65536]"), None, None),
    ("iree", IREE.replace("batch_tile = [1, 1]", "batch_tile = [1024, 1024]").replace(
        "outer_tile = [1, 1]", "outer_tile = [1024, 1024]"), None, None),
    ("iree", IREE.replace("subgroup_strides = [0, 0]", "subgroup_strides = [" + BIG + ", 0]"), None, None),
    ("iree", IREE.replace("thread_tile = [16, 4]", "thread_tile = " + "[" * DEEP + "]" * DEEP), None, None),
    ("iree", IREE.replace("thread_tile = [16, 4], ", ""), None, None),
    ("iree", IREE.replace("thread_tile", "bogus_tile"), None, None),
    ("iree", IREE.replace("thread_tile = [16, 4], ", "thread_tile = [16, 4], thread_tile = [16, 4], "), None, None),
    ("iree", "#iree_vector_ext.nested_layout<" * 2000 + ">" * 2000, None, None),
    ("iree", "#layout = " + IREE + "\n#layout = " + IREE, None, None),
    ("iree", "#iree_vector_ext.bogus<>", None, None),
    ("iree", IREE + " : vector<16x16xq13>", None, "q13"),
    ("iree", IREE + " : vector<1" + FULLWIDTH_4 + "x16xf16>", None, None),
    ("iree", IREE + " : vector<16x16xf16", None, None),
    # --- ptx ---
    ("ptx", "", None, "empty"),
    ("ptx", ".", None, None),
    ("ptx", "mma.", None, None),
    ("ptx", "mma..m16n8k16.f16.A", None, None),
    ("ptx", f"mma.m{BIG}n8k16.f16.A", None, None),
    ("ptx", f"mma.m{HUGE}n8k16.f16.A", None, None),
    ("ptx", "mma.m0n8k16.f16.A", None, None),
    ("ptx", f"mma.m1{FULLWIDTH_4}n8k16.f16.A", None, None),
    ("ptx", f"mma.m16n{DEVANAGARI_8}k16.f16.A", None, None),
    ("ptx", "mma.m16n8k16.f16.Z", None, None),
    ("ptx", "mma.m16n8k16.q13.A", None, None),
    ("ptx", "mma.m16n8k16.f16.A" + ".A" * 200, None, None),
    ("ptx", "wgmma.m64n" + "9" * 40 + "k16.f32.D", None, None),
    ("ptx", "wgmma.m64n1024k16.f32.D", None, None),
    ("ptx", "wgmma.m64n33k16.f32.D", None, None),
    ("ptx", "ldmatrix.x0", None, None),
    ("ptx", "ldmatrix.x" + BIG, None, None),
    ("ptx", f"ldmatrix.x{FULLWIDTH_4}", None, None),
    ("ptx", "stmatrix.x4.trans.b99", None, None),
    ("ptx", "mma.m16n8k16.f16.A\x00", None, None),
    # --- amd ---
    ("amd", "", None, "empty"),
    ("amd", "v_mfma", None, None),
    ("amd", "v_mfma_f32_32x32x8_f16", None, None),
    ("amd", "v_mfma_f32_32x32x8_f16.Z", None, None),
    ("amd", f"v_mfma_f32_{BIG}x32x8_f16.C", None, None),
    ("amd", f"v_mfma_f32_{HUGE}x32x8_f16.C", None, None),
    ("amd", "v_mfma_f32_0x32x8_f16.C", None, None),
    ("amd", f"v_mfma_f32_3{ARABIC_3}x32x8_f16.C", None, None),
    ("amd", f"v_mfma_f32_32x32x{DEVANAGARI_8}_f16.C", None, None),
    ("amd", "v_mfma_q13_32x32x8_q13.C", None, None),
    ("amd", "rdna99.v_wmma_f16_16x16x16_f16.C", None, None),
    ("amd", "gfx" + "9" * 100 + ".v_mfma_f32_32x32x8_f16.C", None, None),
    ("amd", "v_mfma_f32_32x32x8_f16.C" + ".C" * 200, None, None),
    ("amd", "cdna3." * 1000 + "v_mfma_f32_32x32x8_f16.C", None, None),
]


@pytest.mark.parametrize("fw,text,shape,mention", TEXT_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(TEXT_CASES)])
def test_hostile_text(fw, text, shape, mention):
    if mention is ANY:
        rc, _, err = run_in_process(show(fw, text, shape))
        assert_clean(rc, err, show(fw, text, shape))
    else:
        refused(show(fw, text, shape), mention)


# ------------------------------------------------------------------------------------------------
# Files: what a path may name, and what a file may hold
VALID_CORPUS = '[[claim]]\nname = "same"\na = "cute:(4,8):(8,1)"\nb = "cute:(4,8):(8,1)"\nexpect = "equal"\n'
CLAIM_HEAD = '[[claim]]\nname = "c"\na = "cute:(4,8):(8,1)"\nb = "cute:(4,8):(8,1)"\n'


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Named hostile paths: special files, bad encodings, oversized files, one valid corpus and golden file."""
    d = tmp_path_factory.mktemp("hostile")
    paths = {"dev_zero": "/dev/zero", "dev_urandom": "/dev/urandom", "dir": str(d), "missing": str(d / "nope"),
             "empty_path": ""}
    fifo = d / "fifo"
    os.mkfifo(fifo)
    paths["fifo"] = str(fifo)
    (d / "notoml").mkdir()
    paths["dir_without_toml"] = str(d / "notoml")
    raw = {
        "bad_utf8": b"cute:(4,8):(8,1)\xff\xfe",
        "latin1": "cute:(4,8):(8,1) # caf\xe9".encode("latin-1"),
        "nul_bytes": b"\x00" * 64,
        "empty": b"",
        "utf16": "[[claim]]".encode("utf-16"),
    }
    for name, data in raw.items():
        (d / f"{name}.toml").write_bytes(data)
        paths[name] = str(d / f"{name}.toml")
    big = d / "big.toml"                       # larger than every limit, without writing it out
    with open(big, "wb") as fh:
        fh.truncate(64 << 20)
    paths["sparse_64MiB"] = str(big)
    (d / "valid.toml").write_text(VALID_CORPUS)
    paths["valid_corpus"] = str(d / "valid.toml")
    golden = d / "golden.json"
    assert main(["snapshot", str(d / "valid.toml"), "-o", str(golden)]) == 0
    paths["valid_golden"] = str(golden)
    return paths


#: paths no reader may accept
BAD_PATHS = ["dev_zero", "dev_urandom", "fifo", "dir", "missing", "empty_path", "bad_utf8", "latin1", "utf16",
             "sparse_64MiB"]
#: what the error line must say for each
PATH_MENTION = {"dev_zero": "character device|regular file", "dev_urandom": "character device|regular file",
                "fifo": "FIFO|regular file", "dir": "director|regular file|no corpus", "missing": "no such",
                "empty_path": "empty|no such|not", "bad_utf8": "UTF-8", "latin1": "UTF-8", "utf16": "UTF-8",
                "sparse_64MiB": "too large|too long"}


def _reader_argv(cmd: str, path: str, files) -> list[str]:
    if cmd == "show@":
        return ["show", f"cute:@{path}", "--no-grid"]
    if cmd == "prove@":
        return ["prove", "cute:(4,8):(8,1)", f"cute:@{path}"]
    if cmd == "analyze@":
        return ["analyze", f"triton:@{path}", "--shape", "64x64"]
    if cmd == "check":
        return ["check", path]
    if cmd == "diff-old":
        return ["diff", path, files["valid_golden"]]
    if cmd == "diff-new":
        return ["diff", files["valid_golden"], path]
    if cmd == "atlas":
        return ["atlas", "--corpus", path]
    if cmd == "snapshot":
        return ["snapshot", path, "-o", os.path.join(files["dir"], "out.json")]
    if cmd == "sweep":
        return ["sweep", path, "--count"]
    if cmd == "scan":
        return ["scan", path, "--quiet"]
    raise AssertionError(cmd)


READERS = ["show@", "prove@", "analyze@", "check", "diff-old", "diff-new", "atlas", "snapshot", "sweep", "scan"]
#: the device/FIFO cases go through real subprocesses (memory-limited); the rest run in-process
SUBPROCESS_PATHS = {"dev_zero", "dev_urandom", "fifo"}
PATH_CASES = [(cmd, name) for cmd in READERS for name in BAD_PATHS
              if not (name == "empty_path" and cmd.endswith("@"))
              and not (cmd == "scan" and name not in ("dev_zero", "dev_urandom", "fifo", "missing"))]


@pytest.mark.parametrize("cmd,name", PATH_CASES, ids=[f"{c}-{n}" for c, n in PATH_CASES])
def test_unreadable_path(files, cmd, name):
    mention = PATH_MENTION[name]
    if name == "dir" and cmd in ("check", "atlas", "snapshot"):   # a directory of corpora: none in it
        name, mention = "dir_without_toml", "no corpus files"
    argv = _reader_argv(cmd, files[name], files)
    refused(argv, mention, subprocess_=name in SUBPROCESS_PATHS)


@pytest.mark.parametrize("cmd", ["show@", "check", "diff-old", "atlas"])
def test_fifo_in_process_does_not_block(files, cmd):
    refused(_reader_argv(cmd, files["fifo"], files), "FIFO")


#: corpus TOML texts that ``check`` must refuse: (text, what the error must mention)
CORPUS_CASES = [
    ("[[claim]", "TOML"),
    ('x = "unterminated', "TOML"),
    ("foo = 1\n" + VALID_CORPUS, "foo"),
    ("[defaults]\nshap = [4, 8]\n" + VALID_CORPUS, "shap"),
    ("[defaults]\nbogus = 1\n" + VALID_CORPUS, "bogus"),
    ("defaults = 3\n" + VALID_CORPUS, "defaults"),
    (CLAIM_HEAD + 'expect = "equal"\nbogus = 1\n', "bogus"),
    (CLAIM_HEAD + 'expect = "equal"\nExpect = "equal"\n', "Expect"),
    (CLAIM_HEAD + 'expect = "equal"\n[claim.options]\nwarp_size = 32\n[claim.extra]\nx = 1\n', "extra"),
    ('[[layout]]\nname = "l"\nspec = "cute:4:1"\nspecc = "x"\n', "specc"),
    ('[[inexpressible]]\nfragment = "f"\nframework = "triton"\nnote = "n"\nwhy = "x"\n', "why"),
    ("claim = 3\n", "claim"),
    ("claim = [1, 2]\n", "table"),
    ("title = 3\n" + VALID_CORPUS, "title"),
    ('[[claim]]\na = "cute:4:1"\nb = "cute:4:1"\nexpect = "equal"\n', "name"),
    ('[[claim]]\nname = "c"\na = 5\nb = "cute:4:1"\nexpect = "equal"\n', "'a'"),
    (CLAIM_HEAD + 'expect = "bogus"\n', "bogus"),
    (CLAIM_HEAD + 'expect = "equal"\nshape = [0]\n', "shape"),
    (CLAIM_HEAD + 'expect = "equal"\nshape = [-4, 8]\n', "shape"),
    (CLAIM_HEAD + 'expect = "equal"\nshape = [4611686018427387904, 4611686018427387904]\n', "shape"),
    (CLAIM_HEAD + 'expect = "equal"\nshape = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n', "shape"),
    (CLAIM_HEAD + f'expect = "equal"\nshape = "4x{FULLWIDTH_4}"\n', "shape"),
    (CLAIM_HEAD + 'expect = "equal"\nshape = 3\n', "shape"),
    (CLAIM_HEAD + 'expect = "equal"\nshape = [true]\n', "shape"),
    (CLAIM_HEAD + 'expect = "equal"\nshape = [4.0, 8.0]\n', "shape"),
    (CLAIM_HEAD + 'expect = "equal"\noptions = 5\n', "options"),
    (CLAIM_HEAD + 'expect = "equal"\noptions = { bogus = 1 }\n', "bogus"),
    (CLAIM_HEAD + 'expect = "equal"\noptions_a = { warp_size = 0 }\n', "warp_size"),
    (CLAIM_HEAD + 'expect = "equal"\noptions_b = { warp_size = "x" }\n', "warp_size"),
    (CLAIM_HEAD + 'expect = "equal"\noptions = { warp_size = 48 }\n', "warp_size"),
    (CLAIM_HEAD + 'expect = "equal"\noptions = { warp_size = 4611686018427387904 }\n', "warp_size"),
    (CLAIM_HEAD + 'expect = "equal"\noptions = { as_ = 5 }\n', "as_"),
    (CLAIM_HEAD + 'expect = "equal"\noptions = { triton_version = "3.9" }\n', "triton_version"),
    ('[[claim]]\nname = "c"\na = "triton:' + BLOCKED.replace('"', '') + '"\nb = "triton:' + BLOCKED + '"\n'
     'expect = "equal"\nshape = [64, 64]\noptions = { warp_size = "x" }\n', "warp_size"),
    ('[[layout]]\nname = "l"\nspec = "cute:4:1"\noptions = { bits = 0 }\n', "bits"),
    (CLAIM_HEAD + 'expect = "equal"\ntimeout_ms = 0\n', "timeout_ms"),
    (CLAIM_HEAD + 'expect = "equal"\ntimeout_ms = -1\n', "timeout_ms"),
    (CLAIM_HEAD + 'expect = "equal"\ntimeout_ms = 9223372036854775807\n', "timeout_ms"),
    (CLAIM_HEAD + 'expect = "equal"\ntags = "x"\n', "tags"),
    (CLAIM_HEAD + 'expect = "equal"\ntags = [1]\n', "tags"),
    (CLAIM_HEAD + 'expect = "equal"\nknown = "bogus"\n', "known"),
    (CLAIM_HEAD + 'expect = "equal"\nknown = "equal"\n', "known"),
    (CLAIM_HEAD + 'expect = "equal"\nnote = 5\n', "note"),
    (CLAIM_HEAD + 'expect = "equal"\n' + CLAIM_HEAD + 'expect = "equal"\n', "duplicate"),
    ("x = " + "[" * 5000 + "]" * 5000 + "\n", r"c\.toml: (TOML nested too deeply|unknown top-level key)"),
    ("[" + ".".join(["a"] * 3000) + "]\n", "TOML|a|nest|key"),
    # 3,000 nested tables: the parser recurses past Python's limit (a clean error), or, where a
    # library raised the limit, parses and the key is refused: a clean error either way
    ("x = {" + "a = {" * 3000 + "}" * 3001 + "\n", r"c\.toml: (TOML nested too deeply|unknown top-level key)"),
    ("", "no claims"),
    ("# only a comment\n", "no claims"),
]


def test_corpus_cases_are_many():
    assert len(CORPUS_CASES) >= 40


@pytest.mark.parametrize("text,mention", CORPUS_CASES, ids=[f"corpus-{i}" for i in range(len(CORPUS_CASES))])
def test_hostile_corpus(tmp_path, text, mention):
    p = tmp_path / "c.toml"
    p.write_text(text)
    refused(["check", str(p)], mention)


#: corpus claims whose SIDES are hostile: the claim is reported as an error (exit 1), the run goes on
SIDE_CASES = ["cute:@/dev/zero", "cute:@{fifo}", "cute:" + "(" * DEEP, "triton:" + blocked(wpc=f"[{HUGE}, 1]"),
              "bogus:4:1", "cute:Sw<30,30,30> o (64,64):(64,1)", "tilus:local(" * DEEP,
              "cute:tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (100000,100000,1), C)"]


@pytest.mark.parametrize("side", SIDE_CASES, ids=[f"side-{i}" for i in range(len(SIDE_CASES))])
def test_hostile_claim_side(tmp_path, files, side):
    p = tmp_path / "c.toml"
    side = side.replace("{fifo}", files["fifo"])
    p.write_text(f'[[claim]]\nname = "c"\na = {json.dumps(side)}\nb = "cute:(4,8):(8,1)"\nexpect = "equal"\n')
    rc, out, err = run_in_process(["check", str(p), "-j", "1"])
    assert_clean(rc, err, ["check", side])
    assert rc in (1, 2)


def _golden(layouts, **top) -> dict:
    return {"format": 1, "versions": {"layoutverify": "0"}, "layouts": layouts, **top}


GOOD_ENTRY = {"spec": "cute:(4,8):(8,1)", "shape": None, "source": "adapter", "fingerprint": "0" * 16,
              "normal_form": {"in_dims": [["offset", 32]], "out_dims": [["dim0", 4], ["dim1", 8]],
                              "bases": {"offset": [[0, 1], [0, 2], [0, 4], [1, 0], [2, 0]]}}}


def _nf(**kw) -> dict:
    return {**GOOD_ENTRY, "normal_form": {**GOOD_ENTRY["normal_form"], **kw}}


#: golden files that ``diff`` must refuse (as OLD, against a valid NEW): (JSON text, what to mention)
GOLDEN_CASES = [
    ("", "JSON"),
    ("{", "JSON"),
    ("[]", "golden"),
    ("{}", "golden"),
    ("3", "golden"),
    ('"format"', "golden"),
    (json.dumps({"format": 1}), "golden"),
    (json.dumps({"format": True, "layouts": {}}), "golden|format"),
    (json.dumps({"format": 99, "layouts": {}}), "format"),
    (json.dumps({"format": "1", "layouts": {}}), "format"),
    (json.dumps({"format": 1, "layouts": []}), "golden|layouts"),
    (json.dumps(_golden({"x": 5})), "'x'"),
    (json.dumps(_golden({"x": {}})), "'x'"),
    (json.dumps(_golden({"x": [1, 2]})), "'x'"),
    (json.dumps(_golden({"x": {**GOOD_ENTRY, "spec": 5}})), "spec"),
    (json.dumps(_golden({"x": {k: v for k, v in GOOD_ENTRY.items() if k != "spec"}})), "spec"),
    (json.dumps(_golden({"x": {k: v for k, v in GOOD_ENTRY.items() if k != "normal_form"}})), "normal_form"),
    (json.dumps(_golden({"x": {**GOOD_ENTRY, "fingerprint": 7}})), "fingerprint"),
    (json.dumps(_golden({"x": {**GOOD_ENTRY, "shape": "64"}})), "shape"),
    (json.dumps(_golden({"x": {**GOOD_ENTRY, "normal_form": 3}})), "normal_form"),
    (json.dumps(_golden({"x": _nf(in_dims=5)})), "in_dims|normal form"),
    (json.dumps(_golden({"x": _nf(in_dims=[["offset", 2 ** 70]])})), "in_dims|normal form"),
    (json.dumps(_golden({"x": _nf(in_dims=[["offset", -32]])})), "in_dims|normal form"),
    (json.dumps(_golden({"x": _nf(in_dims=[["offset", 32, 7]])})), "in_dims|normal form"),
    (json.dumps(_golden({"x": _nf(in_dims=[[5, 32]])})), "in_dims|normal form"),
    (json.dumps(_golden({"x": _nf(out_dims=[["dim0", 2 ** 64], ["dim1", 8]])})), "out_dims|normal form"),
    (json.dumps(_golden({"x": _nf(out_dims=[["dim0", 0], ["dim1", 8]])})), "out_dims|normal form"),
    (json.dumps(_golden({"x": _nf(out_dims=[])})), "out_dims|normal form"),
    (json.dumps(_golden({"x": _nf(bases={"offset": [[0, 1]] * 5 + [[0]]})})), "bases|normal form"),
    (json.dumps(_golden({"x": _nf(bases={"offset": [[0, 2 ** 80]] * 5})})), "bases|normal form"),
    (json.dumps(_golden({"x": _nf(bases={"offset": "x"})})), "bases|normal form"),
    (json.dumps(_golden({"x": _nf(bases={"lane": [[0, 1]] * 5})})), "bases|normal form"),
    (json.dumps(_golden({"x": _nf(bases=[1, 2])})), "bases|normal form"),
    (json.dumps(_golden({"x": _nf(in_dims=[["offset", 2 ** 40]], bases={"offset": [[0, 1]] * 40})})), ANY),
    (json.dumps(_golden({"x": {**GOOD_ENTRY, "normal_form": {"in_dims": [["offset", 4]], "out_dims": [["dim0", 4]],
                                                             "table": [[0], [1], [2]]}}})), "table|normal form"),
    (json.dumps(_golden({"x": {**GOOD_ENTRY, "normal_form": {"in_dims": [["offset", 4]], "out_dims": [["dim0", 4]],
                                                             "table": [[0], [1], [2], [99]]}}})), "table|normal form"),
    (json.dumps(_golden({"x": {**GOOD_ENTRY, "normal_form": {"in_dims": [["offset", 4]], "out_dims": [["dim0", 4]],
                                                             "table": "abc"}}})), "table|normal form"),
    (json.dumps(_golden({"x": {**GOOD_ENTRY, "normal_form": {"in_dims": [["offset", 2 ** 40]],
                                                             "out_dims": [["dim0", 4]], "table": []}}})),
     "table|normal form|large|limit"),
    ("[" * 100000 + "]" * 100000, "JSON|nest"),
    ('{"format": 1, "layouts": {"x": ' + "[" * 100000 + "]" * 100000 + "}}", "JSON|nest"),
    ('{"format": 1, "layouts": {}, "versions": NaN}', "golden|NaN|versions"),
    (json.dumps(_golden({}, versions=[1, 2])), "versions"),
]


@pytest.mark.parametrize("text,mention", GOLDEN_CASES, ids=[f"golden-{i}" for i in range(len(GOLDEN_CASES))])
def test_hostile_golden(tmp_path, files, text, mention):
    p = tmp_path / "old.json"
    p.write_text(text)
    if mention is ANY:   # a legal (if odd) golden file: any clean outcome, quickly
        for argv in (["diff", str(p), files["valid_golden"]], ["diff", files["valid_golden"], str(p)]):
            rc, _, err = run_in_process(argv)
            assert_clean(rc, err, argv)
        return
    refused(["diff", str(p), files["valid_golden"]], mention)
    refused(["diff", files["valid_golden"], str(p)], mention)


# ------------------------------------------------------------------------------------------------
# Options of every subcommand
CUTE = "cute:(4,8):(8,1)"
TRI = "triton:" + BLOCKED
BAD_INTS = ["0", "-1", "abc", "", "1.5", "1e3", f"1{FULLWIDTH_4}", ARABIC_3, "9" * 40, "0x10", "nan"]
#: (argv prefix, option, values to refuse): every value must be refused by every command listed
OPTION_CASES = []
for _prefix in (["show", CUTE, "--no-grid"], ["prove", CUTE, CUTE], ["analyze", CUTE]):
    OPTION_CASES += [(_prefix, "--warp-size", v) for v in BAD_INTS + ["3", "48", "2048", "-32"]]
for _prefix in (["prove", CUTE, CUTE], ["analyze", CUTE, CUTE], ["diff", "{golden}", "{golden}"]):
    OPTION_CASES += [(_prefix, "--timeout-ms", v) for v in BAD_INTS + ["-100"]]
for _prefix in (["check", "{corpus}"], ["atlas", "--corpus", "{corpus}"]):
    OPTION_CASES += [(_prefix, "-j", v) for v in BAD_INTS]
OPTION_CASES += [(["show", CUTE], "--max-cells", v) for v in ["-1", "abc", "9" * 40, FULLWIDTH_4]]
OPTION_CASES += [(["prove", CUTE, CUTE], "--window", v) for v in ["0", "-1", "abc"]]
OPTION_CASES += [(["analyze", CUTE], "--element-bits", v) for v in ["0", "-8", "7", "12", "128", "abc"]]
OPTION_CASES += [(["prove", CUTE, CUTE], "--method", v) for v in ["bogus", ""]]
for _prefix in (["show", TRI, "--no-grid"], ["prove", TRI, TRI], ["analyze", TRI]):
    OPTION_CASES += [(_prefix, "--shape", v) for v in
                     ["0x4", "-4x4", "4x", "x", "", "abc", "1e9x1e9", f"{FULLWIDTH_4}x4", f"64x{ARABIC_3}",
                      "99999999999999999999x1", "65536x65536x65536", "1x1x1x1x1x1x1x1x1", "64x64x"]]
    OPTION_CASES += [(_prefix, "--triton-version", v) for v in ["2.0", "3.10", "", "latest"]]
OPTION_CASES += [(["prove", TRI, TRI, "--shape", "64x64"], "--shape-b", v) for v in ["0x4", "abc", "64x６4"]]
OPTION_CASES += [(["snapshot", "{corpus}", "-o", "{dir}/g.json"], "--sweep", v) for v in ["bogus", "cute"]]
OPTION_CASES += [(["sweep", "{corpus}"], opt, v) for opt in ("-j", "--chunk") for v in ["0", "-1", "abc", FULLWIDTH_4]]
OPTION_CASES += [(["sweep", "{corpus}"], "-o", v) for v in ["{dir}", "{dir}/no/such/x.jsonl", ""]]
OPTION_CASES += [(["measure", CUTE, CUTE], "--ctas", v) for v in ["-1", "abc", ARABIC_3]]
OPTION_CASES += [(["list"], None, "bogus-category")]
OPTION_CASES += [(["serve", "--port", "8765"], "--host", v) for v in ["no such host!", "999.1.1.1", ""]]
OPTION_CASES += [(["serve"], "--port", v) for v in ["0", "-1", "70000", "abc"]]
OPTION_CASES += [(["show", CUTE], "--bogus-option", None), (["bogus-command"], None, None), ([], "--bogus", None)]


def _fill(argv, files):
    subst = {"{golden}": files["valid_golden"], "{corpus}": files["valid_corpus"], "{dir}": files["dir"],
             "{fifo}": files["fifo"]}
    out = []
    for a in argv:
        for k, v in subst.items():
            a = a.replace(k, v)
        out.append(a)
    return out


@pytest.mark.parametrize("prefix,option,value", OPTION_CASES,
                         ids=[f"{c[0][0] if c[0] else 'none'}-{c[1]}-{i}" for i, c in enumerate(OPTION_CASES)])
def test_hostile_option(files, prefix, option, value):
    argv = _fill(prefix, files) + ([option] if option else []) + ([value] if value is not None else [])
    refused(argv)


#: output options: (argv before the option, option); every one is checked before any work is done
WRITERS = [(["check", "{corpus}"], "--junit"), (["check", "{corpus}"], "--json"), (["check", "{corpus}"], "--markdown"),
           (["atlas", "--corpus", "{corpus}"], "--markdown"), (["atlas", "--corpus", "{corpus}"], "--html"),
           (["atlas", "--corpus", "{corpus}"], "--json"), (["snapshot", "{corpus}"], "-o"),
           (["prove", CUTE, "cute:(4,8):(1,4)", "--method", "z3"], "--emit-smt2"),
           (["scan", "{dir}"], "--json"), (["scan", "{dir}"], "--junit"), (["scan", "{dir}"], "--markdown")]
#: unwritable targets: name -> (path, what the error must mention)
UNWRITABLE = {"directory": ("{dir}", "directory"), "fifo_no_reader": ("{fifo}", "FIFO"),
              "under_a_file": ("{corpus}/x.out", "director|not a directory"),
              "read_only_fs": ("/proc/version/x", "director|not a directory|read-only|denied"),
              "sysfs": ("/sys/layoutverify-hostile.out", "denied|read-only|not permitted"),
              "empty": ("", "empty"), "missing_dir": ("{dir}/no/such/dir/x.out", "does not exist|director")}
WRITE_CASES = [(w, u) for w in range(len(WRITERS)) for u in UNWRITABLE
               if not (u == "missing_dir" and WRITERS[w][1] == "-o")]   # snapshot creates golden/ dirs


@pytest.mark.parametrize("w,target", WRITE_CASES, ids=[f"{WRITERS[w][0][0]}{WRITERS[w][1]}-{u}" for w, u in WRITE_CASES])
def test_unwritable_output(files, w, target):
    prefix, option = WRITERS[w]
    path, mention = UNWRITABLE[target]
    path = _fill([path], files)[0]
    t0 = time.monotonic()
    refused(_fill(prefix, files) + [option, path], mention)
    assert time.monotonic() - t0 < 5, "the output path must be refused before the work"


def test_read_only_file_refused(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes read-only files; the sysfs/proc cases cover read-only targets")
    p = tmp_path / "ro.json"
    p.write_text("{}")
    p.chmod(0o444)
    refused(["check", "x", "--json", str(p)], "denied")


# ------------------------------------------------------------------------------------------------
# Memory and time: inputs that would allocate gigabytes or run for hours, as real processes under
# an address-space limit. Refused (2) or answered (0/1/3) within the limits, never killed.
BIG_BLOCKED = blocked(spt="[8, 8]", tpw="[4, 8]", wpc="[32, 32]")
MEMORY_CASES = [
    ["show", "cute:tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (100000,100000,1), C)"],
    ["show", "cute:tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (1024,1024,1), C)"],
    ["show", "cute:(65536,65536):(1,65536)"],
    ["show", "cute:(65536,65536):(65536,1)", "--max-cells", "999999999999"],
    ["show", f"triton:tensor<65536x65536xf16, {BLOCKED}>"],
    ["show", f"triton:tensor<65536x65536xf16, {BLOCKED}>", "--max-cells", "4294967296"],
    ["prove", f"triton:tensor<65536x65536xf16, {BLOCKED}>", f"triton:tensor<65536x65536xf16, {BIG_BLOCKED}>",
     "--method", "table"],
    ["prove", "cute:(65536,65536):(1,65536)", "cute:(65536,65536):(65536,1)", "--method", "table"],
    ["prove", "cute:(65536,65536):(1,65536)", "cute:(65536,65536):(65536,1)", "--timeout-ms", "2000"],
    ["analyze", f"triton:tensor<65536x65536xf16, {BLOCKED}>", f"triton:tensor<65536x65536xf16, {BIG_BLOCKED}>",
     "--timeout-ms", "2000"],
    ["analyze", "cute:(65536,65536):(1,65536)"],
    ["show", "tilus:local(65536, 65536).spatial(8, 4)"],
    ["show", "iree:" + IREE.replace("batch_tile = [1, 1]", "batch_tile = [4096, 4096]")],
    ["show", "cute:make_layout((65536,65536,65536), LayoutRight)"],
    ["show", "cute:raked_product((65536,65536):(1,65536), (65536,65536):(1,65536))"],
    ["show", "cute:Sw<3,0,3> o (65536,256):(65536,1)"],        # 2^24 offsets tabulated, then refused
]


@pytest.mark.parametrize("argv", MEMORY_CASES, ids=[f"mem-{i}" for i in range(len(MEMORY_CASES))])
def test_memory_and_time_bounded(argv):
    t0 = time.monotonic()
    rc, out, err = run_subprocess(argv)
    assert_clean(rc, err, argv)
    assert time.monotonic() - t0 < SUBPROCESS_LIMIT_S


#: deep nesting read from a file (too long for argv), per adapter
DEEP_FILE_TEXTS = {
    "triton": "#ttg.slice<{dim = 0, parent = " * 20000 + BLOCKED + "}>" * 20000,
    "cute": "(" * 200000 + "4" + ")" * 200000 + ":1",
    "tilus": "local(2, 1)" + ".local(1, 1)" * 100000,
    "tilus-parens": "local(" + "(" * 200000 + "2" + ")" * 200000 + ", 1)",
    "tilus-unary": "local(" + "-" * 500000 + "2, 1)",
    "iree": IREE.replace("[16, 4]", "[" * 200000 + "]" * 200000),
    "ptx": "mma." * 200000 + "A",
    "amd": "v_mfma_f32_32x32x8_f16" + ".C" * 200000,
}


@pytest.mark.parametrize("name", sorted(DEEP_FILE_TEXTS))
def test_deep_nesting_from_file(tmp_path, name):
    p = tmp_path / "deep.txt"
    p.write_text(DEEP_FILE_TEXTS[name])
    fw = name.split("-")[0]
    refused(["show", f"{fw}:@{p}", "--no-grid", "--shape", "64x64"] if fw == "triton"
            else ["show", f"{fw}:@{p}", "--no-grid"], subprocess_=True)


# ------------------------------------------------------------------------------------------------
# Generated: mutations of valid texts, per adapter and per file format (fixed seed: reproducible)
UNICODE_DIGITS = [FULLWIDTH_4, ARABIC_3, DEVANAGARI_8, "\u00b2", "\u2163", "\U0001d7dc"]   # ４ ٣ ८ ² Ⅳ 𝟜
NUMBER_SWAPS = ["0", "-1", "-0", BIG, HUGE, str(2 ** 31), str(2 ** 32 + 1), "9" * 400, "1" + "0" * 30,
                "00004", "0x10", "1e9", "1.5", "+4"]
JUNK = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)


@st.composite
def mutated(draw, text: str) -> str:
    """``text`` after one to three random edits of the kinds that break parsers."""
    for _ in range(draw(st.integers(1, 3))):
        n = len(text)
        i = draw(st.integers(0, n))
        j = draw(st.integers(i, min(n, i + 12)))
        kind = draw(st.sampled_from(["truncate", "duplicate", "number", "unicode_digit", "nest", "junk", "delete",
                                     "bytes", "repeat"]))
        if kind == "truncate":
            text = text[:i]
        elif kind == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif kind == "number":
            runs = [m.span() for m in re.finditer(r"[0-9]+", text)]
            if runs:
                a, b = draw(st.sampled_from(runs))
                text = text[:a] + draw(st.sampled_from(NUMBER_SWAPS)) + text[b:]
        elif kind == "unicode_digit":
            runs = [m.start() for m in re.finditer(r"[0-9]", text)]
            if runs:
                a = draw(st.sampled_from(runs))
                text = text[:a] + draw(st.sampled_from(UNICODE_DIGITS)) + text[a + 1:]
        elif kind == "nest":
            depth = draw(st.sampled_from([50, 101, 1000, 20000]))
            opener, closer = draw(st.sampled_from(["()", "[]", "{}", "<>"]))
            text = text[:i] + opener * depth + text[i:j] + closer * draw(st.sampled_from([0, depth])) + text[j:]
        elif kind == "junk":
            text = text[:i] + draw(JUNK) + text[i:]
        elif kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "bytes":
            raw = draw(st.binary(min_size=1, max_size=8))
            text = text[:i] + raw.decode("latin-1") + text[i:]
        elif kind == "repeat":
            text = text[:i] + text[i:j] * draw(st.sampled_from([2, 100, 5000])) + text[j:]
    return text


FUZZ = settings(max_examples=40, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("fw", sorted(SEEDS))
def test_generated_text(fw):
    seeds = SEEDS[fw]

    @FUZZ
    @given(data=st.data())
    def check(data):
        text, shape = data.draw(st.sampled_from(seeds))
        text = data.draw(mutated(text))
        argv = show(fw, text, shape)
        rc, out, err = run_in_process(argv)
        assert_clean(rc, err, argv)

    check()


@pytest.mark.parametrize("fw", ["cute", "tilus", "ptx"])
def test_generated_spec_without_prefix(fw):
    """Texts without ``FRAMEWORK:`` go through the framework guesser first."""
    seeds = SEEDS[fw]

    @FUZZ
    @given(data=st.data())
    def check(data):
        text = data.draw(mutated(data.draw(st.sampled_from(seeds))[0]))
        argv = ["show", text, "--no-grid"]
        rc, out, err = run_in_process(argv)
        assert_clean(rc, err, argv)

    check()


CORPUS_SEED = (
    '[defaults]\nshape = [16, 16]\n\n'
    '[[claim]]\nname = "blocked"\n'
    'a = "triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], '
    'order = [1, 0]}>"\n'
    'b = "triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], '
    'order = [1, 0]}>"\n'
    'expect = "equal"\ntags = ["x"]\ntimeout_ms = 2000\noptions = { warp_size = 32 }\n\n'
    '[[layout]]\nname = "l"\nspec = "cute:(4,8):(8,1)"\nshape = [4, 8]\n')


def test_generated_corpus(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text(CORPUS_SEED)
    accepted(["check", str(p), "-j", "1"])

    @FUZZ
    @given(text=mutated(CORPUS_SEED))
    def check(text):
        p.write_text(text, encoding="utf-8", errors="surrogatepass")
        argv = ["check", str(p), "-j", "1"]
        rc, out, err = run_in_process(argv)
        assert_clean(rc, err, argv)

    check()


def test_generated_golden(tmp_path, files):
    seed = open(files["valid_golden"], encoding="utf-8").read()
    p = tmp_path / "g.json"

    @FUZZ
    @given(text=mutated(seed))
    def check(text):
        p.write_text(text, encoding="utf-8", errors="surrogatepass")
        for argv in (["diff", files["valid_golden"], str(p), "--timeout-ms", "2000"],
                     ["diff", str(p), files["valid_golden"], "--timeout-ms", "2000"]):
            rc, out, err = run_in_process(argv)
            assert_clean(rc, err, argv)

    check()


def test_generated_atlas_corpus(tmp_path):
    seed = ('[[claim]]\nname = "a"\na = "ptx:mma.m16n8k16.f16.A"\n'
            'b = "cute:SM80_16x8x16_F32F16F16F32_TN.A"\nexpect = "equal"\nfragment = "mma.m16n8k16.f16.A"\n\n'
            '[[inexpressible]]\nfragment = "ldmatrix.x4"\nframework = "iree"\nnote = "n"\n')
    p = tmp_path / "atlas.toml"
    p.write_text(seed)
    accepted(["atlas", "--corpus", str(p), "-j", "1"])

    @settings(FUZZ, max_examples=25)
    @given(text=mutated(seed))
    def check(text):
        p.write_text(text, encoding="utf-8", errors="surrogatepass")
        argv = ["atlas", "--corpus", str(p), "-j", "1"]
        rc, out, err = run_in_process(argv)
        assert_clean(rc, err, argv)

    check()


#: ``--native`` hands the text to the installed framework (Triton in a subprocess, tilus, iree-opt):
#: hostile texts must still end cleanly (the framework's refusal is exit 1 or 2, never a crash or a hang)
NATIVE_CASES = [
    ["show", "--native", "tilus:shared_row_major(65536, 65536)"],
    ["show", "--native", "tilus:local(" + BIG + ", 1)"],
    ["show", "--native", "triton:" + blocked(wpc="[1048576, 1]"), "--shape", "64x64"],
    ["show", "--native", "triton:" + BLOCKED, "--shape", "65536x65536"],
    ["show", "--native", "triton:" + "#ttg.slice<{dim = 0, parent = " * 70 + BLOCKED + "}>" * 70, "--shape", "64"],
    ["show", "--native", "iree:" + IREE.replace("batch_tile = [1, 1]", "batch_tile = [1024, 1024]")],
    ["show", "--native", "cute:" + TILED_MMA.replace("(2,2,1)", "(4096,4096,1)")],
]


@pytest.mark.parametrize("argv", NATIVE_CASES, ids=[f"native-{i}" for i in range(len(NATIVE_CASES))])
def test_native_oracles_bounded(argv):
    t0 = time.monotonic()
    rc, out, err = run_subprocess(argv + ["--no-grid"])
    assert_clean(rc, err, argv)
    assert time.monotonic() - t0 < SUBPROCESS_LIMIT_S


#: nesting and repetition inside the length limits, from a file (in-process: each is refused fast)
NESTED_FILE_TEXTS = {
    "tilus-chain": ("tilus", "local(2, 1)" + ".local(1, 1)" * 1500),
    "tilus-parens": ("tilus", "local(" + "(" * 9000 + "2" + ")" * 9000 + ", 1)"),
    "tilus-unary": ("tilus", "local(" + "-" * 19000 + "2, 1)"),
    "tilus-plus": ("tilus", "local(" + "+".join(["1"] * 9000) + ", 1)"),
    "tilus-list": ("tilus", "local(" + "[" * 9000 + "]" * 9000 + ", 1)"),
    "tilus-pow": ("tilus", "local(" + "**".join(["2"] * 5000) + ", 1)"),
    "tilus-attr": ("tilus", "local" + ".x" * 9000 + "(2, 1)"),
    "tilus-grow": ("tilus", "local(2, 2)" + ".local(2, 2)" * 99),
    "tilus-rank": ("tilus", "local(" + ", ".join(["2"] * 60) + ")"),
    "cute-parens": ("cute", "(" * 50000 + "4" + ")" * 50000 + ":1"),
    "cute-compose": ("cute", "composition(" * 20000 + "4:1" + ", 4:1)" * 20000),
    "cute-o-chain": ("cute", " o ".join(["(4,8):(8,1)"] * 2000)),
    "cute-layout-type": ("cute", "Layout<Shape<" * 20000 + "_4" + ">>" * 20000),
    "cute-rank": ("cute", "(" + ",".join(["2"] * 60) + "):(" + ",".join(["1"] * 60) + ")"),
    "iree-brackets": ("iree", IREE.replace("[16, 4]", "[" * 40000 + "]" * 40000)),
    "triton-brackets": ("triton", "#ttg.blocked<{sizePerThread = " + "[" * 100000 + "]" * 100000 + "}>"),
    "triton-aliases": ("triton", "\n".join(f"#a{i} = #a{i + 1}" for i in range(20000)) + "\ntensor<64x64xf16, #a0>"),
    "triton-linear-bases": ("triton", "#ttg.linear<{register = [" + ", ".join(["[1, 0]"] * 64) +
                            "], lane = [], warp = [], block = []}>"),
}


@pytest.mark.parametrize("name", sorted(NESTED_FILE_TEXTS))
def test_nesting_within_length_limits(tmp_path, name):
    fw, text = NESTED_FILE_TEXTS[name]
    p = tmp_path / "nested.txt"
    p.write_text(text)
    refused(["show", f"{fw}:@{p}", "--no-grid"] + (["--shape", "64x64"] if fw == "triton" else []))


# ------------------------------------------------------------------------------------------------
# layoutverify.core.files, directly
def test_read_text_limits_and_encoding(tmp_path):
    from layoutverify.core.errors import LayoutError
    from layoutverify.core.files import read_text
    p = tmp_path / "t.txt"
    p.write_bytes(b"abc")
    assert read_text(p, limit=3) == "abc"                      # exactly the limit is fine
    with pytest.raises(LayoutError, match=r"too large: 3 bytes \(limit 2\)"):
        read_text(p, limit=2)
    p.write_bytes("\ufeffcute:4:1".encode())                   # a BOM is dropped
    assert read_text(p) == "cute:4:1"
    p.write_bytes(b"ok\n\xc3(")                                 # bad continuation byte at offset 3
    with pytest.raises(LayoutError, match=r"'.*t\.txt' is not valid UTF-8: byte 0xc3 at offset 3"):
        read_text(p, what="layout file")


def test_check_writable_leaves_files_alone(tmp_path):
    from layoutverify.core.files import check_writable
    existing = tmp_path / "keep.json"
    existing.write_text("precious")
    check_writable(existing)
    assert existing.read_text() == "precious"                  # opened for appending, never truncated
    fresh = tmp_path / "new.json"
    check_writable(fresh)
    assert not fresh.exists()                                  # the probe file is removed again
    check_writable("/dev/null")


def test_output_refused_before_the_work(tmp_path, files):
    """A corpus that takes seconds to check is not checked when the report cannot be written."""
    t0 = time.monotonic()
    refused(["check", files["valid_corpus"], "--junit", str(tmp_path / "no" / "x.xml")], "does not exist")
    refused(["prove", CUTE, "cute:(4,8):(1,4)", "--emit-smt2", str(tmp_path)], "directory")
    assert time.monotonic() - t0 < 5


#: any JSON value, nested a little (for replacing parts of valid golden files and corpora)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=True) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10)


def _paths(obj, prefix=()):
    """Every path (tuple of keys / indices) into a JSON-like value."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _replace(doc, path, value):
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


def test_generated_golden_structure(tmp_path, files):
    """Valid golden files with random JSON values put in random places (wrong types, sizes, shapes)."""
    base = json.loads(open(files["valid_golden"], encoding="utf-8").read())
    places = [p for p in _paths(base) if p]
    x = tmp_path / "x.json"

    @FUZZ
    @given(edits=st.lists(st.tuples(st.sampled_from(places), JSON_VALUES), min_size=1, max_size=3))
    def check(edits):
        doc = json.loads(json.dumps(base))
        for path, value in edits:
            try:
                _replace(doc, path, value)
            except (KeyError, IndexError, TypeError):
                pass   # an earlier edit replaced the parent
        x.write_text(json.dumps(doc), encoding="utf-8", errors="surrogatepass")
        for argv in (["diff", files["valid_golden"], str(x), "--timeout-ms", "2000"],
                     ["diff", str(x), files["valid_golden"], "--timeout-ms", "2000"]):
            rc, out, err = run_in_process(argv)
            assert_clean(rc, err, argv)

    check()


def _toml(v) -> str:
    """A TOML literal for a JSON-like value (inline tables; nulls become empty strings)."""
    if v is None:
        return '""'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if v != v else ("inf" if v == float("inf") else "-inf" if v == float("-inf") else repr(v))
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml(x)}" for k, x in v.items()) + "}"


CLAIM_FIELDS = ["name", "a", "b", "expect", "shape", "shape_a", "shape_b", "options", "options_a", "options_b",
                "tags", "note", "fragment", "framework", "timeout_ms", "known", "native"]


def test_generated_corpus_structure(tmp_path):
    """A valid claim with random values in random fields (and random unknown fields)."""
    claim = {"name": "c", "a": "cute:(4,8):(8,1)", "b": "cute:(4,8):(8,1)", "expect": "equal"}
    p = tmp_path / "c.toml"

    @FUZZ
    @given(fields=st.dictionaries(st.sampled_from(CLAIM_FIELDS) | st.text(min_size=1, max_size=6), JSON_VALUES,
                                  min_size=1, max_size=3))
    def check(fields):
        body = {**claim, **fields}
        p.write_text("[[claim]]\n" + "".join(f"{json.dumps(k)} = {_toml(v)}\n" for k, v in body.items()),
                     encoding="utf-8", errors="surrogatepass")
        argv = ["check", str(p), "-j", "1"]
        rc, out, err = run_in_process(argv)
        assert_clean(rc, err, argv)

    check()


# ------------------------------------------------------------------------------------------------
# Generated from each adapter's grammar: well-formed texts with odd numbers (zero, non-powers of
# two, huge) in every position, nested a few levels: they reach the algebra, not just the parser
SIZES = st.one_of(st.integers(0, 9), st.sampled_from([12, 16, 32, 64, 96, 1024, 65536, 2 ** 31, 2 ** 40, 10 ** 20]))


def _int_tuple(elem):
    return st.recursive(elem.map(str), lambda c: st.lists(c, min_size=1, max_size=3).map(
        lambda xs: "(" + ",".join(xs) + ")"), max_leaves=6)


CUTE_LAYOUT = st.one_of(_int_tuple(SIZES), st.tuples(_int_tuple(SIZES), _int_tuple(st.one_of(SIZES, st.integers(-4, -1))))
                        .map(lambda p: f"{p[0]}:{p[1]}"))
CUTE_SWIZZLE = st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(-9, 9)).map(lambda t: "Sw<%d,%d,%d>" % t)
CUTE_UNARY = ["coalesce", "right_inverse", "left_inverse", "filter", "complement", "flatten"]
CUTE_BINARY = ["composition", "logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product",
               "blocked_product", "raked_product", "zipped_product", "tiled_product", "flat_product", "complement",
               "make_layout", "tile_to_shape"]


@st.composite
def cute_text(draw, depth=0):
    k = draw(st.integers(0, 4 if depth < 2 else 0))
    if k == 0:
        return draw(CUTE_LAYOUT)
    if k == 1:
        return f"{draw(st.sampled_from(CUTE_UNARY))}({draw(cute_text(depth + 1))})"
    if k == 2:
        return f"{draw(CUTE_SWIZZLE)} o {draw(CUTE_LAYOUT)}"
    if k == 3:
        return f"{draw(st.sampled_from(['upcast', 'downcast']))}<{draw(SIZES)}>({draw(cute_text(depth + 1))})"
    return f"{draw(st.sampled_from(CUTE_BINARY))}({draw(cute_text(depth + 1))}, {draw(cute_text(depth + 1))})"


@st.composite
def tilus_text(draw):
    verbs = draw(st.lists(st.sampled_from(["local", "spatial", "column_local", "column_spatial"]), min_size=1, max_size=4))
    rank = draw(st.integers(1, 3))
    return ".".join(f"{v}({', '.join(str(draw(SIZES)) for _ in range(rank))})" for v in verbs)


@st.composite
def iree_text(draw):
    rank = draw(st.integers(1, 3))
    fields = ["subgroup_tile", "batch_tile", "outer_tile", "thread_tile", "element_tile", "subgroup_strides",
              "thread_strides"]
    body = ", ".join(f"{f} = [{', '.join(str(draw(SIZES)) for _ in range(rank))}]" for f in fields)
    return f"#iree_vector_ext.nested_layout<{body}>"


@st.composite
def ptx_text(draw):
    head = draw(st.sampled_from(["mma", "mma.sync.aligned", "wgmma", "ldmatrix", "stmatrix", "mma.sp"]))
    shape = f"m{draw(SIZES)}n{draw(SIZES)}k{draw(SIZES)}"
    rest = draw(st.lists(st.sampled_from(["row", "col", "f16", "f32", "bf16", "s8", "u4", "tf32", "f64", "x1", "x2",
                                          "x4", "trans", "b16", "A", "B", "C", "D"]), max_size=4))
    return ".".join([head, shape] + rest)


@st.composite
def amd_text(draw):
    arch = draw(st.sampled_from(["", "cdna1.", "cdna3.", "rdna3.", "rdna4.", "gfx942.", "gfx1100."]))
    kind = draw(st.sampled_from(["v_mfma", "v_wmma", "v_smfmac", "v_swmmac"]))
    ty = draw(st.sampled_from(["f32", "f16", "i32", "f64", "bf16"]))
    src = draw(st.sampled_from(["f16", "bf16", "i8", "f64", "fp8_fp8", "4b_f16"]))
    return f"{arch}{kind}_{ty}_{draw(SIZES)}x{draw(SIZES)}x{draw(SIZES)}_{src}.{draw(st.sampled_from('ABCD'))}"


TRITON_VALUES = st.recursive(
    st.one_of(SIZES.map(str), st.integers(-4, -1).map(str),
              st.sampled_from(["true", "false", '"x"', "#ttg.blocked<{}>", "[]", "unit"])),
    lambda c: st.lists(c, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"), max_leaves=8)
_TRITON_PARAM = re.compile(r"\w+ = ((?:\[[^=]*?\]+)|[^,{}<>=\[]+)(?=\s*[,}>])")


@st.composite
def triton_text(draw):
    text, shape = draw(st.sampled_from(SEEDS["triton"]))
    for _ in range(draw(st.integers(1, 2))):
        params = [m.span(1) for m in _TRITON_PARAM.finditer(text)]
        if params:
            a, b = draw(st.sampled_from(params))
            text = text[:a] + draw(TRITON_VALUES) + text[b:]
    return text, draw(st.sampled_from([shape, "64x64", "1", "2x2x2", "4096x4096", None]))


GRAMMARS = {"cute": cute_text().map(lambda t: (t, None)), "tilus": tilus_text().map(lambda t: (t, None)),
            "iree": iree_text().map(lambda t: (t, None)), "ptx": ptx_text().map(lambda t: (t, None)),
            "amd": amd_text().map(lambda t: (t, None)), "triton": triton_text()}


@pytest.mark.parametrize("fw", sorted(GRAMMARS))
def test_generated_from_grammar(fw):
    @FUZZ
    @given(case=GRAMMARS[fw])
    def check(case):
        text, shape = case
        argv = show(fw, text, shape)
        rc, out, err = run_in_process(argv)
        assert_clean(rc, err, argv)

    check()


# ------------------------------------------------------------------------------------------------
# Under --json an error is one JSON object on stdout (schema layoutverify/1), nothing on stderr
JSON_ERROR_CASES = [c for c in TEXT_CASES if c[3] is not ANY][::4]


@pytest.mark.parametrize("fw,text,shape,mention", JSON_ERROR_CASES,
                         ids=[f"json-{c[0]}-{i}" for i, c in enumerate(JSON_ERROR_CASES)])
def test_hostile_text_as_json(fw, text, shape, mention):
    argv = show(fw, text, shape) + ["--json"]
    rc, out, err = run_in_process(argv)
    assert rc == 2 and err == "", (argv, rc, err[-500:])
    doc = json.loads(out)
    assert doc["schema"] == "layoutverify/1" and doc["kind"] == "error" and doc["exit"] == 2, doc
    assert doc["error"]["message"] and "\n" not in doc["error"]["message"], doc
    if mention is not None:
        assert re.search(mention, doc["error"]["message"], re.IGNORECASE), doc
