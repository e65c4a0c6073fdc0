"""Scheduling: a kernel order that lowers the peak of live temporary bytes.

Fusion emits kernels in program order, which is a valid order but not a frugal one:
JAX's lowering often computes every projection first and consumes them later. The
scheduler is a greedy list scheduler over the kernels' data dependences (a kernel
reading a buffer after the kernels writing it; a kernel writing a buffer after the
earlier kernels reading or writing it, so control-flow state keeps its order; a
kernel with an effect (``Kernel.has_effect``, from the op table's traits) after the
previous one): among
the ready kernels it picks the one with the smallest *net* growth of live temporaries
(bytes it allocates minus bytes of inputs whose last reader it is), ties broken by
program order. Buffer assignment (:mod:`oxla.lowering.buffers`) then packs the
temporaries along that order.

Arguments, results and constants are not temporaries and count as zero. Plans with
more than :data:`MAX_KERNELS` kernels keep program order (the greedy pass is quadratic).
"""

from __future__ import annotations

from oxla.lowering.plan import Buf, Plan

MAX_KERNELS = 4000


def _temp_size(b: Buf) -> int:
    return b.nbytes if b.kind == "temp" and getattr(b, "base", None) is None else 0


def dependences(plan: Plan) -> list[set[int]]:
    """For each kernel (by position in ``plan.kernels``), the positions of the kernels
    that must run before it."""
    deps: list[set[int]] = [set() for _ in plan.kernels]
    last_writer: dict[int, int] = {}
    readers: dict[int, list[int]] = {}
    last_effect: int | None = None
    for t, k in enumerate(plan.kernels):
        if k.has_effect:  # effects keep program order
            if last_effect is not None:
                deps[t].add(last_effect)
            last_effect = t
        for b in k.reads(plan.vbuf):
            w = last_writer.get(id(b))
            if w is not None and w != t:
                deps[t].add(w)
            readers.setdefault(id(b), []).append(t)
        for b in k.writes():
            w = last_writer.get(id(b))
            if w is not None and w != t:
                deps[t].add(w)
            deps[t].update(r for r in readers.get(id(b), []) if r != t)
            last_writer[id(b)] = t
            readers[id(b)] = []
    return deps


def schedule(plan: Plan) -> Plan:
    """Reorders ``plan.kernels`` (see the module doc); returns the plan."""
    kernels = plan.kernels
    n = len(kernels)
    if n < 3 or n > MAX_KERNELS:
        plan.notes.append("scheduling: program order")
        return plan
    deps = dependences(plan)
    users: list[list[int]] = [[] for _ in kernels]
    for t, ds in enumerate(deps):
        for d in ds:
            users[d].append(t)
    waiting = [len(ds) for ds in deps]
    remaining_reads: dict[int, int] = {}
    for k in kernels:
        for b in {id(x): x for x in k.reads(plan.vbuf)}.values():
            remaining_reads[id(b)] = remaining_reads.get(id(b), 0) + 1
    ready = [t for t in range(n) if waiting[t] == 0]
    order: list[int] = []
    while ready:
        best, best_cost = -1, None
        for t in ready:
            k = kernels[t]
            alloc = sum(_temp_size(b) for b in k.writes())
            freed = sum(_temp_size(b) for b in {id(x): x for x in
                                                k.reads(plan.vbuf)}.values()
                        if remaining_reads[id(b)] == 1)
            cost = (alloc - freed, t)
            if best_cost is None or cost < best_cost:
                best, best_cost = t, cost
        ready.remove(best)
        order.append(best)
        for b in {id(x): x for x in kernels[best].reads(plan.vbuf)}.values():
            remaining_reads[id(b)] -= 1
        for u in users[best]:
            waiting[u] -= 1
            if waiting[u] == 0:
                ready.append(u)
    if len(order) != n:  # a cycle cannot happen; keep program order if it did
        plan.notes.append("scheduling: program order (dependence cycle)")
        return plan
    moved = sum(1 for i, t in enumerate(order) if i != t)
    plan.kernels = [kernels[t] for t in order]
    plan.notes.append(f"scheduling: greedy by live bytes, {moved} of {n} kernels moved")
    return plan
