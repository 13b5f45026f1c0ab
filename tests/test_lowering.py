"""Triton's emitted conversion mechanism (``adapters/triton/lowering.py``) against the PTX that
Triton itself compiles, for every pair of ``corpora/conversion_suite.toml`` and every supported
Triton release (3.6, 3.7, 3.8, 3.9).

The oracle is the real compiler: each pair's Gluon kernel is compiled on the CPU for sm_90 down to
PTX by each release, and the PTX shows the mechanism (shared memory, shuffles, or registers only).
Our prediction is computed without Triton (our own ``invertAndCompose`` over the canonical
layouts, read with that release's semantics), and its ``invertAndCompose`` is compared with that
release's own ``LinearLayout.invert_and_compose``.

The releases other than the installed one run in their own interpreters (the ``triton_python``
fixture of ``conftest.py``: ``LV_TRITON_PYTHONS``, else a venv per release installed once into
``~/.cache/layoutverify`` by pip). Without network they skip, except under CI, where they fail.
"""
from __future__ import annotations

import pytest

from layoutverify.adapters.triton import version
from layoutverify.apps.measure.suite import layouts, load_suite, lowering
from layoutverify.apps.measure.validate import check_pairs
from layoutverify.core.errors import LayoutError, UnsupportedError
from layoutverify.core.layout import Layout


@pytest.fixture(scope="session")
def suite():
    return load_suite()


RELEASES = version.SUPPORTED


@pytest.fixture(params=RELEASES)
def release(request):
    return request.param


def test_suite_is_large_and_varied(suite):
    assert len(suite) >= 60
    fams = {p.family for p in suite}
    for needed in ("blocked-transpose", "mma-blocked", "wgmma-blocked", "mma-dot", "slice", "replicated",
                   "cute", "tilus", "linear-shuffle"):
        assert needed in fams
    assert {p.dtype for p in suite} >= {"fp8", "f16", "f32"}
    assert {(64, 64), (128, 128)} <= {p.shape for p in suite}


def test_every_pair_compiles(suite, suite_ptx, release):
    compiled = suite_ptx(release)
    assert len(compiled) == len(suite)
    errors = {suite[i].name: r["error"] for i, r in compiled.items() if "error" in r}
    assert not errors
    # compiled by the release asked for, not by whatever Triton the interpreter happened to find
    assert {".".join(r["triton"].split(".")[:2]) for r in compiled.values()} == {release}


def test_emitted_mechanism_predicts_the_ptx(suite, suite_ptx, release):
    """100% of the suite: the class we predict for ``release`` is the class its PTX shows."""
    checks = check_pairs(suite, suite_ptx(release), simulate=False, triton_version=release)
    assert len(checks) == len(suite)
    wrong = [(c.pair.name, c.emitted_class, c.rule, c.ptx_class, c.error) for c in checks if not c.prediction_ok]
    assert not wrong, f"Triton {release}: {len(wrong)} of {len(checks)} pairs mispredicted: {wrong[:5]}"
    classes = {c.ptx_class for c in checks}
    assert classes == {"registers", "shuffle", "shared"}, classes
    # Triton is never cheaper than the cheapest sufficient mechanism (soundness of analyze)
    rank = lowering().RANK
    assert all(rank[c.emitted] >= rank[c.cheapest] for c in checks)
    # and the suite holds missed optimisations (Triton costlier than necessary)
    assert any(rank[c.emitted] > rank[c.cheapest] for c in checks)


def test_our_invert_and_compose_is_tritons(suite, suite_ptx, release):
    """Where Triton's own ``invert_and_compose`` is available, ours gives the same map on every
    pair without broadcast (zero) bases; with broadcast bases Triton's choice among the
    equivalent source locations is only partly modelled (the predicted mechanism still agrees,
    see the test above)."""
    low = lowering()
    compiled = suite_ptx(release)
    compared = 0
    for i, p in enumerate(suite):
        r = compiled[i]
        if not r.get("cvt"):
            continue
        if any(not any(v) for lay in (r["a_bases"], r["b_bases"]) for vs in lay.values() for v in vs):
            continue
        a = Layout.from_bases(r["a_bases"], p.shape)
        b = Layout.from_bases(r["b_bases"], p.shape)
        ours = low.invert_and_compose(a, b)
        outs = r["cvt"]["out"]
        theirs = {dim: [dict(zip(outs, v)) for v in vs] for dim, vs in r["cvt"]["bases"]}
        for dim, locs in ours.items():
            assert [{k: loc.get(k, 0) for k in outs} for loc in locs] == theirs.get(dim, []), (p.name, dim)
        compared += 1
    assert compared >= 40


def test_triton_bases_are_ours(suite, suite_ptx, release):
    """The compiled kernels use the layouts we reason about (``release``'s ``to_linear_layout``,
    against our reading of the pair with that release's semantics)."""
    from layoutverify.core.compare import compare
    compiled = suite_ptx(release)
    for i, p in enumerate(suite):
        r = compiled[i]
        a, b = layouts(p, release)
        for mine, theirs in ((a, r["a_bases"]), (b, r["b_bases"])):
            assert compare(mine, Layout.from_bases(theirs, p.shape)).verdict == "equal", p.name


# Expected classes below were read off PTX compiled by the real Triton 3.6.0, 3.7.1, 3.8.0 and
# 3.9.0 wheels (seeded sweep case 487 of tests/test_conversion_ptx.py: a destination warp bit
# selects a source lane).
WARP_SELECTS_LANE = (
    {"register": [[0, 1], [8, 0], [0, 8]], "lane": [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], "warp": [[0, 0]]},
    {"register": [[0, 8], [8, 0]], "lane": [[0, 1], [0, 2], [0, 4], [1, 0], [2, 0]], "warp": [[4, 0]]},
)


@pytest.mark.parametrize("release,cls", [("3.6", "shared"), ("3.7", "shared"), ("3.8", "shared"),
                                         ("3.9", "shuffle")])
def test_release_differences(release, cls, triton_python):
    """The one rule that differs between releases (no suite pair exercises it: every suite pair
    compiles to the same class with all four), predicted, and checked against the PTX that
    ``release`` compiles now; the interpreter runs both forms of that conversion."""
    from layoutverify.apps.ptxsim import check_conversion
    low = lowering()
    a = Layout.from_bases(WARP_SELECTS_LANE[0], (16, 16))
    b = Layout.from_bases(WARP_SELECTS_LANE[1], (16, 16))
    e = low.emitted_mechanism(a, b, triton_version=release)
    assert e.ptx_class == cls and e.triton_version == release
    case = {"id": 0, "a": low.gluon_spec(a), "b": low.gluon_spec(b), "shape": [16, 16], "dtype": "f16",
            "arch": 90, "num_warps": 2, "observe": True}
    r = low.compile_conversions([case], python=triton_python(release), workers=1)[0]
    assert "ptx" in r, r.get("error")
    assert r["triton"].startswith(release + ".")
    assert low.ptx_class(r["ptx"]) == cls
    run = check_conversion(r["ptx"], b, 2)
    assert run.ok, (run.error, run.mismatches[:2])


def test_bad_input():
    low = lowering()
    a = Layout.from_bases({"register": [[0, 1]], "lane": [[1, 0]] * 0 + [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]]},
                          (8, 8))
    with pytest.raises(LayoutError):
        low.emitted_mechanism(a, Layout.from_bases({"register": [[0, 1]]}, (2, 2)))
    with pytest.raises(LayoutError):
        low.emitted_mechanism(a, a, triton_version="2.1")
    table = Layout.from_table([("register", 3)], (3,), [[0], [1], [2]])
    with pytest.raises(UnsupportedError):
        low.emitted_mechanism(table, table)
