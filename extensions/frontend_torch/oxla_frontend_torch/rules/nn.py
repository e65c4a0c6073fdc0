"""Neural-network ATen ops: matmuls, convolution, normalization, pooling, softmax, attention."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from oxla.errors import NotSupportedError
from oxla.ir import Value
from oxla.ir import attributes as A
from oxla.ir.types import IntegerType, TensorType, is_float
from oxla_frontend_torch.decompositions import adaptive_avg_pool
from oxla_frontend_torch.registry import (
    LoweringContext,
    Unavailable,
    etype,
    lowering,
    norm_dim,
    shape_of,
)
from oxla_frontend_torch.rules.decomposed import decomposed

aten = torch.ops.aten


def _matmul(ctx: LoweringContext, a: Value, b: Value) -> Value:
    """Batched matmul over leading dims of equal rank: ``[..., m, k] x [..., k, n]``."""
    r = len(shape_of(a))
    batch = tuple(range(r - 2))
    return ctx.b.dot_general(a, b, contracting=((r - 1,), (r - 2,)), batching=(batch, batch))


@lowering(aten.mm.default, aten.bmm.default)
def _mm(ctx: LoweringContext, a: Value, b: Value) -> Value:
    return _matmul(ctx, a, b)


@lowering(aten.addmm.default)
def _addmm(ctx: LoweringContext, bias: Value, a: Value, b: Value, *, beta: Any = 1,
           alpha: Any = 1) -> Value:
    out = ctx.out_type()
    p = _matmul(ctx, a, b)
    if alpha != 1:
        p = ctx.b.multiply(p, ctx.broadcast_to(ctx.const(alpha, out.element_type), out.shape))
    bias = ctx.broadcast_to(ctx.convert(bias, out.element_type), out.shape)
    if beta != 1:
        bias = ctx.b.multiply(bias, ctx.broadcast_to(ctx.const(beta, out.element_type),
                                                     out.shape))
    return ctx.b.add(p, bias) if beta != 0 else p


@lowering(aten.baddbmm.default)
def _baddbmm(ctx: LoweringContext, bias: Value, a: Value, b: Value, *, beta: Any = 1,
             alpha: Any = 1) -> Value:
    return _addmm(ctx, bias, a, b, beta=beta, alpha=alpha)


@lowering(aten.matmul.default)
def _matmul_rule(ctx: LoweringContext, a: Value, b: Value) -> Value:
    """torch.matmul: vectors promoted, batch dims broadcast."""
    out = ctx.out_type()
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) == 1:
        a = ctx.reshape(a, (1, sa[0]))
    if len(sb) == 1:
        b = ctx.reshape(b, (sb[0], 1))
    sa, sb = shape_of(a), shape_of(b)
    batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    a = ctx.broadcast_to(a, (*batch, *sa[-2:]))
    b = ctx.broadcast_to(b, (*batch, *sb[-2:]))
    return ctx.reshape(_matmul(ctx, a, b), out.shape)


@lowering(aten.convolution.default)
def _convolution(ctx: LoweringContext, x: Value, w: Value, bias: Value | None,
                 stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                 transposed: bool, output_padding: Sequence[int], groups: int) -> Value:
    """N-d convolution, NC(spatial) layout, ``feature_group_count = groups`` (spec 4.x)."""
    if transposed:  # ConvTranspose: an input-dilated convolution, see conv_transpose
        from oxla_frontend_torch.rules.resample import conv_transpose

        return conv_transpose(ctx, x, w, bias, stride, padding, dilation, output_padding,
                              groups)
    out = ctx.out_type()
    n = len(shape_of(x)) - 2
    sp = tuple(range(2, 2 + n))
    dn = A.ConvDimensionNumbers(0, 1, sp, 1, 0, sp, 0, 1, sp)

    def per_dim(v: Sequence[int]) -> list[int]:
        v = list(v)
        return v * n if len(v) == 1 else v

    pad = np.asarray([[p, p] for p in per_dim(padding)], dtype=np.int64).reshape(n, 2)
    attrs = {"dimension_numbers": dn, "window_strides": A.i64_array(per_dim(stride)),
             "padding": A.dense(pad, TensorType(pad.shape, IntegerType(64))),
             "lhs_dilation": A.i64_array([1] * n),
             "rhs_dilation": A.i64_array(per_dim(dilation)),
             "feature_group_count": A.i64_attr(groups), "batch_group_count": A.i64_attr(1)}
    y = ctx.b.create("stablehlo.convolution", [x, w], attrs, [out]).results[0]
    if bias is not None:
        y = ctx.b.add(y, ctx.broadcast_in_dim(bias, out.shape, [1], y))
    return y


def _channel(ctx: LoweringContext, v: Value, like: Value) -> Value:
    """Per-channel ``v`` (``[C]``) broadcast along dim 1 to the shape of ``like``."""
    return ctx.broadcast_in_dim(v, shape_of(like), [1], like)


def _batch_norm(ctx: LoweringContext, x: Value, weight: Value | None, bias: Value | None,
                mean: Value, var: Value, eps: float) -> Value:
    et = etype(x)
    inv = ctx.b.rsqrt(ctx.b.add(var, ctx.broadcast_to(ctx.const(eps, et), shape_of(var))))
    y = ctx.b.multiply(ctx.b.subtract(x, _channel(ctx, mean, x)), _channel(ctx, inv, x))
    if weight is not None:
        y = ctx.b.multiply(y, _channel(ctx, weight, x))
    if bias is not None:
        y = ctx.b.add(y, _channel(ctx, bias, x))
    return y


def _batch_stats(ctx: LoweringContext, x: Value) -> tuple[Value, Value]:
    shape = shape_of(x)
    et = etype(x)
    dims = [d for d in range(len(shape)) if d != 1]
    total = ctx.reduce(x, dims, "add")
    if None in shape:
        from oxla_frontend_torch.rules.reduce import element_count

        cnt = ctx.broadcast_in_dim(element_count(ctx, x, dims, 0, et), shape_of(total), [],
                                   total)
    else:
        n = int(np.prod([shape[d] for d in dims]))
        cnt = ctx.broadcast_to(ctx.const(n, et), (shape[1],))
    mean = ctx.b.divide(total, cnt)
    c = ctx.b.subtract(x, _channel(ctx, mean, x))
    var = ctx.b.divide(ctx.reduce(ctx.b.multiply(c, c), dims, "add"), cnt)
    return mean, var


@lowering(aten._native_batch_norm_legit_no_training.default)
def _bn_inference(ctx: LoweringContext, x: Value, weight: Value | None, bias: Value | None,
                  running_mean: Value, running_var: Value, momentum: float,
                  eps: float) -> list[Any]:
    y = _batch_norm(ctx, x, weight, bias, running_mean, running_var, eps)
    return [y, *(_empty(ctx, t) for t in ctx.out_types()[1:])]


@lowering(aten._native_batch_norm_legit.default, aten.native_batch_norm.default,
          aten._native_batch_norm_legit_functional.default)
def _bn(ctx: LoweringContext, x: Value, weight: Value | None, bias: Value | None,
        running_mean: Value | None, running_var: Value | None, training: bool,
        momentum: float, eps: float) -> list[Any]:
    """Batch norm; in training mode with batch statistics (running stats not updated)."""
    if not training:
        assert running_mean is not None and running_var is not None
        return _bn_inference(ctx, x, weight, bias, running_mean, running_var, momentum, eps)
    mean, var = _batch_stats(ctx, x)
    y = _batch_norm(ctx, x, weight, bias, mean, var, eps)
    et = etype(x)
    invstd = ctx.b.rsqrt(ctx.b.add(var, ctx.broadcast_to(ctx.const(eps, et), shape_of(var))))
    rest: list[Any] = [mean, invstd]
    if len(ctx.out_types()) == 5:  # the functional form also returns the new running stats
        if running_mean is None or running_var is None:
            rest += [Unavailable("updated running statistics of batch norm")] * 2
        else:
            rest += _running_stats(ctx, x, running_mean, running_var, mean, var, momentum)
    return [y, *rest]


def _running_stats(ctx: LoweringContext, x: Value, running_mean: Value, running_var: Value,
                   mean: Value, var: Value, momentum: float) -> list[Value]:
    """``(1 - momentum) * running + momentum * batch`` for the mean and for the unbiased
    variance (``var * n / (n - 1)``, ``n`` elements per channel), as eager updates them."""
    shape = shape_of(x)
    if None in shape:
        raise NotSupportedError("train-mode batch norm running statistics on dynamic ('?') "
                                "dimensions", loc=ctx.b.loc)
    n = int(np.prod([s for d, s in enumerate(shape) if d != 1]))
    et = etype(running_mean)
    c = shape_of(running_mean)

    def blend(run: Value, batch: Value) -> Value:
        keep = ctx.b.multiply(run, ctx.broadcast_to(ctx.const(1 - momentum, et), c))
        return ctx.b.add(keep, ctx.b.multiply(ctx.convert(batch, et),
                                              ctx.broadcast_to(ctx.const(momentum, et), c)))

    unbiased = ctx.b.multiply(var, ctx.broadcast_to(ctx.const(n / max(n - 1, 1), etype(var)),
                                                    shape_of(var)))
    return [blend(running_mean, mean), blend(running_var, unbiased)]


def _empty(ctx: LoweringContext, t: TensorType | None) -> Any:
    if t is None:
        return Unavailable("a non-tensor result")
    return ctx.const(np.zeros(t.shape), t.element_type, t.shape)


@lowering(aten.native_layer_norm.default)
def _layer_norm(ctx: LoweringContext, x: Value, normalized_shape: Sequence[int],
                weight: Value | None, bias: Value | None, eps: float) -> list[Value]:
    """Normalizes over the trailing ``normalized_shape`` dims (static); leading dims may be
    ``?`` (broadcasts take their sizes from ``x``)."""
    shape = shape_of(x)
    et = etype(x)
    k = len(normalized_shape)
    r = len(shape)
    dims = list(range(r - k, r))
    keep = list(range(r - k))
    n = int(np.prod(shape[r - k:]))
    total = ctx.reduce(x, dims, "add")
    mean = ctx.b.divide(total, ctx.splat(n, et, total))
    c = ctx.b.subtract(x, ctx.broadcast_in_dim(mean, shape, keep, x))
    sq = ctx.reduce(ctx.b.multiply(c, c), dims, "add")
    var = ctx.b.divide(sq, ctx.splat(n, et, sq))
    rstd = ctx.b.rsqrt(ctx.b.add(var, ctx.splat(eps, et, var)))
    y = ctx.b.multiply(c, ctx.broadcast_in_dim(rstd, shape, keep, x))
    if weight is not None:
        y = ctx.b.multiply(y, ctx.broadcast_in_dim(weight, shape, dims, x))
    if bias is not None:
        y = ctx.b.add(y, ctx.broadcast_in_dim(bias, shape, dims, x))
    kept = (*shape[:r - k], *([1] * k))
    parts = [(x, d) for d in keep] + [1] * k
    return [y, ctx.reshape(mean, kept, parts), ctx.reshape(rstd, kept, parts)]


def _softmax_impl(ctx: LoweringContext, x: Value, dim: int, log: bool) -> Value:
    out = ctx.out_type()
    x = ctx.convert(x, out.element_type)
    shape = shape_of(x)
    dim = norm_dim(dim, len(shape))
    keep = [d for d in range(len(shape)) if d != dim]
    m = ctx.broadcast_in_dim(ctx.reduce(x, [dim], "maximum"), shape, keep, x)
    z = ctx.b.subtract(x, m)
    e = ctx.b.exponential(z)
    s = ctx.broadcast_in_dim(ctx.reduce(e, [dim], "add"), shape, keep, x)
    return ctx.b.subtract(z, ctx.b.log(s)) if log else ctx.b.divide(e, s)


@lowering(aten._softmax.default, aten.softmax.int)
def _softmax(ctx: LoweringContext, x: Value, dim: int, *args: Any, **kwargs: Any) -> Value:
    return _softmax_impl(ctx, x, dim, False)


@lowering(aten._log_softmax.default, aten.log_softmax.int)
def _log_softmax(ctx: LoweringContext, x: Value, dim: int, *args: Any, **kwargs: Any) -> Value:
    return _softmax_impl(ctx, x, dim, True)


@lowering(aten.scaled_dot_product_attention.default)
def _sdpa(ctx: LoweringContext, q: Value, k: Value, v: Value, attn_mask: Value | None = None,
          dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
          enable_gqa: bool = False) -> Value:
    """``softmax(q k^T * scale + mask) v``; a boolean mask keeps True positions, a float mask
    is added; ``is_causal`` masks the upper triangle (top-left aligned, as torch)."""
    if dropout_p:
        raise NotSupportedError("scaled_dot_product_attention with dropout_p > 0",
                                loc=ctx.b.loc, notes=["export the model in eval mode"])
    sq, sk = shape_of(q), shape_of(k)
    et = etype(q)
    r = len(sq)
    if enable_gqa and sk[-3] != sq[-3]:
        if sq[-3] is None or sk[-3] is None:
            raise NotSupportedError("scaled_dot_product_attention with enable_gqa and a "
                                    "dynamic ('?') number of heads", loc=ctx.b.loc,
                                    notes=["import for concrete shapes (arg_shapes=[...])"])
        k, v = (_repeat_heads(ctx, t, sq[-3] // sk[-3]) for t in (k, v))
        sk = shape_of(k)
    batch = tuple(range(r - 2))
    s = ctx.b.dot_general(q, k, contracting=((r - 1,), (r - 1,)), batching=(batch, batch))
    ss = shape_of(s)
    scale = 1.0 / math.sqrt(sq[-1]) if scale is None else scale
    s = ctx.b.multiply(s, ctx.splat(scale, et, s))
    neg = ctx.splat(-np.inf, et, s)
    if is_causal:
        i64 = IntegerType(64)
        rows, cols = (ctx.iota_like(s, [r - 2, r - 1], i64, d) for d in (0, 1))
        s = ctx.b.select(ctx.broadcast_in_dim(ctx.b.compare("LE", cols, rows), ss,
                                              [r - 2, r - 1], s), s, neg)
    if attn_mask is not None:
        if etype(attn_mask) == IntegerType(1):
            s = ctx.b.select(ctx.broadcast_to(attn_mask, ss, s), s, neg)
        else:
            s = ctx.b.add(s, ctx.broadcast_to(ctx.convert(attn_mask, et), ss, s))
    keep = list(range(len(ss) - 1))
    m = ctx.reduce(s, [len(ss) - 1], "maximum")
    if is_float(et):  # fully masked rows: torch gives NaN too; keep exp finite otherwise
        m = ctx.b.select(ctx.b.is_finite(m), m, ctx.splat(0, et, m))
    e = ctx.b.exponential(ctx.b.subtract(s, ctx.broadcast_in_dim(m, ss, keep, s)))
    p = ctx.b.divide(e, ctx.broadcast_in_dim(ctx.reduce(e, [len(ss) - 1], "add"), ss, keep, s))
    return ctx.b.dot_general(p, v, contracting=((r - 1,), (r - 2,)), batching=(batch, batch))


def _repeat_heads(ctx: LoweringContext, t: Value, rep: int) -> Value:
    """``[..., h, s, d]`` -> ``[..., h * rep, s, d]``, each head repeated ``rep`` times in
    place (grouped-query attention); ``?`` dims sized from ``t``."""
    st = shape_of(t)
    r = len(st)
    big = (*st[:-2], rep, *st[-2:])
    dims = [*range(r - 2), r - 1, r]
    out = (*st[:-3], st[-3] * rep, *st[-2:])
    if None not in st:
        return ctx.reshape(ctx.b.broadcast_in_dim(t, big, dims), out)
    parts = [(t, d) for d in range(r - 2)] + [rep, (t, r - 2), (t, r - 1)]
    b = ctx.b.create("stablehlo.dynamic_broadcast_in_dim", [t, ctx.parts_value(parts)],
                     {"broadcast_dimensions": A.i64_array(dims)},
                     [TensorType(big, etype(t))]).results[0]
    return ctx.reshape(b, out, [(t, d) for d in range(r - 3)] + [st[-3] * rep, (t, r - 2),
                                                                 (t, r - 1)])


@lowering(aten.max_pool2d_with_indices.default, aten.max_pool1d_with_indices.default,
          aten.max_pool3d_with_indices.default)
def _max_pool(ctx: LoweringContext, x: Value, kernel: Sequence[int],
              stride: Sequence[int] = (), padding: Sequence[int] = 0,
              dilation: Sequence[int] = 1, ceil_mode: bool = False) -> list[Any]:
    """Max pooling: the values by ``reduce_window``; when the indices are used (by the
    backward graph), values and indices by torch's decomposition (2-d, 3-d)."""
    from torch._decomp import decomposition_table

    wants_indices = any(u.target is operator.getitem and u.args[1] == 1
                        for u in ctx.node.users)
    if wants_indices and ctx.node.target in decomposition_table:
        return decomposed(decomposition_table[ctx.node.target])(
            ctx, x, kernel, stride, padding, dilation, ceil_mode)
    out = ctx.out_type(0)
    y = _pool(ctx, x, kernel, stride, padding, -np.inf, "maximum", out.shape, dilation)
    return [y, Unavailable("the indices of 1-d max pooling (only the values are lowered)")]


def _pool(ctx: LoweringContext, x: Value, kernel: Sequence[int], stride: Sequence[int],
          padding: Any, init: Any, kind: str, out_shape: Sequence[int],
          dilation: Any = 1) -> Value:
    shape = shape_of(x)
    n = len(kernel)
    lead = len(shape) - n
    if None in shape[lead:] or None in tuple(out_shape)[lead:]:
        raise NotSupportedError(f"'{ctx.node.target}' over a dynamic ('?') spatial dimension",
                                loc=ctx.b.loc,
                                notes=["import for concrete shapes (arg_shapes=[...])"])

    def per(v: Any, default: Sequence[int]) -> list[int]:
        if v is None or (isinstance(v, Sequence) and len(v) == 0):
            return list(default)
        v = [v] if isinstance(v, int) else list(v)
        return v * n if len(v) == 1 else v

    k = per(kernel, kernel)
    s = per(stride, k)
    p = per(padding, [0] * n)
    d = per(dilation, [1] * n)
    if any(x != 1 for x in d):
        raise NotSupportedError("dilated pooling", loc=ctx.b.loc)
    pads = [(0, 0)] * lead
    for i in range(n):
        size = shape[lead + i]
        need = (out_shape[lead + i] - 1) * s[i] + k[i]  # ceil_mode may add high padding
        pads.append((p[i], max(p[i], need - size - p[i])))
    if kind == "maximum" and not is_float(etype(x)):
        init = np.iinfo(etype(x).dtype).min
    return ctx.reduce_window(x, init, kind, [1] * lead + k, [1] * lead + s, pads, out_shape)


@lowering(aten.avg_pool2d.default, aten.avg_pool1d.default, aten.avg_pool3d.default)
def _avg_pool(ctx: LoweringContext, x: Value, kernel: Sequence[int], stride: Sequence[int] = (),
              padding: Any = 0, ceil_mode: bool = False, count_include_pad: bool = True,
              divisor_override: int | None = None) -> Value:
    out = ctx.out_type()
    et = etype(x)
    total = _pool(ctx, x, kernel, stride, padding, 0, "add", out.shape)
    if divisor_override:
        div: Value = ctx.broadcast_to(ctx.const(divisor_override, et), out.shape)
    elif not any(padding if isinstance(padding, Sequence) else [padding]) and not ceil_mode:
        div = ctx.broadcast_to(ctx.const(int(np.prod(kernel)), et), out.shape)
    else:
        ones = ctx.splat(1, et, x)
        if count_include_pad:  # padded zeros count, ceil-mode overhang does not
            n = len(kernel)
            pp = [padding] * n if isinstance(padding, int) else list(padding)
            pp = pp * n if len(pp) == 1 else pp
            lo = [0] * (len(shape_of(x)) - n) + pp
            attrs = {"edge_padding_low": A.i64_array(lo), "edge_padding_high": A.i64_array(lo),
                     "interior_padding": A.i64_array([0] * len(lo))}
            padded = tuple(s if s is None else s + 2 * q for s, q in zip(shape_of(x), lo))
            ones = ctx.b.create("stablehlo.pad", [ones, ctx.const(1, et)], attrs,
                                [TensorType(padded, et)]).results[0]
            div = _pool(ctx, ones, kernel, stride, 0, 0, "add", out.shape)
        else:
            div = _pool(ctx, ones, kernel, stride, padding, 0, "add", out.shape)
    return ctx.b.divide(total, div)


@lowering(aten._adaptive_avg_pool2d.default, aten.adaptive_avg_pool2d.default,
          aten._adaptive_avg_pool1d.default if hasattr(aten, "_adaptive_avg_pool1d")
          else aten.adaptive_avg_pool1d.default)
def _adaptive_avg_pool(ctx: LoweringContext, x: Value, output_size: Sequence[int]) -> Value:
    """Adaptive average pooling: a sum pool when every output cell averages an equal
    window, else :func:`~oxla_frontend_torch.decompositions.adaptive_avg_pool`."""
    out = ctx.out_type()
    shape = shape_of(x)
    n = len(output_size)
    lead = len(shape) - n
    ins, outs = shape[lead:], out.shape[lead:]
    if None in ins:
        raise NotSupportedError(f"'{ctx.node.target}' over a dynamic ('?') spatial dimension",
                                loc=ctx.b.loc,
                                notes=["import for concrete shapes (arg_shapes=[...])"])
    if any(i % o for i, o in zip(ins, outs)):  # uneven windows: averaging matrices
        return decomposed(adaptive_avg_pool)(ctx, x, output_size)
    k = [i // o for i, o in zip(ins, outs)]
    total = _pool(ctx, x, k, k, 0, 0, "add", out.shape)
    return ctx.b.divide(total, ctx.broadcast_to(ctx.const(int(np.prod(k)), etype(x)),
                                                out.shape))


@lowering(aten._native_batch_norm_legit.no_stats)
def _bn_no_stats(ctx: LoweringContext, x: Value, weight: Value | None, bias: Value | None,
                 training: bool, momentum: float, eps: float) -> list[Any]:
    """Batch norm without running statistics: always the batch's own."""
    return _bn(ctx, x, weight, bias, None, None, True, momentum, eps)
