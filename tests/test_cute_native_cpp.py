"""``cute.native()`` for atoms: CUTLASS's compiled C++ traits (the atlas's native CuTe column), for
every atom of the catalogue, equal to our transcription's canonical form (where the C++ and our
catalogue disagreed, ``tests/test_cute_algebra_cpp.py`` would show the printed layouts)."""
import numpy as np
import pytest

from layoutverify.adapters import cute
from layoutverify.adapters.cute import cpp, cutlass_traits
from layoutverify.adapters.cute.atoms import copy_atoms, mma_atoms

if isinstance(cpp.toolchain(), str):
    pytest.skip(cpp.toolchain(), allow_module_level=True)

CASES = [f"{n}.{op}" for n, a in mma_atoms().items() for op in a.operands()] + \
        [f"{n}.{op}" for n in copy_atoms() for op in ("Src", "Dst")]


def test_native_atoms_come_from_cplusplus_and_equal_ours():
    printed = cutlass_traits.printed_traits()
    assert len(printed) >= len(CASES)
    for text in CASES:
        theirs, ours = cute.native(text), cute.parse(text)
        assert theirs.name.startswith("cute-cpp:")
        assert theirs.in_dims == ours.in_dims and theirs.out_dims == ours.out_dims, text
        assert np.array_equal(theirs.table(), ours.table()), text


def test_native_falls_back_to_pycute_for_plain_layouts():
    assert cute.native("(4,8):(8,1)").name.startswith("pycute:")
