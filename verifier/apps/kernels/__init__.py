"""Whole-kernel validation: a compiled Triton kernel's PTX against its own TTIR, element by element.

Modules, one job each: :mod:`.terms` (symbolic data terms and the identities applied when they
are built), :mod:`.ttir` (TTIR text -> ops), :mod:`.reference` (the TTIR executed for one program
id), :mod:`.memory` (global memory shared by both levels), :mod:`.machine` (the PTX interpreter
with symbolic data), :mod:`.match` (term equality, concrete witnesses, rendering), :mod:`.folder`
(kernels in a Triton cache), :mod:`.validate` (running both and comparing every stored byte). The
guide is ``docs/guides/validate-kernels.md``.
"""
from .validate import KernelOutcome, Launch, validate_files, validate_kernel, validate_kernel_folder

__all__ = ["KernelOutcome", "Launch", "validate_kernel", "validate_files", "validate_kernel_folder"]
