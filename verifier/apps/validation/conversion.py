"""Translation validation of one layout conversion ``A -> B`` as a Triton release compiles it.

The conversion kernel (:mod:`.compile`) loads the row-major tile in ``A``, converts it to ``B``,
observes every register of ``B`` and stores the tile. Its PTX is executed on the interpreter
(:mod:`layoutverify.apps.ptxsim`) for every thread of the CTA with every element tagged by its
logical index. The conversion is

* ``correct`` when every hardware location ``(register, lane, warp)`` of ``B``, replicas
  included, holds exactly the element ``B`` puts there, and the stored tile is the input;
* ``wrong`` otherwise, or when the interpreter finds a race on shared memory; the first wrong
  location (threads in order ``lane + 32 * warp``, then registers) is reported with the element
  it should hold, the element it received, and where ``A`` held each of them;
* ``unsupported`` when the interpreter cannot execute the PTX (an instruction outside its
  subset), or Triton cannot compile the kernel: nothing is claimed then.

``B`` and ``A`` are read with the release's semantics (``triton_version``) for 3.6 - 3.9; for an
older release with the oldest semantics the adapter reproduces (3.6), which is what the layout
means today: a release whose own reading of an encoding differs would be reported wrong.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from layoutverify.core.errors import LayoutError, UnsupportedError

from .releases import SUPPORTED, WHEELS

#: element type -> bytes (the kernel moves bytes; the type only picks the width)
DTYPES = {"fp8": 1, "i8": 1, "f16": 2, "bf16": 2, "i16": 2, "f32": 4, "i32": 4}
ARCHS = (80, 90)


@dataclass(frozen=True)
class Conversion:
    """One conversion to validate: layout specs ``FRAMEWORK:TEXT``, the tile, the element type,
    the target ``sm_<arch>`` and the Triton release (``X.Y``) that compiles it."""
    a: str
    b: str
    shape: tuple
    dtype: str = "f16"
    arch: int = 90
    release: str = "3.9"

    @property
    def semantics(self) -> str:
        """The Triton release whose semantics read ``A`` and ``B`` (see the module docstring)."""
        return self.release if self.release in SUPPORTED else SUPPORTED[0]

    @property
    def element_bytes(self) -> int:
        """Bytes of one element of ``dtype``."""
        return DTYPES[self.dtype]

    def key(self) -> tuple:
        """The fields that identify the conversion: specs, shape, element type, target and release."""
        return (self.a, self.b, tuple(self.shape), self.dtype, self.arch, self.release)

    def to_json(self) -> dict:
        """The conversion as a JSON object (``arch`` as ``sm_<arch>``, with the semantics release)."""
        return {"a": self.a, "b": self.b, "shape": list(self.shape), "dtype": self.dtype, "arch": f"sm_{self.arch}",
                "triton_release": self.release, "semantics": self.semantics}


@dataclass
class Validation:
    """The verdict on one conversion (``correct``, ``wrong``, ``unsupported``) with the Triton that
    compiled it, the reason, the locations of ``B`` checked and the wrong ones, the output check, the
    PTX class and the traffic."""
    conversion: Conversion
    verdict: str                      # correct | wrong | unsupported
    triton: str | None = None         # the full version that compiled the kernel
    reason: str | None = None         # why wrong (a race) or unsupported
    locations: int = 0                # hardware locations of B checked (threads x registers)
    n_wrong: int = 0
    first_wrong: dict | None = None
    wrong: list = field(default_factory=list)
    output_ok: bool | None = None     # None: not checked (the kernel does not store B)
    register_order: bool = True       # False: each thread's elements checked in any register order
    output_errors: list = field(default_factory=list)
    ptx_class: str | None = None      # registers | shuffle | shared (what the PTX does)
    traffic: dict | None = None

    @property
    def exit_code(self) -> int:
        """The verdict's exit code: 0 correct, 1 wrong, 2 otherwise (unsupported)."""
        return {"correct": 0, "wrong": 1}.get(self.verdict, 2)

    def to_json(self) -> dict:
        """The validation as a JSON object."""
        return {"conversion": self.conversion.to_json(), "verdict": self.verdict, "triton": self.triton,
                "reason": self.reason, "locations": self.locations, "n_wrong": self.n_wrong,
                "first_wrong": self.first_wrong, "wrong": self.wrong, "output_ok": self.output_ok,
                "output_errors": self.output_errors, "register_order": self.register_order,
                "ptx_class": self.ptx_class, "traffic": self.traffic}


def layouts(c: Conversion):
    """``(A, B)`` read with ``c.semantics``."""
    from layoutverify.apps.measure.suite import Pair
    from layoutverify.apps.measure.suite import layouts as pair_layouts
    return pair_layouts(Pair("validate", "", c.a, c.b, tuple(c.shape), "f16"), c.semantics)


def compile_case(c: Conversion, case_id) -> dict:
    """The compile worker's case (Gluon for 3.6 - 3.9, TTGIR text for older releases)."""
    from layoutverify.apps.measure.suite import Pair
    from layoutverify.apps.measure.suite import compile_case as gluon_case

    from .compile import uses_gluon
    from .ttgir import conversion_kernel, stores_in
    pair = Pair("validate", "", c.a, c.b, tuple(c.shape), "f16")
    case = gluon_case(pair, case_id, arch=c.arch, triton_version=c.semantics)
    case["dtype"] = c.dtype
    if uses_gluon(c.release):
        return case
    rel = tuple(int(x) for x in c.release.split("."))
    store = stores_in(case["b"], rel)
    text = conversion_kernel(case["a"], case["b"], c.shape, c.dtype, num_warps=case["num_warps"], arch=c.arch,
                             release=rel, store=store)
    return {"id": case_id, "ttgir": text, "arch": c.arch, "stores": store}


def check(c: Conversion, answer: dict, max_report: int = 10, compiled_case: dict | None = None) -> Validation:
    """The verdict on one compiled kernel (``answer``: the compile worker's, for ``compiled_case``)."""
    from layoutverify.adapters import adapter
    from layoutverify.apps.ptxsim import check_conversion
    if "ptx" not in answer:
        return Validation(c, "unsupported", triton=answer.get("triton"),
                          reason=f"Triton {answer.get('triton') or WHEELS[c.release]} did not compile the kernel: "
                                 f"{answer.get('error', 'no answer')}")
    a, b = layouts(c)
    stores = compiled_case.get("stores", True) if compiled_case else True
    # a release before 3.3 cannot store B when it is a dot operand, and numbers the registers of
    # one by another convention than today's linear layouts: each thread must hold B's elements,
    # in any register order
    run = check_conversion(answer["ptx"], b, c.element_bytes, max_report=max_report, check_output=stores,
                           up_to_register_order=not stores)
    v = Validation(c, "correct" if run.ok else "wrong", triton=answer.get("triton"), locations=run.locations,
                   n_wrong=run.n_mismatches, output_ok=run.output_ok if stores and not run.error else None,
                   output_errors=run.output_errors, ptx_class=adapter("triton").lowering.ptx_class(answer["ptx"]),
                   traffic=run.traffic.to_json() if run.traffic else None, register_order=stores)
    if run.error:
        v.reason = run.error
        v.verdict = "wrong" if " race: " in run.error else "unsupported"
        return v
    v.wrong = [_located(m, a, b) for m in run.mismatches]
    v.first_wrong = v.wrong[0] if v.wrong else None
    if v.first_wrong is None and run.output_errors:
        v.reason = "every register of B is right, but the stored tile is not the input"
    return v


def _located(mismatch: dict, a, b) -> dict:
    """A mismatch of :func:`check_conversion` with the elements' places in ``A``."""
    loc = dict(mismatch["location"], block=0)
    expected = mismatch["expected"]
    got = mismatch["got"]
    received = got if got and all(isinstance(x, int) for x in got) else None
    return {"b_location": loc, "expected": expected, "expected_held_in_a_at": _held_at(a, expected),
            "received": received if received is not None else got,
            "received_held_in_a_at": _held_at(a, received) if received is not None else None}


def _held_at(layout, coords) -> dict | None:
    """The first hardware location (register, lane, warp, block order) where ``layout`` holds the
    element at logical ``coords``."""
    if coords is None:
        return None
    flat = int(np.ravel_multi_index(tuple(int(x) for x in coords), layout.out_sizes))
    tab = layout.flat_table()
    hits = np.nonzero(tab == flat)[0]
    if not hits.size:
        return None
    row = layout.hardware_indices()[int(hits[0])]
    return {n: int(row[k]) for k, n in enumerate(layout.in_names)}


def validate_many(conversions: list[Conversion], *, interpreters=None, cache_dir: str | None = None,
                  workers: int = 2, progress=None) -> list[Validation]:
    """Validate every conversion (compiled per release in worker subprocesses, in order of the
    input). A conversion whose layouts cannot be read or written for its release is
    ``unsupported`` with the reason; a release whose environment cannot be had raises
    :class:`~.releases.Unavailable`."""
    from layoutverify.apps.measure.validate import triton_release

    from .compile import compile_cases, uses_gluon
    from .releases import Interpreters
    interpreters = interpreters or Interpreters()
    out: list = [None] * len(conversions)
    by_release: dict = {}
    for i, c in enumerate(conversions):
        try:
            case = compile_case(c, i)
        except LayoutError as e:
            out[i] = Validation(c, "unsupported", reason=str(e))
            continue
        by_release.setdefault(c.release, []).append(case)
    for release in sorted(by_release, key=lambda r: tuple(int(x) for x in r.split("."))):
        python = interpreters.resolve(release)
        version = triton_release(python)
        answers = compile_cases(by_release[release], python=python, version=version, cache_dir=cache_dir,
                                gluon=uses_gluon(release), workers=workers)
        for case in by_release[release]:
            i = case["id"]
            try:
                out[i] = check(conversions[i], answers.get(i, {"error": "no answer"}), compiled_case=case)
            except LayoutError as e:
                out[i] = Validation(conversions[i], "unsupported", triton=version, reason=str(e))
            if progress is not None:
                progress(conversions[i], out[i])
    return out


def validate(c: Conversion, **kw) -> Validation:
    return validate_many([c], **kw)[0]


def check_input(c: Conversion) -> None:
    """Raise :class:`LayoutError` (bad input, one line) for what no kernel can be built for."""
    if c.dtype not in DTYPES:
        raise LayoutError(f"--dtype must be one of {', '.join(DTYPES)}, got {c.dtype!r}")
    if c.arch not in ARCHS:
        raise LayoutError(f"--arch must be sm_80 or sm_90, got sm_{c.arch}")
    if c.release not in WHEELS:
        raise LayoutError(f"--triton-version must be one of {', '.join(WHEELS)}, got {c.release!r}")
    if c.dtype == "fp8" and c.arch < 89:
        raise UnsupportedError("fp8 (e4m3) needs sm_89 or later; use --dtype i8 for 8-bit elements on sm_80")
    a, b = layouts(c)
    if a.out_sizes != b.out_sizes:
        raise LayoutError(f"A covers a {'x'.join(map(str, a.out_sizes))} tile and B a "
                          f"{'x'.join(map(str, b.out_sizes))} one: a conversion keeps the tensor")
    for name, lay in (("A", a), ("B", b)):
        if "register" not in lay.in_names:
            raise UnsupportedError(f"{name} is a memory layout; convert_layout is between register layouts")
        if lay.in_size("block") != 1:
            raise UnsupportedError(f"{name} spans several CTAs; the conversion kernel runs one")
        if lay.in_size("lane") != 32:
            raise UnsupportedError(f"{name} has {lay.in_size('lane')}-lane warps; the kernel is NVIDIA's 32-lane")
