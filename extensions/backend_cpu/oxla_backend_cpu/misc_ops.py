"""Emitters of ops with regions or irregular access: ``sort``, ``select_and_scatter``,
``map``, ``real_dynamic_slice``, ``optimization_barrier``, ``bitcast_convert`` between
widths.

* ``sort``: a stable bottom-up merge sort of a permutation per row along the sort
  dimension (``O(n log n)`` comparator calls; two ``i64[n]`` work arrays from ``malloc``
  per call), the comparator region emitted as scalar code; then every result is
  gathered through the permutation. Stable whether or not ``is_stable`` is set (the
  spec allows it).
* ``select_and_scatter``: per source element, its window's element chosen left to right
  with ``select`` (padding never chosen), then combined into the result (initialized to
  ``init_value``) with ``scatter``, in row-major source order (the interpreter's order).

Signature of every emitter: ``emit(s, k, buffers, outs)`` (see
:mod:`oxla_backend_cpu.opkernels`).
"""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np
from oxla_codegen_llvm import FusedEmitter, Scalar, linearize, llvm_type, loop_nest, shape_of
from oxla_codegen_llvm.elements import from_raw_bits, raw_bits
from oxla_codegen_llvm.fused import clamp, emit_region, to_index
from oxla_codegen_llvm.fused import load as load_elem
from oxla_codegen_llvm.fused import store as store_elem
from oxla_codegen_llvm.loops import for_range

from oxla.errors import NotSupportedError
from oxla.ir import types as T
from oxla.lowering import OpKernel
from oxla_backend_cpu.opkernels import op_emitter, window_params
from oxla_backend_cpu.topk import emit_topk, sort_layout, topk_rows

I1, I64 = ir.IntType(1), ir.IntType(64)
PTR = ir.PointerType()


def _i64(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def libc(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, ir.FunctionType(ret, args), name)


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


@op_emitter("stablehlo.sort")
def emit_sort(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """Spec ``sort`` along ``dimension`` with the comparator region (see the module doc);
    one read only through slices of its first K positions is a K-element selection
    (:mod:`oxla_backend_cpu.topk`)."""
    b, op = s.b, k.op
    top = topk_rows(op)
    if top is not None:
        emit_topk(s, op, top, buffers, outs)
        return
    xs, ets, shape, dim, n, outer = sort_layout(op)
    if 0 in shape:
        return
    malloc = libc(s.module, "malloc", PTR, [I64])
    free = libc(s.module, "free", ir.VoidType(), [PTR])
    bufs = [b.call(malloc, [_i64(8 * n)]), b.call(malloc, [_i64(8 * n)])]
    with b.goto_entry_block():
        src_p, dst_p = b.alloca(PTR), b.alloca(PTR)
        width_p, i_p, j_p = b.alloca(I64), b.alloca(I64), b.alloca(I64)

    def elem(ptr: ir.Value, i: ir.Value) -> ir.Value:
        return b.gep(ptr, [i], source_etype=I64)

    with loop_nest(b, outer, "o") as oidx:
        def at(i: ir.Value) -> ir.Value:
            idx = list(oidx)
            idx.insert(dim, i)
            return linearize(b, idx, shape)

        with for_range(b, n, "init") as i:
            b.store(i, elem(bufs[0], i))
        b.store(bufs[0], src_p)
        b.store(bufs[1], dst_p)
        b.store(_i64(1), width_p)
        head = b.append_basic_block("sort.pass")
        body = b.append_basic_block("sort.merge")
        done = b.append_basic_block("sort.done")
        b.branch(head)
        b.position_at_end(head)
        w = b.load(width_p, typ=I64)
        b.cbranch(b.icmp_signed("<", w, _i64(n)), body, done)
        b.position_at_end(body)
        src, dst = b.load(src_p, typ=PTR), b.load(dst_p, typ=PTR)
        two_w = b.mul(w, _i64(2))
        chunks = b.udiv(b.add(_i64(n - 1), two_w), two_w)
        with for_range(b, chunks, "chunk") as c:
            lo = b.mul(c, two_w)
            mid = _min(b, b.add(lo, w), _i64(n))
            hi = _min(b, b.add(lo, two_w), _i64(n))
            b.store(lo, i_p)
            b.store(mid, j_p)
            with for_range(b, hi, "m", start=lo) as m:
                iv, jv = b.load(i_p, typ=I64), b.load(j_p, typ=I64)
                has_l = b.icmp_signed("<", iv, mid)
                has_r = b.icmp_signed("<", jv, hi)
                pi = b.load(elem(src, _min(b, iv, _i64(n - 1))), typ=I64)
                pj = b.load(elem(src, _min(b, jv, _i64(n - 1))), typ=I64)
                args = []
                fi, fj = at(pi), at(pj)
                for x, et in zip(xs, ets):  # comparator(right, left): right strictly first?
                    args += [load_elem(s, buffers[x], et, fj), load_elem(s, buffers[x], et, fi)]
                (less,) = emit_region(s, op.regions[0], args)[:1]
                take_r = b.and_(has_r, b.or_(b.not_(has_l), less))
                b.store(b.select(take_r, pj, pi), elem(dst, m))
                b.store(b.add(iv, b.zext(b.not_(take_r), I64)), i_p)
                b.store(b.add(jv, b.zext(take_r, I64)), j_p)
        b.store(dst, src_p)
        b.store(src, dst_p)
        b.store(two_w, width_p)
        b.branch(head)
        b.position_at_end(done)
        src = b.load(src_p, typ=PTR)
        with for_range(b, n, "out") as i:
            p = b.load(elem(src, i), typ=I64)
            fo, fp = at(i), at(p)
            for out, x, et in zip(outs, xs, ets):
                store_elem(s, out, et, fo, load_elem(s, buffers[x], et, fp))
    for p in bufs:
        b.call(free, [p])


@op_emitter("stablehlo.select_and_scatter")
def emit_select_and_scatter(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """Spec ``select_and_scatter`` (see the module doc)."""
    b, op = s.b, k.op
    operand, source, init = op.operands
    et = operand.type.element_type
    rt = op.results[0].type.element_type
    shape, sshape = shape_of(operand), shape_of(source)
    wd, ws, _, _, lo, _ = window_params(op, len(shape))
    f = FusedEmitter(s, buffers)
    with loop_nest(b, shape, "c") as idx:
        f.reset()
        store_elem(s, outs[0], rt, linearize(b, idx, shape), f.value_at(init, []))
    if 0 in shape or 0 in sshape:
        return
    ty = llvm_type(et)
    with b.goto_entry_block():
        acc_v, acc_i = b.alloca(ty), b.alloca(I64)
    zero = ir.Constant(ty, 0.0 if isinstance(ty, ir.FloatType | ir.DoubleType) else 0)
    with loop_nest(b, sshape, "s") as sidx:
        b.store(_i64(-1), acc_i)
        b.store(zero, acc_v)
        with loop_nest(b, wd, "w") as widx:
            valid = ir.Constant(I1, 1)
            pos = []
            for d in range(len(shape)):
                p = b.sub(b.add(b.mul(sidx[d], _i64(ws[d])), widx[d]), _i64(lo[d]))
                valid = b.and_(valid, b.and_(b.icmp_signed(">=", p, _i64(0)),
                                             b.icmp_signed("<", p, _i64(shape[d]))))
                pos.append(b.select(b.icmp_signed("<", p, _i64(0)), _i64(0),
                                    _min(b, p, _i64(shape[d] - 1))))
            flat = linearize(b, pos, shape)
            cv = b.select(valid, load_elem(s, buffers[operand], et, flat), zero)
            ci = b.select(valid, flat, _i64(-1))
            ai, av = b.load(acc_i, typ=I64), b.load(acc_v, typ=ty)
            (keep,) = emit_region(s, op.regions[0], [av, cv])[:1]
            keep = b.select(b.icmp_signed("<", ai, _i64(0)), ir.Constant(I1, 0),
                            b.select(b.icmp_signed("<", ci, _i64(0)), ir.Constant(I1, 1), keep))
            b.store(b.select(keep, ai, ci), acc_i)
            b.store(b.select(keep, av, cv), acc_v)
        ai = b.load(acc_i, typ=I64)
        f.reset()
        src = f.value_at(source, sidx)
        with b.if_then(b.icmp_signed(">=", ai, _i64(0))):
            cur = load_elem(s, outs[0], rt, ai)
            (v,) = emit_region(s, op.regions[1], [cur, src])[:1]
            store_elem(s, outs[0], rt, ai, v)
        f.reset()


@op_emitter("stablehlo.map")
def emit_map(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """Spec ``map``: the computation region applied at every index."""
    b, op = s.b, k.op
    shape = shape_of(op.results[0])
    et = op.results[0].type.element_type
    f = FusedEmitter(s, buffers)
    with loop_nest(b, shape, "m") as idx:
        f.reset()
        args = [f.value_at(x, idx) for x in op.operands]
        (v,) = emit_region(s, op.regions[0], args)[:1]
        store_elem(s, outs[0], et, linearize(b, idx, shape), v)


@op_emitter("stablehlo.real_dynamic_slice")
def emit_real_dynamic_slice(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """Spec ``real_dynamic_slice`` with a static result shape: ``out[i] = x[start +
    i * stride]`` (start and strides read from their operands), ``start`` clamped into
    ``[0, dim - ((n - 1) * stride + 1)]`` as ``dynamic_slice`` clamps (what XLA compiles
    it to, and the interpreter's rule); an index is never read outside ``x``."""
    b, op = s.b, k.op
    x, starts, _, strides = op.operands
    shape, xs = shape_of(op.results[0]), shape_of(x)
    et = op.results[0].type.element_type
    f = FusedEmitter(s, buffers)
    with loop_nest(b, shape, "r") as idx:
        f.reset()
        sidx = []
        for d, i in enumerate(idx):
            st = to_index(f, strides, [_i64(d)])
            hi = b.sub(_i64(xs[d] - 1), b.mul(_i64(shape[d] - 1), st))
            start = to_index(f, starts, [_i64(d)])
            start = b.select(b.icmp_signed(">", start, hi), hi, start)
            start = b.select(b.icmp_signed("<", start, _i64(0)), _i64(0), start)
            sidx.append(clamp(b, b.add(start, b.mul(i, st)), 0, xs[d] - 1))
        store_elem(s, outs[0], et, linearize(b, idx, shape), f.value_at(x, sidx))


@op_emitter("stablehlo.optimization_barrier")
def emit_optimization_barrier(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """Identity on every operand (a barrier for the optimizer, nothing at run time)."""
    b, op = s.b, k.op
    f = FusedEmitter(s, buffers)
    for x, out in zip(op.operands, outs):
        shape = shape_of(x)
        with loop_nest(b, shape, "c") as idx:
            f.reset()
            store_elem(s, out, x.type.element_type, linearize(b, idx, shape),
                       f.value_at(x, idx))


def reshaping_bitcast(op) -> bool:
    """True for a ``bitcast_convert`` between element types of different widths (the
    result gains or loses the last dimension, spec ``bitcast_convert`` C2)."""
    return op.name == "stablehlo.bitcast_convert" and \
        op.operands[0].type.rank != op.results[0].type.rank


@op_emitter("stablehlo.bitcast_convert")
def emit_bitcast_across_widths(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """Spec ``bitcast_convert`` between widths: byte-sized element types copy the bytes
    (little-endian, as the interpreter's numpy views); sub-byte ones (``i1``, ``i4``...)
    pack element ``j`` of the last dimension into bits ``[j*w, (j+1)*w)`` of the wider
    element, or unpack them."""
    b, op = s.b, k.op
    x, r = op.operands[0], op.results[0]
    src, dst = x.type.element_type, r.type.element_type
    ws, wd = src.bitwidth, dst.bitwidth
    if ws % 8 == 0 and wd % 8 == 0:
        n = int(np.prod(shape_of(r))) * (wd // 8)
        i8 = ir.IntType(8)
        with for_range(b, n, "byte") as i:
            v = b.load(b.gep(buffers[x], [i], source_etype=i8), typ=i8)
            b.store(v, b.gep(outs[0], [i], source_etype=i8))
        return
    if isinstance(src, T.ComplexType) or isinstance(dst, T.ComplexType):
        raise NotSupportedError("'stablehlo.bitcast_convert' between complex and sub-byte "
                                "types is not supported by the cpu backend yet", op.loc)
    n_out = int(np.prod(shape_of(r)))
    wide = ir.IntType(max(ws, wd))
    if ws < wd:  # pack k = wd // ws source elements into each result element
        kk = wd // ws
        with for_range(b, n_out, "pack") as i:
            acc = ir.Constant(wide, 0)
            for j in range(kk):
                v = load_elem(s, buffers[x], src, b.add(b.mul(i, _i64(kk)), _i64(j)))
                bits = b.zext(raw_bits(s, src, v, ws), wide)
                acc = b.or_(acc, b.shl(bits, ir.Constant(wide, j * ws)))
            store_elem(s, outs[0], dst, i, from_raw_bits(s, dst, acc))
        return
    kk = ws // wd
    n_in = int(np.prod(shape_of(x)))
    with for_range(b, n_in, "unpack") as i:
        bits = raw_bits(s, src, load_elem(s, buffers[x], src, i), ws)
        for j in range(kk):
            part = b.trunc(b.lshr(bits, ir.Constant(wide, j * wd)), ir.IntType(wd))
            store_elem(s, outs[0], dst, b.add(b.mul(i, _i64(kk)), _i64(j)),
                       from_raw_bits(s, dst, part))
