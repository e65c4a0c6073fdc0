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
from oxla_codegen_llvm.scalar import llvm_type
from oxla_codegen_llvm.simt.loop import launch_1d
from oxla_codegen_llvm.simt.model import I1, I64, Kernel, KernelBuilder, Region, grid_stride
from oxla_codegen_llvm.simt.ops import params_of, window_params

ATOMIC_TYPES = ("f32", "f64", "i32", "i64", "ui32", "ui64")


def _c(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def atomic_add(op) -> bool:
    """True when ``op`` (a scatter) may use atomic adds (module doc)."""
    return len(op.results) == 1 and _atomic_body(op.regions[0], op.results[0].type.element_type)


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


def _selected(r: Region, f: FusedEmitter, op, sidx: list) -> ir.Value:
    """The flat operand offset the ``select`` region picks in the window of source
    element ``sidx`` (-1 when the window holds no element): the first in row-major
    order, replaced by a later one unless ``select(kept, later)`` holds."""
    b = r.b
    operand = op.operands[0]
    shape = shape_of(operand)
    wd, ws, _, _, lo = window_params(op, len(shape))
    ty = llvm_type(operand.type.element_type)
    with b.goto_entry_block():
        acc_v, acc_i = b.alloca(ty), b.alloca(I64)
    zero = ir.Constant(ty, 0.0 if isinstance(ty, ir.FloatType | ir.DoubleType) else 0)
    b.store(_c(-1), acc_i)
    b.store(zero, acc_v)
    with loop_nest(b, list(wd), "w") as widx:
        valid = ir.Constant(I1, 1)
        pos = []
        for d in range(len(shape)):
            p = b.sub(b.add(b.mul(sidx[d], _c(ws[d])), widx[d]), _c(lo[d]))
            ok = b.and_(b.icmp_signed(">=", p, _c(0)), b.icmp_signed("<", p, _c(shape[d])))
            valid = b.and_(valid, ok)
            pos.append(b.select(ok, p, _c(0)))
        f.reset()
        cv = b.select(valid, f.value_at(operand, pos), zero)
        ci = b.select(valid, linearize(b, pos, shape), _c(-1))
        ai, av = b.load(acc_i, typ=I64), b.load(acc_v, typ=ty)
        (keep,) = emit_region(r.s, op.regions[0], [av, cv])[:1]
        keep = b.select(b.icmp_signed("<", ai, _c(0)), ir.Constant(I1, 0),
                        b.select(b.icmp_signed("<", ci, _c(0)), ir.Constant(I1, 1), keep))
        b.store(b.select(keep, ai, ci), acc_i)
        b.store(b.select(keep, av, cv), acc_v)
    f.reset()
    return b.load(acc_i, typ=I64)


def select_and_scatter_kernel(k: OpKernel, plan: Plan) -> list[Kernel]:
    """Spec ``select_and_scatter``: the result filled with ``init``, then each source
    element scattered (``scatter`` region) onto the operand element its window selects;
    atomic adds when the scatter region is an add on an atomic type, else one thread in
    source order (overlapping windows collide)."""
    op = k.op
    operand, source, init = op.operands
    shape, sshape = shape_of(operand), shape_of(source)
    rt = op.results[0].type.element_type
    params = params_of(k, plan)
    n, ns = math.prod(shape), math.prod(sshape)

    def emitter(r: Region) -> FusedEmitter:
        return FusedEmitter(r.s, dict(zip(k.inputs, r.params[:len(k.inputs)])))

    grid, block = launch_1d(n)
    fill = KernelBuilder(f"{k.name}_init", params, grid, block)
    with fill.region() as r:
        if n:
            f = emitter(r)
            with grid_stride(r, n) as i:
                f.reset()
                store(r.s, r.params[-1], rt, i, f.value_at(init, []))
    if n == 0 or ns == 0:
        return [fill.build()]
    atomic = _atomic_body(op.regions[1], rt)
    grid, block = launch_1d(ns) if atomic else ((1, 1, 1), (1, 1, 1))
    upd = KernelBuilder(k.name, params, grid, block)
    with upd.region() as r:
        b = r.b
        f = emitter(r)
        out = r.params[-1]

        def one(sidx: list) -> None:
            at = _selected(r, f, op, sidx)
            src = f.value_at(source, sidx)
            with b.if_then(b.icmp_signed(">=", at, _c(0))):
                if atomic:
                    ptr = b.gep(out, [at], source_etype=src.type)
                    b.atomic_rmw("fadd" if isinstance(rt, T.FloatType) else "add", ptr, src,
                                 "monotonic")
                else:
                    cur = load(r.s, out, rt, at)
                    (v,) = emit_region(r.s, op.regions[1], [cur, src])[:1]
                    store(r.s, out, rt, at, v)
            f.reset()

        if atomic:
            with grid_stride(r, ns) as u:
                f.reset()
                one(delinearize(b, u, sshape))
        else:
            with loop_nest(b, list(sshape), "s") as sidx:
                f.reset()
                one(list(sidx))
    return [fill.build(), upd.build()]


def _atomic_body(region, et) -> bool:
    name = et.name if isinstance(et, T.FloatType) else (
        f"{'ui' if et.unsigned else 'i'}{et.width}" if isinstance(et, T.IntegerType) else "")
    ops = list(region.blocks[0].ops)
    args = list(region.blocks[0].args)
    return name in ATOMIC_TYPES and len(ops) == 2 and ops[0].name == "stablehlo.add" and \
        set(ops[0].operands) == set(args) and list(ops[1].operands) == [ops[0].results[0]]
