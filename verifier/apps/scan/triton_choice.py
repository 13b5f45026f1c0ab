"""The mechanism Triton's lowering uses for a ``ttg.convert_layout`` the scan found.

The model of Triton's choice lives in one place, the Triton adapter
(:mod:`layoutverify.adapters.triton.lowering`, reached through the registry as
``adapter("triton").emitted_mechanism``): Triton 3.6 - 3.9 rules on ``dst.invertAndCompose(src)``,
checked against the PTX each release compiles (tests/test_lowering.py) and against Triton's own
``LinearLayout.invert_and_compose`` (tests/test_scan_triton_choice.py). This module only adapts it
to the scan: layouts the lowering does not cover (memory layouts, layouts that are not F2-linear,
a source that lacks an element) get no prediction instead of an error.

Answers use the conversion analysis's words: ``no_op``, ``register_permute``, ``intra_warp``
(shuffles), ``intra_cta`` (shared memory), ``cross_cta``; ``None`` when not predicted.
"""
from __future__ import annotations

from dataclasses import dataclass

from layoutverify.adapters import adapter
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Layout


@dataclass
class TritonChoice:
    """Triton's mechanism for one conversion (``None``: not predicted) and the rule that decided."""
    mechanism: str | None  # our words, see the module docstring
    rule: str               # the rule that decided

    def to_json(self) -> dict:
        """The choice as a JSON object."""
        return {"mechanism": self.mechanism, "rule": self.rule}


def triton_choice(src: Layout, dst: Layout, triton_version: str | None = None) -> TritonChoice:
    """Triton's mechanism for converting ``src`` to ``dst``; ``triton_version`` (``"3.8"``, ...;
    default the installed release's rules) selects the release."""
    if src.kind != "register" or dst.kind != "register":
        return TritonChoice(None, "not a register layout")
    if src.f2_bases() is None or dst.f2_bases() is None:
        return TritonChoice(None, "not F2-linear")
    try:
        emitted = adapter("triton").emitted_mechanism(src, dst, triton_version=triton_version)
    except LayoutError as e:
        return TritonChoice(None, str(e))
    return TritonChoice(emitted.mechanism, emitted.rule)
