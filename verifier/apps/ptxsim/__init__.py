"""An interpreter for the PTX that Triton compiles to: layout conversions, and whole kernels.

It executes a kernel's PTX for every thread of one CTA (threads in groups by program counter, so
branches may diverge and reconverge) over *symbolic bytes*: a
byte is either a concrete value (0..255), a tagged data byte (byte ``k`` of logical element
``e``) or undefined. Data bytes may be moved (``mov``, ``prmt``, ``selp``, ``cvt`` truncation /
zero extension, byte-aligned shifts and masks, ``ld``/``st.shared``, ``ldmatrix``/``stmatrix``,
``shfl.sync``) but never computed with: arithmetic on a data byte stops the run, naming the
instruction, as does any instruction outside the supported subset. So a successful run proves,
for this CTA, where every data byte went.

Computing with data needs a *data algebra* (``Machine.terms``, ``data_apply``, ``dot``): the
kernel validator (:mod:`layoutverify.apps.kernels`) plugs in its terms; without one, data may only
move, as the conversion check requires.

Modules, one job each: :mod:`.parser` (PTX text -> instructions), :mod:`.state` (registers,
memories, the symbolic byte encoding), :mod:`.semantics` (integer instructions, moves,
conversions), :mod:`.floats` (float instructions, bit-exact on concrete operands), :mod:`.machine`
(the interpreter loop, barriers, races, traffic counters), :mod:`.asynccopy` (``cp.async`` groups),
:mod:`.proxy` (reads of copies in flight), :mod:`.matrix` (``mma.sync`` fragments), :mod:`.wgmma`
(descriptors, swizzles, asynchrony), :mod:`.tma` (tensor maps, bulk copies, mbarriers,
``elect.sync``), :mod:`.check` (run a conversion kernel with tagged input and compare every
observed register with layout ``B``).
"""
from .check import ConversionRun, check_conversion, run_conversion
from .machine import Machine, SimError, Traffic
from .state import Hazard
from .parser import Instruction, Program, parse_ptx

__all__ = ["parse_ptx", "Program", "Instruction", "Machine", "SimError", "Hazard", "Traffic", "check_conversion",
           "run_conversion", "ConversionRun"]
