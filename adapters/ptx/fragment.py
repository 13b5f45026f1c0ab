"""The fragment type lives in the core (:mod:`layoutverify.core.fragment`), since the PTX and AMD
adapters both state ISA fragments with it and adapters import only the core."""
from layoutverify.core.fragment import Coords, Fragment, bit  # noqa: F401
