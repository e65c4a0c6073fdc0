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
        self._specs = specs
        self._blocks: list[list[list]] = [[] for _ in specs]  # [raw uint8, offset]
        self._lock = threading.Lock()

    def arrays(self, no_data: object) -> list:
        """One array per result (``no_data`` for a result without data)."""
        out = []
        for spec, blocks in zip(self._specs, self._blocks):
            if spec is None:
                out.append(no_data)
                continue
            shape, dtype = spec
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if nbytes < MIN_BYTES:
                out.append(np.empty(shape, dtype))
                continue
            with self._lock:
                out.append(self._take(blocks, shape, dtype, nbytes))
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
