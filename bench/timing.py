"""Interleaved timing shared by the benchmarks: engines take turns in rounds; each visit
is an untimed call, then a block of timed calls (seconds per call are returned)."""

from __future__ import annotations

import time
from collections.abc import Callable


def block_size(calls: dict[str, Callable], budget_s: float, max_calls: int) -> int:
    """Calls per timed block so the slowest engine's block takes about ``budget_s``."""
    slowest = 0.0
    for call in calls.values():
        t0 = time.perf_counter()
        call()
        slowest = max(slowest, time.perf_counter() - t0)
    return max(1, min(max_calls, int(budget_s / max(slowest, 1e-7))))


def interleaved(calls: dict[str, Callable], rounds: int, budget_s: float, settle_s: float,
                max_calls: int = 1000, slowest_s: float | None = None) -> dict[str, list[float]]:
    """Seconds of every timed call, per engine.

    Thread pools spin-wait after a call (OpenBLAS ~0.1 s, Eigen, IREE's workers); the
    next engine would share the cores with them, so each visit first sleeps ``settle_s``.
    ``slowest_s``, when known, sizes the blocks without a probing call per engine.
    """
    if slowest_s is None:
        n = block_size(calls, budget_s, max_calls)
    else:
        n = max(1, min(max_calls, int(budget_s / max(slowest_s, 1e-6))))
    times: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            time.sleep(settle_s)
            call()  # untimed
            for _ in range(n):
                t0 = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - t0)
    return times
