"""GPU kernels of ``scatter`` (any dimension numbers, batching dims included): a copy of
the inputs into the results, then the updates.

* **atomic** (one result, a body that is one ``add`` of its two arguments, an element
  type with an atomic add: f32, f64, 32/64-bit integers): one thread per update element,
  ``atomicrmw add`` into the result (floating-point sums in whatever order the threads
  reach them: the spec leaves the order of colliding updates unspecified);
* **serial** (every other combiner, where the order of colliding updates is visible):
  one thread applies the updates in row-major order, as the interpreter does, so the
  result is deterministic.

An update element whose result index is outside the result is skipped (spec).
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from oxla.ir import types as T
from oxla.lowering import OpKernel, Plan
from oxla_codegen_llvm.fused import FusedEmitter, emit_region, load, shape_of, store, to_index
from oxla_codegen_llvm.loops import delinearize, linearize, loop_nest
from oxla_codegen_llvm.simt.loop import launch_1d
from oxla_codegen_llvm.simt.model import I1, I64, Kernel, KernelBuilder, Region, grid_stride
from oxla_codegen_llvm.simt.ops import params_of

ATOMIC_TYPES = ("f32", "f64", "i32", "i64", "ui32", "ui64")


def _c(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def atomic_add(op) -> bool:
    """True when ``op`` (a scatter) may use atomic adds (module doc)."""
    if len(op.results) != 1:
        return False
    et = op.results[0].type.element_type
    name = et.name if isinstance(et, T.FloatType) else (
        f"{'ui' if et.unsigned else 'i'}{et.width}" if isinstance(et, T.IntegerType) else "")
    ops = list(op.regions[0].blocks[0].ops)
    args = list(op.regions[0].blocks[0].args)
    return name in ATOMIC_TYPES and len(ops) == 2 and ops[0].name == "stablehlo.add" and \
        set(ops[0].operands) == set(args) and list(ops[1].operands) == [ops[0].results[0]]


class _Scatter:
    def __init__(self, k: OpKernel):
        op = k.op
        self.k, self.op = k, op
        n = len(op.results)
        self.inputs, self.indices, self.updates = op.operands[:n], op.operands[n], \
            op.operands[n + 1:]
        self.ets = [r.type.element_type for r in op.results]
        self.shape = shape_of(self.inputs[0])
        self.ushape = shape_of(self.updates[0])
        self.ishape = shape_of(self.indices)
        d = op.attr("scatter_dimension_numbers")
        self.window_dims = [int(x) for x in d.get("update_window_dims", ())]
        inserted = [int(x) for x in d.get("inserted_window_dims", ())]
        self.in_batching = [int(x) for x in d.get("input_batching_dims", ())]
        self.idx_batching = [int(x) for x in d.get("scatter_indices_batching_dims", ())]
        self.to_operand = [int(x) for x in d.get("scatter_dims_to_operand_dims", ())]
        self.ivd = int(d.get("index_vector_dim", 0))
        self.scatter_dims = [a for a in range(len(self.ushape)) if a not in self.window_dims]
        self.window_axes = [a for a in range(len(self.shape))
                            if a not in inserted and a not in self.in_batching]

    def emitter(self, r: Region) -> FusedEmitter:
        return FusedEmitter(r.s, dict(zip(self.k.inputs, r.params[:len(self.k.inputs)])))

    def outs(self, r: Region) -> list[ir.Value]:
        return r.params[len(self.k.inputs):]

    def target(self, r: Region, f: FusedEmitter, uidx: list) -> tuple[ir.Value, ir.Value]:
        """(in bounds, flat result offset) of update element ``uidx``."""
        b = r.b
        sc = [uidx[a] for a in self.scatter_dims]
        full: list = [_c(0)] * len(self.shape)
        for kk, dim in enumerate(self.to_operand):
            iidx = list(sc)
            if self.ivd < len(self.ishape):
                iidx.insert(self.ivd, _c(kk))
            full[dim] = b.add(full[dim], to_index(f, self.indices, iidx))
        for d_in, d_start in zip(self.in_batching, self.idx_batching):
            full[d_in] = b.add(full[d_in], sc[d_start - (0 if d_start < self.ivd else 1)])
        for d_upd, d_in in zip(self.window_dims, self.window_axes):
            full[d_in] = b.add(full[d_in], uidx[d_upd])
        inside = ir.Constant(I1, 1)
        for i, size in zip(full, self.shape):
            inside = b.and_(inside, b.icmp_unsigned("<", i, _c(size)))  # < 0 is huge
        return inside, linearize(b, full, self.shape)

    def apply(self, r: Region, f: FusedEmitter, uidx: list, atomic: bool) -> None:
        b = r.b
        inside, flat = self.target(r, f, uidx)
        ups = [f.value_at(u, uidx) for u in self.updates]
        with b.if_then(inside):
            outs = self.outs(r)
            if atomic:
                et = self.ets[0]
                ptr = b.gep(outs[0], [flat], source_etype=ups[0].type)
                b.atomic_rmw("fadd" if isinstance(et, T.FloatType) else "add", ptr, ups[0],
                             "monotonic")
            else:
                cur = [load(r.s, out, et, flat) for out, et in zip(outs, self.ets)]
                for out, et, v in zip(outs, self.ets,
                                      emit_region(r.s, self.op.regions[0], cur + ups)):
                    store(r.s, out, et, flat, v)


def scatter_kernel(k: OpKernel, plan: Plan) -> list[Kernel]:
    """The copy kernel, then the update kernel (module doc)."""
    sc = _Scatter(k)
    params = params_of(k, plan)
    n = math.prod(sc.shape)
    grid, block = launch_1d(n)
    copy = KernelBuilder(f"{k.name}_copy", params, grid, block)
    with copy.region() as r:
        if n:
            f = sc.emitter(r)
            with grid_stride(r, n) as i:
                f.reset()
                idx = delinearize(r.b, i, sc.shape)
                for out, x, et in zip(sc.outs(r), sc.inputs, sc.ets):
                    store(r.s, out, et, i, f.value_at(x, idx))
    nu = math.prod(sc.ushape)
    if n == 0 or nu == 0:
        return [copy.build()]
    atomic = atomic_add(k.op)
    grid, block = launch_1d(nu) if atomic else ((1, 1, 1), (1, 1, 1))
    upd = KernelBuilder(k.name, params, grid, block)
    with upd.region() as r:
        f = sc.emitter(r)
        if atomic:
            with grid_stride(r, nu) as u:
                f.reset()
                sc.apply(r, f, delinearize(r.b, u, sc.ushape), True)
        else:
            with loop_nest(r.b, sc.ushape, "u") as uidx:
                f.reset()
                sc.apply(r, f, list(uidx), False)
                f.reset()
    return [copy.build(), upd.build()]
