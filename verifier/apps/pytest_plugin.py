"""pytest plugin (entry point ``pytest11``): layout assertions for a compiler's own test suite.

Installed with layoutverify, it makes ``assert_layouts_equal`` available as a fixture, and it can
be imported directly::

    from layoutverify.apps.pytest_plugin import assert_layouts_equal

    def test_my_pass_keeps_the_layout():
        assert_layouts_equal("triton:#ttg.blocked<...>", my_compiler_layout, shape=(64, 64))

Arguments are :class:`~layoutverify.Layout` objects or ``FRAMEWORK:TEXT`` specs. On failure the
``AssertionError`` carries the verdict, the witness (a hardware location and the two elements)
and, for tiles of at most 1024 elements, both grids (``T{thread}:{register}`` per element).
``unknown`` (solver gave up) fails too: nothing is equal unproven. ``assert_layouts_equivalent``
is the same with ``allow_register_order=True``.
"""
from __future__ import annotations

import pytest


def _as_layout(x, shape, options):
    from layoutverify.core.layout import Layout
    if isinstance(x, Layout):
        return x
    from layoutverify.adapters import parse_spec
    return parse_spec(x, shape=shape, **options)


def assert_layouts_equal(a, b, *, shape=None, shape_b=None, allow_register_order: bool = False,
                         timeout_ms: int = 20_000, **options):
    """Assert that ``a`` and ``b`` are the same layout (or, with ``allow_register_order``, equal
    up to the numbering of registers). Returns the :class:`~layoutverify.core.compare.Result`."""
    from layoutverify.core.compare import compare
    la = _as_layout(a, shape, options)
    lb = _as_layout(b, shape_b or shape, options)
    res = compare(la, lb, timeout_ms=timeout_ms)
    ok = {"equal"} | ({"equal_up_to_register_order"} if allow_register_order else set())
    if res.verdict not in ok:
        msg = [f"layouts are not equal: {res.verdict} ({res.method}): {res.reason}"]
        if res.witness:
            msg.append(f"witness: {res.witness}")
        msg += _grids(la, lb)
        raise AssertionError("\n".join(msg))
    return res


def assert_layouts_equivalent(a, b, **kwargs):
    """:func:`assert_layouts_equal` that also accepts ``equal_up_to_register_order``."""
    kwargs.setdefault("allow_register_order", True)
    return assert_layouts_equal(a, b, **kwargs)


def _grids(la, lb, limit: int = 1024) -> list[str]:
    """Both layouts drawn as grids, when small enough to read (a courtesy: never raises)."""
    try:
        if la.out_size() > limit or lb.out_size() > limit:
            return []
        return ["a:", la.render(), "b:", lb.render()]
    except Exception:  # the drawing is a courtesy; the verdict is the assertion
        return []


@pytest.fixture(name="assert_layouts_equal")
def _assert_layouts_equal_fixture():
    return assert_layouts_equal


@pytest.fixture(name="assert_layouts_equivalent")
def _assert_layouts_equivalent_fixture():
    return assert_layouts_equivalent
