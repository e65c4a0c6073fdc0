"""Quantization: QuantizeLinear / DequantizeLinear (per-tensor, per-axis, blocked; int8,
uint8, int4, uint4, int16, uint16, f8 with saturation; round half to even),
DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.

Integer convolutions run as ``convolution`` on zero-point-shifted i32 operands (exact),
then one requantization in f32. Integer matrix products (MatMulInteger, QLinearMatMul,
and a MatMul of two DequantizeLinear results, the QDQ form of onnxruntime's
``quantize_static``) run as one 8-bit ``dot_general`` with an i32 result (what backends
compute as integer GEMMs) and zero-point corrections (:func:`oxla_frontend_onnx.rules.qdot.int8_matmul`), exact; a QDQ MatMul then
rescales once in f32 (:func:`oxla_frontend_onnx.rules.qdot.qdq_matmul`).
"""

from __future__ import annotations

import numpy as np

from oxla.ir import Value
from oxla.ir.types import FloatType, IntegerType, f32, i32
from oxla_frontend_onnx.emit import (
    broadcast_to,
    convert,
    etype,
    matmul,
    norm_axis,
    reduce,
    shape_of,
    splat,
)
from oxla_frontend_onnx.registry import NodeContext, element_type, rule
from oxla_frontend_onnx.rules.qdot import DEQUANTIZED, int8_matmul


def _expand_param(ctx: NodeContext, p: Value, x: Value, axis: int) -> Value:
    """A scale or zero point (scalar, per-axis 1-D, or blocked) broadcast to ``x``."""
    b = ctx.b
    xs, ps = shape_of(x), shape_of(p)
    if int(np.prod(ps)) == 1:
        return b.broadcast_in_dim(b.reshape(p, ()), xs, [])
    axis = norm_axis(axis, len(xs))
    if len(ps) == 1:
        return b.broadcast_in_dim(p, xs, [axis])
    bs = ctx.attr("block_size", 0)
    if not bs:
        raise ctx.fail(f"scale/zero point of shape {ps} needs block_size")
    nb = ps[axis]
    inter = (*ps[:axis], nb, bs, *ps[axis + 1:])
    dims = [d for d in range(len(inter)) if d != axis + 1]
    y = b.broadcast_in_dim(p, inter, dims)
    y = b.reshape(y, (*ps[:axis], nb * bs, *ps[axis + 1:]))
    return b.slice(y, [0] * len(xs), list(xs))


def _qrange(et) -> tuple[float, float]:
    if isinstance(et, IntegerType):
        if et.width == 4:
            return (0.0, 15.0) if et.unsigned else (-8.0, 7.0)
        if et.width == 2:
            return (0.0, 3.0) if et.unsigned else (-2.0, 1.0)
        info = np.iinfo(et.dtype)
        return float(info.min), float(info.max)
    fmax = float(np.finfo(et.dtype).max)
    return -fmax, fmax


def quantize(ctx: NodeContext, x: Value, scale: Value, zp: Value | None, out_et,
             axis: int, saturate: bool = True) -> Value:
    """``saturate(round_half_even(x / scale) + zp)`` in ``out_et``."""
    b = ctx.b
    xf = convert(b, x, f32)
    s = _expand_param(ctx, convert(b, scale, f32), xf, axis)
    q = b.divide(xf, s)
    if isinstance(out_et, FloatType):  # f8: the cast saturates (or not) by itself
        if zp is not None:
            q = b.add(q, _expand_param(ctx, convert(b, zp, f32), xf, axis))
        if saturate:  # +-inf too go to +-max
            lo, hi = _qrange(out_et)
            q = b.clamp(ctx.scalar_like(lo, q), q, ctx.scalar_like(hi, q))
        return b.convert(q, out_et)
    q = b.create("stablehlo.round_nearest_even", [q]).results[0]
    if zp is not None:
        q = b.add(q, _expand_param(ctx, convert(b, zp, f32), xf, axis))
    lo, hi = _qrange(out_et)
    q = b.clamp(ctx.scalar_like(lo, q), q, ctx.scalar_like(hi, q))
    return b.convert(q, out_et)


def dequantize(ctx: NodeContext, x: Value, scale: Value, zp: Value | None, axis: int,
               out_et=None) -> Value:
    """``(x - zp) * scale`` in the scale's type (or ``out_et``)."""
    b = ctx.b
    xf = convert(b, x, f32)
    if zp is not None:
        xf = b.subtract(xf, _expand_param(ctx, convert(b, zp, f32), xf, axis))
    y = b.multiply(xf, _expand_param(ctx, convert(b, scale, f32), xf, axis))
    return convert(b, y, out_et or etype(scale))


@rule("QuantizeLinear", since=10)
def _quantize(ctx: NodeContext) -> list[Value]:
    zp = ctx.input(2) if ctx.has(2) else None
    od = ctx.attr("output_dtype", 0)
    out_et = element_type(od) if od else (etype(zp) if zp is not None else IntegerType(
        8, unsigned=True))
    return [quantize(ctx, ctx.input(0), ctx.input(1), zp, out_et, ctx.attr("axis", 1),
                     bool(ctx.attr("saturate", 1)))]


@rule("DequantizeLinear", since=10)
def _dequantize(ctx: NodeContext) -> list[Value]:
    zp = ctx.input(2) if ctx.has(2) else None
    od = ctx.attr("output_dtype", 0)
    axis = ctx.attr("axis", 1)
    y = dequantize(ctx, ctx.input(0), ctx.input(1), zp, axis,
                   element_type(od) if od else None)
    if not ctx.attr("block_size", 0):
        DEQUANTIZED[y] = (ctx.input(0), ctx.input(1), zp, axis)
    return [y]


@rule("DynamicQuantizeLinear", since=11)
def _dynamic_quantize(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    r = list(range(len(shape_of(x))))
    zero = splat(b, 0, f32)
    hi = b.maximum(reduce(b, x, r, "maximum", -np.inf), zero)
    lo = b.minimum(reduce(b, x, r, "minimum", np.inf), zero)
    scale = b.divide(b.subtract(hi, lo), splat(b, 255, f32))
    zp = b.create("stablehlo.round_nearest_even", [b.divide(b.negate(lo), scale)]).results[0]
    zp = b.clamp(splat(b, 0, f32), zp, splat(b, 255, f32))
    u8 = IntegerType(8, unsigned=True)
    q = b.create("stablehlo.round_nearest_even", [b.divide(x, broadcast_to(b, scale, shape_of(
        x)))]).results[0]
    q = b.add(q, broadcast_to(b, zp, shape_of(x)))
    q = b.clamp(splat(b, 0, f32), q, splat(b, 255, f32))
    return [b.convert(q, u8), scale, b.convert(zp, u8)]


def _shifted(ctx: NodeContext, v: Value, zp_index: int, axis: int) -> Value:
    """``v - zero_point`` as i32."""
    b = ctx.b
    vi = convert(b, v, i32)
    if ctx.has(zp_index):
        z = convert(b, ctx.input(zp_index), i32)
        if int(np.prod(shape_of(z))) == 1:
            z = b.broadcast_in_dim(b.reshape(z, ()), shape_of(vi), [])
        else:
            z = b.broadcast_in_dim(z, shape_of(vi), [norm_axis(axis, len(shape_of(vi)))])
        vi = b.subtract(vi, z)
    return vi


def _zp(ctx: NodeContext, i: int) -> Value | None:
    return ctx.input(i) if ctx.has(i) else None


@rule("MatMulInteger", since=10)
def _matmul_integer(ctx: NodeContext) -> list[Value]:
    fast = int8_matmul(ctx.b, ctx.input(0), _zp(ctx, 2), ctx.input(1), _zp(ctx, 3))
    if fast is not None:
        return [fast]
    a = _shifted(ctx, ctx.input(0), 2, -2)
    w = _shifted(ctx, ctx.input(1), 3, -1)
    return [matmul(ctx.b, a, w)]


def _int_conv(ctx: NodeContext, x: Value, w: Value) -> Value:
    from oxla_frontend_onnx.rules.nn import conv_values

    return conv_values(ctx, x, w, None)


@rule("ConvInteger", since=10)
def _conv_integer(ctx: NodeContext) -> list[Value]:
    x = _shifted(ctx, ctx.input(0), 2, 1)
    w = _shifted(ctx, ctx.input(1), 3, 0)
    return [_int_conv(ctx, x, w)]


def _requant(ctx: NodeContext, acc: Value, s_in: Value, s_w: Value, s_y: Value,
             zp_y: Value | None, out_et, axis: int) -> Value:
    b = ctx.b
    accf = b.convert(acc, f32)
    sw = convert(b, s_w, f32)
    if int(np.prod(shape_of(sw))) == 1:
        sw = b.broadcast_in_dim(b.reshape(sw, ()), shape_of(accf), [])
    else:
        sw = b.broadcast_in_dim(sw, shape_of(accf), [norm_axis(axis, len(shape_of(accf)))])
    sa = b.broadcast_in_dim(b.reshape(convert(b, s_in, f32), ()), shape_of(accf), [])
    y = b.multiply(accf, b.multiply(sa, sw))
    return quantize(ctx, y, s_y, zp_y, out_et, 1)


@rule("QLinearMatMul", since=10)
def _qlinear_matmul(ctx: NodeContext) -> list[Value]:
    acc = int8_matmul(ctx.b, ctx.input(0), _zp(ctx, 2), ctx.input(3), _zp(ctx, 5))
    if acc is None:
        acc = matmul(ctx.b, _shifted(ctx, ctx.input(0), 2, -2),
                     _shifted(ctx, ctx.input(3), 5, -1))
    zp_y = ctx.input(7) if ctx.has(7) else None
    out_et = etype(zp_y) if zp_y is not None else etype(ctx.input(0))
    return [_requant(ctx, acc, ctx.input(1), ctx.input(4), ctx.input(6), zp_y, out_et, -1)]


@rule("QLinearConv", since=10)
def _qlinear_conv(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    x = _shifted(ctx, ctx.input(0), 2, 1)
    w = _shifted(ctx, ctx.input(3), 5, 0)
    acc = _int_conv(ctx, x, w)
    if ctx.has(8):
        acc = b.add(acc, b.broadcast_in_dim(convert(b, ctx.input(8), i32), shape_of(acc), [1]))
    zp_y = ctx.input(7) if ctx.has(7) else None
    out_et = etype(zp_y) if zp_y is not None else etype(ctx.input(0))
    return [_requant(ctx, acc, ctx.input(1), ctx.input(4), ctx.input(6), zp_y, out_et, 1)]
