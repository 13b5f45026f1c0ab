"""Triton adapter: TTGIR layout text -> canonical :class:`~layoutverify.core.layout.Layout`.

``parse(text, shape=None, **options)`` accepts what Triton prints (see :mod:`.parser`): an
encoding attribute with a ``shape``, a whole ``tensor<64x64xf16, #ttg....>`` /
``!ttg.memdesc<...>`` type (shape from the type), alias definitions followed by a use, and the
older ``#triton_gpu.`` spellings. The result has Triton's hardware dims (``register, lane, warp,
block`` for distributed layouts; ``offset, block`` for shared ones) and logical dims ``dim0..``,
with exactly the bases of Triton's own ``toLinearLayout``.

Converters are registered per attribute kind in :data:`.attr.ENCODINGS` by :mod:`.linear`
(linear, blocked, slice, dot_op), :mod:`.nvidia` (nvidia_mma and its operands) and, when present,
``.amd`` and ``.shared``. ``native(text, shape=None, **options)`` asks the installed Triton (in a
subprocess) for its answer: see :mod:`.native`.

Options: ``warp_size`` (checked against the lanes the text implies); ``triton_version``
(``"3.6"``, ``"3.7"``, ``"3.8"`` or ``"3.9"``: whose ``toLinearLayout`` to reproduce; default: the
installed Triton's major.minor when it is one of those, else ``"3.9"``; see :mod:`.version`);
converters also receive ``element_type`` (``"f16"``, ...) when the text is a whole type.
``native()`` always answers with the installed Triton, whatever ``triton_version`` says.

Where the releases differ (found in Triton's history and checked against each release's wheel:
``GluonOpBuilder.to_linear_layout`` of Triton 3.6.0, 3.7.1, 3.8.0 and 3.9.0; upstream commits):

=====================================================================  ==========  ==========  ==========  ==========  =========================================
behaviour                                                              3.6         3.7         3.8         3.9         changed by (upstream PR, commit)
=====================================================================  ==========  ==========  ==========  ==========  =========================================
``blocked``: registers that only broadcast (tile larger than tensor)   zero bases  zero bases  zero bases  dropped     #11541 (2026-09-02)
``linear`` with a repeated non-zero basis                              accepted    rejected    rejected    rejected    #9215 9f8a10f1dbd0
``slice`` of a ``linear`` whose block bases are not each dim's top     aborts      aborts if   accepted    accepted    #8922 e22060c05c05, #9557 b2ffee698c4c
bits (Triton derives its CGA layout while checking the slice)                      slice of a
                                                                                   slice
``amd_wmma`` warp arrangement written as                               warpsPerCTA ctaLayout   ctaLayout   ctaLayout   #8946 ec7836e1f6a5
                                                                       tilesPerWarp
``amd_wmma`` register order: N repetitions before ``tilesPerWarp[M]``  yes         no          no          no          #8946 ec7836e1f6a5
``amd_wmma`` accumulator: M, N each 1 or >= the instruction's          required    required    free        free        #9825 1299a3b8ebb2
``amd_wmma`` v3 32x16 instructions                                     no          no          yes         yes         #10082 2c7ce4925d37
``amd_wmma`` v3 operand ``kWidth``                                     2, 8, 16    any         any         any         #8783 89a3c6e5115e
WMMA operand: K registers span the tensor's K before ctaLayout's       (own rule)  yes         no          no          #10082 2c7ce4925d37
WMMA operand CGA layout                                                acc.'s      acc.'s      K not split K not split #9694 863602691e86
WMMA: a repeated ctaLayout bit left past the tensor after the cut      aborts      aborts      zeroed      zeroed      #9221 bb75a8708037
``nvidia_mma`` operand tile                                            16 x 8kW    16 x 8kW    M(instr) x  M(instr) x  #10060 9e59ac0f0478
                                                                                               8kW (4kW    8kW (4kW
                                                                                               if M = 8)   if M = 8)
``nvmma_shared``, ``swizzlingByteWidth = 0``, ``transposed = true``    row-major   row-major   dim0 first  dim0 first  #10453 e4264c126ccb
=====================================================================  ==========  ==========  ==========  ==========  =========================================

Not differences of the layouts, but of the Gluon API the oracles use: Triton 3.6's
``to_linear_layout`` cannot convert shared layouts; its ``AMDWMMALayout`` takes
``warps_per_cta``/``tiles_per_warp``; ``PaddedSharedLayout`` has ``block_bases`` in elements (3.6),
``cga_layout`` read back in elements (3.7; #10392 a7512c943990 in 3.8). ``CGALayout = [...]``
(#8770 49b74727460f) is the syntax of all four releases; the older ``CTAsPerCGA / CTASplitNum /
CTAOrder`` is read too. The ``warpsPerCTA`` spelling of ``amd_wmma`` is also accepted for 3.7-3.9,
read as the ``ctaLayout`` #8946 translates it to (those releases cannot parse it themselves).
"""
from __future__ import annotations

import importlib
import re

from layoutverify.core.errors import LayoutError, UnsupportedError
from layoutverify.core.layout import Layout

from . import linear as _linear  # noqa: F401  (registers linear, blocked, slice, dot_op)
from . import lowering  # noqa: F401  (Triton's convert_layout choice: adapter("triton").lowering)
from . import memdesc as _memdesc
from . import version
from . import native as _native_module  # before `def native` below, which must win the name
from . import nvidia as _nvidia  # noqa: F401  (registers nvidia_mma and its dot operands)
from .attr import DOT_OPERAND_PARENTS, ENCODINGS, Attr
from .parser import SHARED_KINDS, Parsed, describe, parse_text

#: optional modules written beside this core; each registers its kinds on import
OPTIONAL_MODULES = ("amd", "shared", "tmem")

for _name in OPTIONAL_MODULES:
    try:
        importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as _e:  # absent in this build: their kinds stay unknown
        if _e.name != f"{__name__}.{_name}":
            raise

__all__ = ["parse", "native", "native_many", "convert", "parse_text", "Attr", "Parsed", "ENCODINGS",
           "DOT_OPERAND_PARENTS", "SHARED_KINDS"]


#: the beginnings of Triton text: an attribute, an alias definition or use, a tensor or memdesc type
SPEC_PREFIXES = ("#ttg.", "#triton_gpu.", "#ttng.", "tensor<", "!ttg.memdesc<", "!tt.memdesc<", "#blocked", "#mma",
                 "#shared", "#smem", "#linear", "#loc", "#slice", "#dot", "#tmem")
_ALIAS_DEF = re.compile(r"#[\w.$-]+\s*=\s*#(ttg|triton_gpu|ttng)\.")


def looks_like(text: str) -> bool:
    """Whether unprefixed spec text is Triton's (used by the registry to guess the framework)."""
    t = text.lstrip()
    return t.startswith(SPEC_PREFIXES) or bool(_ALIAS_DEF.match(t))


def resolve_shape(parsed: Parsed, shape) -> tuple[int, ...] | None:
    """The tensor shape: the ``shape`` argument or the type's; they must agree when both are given."""
    if shape is not None:
        try:
            shape = tuple(int(s) for s in shape)
        except (TypeError, ValueError):
            raise LayoutError(f"shape must be a sequence of integers, got {shape!r}") from None
        if not shape or any(s < 1 for s in shape):
            raise LayoutError(f"shape {list(shape)} must be non-empty with positive sizes")
        if parsed.shape is not None and parsed.shape != shape:
            raise LayoutError(f"--shape {'x'.join(map(str, shape))} disagrees with the type's shape "
                              f"{'x'.join(map(str, parsed.shape))}")
        return shape
    return parsed.shape


def convert(attr: Attr, shape=None, **options) -> Layout:
    """The canonical layout of a parsed encoding attribute over a tensor of ``shape``."""
    fn = ENCODINGS.get(attr.kind)
    if fn is None:
        known = ", ".join(sorted(ENCODINGS))
        if attr.kind in ("shared_memory", "tensor_memory"):
            raise LayoutError(f"{describe(attr)} is a memory space, not a layout")
        raise UnsupportedError(f"unknown or unsupported Triton layout {describe(attr)} (supported: {known})")
    return fn(attr, shape, **options)


def parse(text: str, shape=None, **options) -> Layout:
    """Parse Triton layout text into the canonical form (see the module docstring)."""
    parsed = parse_text(text)
    if parsed.attr is None:
        raise LayoutError("the tensor type has no encoding attribute; write tensor<SHAPExTYPE, #ttg....>")
    shape = resolve_shape(parsed, shape)
    options[version.OPTION] = version.normalize(options.get(version.OPTION))
    if parsed.element_type is not None:
        options.setdefault("element_type", parsed.element_type)
    if parsed.container == "memdesc" and (shape is None or tuple(shape) == tuple(parsed.shape or ())):
        return _memdesc.read(parsed, convert, **options)
    layout = convert(parsed.attr, shape, **options)
    return layout


def native(text: str, shape=None, **options) -> Layout:
    """Triton's own layout for ``text`` (installed Triton, in a subprocess); see :mod:`.native`."""
    return _native_module.native(text, shape=shape, **options)


def emitted_mechanism(src: Layout, dst: Layout, **options):
    """The mechanism Triton's ``convert_layout`` lowering emits for ``src -> dst``; see :mod:`.lowering`."""
    return lowering.emitted_mechanism(src, dst, **options)


def native_many(cases, **kw):
    """Batch form of :func:`native`, many texts in one Triton subprocess (the atlas asks through
    the registry, ``adapter("triton")``): a list of ``Layout`` or ``NativeError``; see :mod:`.native`."""
    return _native_module.native_many(cases, **kw)
