"""The scan's findings: codes, severities, whether a compiler change can act on them, and wording.

Every finding is ``{"code", "severity", "fixable", "message", "where"}``. ``severity`` is
``error`` (the module contradicts itself), ``warning`` (the op costs more than it has to) or
``info`` (worth knowing, nothing to fix). ``fixable`` says whether a compiler change can remove
it; JUnit reports (and only they) turn fixable warnings and errors into test failures, so a CI
job fails on what its compiler engineers can act on and on nothing else. docs/guides/findings.md
describes each code and what to do about it.
"""
from __future__ import annotations

#: code -> (severity, fixable by a compiler change)
FINDINGS = {
    "warp_count_mismatch": ("error", True),
    "shared_where_cheaper_suffices": ("warning", True),
    "no_op_conversion": ("warning", True),
    "bank_conflicts": ("warning", True),
    "global_access_not_vectorised": ("warning", True),
    "required_no_op_conversion": ("info", False),
    "replicated_registers": ("info", False),
}
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}

#: the words for a mechanism in a finding, as the compiled code does it
DOES = {"intra_cta": "shared memory", "cross_cta": "distributed shared memory", "intra_warp": "warp shuffles"}
SUFFICES = {
    "rename": "renaming registers suffices (no instruction: every lane keeps its elements in the same registers)",
    "permute": "a byte permute within each thread suffices (prmt: elements move between 32-bit registers, "
               "the same way in every lane)",
    "select": "a lane-dependent register select suffices (each lane picks among its own registers; no data "
              "leaves the thread)",
    "intra_warp": "warp shuffles suffice (every element stays within its warp)",
    "intra_cta": "shared memory suffices (every element stays within its CTA)",
}


def finding(code: str, message: str, **extra) -> dict:
    severity, fixable = FINDINGS[code]
    out = {"code": code, "severity": severity, "fixable": fixable, "message": message}
    out.update(extra)
    return out


def is_failure(f: dict) -> bool:
    """What a JUnit report counts as a failure: a fixable error or warning."""
    return bool(f.get("fixable")) and f.get("severity") in ("error", "warning")


def cheaper_message(triton_mechanism: str, rule: str, need: str) -> str:
    """``shared_where_cheaper_suffices``: what Triton does, why, and what suffices (``need``:
    ``rename``, ``permute``, ``select``, ``intra_warp`` or ``intra_cta``)."""
    return f"Triton uses {DOES[triton_mechanism]} ({rule}); {SUFFICES[need]}"


def sort_key(f: dict):
    return (SEVERITY_ORDER.get(f.get("severity"), 3), f.get("where") or "", f.get("code"), f.get("key") or "")
