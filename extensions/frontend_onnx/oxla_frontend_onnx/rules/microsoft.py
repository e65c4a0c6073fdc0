"""``com.microsoft`` ops that exporters and onnxruntime's optimizers emit commonly:
FusedMatMul, Gelu, FastGelu, BiasGelu, QuickGelu, SkipLayerNormalization,
(Skip)SimplifiedLayerNormalization and Attention (packed QKV weights, optional 2-D
key-padding mask, unidirectional), following onnxruntime's contrib-op docs."""

from __future__ import annotations

import numpy as np

from oxla.ir import Value
from oxla_frontend_onnx.emit import (
    binary,
    broadcast_to,
    etype,
    matmul,
    min_value,
    norm_axis,
    reduce,
    shape_of,
    splat,
)
from oxla_frontend_onnx.registry import NodeContext, rule
from oxla_frontend_onnx.rules.elementwise import gelu

MS = "com.microsoft"


def _swap_last(ctx: NodeContext, v: Value) -> Value:
    r = len(shape_of(v))
    perm = list(range(r))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return ctx.b.transpose(v, perm)


@rule("FusedMatMul", domain=MS, since=1)
def _fused_matmul(ctx: NodeContext) -> list[Value]:
    a, w = ctx.input(0), ctx.input(1)
    if ctx.attr("transBatchA", 0) or ctx.attr("transBatchB", 0):
        raise ctx.fail("FusedMatMul transBatchA/transBatchB are not supported")
    if ctx.attr("transA", 0):
        a = _swap_last(ctx, a)
    if ctx.attr("transB", 0):
        w = _swap_last(ctx, w)
    y = matmul(ctx.b, a, w)
    alpha = ctx.attr("alpha", 1.0)
    return [y if alpha == 1.0 else ctx.b.multiply(y, ctx.scalar_like(alpha, y))]


def _with_bias(ctx: NodeContext) -> Value:
    x = ctx.input(0)
    return binary(ctx.b, "add", x, ctx.input(1)) if ctx.has(1) else x


@rule("Gelu", domain=MS, since=1)
def _ms_gelu(ctx: NodeContext) -> list[Value]:
    return [gelu(ctx, ctx.input(0))]


@rule("BiasGelu", domain=MS, since=1)
def _bias_gelu(ctx: NodeContext) -> list[Value]:
    return [gelu(ctx, _with_bias(ctx))]


@rule("FastGelu", domain=MS, since=1)
def _fast_gelu(ctx: NodeContext) -> list[Value]:
    return [gelu(ctx, _with_bias(ctx), "tanh")]


@rule("QuickGelu", domain=MS, since=1)
def _quick_gelu(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    a = ctx.scalar_like(ctx.attr("alpha", 1.702), x)
    return [ctx.b.multiply(x, ctx.b.logistic(ctx.b.multiply(a, x)))]


def _norm(ctx: NodeContext, x: Value, gamma: Value, beta: Value | None, eps: float,
          simplified: bool) -> tuple[Value, Value, Value]:
    """LayerNorm (or RMSNorm) over the last dim; returns (y, mean, inv_std)."""
    b = ctx.b
    shape = shape_of(x)
    d = len(shape) - 1
    n = shape[-1]
    if simplified:
        mean = splat(b, 0, etype(x), (*shape[:-1], 1))
        c = x
    else:
        mean = b.divide(reduce(b, x, [d], "add", 0, True), splat(b, n, etype(x),
                                                                  (*shape[:-1], 1)))
        c = b.subtract(x, broadcast_to(b, mean, shape))
    var = b.divide(reduce(b, b.multiply(c, c), [d], "add", 0, True),
                   splat(b, n, etype(x), (*shape[:-1], 1)))
    inv = b.rsqrt(b.add(var, ctx.scalar_like(eps, var)))
    y = binary(b, "multiply", b.multiply(c, broadcast_to(b, inv, shape)), gamma)
    if beta is not None:
        y = binary(b, "add", y, beta)
    return y, mean, inv


@rule("SkipLayerNormalization", "SkipSimplifiedLayerNormalization", domain=MS, since=1)
def _skip_ln(ctx: NodeContext) -> list[Value | None]:
    b = ctx.b
    simplified = ctx.node.op_type.startswith("SkipSimplified")
    s = binary(b, "add", ctx.input(0), ctx.input(1))
    bias_i = 3 if simplified else 4
    beta = None if simplified or not ctx.has(3) else ctx.input(3)
    if ctx.has(bias_i):
        s = binary(b, "add", s, ctx.input(bias_i))
    y, mean, inv = _norm(ctx, s, ctx.input(2), beta, ctx.attr("epsilon", 1e-12), simplified)
    return [y, mean, inv, s]


@rule("SimplifiedLayerNormalization", domain="", since=1)
def _simplified_ln(ctx: NodeContext) -> list[Value | None]:
    """onnxruntime registers this RMSNorm in the ONNX domain."""
    x = ctx.input(0)
    if norm_axis(ctx.attr("axis", -1), len(shape_of(x))) != len(shape_of(x)) - 1:
        raise ctx.fail("SimplifiedLayerNormalization over several axes is not supported")
    y, _, inv = _norm(ctx, x, ctx.input(1), None, ctx.attr("epsilon", 1e-5), True)
    return [y, inv]


@rule("Attention", domain=MS, since=1)
def _ms_attention(ctx: NodeContext) -> list[Value | None]:
    """Self-attention with packed QKV weights [hidden_in, 3*hidden] and bias [3*hidden]."""
    b = ctx.b
    x, w = ctx.input(0), ctx.input(1)
    if ctx.has(4) or ctx.has(5) or ctx.wants(1):
        raise ctx.fail("Attention with past state or attention bias is not supported")
    heads = ctx.attr("num_heads")
    bsz, s, _ = shape_of(x)
    sizes = ctx.attr("qkv_hidden_sizes")
    total = shape_of(w)[1]
    sizes = list(sizes) if sizes else [total // 3] * 3
    qkv = matmul(b, x, w)
    if ctx.has(2):
        qkv = binary(b, "add", qkv, ctx.input(2))
    parts, start = [], 0
    for n in sizes:
        p = b.slice(qkv, [0, 0, start], [bsz, s, start + n])
        parts.append(b.transpose(b.reshape(p, (bsz, s, heads, n // heads)), (0, 2, 1, 3)))
        start += n
    q, k, v = parts
    dq = sizes[0] // heads
    scale = ctx.attr("scale") or float(1 / np.sqrt(dq))
    qk = b.dot_general(q, k, ((3,), (3,)), ((0, 1), (0, 1)))
    qk = b.multiply(qk, ctx.scalar_like(scale, qk))
    full = (bsz, heads, s, s)
    neg = ctx.scalar_like(-10000.0, qk)  # onnxruntime's mask_filter_value
    if ctx.has(3):
        m = ctx.input(3)
        if len(shape_of(m)) != 2:
            raise ctx.fail("Attention mask_index other than [batch, seq] is not supported")
        keep = b.compare("NE", m, splat(b, 0, etype(m), shape_of(m)), "SIGNED")
        qk = b.select(b.broadcast_in_dim(keep, full, [0, 3]), qk, neg)
    if ctx.attr("unidirectional", 0):
        from oxla.ir.types import i64

        causal = b.compare("LE", b.iota(full, i64, 3), b.iota(full, i64, 2), "SIGNED")
        qk = b.select(causal, qk, neg)
    mx = broadcast_to(b, reduce(b, qk, [3], "maximum", min_value(etype(qk)), True), full)
    e = b.exponential(b.subtract(qk, mx))
    p = b.divide(e, broadcast_to(b, reduce(b, e, [3], "add", 0, True), full))
    y = b.dot_general(p, v, ((3,), (2,)), ((0, 1), (0, 1)))
    y = b.transpose(y, (0, 2, 1, 3))
    return [b.reshape(y, (bsz, s, sizes[2])), None]
