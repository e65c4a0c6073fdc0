"""Recurrent layers: RNN, GRU, LSTM (forward, reverse, bidirectional; ``layout`` 0/1;
``sequence_lens``; peepholes; ``clip``; custom activations), unrolled over the static
sequence length."""

from __future__ import annotations

from collections.abc import Callable

from oxla.ir import Builder, Value
from oxla.ir.types import i64
from oxla_frontend_onnx.emit import convert, shape_of, splat
from oxla_frontend_onnx.registry import NodeContext, rule

MAX_UNROLL = 1024


def _activation(b: Builder, name: str, alpha: float | None,
                beta: float | None) -> Callable[[Value], Value]:
    def sc(v: Value, c: float) -> Value:
        return b.broadcast_in_dim(splat(b, c, v.type.element_type), shape_of(v), [])

    n = name.lower()
    if n == "sigmoid":
        return b.logistic
    if n == "tanh":
        return b.tanh
    if n == "relu":
        return lambda v: b.maximum(v, sc(v, 0))
    if n == "hardsigmoid":
        a, c = (0.2 if alpha is None else alpha), (0.5 if beta is None else beta)
        return lambda v: b.clamp(sc(v, 0), b.add(b.multiply(v, sc(v, a)), sc(v, c)), sc(v, 1))
    if n == "leakyrelu":
        a = 0.01 if alpha is None else alpha
        return lambda v: b.select(b.compare("GT", v, sc(v, 0), "FLOAT"), v,
                                  b.multiply(v, sc(v, a)))
    if n == "affine":
        return lambda v: b.add(b.multiply(v, sc(v, alpha or 1.0)), sc(v, beta or 0.0))
    if n == "scaledtanh":
        return lambda v: b.multiply(sc(v, alpha or 1.0), b.tanh(b.multiply(v, sc(v, beta or 1.0))))
    if n == "thresholdedrelu":
        a = 1.0 if alpha is None else alpha
        return lambda v: b.select(b.compare("GT", v, sc(v, a), "FLOAT"), v, sc(v, 0))
    if n == "elu":
        a = 1.0 if alpha is None else alpha
        return lambda v: b.select(b.compare("GT", v, sc(v, 0), "FLOAT"), v,
                                  b.multiply(sc(v, a), b.exponential_minus_one(v)))
    if n == "softsign":
        return lambda v: b.divide(v, b.add(sc(v, 1), b.abs(v)))
    if n == "softplus":
        return lambda v: b.log_plus_one(b.exponential(v))
    raise ValueError(name)


def _acts(ctx: NodeContext, defaults: list[str], dirs: int) -> list[list[Callable]]:
    names = ctx.attr("activations") or defaults * dirs
    alphas = list(ctx.attr("activation_alpha") or [])
    betas = list(ctx.attr("activation_beta") or [])
    k = len(defaults)
    if len(names) == k and dirs == 2:
        names = names * 2
    out, ai, bi = [], 0, 0
    for d in range(dirs):
        fns = []
        for name in names[d * k:(d + 1) * k]:
            needs = name.lower() in ("hardsigmoid", "leakyrelu", "affine", "scaledtanh",
                                     "thresholdedrelu", "elu")
            a = alphas[ai] if needs and ai < len(alphas) else None
            bb = betas[bi] if name.lower() in ("hardsigmoid", "affine", "scaledtanh") and \
                bi < len(betas) else None
            ai += needs and ai < len(alphas)
            bi += bb is not None
            try:
                fns.append(_activation(ctx.b, name, a, bb))
            except ValueError:
                raise ctx.fail(f"activation '{name}' is not supported") from None
        out.append(fns)
    return out


def _mm_t(b: Builder, x: Value, w: Value) -> Value:
    """``x @ w^T`` for x [batch, k], w [n, k]."""
    return b.dot_general(x, w, ((1,), (1,)))


def _slice_dir(b: Builder, v: Value, d: int) -> Value:
    s = shape_of(v)
    return b.reshape(b.slice(v, [d] + [0] * (len(s) - 1), [d + 1, *s[1:]]), s[1:])


def _rows(b: Builder, v: Value, k: int, n: int) -> Value:
    """Rows ``k*n:(k+1)*n`` of a [G*n, ...] matrix (or elements of a vector)."""
    s = shape_of(v)
    return b.slice(v, [k * n] + [0] * (len(s) - 1), [(k + 1) * n, *s[1:]])


def _recurrent(ctx: NodeContext, gates: int, defaults: list[str], step) -> list[Value | None]:
    b = ctx.b
    x = ctx.input(0)
    layout = ctx.attr("layout", 0)
    if layout:
        x = b.transpose(x, (1, 0, 2))
    seq, batch, _ = shape_of(x)
    if seq > MAX_UNROLL:
        raise ctx.fail(f"sequence length {seq} is over the unroll limit {MAX_UNROLL}")
    w, r = ctx.input(1), ctx.input(2)
    hsz = ctx.attr("hidden_size") or shape_of(r)[-1]
    direction = ctx.attr("direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    acts = _acts(ctx, defaults, dirs)
    et = x.type.element_type
    lens = convert(b, ctx.input(4), i64) if ctx.has(4) else None
    ys, hs, cs = [], [], []
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        wd, rd = _slice_dir(b, w, d), _slice_dir(b, r, d)
        bias = _slice_dir(b, ctx.input(3), d) if ctx.has(3) else None
        h = _slice_dir(b, ctx.input(5), d) if ctx.has(5) else splat(b, 0, et, (batch, hsz))
        c = _slice_dir(b, ctx.input(6), d) if ctx.has(6) else splat(b, 0, et, (batch, hsz))
        wg = [_rows(b, wd, k, hsz) for k in range(gates)]
        rg = [_rows(b, rd, k, hsz) for k in range(gates)]
        bg = None
        if bias is not None:
            bg = [(b.broadcast_in_dim(_rows(b, bias, k, hsz), (batch, hsz), [1]),
                   b.broadcast_in_dim(_rows(b, bias, gates + k, hsz), (batch, hsz), [1]))
                  for k in range(gates)]
        outs: list[Value | None] = [None] * seq
        order = range(seq - 1, -1, -1) if reverse else range(seq)
        for t in order:
            xt = b.reshape(b.slice(x, [t, 0, 0], [t + 1, batch, shape_of(x)[2]]),
                           (batch, shape_of(x)[2]))
            xw = [_mm_t(b, xt, wk) for wk in wg]
            h_new, c_new = step(ctx, xw, h, c, rg, bg, acts[d], d, hsz)
            if lens is not None:  # past its length a batch entry keeps its state
                live = b.compare("GT", b.broadcast_in_dim(lens, (batch, hsz), [0]),
                                 splat(b, t, i64, (batch, hsz)), "SIGNED")
                h = b.select(live, h_new, h)
                c = b.select(live, c_new, c) if c_new is not None else c
                outs[t] = b.select(live, h_new, splat(b, 0, et, (batch, hsz)))
            else:
                h, c = h_new, (c_new if c_new is not None else c)
                outs[t] = h_new
        ys.append(b.concatenate([b.reshape(o, (1, 1, batch, hsz)) for o in outs], 0))
        hs.append(b.reshape(h, (1, batch, hsz)))
        cs.append(b.reshape(c, (1, batch, hsz)))
    y = ys[0] if dirs == 1 else b.concatenate(ys, 1)
    yh = hs[0] if dirs == 1 else b.concatenate(hs, 0)
    yc = cs[0] if dirs == 1 else b.concatenate(cs, 0)
    if layout:
        y = b.transpose(y, (2, 0, 1, 3))
        yh = b.transpose(yh, (1, 0, 2))
        yc = b.transpose(yc, (1, 0, 2))
    return [y, yh, yc]


def _clip(ctx: NodeContext, v: Value) -> Value:
    c = ctx.attr("clip")
    if c is None:
        return v
    b = ctx.b
    lo = b.broadcast_in_dim(splat(b, -c, v.type.element_type), shape_of(v), [])
    hi = b.broadcast_in_dim(splat(b, c, v.type.element_type), shape_of(v), [])
    return b.clamp(lo, v, hi)


def _gate(ctx: NodeContext, xw: Value, h: Value, rk: Value, bg, k: int) -> Value:
    b = ctx.b
    g = b.add(xw, _mm_t(b, h, rk))
    if bg is not None:
        g = b.add(g, b.add(bg[k][0], bg[k][1]))
    return _clip(ctx, g)


@rule("RNN", since=7)
def _rnn(ctx: NodeContext) -> list[Value | None]:
    def step(ctx, xw, h, c, rg, bg, acts, d, hsz):
        return acts[0](_gate(ctx, xw[0], h, rg[0], bg, 0)), None

    return _recurrent(ctx, 1, ["Tanh"], step)[:2]


@rule("GRU", since=7)
def _gru(ctx: NodeContext) -> list[Value | None]:
    lbr = ctx.attr("linear_before_reset", 0)

    def step(ctx, xw, h, c, rg, bg, acts, d, hsz):
        b = ctx.b
        f, g = acts
        z = f(_gate(ctx, xw[0], h, rg[0], bg, 0))
        r = f(_gate(ctx, xw[1], h, rg[1], bg, 1))
        if lbr:
            rh = _mm_t(b, h, rg[2])
            if bg is not None:
                rh = b.add(rh, bg[2][1])
            pre = b.add(xw[2], b.multiply(r, rh))
            if bg is not None:
                pre = b.add(pre, bg[2][0])
        else:
            pre = b.add(xw[2], _mm_t(b, b.multiply(r, h), rg[2]))
            if bg is not None:
                pre = b.add(pre, b.add(bg[2][0], bg[2][1]))
        hh = g(_clip(ctx, pre))
        one = b.broadcast_in_dim(splat(b, 1, z.type.element_type), shape_of(z), [])
        return b.add(b.multiply(b.subtract(one, z), hh), b.multiply(z, h)), None

    return _recurrent(ctx, 3, ["Sigmoid", "Tanh"], step)[:2]


@rule("LSTM", since=7)
def _lstm(ctx: NodeContext) -> list[Value | None]:
    b = ctx.b
    peep = ctx.input(7) if ctx.has(7) else None
    if ctx.attr("input_forget", 0):
        raise ctx.fail("LSTM input_forget=1 is not supported")

    def step(ctx, xw, h, c, rg, bg, acts, d, hsz):
        f, g, hact = acts
        batch = shape_of(h)[0]
        pd = None
        if peep is not None:
            pv = _slice_dir(b, peep, d)
            pd = [b.broadcast_in_dim(_rows(b, pv, k, hsz), (batch, hsz), [1]) for k in range(3)]
        gi = _gate(ctx, xw[0], h, rg[0], bg, 0)
        gf = _gate(ctx, xw[2], h, rg[2], bg, 2)
        if pd is not None:
            gi = b.add(gi, b.multiply(pd[0], c))
            gf = b.add(gf, b.multiply(pd[2], c))
        i, fg = f(gi), f(gf)
        cc = g(_gate(ctx, xw[3], h, rg[3], bg, 3))
        c_new = b.add(b.multiply(fg, c), b.multiply(i, cc))
        go = _gate(ctx, xw[1], h, rg[1], bg, 1)
        if pd is not None:
            go = b.add(go, b.multiply(pd[1], c_new))
        o = f(go)
        return b.multiply(o, hact(c_new)), c_new

    return _recurrent(ctx, 4, ["Sigmoid", "Tanh", "Tanh"], step)

