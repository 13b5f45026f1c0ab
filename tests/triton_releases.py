"""The Triton-release environments of the tests: :mod:`layoutverify.apps.validation.releases`
(the one mechanism; ``validate --triton-version`` uses it too), narrowed to the releases whose
layouts the adapter reproduces (3.6 - 3.9), which the release tests check one by one.

When an install fails (no network, say), the tests of that release skip with pip's message,
except under CI (``CI`` set to ``true``/``1``/``yes``), where they fail: CI must check every
release (``tests/conftest.py``).
"""
from __future__ import annotations

from layoutverify.apps.validation.releases import (  # noqa: F401  (re-exported for the tests)
    INSTALL_TIMEOUT_S, Interpreters, Unavailable, cache_root, downloads_allowed, in_ci, install, major_minor,
    triton_version_of,
    venv_python,
)
from layoutverify.apps.validation.releases import SUPPORTED as RELEASES
from layoutverify.apps.validation.releases import WHEELS as _ALL_WHEELS

#: supported major.minor -> the wheel installed for it
WHEELS = {r: _ALL_WHEELS[r] for r in RELEASES}
