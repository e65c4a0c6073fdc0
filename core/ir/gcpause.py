"""Pausing the cyclic garbage collector while large IR is built or rewritten.

IR objects form reference cycles (an op and its results, a block and its ops), so
CPython's collector tracks every one of them; building or rewriting 100k ops triggers
full collections that traverse the whole module again and again (a third of the
default pipeline's time on 100k ops). The cycles that become garbage meanwhile
(erased ops) are collected once the collector is enabled again.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disables ``gc`` for the ``with`` body (no-op when it is already disabled)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
