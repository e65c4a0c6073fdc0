"""GPU kernels of ops whose every output element is computed on its own: one thread per
element in a grid-stride loop (``reduce_window``, ``dot_general`` of types no library
takes, ``map``, ``optimization_barrier``, ``real_dynamic_slice``, ``bitcast_convert``
across widths), each element computed as the spec and the interpreter say (windows and
contractions in row-major order)."""

from __future__ import annotations

import math
from collections.abc import Callable

import llvmlite.ir as ir
import numpy as np

from oxla.errors import NotSupportedError
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.lowering import OpKernel, Plan, dot_dims, dot_operand_indices
from oxla_codegen_llvm.complex import constant
from oxla_codegen_llvm.elements import from_raw_bits, mac, raw_bits
from oxla_codegen_llvm.fused import (
    FusedEmitter,
    clamp,
    emit_region,
    load,
    shape_of,
    store,
    to_index,
)
from oxla_codegen_llvm.loops import delinearize, loop_nest
from oxla_codegen_llvm.quant import dequantize, quantize
from oxla_codegen_llvm.scalar import (
    convert,
    llvm_type,
    round_to,
)
from oxla_codegen_llvm.simt.loop import launch_1d
from oxla_codegen_llvm.simt.model import I1, I64, Kernel, KernelBuilder, Param, Region, grid_stride

Compute = Callable[[Region, FusedEmitter, list], list[ir.Value]]


def _c(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def params_of(k: OpKernel, plan: Plan) -> list[Param]:
    """The inputs' buffers, then the outputs'."""
    return [Param("buf", plan.vbuf[v]) for v in k.inputs] + [Param("buf", b) for b in k.outs]


def per_element(k: OpKernel, plan: Plan, compute: Compute) -> list[Kernel]:
    """A kernel storing ``compute(region, emitter, index)[j]`` into output ``j`` at every
    index of the (common) result shape."""
    shape = shape_of(k.op.results[0])
    n = math.prod(shape)
    grid, block = launch_1d(n)
    kb = KernelBuilder(k.name, params_of(k, plan), grid, block)
    with kb.region() as r:
        if n:
            outs = r.params[len(k.inputs):]
            f = FusedEmitter(r.s, dict(zip(k.inputs, r.params[:len(k.inputs)])))
            with grid_stride(r, n) as i:
                f.reset()
                vals = compute(r, f, delinearize(r.b, i, shape))
                for out, res, v in zip(outs, k.op.results, vals):
                    store(r.s, out, res.type.element_type, i, v)
    return [kb.build()]


def window_params(op, rank: int) -> tuple[tuple[int, ...], ...]:
    """``(window_dimensions, strides, base_dilations, window_dilations, pad_lo)`` of a
    windowed op, defaults filled in (spec ``reduce_window``)."""

    def get(name: str) -> tuple[int, ...]:
        a = op.attr(name)
        v = A.to_python(a) if a is not None else None
        return tuple(int(x) for x in v) if v else (1,) * rank

    pad = op.attr("padding")
    arr = (pad.array if isinstance(pad, A.DenseElementsAttr) else
           np.asarray(A.to_python(pad) if pad is not None else [], np.int64))
    lo = tuple(int(x) for x in np.asarray(arr, np.int64).reshape(rank, 2)[:, 0]) \
        if np.size(arr) else (0,) * rank
    return (get("window_dimensions"), get("window_strides"), get("base_dilations"),
            get("window_dilations"), lo)


def reduce_window_kernel(k: OpKernel, plan: Plan) -> list[Kernel]:
    """Spec ``reduce_window``: padding and base-dilation holes read as the init value;
    each window reduced in row-major order from the init value."""
    op = k.op
    n = len(op.results)
    operands, inits = op.operands[:n], op.operands[n:]
    shape = shape_of(operands[0])
    rank = len(shape)
    wd, ws, bd, wdl, lo = window_params(op, rank)
    tys = [llvm_type(r.type.element_type) for r in op.results]

    def compute(r: Region, f: FusedEmitter, oidx: list) -> list[ir.Value]:
        b = r.b
        with b.goto_entry_block():
            accs = [b.alloca(ty) for ty in tys]
        init = [f.value_at(v, []) for v in inits]
        for a, v in zip(accs, init):
            b.store(v, a)
        with loop_nest(b, list(wd), "w") as widx:
            inside = ir.Constant(I1, 1)
            sidx = []
            for d in range(rank):
                p = b.sub(b.add(b.mul(oidx[d], _c(ws[d])), b.mul(widx[d], _c(wdl[d]))),
                          _c(lo[d]))
                q = b.sdiv(p, _c(bd[d])) if bd[d] != 1 else p
                ok = b.and_(b.icmp_signed(">=", p, _c(0)), b.icmp_signed("<", q, _c(shape[d])))
                if bd[d] != 1:
                    ok = b.and_(ok, b.icmp_signed("==", b.srem(p, _c(bd[d])), _c(0)))
                inside = b.and_(inside, ok)
                sidx.append(clamp(b, q, 0, shape[d] - 1))
            f.reset()
            xs = [b.select(inside, f.value_at(x, sidx), v) for x, v in zip(operands, init)]
            cur = [b.load(a, typ=ty) for a, ty in zip(accs, tys)]
            for a, v in zip(accs, emit_region(r.s, op.regions[0], cur + xs)):
                b.store(v, a)
        f.reset()
        return [b.load(a, typ=ty) for a, ty in zip(accs, tys)]

    if 0 in shape:
        return per_element(k, plan, lambda r, f, idx: [f.value_at(v, []) for v in inits])
    return per_element(k, plan, compute)


def acc_type(op, et: T.ElementType) -> T.ElementType:
    """The accumulation type of a dot or convolution of result type ``et``: f32 for f32
    and narrower floats, f64 for f64 (as XLA and the GEMM libraries, whose results the
    conformance files hold), i64/ui64 for integers (booleans too), the complex type
    itself for complex results."""
    if isinstance(et, T.IntegerType):
        return T.IntegerType(64, unsigned=et.unsigned)
    if isinstance(et, T.FloatType):
        return et if et.name == "f64" else T.FloatType("f32")
    if isinstance(et, T.ComplexType):
        return et
    if isinstance(et, T.QuantizedType):  # dequantized, accumulated in f64 (interpreter)
        return T.FloatType("f64")
    raise NotSupportedError(f"'{op.name}' with element type {et} has no GPU kernel yet",
                            op.loc)


def cvt(r: Region, op, x: ir.Value, src: T.ElementType, dst: T.ElementType) -> ir.Value:
    """``convert`` with quantized sides dequantized/quantized (spec
    ``dequantize_op_quantize``; the result rounded to the expressed type first, as the
    interpreter does)."""
    if isinstance(src, T.QuantizedType):
        x, src = dequantize(r.s, op, src, x), src.expressed_type
    if isinstance(dst, T.QuantizedType):
        e = dst.expressed_type
        return quantize(r.s, op, dst, round_to(r.s, e, convert(r.s, x, src, e)))
    return convert(r.s, x, src, dst)


def zero_of(acc_et: T.ElementType) -> ir.Constant:
    """0 of the accumulation type's register type."""
    if isinstance(acc_et, T.ComplexType):
        return constant(0j)
    ty = llvm_type(acc_et)
    return ir.Constant(ty, 0.0 if isinstance(acc_et, T.FloatType) else 0)


def dot_kernel(k: OpKernel, plan: Plan) -> list[Kernel]:
    """``dot_general`` (types no GEMM library takes: integers, small floats) as one thread
    per result element, the contraction in row-major order with a separate multiply and
    add in the interpreter's accumulation type (:func:`acc_type`)."""
    op = k.op
    lhs, rhs = op.operands
    et = op.results[0].type.element_type
    acc_et = acc_type(op, et)
    aty = zero_of(acc_et).type
    lb, rb, lc, rc = dot_dims(op)
    ls, rs = shape_of(lhs), shape_of(rhs)

    def compute(r: Region, f: FusedEmitter, oidx: list) -> list[ir.Value]:
        b = r.b
        with b.goto_entry_block():
            acc = b.alloca(aty)
        b.store(zero_of(acc_et), acc)
        with loop_nest(b, [ls[d] for d in lc], "k") as kidx:
            f.reset()
            li, ri = dot_operand_indices((lb, rb, lc, rc), len(ls), len(rs), oidx, kidx)
            x = cvt(r, op, f.value_at(lhs, li), lhs.type.element_type, acc_et)
            y = cvt(r, op, f.value_at(rhs, ri), rhs.type.element_type, acc_et)
            b.store(mac(r.s, acc_et, b.load(acc, typ=aty), x, y), acc)
        f.reset()
        return [cvt(r, op, b.load(acc, typ=aty), acc_et, et)]

    return per_element(k, plan, compute)


def map_kernel(k: OpKernel, plan: Plan) -> list[Kernel]:
    """Spec ``map``: the computation region applied at every index."""
    op = k.op
    return per_element(k, plan, lambda r, f, idx: emit_region(
        r.s, op.regions[0], [f.value_at(x, idx) for x in op.operands])[:1])


def barrier_kernel(k: OpKernel, plan: Plan) -> list[Kernel]:
    """``optimization_barrier``: a copy of each operand (one kernel per operand)."""
    out: list[Kernel] = []
    for j, (x, buf) in enumerate(zip(k.op.operands, k.outs)):
        n = math.prod(shape_of(x))
        et = x.type.element_type
        grid, block = launch_1d(n)
        kb = KernelBuilder(f"{k.name}.{j}" if j else k.name,
                           [Param("buf", plan.vbuf[x]), Param("buf", buf)], grid, block)
        with kb.region() as r:
            if n:
                with grid_stride(r, n) as i:
                    store(r.s, r.params[1], et, i, load(r.s, r.params[0], et, i))
        out.append(kb.build())
    return out


def real_dynamic_slice_kernel(k: OpKernel, plan: Plan) -> list[Kernel]:
    """Spec ``real_dynamic_slice`` with a static result shape, starts clamped as
    ``dynamic_slice`` clamps them (the interpreter's rule)."""
    x, starts, _, strides = k.op.operands
    shape, xs = shape_of(k.op.results[0]), shape_of(x)

    def compute(r: Region, f: FusedEmitter, idx: list) -> list[ir.Value]:
        b = r.b
        sidx = []
        for d, i in enumerate(idx):
            st = to_index(f, strides, [_c(d)])
            hi = b.sub(_c(xs[d] - 1), b.mul(_c(shape[d] - 1), st))
            start = to_index(f, starts, [_c(d)])
            start = b.select(b.icmp_signed(">", start, hi), hi, start)
            start = b.select(b.icmp_signed("<", start, _c(0)), _c(0), start)
            sidx.append(clamp(b, b.add(start, b.mul(i, st)), 0, xs[d] - 1))
        return [f.value_at(x, sidx)]

    return per_element(k, plan, compute)


def bitcast_kernel(k: OpKernel, plan: Plan) -> list[Kernel]:
    """``bitcast_convert`` between element types of different widths: byte-sized types
    copy the bytes (little-endian, as the interpreter's numpy views); sub-byte ones pack
    element ``j`` of the last dimension into bits ``[j*w, (j+1)*w)`` of the wider element
    (or unpack them), one thread per result element."""
    op = k.op
    x = op.operands[0]
    src, dst = x.type.element_type, op.results[0].type.element_type
    ws, wd = src.bitwidth, dst.bitwidth
    byte_sized = ws % 8 == 0 and wd % 8 == 0
    if x not in plan.vbuf or not byte_sized and (
            isinstance(src, T.ComplexType) or isinstance(dst, T.ComplexType)):
        raise NotSupportedError(f"'{op.name}' from {src} to {dst} (sub-byte complex or "
                                "fused operand) has no GPU kernel yet", op.loc)
    i8 = ir.IntType(8)
    params = [Param("buf", plan.vbuf[x]), Param("buf", k.outs[0])]
    if byte_sized:
        n = math.prod(shape_of(op.results[0])) * (wd // 8)
        grid, block = launch_1d(n)
        kb = KernelBuilder(k.name, params, grid, block)
        with kb.region() as r:
            if n:
                with grid_stride(r, n) as i:
                    v = r.b.load(r.b.gep(r.params[0], [i], source_etype=i8), typ=i8)
                    r.b.store(v, r.b.gep(r.params[1], [i], source_etype=i8))
        return [kb.build()]
    n = math.prod(shape_of(op.results[0]))
    wide = ir.IntType(max(ws, wd))
    grid, block = launch_1d(n)
    kb = KernelBuilder(k.name, params, grid, block)
    with kb.region() as r:
        if n:
            b = r.b
            with grid_stride(r, n) as i:
                if ws < wd:  # pack kk source elements into result element i
                    kk = wd // ws
                    acc = ir.Constant(wide, 0)
                    for j in range(kk):
                        v = load(r.s, r.params[0], src, b.add(b.mul(i, _c(kk)), _c(j)))
                        bits = b.zext(raw_bits(r.s, src, v, ws), wide)
                        acc = b.or_(acc, b.shl(bits, ir.Constant(wide, j * ws)))
                    store(r.s, r.params[1], dst, i, from_raw_bits(r.s, dst, acc))
                else:  # result element i is part i % kk of source element i // kk
                    kk = ws // wd
                    bits = raw_bits(r.s, src, load(r.s, r.params[0], src, b.udiv(i, _c(kk))),
                                     ws)
                    sh = b.zext(b.trunc(b.mul(b.urem(i, _c(kk)), _c(wd)), ir.IntType(32)),
                                wide) if ws > 32 else b.trunc(b.mul(b.urem(i, _c(kk)),
                                                                    _c(wd)), wide)
                    part = b.trunc(b.lshr(bits, sh), ir.IntType(wd))
                    store(r.s, r.params[1], dst, i, from_raw_bits(r.s, dst, part))
    return [kb.build()]
