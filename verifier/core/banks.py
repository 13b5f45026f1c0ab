"""Shared-memory bank conflicts of a warp storing or loading a register layout through a memory layout.

The hardware model (NVIDIA, every architecture since Maxwell; documented here because every
number this module prints follows from it):

* Shared memory is 32 **banks** of 4-byte **words**; byte address ``a`` lies in word ``a // 4`` and
  bank ``(a // 4) % 32``. One **wavefront** serves at most one word per bank (128 bytes).
* One warp-wide ``ld.shared``/``st.shared`` instruction in which every thread accesses ``w`` bytes
  (``w`` = vector width x element bytes, naturally aligned, ``w`` in 1, 2, 4, 8, 16) is split into
  **phases** of ``128 / max(w, 4)`` consecutive lanes: the whole warp for ``w <= 4``, half-warps for
  8-byte (``.v2.b32``) and quarter-warps for 16-byte (``.v4.b32``) accesses. A phase needs as many
  wavefronts as the largest number of *distinct* words it touches in one bank: threads touching the
  same word are served together (broadcast on loads; one write wins on stores), so they never
  conflict. Phases do not share wavefronts.
* An instruction is conflict-free when every phase needs one wavefront (its **ideal**);
  ``conflict_ways`` is the worst phase's wavefront count, so a 32-way conflict reads 32 and a
  conflict-free access reads 1. Triton's ``bank_conflicts`` (``bankConflictsMemDesc``) reports the
  *excess* accesses per wavefront, which is ``conflict_ways - 1`` in this model.

How a register layout is accessed (what Triton's ``local_store``/``local_load`` lowering does):

* Thread ``(lane, warp, block)`` accesses each element it holds once: registers holding an
  element the same thread already holds in an earlier register are skipped (broadcast registers).
* The element's address is ``offset * element_bytes`` where ``offset`` is the location of that
  element in the memory layout (hardware dims ``offset[, block]`` -> logical; the block of the
  memory layout is the thread's block when the memory layout has one; the smallest offset when an
  element has several). A ``padded_shared`` layout (its ``padding`` pairs ``(interval, pad)``)
  places dense offset ``i`` at slot ``i + sum_k (i // interval_k) * pad_k``; its vectors stay
  within one interval.
* **Vector width** ``v``: the largest power of two with ``v * element_bytes <= 16`` such that every
  thread's offsets split into aligned runs ``[k*v, k*v + v)`` that the thread holds completely;
  each run is one vector access. Registers are grouped by offsets, not by register number, so a
  layout whose register bits are permuted against the memory layout still vectorizes (Triton
  permutes register bases the same way in ``largestVectorisation``).
* **Instruction** ``i`` of a warp is every thread's ``i``-th run, runs ordered by their lowest
  register index. Warps and blocks are independent; reports take the worst warp.

The computation is an exact table evaluation (vectorized numpy, no enumeration loops in Python)
and works for any layout, F2-linear or not (F2 layouts are tabulated from their bases).

**AMD LDS** (``arch="cdna3"`` / ``"cdna4"``, :data:`BANK_MODELS`). The LDS of a CDNA compute unit
is banked in 4-byte dwords, bank ``(a // 4) % banks``: 32 banks on CDNA3 (MI300, gfx942; AMD
Instinct MI300 "CDNA3" Instruction Set Architecture, chapter "Local Data Share": 32 banks of
dwords, conflicts checked per group of lanes issued together) and 64 banks on CDNA4 (MI350,
gfx950; Triton's ``AMDMfmaEncodingAttr::composeSharedLayoutForOperand`` picks its swizzle for
``numBanks = isGFX950 ? 64 : 32``, and ROCm's CK-Tile page "Understanding AMD GPU LDS and Bank
Conflicts", rocm.docs.amd.com/projects/composable_kernel/en/latest/conceptual/ck_tile/hardware/
lds_bank_conflicts.html: "organized into 32 or 64 banks depending on the hardware architecture,
each bank has a 4 bytes width"; gfx950 also grew the LDS to 160 KiB). A wave64 ``ds_read``/``ds_write`` is served in **phases** of consecutive lanes
that together move one row of all banks: ``banks * 4 / max(w, 4)`` lanes for ``w`` bytes per lane,
so on CDNA3 ``ds_*_b32`` (and narrower) go by half-waves (lanes 0-31, 32-63: the rule of AMD's
programming guides), ``ds_*_b64`` by 16 lanes and ``ds_*_b128`` by 8 lanes (CK-Tile's page lists
the 8 phases ``lane0~lane7 .. lane56~lane63`` of ``ds_write_b128``); CDNA4 doubles each group. Inside
a phase the rule is NVIDIA's: the largest number of distinct dwords in one bank. Reads are
modelled like writes (CK-Tile documents ``ds_read_b128`` phases the same way for contiguous
lanes; the finer lane interleavings some ``ds_read_b128`` variants use are not modelled).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from layoutverify.core.errors import LayoutError, SizeLimitError
from layoutverify.core.layout import Layout, table_from_bases

NUM_BANKS = 32
WORD_BYTES = 4
WAVEFRONT_BYTES = NUM_BANKS * WORD_BYTES  # 128
#: banks of 4-byte words per architecture family (see the module docstring for the sources)
BANK_MODELS = {"nvidia": 32, "cdna3": 32, "cdna4": 64}
ARCH_ALIASES = {"sm": "nvidia", "cuda": "nvidia", "gfx942": "cdna3", "gfx950": "cdna4", "mi300": "cdna3",
                "mi350": "cdna4", "amd": "cdna3"}


def bank_model(arch: str) -> int:
    """The number of 4-byte banks of ``arch`` (``nvidia``, ``cdna3``/``gfx942``, ``cdna4``/``gfx950``)."""
    key = ARCH_ALIASES.get(str(arch).lower(), str(arch).lower())
    if key not in BANK_MODELS:
        raise LayoutError(f"unknown architecture {arch!r} for the bank model; choose one of "
                          f"{', '.join(sorted(set(BANK_MODELS) | set(ARCH_ALIASES)))}")
    return BANK_MODELS[key]
MAX_VECTOR_BYTES = 16
VECTOR_RULES = ("uniform", "simt")
DISTRIBUTED_DIMS = ("register", "lane", "warp", "block")
#: Largest hardware domain the table analyses accept (per layout).
MAX_LOCATIONS = 1 << 22


# ---------------------------------------------------------------------------------------------
# Table helpers shared with layoutverify.core.conversion
def distributed_columns(layout: Layout, what: str = "layout") -> dict[str, np.ndarray]:
    """``register, lane, warp, block`` index of every hardware location of a distributed layout
    (flat order, missing dims are 0) plus ``element``: its flat row-major logical index."""
    if not isinstance(layout, Layout):
        raise LayoutError(f"{what} must be a Layout, got {type(layout).__name__}")
    extra = [n for n in layout.in_names if n not in DISTRIBUTED_DIMS]
    if extra:
        raise LayoutError(f"{what} has hardware dim(s) {extra}; a distributed (register) layout has only "
                          f"{', '.join(DISTRIBUTED_DIMS)}")
    n = layout.in_size()
    if n > MAX_LOCATIONS:
        raise SizeLimitError(f"{what} has {n} hardware locations; the table analysis handles at most {MAX_LOCATIONS}")
    hw = layout.hardware_indices()
    cols = {d: np.zeros(n, dtype=np.int64) for d in DISTRIBUTED_DIMS}
    for i, name in enumerate(layout.in_names):
        cols[name] = hw[:, i]
    cols["element"] = flat_elements(layout)
    return cols


def flat_elements(layout: Layout) -> np.ndarray:
    """Flat row-major element of every hardware location (flat hardware order). F2 layouts are
    tabulated from their bases by XOR doubling, much faster than evaluating the expressions."""
    bases = layout.f2_bases()
    if bases is None:
        layout.check_in_range()
        return layout.flat_table()
    t = table_from_bases(layout.in_dims, bases, len(layout.out_dims))
    flat = np.zeros(t.shape[0], dtype=np.int64)
    for d, s in enumerate(layout.out_sizes):
        flat = flat * s + t[:, d]
    return flat


def dense_ids(*cols: np.ndarray) -> np.ndarray:
    """A dense id (0..k-1) for every distinct tuple of the given equal-length non-negative integer
    columns, ordered like the tuples (lexicographic, first column most significant)."""
    if not cols:
        raise ValueError("dense_ids needs at least one column")
    key = np.zeros(len(cols[0]), dtype=np.int64)
    radix = 1
    for c in cols:
        c = np.asarray(c, dtype=np.int64)
        span = int(c.max(initial=0)) + 1
        if span > len(c) + 1:  # sparse values: compress them first
            _, c = np.unique(c, return_inverse=True)
            c = c.reshape(-1)
            span = int(c.max(initial=0)) + 1
        if radix * span >= (1 << 62):  # re-densify before the mixed-radix key could overflow
            _, key = np.unique(key, return_inverse=True)
            key = key.reshape(-1)
            radix = int(key.max(initial=0)) + 1
        key = key * span + c
        radix *= span
    if radix <= 4 * len(key) + 16:  # small key space: dense ids by counting, no sort
        present = np.zeros(radix, dtype=np.int64)
        present[key] = 1
        return (np.cumsum(present) - 1)[key]
    _, ids = np.unique(key, return_inverse=True)
    return ids.reshape(-1)


def first_per_group(ids: np.ndarray, order_key: np.ndarray) -> np.ndarray:
    """Boolean mask selecting, in each group ``ids``, the row with the smallest ``order_key``."""
    order = np.lexsort((order_key, ids))
    sid = ids[order]
    first = np.ones(len(sid), dtype=bool)
    first[1:] = sid[1:] != sid[:-1]
    mask = np.zeros(len(ids), dtype=bool)
    mask[order[first]] = True
    return mask


# ---------------------------------------------------------------------------------------------
def element_bytes(element_bits: int) -> int:
    if isinstance(element_bits, bool) or not isinstance(element_bits, (int, np.integer)) or \
            element_bits not in (8, 16, 32, 64):
        raise LayoutError(f"element width must be 8, 16, 32 or 64 bits, got {element_bits!r}")
    return int(element_bits) // 8


def shared_offsets(shared: Layout, n_elements: int, n_blocks: int) -> np.ndarray:
    """``offset_of[block, element]``: the (smallest) offset of each element in a memory layout,
    -1 where that block's memory does not hold the element. Shape ``(blocks, n_elements)``."""
    if not isinstance(shared, Layout):
        raise LayoutError(f"the shared layout must be a Layout, got {type(shared).__name__}")
    if "offset" not in shared.in_names or any(n not in ("offset", "block") for n in shared.in_names):
        raise LayoutError(f"the shared layout must have hardware dims offset[, block], got {list(shared.in_names)}")
    if shared.in_size() > MAX_LOCATIONS:
        raise SizeLimitError(f"the shared layout has {shared.in_size()} locations; at most {MAX_LOCATIONS} are supported")
    sblocks = shared.in_size("block")
    if sblocks not in (1, n_blocks):
        raise LayoutError(f"the shared layout has {sblocks} blocks but the register layout {n_blocks}")
    hw = shared.hardware_indices()
    off = hw[:, shared.in_names.index("offset")]
    blk = hw[:, shared.in_names.index("block")] if "block" in shared.in_names else np.zeros_like(off)
    elem = flat_elements(shared)
    table = np.full((sblocks, n_elements), -1, dtype=np.int64)
    order = np.lexsort((-off, blk * n_elements + elem))  # within each (block, element): largest offset first
    # fancy assignment applies in order, so the last write (the smallest offset) stays
    table[blk[order], elem[order]] = off[order]
    if sblocks == 1 and n_blocks > 1:
        table = np.broadcast_to(table, (n_blocks, n_elements))
    return table


@dataclass
class BankReport:
    """Bank behaviour of one warp-wide access pattern (see the module docstring for the model)."""

    element_bits: int
    vector: int                    # elements per vector access
    access_bytes: int              # bytes per thread per instruction
    lanes_per_phase: int
    instructions: int              # per warp (the largest count over warps)
    wavefronts: int                # worst instruction, all phases
    ideal_wavefronts: int          # that instruction's conflict-free count
    conflict_ways: int             # worst phase of any instruction: max distinct words in one bank
    total_wavefronts: int          # sum over the worst warp's instructions
    total_ideal: int
    witness: dict | None = field(default=None)  # the worst phase: which lanes hit which words of one bank
    arch: str = "nvidia"           # the bank model (BANK_MODELS)
    banks: int = NUM_BANKS

    @property
    def conflict_free(self) -> bool:
        return self.conflict_ways <= 1

    @property
    def triton_bank_conflicts(self) -> int:
        """The number Triton's ``gl.bank_conflicts`` reports: excess accesses per wavefront."""
        return self.conflict_ways - 1

    def to_json(self) -> dict:
        return {"element_bits": self.element_bits, "vector": self.vector, "access_bytes": self.access_bytes,
                "lanes_per_phase": self.lanes_per_phase, "instructions": self.instructions,
                "wavefronts": self.wavefronts, "ideal_wavefronts": self.ideal_wavefronts,
                "conflict_ways": self.conflict_ways, "conflict_free": self.conflict_free,
                "triton_bank_conflicts": self.triton_bank_conflicts,
                "total_wavefronts": self.total_wavefronts, "total_ideal": self.total_ideal,
                "witness": self.witness, "arch": self.arch, "banks": self.banks}

    def summary(self) -> str:
        head = (f"{self.instructions} instr/warp of {self.access_bytes} B/thread (vector {self.vector}); "
                f"worst {self.wavefronts} wavefronts (ideal {self.ideal_wavefronts}), "
                f"{self.conflict_ways}-way; total {self.total_wavefronts} (ideal {self.total_ideal})")
        if self.witness and self.conflict_ways > 1:
            w = self.witness
            head += (f"; e.g. warp {w['warp']} block {w['block']} instruction {w['instruction']}: lanes "
                     f"{w['lanes']} hit {len(w['words'])} words of bank {w['bank']}")
        return head


def vector_runs(thread: np.ndarray, register: np.ndarray, offset: np.ndarray, v: int,
                rule: str = "uniform") -> np.ndarray | None:
    """For vector width ``v``: the run id (one per thread and aligned block ``offset // v``) of every
    access, or ``None`` when ``v`` does not vectorize. One instruction executes on every lane with
    the same registers, so a vector is legal (rule ``"simt"``) only when (a) each register's slot in
    its vector, ``offset % v``, is the same in every thread, (b) each thread's offsets fill whole
    aligned runs of ``v`` with one register per offset, and (c) every thread groups the same
    registers. Rule ``"uniform"`` (the default, what Triton's ``largestVectorisation`` accepts)
    also requires (d) every run to place its registers, taken in increasing order, in the same
    slots."""
    if rule not in VECTOR_RULES:
        raise LayoutError(f"unknown vector rule {rule!r}; choose one of {', '.join(VECTOR_RULES)}")
    run = dense_ids(thread, offset // v)
    if v == 1:
        return run
    reg = dense_ids(register)
    slot = offset % v
    if not _depends_only_on(reg, slot):
        return None
    counts = np.bincount(run)
    if not (counts == v).all() or dense_ids(run, slot).max(initial=-1) + 1 != len(run):
        return None
    lead = np.full(counts.size, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(lead, run, register)
    if not _depends_only_on(reg, lead[run]):
        return None
    if rule == "uniform":
        # rank of each register inside its run; the slot must be a function of that rank
        order = np.lexsort((register, run))
        rank = np.empty(len(run), dtype=np.int64)
        srun = run[order]
        start = np.ones(len(srun), dtype=bool)
        start[1:] = srun[1:] != srun[:-1]
        idx = np.arange(len(srun))
        rank[order] = idx - np.maximum.accumulate(np.where(start, idx, 0))
        if not _depends_only_on(rank, slot):
            return None
    return run


def _depends_only_on(key: np.ndarray, value: np.ndarray) -> bool:
    """Whether ``value`` is a function of the dense id ``key``."""
    ref = np.zeros(int(key.max(initial=-1)) + 1, dtype=np.int64)
    ref[key] = value
    return bool((ref[key] == value).all())


def bank_conflicts(reg: Layout, shared: Layout, element_bits: int = 16, *,
                   max_vector_bytes: int = MAX_VECTOR_BYTES, vector_rule: str = "uniform",
                   arch: str = "nvidia") -> BankReport:
    """Bank conflicts of every warp of ``reg`` storing (or loading) its elements at the addresses
    ``shared`` gives them. Stores and loads behave alike in this model. ``arch`` picks the bank
    model: ``"nvidia"`` (32 banks), ``"cdna3"`` (32), ``"cdna4"`` (64); see the module docstring."""
    ebytes = element_bytes(element_bits)
    num_banks = bank_model(arch)
    arch = ARCH_ALIASES.get(str(arch).lower(), str(arch).lower())
    if reg.out_sizes != shared.out_sizes:
        raise LayoutError(f"register layout shape {list(reg.out_sizes)} and shared layout shape "
                          f"{list(shared.out_sizes)} differ")
    if max_vector_bytes not in (1, 2, 4, 8, 16) or max_vector_bytes < ebytes:
        raise LayoutError(f"max_vector_bytes must be a power of two in [element bytes, 16], got {max_vector_bytes}")
    c = distributed_columns(reg, "the register layout")
    nblocks = reg.in_size("block")
    offs = shared_offsets(shared, reg.out_size(), nblocks)
    lanes, warps = reg.in_size("lane"), reg.in_size("warp")
    thread = c["lane"] + lanes * (c["warp"] + warps * c["block"])
    offset = offs[c["block"], c["element"]]
    if (offset < 0).any():
        k = int(np.argmax(offset < 0))
        raise LayoutError(f"block {int(c['block'][k])} of the shared layout does not hold element "
                          f"{_coord(reg, int(c['element'][k]))}")
    # broadcast registers: a register that repeats an earlier register's element in every thread
    repeat = ~first_per_group(dense_ids(thread, c["element"]), c["register"])
    reg_id = dense_ids(c["register"])
    not_repeat_somewhere = np.bincount(reg_id, weights=~repeat) > 0
    keep = not_repeat_somewhere[reg_id]
    thread, offset, register = thread[keep], offset[keep], c["register"][keep]
    lane, warp, block = c["lane"][keep], c["warp"][keep], c["block"][keep]

    max_vec = max(1, max_vector_bytes // ebytes)
    padding = padding_of(shared)
    if padding:  # a vector must not straddle a padding gap: at most the smallest interval
        max_vec = max(1, min(max_vec, min(i for i, _ in padding)))
    v, run = 1, vector_runs(thread, register, offset, 1, vector_rule)
    while v * 2 <= max_vec:
        r2 = vector_runs(thread, register, offset, v * 2, vector_rule)
        if r2 is None:
            break
        v, run = v * 2, r2
    w = v * ebytes
    lanes_per_phase = num_banks * WORD_BYTES // max(w, WORD_BYTES)

    # one row per vector access; its instruction is the rank of the run's lowest register
    lead = first_per_group(run, register)
    r_reg, r_off = register[lead], padded_offsets((offset[lead] // v) * v, padding)
    r_lane, r_warp, r_block = lane[lead], warp[lead], block[lead]
    instr = dense_ids(r_reg)

    # expand vector accesses into the 4-byte words they touch
    nwords = max(1, w // WORD_BYTES)
    words = ((r_off * ebytes) // WORD_BYTES)[:, None] + np.arange(nwords)[None, :]
    words = words.reshape(-1)
    rep = lambda a: np.repeat(a, nwords)  # noqa: E731
    wid = rep(r_block * warps + r_warp)
    a_instr, a_lane = rep(instr), rep(r_lane)
    phase = a_lane // lanes_per_phase
    bank = words % num_banks

    # wavefronts of a phase = max over banks of the number of distinct words
    word_id = dense_ids(wid, a_instr, phase, words)
    uw = first_per_group(word_id, np.zeros_like(word_id))       # one row per distinct word
    bank_id = dense_ids(wid[uw], a_instr[uw], phase[uw], bank[uw])
    per_bank = np.bincount(bank_id)
    uw_rows = np.nonzero(uw)[0]
    bank_row = np.empty(per_bank.size, dtype=np.int64)
    bank_row[bank_id] = uw_rows
    phase_id = dense_ids(wid[bank_row], a_instr[bank_row], phase[bank_row])
    per_phase = np.zeros(int(phase_id.max(initial=-1)) + 1, dtype=np.int64)
    np.maximum.at(per_phase, phase_id, per_bank)
    phase_row = np.empty(per_phase.size, dtype=np.int64)
    phase_row[phase_id] = bank_row
    instr_id = dense_ids(wid[phase_row], a_instr[phase_row])
    per_instr = np.bincount(instr_id, weights=per_phase).astype(np.int64)
    ideal_instr = np.bincount(instr_id).astype(np.int64)  # one wavefront per phase
    instr_row = np.empty(per_instr.size, dtype=np.int64)
    instr_row[instr_id] = phase_row
    warp_of_instr = wid[instr_row]
    per_warp = np.bincount(warp_of_instr, weights=per_instr).astype(np.int64)
    ideal_warp = np.bincount(warp_of_instr, weights=ideal_instr).astype(np.int64)
    instr_per_warp = np.bincount(warp_of_instr)

    if per_phase.size == 0:
        return BankReport(int(element_bits), int(v), int(w), int(lanes_per_phase), 0, 0, 0, 0, 0, 0, None, arch,
                          num_banks)
    worst_i = int(np.argmax(per_instr - ideal_instr))
    worst_w = int(np.argmax(per_warp))
    worst_p = int(np.argmax(per_phase))
    # witness: the worst bank of the worst phase
    banks_of_p = np.nonzero(phase_id == worst_p)[0]
    b = int(banks_of_p[int(np.argmax(per_bank[banks_of_p]))])
    row = bank_row[b]
    sel = (wid == wid[row]) & (a_instr == a_instr[row]) & (phase == phase[row]) & (bank == bank[row])
    witness = {"warp": int(wid[row] % warps), "block": int(wid[row] // warps), "instruction": int(a_instr[row]),
               "phase": int(phase[row]), "bank": int(bank[row]),
               "words": [int(x) for x in np.unique(words[sel])[:32]],
               "lanes": [int(x) for x in np.unique(a_lane[sel])[:32]]}
    return BankReport(
        element_bits=int(element_bits), vector=int(v), access_bytes=int(w), lanes_per_phase=int(lanes_per_phase),
        instructions=int(instr_per_warp.max()), wavefronts=int(per_instr[worst_i]),
        ideal_wavefronts=int(ideal_instr[worst_i]), conflict_ways=int(per_phase.max()),
        total_wavefronts=int(per_warp[worst_w]), total_ideal=int(ideal_warp[worst_w]), witness=witness,
        arch=arch, banks=num_banks)


def gathered_bank_conflicts(reg: Layout, shared: Layout, element_bits: int = 16, *, access_bytes: int = 16,
                            phases: str = "lanes", arch: str = "nvidia") -> BankReport:
    """Bank conflicts of a *gathering* access: each lane reads (or writes) one aligned run of
    ``access_bytes`` of shared memory, and the hardware redistributes the runs' elements among
    the lanes, so that a lane's registers need not be contiguous in memory. Two instruction
    families do this:

    * ``phases="words"``: NVIDIA ``ldmatrix``/``stmatrix`` (.x1/.x2/.x4, optionally ``.trans``):
      each 32-bit register word of the warp is one 8x8 matrix of 16-byte rows, served as one
      phase; an instruction moves ``access_bytes // 4`` words per lane (PTX ISA,
      "Warp-level matrix load instruction: ldmatrix");
    * ``phases="lanes"``: AMD CDNA4 ``ds_read_b64_tr_b16/b8``: each lane reads 8 bytes, lanes
      exchange within groups of 16 (CDNA4 ISA, "DS_READ_B64_TR_B16"; LLVM's
      ``llvm.amdgcn.ds.read.tr16.b64``: each 16-lane row loads a 4x16 tile and every lane gets a
      column of it); phases of ``banks * 4 / access_bytes`` consecutive lanes as for
      ``ds_read_b64``.

    Which lane reads which run does not matter for conflicts: a phase needs as many wavefronts
    as the most distinct 4-byte words one bank holds among the runs containing the elements its
    lanes receive. A thread's registers (broadcast copies removed) are packed ``4 / element
    bytes`` to a 32-bit word in register order, and ``access_bytes / 4`` consecutive words form
    one instruction."""
    ebytes = element_bytes(element_bits)
    num_banks = bank_model(arch)
    arch = ARCH_ALIASES.get(str(arch).lower(), str(arch).lower())
    if phases not in ("words", "lanes"):
        raise LayoutError(f"phases must be 'words' or 'lanes', got {phases!r}")
    if access_bytes not in (4, 8, 16):
        raise LayoutError(f"access_bytes must be 4, 8 or 16, got {access_bytes}")
    if reg.out_sizes != shared.out_sizes:
        raise LayoutError(f"register layout shape {list(reg.out_sizes)} and shared layout shape "
                          f"{list(shared.out_sizes)} differ")
    c = distributed_columns(reg, "the register layout")
    offs = shared_offsets(shared, reg.out_size(), reg.in_size("block"))
    lanes, warps = reg.in_size("lane"), reg.in_size("warp")
    thread = c["lane"] + lanes * (c["warp"] + warps * c["block"])
    offset = offs[c["block"], c["element"]]
    if (offset < 0).any():
        raise LayoutError("the shared layout does not hold every element of the register layout")
    repeat = ~first_per_group(dense_ids(thread, c["element"]), c["register"])
    reg_id = dense_ids(c["register"])
    keep = (np.bincount(reg_id, weights=~repeat) > 0)[reg_id]
    register, offset = dense_ids(c["register"][keep]), offset[keep]
    lane, wid = c["lane"][keep], (c["warp"] + warps * c["block"])[keep]
    per_word = max(1, 4 // ebytes)
    word = register // per_word
    words_per_instr = access_bytes // 4
    instr = word // words_per_instr
    if phases == "words":
        phase = word % words_per_instr
        lanes_per_phase = lanes
    else:
        lanes_per_phase = max(1, num_banks * WORD_BYTES // access_bytes)
        phase = lane // lanes_per_phase
    addr = padded_offsets(offset, padding_of(shared)) * ebytes
    run = addr // access_bytes
    key = dense_ids(wid, instr, phase)
    uniq = np.unique(np.stack([key, run]), axis=1)
    k, r = uniq
    words = (r * (access_bytes // WORD_BYTES))[:, None] + np.arange(access_bytes // WORD_BYTES)[None, :]
    kk = np.repeat(k, access_bytes // WORD_BYTES)
    words = words.reshape(-1)
    wb = np.unique(np.stack([kk, words % num_banks, words]), axis=1)
    per_bank = np.bincount(dense_ids(wb[0], wb[1]))
    bank_key = wb[0][first_per_group(dense_ids(wb[0], wb[1]), np.zeros(wb.shape[1], dtype=np.int64))]
    per_phase = np.zeros(int(key.max(initial=-1)) + 1, dtype=np.int64)
    np.maximum.at(per_phase, bank_key, per_bank)
    # phase -> (warp, instruction)
    first = first_per_group(key, np.zeros_like(key))
    pk_w, pk_i = np.zeros(per_phase.size, np.int64), np.zeros(per_phase.size, np.int64)
    pk_w[key[first]], pk_i[key[first]] = wid[first], instr[first]
    instr_key = dense_ids(pk_w, pk_i)
    per_instr = np.bincount(instr_key, weights=per_phase).astype(np.int64)
    ideal_instr = np.bincount(instr_key).astype(np.int64)
    ik_w = np.zeros(per_instr.size, np.int64)
    ik_w[instr_key] = pk_w
    per_warp = np.bincount(ik_w, weights=per_instr).astype(np.int64)
    ideal_warp = np.bincount(ik_w, weights=ideal_instr).astype(np.int64)
    worst_i = int(np.argmax(per_instr - ideal_instr)) if per_instr.size else 0
    worst_w = int(np.argmax(per_warp)) if per_warp.size else 0
    return BankReport(
        element_bits=int(element_bits), vector=int(access_bytes // ebytes), access_bytes=int(access_bytes),
        lanes_per_phase=int(lanes_per_phase), instructions=int(np.bincount(ik_w).max(initial=0)),
        wavefronts=int(per_instr[worst_i]) if per_instr.size else 0,
        ideal_wavefronts=int(ideal_instr[worst_i]) if per_instr.size else 0,
        conflict_ways=int(per_phase.max(initial=0)), total_wavefronts=int(per_warp[worst_w]) if per_warp.size else 0,
        total_ideal=int(ideal_warp[worst_w]) if per_warp.size else 0, witness=None, arch=arch, banks=num_banks)


def padding_of(shared: Layout) -> tuple:
    """The ``(interval, pad)`` pairs of a padded shared layout (Triton's ``padded_shared``, whose
    adapter returns dense offsets and carries the padding beside them), else ``()``."""
    pairs = getattr(shared, "padding", None) or ()
    return tuple((int(i), int(p)) for i, p in pairs)


def padded_offsets(offset: np.ndarray, padding) -> np.ndarray:
    """Physical slots of dense offsets: ``offset + sum_k (offset // interval_k) * pad_k``
    (Triton's ``padded_shared``: ``pad_k`` empty slots after every ``interval_k`` elements)."""
    out = np.asarray(offset, dtype=np.int64)
    if not padding:
        return out
    base = out
    for interval, pad in padding:
        out = out + (base // interval) * pad
    return out


def _coord(layout: Layout, flat: int) -> tuple[int, ...]:
    return tuple(int(x) for x in np.unravel_index(flat, layout.out_sizes))
