"""A cost model of layout conversions: ``predicted_ns`` from conversion facts (pure arithmetic).

Facts (:class:`ConversionFacts`) are per CTA and per conversion (or any layout op): shared-memory
wavefronts (bank-conflict aware: one wavefront moves at most 128 bytes), global-memory L1
wavefronts (128-byte lines a warp's access touches), warp-level shuffles, barriers,
warp-level ALU instructions (data moves such as ``PRMT``/``MOV``/``SEL``, address arithmetic and
the consumer's operation on every register word) and warp-level local-memory accesses (register
spills). Where they come from:

* exactly, from the compiled loop: the wavefronts, shuffles and barriers from executing the
  conversion's PTX (``layoutverify.apps.ptxsim``), the ALU instructions and local accesses from the
  loop's SASS (``layoutverify.apps.measure.sass``; :func:`facts_from_traffic` with ``loop=``);
* roughly, without a compiler, from the two layouts and a mechanism (:func:`estimate_facts`): the
  ALU instructions are then the data moves plus one consumer operation per 32 elements, and no
  spills.

The model is SM time in cycles,
``max(c_wavefront * wavefronts, c_alu * alu) + c_shuffle * shuffles + c_barrier * barriers
+ c_local * local + c_0`` (shared memory and the ALUs overlap; shuffles, barriers and spills
serialise), divided by the SM clock; it predicts the time one CTA's conversion takes of one SM
(CTAs overlap, so throughput costs add up). The constants are data (``cost_h100.json`` beside this
module): fitted by ``benchmarks/fit_cost_model.py`` on measured conversions, with the GPU, Triton
release, date and the held-out error recorded. The H200 has the H100's SM (132 SMs, same clocks),
so it uses the H100's cycle constants with its own clock; that is stated in the data, not
measured. Spills that overflow the L1 (hundreds of spilled registers per thread) cost far more
than ``c_local``: there the prediction is a lower bound.

Global memory is not in the fit (the measured loops touch shared memory only). Its L1 wavefronts
join the shared-memory wavefronts in the first term at ``c_wavefront`` each: on the H100 the L1
and shared memory are one SRAM with one 128-byte-per-clock data path, which global accesses
(coalesced into 128-byte lines) share. This is derived, not measured, and it prices issue and L1
traffic only, not DRAM bandwidth, which is a property of the whole kernel.

:func:`op_cycles` prices one op of a kernel on its own: the model with the op's own register
instructions (``data_moves``) as the ALU work and without the loop's constant, so ops add up.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from importlib import resources

FEATURES = ("wavefronts", "shuffles", "barriers", "alu", "local", "one")
CONSTANTS = ("wavefront", "alu", "shuffle", "barrier", "local", "constant")


@dataclass
class ConversionFacts:
    warps: int
    elements: int               # elements of the tile
    element_bytes: int
    shared_store_bytes: int = 0
    shared_load_bytes: int = 0
    store_wavefronts: int = 0
    load_wavefronts: int = 0
    shuffles: int = 0           # warp-level shfl.sync
    barriers: int = 0
    data_moves: int = 0         # warp-level register instructions moving data
    alu_instructions: float | None = None  # warp-level ALU instructions of the loop (SASS), if known
    local_accesses: float = 0   # warp-level local-memory accesses (spills) of the loop (SASS)
    global_wavefronts: float = 0  # L1 wavefronts of global loads and stores (128-byte lines per warp access)

    def features(self) -> dict:
        alu = (self.alu_instructions if self.alu_instructions is not None
               else self.data_moves + self.elements / 32)
        return {"wavefronts": self.store_wavefronts + self.load_wavefronts + self.global_wavefronts,
                "shuffles": self.shuffles,
                "barriers": self.barriers, "alu": alu, "local": self.local_accesses, "one": 1.0}

    def to_json(self) -> dict:
        return asdict(self)


def facts_from_traffic(traffic: dict, shape, element_bytes: int, warps: int,
                       loop: dict | None = None) -> ConversionFacts:
    """Facts from the interpreter's traffic counters (``data_moves`` there counts instructions
    per CTA; every warp executes each, so it is scaled by the warps) and, where given, the loop's
    SASS counts per warp and iteration (``loop``: ``alu``, ``local``; scaled by the warps)."""
    n = 1
    for s in shape:
        n *= int(s)
    return ConversionFacts(warps=warps, elements=n, element_bytes=element_bytes,
                           shared_store_bytes=traffic.get("shared_store_bytes", 0),
                           shared_load_bytes=traffic.get("shared_load_bytes", 0),
                           store_wavefronts=traffic.get("store_wavefronts", 0),
                           load_wavefronts=traffic.get("load_wavefronts", 0),
                           shuffles=traffic.get("shuffles", 0), barriers=traffic.get("barriers", 0),
                           data_moves=traffic.get("data_moves", 0) * warps,
                           alu_instructions=None if loop is None else float(loop["alu"]) * warps,
                           local_accesses=0.0 if loop is None else float(loop.get("local", 0)) * warps)


def estimate_facts(a, b, mechanism: str, element_bits: int = 16) -> ConversionFacts:
    """Facts estimated from the layouts alone (no compiler): a round trip through shared memory
    stores every location of ``a`` once and loads every location of ``b``, conflict-free
    (``store/load bytes / 128`` wavefronts) with one barrier pair; shuffles move every 32-bit
    register word of ``b`` once; register permutes one move per word."""
    eb = max(1, element_bits // 8)
    warps = max(a.in_size("warp"), b.in_size("warp"))
    threads = 32 * warps
    n = b.out_size()
    loc_a = a.in_size("register") * threads
    loc_b = b.in_size("register") * threads
    words_b = max(1, b.in_size("register") * eb // 4)
    f = ConversionFacts(warps=warps, elements=n, element_bytes=eb)
    if mechanism in ("intra_cta", "cross_cta"):
        f.shared_store_bytes, f.shared_load_bytes = loc_a * eb, loc_b * eb
        f.store_wavefronts = -(-f.shared_store_bytes // 128)
        f.load_wavefronts = -(-f.shared_load_bytes // 128)
        f.barriers = 2
        f.data_moves = words_b * warps
    elif mechanism == "intra_warp":
        f.shuffles = words_b * warps
        f.data_moves = 2 * words_b * warps
    elif mechanism == "register_permute":
        f.data_moves = words_b * warps
    return f


_CACHE: dict = {}


def constants(gpu: str = "H100") -> dict:
    """The fitted constants for ``gpu`` (``H100`` / ``H200``, or a device name containing one)."""
    key = "H200" if "H200" in gpu.upper() else "H100"
    if key not in _CACHE:
        data = json.loads(resources.files("layoutverify.core").joinpath("cost_h100.json").read_text())
        c = dict(data)
        if key == "H200":
            c.update(data.get("h200", {}))
        _CACHE[key] = c
    return _CACHE[key]


def predicted_ns(facts: ConversionFacts, gpu: str = "H100", table: dict | None = None) -> float:
    """Predicted SM time (ns) of one CTA's conversion on ``gpu``."""
    c = table or constants(gpu)
    return cycles(facts, c["cycles"]) / (c["clock_mhz"] / 1000.0)


def cycles(facts: ConversionFacts, k: dict) -> float:
    """SM cycles of one CTA's conversion under the constants ``k`` (see the module docstring)."""
    x = facts.features()
    return (max(k["wavefront"] * x["wavefronts"], k["alu"] * x["alu"])
            + k["shuffle"] * x["shuffles"] + k["barrier"] * x["barriers"] + k.get("local", 0.0) * x["local"]
            + k["constant"])


def op_cycles(facts: ConversionFacts, gpu: str = "H100", table: dict | None = None) -> float:
    """SM cycles of one CTA's op on its own: :func:`cycles` with the op's ``data_moves`` as its
    ALU work (no consumer) and without the constant term."""
    c = table or constants(gpu)
    own = replace(facts, alu_instructions=float(facts.data_moves), local_accesses=facts.local_accesses)
    return cycles(own, c["cycles"]) - c["cycles"]["constant"]


def predicted_conversion_ns(facts: ConversionFacts, gpu: str = "H100", table: dict | None = None) -> float:
    """The conversion's share of :func:`predicted_ns`: minus the same loop without a conversion
    (its consumer, one operation per element, stays), as ``measure`` reports ``marginal_ns``."""
    bare = ConversionFacts(warps=facts.warps, elements=facts.elements, element_bytes=facts.element_bytes)
    return predicted_ns(facts, gpu, table) - predicted_ns(bare, gpu, table)
