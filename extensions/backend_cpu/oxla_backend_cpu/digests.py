"""Content digests of arrays (the compile cache's keys for weights, the artifacts'
constant checksums)."""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

THREADED_HASH_BYTES = 1 << 24
"""Total bytes from which the arrays are hashed on threads."""


def digests(arrays: Any) -> list[str]:
    """The hex SHA-256 of each array's raw bytes (C order); many megabytes are hashed on
    threads (``hashlib`` releases the GIL), about 2 GB/s per core."""
    flat = [np.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in arrays]
    if sum(a.nbytes for a in flat) < THREADED_HASH_BYTES or len(flat) < 2:
        return [hashlib.sha256(a).hexdigest() for a in flat]
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        return list(pool.map(lambda a: hashlib.sha256(a).hexdigest(), flat))
