"""The parse cache of the adapter registry, and the immutability that makes it safe."""
from __future__ import annotations

import pytest

from layoutverify import adapters
from layoutverify.core.errors import LayoutError

BLOCKED = "triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"


def test_same_text_shape_and_options_give_one_object():
    a = adapters.parse_spec(BLOCKED, shape=(64, 64))
    assert adapters.parse_spec(BLOCKED, shape=[64, 64]) is a
    assert adapters.parse_spec(BLOCKED, shape=(128, 64)) is not a
    assert adapters.parse_spec(BLOCKED, shape=(64, 64), triton_version="3.6") is not a


def test_cached_layouts_are_immutable():
    a = adapters.parse_spec(BLOCKED, shape=(64, 64))
    _ = a.exprs  # built lazily once, then fixed
    for attr in ("in_dims", "out_dims", "map", "exprs", "normal_form"):
        with pytest.raises(AttributeError, match="immutable"):
            setattr(a, attr, ())


def test_file_specs_are_keyed_by_content(tmp_path):
    f = tmp_path / "l.txt"
    f.write_text("(4,8):(8,1)")
    a = adapters.parse_spec(f"cute:@{f}")
    f.write_text("(4,8):(1,4)")
    b = adapters.parse_spec(f"cute:@{f}")
    assert a.table().tolist() != b.table().tolist()


def test_errors_are_not_cached():
    for _ in range(2):
        with pytest.raises(LayoutError):
            adapters.parse_spec("triton:#ttg.blocked<{sizePerThread = [1, 4]}>", shape=(64, 64))


def test_large_layouts_are_cached_in_a_bounded_lru_of_their_own(monkeypatch):
    big = "cute:(2048,1024):(1024,1)"  # 2^21 locations: above PARSE_CACHE_MAX_LOCATIONS
    adapters.clear_parse_cache()
    a = adapters.parse_spec(big)
    assert a.in_size() > adapters.PARSE_CACHE_MAX_LOCATIONS
    assert adapters.parse_spec(big) is a
    monkeypatch.setattr(adapters, "PARSE_CACHE_LARGE_SIZE", 2)
    others = [adapters.parse_spec(t) for t in ("cute:(2048,1024):(1,2048)", "cute:(1024,2048):(1,1024)")]
    assert adapters.parse_spec("cute:(1024,2048):(1,1024)") is others[-1]
    assert adapters.parse_spec(big) is not a  # the oldest large entry went (from every cache)
    assert not any(v is a for v in adapters._SPEC_HITS.values())
    small = adapters.parse_spec(BLOCKED, shape=(64, 64))
    assert adapters.parse_spec(BLOCKED, shape=(64, 64)) is small  # small layouts keep their own LRU


@pytest.mark.parametrize("spec_a,spec_b,shape", [
    ("cute:(12,20):(20,1)", "cute:(12,20):(1,12)", None),
    ("tilus:local(2,3).spatial(4,8)", "tilus:spatial(4,8).local(2,3)", None),
    (BLOCKED, BLOCKED.replace("[4, 8]", "[8, 4]"), (64, 64)),
])
@pytest.mark.parametrize("method", ["auto", "radix", "table", "z3"])
def test_layouts_are_freed_once_no_cache_holds_them(spec_a, spec_b, shape, method):
    # every per-layout memo (normal forms, digit forms, F2 data, solver terms) is keyed weakly by
    # the layout: none may keep it alive (a digit form holding its layout once leaked them all)
    import gc
    import weakref

    from layoutverify.core.compare import compare
    from layoutverify.core.errors import UnsupportedError
    adapters.clear_parse_cache()
    a, b = adapters.parse_spec(spec_a, shape=shape), adapters.parse_spec(spec_b, shape=shape)
    try:
        res = compare(a, b, method=method)
        _ = res.witness, res.reason
    except UnsupportedError:  # (radix on a pair without digit forms)
        pass
    refs = [weakref.ref(a), weakref.ref(b)]
    del a, b
    res = None
    adapters.clear_parse_cache()
    gc.collect()
    assert [r() for r in refs] == [None, None]


def test_repeated_specs_hit_without_reparsing_and_files_are_never_keyed_by_name(tmp_path, monkeypatch):
    adapters.clear_parse_cache()
    a = adapters.parse_spec(BLOCKED, shape=(64, 64))
    calls = []
    real = adapters.split_spec
    monkeypatch.setattr(adapters, "split_spec", lambda s: calls.append(s) or real(s))
    assert adapters.parse_spec(BLOCKED, shape=(64, 64)) is a and calls == []  # the spec as written
    assert adapters.parse_spec(BLOCKED, shape=[64, 64]) is a and calls  # a list shape: the keyed path
    assert adapters.parse_spec(BLOCKED, shape=(64, 64), triton_version="3.6") is not a  # options: keyed
    f = tmp_path / "l.txt"
    f.write_text("(4,8):(8,1)")
    first = adapters.parse_spec(f"cute:@{f}")
    f.write_text("(4,8):(1,4)")
    assert adapters.parse_spec(f"cute:@{f}").table().tolist() != first.table().tolist()
    assert not any("@" in spec for spec, _ in adapters._SPEC_HITS)
    adapters.clear_parse_cache()
    assert adapters.parse_spec(BLOCKED, shape=(64, 64)) is not a
