"""Neural-network ONNX ops: MatMul, Gemm, Conv, ConvTranspose, pooling, normalizations,
Softmax family, Dropout (inference)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from oxla.ir import Value
from oxla.ir import attributes as A
from oxla.ir.types import IntegerType, TensorType
from oxla_frontend_onnx.emit import (
    binary,
    broadcast_to,
    etype,
    matmul,
    min_value,
    norm_axis,
    pad,
    reduce,
    reduce_window,
    shape_of,
    splat,
)
from oxla_frontend_onnx.registry import NodeContext, rule
from oxla_frontend_onnx.rules.qdot import qdq_matmul


@rule("MatMul", since=1)
def _matmul(ctx: NodeContext) -> list[Value]:
    q = qdq_matmul(ctx, ctx.input(0), ctx.input(1))  # DequantizeLinear x DequantizeLinear
    return [q if q is not None else matmul(ctx.b, ctx.input(0), ctx.input(1))]


@rule("Gemm", since=7)
def _gemm(ctx: NodeContext) -> list[Value]:
    """``alpha * A' B' + beta * C`` with optional transposes (C broadcast)."""
    b = ctx.b
    a, w = ctx.input(0), ctx.input(1)
    ca = (0,) if ctx.attr("transA", 0) else (1,)
    cb = (1,) if ctx.attr("transB", 0) else (0,)
    y = b.dot_general(a, w, (ca, cb))
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 1.0)
    if alpha != 1.0:
        y = b.multiply(y, ctx.scalar_like(alpha, y))
    if ctx.has(2) and beta != 0.0:
        c = broadcast_to(b, ctx.input(2), shape_of(y))
        if beta != 1.0:
            c = b.multiply(c, ctx.scalar_like(beta, c))
        y = b.add(y, c)
    return [y]


def _spatial(ctx: NodeContext, x: Value, kernel: Sequence[int], strides: Sequence[int],
             dilations: Sequence[int], ceil_mode: bool = False) -> list[tuple[int, int]]:
    """Explicit (low, high) padding per spatial dim from ``pads`` or ``auto_pad``."""
    n = len(kernel)
    in_sp = shape_of(x)[2:]
    auto = ctx.attr("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out = []
        for i in range(n):
            o = math.ceil(in_sp[i] / strides[i])
            eff = (kernel[i] - 1) * dilations[i] + 1
            total = max(0, (o - 1) * strides[i] + eff - in_sp[i])
            lo = total // 2 if auto == "SAME_UPPER" else total - total // 2
            out.append((lo, total - lo))
        return out
    if auto == "VALID":
        pads = [(0, 0)] * n
    else:
        p = list(ctx.attr("pads", [0] * (2 * n)))
        pads = [(p[i], p[i + n]) for i in range(n)]
    if ceil_mode:
        fixed = []
        for i in range(n):
            eff = (kernel[i] - 1) * dilations[i] + 1
            size = in_sp[i] + pads[i][0] + pads[i][1] - eff
            o = math.ceil(size / strides[i]) + 1
            if (o - 1) * strides[i] >= in_sp[i] + pads[i][0]:
                o -= 1  # the last window must start inside the input or the low pad
            need = (o - 1) * strides[i] + eff - (in_sp[i] + pads[i][0] + pads[i][1])
            fixed.append((pads[i][0], pads[i][1] + max(0, need)))
        pads = fixed
    return pads


@rule("Conv", since=1)
def _conv(ctx: NodeContext) -> list[Value]:
    return [conv_values(ctx, ctx.input(0), ctx.input(1), ctx.input(2) if ctx.has(2) else None)]


def conv_values(ctx: NodeContext, x: Value, w: Value, bias: Value | None) -> Value:
    """ONNX Conv of ``x`` [N, C, ...] with ``w`` [M, C/group, k...] (node attributes)."""
    b = ctx.b
    ws = shape_of(w)
    n = len(ws) - 2
    kernel = list(ctx.attr("kernel_shape", ws[2:]))
    strides = list(ctx.attr("strides", [1] * n))
    dil = list(ctx.attr("dilations", [1] * n))
    pads = _spatial(ctx, x, kernel, strides, dil)
    sp = tuple(range(2, 2 + n))
    dn = A.ConvDimensionNumbers(0, 1, sp, 1, 0, sp, 0, 1, sp)
    padv = np.asarray(pads, dtype=np.int64).reshape(n, 2)
    attrs = {"dimension_numbers": dn, "window_strides": A.i64_array(strides),
             "padding": A.dense(padv, TensorType(padv.shape, IntegerType(64))),
             "lhs_dilation": A.i64_array([1] * n), "rhs_dilation": A.i64_array(dil),
             "feature_group_count": A.i64_attr(ctx.attr("group", 1)),
             "batch_group_count": A.i64_attr(1)}
    xs = shape_of(x)
    out_sp = [(xs[2 + i] + pads[i][0] + pads[i][1] - (kernel[i] - 1) * dil[i] - 1)
              // strides[i] + 1 for i in range(n)]
    out = TensorType((xs[0], ws[0], *out_sp), etype(x))
    y = b.create("stablehlo.convolution", [x, w], attrs, [out]).results[0]
    if bias is not None:
        y = b.add(y, b.broadcast_in_dim(bias, out.shape, [1]))
    return y


@rule("ConvTranspose", since=1)
def _conv_transpose(ctx: NodeContext) -> list[Value]:
    """A stride-1 convolution of the input dilated by ``strides`` with the flipped,
    in/out-swapped kernel (ONNX ConvTranspose output-shape rules)."""
    b = ctx.b
    x, w = ctx.input(0), ctx.input(1)
    xs, ws = shape_of(x), shape_of(w)
    n = len(ws) - 2
    group = ctx.attr("group", 1)
    kernel = list(ctx.attr("kernel_shape", ws[2:]))
    strides = list(ctx.attr("strides", [1] * n))
    dil = list(ctx.attr("dilations", [1] * n))
    outpad = list(ctx.attr("output_padding", [0] * n))
    eff = [(kernel[i] - 1) * dil[i] + 1 for i in range(n)]
    auto = ctx.attr("auto_pad", "NOTSET")
    if ctx.has_attr("output_shape"):
        target = list(ctx.attr("output_shape"))[-n:]
        pads = []
        for i in range(n):
            total = strides[i] * (xs[2 + i] - 1) + outpad[i] + eff[i] - target[i]
            if total < 0:  # the output is longer than the full convolution: pad the end
                outpad[i] -= total
                total = 0
            lo = total // 2 if auto != "SAME_LOWER" else total - total // 2
            if auto == "NOTSET":
                lo = total - total // 2
            pads.append((lo, total - lo))
    elif auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = []
        for i in range(n):
            total = max(0, strides[i] * (xs[2 + i] - 1) + outpad[i] + eff[i]
                        - xs[2 + i] * strides[i])
            lo = total // 2 if auto == "SAME_UPPER" else total - total // 2
            pads.append((lo, total - lo))
    else:
        p = list(ctx.attr("pads", [0] * (2 * n)))
        pads = [(p[i], p[i + n]) for i in range(n)]
    conv_pad = [(eff[i] - 1 - pads[i][0], eff[i] - 1 - pads[i][1] + outpad[i])
                for i in range(n)]
    # weight [C_in, C_out/g, k...] -> [C_out, C_in/g, k...] flipped
    cin, coutg = ws[0], ws[1]
    wk = b.create("stablehlo.reverse", [w], {"dimensions": A.i64_array(range(2, 2 + n))}
                  ).results[0]
    wk = b.reshape(wk, (group, cin // group, coutg, *ws[2:]))
    wk = b.transpose(wk, (0, 2, 1, *range(3, 3 + n)))
    wk = b.reshape(wk, (group * coutg, cin // group, *ws[2:]))
    sp = tuple(range(2, 2 + n))
    dn = A.ConvDimensionNumbers(0, 1, sp, 1, 0, sp, 0, 1, sp)
    padv = np.asarray(conv_pad, dtype=np.int64).reshape(n, 2)
    out_sp = [(xs[2 + i] - 1) * strides[i] + 1 + conv_pad[i][0] + conv_pad[i][1] - eff[i] + 1
              for i in range(n)]
    attrs = {"dimension_numbers": dn, "window_strides": A.i64_array([1] * n),
             "padding": A.dense(padv, TensorType(padv.shape, IntegerType(64))),
             "lhs_dilation": A.i64_array(strides), "rhs_dilation": A.i64_array(dil),
             "feature_group_count": A.i64_attr(group), "batch_group_count": A.i64_attr(1)}
    out = TensorType((xs[0], group * coutg, *out_sp), etype(x))
    y = b.create("stablehlo.convolution", [x, wk], attrs, [out]).results[0]
    if ctx.has(2):
        y = b.add(y, b.broadcast_in_dim(ctx.input(2), out.shape, [1]))
    return [y]


def _pool_params(ctx: NodeContext, x: Value):
    kernel = list(ctx.attr("kernel_shape"))
    n = len(kernel)
    strides = list(ctx.attr("strides", [1] * n))
    dil = list(ctx.attr("dilations", [1] * n))
    pads = _spatial(ctx, x, kernel, strides, dil, bool(ctx.attr("ceil_mode", 0)))
    return kernel, strides, dil, pads


@rule("MaxPool", since=1)
def _maxpool(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    if ctx.wants(1):
        raise ctx.fail("MaxPool's Indices output is not supported")
    kernel, strides, dil, pads = _pool_params(ctx, x)
    if ctx.attr("storage_order", 0):
        raise ctx.fail("MaxPool storage_order=1 is not supported")
    y = reduce_window(ctx.b, x, min_value(etype(x)), "maximum", [1, 1, *kernel],
                      [1, 1, *strides], [(0, 0), (0, 0), *pads], [1, 1, *dil])
    return [y]


@rule("AveragePool", since=1)
def _avgpool(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    kernel, strides, dil, pads = _pool_params(ctx, x)
    win, st = [1, 1, *kernel], [1, 1, *strides]
    full = [(0, 0), (0, 0), *pads]
    total = reduce_window(b, x, 0, "add", win, st, full, [1, 1, *dil])
    if ctx.attr("count_include_pad", 0):
        # pads given explicitly count; the ceil-mode overhang does not
        base = _spatial(ctx, x, kernel, strides, dil, False)
        ones = splat(b, 1, etype(x), shape_of(x))
        ones = pad(b, ones, [0, 0, *(p[0] for p in base)], [0, 0, *(p[1] for p in base)],
                   splat(b, 1, etype(x)))
        extra = [(0, 0), (0, 0), *((0, pads[i][1] - base[i][1]) for i in range(len(pads)))]
        count = reduce_window(b, ones, 0, "add", win, st, extra, [1, 1, *dil])
    else:
        ones = splat(b, 1, etype(x), shape_of(x))
        count = reduce_window(b, ones, 0, "add", win, st, full, [1, 1, *dil])
    return [b.divide(total, count)]


@rule("LpPool", since=11)
def _lppool(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    p = ctx.attr("p", 2)
    kernel, strides, dil, pads = _pool_params(ctx, x)
    xp = b.power(b.abs(x), ctx.scalar_like(p, x))
    s = reduce_window(b, xp, 0, "add", [1, 1, *kernel], [1, 1, *strides],
                      [(0, 0), (0, 0), *pads], [1, 1, *dil])
    return [b.power(s, ctx.scalar_like(1.0 / p, s))]


@rule("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", since=1)
def _global_pool(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    dims = list(range(2, len(shape)))
    op = ctx.node.op_type
    if op == "GlobalMaxPool":
        return [reduce(b, x, dims, "maximum", min_value(etype(x)), keepdims=True)]
    if op == "GlobalLpPool":
        p = ctx.attr("p", 2)
        s = reduce(b, b.power(b.abs(x), ctx.scalar_like(p, x)), dims, "add", 0, True)
        return [b.power(s, ctx.scalar_like(1.0 / p, s))]
    s = reduce(b, x, dims, "add", 0, keepdims=True)
    return [b.divide(s, ctx.scalar_like(int(np.prod(shape[2:])), s))]


def _channel(ctx: NodeContext, v: Value, shape: Sequence[int]) -> Value:
    return ctx.b.broadcast_in_dim(v, shape, [1])


@rule("BatchNormalization", since=7)
def _batchnorm(ctx: NodeContext) -> list[Value]:
    """Inference form (``training_mode=0``): running statistics."""
    if ctx.attr("training_mode", 0) or any(ctx.wants(i) for i in (1, 2, 3, 4)):
        raise ctx.fail("BatchNormalization in training mode is not supported (export "
                       "the model in eval mode)")
    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    scale, bias, mean, var = (ctx.input(i) for i in (1, 2, 3, 4))
    eps = ctx.scalar_like(ctx.attr("epsilon", 1e-5), var)
    inv = b.multiply(b.rsqrt(b.add(var, eps)), scale)
    y = b.multiply(b.subtract(x, _channel(ctx, mean, shape)), _channel(ctx, inv, shape))
    return [b.add(y, _channel(ctx, bias, shape))]


def moments(ctx: NodeContext, x: Value, dims: Sequence[int]) -> tuple[Value, Value]:
    """Mean and (biased) variance over ``dims``, kept as size-1 dims, broadcast back."""
    b = ctx.b
    shape = shape_of(x)
    count = int(np.prod([shape[d] for d in dims]))
    mean = b.divide(reduce(b, x, dims, "add", 0, True), splat(b, count, etype(x),
                                                            [1 if i in dims else d for i, d in
                                                             enumerate(shape)]))
    mean = broadcast_to(b, mean, shape)
    c = b.subtract(x, mean)
    var = reduce(b, b.multiply(c, c), dims, "add", 0, True)
    var = b.divide(var, ctx.scalar_like(count, var))
    return mean, broadcast_to(b, var, shape)


@rule("InstanceNormalization", since=6)
def _instancenorm(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    mean, var = moments(ctx, x, list(range(2, len(shape))))
    eps = ctx.scalar_like(ctx.attr("epsilon", 1e-5), var)
    y = b.multiply(b.subtract(x, mean), b.rsqrt(b.add(var, eps)))
    y = b.multiply(y, _channel(ctx, ctx.input(1), shape))
    return [b.add(y, _channel(ctx, ctx.input(2), shape))]


def layer_norm(ctx: NodeContext, x: Value, scale: Value | None, bias: Value | None,
               axis: int, eps: float) -> tuple[Value, Value, Value]:
    """LayerNormalization over dims ``axis..``; returns (y, mean, inv_std) (the last two
    with size-1 reduced dims)."""
    b = ctx.b
    shape = shape_of(x)
    axis = norm_axis(axis, len(shape))
    dims = list(range(axis, len(shape)))
    compute = etype(x)
    mean, var = moments(ctx, x, dims)
    inv = b.rsqrt(b.add(var, ctx.scalar_like(eps, var)))
    y = b.multiply(b.subtract(x, mean), inv)
    if scale is not None:
        y = binary(b, "multiply", y, scale)
    if bias is not None:
        y = binary(b, "add", y, bias)
    kept = [1 if i in dims else d for i, d in enumerate(shape)]
    small_mean = b.slice(mean, [0] * len(shape), kept)
    small_inv = b.slice(inv, [0] * len(shape), kept)
    del compute
    return y, small_mean, small_inv


@rule("LayerNormalization", since=17)
def _layernorm(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    y, mean, inv = layer_norm(ctx, x, ctx.input(1), ctx.input(2) if ctx.has(2) else None,
                              ctx.attr("axis", -1), ctx.attr("epsilon", 1e-5))
    return [y, mean, inv]


@rule("GroupNormalization", since=18)
def _groupnorm(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    g = ctx.attr("num_groups")
    n, c = shape[0], shape[1]
    xr = b.reshape(x, (n, g, -1 if False else int(np.prod(shape[1:])) // g))
    mean, var = moments(ctx, xr, [2])
    eps = ctx.scalar_like(ctx.attr("epsilon", 1e-5), var)
    y = b.reshape(b.multiply(b.subtract(xr, mean), b.rsqrt(b.add(var, eps))), shape)
    scale, bias = ctx.input(1), ctx.input(2)
    if shape_of(scale)[0] != c:  # opset 18: per-group scale and bias
        scale = b.reshape(b.broadcast_in_dim(scale, (g, c // g), [0]), (c,))
        bias = b.reshape(b.broadcast_in_dim(bias, (g, c // g), [0]), (c,))
    y = b.multiply(y, _channel(ctx, scale, shape))
    return [b.add(y, _channel(ctx, bias, shape))]


def softmax(ctx: NodeContext, x: Value, dims: Sequence[int], log: bool = False) -> Value:
    b = ctx.b
    shape = shape_of(x)
    m = broadcast_to(b, reduce(b, x, dims, "maximum", min_value(etype(x)), True), shape)
    z = b.subtract(x, m)
    e = b.exponential(z)
    s = broadcast_to(b, reduce(b, e, dims, "add", 0, True), shape)
    return b.subtract(z, b.log(s)) if log else b.divide(e, s)


def _softmax_dims(ctx: NodeContext, x: Value, default_axis: int, coerce: bool) -> list[int]:
    r = len(shape_of(x))
    axis = norm_axis(ctx.attr("axis", default_axis), r)
    return list(range(axis, r)) if coerce else [axis]


@rule("Softmax", "LogSoftmax", since=1)
def _softmax_old(ctx: NodeContext) -> list[Value]:
    """Before opset 13 the input is coerced to 2-D at ``axis`` (default 1)."""
    x = ctx.input(0)
    return [softmax(ctx, x, _softmax_dims(ctx, x, 1, True),
                    ctx.node.op_type == "LogSoftmax")]


@rule("Softmax", "LogSoftmax", since=13)
def _softmax13(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    return [softmax(ctx, x, _softmax_dims(ctx, x, -1, False),
                    ctx.node.op_type == "LogSoftmax")]


@rule("Hardmax", since=1)
@rule("Hardmax", since=13)
def _hardmax(ctx: NodeContext) -> list[Value]:
    from oxla_frontend_onnx.rules.reduce import arg_reduce

    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    if ctx.opset < 13:
        axis = norm_axis(ctx.attr("axis", 1), len(shape))
        flat = b.reshape(x, (int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))))
        idx = arg_reduce(ctx, flat, 1, True, False)
        io = b.iota(shape_of(flat), etype(idx), 1)
        hit = b.compare("EQ", io, broadcast_to(b, idx, shape_of(flat)), "SIGNED")
        y = b.select(hit, ctx.scalar_like(1, flat), ctx.scalar_like(0, flat))
        return [b.reshape(y, shape)]
    axis = norm_axis(ctx.attr("axis", -1), len(shape))
    idx = arg_reduce(ctx, x, axis, True, False)
    io = b.iota(shape, etype(idx), axis)
    hit = b.compare("EQ", io, broadcast_to(b, idx, shape), "SIGNED")
    return [b.select(hit, ctx.scalar_like(1, x), ctx.scalar_like(0, x))]


@rule("Dropout", since=7)
def _dropout(ctx: NodeContext) -> list[Value]:
    """Inference: the identity (and an all-true mask)."""
    if ctx.opset >= 12 and ctx.has(2):
        t = ctx.const(2)
        if t is None or bool(t):
            raise ctx.fail("Dropout with training_mode=true is not supported")
    x = ctx.input(0)
    outs: list[Value | None] = [x]
    if ctx.wants(1):
        outs.append(splat(ctx.b, True, IntegerType(1), shape_of(x)))
    return outs


@rule("LRN", since=1)
def _lrn(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    size = ctx.attr("size")
    alpha, beta, bias = ctx.attr("alpha", 1e-4), ctx.attr("beta", 0.75), ctx.attr("bias", 1.0)
    r = len(shape_of(x))
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    sq = b.multiply(x, x)
    s = reduce_window(b, sq, 0, "add", [1, size] + [1] * (r - 2), [1] * r,
                      [(0, 0), (lo, hi)] + [(0, 0)] * (r - 2))
    d = b.add(ctx.scalar_like(bias, s), b.multiply(ctx.scalar_like(alpha / size, s), s))
    return [b.divide(x, b.power(d, ctx.scalar_like(beta, d)))]
