"""Stages 3 and 4: scheduling and buffer assignment.

Scheduling keeps program order for now (fusion emits kernels in the order of their
root ops, which is already a valid topological order); a memory-aware scheduler that
lowers peak memory replaces :func:`schedule` later without touching the other stages.

Buffer assignment computes each temporary buffer's live range over the schedule
(from the kernel that writes it to the last kernel that reads it) and packs the
buffers into one arena, first fit by offset: a buffer reuses the bytes of buffers
whose live range ended before the kernel that writes it starts. A kernel never writes
over one of its own inputs (no in-place reuse yet). Arguments, results and constants
live outside the arena.
"""

from __future__ import annotations

from oxla_backend_cpu.plan import Buf, Plan, kernel_reads, kernel_writes

ALIGN = 64  # bytes: a cache line, and enough for AVX-512 loads


def schedule(plan: Plan) -> Plan:
    """Orders the kernels; program order for now (see the module doc)."""
    plan.notes.append("scheduling: program order")
    return plan


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def assign_buffers(plan: Plan) -> Plan:
    """Places every ``temp`` buffer in the arena; sets ``offset`` and ``temp_bytes``."""
    last_use: dict[Buf, int] = {}
    for t, k in enumerate(plan.kernels):
        for w in kernel_writes(k):
            last_use.setdefault(w, t)
        for b in kernel_reads(k, plan.vbuf):
            last_use[b] = t
    live: list[tuple[int, int, Buf]] = []  # (offset, size, buf), sorted by offset
    peak = 0
    total = 0
    for t, k in enumerate(plan.kernels):
        live = [x for x in live if last_use[x[2]] >= t]
        for b in kernel_writes(k):
            if b.kind != "temp" or b.offset >= 0:
                continue
            size = _align(max(b.nbytes, 1))
            total += size
            offset = 0
            for off, sz, _ in live:
                if off - offset >= size:
                    break
                offset = max(offset, off + sz)
            b.offset = offset
            live.append((offset, size, b))
            live.sort(key=lambda x: x[0])
            peak = max(peak, offset + size)
    plan.temp_bytes = peak
    plan.notes.append(f"buffer assignment: {peak} arena bytes for {total} bytes of temporaries")
    return plan
