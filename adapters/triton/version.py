"""Which Triton release's ``toLinearLayout`` the adapter reproduces (the ``triton_version`` option).

Triton 3.6 through 3.9 are supported. A few results differ between releases (the table is in
:mod:`layoutverify.adapters.triton`'s docstring); every converter reads the release from its options with
:func:`of` and branches with :func:`before` / :func:`at_least`.

The option accepts ``"3.6"`` .. ``"3.9"`` (also ``"3.6.0"``, ``"v3.7.1"``, the float ``3.8``).
Without it the installed Triton's major.minor is used when Triton is installed and within
3.6-3.9 (read from the package metadata, so Triton itself is not imported), else ``"3.9"``.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Mapping

from layoutverify.core.errors import LayoutError

SUPPORTED = ("3.6", "3.7", "3.8", "3.9")
NEWEST = SUPPORTED[-1]
OPTION = "triton_version"

_VERSION_RE = re.compile(r"^v?([0-9]+)\.([0-9]+)(?:\.[0-9]+)?(?:[.+-].*)?$")


def _major_minor(text: str) -> tuple[int, int] | None:
    m = _VERSION_RE.match(text.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


@lru_cache(maxsize=1)
def installed() -> str | None:
    """The installed Triton's ``major.minor`` (``None`` when Triton is not installed)."""
    try:
        from importlib import metadata
        mm = _major_minor(metadata.version("triton"))
    except Exception:  # noqa: BLE001  (not installed, or odd metadata)
        return None
    return f"{mm[0]}.{mm[1]}" if mm else None


def default() -> str:
    """The release used when no ``triton_version`` is given (see the module docstring)."""
    v = installed()
    return v if v in SUPPORTED else NEWEST


def normalize(value) -> str:
    """``value`` as one of :data:`SUPPORTED`; ``None`` means :func:`default`."""
    if value is None:
        return default()
    if value.__class__ is str and value in SUPPORTED:
        return value
    if isinstance(value, bool):
        raise LayoutError(f"triton_version must be one of {', '.join(SUPPORTED)}, got {value!r}")
    text = f"{value:.1f}" if isinstance(value, float) else str(value)
    mm = _major_minor(text)
    v = f"{mm[0]}.{mm[1]}" if mm else None
    if v not in SUPPORTED:
        raise LayoutError(f"triton_version must be one of {', '.join(SUPPORTED)} (Triton releases whose layouts "
                          f"this adapter reproduces), got {value!r}")
    return v


def of(options: Mapping) -> str:
    """The release the converters should follow, from their ``options``."""
    return normalize(options.get(OPTION))


@lru_cache(maxsize=64)
def _key(v: str) -> tuple[int, int]:
    a, b = v.split(".")
    return int(a), int(b)


def at_least(options: Mapping, v: str) -> bool:
    """Does the selected release include the changes of release ``v``?"""
    return _key(of(options)) >= _key(v)


def before(options: Mapping, v: str) -> bool:
    """Is the selected release older than ``v``?"""
    return not at_least(options, v)
