"""Losses, scatters, one-hot, normalizations and small ops: NegativeLogLikelihoodLoss,
SoftmaxCrossEntropyLoss, ScatterElements/ScatterND (with reductions), OneHot,
LpNormalization, MeanVarianceNormalization, BitCast, CumProd, Einsum, CenterCropPad,
window functions, ReverseSequence, SwiGLU."""

from __future__ import annotations

import numpy as np

from oxla.ir import Block, Builder, Region, Value
from oxla.ir import attributes as A
from oxla.ir.types import FloatType, TensorType, i1, i64
from oxla_frontend_onnx.emit import (
    broadcast_to,
    convert,
    etype,
    norm_axis,
    pad,
    reduce,
    reduce_window,
    shape_of,
    splat,
)
from oxla_frontend_onnx.registry import NodeContext, element_type, rule


def _nll(ctx: NodeContext, logp: Value, target: Value, weight: Value | None) -> Value:
    """ONNX NegativeLogLikelihoodLoss of log-probabilities [N, C, d...]."""
    b = ctx.b
    shape = shape_of(logp)
    et = etype(logp)
    tshape = shape_of(target)
    t = convert(b, target, i64)
    tb = b.broadcast_in_dim(t, shape, [0, *range(2, len(shape))])
    hit = b.compare("EQ", b.iota(shape, i64, 1), tb, "SIGNED")
    zero = splat(b, 0, et, shape)
    picked = reduce(b, b.select(hit, logp, zero), [1], "add", 0)
    if weight is not None:
        wt = reduce(b, b.select(hit, b.broadcast_in_dim(weight, shape, [1]), zero), [1],
                    "add", 0)
    else:
        wt = splat(b, 1, et, tshape)
    ii = ctx.attr("ignore_index")
    if ii is not None:
        valid = b.compare("NE", t, splat(b, ii, i64, tshape), "SIGNED")
        wt = b.select(valid, wt, splat(b, 0, et, tshape))
    loss = b.negate(b.multiply(picked, wt))
    red = ctx.attr("reduction", "mean")
    dims = list(range(len(tshape)))
    if red == "none":
        return loss
    total = reduce(b, loss, dims, "add", 0)
    if red == "sum":
        return total
    return b.divide(total, reduce(b, wt, dims, "add", 0))


@rule("NegativeLogLikelihoodLoss", since=12)
def _nll_loss(ctx: NodeContext) -> list[Value]:
    return [_nll(ctx, ctx.input(0), ctx.input(1), ctx.input(2) if ctx.has(2) else None)]


@rule("SoftmaxCrossEntropyLoss", since=12)
def _sce_loss(ctx: NodeContext) -> list[Value]:
    from oxla_frontend_onnx.rules.nn import softmax

    x = ctx.input(0)
    logp = softmax(ctx, x, [1], log=True)
    loss = _nll(ctx, logp, ctx.input(1), ctx.input(2) if ctx.has(2) else None)
    return [loss, logp]


def _scatter(ctx: NodeContext, x: Value, idx: Value, upd: Value, dn: A.Attribute,
             reduction: str) -> Value:
    b = ctx.b
    et = etype(x)
    s = TensorType((), et)
    body = Block([s, s])
    bb = Builder(body, loc=b.loc)
    old, new = body.args
    op = {"add": "add", "mul": "multiply", "max": "maximum", "min": "minimum"}.get(reduction)
    if et == i1 and op is not None:
        op = {"add": "or", "multiply": "and", "maximum": "or", "minimum": "and"}[op]
    r = new if op is None else bb.create(f"stablehlo.{op}", [old, new]).results[0]
    bb.create("stablehlo.return", [r], result_types=[])
    attrs = {"scatter_dimension_numbers": dn, "indices_are_sorted": A.BoolAttr(False),
             "unique_indices": A.BoolAttr(False)}
    return b.create("stablehlo.scatter", [x, idx, upd], attrs, [x.type],
                    regions=[Region([body])]).results[0]


def _wrap(ctx: NodeContext, idx: Value, limit: Value | int) -> Value:
    b = ctx.b
    idx = convert(b, idx, i64)
    sh = shape_of(idx)
    lim = splat(b, limit, i64, sh) if isinstance(limit, int) else limit
    return b.select(b.compare("LT", idx, splat(b, 0, i64, sh), "SIGNED"), b.add(idx, lim), idx)


@rule("ScatterElements", since=11)
@rule("Scatter", since=9)
def _scatter_elements(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    x, upd = ctx.input(0), ctx.input(2)
    shape = shape_of(x)
    r = len(shape)
    axis = norm_axis(ctx.attr("axis", 0), r)
    idx = _wrap(ctx, ctx.input(1), shape[axis])
    ishape = shape_of(idx)
    parts = [b.reshape(idx if d == axis else b.iota(ishape, i64, d), (*ishape, 1))
             for d in range(r)]
    full = b.concatenate(parts, r)
    dn = A.struct("stablehlo.scatter", update_window_dims=(),
                  inserted_window_dims=tuple(range(r)),
                  scatter_dims_to_operand_dims=tuple(range(r)), index_vector_dim=r)
    return [_scatter(ctx, x, full, upd, dn, ctx.attr("reduction", "none"))]


@rule("ScatterND", since=11)
def _scatter_nd(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    x, idx, upd = ctx.input(0), ctx.input(1), ctx.input(2)
    shape, ishape = shape_of(x), shape_of(idx)
    k = ishape[-1]
    idx = convert(b, idx, i64)
    lim = b.broadcast_in_dim(b.constant(np.array(shape[:k], np.int64)), ishape,
                             [len(ishape) - 1])
    idx = b.select(b.compare("LT", idx, splat(b, 0, i64, ishape), "SIGNED"),
                   b.add(idx, lim), idx)
    q = len(ishape) - 1
    dn = A.struct("stablehlo.scatter",
                  update_window_dims=tuple(range(q, q + len(shape) - k)),
                  inserted_window_dims=tuple(range(k)),
                  scatter_dims_to_operand_dims=tuple(range(k)), index_vector_dim=q)
    return [_scatter(ctx, x, idx, upd, dn, ctx.attr("reduction", "none"))]


@rule("OneHot", since=9)
def _onehot(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    idx = ctx.input(0)
    depth = int(np.asarray(ctx.const_required(1, "OneHot's depth")).reshape(-1)[0])
    vals = ctx.input(2)
    ishape = shape_of(idx)
    r = len(ishape) + 1
    axis = norm_axis(ctx.attr("axis", -1), r)
    out = list(ishape)
    out.insert(axis, depth)
    if isinstance(etype(idx), FloatType):
        idx = b.convert(idx, i64)
    idx = _wrap(ctx, idx, depth)
    ib = b.broadcast_in_dim(idx, out, [d for d in range(r) if d != axis])
    hit = b.compare("EQ", b.iota(out, i64, axis), ib, "SIGNED")
    off = b.broadcast_in_dim(b.reshape(b.slice(vals, [0], [1]), ()), out, [])
    on = b.broadcast_in_dim(b.reshape(b.slice(vals, [1], [2]), ()), out, [])
    return [b.select(hit, on, off)]


@rule("LpNormalization", since=1)
def _lp_norm(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    axis = norm_axis(ctx.attr("axis", -1), len(shape))
    p = ctx.attr("p", 2)
    if p == 1:
        n = reduce(b, b.abs(x), [axis], "add", 0, True)
    else:
        n = b.sqrt(reduce(b, b.multiply(x, x), [axis], "add", 0, True))
    return [b.divide(x, broadcast_to(b, n, shape))]


@rule("MeanVarianceNormalization", since=9)
def _mvn(ctx: NodeContext) -> list[Value]:
    from oxla_frontend_onnx.rules.nn import moments

    b, x = ctx.b, ctx.input(0)
    axes = [norm_axis(a, len(shape_of(x))) for a in ctx.attr("axes", [0, 2, 3])]
    mean, var = moments(ctx, x, axes)
    return [b.divide(b.subtract(x, mean),
                     b.add(b.sqrt(var), ctx.scalar_like(1e-9, var)))]


@rule("BitCast", since=26)
def _bitcast(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    to = element_type(ctx.attr("to"))
    src = etype(x)
    if to == src:
        return [x]
    sw, dw = src.bitwidth, to.bitwidth
    if sw != dw:
        raise ctx.fail(f"BitCast between widths {sw} and {dw} is not supported")
    if to == i1 or src == i1:
        raise ctx.fail("BitCast to or from bool is not supported")
    t = TensorType(shape_of(x), to)
    return [ctx.b.create("stablehlo.bitcast_convert", [x], {}, [t]).results[0]]


def _cumulative(ctx: NodeContext, op: str, init: float) -> Value:
    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    r = len(shape)
    axis = norm_axis(int(np.asarray(ctx.const_required(1, "the axis")).reshape(-1)[0]), r)
    n = shape[axis]
    rev = bool(ctx.attr("reverse", 0))
    rv = {"dimensions": A.i64_array([axis])}
    if rev:
        x = b.create("stablehlo.reverse", [x], rv).results[0]
    win = [1] * r
    win[axis] = n
    pads = [(0, 0)] * r
    pads[axis] = (n - 1, 0)
    y = reduce_window(b, x, init, op, win, [1] * r, pads)
    if ctx.attr("exclusive", 0):
        sl = b.slice(y, [0] * r, [d - 1 if i == axis else d for i, d in enumerate(shape)])
        lo = [1 if i == axis else 0 for i in range(r)]
        y = pad(b, sl, lo, [0] * r, splat(b, init, etype(x)))
    if rev:
        y = b.create("stablehlo.reverse", [y], rv).results[0]
    return y


@rule("CumProd", since=26)
def _cumprod(ctx: NodeContext) -> list[Value]:
    return [_cumulative(ctx, "multiply", 1)]


@rule("Einsum", since=12)
def _einsum(ctx: NodeContext) -> list[Value]:
    """Any einsum as a chain of two-operand ``dot_general``s plus reductions (explicit or
    implicit output; ``...`` broadcast dims)."""
    b = ctx.b
    ops = ctx.inputs()
    eq = ctx.attr("equation").replace(" ", "")
    lhs, _, out = eq.partition("->")
    terms = lhs.split(",")
    ell_rank = 0
    for t, v in zip(terms, ops):
        if "..." in t:
            ell_rank = max(ell_rank, len(shape_of(v)) - (len(t) - 3))
    ell = "".join(chr(0x100 + i) for i in range(ell_rank))
    terms = [t.replace("...", ell[ell_rank - (len(shape_of(v)) - (len(t) - 3)):])
             for t, v in zip(terms, ops)]
    if not _:
        counts = {c: sum(t.count(c) for t in terms) for c in set("".join(terms))}
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    sizes = {}
    for t, v in zip(terms, ops):
        for c, d in zip(t, shape_of(v)):
            sizes[c] = max(sizes.get(c, 1), d)
    cur, cur_t = ops[0], terms[0]
    cur, cur_t = _einsum_diag(ctx, cur, cur_t)
    for v, t in zip(ops[1:], terms[1:]):
        v, t = _einsum_diag(ctx, v, t)
        rest = "".join(terms[terms.index(t) + 1:]) if t in terms else ""
        keep = set(out) | set(rest)
        cur, cur_t = _sum_out(ctx, cur, cur_t, set(t) | keep)
        v, t = _sum_out(ctx, v, t, set(cur_t) | keep)
        batch = [c for c in cur_t if c in t and c in keep]
        contract = [c for c in cur_t if c in t and c not in keep]
        for c in batch + contract:  # broadcast size-1 dims to the common size
            cur = _grow(ctx, cur, cur_t, c, sizes[c])
            v = _grow(ctx, v, t, c, sizes[c])
        cur = b.dot_general(cur, v, (tuple(cur_t.index(c) for c in contract),
                                     tuple(t.index(c) for c in contract)),
                            (tuple(cur_t.index(c) for c in batch),
                             tuple(t.index(c) for c in batch)))
        cur_t = "".join(batch) + "".join(c for c in cur_t if c not in batch + contract) + \
            "".join(c for c in t if c not in batch + contract)
    cur, cur_t = _sum_out(ctx, cur, cur_t, set(out))
    for c in out:
        if c not in cur_t:
            raise ctx.fail(f"Einsum output label '{c}' is not in any input")
    y = b.transpose(cur, [cur_t.index(c) for c in out]) if cur_t != out else cur
    return [y]


def _grow(ctx: NodeContext, v: Value, t: str, c: str, size: int) -> Value:
    s = list(shape_of(v))
    i = t.index(c)
    if s[i] == size:
        return v
    s[i] = size
    return ctx.b.broadcast_in_dim(ctx.b.reshape(v, [d for k, d in enumerate(shape_of(v))
                                                    if k != i]), s,
                                  [k for k in range(len(s)) if k != i])


def _sum_out(ctx: NodeContext, v: Value, t: str, keep: set[str]) -> tuple[Value, str]:
    dims = [i for i, c in enumerate(t) if c not in keep]
    if not dims:
        return v, t
    return reduce(ctx.b, v, dims, "add", 0), "".join(c for c in t if c in keep)


def _einsum_diag(ctx: NodeContext, v: Value, t: str) -> tuple[Value, str]:
    """A label repeated within one term takes the diagonal."""
    b = ctx.b
    while len(set(t)) < len(t):
        c = next(ch for ch in t if t.count(ch) > 1)
        i, j = t.index(c), t.index(c, t.index(c) + 1)
        s = shape_of(v)
        eq = b.compare("EQ", b.iota(s, i64, i), b.iota(s, i64, j), "SIGNED")
        v = b.select(eq, v, splat(b, 0, etype(v), s))
        v = reduce(b, v, [j], "add", 0)
        t = t[:j] + t[j + 1:]
    return v, t


@rule("CenterCropPad", since=18)
def _center_crop_pad(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    r = len(shape)
    target = ctx.ints(1)
    axes = ctx.attr("axes", list(range(r)))
    axes = [norm_axis(a, r) for a in axes]
    lo_crop, hi_crop = [0] * r, list(shape)
    lo_pad, hi_pad = [0] * r, [0] * r
    for a, want in zip(axes, target):
        have = shape[a]
        if want < have:
            start = (have - want) // 2
            lo_crop[a], hi_crop[a] = start, start + want
        elif want > have:
            extra = want - have
            lo_pad[a], hi_pad[a] = extra // 2, extra - extra // 2
    y = b.slice(x, lo_crop, hi_crop)
    if any(lo_pad) or any(hi_pad):
        y = pad(b, y, lo_pad, hi_pad, splat(b, 0, etype(x)))
    return [y]


def _window(ctx: NodeContext, coeffs: tuple[float, ...]) -> Value:
    """``sum_k (-1)^k a_k cos(2 pi k n / N)`` for n in [0, size)."""
    b = ctx.b
    size = int(np.asarray(ctx.const_required(0, "the window size")).reshape(-1)[0])
    et = element_type(ctx.attr("output_datatype", 1))
    from oxla.ir.types import f64

    n = b.iota((size,), f64, 0)
    denom = size if ctx.attr("periodic", 1) else size - 1
    acc = splat(b, coeffs[0], f64, (size,))
    for k, a in enumerate(coeffs[1:], start=1):
        ang = b.multiply(n, splat(b, 2 * np.pi * k / denom, f64, (size,)))
        term = b.multiply(b.cosine(ang), splat(b, a * (-1) ** k, f64, (size,)))
        acc = b.add(acc, term)
    return b.convert(acc, et)


@rule("HannWindow", since=17)
def _hann(ctx: NodeContext) -> list[Value]:
    return [_window(ctx, (0.5, 0.5))]


@rule("HammingWindow", since=17)
def _hamming(ctx: NodeContext) -> list[Value]:
    return [_window(ctx, (25 / 46, 21 / 46))]


@rule("BlackmanWindow", since=17)
def _blackman(ctx: NodeContext) -> list[Value]:
    return [_window(ctx, (0.42, 0.5, 0.08))]


@rule("ReverseSequence", since=10)
def _reverse_sequence(ctx: NodeContext) -> list[Value]:
    from oxla_frontend_onnx.rules.shape import _gather_elements_values

    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    ta, ba = ctx.attr("time_axis", 0), ctx.attr("batch_axis", 1)
    lens = b.broadcast_in_dim(convert(b, ctx.input(1), i64), shape, [ba])
    t = b.iota(shape, i64, ta)
    rev = b.subtract(b.subtract(lens, splat(b, 1, i64, shape)), t)
    src = b.select(b.compare("LT", t, lens, "SIGNED"), rev, t)
    return [_gather_elements_values(ctx, x, src, ta)]

