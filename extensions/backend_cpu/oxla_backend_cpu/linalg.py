"""Loop-kernel emitters for the linear algebra that BLAS does not cover.

* ``dot_general``/``dot`` on integers (wrapping), f16/bf16 and mixed or preferred
  result types: operands converted to the accumulation type, one accumulator per
  result element summed in contraction order;
* ``convolution`` (and ``dynamic_conv`` with a constant padding operand): a direct loop
  nest with any dimension numbers, strides, padding, lhs/rhs dilation, window reversal,
  ``feature_group_count`` and ``batch_group_count``. f32/f64 convolutions use im2col +
  BLAS or a direct depthwise kernel instead (:mod:`oxla_backend_cpu.conv`).

Accumulation follows the interpreter (``oxla.interpreter.rules.linalg``): integers in
64 bits (wrapping, then truncated to the result); dots of f64 results in f64, every other
float result in f32 (a fold in contraction order); convolutions of real floats in f64
(the interpreter's ``tensordot`` in f64); each rounded once at the end. No FMA
contraction (separate ``fmul``/``fadd``).

Small f32 products come here instead of BLAS (:func:`small_f32_dot`,
:func:`small_f32_conv`): their results then equal the interpreter's (a BLAS kernel sums
in its own blocked order, some ULP apart where terms cancel) at a cost that is
negligible at those sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np
from oxla_codegen_llvm import FusedEmitter, Scalar, linearize, llvm_type, loop_nest, shape_of
from oxla_codegen_llvm.elements import mac
from oxla_codegen_llvm.fused import store as store_elem
from oxla_codegen_llvm.scalar import convert

from oxla.errors import NotSupportedError
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.lowering import OpKernel, dot_dims, dot_operand_indices
from oxla_backend_cpu.opkernels import op_emitter

I1, I64 = ir.IntType(1), ir.IntType(64)


def _i64(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def acc_type(et: T.ElementType) -> T.ElementType:
    """The accumulation type of a dot/convolution whose result type is ``et``."""
    if isinstance(et, T.QuantizedType):  # dequantized, accumulated in f64 (interpreter)
        return T.FloatType("f64")
    if isinstance(et, T.IntegerType):
        return T.IntegerType(64, unsigned=et.unsigned) if et.width > 1 else et
    if isinstance(et, T.FloatType) and et.name == "f64" or isinstance(et, T.ComplexType):
        return et
    if isinstance(et, T.FloatType):
        return T.FloatType("f32")
    raise NotSupportedError(f"element type {et} is not supported by the cpu dot/convolution "
                            "kernels yet")


SMALL_DOT_MACS = 1024
"""f32 dots of at most this many multiply-adds use the loop kernel, not BLAS."""
SMALL_CONV_MACS = 1 << 12
"""f32 convolutions of at most this many multiply-adds use the loop kernel (larger ones
up to :data:`oxla_backend_cpu.wide_conv.WIDE_CONV_MACS` are computed in f64 on the
convolution kernels: the loop's one f64 sum per output is latency-bound)."""
SMALL_DIRECT_MACS = 1 << 13
"""The same bound for depthwise-like convolutions (the direct kernel's, summing the few
terms of a window in order, not BLAS's blocked order): the scalar f64 loop took 141 us
for a MobileNet's 2x6x6x192 3x3 stride-2 depthwise conv (124K multiply-adds), the
direct kernel about a tenth of that."""


def small_f32_dot(op) -> bool:
    """True for an f32 ``dot``/``dot_general`` of at most :data:`SMALL_DOT_MACS`
    multiply-adds (computed by :func:`emit_dot_loop`, as the interpreter folds it)."""
    lhs, rhs = op.operands[:2]
    if op.results[0].type.element_type != T.FloatType("f32"):
        return False
    _, rb, _, rc = dot_dims(op)
    rfree = [d for d in range(rhs.type.rank) if d not in rb + rc]
    macs = int(np.prod(shape_of(lhs), dtype=np.int64)) * \
        int(np.prod([shape_of(rhs)[d] for d in rfree], dtype=np.int64))
    return macs <= SMALL_DOT_MACS


def small_f32_conv(op, out_elems: int, k_size: int) -> bool:
    """True for an f32 convolution of at most :data:`SMALL_CONV_MACS` multiply-adds
    (``out_elems * k_size``; computed by :func:`emit_convolution` in f64)."""
    return op.results[0].type.element_type == T.FloatType("f32") and \
        out_elems * k_size <= SMALL_CONV_MACS


def conv_acc_type(et: T.ElementType) -> T.ElementType:
    """The accumulation type of a convolution with result type ``et``: f64 for real
    floats (the interpreter's), else :func:`acc_type`."""
    if isinstance(et, T.FloatType):
        return T.FloatType("f64")
    return acc_type(et)


def _cvt(s: Scalar, op, x: ir.Value, src: T.ElementType, dst: T.ElementType) -> ir.Value:
    """``convert``, quantized sides dequantized/quantized (spec
    ``dequantize_op_quantize``; the result rounded to the expressed type first, as the
    interpreter does)."""
    from oxla_codegen_llvm.quant import dequantize, quantize
    from oxla_codegen_llvm.scalar import round_to

    if isinstance(src, T.QuantizedType):
        x, src = dequantize(s, op, src, x), src.expressed_type
    if isinstance(dst, T.QuantizedType):
        e = dst.expressed_type
        return quantize(s, op, dst, round_to(s, e, convert(s, x, src, e)))
    return convert(s, x, src, dst)


def _zero(ty: ir.Type) -> ir.Constant:
    if isinstance(ty, ir.LiteralStructType):  # complex
        return ir.Constant(ty, [ir.Constant(t, 0.0) for t in ty.elements])
    return ir.Constant(ty, 0.0 if isinstance(ty, ir.FloatType | ir.DoubleType) else 0)


@op_emitter("stablehlo.dot")
@op_emitter("stablehlo.dot_general")
def emit_dot_loop(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """``dot_general`` as a loop nest (the result is ``batch..., lhs free..., rhs free...``)."""
    b, op = s.b, k.op
    lhs, rhs = op.operands
    et = op.results[0].type.element_type
    acc_et = acc_type(et)
    aty = llvm_type(acc_et)
    lb, rb, lc, rc = dot_dims(op)
    ls, rs = shape_of(lhs), shape_of(rhs)
    out_shape = shape_of(op.results[0])
    f = FusedEmitter(s, buffers)
    with b.goto_entry_block():
        acc = b.alloca(aty, name="acc")
    with loop_nest(b, out_shape, "o") as oidx:
        b.store(_zero(aty), acc)
        with loop_nest(b, [ls[d] for d in lc], "k") as kidx:
            f.reset()
            li, ri = dot_operand_indices((lb, rb, lc, rc), len(ls), len(rs), oidx, kidx)
            x = _cvt(s, op, f.value_at(lhs, li), lhs.type.element_type, acc_et)
            y = _cvt(s, op, f.value_at(rhs, ri), rhs.type.element_type, acc_et)
            b.store(mac(s, acc_et, b.load(acc, typ=aty), x, y), acc)
        f.reset()
        store_elem(s, outs[0], et, linearize(b, oidx, out_shape),
                   _cvt(s, op, b.load(acc, typ=aty), acc_et, et))


def _ints(op, name: str, default: tuple) -> tuple:
    a = op.attr(name)
    v = A.to_python(a) if a is not None else None
    return tuple(v) if v else default


@dataclass(frozen=True)
class ConvDims:
    """A ``convolution``'s dimension numbers as ints (spec "convolution": input batch,
    feature and spatial dimensions; kernel input/output feature and spatial; output
    batch, feature and spatial), for the rewrites before fusion."""

    ib: int
    if_: int
    isd: tuple[int, ...]
    kif: int
    kof: int
    ksd: tuple[int, ...]
    ob: int
    of: int
    osd: tuple[int, ...]

    @staticmethod
    def of_op(op) -> ConvDims:
        dn = op.attr("dimension_numbers")
        return ConvDims(int(dn.input_batch_dimension), int(dn.input_feature_dimension),
                        tuple(int(d) for d in dn.input_spatial_dimensions),
                        int(dn.kernel_input_feature_dimension),
                        int(dn.kernel_output_feature_dimension),
                        tuple(int(d) for d in dn.kernel_spatial_dimensions),
                        int(dn.output_batch_dimension), int(dn.output_feature_dimension),
                        tuple(int(d) for d in dn.output_spatial_dimensions))

    def output_perm(self) -> list[int]:
        """The permutation taking ``[batch, spatial..., feature]`` to the output layout
        (``transpose``'s ``permutation``)."""
        cur = {self.ob: 0, self.of: len(self.osd) + 1,
               **{d: 1 + i for i, d in enumerate(self.osd)}}
        return [cur[d] for d in range(len(self.osd) + 2)]


def static_float_conv(op) -> bool:
    """True for a ``convolution`` of two operands, static shapes and one real float
    element type (operands and result): what the cpu rewrites before fusion take."""
    if op.name != "stablehlo.convolution" or len(op.operands) != 2:
        return False
    vals = (*op.operands, op.results[0])
    et = vals[-1].type.element_type
    return all(v.type.is_static and v.type.element_type == et for v in vals) and \
        isinstance(et, T.FloatType)


def to_output_layout(b, y, dims: ConvDims):
    """``y`` ``[batch, spatial..., feature]`` transposed to the layout of the
    convolution ``dims`` describes (no op when it is that layout already)."""
    perm = dims.output_perm()
    return y if perm == list(range(len(perm))) else b.transpose(y, perm)


def conv_padding(op, ns: int) -> np.ndarray:
    """A ``convolution``'s ``padding`` as an ``[ns, 2]`` int64 array (``lo``, ``hi`` per
    spatial dimension; zeros when the attribute is absent)."""
    a = op.attr("padding")
    pad = (a.array if isinstance(a, A.DenseElementsAttr) else
           np.asarray(A.to_python(a) if a is not None else [], np.int64))
    pad = np.asarray(pad, np.int64)
    return pad.reshape(ns, 2) if pad.size else np.zeros((ns, 2), np.int64)


def conv_params(op, ns: int) -> tuple:
    """``(strides, pad_lo, lhs_dilation, rhs_dilation, reversal, fgc, bgc)``.

    Raises:
        NotSupportedError: a ``dynamic_conv`` whose padding is not a constant.
    """
    ones = (1,) * ns
    if op.name == "stablehlo.dynamic_conv":
        src = op.operands[2].owner_op
        if src is None or src.name != "stablehlo.constant":
            raise NotSupportedError("'stablehlo.dynamic_conv' with a padding that is not a "
                                    "constant is not supported by the cpu backend", op.loc)
        pad = np.asarray(src.attr("value").array, np.int64)
        pad = np.asarray(pad, np.int64).reshape(ns, 2) if np.size(pad) \
            else np.zeros((ns, 2), np.int64)
    else:
        pad = conv_padding(op, ns)
    fgc = int(A.to_python(op.attr("feature_group_count")) or 1) \
        if op.attr("feature_group_count") is not None else 1
    bgc = int(A.to_python(op.attr("batch_group_count")) or 1) \
        if op.attr("batch_group_count") is not None else 1
    return (tuple(int(x) for x in _ints(op, "window_strides", ones)),
            tuple(int(x) for x in pad[:, 0]),
            tuple(int(x) for x in _ints(op, "lhs_dilation", ones)),
            tuple(int(x) for x in _ints(op, "rhs_dilation", ones)),
            tuple(bool(x) for x in _ints(op, "window_reversal", (False,) * ns)), fgc, bgc)


@op_emitter("stablehlo.dynamic_conv")
@op_emitter("stablehlo.convolution")
def emit_convolution(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """Spec ``convolution``: out[b, o, f] = sum over the group's input features and the
    window of lhs[padded, dilated position] * rhs[window position]."""
    b, op = s.b, k.op
    lhs, rhs = op.operands[:2]
    dn = op.attr("dimension_numbers")
    et = op.results[0].type.element_type
    acc_et = conv_acc_type(et)
    aty = llvm_type(acc_et)
    ls, ks, out_shape = shape_of(lhs), shape_of(rhs), shape_of(op.results[0])
    ns = len(ls) - 2
    strides, lo, ldil, rdil, rev, fgc, bgc = conv_params(op, ns)
    cg = ks[dn.kernel_input_feature_dimension]  # input features per group
    n_out = ks[dn.kernel_output_feature_dimension]
    og = n_out // (fgc * bgc)  # output features per group
    nb = ls[dn.input_batch_dimension] // bgc
    ksp = [ks[d] for d in dn.kernel_spatial_dimensions]
    isp = [ls[d] for d in dn.input_spatial_dimensions]
    f = FusedEmitter(s, buffers)
    with b.goto_entry_block():
        acc = b.alloca(aty, name="acc")
    with loop_nest(b, out_shape, "o") as oidx:
        b.store(_zero(aty), acc)
        feat = oidx[dn.output_feature_dimension]
        group = b.udiv(feat, _i64(max(og, 1)))
        batch = oidx[dn.output_batch_dimension]
        if bgc > 1:
            batch = b.add(b.mul(group, _i64(nb)), batch)
        with loop_nest(b, [cg] + ksp, "w") as widx:
            ci, kw = widx[0], widx[1:]
            inside = ir.Constant(I1, 1)
            li: list = [None] * len(ls)
            ki: list = [None] * len(ks)
            li[dn.input_batch_dimension] = batch
            li[dn.input_feature_dimension] = b.add(b.mul(group, _i64(cg)), ci) if fgc > 1 \
                else ci
            ki[dn.kernel_input_feature_dimension] = ci
            ki[dn.kernel_output_feature_dimension] = feat
            for i in range(ns):
                o = oidx[dn.output_spatial_dimensions[i]]
                p = b.sub(b.add(b.mul(o, _i64(strides[i])), b.mul(kw[i], _i64(rdil[i]))),
                          _i64(lo[i]))
                q = b.sdiv(p, _i64(ldil[i])) if ldil[i] != 1 else p
                ok = b.and_(b.icmp_signed(">=", p, _i64(0)), b.icmp_signed("<", q, _i64(isp[i])))
                if ldil[i] != 1:
                    ok = b.and_(ok, b.icmp_signed("==", b.srem(p, _i64(ldil[i])), _i64(0)))
                inside = b.and_(inside, ok)
                li[dn.input_spatial_dimensions[i]] = q
                ki[dn.kernel_spatial_dimensions[i]] = \
                    b.sub(_i64(ksp[i] - 1), kw[i]) if rev[i] else kw[i]
            f.reset()
            with b.if_then(inside):
                x = _cvt(s, op, f.value_at(lhs, li), lhs.type.element_type, acc_et)
                y = _cvt(s, op, f.value_at(rhs, ki), rhs.type.element_type, acc_et)
                b.store(mac(s, acc_et, b.load(acc, typ=aty), x, y), acc)
            f.reset()
        f.reset()
        store_elem(s, outs[0], et, linearize(b, oidx, out_shape),
                   _cvt(s, op, b.load(acc, typ=aty), acc_et, et))
