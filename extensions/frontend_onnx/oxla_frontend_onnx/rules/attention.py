"""Attention-family ONNX ops: Attention (opset 23+: 3-D/4-D, GQA, past key/value,
masks, causal, softcap, sliding window), RMSNormalization, RotaryEmbedding."""

from __future__ import annotations

import numpy as np

from oxla.ir import Value
from oxla.ir.types import f32, i1, i64
from oxla_frontend_onnx.emit import (
    broadcast_to,
    convert,
    etype,
    min_value,
    norm_axis,
    pad,
    reduce,
    shape_of,
    splat,
)
from oxla_frontend_onnx.registry import NodeContext, element_type, rule


def _heads(ctx: NodeContext, x: Value, heads: int) -> Value:
    """``[B, S, H*D] -> [B, H, S, D]``."""
    bsz, s, hidden = shape_of(x)
    return ctx.b.transpose(ctx.b.reshape(x, (bsz, s, heads, hidden // heads)), (0, 2, 1, 3))


def _repeat_heads(ctx: NodeContext, x: Value, reps: int) -> Value:
    """``np.repeat(x, reps, axis=1)`` of a ``[B, H, T, D]`` tensor."""
    if reps == 1:
        return x
    bsz, h, t, d = shape_of(x)
    y = ctx.b.broadcast_in_dim(x, (bsz, h, reps, t, d), [0, 1, 3, 4])
    return ctx.b.reshape(y, (bsz, h * reps, t, d))


@rule("Attention", since=23)
def _attention(ctx: NodeContext) -> list[Value | None]:
    b = ctx.b
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    et = etype(q)
    rank3 = len(shape_of(q)) == 3
    if rank3:
        q = _heads(ctx, q, ctx.attr("q_num_heads"))
        k = _heads(ctx, k, ctx.attr("kv_num_heads"))
        v = _heads(ctx, v, ctx.attr("kv_num_heads"))
    out_et = et
    if et.name == "f16":  # accumulate in f32, as the reference's numpy does
        q, k, v = (convert(b, t_, f32) for t_ in (q, k, v))
        et = f32
    past = ctx.has(4)
    past_len = shape_of(ctx.input(4))[2] if past else 0
    if past:
        k = b.concatenate([convert(b, ctx.input(4), et), k], 2)
        v = b.concatenate([convert(b, ctx.input(5), et), v], 2)
    present_k, present_v = convert(b, k, out_et), convert(b, v, out_et)
    bsz, hq, s, dq = shape_of(q)
    t = shape_of(k)[2]
    scale = ctx.attr("scale")
    scale = float(1 / np.sqrt(dq)) if scale is None else float(scale)
    root = float(np.sqrt(np.float32(scale)))
    # the additive bias [.., S, T]: mask, causal, sliding window
    bias = splat(b, 0, et, (s, t))
    if ctx.has(3):
        m = ctx.input(3)
        ms = shape_of(m)
        if ms[-1] < t:  # a short mask is padded with "masked"
            fill = splat(b, False if etype(m) == i1 else -np.inf, etype(m))
            m = pad(b, m, [0] * len(ms), [0] * (len(ms) - 1) + [t - ms[-1]], fill)
        if etype(m) == i1:
            m = b.select(m, splat(b, 0, et, shape_of(m)), splat(b, -np.inf, et, shape_of(m)))
        bias = _badd(ctx, bias, convert(b, m, et))
    st = (bsz, 1, s, t) if ctx.has(6) else (s, t)
    rows = b.iota(st, i64, len(st) - 2)
    cols = b.iota(st, i64, len(st) - 1)
    if ctx.has(6):  # per-batch valid kv length: offset = nonpad - S, keys past it masked
        nonpad = b.broadcast_in_dim(convert(b, ctx.input(6), i64), st, [0])
        offset = b.subtract(nonpad, splat(b, s, i64, st))
        pad_ok = b.compare("LT", cols, nonpad, "SIGNED")
    else:
        offset = splat(b, past_len, i64, st)
        pad_ok = None
    diff = b.subtract(b.add(rows, offset), cols)  # p - j
    allowed = None
    if ctx.attr("is_causal", 0):
        allowed = b.compare("GE", diff, splat(b, 0, i64, st), "SIGNED")
    left, right = ctx.attr("left_window_size", -1), ctx.attr("right_window_size", -1)
    for bound, val in ((left, diff), (right, b.negate(diff))):
        if bound is not None and bound >= 0:
            ok = b.compare("LE", val, splat(b, bound, i64, st), "SIGNED")
            allowed = ok if allowed is None else b.and_(allowed, ok)
    for ok in (allowed, pad_ok):
        if ok is not None:
            neg = b.select(ok, splat(b, 0, et, st), splat(b, -np.inf, et, st))
            bias = _badd(ctx, bias, neg)
    hk = shape_of(k)[1]
    if hq != hk and hq % hk == 0:
        k = _repeat_heads(ctx, k, hq // hk)
        v = _repeat_heads(ctx, v, hq // hk)
    qs = b.multiply(q, ctx.scalar_like(root, q))
    ks = b.multiply(k, ctx.scalar_like(root, k))
    qk = b.dot_general(qs, ks, ((3,), (3,)), ((0, 1), (0, 1)))  # [B, H, S, T]
    softcap = ctx.attr("softcap", 0.0)
    if softcap and softcap > 0:
        qk = b.multiply(b.tanh(b.divide(qk, ctx.scalar_like(softcap, qk))),
                        ctx.scalar_like(softcap, qk))
    full = (bsz, hq, s, t)
    bias_full = broadcast_to(b, bias, full)
    with_bias = b.add(qk, bias_full)
    mode = ctx.attr("qk_matmul_output_mode", 0)
    qk_out = with_bias if mode == 2 else qk
    sp = ctx.attr("softmax_precision")
    x = convert(b, with_bias, element_type(sp)) if sp else with_bias
    sx = etype(x)
    mx = reduce(b, x, [3], "maximum", min_value(sx), True)
    ninf = splat(b, -np.inf, sx, shape_of(mx))
    mx = b.select(b.compare("EQ", mx, ninf, "FLOAT"), splat(b, 0, sx, shape_of(mx)), mx)
    e = b.exponential(b.subtract(x, broadcast_to(b, mx, full)))
    tot = reduce(b, e, [3], "add", 0, True)
    zero = splat(b, 0, sx, shape_of(tot))
    tot = b.select(b.compare("EQ", tot, zero, "FLOAT"), splat(b, 1, sx, shape_of(tot)), tot)
    p = b.divide(e, broadcast_to(b, tot, full))
    bias_max = reduce(b, bias_full, [3], "maximum", min_value(et), True)
    dead = b.compare("EQ", bias_max, splat(b, -np.inf, et, shape_of(bias_max)), "FLOAT")
    p = b.select(broadcast_to(b, dead, full), splat(b, 0, sx, full), p)
    if mode == 3:
        qk_out = p
    p = convert(b, convert(b, p, out_et), et)
    y = convert(b, b.dot_general(p, v, ((3,), (2,)), ((0, 1), (0, 1))), out_et)
    if rank3:
        y = b.transpose(y, (0, 2, 1, 3))
        ys = shape_of(y)
        y = b.reshape(y, (ys[0], ys[1], ys[2] * ys[3]))
    return [y, present_k, present_v, convert(b, qk_out, out_et)]


def _badd(ctx: NodeContext, a: Value, c: Value) -> Value:
    shape = tuple(np.broadcast_shapes(shape_of(a), shape_of(c)))
    return ctx.b.add(broadcast_to(ctx.b, a, shape), broadcast_to(ctx.b, c, shape))


@rule("RMSNormalization", since=23)
def _rms_norm(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    axis = norm_axis(ctx.attr("axis", -1), len(shape))
    dims = list(range(axis, len(shape)))
    sp = ctx.attr("stash_type", 1)
    cx = convert(b, x, element_type(sp)) if sp else x
    n = int(np.prod([shape[d] for d in dims]))
    ms = reduce(b, b.multiply(cx, cx), dims, "add", 0, True)
    ms = b.divide(ms, ctx.scalar_like(n, ms))
    inv = b.rsqrt(b.add(ms, ctx.scalar_like(ctx.attr("epsilon", 1e-5), ms)))
    y = convert(b, b.multiply(cx, broadcast_to(b, inv, shape)), etype(x))
    scale = ctx.input(1)
    out_shape = tuple(np.broadcast_shapes(shape, shape_of(scale)))
    return [b.multiply(broadcast_to(b, y, out_shape), broadcast_to(b, scale, out_shape))]


@rule("RotaryEmbedding", since=23)
def _rotary(ctx: NodeContext) -> list[Value]:
    """x: [B, S, H*D] (with ``num_heads``) or [B, H, S, D]; cos/sin caches indexed by
    ``position_ids`` [B, S] or given as [B, S, D/2]."""
    from oxla_frontend_onnx.rules.shape import take

    b = ctx.b
    x, cos, sin = ctx.input(0), ctx.input(1), ctx.input(2)
    xs = shape_of(x)
    rank3 = len(xs) == 3
    if rank3:
        heads = ctx.attr("num_heads")
        x = b.transpose(b.reshape(x, (xs[0], xs[1], heads, xs[2] // heads)), (0, 2, 1, 3))
    bsz, h, s, d = shape_of(x)
    rot = ctx.attr("rotary_embedding_dim", 0) or d
    if ctx.has(3):
        pos = ctx.input(3)
        cos = take(ctx, cos, pos, 0)  # [B, S, rot/2]
        sin = take(ctx, sin, pos, 0)
    half = rot // 2
    cos = b.broadcast_in_dim(cos, (bsz, h, s, half), [0, 2, 3])
    sin = b.broadcast_in_dim(sin, (bsz, h, s, half), [0, 2, 3])
    xr = b.slice(x, [0, 0, 0, 0], [bsz, h, s, rot])
    rest = b.slice(x, [0, 0, 0, rot], [bsz, h, s, d]) if rot < d else None
    if ctx.attr("interleaved", 0):
        pairs = b.reshape(xr, (bsz, h, s, half, 2))
        x1 = b.reshape(b.slice(pairs, [0] * 5, [bsz, h, s, half, 1]), (bsz, h, s, half))
        x2 = b.reshape(b.slice(pairs, [0, 0, 0, 0, 1], [bsz, h, s, half, 2]),
                       (bsz, h, s, half))
    else:
        x1 = b.slice(xr, [0, 0, 0, 0], [bsz, h, s, half])
        x2 = b.slice(xr, [0, 0, 0, half], [bsz, h, s, rot])
    r1 = b.subtract(b.multiply(x1, cos), b.multiply(x2, sin))
    r2 = b.add(b.multiply(x2, cos), b.multiply(x1, sin))
    if ctx.attr("interleaved", 0):
        y = b.reshape(b.concatenate([b.reshape(r1, (bsz, h, s, half, 1)),
                                     b.reshape(r2, (bsz, h, s, half, 1))], 4),
                      (bsz, h, s, rot))
    else:
        y = b.concatenate([r1, r2], 3)
    if rest is not None:
        y = b.concatenate([y, rest], 3)
    if rank3:
        y = b.reshape(b.transpose(y, (0, 2, 1, 3)), xs)
    return [y]

