"""The target a module was compiled for, and what the scan's models take from it.

A target is Triton's ``ttg.target`` module attribute (``cuda:90``, ``hip:gfx942``) or the cache
metadata's ``{"backend", "arch", "warp_size"}``. From it:

* ``lanes``: threads of a warp (NVIDIA 32) or wavefront (CDNA 64; the module's
  ``ttg.threads-per-warp`` wins where present);
* ``bank_arch``: the shared-memory bank model of :mod:`layoutverify.core.banks`: ``nvidia`` (32
  banks), ``cdna3`` (gfx94x: 32 banks), ``cdna4`` (gfx950: 64 banks); other AMD targets are not
  modelled (``None``: bank findings are not made for them);
* ``measured``: whether the cost model's constants were measured on this target's SM (the H100,
  ``sm_90``; ``layoutverify/core/cost_h100.json``). Elsewhere the model's time is the H100's
  constants applied to the target's instruction counts, and says so.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

#: AMD architectures -> bank model (core/banks.py BANK_MODELS)
AMD_BANK_ARCH = {"gfx940": "cdna3", "gfx941": "cdna3", "gfx942": "cdna3", "gfx950": "cdna4"}
MEASURED_ARCHS = ("sm_90",)


@dataclass(frozen=True)
class Target:
    """The compile target of a module: its text (``cuda:90``), vendor, architecture, lanes per
    warp (wavefront) and bank model."""
    text: str | None          # as the module or metadata spells it, e.g. "cuda:90"
    vendor: str | None        # "nvidia", "amd" or None (unknown)
    arch: str | None          # "sm_90", "gfx942", ...
    lanes: int
    bank_arch: str | None

    @property
    def measured(self) -> bool:
        """Whether the cost model's constants were fitted on this architecture (``sm_90``)."""
        return self.arch in MEASURED_ARCHS

    @property
    def banks(self) -> int:
        """The number of 4-byte shared-memory banks (32 without a bank model)."""
        from layoutverify.core.banks import bank_model
        return bank_model(self.bank_arch) if self.bank_arch else 32

    def time_basis(self) -> str:
        """What the cost model's time means on this target (one line)."""
        if self.measured:
            return "H100 (sm_90): the cost model's constants were fitted on this SM"
        where = self.text or "an unknown target"
        return f"not measured on {where}: the H100's fitted constants applied to its instruction counts"


def target_of(text: str | None, threads_per_warp: int | None = None) -> Target:
    """The :class:`Target` of ``cuda:90`` / ``hip:gfx950`` / ``None`` (unknown: NVIDIA-like
    defaults, no claims about banks beyond NVIDIA's 32)."""
    vendor = arch = None
    if text:
        m = re.fullmatch(r"\s*(cuda|hip|rocm)\s*:\s*([\w.]+)\s*", text)
        if m:
            vendor = "nvidia" if m.group(1) == "cuda" else "amd"
            arch = f"sm_{m.group(2)}" if vendor == "nvidia" and m.group(2).isdigit() else m.group(2)
    if vendor == "amd":
        lanes = threads_per_warp or 64
        bank_arch = AMD_BANK_ARCH.get(arch or "")
    else:
        lanes = threads_per_warp or 32
        bank_arch = "nvidia"
    return Target(text, vendor, arch, lanes, bank_arch)


def metadata_target(meta: dict) -> str | None:
    """``backend:arch`` from a cache metadata's ``target`` object, or None."""
    t = meta.get("target") if isinstance(meta, dict) else None
    if isinstance(t, dict) and "backend" in t:
        return f"{t['backend']}:{t.get('arch')}"
    return None
