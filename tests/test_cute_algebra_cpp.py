"""The CuTe adapter against CuTe C++ itself (the ``nvidia-cutlass`` wheel's headers, host-only g++).

One generated program (three translation units compiled in parallel, once, and cached under
$TMPDIR) evaluates:

* a seeded sweep of random layouts and of every algebra operation on random inputs
  (:func:`cute_cpp.cases.algebra_cases`): CuTe's printed result (its mode structure) and its
  function table (the offset of every 1-D coordinate) must equal ours;
* every atom of our catalogue (``adapters/cute/atoms.toml``) against CUTLASS's ``MMA_Traits`` /
  ``Copy_Traits`` (ThrID and every TV layout);
* tiled MMAs (``make_tiled_mma(...).get_layout{A,B,C}_TV()``) against ours;
* the GMMA shared-memory layout atoms and ``tile_to_shape`` of them, with the element-level
  function (``as_position_independent_swizzle_layout``).

Skips cleanly when g++, the CuTe headers or the CUDA headers CuTe includes are missing.
"""
from __future__ import annotations

import pytest

from layoutverify.adapters.cute import evaluate
from cute_cpp import harness
from cute_cpp.cases import algebra_cases, atom_cases, known_cases

ALGEBRA = algebra_cases() + known_cases()
ATOMS = atom_cases()


@pytest.fixture(scope="session")
def cpp():
    tc = harness.toolchain()
    if isinstance(tc, str):
        pytest.skip(tc)
    half = len(ALGEBRA) // 2             # three translation units, compiled in parallel
    sources = {
        "algebra1": harness.program([(c.id, c.cpp) for c in ALGEBRA[:half]]),
        "algebra2": harness.program([(c.id, c.cpp) for c in ALGEBRA[half:]]),
        "atoms": harness.program([(c.id, c.cpp) for c in ATOMS], extra_headers=harness_atom_headers()),
    }
    exes = harness.build(sources, tc)
    out = {}
    for exe in exes.values():
        out.update(harness.run(exe))
    return out


def harness_atom_headers() -> str:
    from cute_cpp.cases import ATOM_HEADERS
    return ATOM_HEADERS


def _ours(value):
    return str(value), [int(x) for x in value.offsets()]


def _check(cpp, cid, value, text=""):
    assert cid in cpp, f"C++ printed nothing for {cid}"
    printed, table = cpp[cid]
    ours_p, ours_t = _ours(value)
    assert ours_p == harness.plain(printed), f"{text or cid}: structure differs\n  C++:  {printed}\n  ours: {ours_p}"
    assert ours_t == table, f"{text or cid}: function differs\n  C++:  {table[:32]}\n  ours: {ours_t[:32]}"


def test_sweep_is_large_enough():
    ops = {c.op for c in ALGEBRA}
    assert len(ALGEBRA) >= 300
    assert sum(c.op == "layout" for c in ALGEBRA) >= 200
    for op in ("coalesce", "filter", "composition", "complement", "right_inverse", "left_inverse",
               "logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product",
               "zipped_product", "tiled_product", "flat_product", "blocked_product", "raked_product", "make_layout"):
        assert op in ops, op


@pytest.mark.parametrize("case", ALGEBRA, ids=[c.id for c in ALGEBRA])
def test_algebra_matches_cute_cpp(cpp, case):
    _check(cpp, case.id, evaluate(case.text), case.text)


@pytest.mark.parametrize("case", ATOMS, ids=[c.id for c in ATOMS])
def test_atoms_match_cutlass_traits(cpp, case):
    _check(cpp, case.id, case.ours(), case.id)
