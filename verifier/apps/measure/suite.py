"""The conversion suite: pairs ``(A, B, shape, dtype)`` read from a TOML file (default: the packaged
``corpora/conversion_suite.toml``), their canonical layouts and their compile cases."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources

from layoutverify.adapters import adapter, parse_spec, split_spec
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout

DTYPE_BITS = {"fp8": 8, "f16": 16, "bf16": 16, "f32": 32}


@dataclass(frozen=True)
class Pair:
    """One conversion of the measurement suite: layouts ``a`` -> ``b`` over ``shape`` with its element
    type, named and grouped by family."""
    name: str
    family: str
    a: str
    b: str
    shape: tuple
    dtype: str

    @property
    def element_bytes(self) -> int:
        """Bytes of one element of the pair's element type."""
        return DTYPE_BITS[self.dtype] // 8

    def to_json(self) -> dict:
        """The pair as JSON."""
        return {"name": self.name, "family": self.family, "a": self.a, "b": self.b, "shape": list(self.shape),
                "dtype": self.dtype}


def lowering():
    """The Triton adapter's lowering model, reached through the adapter registry."""
    return adapter("triton").lowering


def load_suite(path: str | None = None) -> list[Pair]:
    if path is None:
        text = resources.files("layoutverify.corpora").joinpath("conversion_suite.toml").read_text()
    else:
        from layoutverify.core.files import read_text
        text = read_text(path, what="conversion suite")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise LayoutError(f"conversion suite: {e}") from None
    pairs = []
    for i, p in enumerate(data.get("pair", [])):
        try:
            pairs.append(Pair(name=str(p["name"]), family=str(p.get("family", "")), a=str(p["a"]), b=str(p["b"]),
                              shape=tuple(int(x) for x in p["shape"]), dtype=str(p.get("dtype", "f16"))))
        except (KeyError, TypeError, ValueError) as e:
            raise LayoutError(f"conversion suite pair {i}: {e}") from None
        if pairs[-1].dtype not in DTYPE_BITS:
            raise LayoutError(f"conversion suite pair {pairs[-1].name}: dtype {pairs[-1].dtype!r} is not one of "
                              f"{', '.join(DTYPE_BITS)}")
    return pairs


def layouts(pair: Pair, triton_version=None) -> tuple[Layout, Layout]:
    opts = {}
    out = []
    for spec in (pair.a, pair.b):
        fw, _ = split_spec(spec)
        if fw == "triton" and triton_version is not None:
            opts = {"triton_version": triton_version}
        else:
            opts = {}
        out.append(parse_spec(spec, shape=pair.shape, **opts))
    return out[0], out[1]


def compile_case(pair: Pair, case_id, *, arch: int = 90, observe: bool = True, triton_version=None,
                 native: bool = True) -> dict:
    """The compile worker's case for a pair: Triton's own encodings for ``triton:`` specs (when
    ``native``), ``DistributedLinearLayout`` bases for everything else."""
    low = lowering()
    a, b = layouts(pair, triton_version)
    specs = []
    for spec, lay in ((pair.a, a), (pair.b, b)):
        fw, text = split_spec(spec)
        specs.append(low.gluon_spec(lay, text if (fw == "triton" and native) else None, shape=pair.shape))
    warps = max(a.in_size("warp"), b.in_size("warp"))
    return {"id": case_id, "a": specs[0], "b": specs[1], "shape": list(pair.shape), "dtype": pair.dtype,
            "arch": arch, "num_warps": warps, "observe": observe}
