"""CPU validation of the suite: compile each pair's conversion kernel with a Triton release, read
the mechanism off the PTX, predict it with Triton's rules, execute the PTX on the interpreter.

:func:`compile_suite` caches the compiled kernels (``cache_dir``, keyed by the Triton release of
the compiling interpreter, the target and the case), since compiling 70 kernels takes a minute.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field

from layoutverify.core.conversion import analyze

from .suite import Pair, compile_case, layouts, lowering


def triton_release(python: str | None = None) -> str:
    """``major.minor.patch`` of the Triton that ``python`` imports (default: this interpreter's)."""
    if python is None:
        from importlib import metadata
        return metadata.version("triton")
    out = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('triton'))"],
                         capture_output=True, text=True, timeout=120)
    return out.stdout.strip()


def compile_suite(pairs: list[Pair], *, arch: int = 90, python: str | None = None, cache_dir: str | None = None,
                  observe: bool = True, workers: int = 2) -> dict[int, dict]:
    """``{index: worker answer}`` for every pair (see :mod:`layoutverify.adapters.triton.compile_worker`),
    compiled by ``python``'s Triton (3.6 - 3.9) and cached (:func:`layoutverify.apps.validation.compile.compile_cases`)."""
    from layoutverify.apps.validation.compile import compile_cases
    release = triton_release(python)
    tv = ".".join(release.split(".")[:2])
    cases = [compile_case(p, i, arch=arch, observe=observe, triton_version=tv) for i, p in enumerate(pairs)]
    return compile_cases(cases, python=python, version=release, cache_dir=cache_dir, workers=workers)


@dataclass
class PairCheck:
    """The CPU check of one suite pair: the cheapest mechanism, the one Triton's rules predict
    (with its PTX class and rule), the PTX class read off the compiled kernel, and the
    interpreter's run."""
    pair: Pair
    cheapest: str = ""
    emitted: str = ""
    emitted_class: str = ""
    rule: str = ""
    ptx_class: str = ""
    sim_ok: bool | None = None
    sim: dict = field(default_factory=dict)
    error: str | None = None

    @property
    def prediction_ok(self) -> bool:
        """Whether the predicted PTX class is the one the compiled PTX shows."""
        return self.emitted_class == self.ptx_class

    def to_json(self) -> dict:
        """The check as a JSON object."""
        return {"pair": self.pair.to_json(), "cheapest": self.cheapest, "emitted": self.emitted,
                "emitted_class": self.emitted_class, "rule": self.rule, "ptx_class": self.ptx_class,
                "prediction_ok": self.prediction_ok, "sim_ok": self.sim_ok, "sim": self.sim, "error": self.error}


def check_pairs(pairs: list[Pair], compiled: dict[int, dict], *, simulate: bool = True,
                triton_version: str | None = None) -> list[PairCheck]:
    from layoutverify.apps.ptxsim import check_conversion
    low = lowering()
    out = []
    for i, p in enumerate(pairs):
        pc = PairCheck(pair=p)
        r = compiled.get(i, {})
        tv = triton_version or ".".join(r.get("triton", "").split(".")[:2]) or None
        try:
            a, b = layouts(p, tv)
            rep = analyze(a, b)
            e = low.emitted_mechanism(a, b, triton_version=tv, equal=rep.mechanism == "no_op")
            pc.cheapest, pc.emitted, pc.emitted_class, pc.rule = rep.mechanism, e.mechanism, e.ptx_class, e.rule
        except Exception as ex:  # noqa: BLE001 - reported per pair
            pc.error = f"{type(ex).__name__}: {ex}"
            out.append(pc)
            continue
        if "ptx" not in r:
            pc.error = r.get("error", "not compiled")
            out.append(pc)
            continue
        pc.ptx_class = low.ptx_class(r["ptx"])
        if simulate:
            run = check_conversion(r["ptx"], b, p.element_bytes)
            pc.sim_ok = run.ok
            pc.sim = run.to_json()
        out.append(pc)
    return out
