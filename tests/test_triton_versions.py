"""The ``triton_version`` option: Triton 3.6 through 3.9 give different layouts for some texts.

CPU only, no Triton needed. Every expected value below is what the real Triton release returned
(``GluonOpBuilder.to_linear_layout`` of the Triton 3.6.0, 3.7.1, 3.8.0 and 3.9.0 wheels from PyPI,
run on the text and shape given; "rejects" = the release refused or aborted on it), and each case
names the upstream change (triton-lang/triton PR and commit) that made the releases differ.
``test_recorded_values_are_what_each_release_returns`` asks each release again on every run. Where
Triton's own test suite pins the value, that is cited too. The table of changes is in
``adapters/triton/__init__.py``; the differential sweeps (``test_triton_sweep.py`` etc.) compare
with whichever release is installed.
"""
from __future__ import annotations

from importlib import metadata

import pytest

from layoutverify.adapters.triton import parse, version
from layoutverify.core.errors import LayoutError

REJECTS = "rejects"
VERSIONS = version.SUPPORTED

# (why, text, shape, {release: expected bases (only the non-empty hardware dims) or REJECTS})
CASES = [
    ("blocked broadcast registers: zero bases until 3.9, dropped by #11541 (2026-09-02). 3.6-3.8 value also in "
     "Triton's test/Conversion/amd/in_thread_transpose.mlir (#8828, 44969ef68), #linear1 for tensor<1x256>",
     "#ttg.blocked<{sizePerThread = [4, 4], threadsPerWarp = [1, 64], warpsPerCTA = [1, 1], order = [1, 0]}>",
     (1, 256),
     {"3.6": {"register": [[0, 1], [0, 2], [0, 0], [0, 0]],
              "lane": [[0, 4], [0, 8], [0, 16], [0, 32], [0, 64], [0, 128]]},
      "3.9": {"register": [[0, 1], [0, 2]], "lane": [[0, 4], [0, 8], [0, 16], [0, 32], [0, 64], [0, 128]]}}),
    ("the lead's sweep example (3.6: 32 registers, 3.9: 16), #11541",
     "#ttg.blocked<{sizePerThread = [8, 4, 1], threadsPerWarp = [2, 8, 2], warpsPerCTA = [1, 2, 2], "
     "order = [1, 2, 0]}>", (4, 8, 2),
     {"3.8": {"register": [[0, 1, 0], [0, 2, 0], [1, 0, 0], [2, 0, 0], [0, 0, 0]],
              "lane": [[0, 4, 0], [0, 0, 0], [0, 0, 0], [0, 0, 1], [0, 0, 0]], "warp": [[0, 0, 0], [0, 0, 0]]},
      "3.9": {"register": [[0, 1, 0], [0, 2, 0], [1, 0, 0], [2, 0, 0]],
              "lane": [[0, 4, 0], [0, 0, 0], [0, 0, 0], [0, 0, 1], [0, 0, 0]], "warp": [[0, 0, 0], [0, 0, 0]]}}),
    ("#ttg.linear with a repeated basis: accepted by 3.6, refused since #9215 (9f8a10f1dbd0)",
     "#ttg.linear<{register = [[0, 1], [0, 1], [1, 0]], lane = [[0, 2], [0, 4], [2, 0], [4, 0], [8, 0]], "
     "warp = [[0, 2]], block = []}>", (16, 8),
     {"3.6": {"register": [[0, 1], [0, 1], [1, 0]], "lane": [[0, 2], [0, 4], [2, 0], [4, 0], [8, 0]],
              "warp": [[0, 2]]},
      "3.7": REJECTS, "3.9": REJECTS}),
    ("3.6 fits such a layout with its old ensureLayoutNotLargerThan (rewritten by #9221, bb75a8708037): a repeat "
     "left past the tensor aborts",
     "#ttg.linear<{register = [[0, 1], [0, 1], [1, 0]], lane = [[0, 2], [0, 4], [2, 0], [4, 0], [8, 0]], "
     "warp = [[0, 2]], block = []}>", (16, 2),
     {"3.6": REJECTS}),
    ("... and grows it as usual",
     "#ttg.linear<{register = [[0, 1], [0, 1], [1, 0]], lane = [[0, 2], [0, 4], [2, 0], [4, 0], [8, 0]], "
     "warp = [[0, 2]], block = []}>", (4, 32),
     {"3.6": {"register": [[0, 1], [0, 1], [1, 0], [0, 8], [0, 16]], "lane": [[0, 2], [0, 4], [2, 0], [0, 0], [0, 0]],
              "warp": [[0, 2]]},
      "3.9": REJECTS}),
    ("slice of a #ttg.linear whose block basis is below a warp basis: 3.6 aborts, #8922 (e22060c05c05) fixed",
     "#ttg.slice<{dim = 0, parent = #ttg.linear<{register = [[0, 1], [1, 0]], lane = [[0, 2], [0, 4], [0, 8], "
     "[0, 16], [0, 32]], warp = [[4, 0]], block = [[2, 0]]}>}>", (64,),
     {"3.6": REJECTS,
      "3.7": {"register": [[1]], "lane": [[2], [4], [8], [16], [32]], "warp": [[0]], "block": [[0]]}}),
    ("the same as a slice of a slice: 3.7 still aborts, #9557 (b2ffee698c4c) fixed",
     "#ttg.slice<{dim = 0, parent = #ttg.slice<{dim = 0, parent = #ttg.linear<{register = [[0, 0, 1], [0, 1, 0]], "
     "lane = [[0, 0, 2], [0, 0, 4], [0, 0, 8], [0, 0, 16], [0, 0, 32]], warp = [[0, 4, 0]], block = [[0, 2, 0]]}>}>}>",
     (64,),
     {"3.6": REJECTS, "3.7": REJECTS,
      "3.8": {"register": [[1]], "lane": [[2], [4], [8], [16], [32]], "warp": [[0]], "block": [[0]]}}),
    ("amd_wmma in 3.6's spelling: N repetitions come before tilesPerWarp[M] (changed by #8946, ec7836e1f6a5)",
     "#ttg.amd_wmma<{version = 2, isTranspose = false, warpsPerCTA = [2, 2], tilesPerWarp = [2, 1]}>", (64, 64),
     {"3.6": {"register": [[1, 0], [2, 0], [4, 0], [0, 32], [16, 0]],
              "lane": [[0, 1], [0, 2], [0, 4], [0, 8], [8, 0]], "warp": [[0, 16], [32, 0]]}}),
    ("its #8946 translation, the 3.7+ spelling; 3.6 cannot parse ctaLayout",
     "#ttg.amd_wmma<{version = 2, isTranspose = false, ctaLayout = {register = [[1, 0]], warp = [[0, 1], [2, 0]]}}>",
     (64, 64),
     {"3.6": REJECTS,
      "3.7": {"register": [[1, 0], [2, 0], [4, 0], [16, 0], [0, 32]],
              "lane": [[0, 1], [0, 2], [0, 4], [0, 8], [8, 0]], "warp": [[0, 16], [32, 0]]},
      "3.9": {"register": [[1, 0], [2, 0], [4, 0], [16, 0], [0, 32]],
              "lane": [[0, 1], [0, 2], [0, 4], [0, 8], [8, 0]], "warp": [[0, 16], [32, 0]]}}),
    ("WMMA operand, 3.6 formula (tilesPerWarp along M, warps broadcast along K)",
     "#ttg.dot_op<{opIdx = 0, parent = #ttg.amd_wmma<{version = 2, isTranspose = false, warpsPerCTA = [2, 2], "
     "tilesPerWarp = [2, 1]}>, kWidth = 8}>", (64, 64),
     {"3.6": {"register": [[0, 1], [0, 2], [0, 4], [0, 16], [0, 32], [16, 0]],
              "lane": [[1, 0], [2, 0], [4, 0], [8, 0], [0, 8]], "warp": [[0, 0], [32, 0]]}}),
    ("WMMA operand: 3.7 spans the tensor's K before ctaLayout's registers, #10082 (2c7ce4925d37) not",
     "#ttg.dot_op<{opIdx = 0, parent = #ttg.amd_wmma<{version = 2, isTranspose = false, ctaLayout = {register = "
     "[[1, 0]], warp = [[0, 1], [2, 0]]}}>, kWidth = 8}>", (64, 64),
     {"3.7": {"register": [[0, 1], [0, 2], [0, 4], [0, 16], [0, 32], [16, 0]],
              "lane": [[1, 0], [2, 0], [4, 0], [8, 0], [0, 8]], "warp": [[0, 0], [32, 0]]},
      "3.8": {"register": [[0, 1], [0, 2], [0, 4], [16, 0], [0, 16], [0, 32]],
              "lane": [[1, 0], [2, 0], [4, 0], [8, 0], [0, 8]], "warp": [[0, 0], [32, 0]]}}),
    ("WMMA operand CGA: the accumulator's (K split) until #9694 (863602691e86), the operand's after",
     "#ttg.dot_op<{opIdx = 0, parent = #ttg.amd_wmma<{version = 2, isTranspose = false, ctaLayout = {warp = "
     "[[1, 0]]}, CGALayout = [[0, 1]]}>, kWidth = 8}>", (32, 64),
     {"3.7": {"register": [[0, 1], [0, 2], [0, 4], [0, 16], [0, 0]],
              "lane": [[1, 0], [2, 0], [4, 0], [8, 0], [0, 8]], "warp": [[16, 0]], "block": [[0, 32]]},
      "3.8": {"register": [[0, 1], [0, 2], [0, 4], [0, 16], [0, 32]],
              "lane": [[1, 0], [2, 0], [4, 0], [8, 0], [0, 8]], "warp": [[16, 0]], "block": [[0, 0]]}}),
    ("WMMA accumulator smaller than one instruction: 3.6/3.7 assert, #9825 (1299a3b8ebb2) allows it",
     "#ttg.amd_wmma<{version = 2, isTranspose = false, ctaLayout = {warp = [[1, 0]]}}>", (8, 16),
     {"3.7": REJECTS,
      "3.8": {"register": [[1, 0], [2, 0], [4, 0]], "lane": [[0, 1], [0, 2], [0, 4], [0, 8], [0, 0]],
              "warp": [[0, 0]]}}),
    ("WMMA v3 32x16 instructions: new in #10082 (2c7ce4925d37)",
     "#ttg.amd_wmma<{version = 3, isTranspose = false, ctaLayout = {warp = [[1, 0]]}, instrShape = [32, 16, 64]}>",
     (64, 16),
     {"3.7": REJECTS,
      "3.8": {"register": [[1, 0], [2, 0], [4, 0], [16, 0]], "lane": [[0, 1], [0, 2], [0, 4], [0, 8], [8, 0]],
              "warp": [[32, 0]]}}),
    ("WMMA v3 operand kWidth 4: 3.6 allows 2/8/16 only, #8783 (89a3c6e5115e) any",
     "#ttg.dot_op<{opIdx = 0, parent = #ttg.amd_wmma<{version = 3, isTranspose = false, warpsPerCTA = [1, 1], "
     "instrShape = [16, 16, 32]}>, kWidth = 4}>", (16, 32),
     {"3.6": REJECTS}),
    ("the same in 3.7's spelling",
     "#ttg.dot_op<{opIdx = 0, parent = #ttg.amd_wmma<{version = 3, isTranspose = false, ctaLayout = {warp = []}, "
     "instrShape = [16, 16, 32]}>, kWidth = 4}>", (16, 32),
     {"3.7": {"register": [[0, 1], [0, 2], [0, 8], [0, 16]], "lane": [[1, 0], [2, 0], [4, 0], [8, 0], [0, 4]]}}),
    ("a ctaLayout repeating a bit, cut by the tensor: 3.7 aborts, #9221 (bb75a8708037) zeroes both copies",
     "#ttg.amd_wmma<{version = 2, isTranspose = false, ctaLayout = {register = [[0, 1]], warp = [[0, 1]]}}>",
     (16, 16),
     {"3.7": REJECTS,
      "3.8": {"register": [[1, 0], [2, 0], [4, 0], [0, 0]], "lane": [[0, 1], [0, 2], [0, 4], [0, 8], [8, 0]],
              "warp": [[0, 0]]}}),
    ("nvidia_mma operand tile: 16 x 8*kWidth until #10060 (9e59ac0f0478), then instrShape's M (8: K = 4*kWidth)",
     "#ttg.dot_op<{opIdx = 0, parent = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [1, 1], "
     "instrShape = [8, 8]}>, kWidth = 1}>", (8, 4),
     {"3.7": {"register": [[0, 0], [0, 0]], "lane": [[0, 1], [0, 2], [1, 0], [2, 0], [4, 0]]},
      "3.8": {"lane": [[0, 1], [0, 2], [1, 0], [2, 0], [4, 0]]}}),
    ("nvmma_shared unswizzled + transposed: row-major until #10453 (e4264c126ccb), dim0 first after",
     "#ttg.nvmma_shared<{swizzlingByteWidth = 0, transposed = true, elementBitWidth = 16}>", (4, 8),
     {"3.7": {"offset": [[0, 1], [0, 2], [0, 4], [1, 0], [2, 0]]},
      "3.8": {"offset": [[1, 0], [2, 0], [0, 1], [0, 2], [0, 4]]}}),
]


def _bases(text, shape, v):
    lay = parse(text, shape=shape, triton_version=v)
    return {k: [list(b) for b in vs] for k, vs in lay.f2_bases().items() if vs}


@pytest.mark.parametrize("why, text, shape, expected", CASES, ids=[c[0].split(":")[0][:40] for c in CASES])
def test_release_specific_layouts(why, text, shape, expected):
    for v, want in expected.items():
        if want == REJECTS:
            with pytest.raises(LayoutError) as e:
                parse(text, shape=shape, triton_version=v)
            assert "\n" not in str(e.value)
        else:
            assert _bases(text, shape, v) == want, (v, why)


def test_each_change_really_differs_between_the_releases_named():
    """The cases are not vacuous: each one's releases disagree with each other."""
    for why, text, shape, expected in CASES:
        outcomes = []
        for v in expected:
            try:
                outcomes.append(repr(_bases(text, shape, v)))
            except LayoutError:
                outcomes.append(REJECTS)
        if len(expected) > 1:
            assert len(set(outcomes)) > 1, why


@pytest.mark.parametrize("v", VERSIONS)
def test_unchanged_layouts_agree_across_releases(v):
    """Away from the changes, every release gives the same bases (a tile the tensor fills)."""
    texts = [
        ("#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>",
         (64, 64)),
        ("#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>", (64, 64)),
        ("#ttg.dot_op<{opIdx = 0, parent = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], "
         "instrShape = [16, 8]}>, kWidth = 2}>", (64, 32)),
        ("#ttg.amd_mfma<{version = 3, warpsPerCTA = [2, 2], instrShape = [32, 32, 8], isTransposed = true}>", (64, 64)),
        ("#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>", (64, 64)),
    ]
    for text, shape in texts:
        assert _bases(text, shape, v) == _bases(text, shape, "3.9"), text


def test_option_values():
    assert version.normalize("3.6") == "3.6"
    assert version.normalize("3.7.1") == "3.7"
    assert version.normalize("v3.8.0") == "3.8"
    assert version.normalize(3.9) == "3.9"
    for bad in ("3.5", "4.0", "3", "latest", True, 3.10):
        with pytest.raises(LayoutError, match="triton_version must be one of 3.6, 3.7, 3.8, 3.9"):
            version.normalize(bad)
    with pytest.raises(LayoutError, match="triton_version"):
        parse("#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>",
              shape=(32,), triton_version="3.5")


def test_default_is_the_installed_release_or_the_newest():
    try:
        mm = ".".join(metadata.version("triton").split(".")[:2])
    except metadata.PackageNotFoundError:
        mm = None
    assert version.default() == (mm if mm in VERSIONS else "3.9")
    text = "#ttg.blocked<{sizePerThread = [4, 4], threadsPerWarp = [1, 64], warpsPerCTA = [1, 1], order = [1, 0]}>"
    assert parse(text, shape=(1, 256)).f2_bases() == parse(text, shape=(1, 256),
                                                           triton_version=version.default()).f2_bases()


def test_ctalayout_text_names_the_release_that_introduced_it():
    with pytest.raises(LayoutError, match=r"Triton 3\.6 writes .*warpsPerCTA.*3\.7 \(#8946\)"):
        parse("#ttg.amd_wmma<{version = 2, isTranspose = false, ctaLayout = {warp = [[1, 0]]}}>", shape=(64, 64),
              triton_version="3.6")


def test_recorded_values_are_what_each_release_returns(triton_python):
    """The values above are not trusted as written: each release named is asked again (its wheel
    in its own interpreter, ``GluonOpBuilder.to_linear_layout``), and must return them."""
    from layoutverify.adapters.triton.native import NativeError, native_many

    releases = sorted({v for *_, expected in CASES for v in expected})
    for release in releases:
        cases = [(why, text, shape, expected[release]) for why, text, shape, expected in CASES if release in expected]
        theirs = native_many([(text, shape) for _, text, shape, _ in cases], python=triton_python(release))
        for (why, text, shape, want), got in zip(cases, theirs):
            if want == REJECTS:
                assert isinstance(got, NativeError), (release, why, got)
            else:
                assert not isinstance(got, NativeError), (release, why, got)
                bases = {k: [list(b) for b in vs] for k, vs in got.f2_bases().items() if vs}
                assert bases == want, (release, why)
