"""A small interpreter for the PTX that Triton's layout conversions compile to.

It executes a kernel's PTX for every thread of one CTA, in lock step, over *symbolic bytes*: a
byte is either a concrete value (0..255), a tagged data byte (byte ``k`` of logical element
``e``) or undefined. Data bytes may be moved (``mov``, ``prmt``, ``selp``, ``cvt`` truncation /
zero extension, byte-aligned shifts and masks, ``ld``/``st.shared``, ``ldmatrix``/``stmatrix``,
``shfl.sync``) but never computed with: arithmetic on a data byte stops the run, naming the
instruction, as does any instruction outside the supported subset. So a successful run proves,
for this CTA, where every data byte went.

Modules, one job each: :mod:`.parser` (PTX text -> instructions), :mod:`.state` (registers,
memories, the symbolic byte encoding), :mod:`.semantics` (what each instruction does),
:mod:`.machine` (the interpreter loop, barriers, races, traffic counters), :mod:`.check` (run a
conversion kernel with tagged input and compare every observed register with layout ``B``).
"""
from .check import ConversionRun, check_conversion, run_conversion
from .machine import Machine, SimError, Traffic
from .state import Hazard
from .parser import Instruction, Program, parse_ptx

__all__ = ["parse_ptx", "Program", "Instruction", "Machine", "SimError", "Hazard", "Traffic", "check_conversion",
           "run_conversion", "ConversionRun"]
