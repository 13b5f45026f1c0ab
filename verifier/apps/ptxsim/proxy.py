"""Shared-memory hazards of asynchronous operations, checked by every access: a byte an
asynchronous copy has not landed in yet (``cp.async``, bulk tensor loads) is neither read nor
written (:class:`~.state.Hazard`)."""
from __future__ import annotations

import numpy as np

from .state import Hazard


def check_pending(m, idx: np.ndarray, ins, what: str = "reads") -> None:
    """A read or write of shared bytes ``idx`` that an asynchronous copy has not landed in yet."""
    p = m.shared.pending[idx]
    if p.any():
        byte = int(np.asarray(idx)[p > 0].reshape(-1)[0])
        raise Hazard(f"PTX line {ins.line}: {ins.opcode} {what} shared byte {byte} before the asynchronous copy "
                     f"issued at PTX line {int(m.shared.pending_line[byte])} landed (no wait covers it)",
                     byte=byte, line=ins.line)
