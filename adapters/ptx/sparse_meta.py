"""The metadata operand ``e`` of ``mma.sp`` / ``mma.sp::ordered_metadata``, as a fragment.

Source: PTX ISA §9.7.14.6.1 "Sparse matrix storage" (the text) and the metadata figures of
§9.7.14.6.2.1-8 ("Sparse MMA ... metadata layout for ... type"). The ISA's words:

* "Index of each non-zero element in a sub-chunk is stored in the metadata operand." Each index is a
  2-bit field for the 2:4 types (``.f16``, ``.bf16``, 8-bit) and for the 4-bit types, whose chunks
  of 8 hold two non-zero *pairs* ("4:8 ... in pairs": one 2-bit index per pair); ``.tf32`` is 1:2
  and "the 4-bit index in the metadata indicates the position of the non-zero element in the
  two-wide chunk".
* "In a group of four consecutive threads, one or more threads store the metadata for the whole
  group depending upon the matrix shape. These threads are specified using an additional sparsity
  selector operand": m16n8k16 ``.f16``/``.bf16`` and m16n8k8 ``.tf32``: "One thread within a group
  of four consecutive threads contributes the metadata for the entire group. This thread is
  indicated by a value in {0, 1, 2, 3}"; m16n8k32 ``.f16``/``.bf16``, m16n8k16 ``.tf32``, m16n8k32
  8-bit, m16n8k64 4-bit: "A thread-pair within a group of four consecutive threads contributes the
  sparsity metadata. Hence, the sparsity selector must be either 0 (threads T0, T1) or 1 (threads
  T2, T3)"; m16n8k64 8-bit and m16n8k128 4-bit: "All threads within a group of four consecutive
  threads contribute the sparsity metadata. Hence, the sparsity selector in this case must be 0."
* The figures: "Tk: [m..n] present in cell[x][y..z] indicates that bits m through n (with m being
  higher) in the metadata operand of thread with %laneid=k contains the indices of the non-zero
  elements from the chunk [x][y]..[x][z] of matrix A."

**Canonical form.** Hardware dims ``register`` = the index field's number ``j`` in the 32-bit
metadata register (field ``j`` is bits ``[w*j + w-1 .. w*j]``, ``w`` = 2, or 4 for ``.tf32``),
``lane``, ``warp`` (1), ``block`` (1). Logical dims ``dim0`` = row of A, ``dim1`` = the **packed
column** whose dense position the field gives: the column of the packed ``M x K/2`` A of
:mod:`.sparse` (for 4-bit types, the packed *pair* column of the ``M x K/4`` matrix of non-zero
pairs). So field ``j`` of a metadata thread describes exactly the packed element (or pair) that the
A fragment places at ``(dim0, dim1)``; the dense column is ``chunk * width + index``.

**The sparsity selector** picks which lanes of each group of four are read; the lane bits it
chooses between do not change what a field describes, so they have a zero basis (each field is
held by 4, 2 or 1 lanes; CuTe's ``ELayout`` writes the same as a stride 0). With the selector
fixed, every (row, packed column) is described exactly once.

Per thread (``gid`` = groupID = lane >> 2, ``t`` = threadID_in_group = lane % 4), as the figures
show: one metadata thread covers two rows for 16-bit and ``.tf32`` types (its low half row
``gid``, its high half row ``gid + 8``; the second thread of a pair the next 16 dense columns
(8 for ``.tf32``)); for 8-bit and 4-bit types one metadata register covers one row (``t`` bit 0
picks ``gid`` or ``gid + 8``; ``t`` bit 1, when all four threads contribute, the second half of K).
``tests/test_ptx_sparse_meta.py`` checks these against the ISA's statements and CUTLASS's
``ELayout`` (SM120 sparse ``m16n8k64``/``m16n8k128`` and the per-warp SM90 ``wgmma.sp`` ones).

``wgmma.sp`` (operand ``E`` of ``wgmma.sp.m64nNkK``, :func:`wgmma_sp_e_fragment`): PTX ISA §9.7.15.6.1
gives wgmma.sp the same chunking and sparsity selectors as the mma.sp shape of equal K per 16 rows;
warp ``w`` of the warpgroup holds the metadata of rows ``16w .. 16w + 15``. The test checks all 128
threads against CUTLASS's SM90 ``ELayout_64x32/64x16/64x64``.
"""
from __future__ import annotations

from layoutverify.adapters.isa.fragment import Fragment, bit
from .mma import group_id

ISA = "PTX ISA §9.7.14.6"


def e_16bit_one(r, lane, warp):
    """m16n8k16 .f16/.bf16: one thread (Ti); bits [15..0] row gid, [31..16] row gid + 8; 16 dense
    columns (8 packed) each."""
    return group_id(lane) + bit(r, 3) * 8, r & 7


def e_16bit_pair(r, lane, warp):
    """m16n8k32 .f16/.bf16: T2i covers dense columns 0-15, T2i+1 columns 16-31."""
    return group_id(lane) + bit(r, 3) * 8, (r & 7) + bit(lane, 0) * 8


def e_tf32_one(r, lane, warp):
    """m16n8k8 .tf32: one thread; 4-bit fields, bits [15..0] row gid, [31..16] row gid + 8; 8 dense
    columns (4 non-zeros) each."""
    return group_id(lane) + bit(r, 2) * 8, r & 3


def e_tf32_pair(r, lane, warp):
    """m16n8k16 .tf32: T2i covers dense columns 0-7, T2i+1 columns 8-15."""
    return group_id(lane) + bit(r, 2) * 8, (r & 3) + bit(lane, 0) * 4


def e_row_pair(r, lane, warp):
    """m16n8k32 8-bit (K = 32: 16 packed columns), m16n8k64 4-bit (16 packed pairs): T2i row gid,
    T2i+1 row gid + 8, the whole K each."""
    return group_id(lane) + bit(lane, 0) * 8, r


def e_row_quad(r, lane, warp):
    """m16n8k64 8-bit, m16n8k128 4-bit: all four threads; t bit 0 picks row gid / gid + 8, t bit 1
    the first or second half of K (16 packed columns, or packed pairs, each)."""
    return group_id(lane) + bit(lane, 0) * 8, r + bit(lane, 1) * 16


#: (shape, A types, formula, metadata threads per group of four, field width in bits,
#:  dense chunk width, non-zero fields per chunk, packed columns per row, section)
_TABLE = [
    ("m16n8k16", ("f16", "bf16"), e_16bit_one, 1, 2, 4, 2, 8, "1"),
    ("m16n8k32", ("f16", "bf16"), e_16bit_pair, 2, 2, 4, 2, 16, "2"),
    ("m16n8k16", ("tf32",), e_tf32_pair, 2, 4, 2, 1, 8, "3"),
    ("m16n8k8", ("tf32",), e_tf32_one, 1, 4, 2, 1, 4, "4"),
    ("m16n8k32", ("s8", "u8"), e_row_pair, 2, 2, 4, 2, 16, "5"),
    ("m16n8k64", ("s8", "u8", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1"), e_row_quad, 4, 2, 4, 2, 32, "6"),
    ("m16n8k64", ("s4", "u4"), e_row_pair, 2, 2, 8, 2, 16, "7"),
    ("m16n8k128", ("s4", "u4", "e2m1"), e_row_quad, 4, 2, 8, 2, 32, "8"),
]

#: (shape, A type) -> facts of the metadata operand, for tests and notes
META: dict[tuple[str, str], dict] = {}
#: (shape, A type) -> the metadata Fragment
MMA_SP_E: dict[tuple[str, str], Fragment] = {}


def _build() -> None:
    for shape, types, coords, threads, width, chunk, nz, packed_cols, sec in _TABLE:
        selectors = {1: "0-3 (one thread Ti)", 2: "0 (T0, T1) or 1 (T2, T3)", 4: "0 only (all four threads)"}[threads]
        unit = "packed pair" if chunk == 8 else "packed element"
        for t in types:
            META[(shape, t)] = dict(threads=threads, field_bits=width, chunk=chunk, nonzeros=nz,
                                    packed_cols=packed_cols)
            MMA_SP_E[(shape, t)] = Fragment(
                name=f"mma.sp.{shape}.{t}.E", operand="E", rows=16, cols=packed_cols, registers=32 // width,
                coords=coords, source=f"{ISA}.1 and {ISA}.2.{sec} (metadata figures)",
                note=(f"metadata: register = {width}-bit index field j (bits {width}*j..{width}*j+{width - 1}); "
                      f"(dim0, dim1) = the row and {unit} whose position in its {chunk}-wide chunk the field "
                      f"gives; sparsity selector {selectors}: lanes it chooses between hold the same fields"))


_build()


# ---------------------------------------------------------------------------------------------
# wgmma.mma_async.sp metadata (PTX ISA §9.7.15.6.1 "Sparse matrix storage" of wgmma.sp)
# ---------------------------------------------------------------------------------------------
#: sparse K of ``wgmma.sp.m64nNkK`` -> (A types, the per-warp metadata formula). The ISA states the
#: same selectors as the mma.sp shape with the same chunking: .f16/.bf16 K 32 and .tf32 K 16 "a
#: thread-pair ... 0 (threads T0, T1) or 1 (threads T2, T3)"; 8-bit K 64 "all threads ... must be 0".
#: Warp ``w`` of the warpgroup holds the metadata of rows 16w .. 16w + 15, as it holds those rows of A.
WGMMA_SP_E_TABLE = {
    32: (("f16", "bf16"), e_16bit_pair, "m16n8k32", 16),
    16: (("tf32",), e_tf32_pair, "m16n8k16", 8),
    64: (("s8", "u8", "e4m3", "e5m2"), e_row_quad, "m16n8k64", 32),
}


def _warpgroup(per_warp):
    def coords(r, lane, warp):
        row, col = per_warp(r, lane, 0)
        return row + 16 * warp, col
    coords.__doc__ = f"{per_warp.__name__} for warp 0; warp w adds 16 w to the row"
    return coords


def wgmma_sp_e_fragment(n: int, k: int, atype: str) -> Fragment | None:
    """``wgmma.sp.m64n{n}k{k}.{atype}.E``: the metadata operand of the whole warpgroup (N does not
    change it), or None for a K or A type wgmma.sp lacks."""
    spec = WGMMA_SP_E_TABLE.get(k)
    if spec is None or atype not in spec[0]:
        return None
    _, per_warp, mma_shape, packed_cols = spec
    width = 4 if atype == "tf32" else 2                # "the 4-bit index" of .tf32 1:2, else 2 bits
    return Fragment(
        name=f"wgmma.sp.m64n{n}k{k}.{atype}.E", operand="E", rows=64, cols=packed_cols,
        registers=32 // width, coords=_warpgroup(per_warp), warps=4,
        source="PTX ISA §9.7.15.6.1 (wgmma.sp sparse matrix storage, metadata and sparsity selector)",
        note=(f"metadata: register = {width}-bit index field j; (dim0, dim1) = (row, packed column) as "
              f"mma.sp.{mma_shape}.E per warp, warp w rows 16w..16w+15; sparsity selector lanes hold "
              f"the same fields"))
