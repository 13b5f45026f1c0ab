"""CuTe coordinate layouts (ScaledBasis strides ``1@0``) against compiled CuTe C++.

CuTe C++ prints ``make_identity_layout(shape)`` and layouts with ``E<i...>{}`` strides as
``(_4,_8):(_1@0,_1@1)``; the CuTe DSL prints the same without underscores. For every case below,
C++ prints the layout and its coordinate at every index; we parse C++'s printed text (and the DSL's
spelling of it, ``!cute.layout<"(4,8):(1@0,1@1)">``) and must give the same coordinate at every index,
both from the value and from the canonical layout (``mode0, mode1, ...`` -> coordinate elements).
"""
from __future__ import annotations

import random
import re

import pytest

from cute_cpp import harness
from layoutverify.adapters import cute
from layoutverify.adapters.cute.coord import CoordLayout
from layoutverify.adapters.cute.interp import evaluate_text
from layoutverify.core.errors import LayoutError

SHOW = r"""
template <class F> void show(const char* id, F const& f) {
  printf("%s|", id); print(f); printf("|");
  for (int i = 0; i < int(size(f)); ++i) { print(f(i)); printf(" "); }
  printf("\n");
}
"""


def _int(n, rng):
    return f"I({n})" if rng.random() < 0.6 else str(n)


def _shape(rng, depth=0):
    if depth < 1 and rng.random() < 0.3:
        return "S(" + ",".join(_shape(rng, depth + 1) for _ in range(rng.randint(1, 2))) + ")"
    return _int(rng.choice([1, 2, 3, 4, 5, 8]), rng)


def _cases():
    rng = random.Random(14)
    cases = []
    for i in range(40):                                  # identity layouts of nested, mixed shapes
        modes = [_shape(rng) for _ in range(rng.randint(1, 3))]
        cases.append((f"id{i}", f"make_identity_layout(S({','.join(modes)}))"))
    # explicit ScaledBasis strides: scales (static, dynamic), permuted modes, nested paths, a skipped mode
    explicit = [
        "L(S(I(4),I(2)), make_stride(E<1>{}, E<0>{}))",
        "L(S(I(4),I(2)), make_stride(I(2)*E<1>{}, E<0>{}))",
        "L(S(I(4),I(2)), make_stride(2*E<1>{}, E<0>{}))",
        "L(S(I(4),I(2)), make_stride(E<1,0>{}, E<0>{}))",
        "L(S(I(4),I(3)), make_stride(E<1,1>{}, E<1,0>{}))",
        "L(S(S(I(2),I(2)),I(3)), make_stride(make_stride(E<0>{}, I(3)*E<0>{}), E<1>{}))",
        "L(S(I(3),I(2),I(2)), make_stride(E<2>{}, E<0>{}, I(5)*E<2>{}))",
        "L(S(4,I(8)), make_stride(3*E<0>{}, E<1>{}))",
        "L(S(I(2),I(4)), make_stride(E<0>{}, I(0)*E<1>{}))",
    ]
    cases += [(f"ex{i}", e) for i, e in enumerate(explicit)]
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def cpp():
    tc = harness.toolchain()
    if isinstance(tc, str):
        pytest.skip(tc)
    body = "\n".join(f'  show("{cid}", {expr});' for cid, expr in CASES)
    src = harness.PRELUDE + SHOW + "int main() {\n" + body + "\n  return 0;\n}\n"
    exe = harness.build({"coord": src}, tc)["coord"]
    import subprocess
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[:500]
    out = {}
    for line in res.stdout.splitlines():
        cid, printed, values = line.split("|")
        out[cid] = (printed, values.split())
    return out


def _cpp_text(v) -> str:
    """A coordinate as CuTe C++ prints it: ``(0,(1))``."""
    if isinstance(v, tuple):
        return "(" + ",".join(_cpp_text(e) for e in v) + ")"
    return str(v)


def _flat(v):
    return [x for e in v for x in _flat(e)] if isinstance(v, tuple) else [v]


@pytest.mark.parametrize("cid", [c[0] for c in CASES])
def test_coordinate_layout_matches_cpp(cpp, cid):
    printed, values = cpp[cid]
    values = [v.replace("_", "") for v in values]       # values compared as numbers (C++ keeps _0 static)
    assert "@" in printed, printed
    for text in (printed, '!cute.layout<"' + printed.replace("_", "") + '">'):   # C++'s and the DSL's print
        value = evaluate_text(cute.dsl_layout_text(text))
        assert isinstance(value, CoordLayout)
        assert value.size() == len(values)
        for i, v in enumerate(values):
            basis = re.fullmatch(r"(-?\d+)((?:@\d+)+)", v)
            if basis:       # C++ returns the ScaledBasis itself when one stride makes the value
                path = tuple(int(p) for p in reversed(basis.group(2)[1:].split("@")))
                assert value.paths == [path] and value.values(i) == {path: int(basis.group(1))}, (text, i, v)
            else:
                assert _cpp_text(value(i)) == v, (text, i, _cpp_text(value(i)), v)
        # the canonical layout: modes (colex within each top-level mode) -> coordinate elements
        lay = cute.parse(text)
        table = lay.table()
        hw = lay.hardware_indices()
        sizes = [s for _, s in lay.in_dims]
        for h, row in zip(hw, table):
            idx, w = 0, 1
            for k, s in enumerate(sizes):
                idx += int(h[k]) * w
                w *= s
            vals = value.values(idx)
            assert [int(x) for x in row] == [vals[p] for p in value.paths]
            cpp_leaves = [int(values[idx].split("@")[0])] if "@" in values[idx] else \
                list(map(int, re.findall(r"-?\d+", values[idx])))
            assert sorted(cpp_leaves) == sorted(_flat(value(idx)))


def test_cases_cover_the_forms(cpp):
    printed = " ".join(p for p, _ in cpp.values())
    assert "_1@0" in printed and "@0@1" in printed and re.search(r"[(,]\d@", printed)   # static, nested, dynamic
    assert re.search(r"\(\d+,", printed)                                                # a dynamic shape


@pytest.mark.parametrize("text,match", [
    ("(4,8):(1@0,1)", "mixes integers"),
    ("(4,8):(1@0,1@0@0)", "a part of it"),
    ("1@0", "only a stride"),
    ("(4,8):(?@0,1@1)", "dynamic integer"),
    ("(4,8):(1@,1@1)", "@"),
    ("coalesce((4,8):(1@0,1@1))", "expected a layout"),
    ("(4,8):(-1@0,1@1)", "below 0"),
    ("(4,8):(999999999999999999999999@0,1@1)", "too large"),
    ("(4,8):(1@0@1@2@3@4@5@6@7@8,1@1)", "too large"),
])
def test_bad_coordinate_layouts_are_refused(text, match):
    with pytest.raises(LayoutError, match=match):
        cute.parse(text)
    with pytest.raises(LayoutError, match="coordinate layout"):
        cute.parse("(4,8):(1@0,1@1)", as_="memory")
