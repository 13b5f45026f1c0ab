"""layoutverify: prove GPU tensor layouts equal across frameworks, or find a counterexample.

Three layers (docs/ARCHITECTURE.md):

* :mod:`layoutverify.core` -- the canonical form, expressions, F2, SMT, comparison, conversion
  analysis, banks; it imports nothing above it;
* :mod:`layoutverify.adapters` -- one package per framework, text in, canonical layout out;
  they import only the core;
* :mod:`layoutverify.apps` -- the CLI, atlas, corpus checking, snapshot/diff, sweeps, GPU
  measurement, the pytest plugin and the service; they reach adapters through the registry.
"""
from layoutverify.core.errors import LayoutError, NotInvertibleError, ParseError, SizeLimitError, UnsupportedError
from layoutverify.core.layout import Layout, logical_dims

__all__ = ["Layout", "logical_dims", "LayoutError", "ParseError", "UnsupportedError",
           "NotInvertibleError", "SizeLimitError"]
__version__ = "0.3.0"
