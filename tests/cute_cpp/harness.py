"""The CuTe C++ harness now lives in the package (:mod:`layoutverify.adapters.cute.cpp`), where the
atlas's native CuTe column uses it; the tests import it from here unchanged."""
from layoutverify.adapters.cute.cpp import (CXXFLAGS, PRELUDE, Toolchain, build, plain, program,  # noqa: F401
                                            run, toolchain)
