"""The StableHLO workloads of ``bench/suite.py``: JAX functions across the op families,
each at a small size (dispatch matters) and a large one.

Not a test. ``workloads(size)`` returns ``(name, fn, args)`` triples; ``size`` is
``"small"`` or ``"large"``. Arguments are numpy arrays (seeded), so every engine gets the
same inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

F32 = np.float32


def workloads(size: str) -> list[tuple[str, Callable, list[np.ndarray]]]:
    """Every workload at ``size`` ("small" or "large")."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    big = size == "large"
    rng = np.random.default_rng(0)

    def r(*shape, scale=1.0, dtype=F32):
        return (rng.standard_normal(shape) * scale).astype(dtype)

    def ri(*shape, lo=-128, hi=128, dtype=np.int8):
        return rng.integers(lo, hi, shape).astype(dtype)

    out: list[tuple[str, Callable, list[np.ndarray]]] = []

    def add(name, fn, *args):
        out.append((name, fn, list(args)))

    # --- dots -----------------------------------------------------------------------
    m, k, n = (64, 256, 256) if big is False else (256, 1024, 1024)
    add("dot_f32_nn", lambda a, b: a @ b, r(m, k), r(k, n))
    add("dot_f32_tn", lambda a, b: a.T @ b, r(k, m), r(k, n))
    add("dot_f32_nt", lambda a, b: a @ b.T, r(m, k), r(n, k))
    add("dot_batched", lambda a, b: jnp.einsum("bmk,bkn->bmn", a, b),
        r(8, m // 2, k // 4), r(8, k // 4, n // 2))
    add("dot_bf16", lambda a, b: (a @ b).astype(jnp.float32),
        r(m, k).astype(jnp.bfloat16), r(k, n).astype(jnp.bfloat16))
    add("dot_f16", lambda a, b: (a @ b).astype(jnp.float32),
        r(m, k).astype(np.float16), r(k, n).astype(np.float16))
    add("dot_int8", lambda a, b: lax.dot(a, b, preferred_element_type=jnp.int32),
        ri(m, k), ri(k, n))

    def qdot(a, b, sa, sb):  # dequantize-after int8 GEMM, per-channel scales
        acc = lax.dot(a, b, preferred_element_type=jnp.int32)
        return acc.astype(jnp.float32) * sa[:, None] * sb[None, :]
    add("dot_int8_dequant", qdot, ri(m, k), ri(k, n), r(m) * 0.01, r(n) * 0.01)
    add("matvec", lambda a, x: a @ x, r(k * 2, k * 2), r(k * 2))

    # --- convolutions -----------------------------------------------------------------
    nb, c, hw = (1, 16, 32) if not big else (4, 32, 64)

    def conv(dn, stride=(1, 1), dil=(1, 1), groups=1, pad="SAME"):
        def f(x, w):
            return lax.conv_general_dilated(x, w, stride, pad, rhs_dilation=dil,
                                            feature_group_count=groups,
                                            dimension_numbers=dn)
        return f
    add("conv_nchw", conv(("NCHW", "OIHW", "NCHW")), r(nb, c, hw, hw), r(c, c, 3, 3, scale=.1))
    add("conv_nhwc", conv(("NHWC", "HWIO", "NHWC")), r(nb, hw, hw, c), r(3, 3, c, c, scale=.1))
    add("conv_strided", conv(("NHWC", "HWIO", "NHWC"), stride=(2, 2)),
        r(nb, hw, hw, c), r(3, 3, c, 2 * c, scale=.1))
    add("conv_dilated", conv(("NHWC", "HWIO", "NHWC"), dil=(2, 2)),
        r(nb, hw, hw, c), r(3, 3, c, c, scale=.1))
    add("conv_grouped", conv(("NHWC", "HWIO", "NHWC"), groups=4),
        r(nb, hw, hw, c), r(3, 3, c // 4, c, scale=.1))
    add("conv_depthwise", conv(("NHWC", "HWIO", "NHWC"), groups=c),
        r(nb, hw, hw, c), r(3, 3, 1, c, scale=.1))
    L = 256 if not big else 4096
    add("conv1d", lambda x, w: lax.conv_general_dilated(
        x, w, (1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC")),
        r(nb, L, c), r(5, c, c, scale=.1))
    d3 = 8 if not big else 16
    add("conv3d", lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1, 1), "SAME", dimension_numbers=("NDHWC", "DHWIO", "NDHWC")),
        r(1, d3, d3, d3, 8), r(3, 3, 3, 8, 8, scale=.1))
    add("conv_transposed", lambda x, w: lax.conv_transpose(
        x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
        r(nb, hw // 2, hw // 2, c), r(3, 3, c, c, scale=.1))

    # --- reductions -------------------------------------------------------------------
    R, C = (256, 256) if not big else (8192, 1024)
    add("reduce_rows_sum", lambda x: x.sum(1), r(R, C))
    add("reduce_cols_sum", lambda x: x.sum(0), r(R, C))
    add("reduce_max_3d_mid", lambda x: x.max(1), r(R // 16, 16 * 4, C // 4))
    add("argmax_rows", lambda x: jnp.argmax(x, 1), r(R, C))
    add("argmax_cols", lambda x: jnp.argmax(x, 0), r(R, C))
    add("argmin_rows", lambda x: jnp.argmin(x, 1), r(R, C))

    # --- cumulative (prefix reduce_window) ---------------------------------------------
    cr, cc = (64, 256) if not big else (2048, 1024)
    add("cumsum_rows", lambda x: jnp.cumsum(x, 1), r(cr, cc))
    add("cumsum_cols_rev", lambda x: lax.cumsum(x, 0, reverse=True), r(cr, cc))
    add("cumprod_rows", lambda x: jnp.cumprod(x, 1), (1 + 0.001 * r(cr, cc)))
    add("cummax_rows", lambda x: lax.cummax(x, 1), r(cr, cc))
    add("cumsum_int32", lambda x: jnp.cumsum(x, 1), ri(cr, cc, dtype=np.int32))

    # --- sort / top-k -----------------------------------------------------------------
    sr, sc = (32, 512) if not big else (256, 4096)
    add("sort_rows", lambda x: jnp.sort(x, 1), r(sr, sc))
    add("argsort_rows", lambda x: jnp.argsort(x, 1), r(sr, sc))
    add("top_k8", lambda x: lax.top_k(x, 8), r(sr, sc))

    # --- gather / scatter -------------------------------------------------------------
    V, D, T = (1000, 64, 128) if not big else (30000, 256, 4096)
    ids = rng.integers(0, V, (T,)).astype(np.int32)
    add("gather_rows", lambda t, i: t[i], r(V, D), ids)
    add("gather_take_along", lambda x, i: jnp.take_along_axis(x, i, 1),
        r(sr, sc), rng.integers(0, sc, (sr, 16)).astype(np.int32))
    add("scatter_add_rows", lambda t, i, u: t.at[i].add(u), r(V, D), ids, r(T, D))
    add("scatter_set", lambda t, i, u: t.at[i].set(u), r(V, D),
        rng.permutation(V)[:T].astype(np.int32), r(T, D))

    # --- loops ------------------------------------------------------------------------
    steps, bb, hh = (16, 4, 64) if not big else (64, 32, 256)

    def lstm(x, wx, wh, b):
        def cell(carry, xt):
            h, c_ = carry
            g = xt @ wx + h @ wh + b
            i, f, o, u = jnp.split(g, 4, -1)
            c_ = jax.nn.sigmoid(f) * c_ + jax.nn.sigmoid(i) * jnp.tanh(u)
            h = jax.nn.sigmoid(o) * jnp.tanh(c_)
            return (h, c_), h
        z = jnp.zeros((x.shape[1], wh.shape[0]), x.dtype)
        (h, _), hs = lax.scan(cell, (z, z), x)
        return hs
    add("lstm_scan", lstm, r(steps, bb, hh), r(hh, 4 * hh, scale=.05),
        r(hh, 4 * hh, scale=.05), r(4 * hh))

    def fori(x):
        return lax.fori_loop(0, steps * 4, lambda i, v: jnp.tanh(v * 1.01 + 0.1), x)
    add("fori_elementwise", fori, r(bb * 4, hh))

    def while_count(x):
        def body(s):
            v, i = s
            return v * 0.5 + 1.0, i + 1
        return lax.while_loop(lambda s: s[1] < steps, body, (x, 0))[0]
    add("while_small", while_count, r(8))

    # --- attention --------------------------------------------------------------------
    ab, ah, s_, dh = (1, 4, 64, 32) if not big else (4, 8, 256, 64)

    def attn(mask_kind):
        def f(q, k_, v, lens):
            att = jnp.einsum("bhqd,bhkd->bhqk", q, k_) / math.sqrt(q.shape[-1])
            if mask_kind == "causal":
                m_ = jnp.tril(jnp.ones((s_, s_), bool))[None, None]
            else:  # key padding
                m_ = (jnp.arange(s_)[None, :] < lens[:, None])[:, None, None, :]
            att = jax.nn.softmax(jnp.where(m_, att, -jnp.inf), axis=-1)
            return jnp.einsum("bhqk,bhkd->bhqd", att, v)
        return f
    lens = rng.integers(s_ // 2, s_ + 1, (ab,)).astype(np.int32)
    qkv = [r(ab, ah, s_, dh) for _ in range(3)]
    add("attention_causal", attn("causal"), *qkv, lens)
    add("attention_padmask", attn("pad"), *qkv, lens)

    # --- normalizations ---------------------------------------------------------------
    nr, nd = (128, 256) if not big else (4096, 1024)

    def layer_norm(x, g, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) * lax.rsqrt(var + 1e-5) * g + b
    add("layer_norm", layer_norm, r(nr, nd), r(nd), r(nd))
    add("rms_norm", lambda x, g: x * lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g,
        r(nr, nd), r(nd))

    def group_norm(x, g):  # NHWC, 8 groups
        n_, h_, w_, c_ = x.shape
        y = x.reshape(n_, h_, w_, 8, c_ // 8)
        mu = y.mean((1, 2, 4), keepdims=True)
        var = y.var((1, 2, 4), keepdims=True)
        return ((y - mu) * lax.rsqrt(var + 1e-5)).reshape(x.shape) * g
    add("group_norm", group_norm, r(nb, hw, hw, c), r(c))

    def batch_norm(x, g, b):  # training-mode statistics over N, H, W
        mu = x.mean((0, 1, 2))
        var = x.var((0, 1, 2))
        return (x - mu) * lax.rsqrt(var + 1e-5) * g + b
    add("batch_norm", batch_norm, r(nb, hw, hw, c), r(c), r(c))
    add("softmax_rows", lambda x: jax.nn.softmax(x, -1), r(nr, nd))

    # --- elementwise / layout ---------------------------------------------------------
    er, ec = (256, 256) if not big else (2048, 2048)
    add("ew_chain_bcast", lambda x, b: jnp.tanh(x * b[None, :] + 1.0) * jax.nn.sigmoid(x),
        r(er, ec), r(ec))
    add("ew_transpose_add", lambda x, y: x.T + y * 2.0, r(er, ec), r(ec, er))
    add("gelu", jax.nn.gelu, r(er, ec))
    add("pad_concat_slice", lambda x, y: jnp.concatenate(
        [jnp.pad(x, ((1, 1), (2, 2)))[:, 1:-1], y[:, ::2]], 0), r(er, ec), r(er, 2 * ec + 4))
    add("dynamic_slice", lambda x, i: lax.dynamic_slice(x, (i, i), (er // 2, ec // 2)) * 2.0,
        r(er, ec), np.int32(3))
    add("dynamic_update_slice", lambda x, u, i: lax.dynamic_update_slice(x, u, (i, i)),
        r(er, ec), r(er // 4, ec // 4), np.int32(5))

    # --- fft / rng --------------------------------------------------------------------
    fn_ = 1024 if not big else 16384
    add("rfft", lambda x: jnp.abs(jnp.fft.rfft(x, axis=-1)), r(16, fn_))
    add("fft_complex", lambda x: jnp.fft.fft(x.astype(jnp.complex64), axis=-1).real,
        r(16, fn_))
    rn = 1 << 12 if not big else 1 << 22
    add("rng_uniform", lambda key: jax.random.uniform(jax.random.wrap_key_data(key), (rn,)),
        np.array([0, 42], np.uint32))
    return out
