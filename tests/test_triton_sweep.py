"""Differential sweep: our Triton adapter against the installed Triton's own ``toLinearLayout``.

Seeded random encodings of every distributed kind of the adapter's core (blocked with and
without CGA layouts, slice of any parent, nvidia_mma v2 and v3, dot_op with mma and blocked
parents, linear), ranks 1 to 4, 1 to 16 warps, 1 to 4 CTAs, tensor shapes from 1/8 to 8 times
the layout's tile per dim (replication and register repetition). A quarter of the cases are
written as whole ``tensor<...>`` types, so the shape comes from the text. Triton parses the same
text itself (see ``layoutverify.adapters.triton.native``), so the parser is compared too. Bases must be equal
exactly, dims and sizes included.

Cases Triton rejects are counted with their reasons and must stay a small fraction; they are
reported as a warning, never dropped silently.
"""
from __future__ import annotations

import random
import warnings

import pytest

import triton_oracle as O

pytestmark = pytest.mark.skipif(not O.have_triton(), reason="needs Triton >= 3.5 with Gluon (the oracle)")

SEED = 20250611
PER_KIND = 400
#: Triton 3.6 and 3.7 abort on many random slices of #ttg.linear (block bases not the top bits
#: of their dim: see layoutverify.adapters.triton.linear._check_slice_of_linear); we reject those too
MAX_REJECT_FRACTION = 0.05 if O.TRITON_VERSION in ("3.6", "3.7") else 0.01


def _as_type(text: str, shape) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf16, {text}>"


@pytest.fixture(scope="module")
def sweep():
    from layoutverify.adapters.triton import parse
    rng = random.Random(SEED + 1)
    cases = []
    for kind, text, shape in O.sweep_cases(SEED, PER_KIND):
        if rng.random() < 0.25:
            cases.append((kind, _as_type(text, shape), None))
        else:
            cases.append((kind, text, shape))
    tally = O.run_sweep(cases, parse)
    if sum(tally.triton_rejects.values()) or sum(tally.both_reject.values()):
        warnings.warn("Triton sweep: " + tally.summary(), stacklevel=1)
    return cases, tally, tally.layouts


def test_sweep_size(sweep):
    cases, _, _ = sweep
    assert len(cases) >= 2000
    kinds = {k for k, _, _ in cases}
    assert kinds == {"blocked", "slice", "mma_v2", "mma_v3", "dot_op", "linear"}


def test_ours_equals_triton(sweep):
    _, tally, _ = sweep
    assert not tally.mismatches, tally.summary()
    assert not tally.we_reject, tally.summary()


def test_triton_rejects_few(sweep):
    cases, tally, _ = sweep
    rejected = sum(tally.triton_rejects.values()) + sum(tally.both_reject.values())
    assert rejected <= MAX_REJECT_FRACTION * len(cases), tally.summary()
    assert tally.compared >= (1 - MAX_REJECT_FRACTION) * len(cases), tally.summary()


def test_sweep_covers_the_space(sweep):
    """The compared cases (Triton's layouts) span what the sweep claims to cover."""
    _, _, layouts = sweep
    ranks = {len(t.out_dims) for _, _, t in layouts}
    warps = {t.in_size("warp") for _, _, t in layouts}
    blocks = {t.in_size("block") for _, _, t in layouts}
    assert ranks >= {1, 2, 3, 4}
    assert warps >= {1, 2, 4, 8, 16}
    assert blocks >= {1, 2, 4}
    # replication (some lane/warp/block basis is zero: the tile is larger than the tensor) ...
    replicated = [t for _, _, t in layouts
                  if any(not any(v) for d in ("lane", "warp", "block") for v in t.f2_bases()[d])]
    # ... and register repetition (more registers than the layout's own tile holds)
    big = [t for _, _, t in layouts if t.in_size("register") >= 64]
    assert len(replicated) > 200 and len(big) > 100
    assert {("CGALayout" in text or "CTAsPerCGA" in text) for _, text, _ in layouts} == {True, False}
    assert any(text.startswith("tensor<") for _, text, _ in layouts)


def test_named_examples_match_triton():
    """A few hand-picked layouts from Triton's documentation, through the whole-type path."""
    from layoutverify.adapters.triton import parse
    texts = [
        "tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], "
        "warpsPerCTA = [4, 1], order = [1, 0]}>>",
        "tensor<128x64xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, "
        "warpsPerCTA = [4, 1], instrShape = [16, 64, 16]}>, kWidth = 2}>>",
        "tensor<64x32xf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, "
        "warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 4}>>",
        "tensor<64xf32, #ttg.slice<{dim = 1, parent = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, "
        "warpsPerCTA = [4, 1], instrShape = [16, 8]}>}>>",
        "tensor<32x32xf32, #ttg.linear<{register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], "
        "[4, 0]], warp = [[16, 0]], block = []}>>",
    ]
    theirs = O.oracle([(t, None) for t in texts])
    for text, t in zip(texts, theirs):
        assert not isinstance(t, Exception), (text, t)
        assert O.compare(parse(text, triton_version=O.TRITON_VERSION), t) is None, text
