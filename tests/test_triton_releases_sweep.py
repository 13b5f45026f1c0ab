"""The ``triton_version`` option against every supported Triton release, not only the installed one.

For each of Triton 3.6, 3.7 and 3.8 (3.9, the installed release, is ``test_triton_sweep.py``), a
seeded sample of random encodings of every kind (``triton_oracle.sweep_cases``) is parsed by the
adapter with ``triton_version=<release>`` and compared, F2 basis by F2 basis, with what that
release's own ``GluonOpBuilder.to_linear_layout`` returns, asked in an interpreter holding it
(``triton_python``: a virtual environment made once by pip; in CI a missing release fails).
"""
from __future__ import annotations

import pytest

import triton_oracle as O

SEED = 20261125
PER_KIND = 200
#: Triton 3.6 and 3.7 abort on many random slices of #ttg.linear (see test_triton_sweep.py)
MAX_REJECT_FRACTION = {"3.6": 0.05, "3.7": 0.05, "3.8": 0.01}


@pytest.mark.parametrize("release", ["3.6", "3.7", "3.8"])
def test_ours_equals_each_release(triton_python, release):
    from layoutverify.adapters.triton import parse
    from layoutverify.adapters.triton.native import native_many

    cases = O.sweep_cases(SEED, PER_KIND)
    theirs = native_many([(text, shape) for _, text, shape in cases], python=triton_python(release))
    named = [t.name for t in theirs if not isinstance(t, Exception)]
    assert named and all(n.startswith(f"triton {release}.") for n in named), named[:3]
    tally = O.run_sweep(cases, parse, theirs=theirs, triton_version=release)
    assert not tally.mismatches, tally.summary()
    assert not tally.we_reject, tally.summary()
    rejected = sum(tally.triton_rejects.values()) + sum(tally.both_reject.values())
    assert rejected <= MAX_REJECT_FRACTION[release] * len(cases), tally.summary()
    assert {k for k, _, _ in tally.layouts} == set(O.GENERATORS)
