"""Emission of :class:`~oxla_backend_cpu.rowfusion.RowKernel` (row fusion decides the
groups, this module writes their code; softmax and layer-norm rows go to the runtime's
library kernels, :mod:`oxla_backend_cpu.rowlib`)."""

from __future__ import annotations

import llvmlite.ir as ir
from oxla_codegen_llvm import FusedEmitter, linearize, llvm_type, loop_nest, shape_of
from oxla_codegen_llvm.fused import emit_region
from oxla_codegen_llvm.fused import store as store_elem

from oxla.ir import Value
from oxla.lowering import distinct_locations, location
from oxla_backend_cpu.reduction import MINMAX, freeze, reduce_parallel, vector_reduce
from oxla_backend_cpu.rowfusion import RowKernel
from oxla_backend_cpu.rowlib import emit_library_rows


def emit_rows(s, k: RowKernel, buffers: dict, outs: list) -> None:
    """Emits a :class:`RowKernel`: for each row (the rows ``[start, end)`` of the outer
    dimension when the kernel is parallel), each reduction's loop over the row into
    registers, then the consumer's row (or element, for an ``R``-shaped consumer)."""
    b = s.b
    rows = shape_of(k.op.results[0])
    nr = len(rows)
    buffers = _in_place(b.function, k, buffers, outs)
    if emit_library_rows(s, k, buffers, outs):  # softmax: the runtime's kernel
        return
    f = FusedEmitter(s, buffers)
    accs: dict[Value, ir.Value] = {}
    with b.goto_entry_block():
        for op in k.reduces:
            for r in op.results:
                accs[r] = b.alloca(llvm_type(r.type.element_type), name=f"acc{len(accs)}")
    fn, outer = b.function, None
    if len(fn.args) >= 2 and fn.args[-1].type == ir.IntType(64):  # parallel (codegen)
        fn.oxla_parallel = reduce_parallel(k.op)
        outer = (fn.args[-2], fn.args[-1])
    with loop_nest(b, rows, "row", outer=outer) as ridx:
        f.reset()
        for op in k.reduces:
            n = len(op.results)
            operands, inits = op.operands[:n], op.operands[n:]
            in_shape = shape_of(operands[0])
            ets = [r.type.element_type for r in op.results]
            for r, init in zip(op.results, inits):
                b.store(f.value_at(init, []), accs[r])
            vec = vector_reduce(op, list(range(nr, len(in_shape))), len(in_shape))
            keep = k.stash is not None and op is k.stash_reduce
            with loop_nest(b, in_shape[nr:], "red", vectorize_inner=vec) as cidx:
                f.reset()
                xs = [f.value_at(x, list(ridx) + list(cidx)) for x in operands]
                if vec and op.regions[0].blocks[0].ops[0].name in MINMAX:
                    xs = [freeze(b, x) for x in xs]  # keeps a masked max vectorizable
                if keep:  # the consumer loads it back (see RowKernel.stash)
                    idx = list(ridx) + list(cidx)
                    store_elem(s, outs[0], k.stash.type.element_type,
                               linearize(b, idx, in_shape), f.value_at(k.stash, idx))
                cur = [b.load(accs[r], typ=llvm_type(et)) for r, et in zip(op.results, ets)]
                for r, v in zip(op.results, emit_region(s, op.regions[0], cur + xs)):
                    if vec and getattr(v, "opname", "") in ("fadd", "fmul"):
                        v.flags.append("reassoc")  # lanes summed as a tree, not a chain
                    b.store(v, accs[r])
            f.reset()
            for r, et in zip(op.results, ets):
                f.scalars[r] = b.load(accs[r], typ=llvm_type(et))
        shape = shape_of(k.root)
        et = k.root.type.element_type
        if k.stash is not None:
            f.buffers[k.stash] = outs[0]
        with loop_nest(b, shape[nr:], "col") as cidx:
            f.reset()
            idx = list(ridx) + list(cidx)
            store_elem(s, outs[0], et, linearize(b, idx, shape), f.value_at(k.root, idx))
        f.buffers.pop(k.stash, None)
        f.reset()
        flat = linearize(b, ridx, rows)
        for out, v in zip(outs[1:], k.extra):
            store_elem(s, out, v.type.element_type, flat, f.scalars[v])


def _in_place(fn, k: RowKernel, buffers: dict, outs: list) -> dict:
    """When buffer assignment put the output over an input (:func:`in_place_inputs`),
    that input is read through the output's pointer, so the function's pointers are
    distinct again and get ``noalias`` (codegen left them without it)."""
    if not k.in_bufs or not k.outs:
        return buffers
    here = location(k.outs[0])
    donors = [v for v in k.inputs if location(k.in_bufs[v]) == here]
    if not donors:
        return buffers
    buffers = {v: outs[0] if v in donors else p for v, p in buffers.items()}
    rest = [k.in_bufs[v] for v in k.inputs if v not in donors] + list(k.outs)
    if distinct_locations(rest):
        for a in fn.args:
            if isinstance(a.type, ir.PointerType):
                a.add_attribute("noalias")
    return buffers
