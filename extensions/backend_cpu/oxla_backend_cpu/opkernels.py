"""Emitters for ops that are not loop fusions: each writes all results of its op.

* ``reduce``: any number of operands and any scalar body (the argmax pattern), the
  body's ops emitted as scalar code in the reduction loop; operand producers fused in;
* ``scatter``: results start as copies of the inputs, then every update element, in
  row-major order, combines with its target through the update region (sequential, so
  repeated indices accumulate; out-of-bounds targets are skipped, as the spec says).

Each emitter has the signature ``emit(s, k, buffers, outs)``: ``buffers`` maps the
kernel's materialized inputs to their pointers, ``outs`` holds one pointer per result.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import llvmlite.ir as ir
from oxla_codegen_llvm import FusedEmitter, Scalar, linearize, llvm_type, loop_nest, shape_of
from oxla_codegen_llvm.fused import emit_region, to_index
from oxla_codegen_llvm.fused import load as load_elem
from oxla_codegen_llvm.fused import store as store_elem
from oxla_codegen_llvm.rules import RULES

from oxla.ir import Value
from oxla.lowering import OpKernel
from oxla_backend_cpu.conv_emit import run_task, task_function
from oxla_backend_cpu.parallel import worth_parallel
from oxla_backend_cpu.reduction import (
    MINMAX,
    column_grain,
    freeze,
    interleaved_reduce,
    reduce_parallel,
    vector_reduce,
)
from oxla_backend_cpu.scan import emit_scan, prefix_scan, window_params

I64 = ir.IntType(64)
OpEmitter = Callable[[Scalar, OpKernel, dict[Value, ir.Value], list[ir.Value]], None]
PLATFORM = "cpu"
OP_EMITTERS = RULES.view("kernel", PLATFORM)
"""The cpu backend's kernel rules (``op -> rule``, read-only: register through
:func:`op_emitter`)."""


def op_emitter(name: str) -> Callable[[OpEmitter], OpEmitter]:
    """Registers the cpu kernel rule of op ``name`` in the shared rule table
    (``RULES.register(name, fn, "cpu", "kernel")``).

    Raises:
        ValueError: ``name`` has a cpu kernel rule already.
    """

    def deco(fn: OpEmitter) -> OpEmitter:
        RULES.register(name, fn, PLATFORM, "kernel")
        return fn

    return deco


def _i64(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


@op_emitter("stablehlo.reduce")
def emit_reduce(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """Spec ``reduce``: one accumulator per result, the body applied to the elements of a
    row in index order, except that a one-op body over the innermost dimension may use
    partial accumulators (:func:`vector_reduce`); rows split across threads when the
    kernel is parallel (:func:`reduce_parallel`). One that keeps the innermost dimension
    runs across columns (:func:`_reduce_across_columns`, same order)."""
    b, op = s.b, k.op
    n = len(op.results)
    operands, inits = op.operands[:n], op.operands[n:]
    dims = set(op.attr("dimensions").values)
    in_shape = shape_of(operands[0])
    out_shape = shape_of(op.results[0])
    kept = [d for d in range(len(in_shape)) if d not in dims]
    red = sorted(dims)
    ets = [r.type.element_type for r in op.results]
    f = FusedEmitter(s, buffers)
    with b.goto_entry_block():
        accs = [b.alloca(llvm_type(et), name=f"acc{j}") for j, et in enumerate(ets)]
    fn, outer = b.function, None
    if len(fn.args) >= 2 and fn.args[-1].type == I64:  # a parallel kernel (see codegen)
        fn.oxla_parallel = reduce_parallel(op)
        outer = (fn.args[-2], fn.args[-1])
    if red and red[-1] < len(in_shape) - 1:
        _reduce_across_columns(s, op, f, ets, kept, red, outer, outs)
        return
    if interleaved_reduce(in_shape, red):
        _reduce_in_memory_order(s, op, f, ets, kept, red, outer, outs)
        return
    vec = vector_reduce(op, red, len(in_shape))
    with loop_nest(b, out_shape, "o", outer=outer) as oidx:
        f.reset()
        for acc, init in zip(accs, inits):
            b.store(f.value_at(init, []), acc)
        with loop_nest(b, [in_shape[d] for d in red], "r", vectorize_inner=vec) as ridx:
            f.reset()
            idx: list = [None] * len(in_shape)
            for d, i in zip(kept, oidx):
                idx[d] = i
            for d, i in zip(red, ridx):
                idx[d] = i
            xs = [f.value_at(x, idx) for x in operands]
            if vec and op.regions[0].blocks[0].ops[0].name in MINMAX:
                xs = [freeze(b, x) for x in xs]  # masked max stays vectorizable
            cur = [b.load(a, typ=llvm_type(et)) for a, et in zip(accs, ets)]
            for a, v in zip(accs, emit_region(s, op.regions[0], cur + xs)):
                b.store(v, a)
        f.reset()
        flat = linearize(b, oidx, out_shape)
        for out, a, et in zip(outs, accs, ets):
            store_elem(s, out, et, flat, b.load(a, typ=llvm_type(et)))


def _reduce_across_columns(s: Scalar, op, f: FusedEmitter, ets: list, kept: list[int],
                           red: list[int], outer, outs: list) -> None:
    """A ``reduce`` that keeps the innermost dimension (a column reduction, ``sum`` or
    ``argmax`` over axis 0): the results themselves are the accumulators, and for each
    reduced index (row-major, as in :func:`emit_reduce`) the contiguous kept dimensions
    after the last reduced one are updated in one vectorizable loop. Each result element
    sees the same sequence of body applications as the row-by-row loop (the same
    association order), but the operand is read in memory order instead of one strided
    column at a time."""
    b = s.b
    n = len(op.results)
    operands, inits = op.operands[:n], op.operands[n:]
    in_shape = shape_of(operands[0])
    out_shape = shape_of(op.results[0])
    last = red[-1]
    okept = [d for d in kept if d < last]  # kept dims before the last reduced one
    ikept = [d for d in kept if d > last]  # the contiguous tail (at least the last dim)
    o_shape = [in_shape[d] for d in okept]
    i_shape = [in_shape[d] for d in ikept]
    o_outer = outer if okept else None
    i_outer = outer if not okept else None
    par = getattr(b.function, "oxla_parallel", None)
    if i_outer is not None and par is not None:
        b.function.oxla_parallel = (par[0], column_grain(par[1], i_shape))
    with loop_nest(b, o_shape, "o", outer=o_outer) as oi:
        f.reset()
        init_vals = [f.value_at(v, []) for v in inits]

        def flat(ii):
            return linearize(b, list(oi) + list(ii), out_shape)

        with loop_nest(b, i_shape, "i", outer=i_outer) as ii:
            at = flat(ii)
            for out, et, v in zip(outs, ets, init_vals):
                store_elem(s, out, et, at, v)
        with loop_nest(b, [in_shape[d] for d in red], "r") as ridx:
            with loop_nest(b, i_shape, "i", outer=i_outer) as ii:
                f.reset()
                idx: list = [None] * len(in_shape)
                for d, i in zip(okept + ikept, list(oi) + list(ii)):
                    idx[d] = i
                for d, i in zip(red, ridx):
                    idx[d] = i
                at = flat(ii)
                xs = [f.value_at(x, idx) for x in operands]
                cur = [load_elem(s, out, et, at) for out, et in zip(outs, ets)]
                for out, et, v in zip(outs, ets, emit_region(s, op.regions[0], cur + xs)):
                    store_elem(s, out, et, at, v)
        f.reset()


def _reduce_in_memory_order(s: Scalar, op, f: FusedEmitter, ets: list, kept: list[int],
                            red: list[int], outer, outs: list) -> None:
    """A ``reduce`` whose reduced dimensions have kept ones between them and a short
    contiguous run at the end (group norm's mean over ``(H, W, C/G)`` of
    ``[N, H, W, G, C/G]``, :func:`~oxla_backend_cpu.reduction.interleaved_reduce`):
    the operand is read once in memory order, each element combined into its result
    element, which is the accumulator. Per result element the body sees the reduced
    indices in row-major order, as in :func:`emit_reduce`'s row loop, which instead
    walked the operand once per result element, 32 bytes at a time.

    Threads split the kept dimensions before the first reduced one (one chunk when
    there are none)."""
    b = s.b
    n = len(op.results)
    operands, inits = op.operands[:n], op.operands[n:]
    in_shape = shape_of(operands[0])
    out_shape = shape_of(op.results[0])
    head = [d for d in kept if d < red[0]]
    tail = list(range(red[0], len(in_shape)))
    tail_kept = [d for d in tail if d in kept]
    if outer is not None and not head:
        b.function.oxla_parallel = (out_shape[0], out_shape[0])  # one chunk: [0, n)
    with loop_nest(b, [in_shape[d] for d in head], "o", outer=outer if head else None) as hi:
        f.reset()
        init_vals = [f.value_at(v, []) for v in inits]
        with loop_nest(b, [in_shape[d] for d in tail_kept], "k") as ki:
            at = linearize(b, list(hi) + list(ki), out_shape)
            for out, et, v in zip(outs, ets, init_vals):
                store_elem(s, out, et, at, v)
        with loop_nest(b, [in_shape[d] for d in tail], "m") as ti:
            f.reset()
            idx = list(hi) + list(ti)
            at = linearize(b, list(hi) + [ti[d - red[0]] for d in tail_kept], out_shape)
            xs = [f.value_at(x, idx) for x in operands]
            cur = [load_elem(s, out, et, at) for out, et in zip(outs, ets)]
            for out, et, v in zip(outs, ets, emit_region(s, op.regions[0], cur + xs)):
                store_elem(s, out, et, at, v)
        f.reset()


def _copy_operands(s: Scalar, buffers: dict, outs: list, inputs: list[Value], ets: list,
                   shape: tuple[int, ...]) -> None:
    """``outs[j] = inputs[j]`` (fused producers computed) over ``shape``: the first half
    of a ``scatter``, whose operand is copied before any update is applied. On oxla's
    threads when worth it (the copy is most of ``t.at[ids].set(rows)`` on a large
    table: 30 MB against 4 MB of rows), as a task over the outermost dimension that
    takes the kernel's own parameters; the updates stay on this thread, in order."""
    b = s.b
    fn = b.function
    n = shape[0] if shape else 1
    inner = math.prod(shape[1:])
    if not shape or not worth_parallel(n, inner):
        f = FusedEmitter(s, buffers)
        with loop_nest(b, shape, "c") as idx:
            f.reset()
            flat = linearize(b, idx, shape)
            for out, x, et in zip(outs, inputs, ets):
                store_elem(s, out, et, flat, f.value_at(x, idx))
        return
    pos = {a: i for i, a in enumerate(fn.args)}
    task, tb = task_function(s.module, f"{fn.name}.copy", len(fn.args))
    ts = Scalar(tb, s.module, s.target, s.fast_math)
    tf = FusedEmitter(ts, {v: task.args[pos[p]] for v, p in buffers.items()})
    touts = [task.args[pos[o]] for o in outs]
    with loop_nest(tb, shape, "c", outer=(task.args[-2], task.args[-1])) as idx:
        tf.reset()
        flat = linearize(tb, idx, shape)
        for out, x, et in zip(touts, inputs, ets):
            store_elem(ts, out, et, flat, tf.value_at(x, idx))
    tb.ret_void()
    run_task(b, s.module, task, list(fn.args), n, inner)


@op_emitter("stablehlo.scatter")
def emit_scatter(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """Spec ``scatter`` with any dimension numbers (batching dims included)."""
    b, op = s.b, k.op
    n = len(op.results)
    inputs, indices, updates = op.operands[:n], op.operands[n], op.operands[n + 1:]
    ets = [r.type.element_type for r in op.results]
    shape, ushape, ishape = shape_of(inputs[0]), shape_of(updates[0]), shape_of(indices)
    d = op.attr("scatter_dimension_numbers")
    window_dims = [int(x) for x in d.get("update_window_dims", ())]
    inserted = [int(x) for x in d.get("inserted_window_dims", ())]
    in_batching = [int(x) for x in d.get("input_batching_dims", ())]
    idx_batching = [int(x) for x in d.get("scatter_indices_batching_dims", ())]
    to_operand = [int(x) for x in d.get("scatter_dims_to_operand_dims", ())]
    ivd = int(d.get("index_vector_dim", 0))
    f = FusedEmitter(s, buffers)
    _copy_operands(s, buffers, outs, inputs, ets, shape)
    if 0 in shape:
        return
    scatter_dims = [a for a in range(len(ushape)) if a not in window_dims]
    window_axes = [a for a in range(len(shape)) if a not in inserted and a not in in_batching]
    with loop_nest(b, ushape, "u") as uidx:
        f.reset()
        sc = [uidx[a] for a in scatter_dims]
        full: list = [_i64(0)] * len(shape)
        for kk, dim in enumerate(to_operand):
            iidx = list(sc)
            if ivd < len(ishape):
                iidx.insert(ivd, _i64(kk))
            full[dim] = b.add(full[dim], to_index(f, indices, iidx))
        for d_in, d_start in zip(in_batching, idx_batching):
            full[d_in] = b.add(full[d_in], sc[d_start - (0 if d_start < ivd else 1)])
        for d_upd, d_in in zip(window_dims, window_axes):
            full[d_in] = b.add(full[d_in], uidx[d_upd])
        inside = ir.Constant(ir.IntType(1), 1)
        for i, size in zip(full, shape):
            inside = b.and_(inside, b.icmp_unsigned("<", i, _i64(size)))  # < 0 is huge
        ups = [f.value_at(u, uidx) for u in updates]
        with b.if_then(inside):
            flat = linearize(b, full, shape)
            cur = [load_elem(s, out, et, flat) for out, et in zip(outs, ets)]
            for out, et, v in zip(outs, ets, emit_region(s, op.regions[0], cur + ups)):
                store_elem(s, out, et, flat, v)
        f.reset()


@op_emitter("stablehlo.reduce_window")
def emit_reduce_window(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """Spec ``reduce_window``: padding (and base-dilation holes) read as the init value,
    as the interpreter pads with it; windows reduced in row-major order. A prefix
    window (cumsum, cummax, ...) runs as an O(n) scan (:mod:`oxla_backend_cpu.scan`)."""
    b, op = s.b, k.op
    scan = prefix_scan(op)
    if scan is not None:
        emit_scan(s, op, scan, buffers, outs)
        return
    n = len(op.results)
    operands, inits = op.operands[:n], op.operands[n:]
    shape, out_shape = shape_of(operands[0]), shape_of(op.results[0])
    rank = len(shape)
    wd, ws, bd, wdl, lo, _ = window_params(op, rank)
    ets = [r.type.element_type for r in op.results]
    f = FusedEmitter(s, buffers)
    with b.goto_entry_block():
        accs = [b.alloca(llvm_type(et), name=f"acc{j}") for j, et in enumerate(ets)]
    with loop_nest(b, out_shape, "o") as oidx:
        f.reset()
        init_vals = [f.value_at(v, []) for v in inits]
        for acc, v in zip(accs, init_vals):
            b.store(v, acc)
        with loop_nest(b, wd, "w") as widx:
            inside = ir.Constant(ir.IntType(1), 1)
            sidx = []
            for d in range(rank):
                p = b.sub(b.add(b.mul(oidx[d], _i64(ws[d])), b.mul(widx[d], _i64(wdl[d]))),
                          _i64(lo[d]))  # position in the base-dilated operand
                q = b.sdiv(p, _i64(bd[d])) if bd[d] != 1 else p
                ok = b.and_(b.icmp_signed(">=", p, _i64(0)),
                            b.icmp_signed("<", q, _i64(shape[d])))
                if bd[d] != 1:
                    ok = b.and_(ok, b.icmp_signed("==", b.srem(p, _i64(bd[d])), _i64(0)))
                inside = b.and_(inside, ok)
                q = b.select(b.icmp_signed("<", q, _i64(0)), _i64(0), q)
                sidx.append(b.select(b.icmp_signed(">=", q, _i64(shape[d])),
                                     _i64(max(shape[d] - 1, 0)), q))
            f.reset()
            if 0 in shape:
                xs = init_vals
            else:
                xs = [b.select(inside, f.value_at(x, sidx), iv)
                      for x, iv in zip(operands, init_vals)]
            cur = [b.load(a, typ=llvm_type(et)) for a, et in zip(accs, ets)]
            for a, v in zip(accs, emit_region(s, op.regions[0], cur + xs)):
                b.store(v, a)
        f.reset()
        flat = linearize(b, oidx, out_shape)
        for out, a, et in zip(outs, accs, ets):
            store_elem(s, out, et, flat, b.load(a, typ=llvm_type(et)))
