"""Row fusion: reductions over the trailing dimensions and their elementwise consumer in
ONE kernel (XLA's "row reduction + elementwise consumers", softmax and layer norm).

After loop and input fusion (:mod:`oxla.lowering.fusion`) softmax is three kernels:
``max`` over each row into a ``[R]`` temporary, ``sum(exp(x - max))`` into another, then
the loop kernel ``exp(x - max) / sum``. :func:`fuse_rows` merges such a group into one
:class:`RowKernel` that, for each row (rows split across threads), runs every reduction
of the group over that row into registers and then writes the consumer's row, so the
``[R]`` vectors are never buffers (``temp_bytes`` 0) and the row is read from L1/L2
after its first pass.

A group is a loop kernel ``L`` and the ``reduce`` kernels whose results it reads
(transitively through each other), when:

* every reduce reduces the trailing dimensions ``[len(R), rank)`` of its operand and has
  results of the same row shape ``R`` (rank >= 1); ``L``'s shape is ``R`` followed by
  anything (``R + [C]``: softmax, layer norm) or ``R`` itself (``logsumexp``);
* the reduce results are read only by kernels of the group (a returned one is also
  written to its result buffer by the row kernel);
* every temporary a reduce reads is also read by the group's last reduce or by ``L``
  (moving the reduces to ``L`` must not keep buffers alive longer: the scheduler can
  still interleave a product and its row sum);
* every read of a reduce result inside the group is at the row's own index: the path
  from the reading expression's root goes through elementwise ops, ``broadcast_in_dim``,
  ``transpose``, unit-dimension ``reshape`` and ``reverse``/``slice`` of other
  dimensions only (checked symbolically, see
  :func:`row_local`), so the value is the register computed for the current row.

An expensive value that both a reduction and the consumer compute at the same index
(softmax's ``exp(x - max)``) is computed once: the reduction's loop stores it in the
output row, the consumer's loop loads it back before overwriting the element
(:attr:`RowKernel.stash`).

The output may take the bytes of an input temporary whose last reader the row kernel
is (buffer assignment's in-place rule, :func:`in_place_inputs`): the reductions read
only the current row, before the row is written.

Semantics are kept exactly, up to the order of a reduction, which the spec leaves
unspecified: a reduction applies its body to the row's elements in index order, except
a one-op associative body over the innermost dimension, which gets partial vector
accumulators as in :func:`oxla_backend_cpu.opkernels.emit_reduce` and, here, a tree
across the vector's lanes at the end (``reassoc`` on that one ``fadd``/``fmul``: the
standalone kernel's 16 dependent lane additions per row made layer norm latency-bound).
Elementwise ops are emitted by the same scalar emitters (no FMA contraction unless
``fast_math``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from oxla.ir import Operation, Value
from oxla.lowering import Kernel, LoopKernel, OpKernel, kernel_reads, kernel_writes

Sym = tuple  # symbolic index, per dimension: ("d", k) root dim k, ("c", 0), None unknown


@dataclass(eq=False)
class RowKernel(OpKernel):
    """Reductions over rows and their consumer, one row at a time (module doc).

    ``op`` is the first reduction (its result shape gives the rows and the parallel
    split, as for a standalone ``reduce``); ``outs[0]`` is the consumer's output, then
    one buffer per value of ``extra`` (reduce results that are also returned).

    Attributes:
        reduces: the reduce ops, in program order.
        root: the consumer's root value (shape ``R + S`` or ``R``).
        extra: reduce results written out besides the consumer's output.
        stash: an expensive value of the consumer's shape that a reduction also computes
            (softmax's ``exp(x - max)``): the reduction's loop stores it into the
            output row and the consumer's loop loads it back instead of recomputing it
            (:func:`_stash`); ``stash_reduce`` is that reduction.
    """

    reduces: list[Operation] = field(default_factory=list)
    root: Value | None = None
    extra: list[Value] = field(default_factory=list)
    stash: Value | None = None
    stash_reduce: Operation | None = None
    in_bufs: dict = field(default_factory=dict)  # input value -> its Buf (for in-place)

    def in_place_inputs(self, vbuf: dict) -> list:
        """The input buffers the output may take (:func:`in_place_inputs`)."""
        same = in_place_inputs(self)
        by_buf: dict = {}
        for v in self.inputs:
            b = vbuf[v]
            by_buf[id(b)] = (b, by_buf.get(id(b), (b, True))[1] and v in same)
        return [b for b, ok in by_buf.values() if ok]


def _rows_of(k: Kernel) -> tuple[int, ...] | None:
    """The row shape ``R`` of a reduce kernel over trailing dimensions, else None."""
    from oxla_codegen_llvm import shape_of

    if not isinstance(k, OpKernel) or isinstance(k, RowKernel) or \
            k.op.name != "stablehlo.reduce":
        return None
    op = k.op
    rows = shape_of(op.results[0])
    rank = len(shape_of(op.operands[0]))
    dims = sorted(op.attr("dimensions").values)
    if not rows or dims != list(range(len(rows), rank)):
        return None
    if any(shape_of(r) != rows for r in op.results):
        return None
    return rows


def fuse_rows(kernels: list[Kernel], vbuf: dict) -> list[Kernel]:
    """Returns ``kernels`` with every row group (module doc) replaced by one
    :class:`RowKernel` at the consumer's position."""
    from oxla_codegen_llvm import shape_of

    writer: dict[int, Kernel] = {}
    readers: dict[int, list[Kernel]] = {}
    for k in kernels:
        for b in kernel_writes(k):
            writer.setdefault(id(b), k)
        for b in {id(x): x for x in kernel_reads(k, vbuf)}.values():
            readers.setdefault(id(b), []).append(k)
    out = list(kernels)
    for L in kernels:
        if not isinstance(L, LoopKernel):
            continue
        group = _group(L, shape_of(L.root), vbuf, writer, readers, kernels)
        if not group:
            continue
        pos = [out.index(k) for k in group] + [out.index(L)]
        if not _nothing_written_between(out, min(pos), out.index(L), group, L, vbuf):
            continue
        row = _row_kernel(L, group, vbuf)
        out = [row if k is L else k for k in out if k not in group]
    return out


def _group(L: LoopKernel, shape: tuple, vbuf, writer, readers,
           kernels: list[Kernel]) -> list[OpKernel]:
    """The reduce kernels L's row kernel absorbs, in program order (maybe none)."""
    cands: list[OpKernel] = []
    rows = None
    frontier: list[Kernel] = [L]
    while frontier:
        k = frontier.pop()
        for b in kernel_reads(k, vbuf):
            w = writer.get(id(b))
            r = _rows_of(w) if w is not None else None
            if r is None or w in cands:
                continue
            if rows is None:
                if tuple(shape[:len(r)]) != r:
                    continue
                rows = r
            if r != rows:
                continue
            cands.append(w)
            frontier.append(w)
    while cands:  # drop members read outside the group or not at the row's index
        keep = set(cands) | {L}
        bad = [k for k in cands
               if any(u not in keep for b in kernel_writes(k) for u in readers.get(id(b), []))
               or any(b.kind not in ("temp", "result") for b in kernel_writes(k))]
        if not bad:  # temporaries must not outlive their last use because of the move
            last = max(cands, key=kernels.index)
            late = {id(b) for k in (last, L) for b in kernel_reads(k, vbuf)}
            late |= {id(b) for k in cands for b in kernel_writes(k)}
            bad = [k for k in cands if any(b.kind == "temp" and id(b) not in late
                                           for b in kernel_reads(k, vbuf))]
        if not bad:
            outs = {r for k in cands for r in k.op.results}
            bad = [k for k in cands if not _reads_ok(k, L, cands, outs, len(rows))]
        if not bad:
            break
        cands = [k for k in cands if k not in bad]
    return sorted(cands, key=kernels.index)


def _reads_ok(k: OpKernel, L: LoopKernel, cands: list[OpKernel], outs: set[Value],
              n_rows: int) -> bool:
    """True when every read of ``k``'s results by the group is at the row's index."""
    from oxla_codegen_llvm import shape_of

    mine = set(k.op.results)
    for reader in cands + [L]:
        roots = [(L.root, len(shape_of(L.root)))] if reader is L else \
            [(x, len(shape_of(x))) for x in reader.op.operands[:len(reader.op.results)]]
        stops = set(reader.inputs) | outs
        for root, rank in roots:
            if not row_local(root, tuple(("d", i) for i in range(rank)), stops, mine,
                              n_rows):
                return False
    return True


def row_local(root: Value, idx: Sym, stops: set[Value], targets: set[Value],
               n_rows: int) -> bool:
    """True when every path from ``root`` (read at symbolic index ``idx``) to a value of
    ``targets`` reaches it at index ``(d0, ..., d{n_rows-1})`` (or 0 on unit dims)."""
    from oxla_codegen_llvm import shape_of
    from oxla_codegen_llvm.fused import INDEX_RULES
    from oxla_codegen_llvm.scalar import EMITTERS

    seen: set[tuple] = set()
    stack = [(root, idx)]
    while stack:
        v, ix = stack.pop()
        if (v, ix) in seen:
            continue
        seen.add((v, ix))
        shape = shape_of(v)
        if v in targets:
            if ix is None or any(
                    not (e == ("d", i) or shape[i] == 1)
                    for i, e in enumerate(ix)):
                return False
            continue
        if v in stops or v.owner_op is None:
            continue
        op = v.owner_op
        for x, sx in _operand_index(op, ix, INDEX_RULES, EMITTERS):
            stack.append((x, sx))
    return True


def _operand_index(op: Operation, ix, rules, emitters) -> list[tuple[Value, Sym | None]]:
    """(operand, its symbolic index) for each operand of fused ``op`` read at ``ix``."""
    from oxla_codegen_llvm import shape_of

    out_shape = shape_of(op.results[0]) if op.results else ()
    if ix is None:
        return [(x, None) for x in op.operands]
    if op.name in emitters and op.name not in rules:
        return [(x, ix if len(shape_of(x)) == len(out_shape) else ()) for x in op.operands]
    if op.name == "stablehlo.broadcast_in_dim":
        src = op.operands[0]
        dims = op.attr("broadcast_dimensions").values
        ss = shape_of(src)
        return [(src, tuple(("c", 0) if ss[k] == 1 and out_shape[d] != 1 else ix[d]
                            for k, d in enumerate(dims)))]
    if op.name == "stablehlo.transpose":
        perm = op.attr("permutation").values
        sidx: list = [None] * len(perm)
        for i, p in enumerate(perm):
            sidx[p] = ix[i]
        return [(op.operands[0], tuple(sidx))]
    if op.name == "stablehlo.reverse":  # reversed dimensions: unknown positions
        dims = set(op.attr("dimensions").values)
        return [(op.operands[0], tuple(None if d in dims else e for d, e in enumerate(ix)))]
    if op.name == "stablehlo.slice":
        same = [st == 0 and sd == 1 for st, sd in zip(op.attr("start_indices").values,
                                                       op.attr("strides").values)]
        return [(op.operands[0], tuple(e if ok else None for e, ok in zip(ix, same)))]
    if op.name == "stablehlo.reshape":
        src = op.operands[0]
        ss = shape_of(src)
        keep = [e for e, n in zip(ix, out_shape) if n != 1]
        if [n for n in ss if n != 1] == [n for n in out_shape if n != 1]:
            it = iter(keep)
            return [(src, tuple(("c", 0) if n == 1 else next(it) for n in ss))]
    return [(x, None) for x in op.operands]


def _nothing_written_between(kernels, lo: int, hi: int, group, L, vbuf) -> bool:
    """True when no kernel between the group's first member and ``L`` writes a buffer
    the group reads (the members move to ``L``'s position)."""
    read = {id(b) for k in list(group) + [L] for b in kernel_reads(k, vbuf)}
    return not any(id(b) in read for k in kernels[lo:hi] if k not in group
                   for b in kernel_writes(k))


def _row_kernel(L: LoopKernel, group: list[OpKernel], vbuf) -> RowKernel:
    outs = {r for k in group for r in k.op.results}
    inputs: list[Value] = []
    for k in group + [L]:
        inputs += [v for v in k.inputs if v not in outs and v not in inputs]
    extra = [r for k in group for r, b in zip(k.op.results, k.outs) if b.kind != "temp"]
    fused = [op for k in group for op in k.fused_ops] + list(L.fused_ops)
    return RowKernel(L.name.replace("loop", "rows", 1) if L.name.startswith("loop") else
                     f"{L.name}_rows", group[0].op, inputs, [L.out] + [vbuf[v] for v in extra],
                     fused, [k.op for k in group], L.root, extra, *_stash(L, group, outs),
                     {v: vbuf[v] for v in inputs})


EXPENSIVE = frozenset("stablehlo." + n for n in (
    "exponential", "exponential_minus_one", "log", "log_plus_one", "logistic", "tanh",
    "power", "sine", "cosine", "tan", "atan2", "cbrt", "erf"))


def _stash(L: LoopKernel, group: list[OpKernel],
           outs: set[Value]) -> tuple[Value | None, Operation | None]:
    """The value the row kernel keeps in its output row between a reduction's loop and
    the consumer's loop and the reduction computing it, or Nones: a value of the consumer's shape and element type whose
    expression holds an :data:`EXPENSIVE` op, read by the consumer only at the output's
    own index (so element ``j`` is loaded before it is overwritten) and computed by a
    reduction over the same shape at that index; the largest such expression."""
    from oxla_codegen_llvm import shape_of

    shape = shape_of(L.root)
    full = tuple(("d", i) for i in range(len(shape)))
    stops = set(L.inputs) | outs
    mine = reached(L.root, full, stops)
    theirs: dict[Value, Operation] = {}  # the last reduction computing each value
    for k in group:
        x = k.op.operands[0]
        if shape_of(x) == shape:
            theirs.update({v: k.op for v, ixs in
                           reached(x, full, set(k.inputs) | outs).items() if full in ixs})
    best, best_cost = None, 0
    for v, ixs in mine.items():
        if ixs != {full} or v not in theirs or v is L.root or shape_of(v) != shape or \
                v.type.element_type != L.root.type.element_type:
            continue
        ops = _expression(v, stops)
        if any(op.name in EXPENSIVE for op in ops) and len(ops) > best_cost:
            best, best_cost = v, len(ops)
    return best, theirs.get(best)


def reached(root: Value, idx: Sym, stops: set[Value],
             leaves: bool = False) -> dict[Value, set]:
    """Every computed value of ``root``'s expression (``leaves``: every value of
    ``stops`` it reads instead) -> the symbolic indices it is read at (None: unknown)."""
    from oxla_codegen_llvm.fused import INDEX_RULES
    from oxla_codegen_llvm.scalar import EMITTERS

    out: dict[Value, set] = {}
    seen: set[tuple] = set()
    stack = [(root, idx)]
    while stack:
        v, ix = stack.pop()
        if (v, ix) in seen:
            continue
        seen.add((v, ix))
        stop = v in stops or v.owner_op is None
        if stop == leaves:
            out.setdefault(v, set()).add(ix)
        if not stop:
            stack.extend(_operand_index(v.owner_op, ix, INDEX_RULES, EMITTERS))
    return out


def in_place_inputs(k: RowKernel) -> set[Value]:
    """The inputs whose bytes the row kernel's output may take (buffer assignment
    checks sizes and last uses): of the output's shape and element type, read by each
    reduction only within the current row (a row's output is written after its
    reductions), by the stash's reduction only at the output's own index and not at all
    after it (the stash overwrites the row), and by the consumer only at the output's
    own index (or not at all, with a stash)."""
    from oxla_codegen_llvm import shape_of

    shape = shape_of(k.root)
    nr = len(shape_of(k.op.results[0]))
    outs = {r for op in k.reduces for r in op.results}
    stops = set(k.inputs) | outs
    full = tuple(("d", i) for i in range(len(shape)))
    rows = full[:nr]
    good = {v for v in k.inputs if shape_of(v) == shape
            and v.type.element_type == k.root.type.element_type}
    stashed = False
    for op in k.reduces:
        for x in op.operands[:len(op.results)]:
            rank = len(shape_of(x))
            reads = reached(x, tuple(("d", i) for i in range(rank)), stops, leaves=True)
            for v, ixs in reads.items():
                if stashed or (op is k.stash_reduce and ixs != {full}) or \
                        any(ix is None or ix[:nr] != rows for ix in ixs):
                    good.discard(v)
        stashed = stashed or op is k.stash_reduce
    l_stops = stops | ({k.stash} if k.stash is not None else set())
    for v, ixs in reached(k.root, full, l_stops, leaves=True).items():
        if k.stash is not None or ixs != {full}:
            good.discard(v)
    return good


def _expression(v: Value, stops: set[Value]) -> list[Operation]:
    """The ops computing ``v`` from ``stops``."""
    seen: set[Value] = set()
    ops: list[Operation] = []
    stack = [v]
    while stack:
        x = stack.pop()
        if x in seen or x in stops or x.owner_op is None:
            continue
        seen.add(x)
        ops.append(x.owner_op)
        stack.extend(x.owner_op.operands)
    return ops
