"""Machine state: symbolic bytes, registers of every thread, shared and global memory.

A byte is an ``int64``: ``0..255`` a concrete value, :data:`UNDEF` (``-1``) undefined, and
``TAG0 + 8 * e + k`` (``>= 256``) byte ``k`` of logical element ``e`` (a data byte). A register
of ``n`` bytes of all ``T`` threads is an array ``(T, n)``, little-endian (byte 0 lowest).

Global memory: parameter ``i`` (a pointer) points to ``PARAM_BASE * (i + 1)``. The input buffer
(parameter 0) reads as data bytes: its byte ``o`` is byte ``o % element_bytes`` of element
``o // element_bytes``. Stores to any other parameter's buffer are recorded per byte with the
storing thread.
"""
from __future__ import annotations

import numpy as np

from layoutverify.core.errors import LayoutError


class SimError(LayoutError):
    """The PTX does something the interpreter does not model, or does wrong (a race, a divergent
    branch, arithmetic on data). The message names the PTX line and instruction."""

class Hazard(SimError):
    """The PTX is wrong by the memory model whatever the data: a race between warps (no barrier
    between a write and another warp's access), a read of shared memory an asynchronous copy has
    not yet landed in, a wait that never ends. ``byte`` is the shared-memory byte concerned (or
    None), ``line`` the PTX line."""

    def __init__(self, message: str, *, byte: int | None = None, line: int | None = None):
        super().__init__(message)
        self.byte = byte
        self.line = line


UNDEF = -1
TAG0 = 256
PARAM_BASE = 1 << 40
SHARED_BYTES = 256 * 1024

_WIDTH = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "b32": 4, "u32": 4,
          "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8, "pred": 1, "f16x2": 4, "bf16x2": 4}


def type_width(ty: str) -> int:
    """Bytes of PTX type ``ty`` (``b32`` -> 4, ``pred`` -> 1, ``f16x2`` -> 4)."""
    return _WIDTH[ty]


def is_type(ty: str) -> bool:
    """Whether ``ty`` is a PTX type this machine knows."""
    return ty in _WIDTH


def tag_bytes(elements: np.ndarray, element_bytes: int) -> np.ndarray:
    """``(len, element_bytes)`` data bytes of the given elements."""
    e = np.asarray(elements, dtype=np.int64)
    return TAG0 + 8 * e[:, None] + np.arange(element_bytes, dtype=np.int64)[None, :]


def concrete(b: np.ndarray) -> np.ndarray:
    """Per row: every byte concrete."""
    return ((b >= 0) & (b < 256)).all(axis=-1)


def to_uint(b: np.ndarray) -> np.ndarray:
    """Concrete byte rows -> ``uint64`` values (the caller checked :func:`concrete`)."""
    v = np.zeros(b.shape[0], dtype=np.uint64)
    for k in range(b.shape[1]):
        v |= (b[:, k].astype(np.uint64) & np.uint64(0xFF)) << np.uint64(8 * k)
    return v


def from_uint(v: np.ndarray, n: int) -> np.ndarray:
    """``uint64`` values -> ``(len, n)`` concrete byte rows, little-endian."""
    v = np.asarray(v).astype(np.uint64)
    out = np.empty((v.shape[0], n), dtype=np.int64)
    for k in range(n):
        out[:, k] = ((v >> np.uint64(8 * k)) & np.uint64(0xFF)).astype(np.int64)
    return out


def describe_byte(x: int) -> str:
    """A byte code in words: ``undefined``, ``0x2a``, or ``element e byte k``."""
    if x == UNDEF:
        return "undefined"
    if 0 <= x < 256:
        return f"0x{x:02x}"
    e, k = divmod(x - TAG0, 8)
    return f"element {e} byte {k}"


class Registers:
    """Every thread's registers. Widths come from the PTX declarations (``%r<58>`` of ``.b32``)."""

    def __init__(self, threads: int, declared: dict[str, str], prefixes: dict[str, str]):
        self.threads = threads
        self.declared = declared
        self.prefixes = prefixes
        self.values: dict[str, np.ndarray] = {}

    def width(self, name: str, fallback: int | None = None) -> int:
        """Bytes of register ``name``, by its declaration or its prefix's (``%r<58>``); ``fallback`` for
        an undeclared one (``KeyError`` without it)."""
        ty = self.declared.get(name)
        if ty is None:
            base = name.rstrip("0123456789")
            ty = self.prefixes.get(base)
        if ty is None:
            if fallback is None:
                raise KeyError(name)
            return fallback
        return _WIDTH[ty]

    def get(self, name: str, width: int | None = None) -> np.ndarray:
        """The ``(threads, bytes)`` value of register ``name``; undefined bytes before its first write."""
        v = self.values.get(name)
        if v is None:
            n = self.width(name, width)
            v = np.full((self.threads, n), UNDEF, dtype=np.int64)
            self.values[name] = v
        return v

    def set(self, name: str, value: np.ndarray, mask: np.ndarray | None) -> None:
        """Write ``value`` to register ``name`` in the threads of ``mask`` (all when ``None``),
        zero-extended or truncated to the register's width."""
        n = self.width(name, value.shape[1])
        if value.shape[1] != n:  # writing a narrower/wider value: zero-extend or truncate bytewise
            if value.shape[1] < n:
                pad = np.zeros((value.shape[0], n - value.shape[1]), dtype=np.int64)
                value = np.concatenate([value, pad], axis=1)
            else:
                value = value[:, :n]
        if mask is None or mask.all():
            self.values[name] = value.copy()
        else:
            cur = self.get(name, n).copy()
            cur[mask] = value[mask]
            self.values[name] = cur


class Shared:
    """Shared memory of one CTA, with the barrier epoch and the warp of the last write and read of
    every byte (for race detection between warps)."""

    def __init__(self, size: int = SHARED_BYTES):
        self.data = np.full(size, UNDEF, dtype=np.int64)
        self.write_epoch = np.full(size, -1, dtype=np.int64)
        self.write_warp = np.full(size, -1, dtype=np.int64)
        self.read_epoch = np.full(size, -1, dtype=np.int64)
        self.read_warp = np.full(size, -1, dtype=np.int64)
        self.pending = np.zeros(size, dtype=np.int32)        # asynchronous copies in flight into the byte
        self.pending_line = np.zeros(size, dtype=np.int32)   # the PTX line that issued the last of them
        self.async_read = np.zeros(size, dtype=np.int32)     # async-proxy reads in flight (wgmma, bulk stores)
        self.generic_dirty = np.zeros(size, dtype=bool)      # written by the generic proxy since the last
        #                                                      fence.proxy.async


class Global:
    """The kernel's global buffers: the input (parameter 0) reads as tagged elements; stores to
    other buffers are recorded."""

    def __init__(self, element_bytes: int, input_elements: int):
        self.element_bytes = element_bytes
        self.input_bytes = element_bytes * input_elements
        self.stores: dict[int, dict[int, tuple[int, int]]] = {}   # param -> {offset: (byte, thread)}
        self.conflicts: list[tuple[int, int, int, int]] = []      # (param, offset, old, new)

    def load(self, addr: np.ndarray, n: int) -> np.ndarray:
        """``(len(addr), n)`` bytes at addresses ``addr``: data bytes of the input buffer (only
        parameter 0 is readable)."""
        out = np.full((addr.shape[0], n), UNDEF, dtype=np.int64)
        param = (addr // np.uint64(PARAM_BASE)).astype(np.int64) - 1
        off = (addr % np.uint64(PARAM_BASE)).astype(np.int64)
        if (param != 0).any():
            raise ValueError(f"load from buffer {int(param[param != 0][0])}, only the input (0) is readable")
        for k in range(n):
            o = off + k
            if (o >= self.input_bytes).any():
                raise ValueError(f"load past the input buffer (byte {int(o.max())} of {self.input_bytes})")
            out[:, k] = TAG0 + 8 * (o // self.element_bytes) + o % self.element_bytes
        return out

    def store(self, addr: np.ndarray, value: np.ndarray, threads: np.ndarray) -> None:
        """Record the bytes ``value`` stored at ``addr`` by ``threads``; a byte overwritten with another
        value is recorded as a conflict."""
        param = (addr // np.uint64(PARAM_BASE)).astype(np.int64) - 1
        off = (addr % np.uint64(PARAM_BASE)).astype(np.int64)
        for i in range(addr.shape[0]):
            buf = self.stores.setdefault(int(param[i]), {})
            for k in range(value.shape[1]):
                o = int(off[i]) + k
                new = int(value[i, k])
                old = buf.get(o)
                if old is not None and old[0] != new:
                    self.conflicts.append((int(param[i]), o, old[0], new))
                buf[o] = (new, int(threads[i]))
