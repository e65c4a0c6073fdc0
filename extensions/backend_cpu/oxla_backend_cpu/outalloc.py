"""Result arrays of an executable, their memory reused across calls.

Every call returns new numpy arrays, which the caller may keep, modify or share. A
large one allocated with ``np.empty`` is fresh memory from the kernel (glibc maps
anything over 32 MiB): the generated code's first write to each page faults and the
kernel zeroes it, which for a 64 MiB result costs more than the computation itself
(an elementwise chain over 16M f32 ran at half the speed of the same loop writing
into reused memory).

:class:`OutputPool` keeps, per result, up to :data:`MAX_BLOCKS` blocks of at least
:data:`MIN_BYTES`, 64-byte aligned. A block is handed out again only when nothing
refers to it any more: the arrays of a call are views of the block (``base`` is the
block, as for any numpy view of a view), so while the caller holds a result, or any
view, slice or export of it, the block's reference count stays above the pool's own
and the next call gets another block (or plain ``np.empty`` memory once the
result has :data:`MAX_BLOCKS` blocks in use). Results are never shared between
calls that are both alive.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

MIN_BYTES = 1 << 20  # smaller results come from np.empty (malloc's free lists reuse them)
MAX_BLOCKS = 2  # per result: the previous result kept while the next one is computed
ALIGN = 64


class OutputPool:
    """Allocates the result arrays of one executable (module doc).

    Args:
        specs: one ``(shape, dtype)`` per result, or None for a result without data
            (a token).
    """

    def __init__(self, specs: list[tuple[tuple[int, ...], np.dtype] | None]):
        # per result: None (no data), (shape, dtype) for np.empty, or
        # (shape, dtype, nbytes, blocks) for a pooled one; blocks: [raw uint8, offset]
        self._slots: list[tuple | None] = []
        for spec in specs:
            if spec is not None:
                n = int(np.prod(spec[0], dtype=np.int64)) * np.dtype(spec[1]).itemsize
                if n >= MIN_BYTES:
                    spec = (spec[0], np.dtype(spec[1]), n, [])
            self._slots.append(spec)
        self._lock = threading.Lock()

    def arrays(self, no_data: object) -> list:
        """One array per result (``no_data`` for a result without data)."""
        out = []
        for slot in self._slots:
            if slot is None:
                out.append(no_data)
            elif len(slot) == 2:
                out.append(np.empty(*slot))
            else:
                with self._lock:
                    out.append(self._take(slot[3], *slot[:3]))
        return out

    @staticmethod
    def _take(blocks: list[list], shape, dtype: np.dtype, nbytes: int) -> np.ndarray:
        for entry in blocks:
            # references: the entry's and getrefcount's argument; any array on the block
            # (a result, a view of it, an export) adds one
            if sys.getrefcount(entry[0]) == 2:
                return _view(entry, shape, dtype, nbytes)
        if len(blocks) >= MAX_BLOCKS:
            return np.empty(shape, dtype)
        raw = np.empty(nbytes + ALIGN, np.uint8)
        entry = [raw, (-raw.ctypes.data) % ALIGN]
        blocks.append(entry)
        return _view(entry, shape, dtype, nbytes)


def _view(entry: list, shape, dtype: np.dtype, nbytes: int) -> np.ndarray:
    off = entry[1]
    return entry[0][off:off + nbytes].view(dtype).reshape(shape)
