"""``layoutverify list``: every name it lists is accepted by the adapter it names, and nothing the
adapters accept from their catalogues is left out.

The oracle is the adapters' own acceptance: each listed spec is parsed with
:func:`layoutverify.adapters.parse_spec`; for CuTe MMA atoms, the operands *not* listed must be
the ones the adapter refuses (GMMA operands read from shared memory); for Triton, every encoding
the adapter registers is listed, and each listed spelling reaches its converter (a parameterless
``#ttg.KIND<{}>`` parses or fails for a missing parameter, never as an unknown encoding, while a
made-up kind fails as unknown).
"""
from __future__ import annotations

import json

import pytest

from layoutverify.adapters import adapter, parse_shape, parse_spec
from layoutverify.apps.cli import main
from layoutverify.apps.commands import list as L
from layoutverify.core.errors import LayoutError, UnsupportedError


def _run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def _specs_with_shapes(item):
    shapes = item.get("shapes") or [item.get("shape")] * len(item["specs"])
    return zip(item["specs"], shapes)


@pytest.mark.parametrize("what", L.CATEGORIES)
def test_every_listed_spec_parses(what):
    items = L.items(what)
    assert items
    n = 0
    for item in items:
        for spec, shape in _specs_with_shapes(item):
            lay = parse_spec(spec, shape=parse_shape(shape))
            assert lay.in_size() > 0, spec
            n += 1
    assert n >= len([i for i in items if i["specs"]])


def test_atoms_are_the_cute_catalogue_and_unlisted_operands_are_refused():
    cute = adapter("cute")
    items = L.items("atoms")
    by_kind = {k: {i["name"]: i for i in items if i["kind"] == k} for k in ("mma", "copy", "smem")}
    assert set(by_kind["mma"]) == set(cute.mma_atoms())
    assert set(by_kind["copy"]) == set(cute.copy_atoms())
    assert {n.removeprefix("GMMA::") for n in by_kind["smem"]} == set(cute.atoms.smem_atom_names())
    refused = 0
    for name, item in by_kind["mma"].items():
        listed = {s.rsplit(".", 1)[1] for s in item["specs"]}
        assert "C" in listed
        for op in {"A", "B", "C"} - listed:
            with pytest.raises(UnsupportedError, match="shared memory"):
                parse_spec(f"cute:{name}.{op}")
            refused += 1
    assert refused > 0          # the SM90 GMMA SS/RS atoms
    assert len(by_kind["mma"]) > 100 and len(by_kind["copy"]) >= 12


def test_fragments_are_the_ptx_and_amd_catalogues():
    items = L.items("fragments")
    for fw in ("ptx", "amd"):
        listed = [i["name"] for i in items if i["framework"] == fw]
        assert listed == adapter(fw).list_fragments() and len(listed) > 100
    assert "mma.m16n8k16.f16.A" in {i["name"] for i in items}


def test_encodings_cover_every_registered_triton_encoding():
    triton = adapter("triton")
    items = L.items("encodings")
    spelled = {i["name"] for i in items} | {a for i in items for a in i.get("aliases", [])}
    assert spelled == {L.spelling(k) for k in triton.ENCODINGS}
    for name in spelled:
        try:
            parse_spec(f"triton:{name}<{{}}>", shape=(64, 64))   # some need no parameters
        except LayoutError as e:
            assert "unknown or unsupported Triton layout" not in str(e), name
    with pytest.raises(UnsupportedError, match="unknown or unsupported Triton layout"):
        parse_spec("triton:#ttg.no_such_encoding<{}>", shape=(64, 64))
    examples = [i for i in items if i["specs"]]
    assert len(examples) >= 13


def test_frameworks_are_the_registry():
    from layoutverify.adapters import FRAMEWORKS
    items = L.items("frameworks")
    assert [i["name"] for i in items] == list(FRAMEWORKS)
    assert all(i["specs"] for i in items)


@pytest.mark.parametrize("what", L.CATEGORIES)
def test_cli_text_and_json(capsys, what):
    rc, out, _ = _run(capsys, "list", what)
    assert rc == 0 and out.rstrip().endswith(what)
    rc, out, _ = _run(capsys, "list", what, "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["schema"] == "layoutverify/1" and doc["kind"] == "list" and doc["what"] == what
    assert doc["count"] == len(doc["items"]) == len(L.items(what))


def test_cli_filter_and_bad_category(capsys):
    rc, out, _ = _run(capsys, "list", "fragments", "m16n8k16", "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["count"] > 0 and all("m16n8k16" in i["name"] for i in doc["items"])
    rc, _, err = _run(capsys, "list", "widgets")
    assert rc == 2 and "invalid choice" in err
    rc, out, _ = _run(capsys, "list", "widgets", "--json")
    doc = json.loads(out)
    assert rc == 2 and doc["kind"] == "error" and doc["error"]["code"] == "usage"
