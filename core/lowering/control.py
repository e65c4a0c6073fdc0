"""Control flow (``while``, ``if``, ``case``) as structured plans.

Each region is fused on its own (:func:`~oxla.lowering.fusion.fuse_block`, passed in as
``fuse`` so this module needs no import of fusion) into a sub-plan whose kernels a
backend's entry code runs inside a loop or a branch. Values live in buffers:

* ``while``: the results' buffers are the loop-carried state: the operands are copied in
  before the loop; the condition region reads them and writes its ``i1`` into a
  predicate buffer; the body region reads them and writes its results into fresh
  buffers, copied back into the carried ones at the end of each iteration (so a body
  that swaps two carried values is right); a result that is the body's argument at the
  same position is neither computed nor copied, and one whose kernel may write the
  carried buffer itself (:func:`_write_in_place`) is computed there, with no copy.
* ``if``/``case``: every branch writes the results' buffers directly; the predicate (or
  the index: out of range selects the last branch, spec ``case``) is read from its buffer.
* values the regions capture from enclosing blocks are materialized there and read in
  place.

Loop-invariant kernels (``while`` only, when the policy asks for them,
:meth:`~oxla.lowering.policy.Policy.hoist_invariants`): a buffer is loop-invariant when
the body cannot change it while the loop runs: a value captured from an enclosing block,
a constant, or a body argument returned unchanged at its own position (its carried
buffer is written only by the initial copy). Anything written in the body, in place or
through a copy back into a carried buffer, is not. :func:`invariant_kernels` moves the
body's pure kernels that read only such buffers (or what other moved kernels write) into
the while's ``pre`` plan, which runs once, after the initial copies and the first true
condition (so not at all when the trip count is 0); its outputs keep their own region at
the start of the scratch for the whole loop. A backend may add kernels of its own there
(the cpu backend packs invariant GEMM weights into panels once).

The sub-plans' temporaries share one scratch buffer of the enclosing plan (branches and
the condition/body pairs never run at the same time, so the scratch is as large as the
largest sub-plan's peak), placed first fit by liveness inside each sub-plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, is_dataclass

from oxla.ir import Block, Operation, Value
from oxla.lowering.plan import Buf, ControlKernel, Kernel, LoopKernel, PackKernel, Plan
from oxla.lowering.shapes import nbytes, window_update

SubFuser = Callable[[Block, dict[Value, Buf], list[Buf], str], Plan]
"""Fuses one region block: ``(block, env, results, prefix) -> Plan``."""
Hoister = Callable[[Plan, set[int]], list[Kernel]]
"""The policy's :meth:`~oxla.lowering.policy.Policy.hoist_invariants`: ``(body plan,
ids of its loop-invariant buffers) -> kernels to run once before the loop``."""

CONTROL_OPS = ("stablehlo.while", "stablehlo.if", "stablehlo.case")
ALIGN = 64


def captured_values(op: Operation) -> set[Value]:
    """The values ``op``'s regions read that are defined outside ``op``."""
    defined: set[Value] = set()
    inner = list(op.walk())
    for o in inner:
        defined.update(o.results)
        for region in o.regions:
            for block in region.blocks:
                defined.update(block.args)
    return {v for o in inner[1:] for v in o.operands if v not in defined}


def control_kernel(op: Operation, vbuf: dict[Value, Buf], name: str, counter,
                   fuse_block: SubFuser, hoist: Hoister | None = None) -> ControlKernel:
    """The kernel of one control-flow op; ``vbuf`` holds the buffers of its results and
    of every value its regions capture; ``fuse_block`` fuses each region's block;
    ``hoist`` (a ``while``'s loop-invariant kernels, module doc) is the policy's, None for
    no hoisting.

    Raises:
        NotSupportedError: an op of a region that the backend cannot compile.
    """
    outs = [vbuf[r] for r in op.results]
    init = []
    pre: Plan | None = None
    if op.name == "stablehlo.while":
        cond, body = (r.blocks[0] for r in op.regions)
        pred = Buf(f"%{next(counter)}", 1, "temp")
        cond_plan = fuse_block(cond, {**vbuf, **dict(zip(cond.args, outs))}, [pred],
                               f"{name}.cond.")
        ret = body.ops[-1].operands
        nxt = [outs[j] if v is body.args[j] else Buf(f"%{next(counter)}", nbytes(v), "temp")
               for j, v in enumerate(ret)]
        body_plan = fuse_block(body, {**vbuf, **dict(zip(body.args, outs))}, nxt,
                               f"{name}.body.")
        for j in range(len(ret)):
            if nxt[j] is not outs[j] and _write_in_place(body_plan, ret, j, nxt[j], outs[j]):
                nxt[j] = outs[j]
        for j, v in enumerate(ret):
            if nxt[j] is not outs[j]:
                body_plan.kernels.append(PackKernel(f"{name}.next{j}", v, nxt[j],
                                                    tuple(range(v.type.rank)), outs[j]))
        for j, v in enumerate(op.operands):
            init.append(PackKernel(f"{name}.init{j}", v, vbuf[v], tuple(range(v.type.rank)),
                                   outs[j]))
        plans = [cond_plan, body_plan]
        if hoist is not None:
            invariant = {id(vbuf[v]) for v in captured_values(op)} | {
                id(outs[j]) for j, v in enumerate(ret) if v is body.args[j]}
            pre_vbuf = dict(body_plan.vbuf)  # (what promoted inner kernels read, too)
            for k in body_plan.kernels:
                if isinstance(k, ControlKernel) and k.pre is not None:
                    pre_vbuf.update(k.pre.vbuf)
            hoisted = hoist(body_plan, invariant)
            if hoisted:
                pre = Plan(hoisted, pre_vbuf, [], [])
    else:
        pred = vbuf[op.operands[0]]
        plans = [fuse_block(r.blocks[0], vbuf, outs, f"{name}.branch{i}.")
                 for i, r in enumerate(op.regions)]
    scratch = Buf(f"{name}.scratch", 0, "temp")
    outer = set(map(id, vbuf.values())) | set(map(id, outs))
    start = _place_all(pre, scratch, outer) if pre is not None else 0
    size = max([_place(p, scratch, outer, start) for p in plans] + [start])
    scratch.nbytes = size
    reads: dict[int, Buf] = {}
    for b in [pred] + [b for k in init for b in k.reads(vbuf)] + \
            [b for p in plans + ([pre] if pre else []) for k in p.kernels
             for b in k.reads(p.vbuf)]:
        if b.base is None:  # not in the scratch
            reads.setdefault(id(b), b)
    return ControlKernel(name, op, op.name.split(".")[-1], pred, plans, init, outs,
                         list(reads.values()), scratch if size else None, pre)


def invariant_kernels(plan: Plan, invariant: set[int]) -> list[Kernel]:
    """Removes from ``plan`` (a ``while`` body) the kernels that compute the same thing
    in every iteration and returns them, in order (the module doc's ``pre`` plan).

    A kernel moves when it is pure (no effect, not control flow), every buffer it reads
    is a constant, one of ``invariant`` (ids of the loop-invariant buffers) or written by
    a kernel moved before it, and every buffer it writes is a fresh temporary of the
    body: written by no other kernel, read by none before it, not one of the body's
    results (so not a loop-carried buffer or what is copied into one).

    The ``pre`` kernels of a ``while`` nested in the body move out too when what they
    read is invariant here (a weight invariant in both loops is then packed once, not
    once per outer iteration): their outputs leave the inner loop's scratch (placed
    again with the outer ``pre``) and become inputs of the inner while.
    """
    writers: dict[int, int] = {}
    for k in plan.kernels:
        for b in k.writes():
            writers[id(b)] = writers.get(id(b), 0) + 1
    results = set(map(id, plan.results))
    ok = set(invariant)
    seen_reads: set[int] = set()
    moved: list[Kernel] = []
    kept: list[Kernel] = []
    for k in plan.kernels:
        if isinstance(k, ControlKernel) and k.kind == "while" and k.pre is not None:
            moved += _promote(k, ok)
        reads = k.reads(plan.vbuf)
        writes = k.writes()
        if not isinstance(k, ControlKernel) and not k.has_effect and writes and all(
                b.kind == "const" or id(b) in ok for b in reads) and all(
                b.kind == "temp" and b.base is None and writers[id(b)] == 1
                and id(b) not in results and id(b) not in seen_reads
                and id(b) not in invariant for b in writes):
            moved.append(k)
            ok.update(map(id, writes))
        else:
            kept.append(k)
        seen_reads.update(map(id, reads))
    plan.kernels[:] = kept
    return moved


def _promote(inner: ControlKernel, ok: set[int]) -> list[Kernel]:
    """Takes out of nested while ``inner``'s ``pre`` plan the kernels whose reads are in
    ``ok`` (adding their outputs to ``ok``) or written by one taken before; returns them
    (see :func:`invariant_kernels`)."""
    assert inner.pre is not None
    out: list[Kernel] = []
    kept: list[Kernel] = []
    for k in inner.pre.kernels:
        if all(b.kind == "const" or id(b) in ok for b in k.reads(inner.pre.vbuf)):
            for b in k.writes():
                if b.base is inner.scratch:
                    b.base, b.offset = None, -1
                    inner.inputs.append(b)
            ok.update(map(id, k.writes()))
            out.append(k)
        else:
            kept.append(k)
    inner.pre.kernels[:] = kept
    if not kept:
        inner.pre = None
    return out


def _write_in_place(plan: Plan, ret: list[Value], j: int, fresh: Buf, carried: Buf) -> bool:
    """Retargets the kernel of ``plan`` (a while body) that writes body result ``j``
    into ``fresh`` so that it writes the loop-carried buffer ``carried`` instead, when
    that is safe; returns whether it did.

    Safe when: result ``j`` is computed once (not returned twice), by one kernel that
    writes nothing else and is not control flow; every other kernel that reads the
    carried value (the old state) comes before that kernel in the plan (scheduling keeps
    them there: a write after a read is a dependence); and that kernel itself reads the
    carried value only as a loop kernel's same-index input
    (:meth:`~oxla.lowering.plan.LoopKernel.in_place_inputs`) or as the operand of the
    ``dynamic_update_slice`` it computes (:func:`~oxla.lowering.shapes.window_update`:
    a backend then writes only the window), or not at all. A
    128 x 256 f32 ``fori_loop`` body then runs one pass over the state per iteration
    instead of a pass and a copy.
    """
    if sum(v is ret[j] for v in ret) != 1:
        return False
    writers = [t for t, k in enumerate(plan.kernels) if any(b is fresh for b in k.writes())]
    if len(writers) != 1:
        return False
    t = writers[0]
    k = plan.kernels[t]
    if isinstance(k, ControlKernel) or len(k.writes()) != 1 or not is_dataclass(k):
        return False
    for u, other in enumerate(plan.kernels):
        if u > t and any(b is carried for b in other.reads(plan.vbuf)):
            return False
    if any(b is carried for b in k.reads(plan.vbuf)):
        if not isinstance(k, LoopKernel):
            return False
        window = window_update(k.root, k.inputs)
        if not any(b is carried for b in k.in_place_inputs(plan.vbuf)) and not (
                window is not None and [v for v in k.inputs if plan.vbuf[v] is carried]
                == [window.operands[0]]):
            return False
    before = {f.name: getattr(k, f.name) for f in fields(k)}
    for name, val in before.items():
        if val is fresh:
            setattr(k, name, carried)
        elif isinstance(val, list) and any(x is fresh for x in val):
            setattr(k, name, [carried if x is fresh else x for x in val])
    if any(b is fresh for b in k.writes()):  # it writes through something else: undo
        for name, val in before.items():
            setattr(k, name, val)
        return False
    plan.results[:] = [carried if b is fresh else b for b in plan.results]
    for v, b in list(plan.vbuf.items()):
        if b is fresh:
            plan.vbuf[v] = carried
    return True


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _place_all(plan: Plan, scratch: Buf, outer: set[int]) -> int:
    """Places every temporary ``plan`` writes (those not in ``outer``) one after the
    other from the start of ``scratch`` (they live as long as the loop); returns the
    bytes used."""
    end = 0
    for k in plan.kernels:
        for b in k.writes():
            if b.kind == "temp" and b.base is None and id(b) not in outer:
                b.base, b.offset = scratch, end
                end += _align(max(b.nbytes, 1))
    return end


def _place(plan: Plan, scratch: Buf, outer: set[int], start: int = 0) -> int:
    """Places the temporaries ``plan`` creates (those not in ``outer``) at offsets
    relative to ``scratch`` from ``start`` on, first fit by liveness; returns the end
    of the bytes used."""
    n = len(plan.kernels)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    bufs: dict[int, Buf] = {}
    for t, k in enumerate(plan.kernels):
        for b in k.writes():
            if b.kind == "temp" and b.base is None and id(b) not in outer:
                first.setdefault(id(b), t)
                last.setdefault(id(b), t)
                bufs[id(b)] = b
        for b in k.reads(plan.vbuf):
            if id(b) in bufs:
                last[id(b)] = t
    for b in plan.results:
        if id(b) in bufs:
            last[id(b)] = n
    live: list[tuple[int, int, int]] = []  # (offset, size, id)
    peak = start
    for t, k in enumerate(plan.kernels):
        live = [x for x in live if last[x[2]] >= t]
        for b in k.writes():
            if id(b) not in bufs or first[id(b)] != t or b.base is not None:
                continue
            size = _align(max(b.nbytes, 1))
            offset = start
            for off, sz, _ in live:
                if off - offset >= size:
                    break
                offset = max(offset, off + sz)
            b.base, b.offset = scratch, offset
            live.append((offset, size, id(b)))
            live.sort(key=lambda x: x[0])
            peak = max(peak, offset + size)
    return peak
