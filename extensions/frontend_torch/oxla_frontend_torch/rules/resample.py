"""Resampling ATen ops: ``upsample_nearest2d``/``upsample_bilinear2d`` (gathers with
constant source indices and weights), transposed convolution (an input-dilated
``stablehlo.convolution``) and dropout (eval mode only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from oxla.errors import NotSupportedError
from oxla.ir import Value
from oxla.ir import attributes as A
from oxla.ir.types import IntegerType, TensorType
from oxla_frontend_torch.registry import LoweringContext, etype, lowering, shape_of

aten = torch.ops.aten


# -- upsampling -----------------------------------------------------------------------

def _take(ctx: LoweringContext, x: Value, dim: int, idx: np.ndarray) -> Value:
    """``x`` indexed along static ``dim`` by the constant ``idx`` (``stablehlo.gather``;
    ``dynamic_gather`` when another dim is ``?``, taken whole)."""
    from oxla_frontend_torch.rules.shape import _gather

    shape = shape_of(x)
    i64 = IntegerType(64)
    indices = ctx.const(idx.astype(np.int64).reshape(-1, 1), i64, (len(idx), 1))
    sizes: list[Any] = [1 if d == dim else (x, d) if n is None else n
                        for d, n in enumerate(shape)]
    out = TensorType(tuple(len(idx) if d == dim else n for d, n in enumerate(shape)), etype(x))
    return _gather(ctx, x, indices, [d for d in range(len(shape)) if d != dim], [dim], [dim],
                   1, sizes, out)


def _scale(size_in: int, size_out: int, scale: float | None, align_corners: bool) -> float:
    """torch's ``area_pixel_compute_scale``: output -> input coordinate scale."""
    if align_corners:
        return (size_in - 1) / (size_out - 1) if size_out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else size_in / size_out


def _spatial(ctx: LoweringContext, x: Value,
             scales: Sequence[float | None]) -> tuple[list[int], list[int], list[float | None]]:
    shape = shape_of(x)
    out = ctx.out_type().shape
    n = len(scales)
    ins, outs = list(shape[-n:]), list(out[-n:])
    if None in ins or None in outs:
        raise NotSupportedError(f"'{ctx.node.target}' over a dynamic ('?') spatial dimension",
                                loc=ctx.b.loc,
                                notes=["import for concrete shapes (arg_shapes=[...])"])
    return ins, outs, list(scales)


def _vec_scales(scale_factors: Sequence[float] | None, n: int) -> list[float | None]:
    return [None] * n if scale_factors is None else [float(s) for s in scale_factors]


def _nearest(ctx: LoweringContext, x: Value, scales: Sequence[float | None]) -> Value:
    """``out[i] = in[min(floor(i * scale), size_in - 1)]`` per spatial dim, with torch's
    float32 index arithmetic (``nearest_idx``)."""
    ins, outs, scales = _spatial(ctx, x, scales)
    lead = len(shape_of(x)) - len(ins)
    for k, (si, so, s) in enumerate(zip(ins, outs, scales)):
        if si == so:
            continue
        if so == 2 * si:
            idx = np.arange(so) >> 1
        else:
            sc = np.float32(_scale(si, so, s, False))
            idx = np.minimum(np.floor(np.arange(so, dtype=np.float32) * sc).astype(np.int64),
                             si - 1)
        x = _take(ctx, x, lead + k, idx)
    return x


@lowering(aten.upsample_nearest2d.vec, aten.upsample_nearest1d.vec,
          aten.upsample_nearest3d.vec)
def _upsample_nearest_vec(ctx: LoweringContext, x: Value, output_size: Any,
                          scale_factors: Sequence[float] | None) -> Value:
    """Nearest-neighbour upsampling (``F.interpolate(mode="nearest")``), static sizes."""
    return _nearest(ctx, x, _vec_scales(scale_factors, len(shape_of(x)) - 2))


@lowering(aten.upsample_nearest2d.default)
def _upsample_nearest2d(ctx: LoweringContext, x: Value, output_size: Any,
                        scales_h: float | None = None, scales_w: float | None = None) -> Value:
    return _nearest(ctx, x, [scales_h, scales_w])


def _linear_plan(si: int, so: int, scale: float | None, align_corners: bool
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Source rows ``i0, i1`` and weights ``l0, l1`` of linear interpolation, as torch's
    ``compute_indices_weights_linear`` (negative source coordinates clamp to 0)."""
    sc = _scale(si, so, scale, align_corners)
    dst = np.arange(so, dtype=np.float64)
    src = sc * dst if align_corners else np.maximum(sc * (dst + 0.5) - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), si - 1)
    i1 = np.where(i0 < si - 1, i0 + 1, i0)
    l1 = src - i0
    return i0, i1, 1.0 - l1, l1


def _bilinear(ctx: LoweringContext, x: Value, align_corners: bool,
              scales: Sequence[float | None]) -> Value:
    """``out = l0 * in[i0] + l1 * in[i1]`` along W, then along H (torch's separable form)."""
    ins, outs, scales = _spatial(ctx, x, scales)
    lead = len(shape_of(x)) - len(ins)
    et = etype(x)
    for k in reversed(range(len(ins))):
        si, so, s = ins[k], outs[k], scales[k]
        if si == so and not align_corners and s in (None, 1.0):
            continue
        d = lead + k
        i0, i1, l0, l1 = _linear_plan(si, so, s, align_corners)
        a, b = _take(ctx, x, d, i0), _take(ctx, x, d, i1)
        shape = shape_of(a)
        w0 = ctx.broadcast_in_dim(ctx.const(l0, et, (so,)), shape, [d], a)
        w1 = ctx.broadcast_in_dim(ctx.const(l1, et, (so,)), shape, [d], a)
        x = ctx.b.add(ctx.b.multiply(a, w0), ctx.b.multiply(b, w1))
    return x


@lowering(aten.upsample_bilinear2d.vec)
def _upsample_bilinear_vec(ctx: LoweringContext, x: Value, output_size: Any,
                           align_corners: bool, scale_factors: Sequence[float] | None) -> Value:
    """Bilinear upsampling (``F.interpolate(mode="bilinear", align_corners=...)``),
    static spatial sizes; float inputs."""
    return _bilinear(ctx, x, align_corners, _vec_scales(scale_factors, 2))


@lowering(aten.upsample_bilinear2d.default)
def _upsample_bilinear2d(ctx: LoweringContext, x: Value, output_size: Any, align_corners: bool,
                         scales_h: float | None = None, scales_w: float | None = None) -> Value:
    return _bilinear(ctx, x, align_corners, [scales_h, scales_w])


# -- transposed convolution -----------------------------------------------------------

def conv_transpose(ctx: LoweringContext, x: Value, w: Value, bias: Value | None,
                   stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                   output_padding: Sequence[int], groups: int) -> Value:
    """``aten.convolution(transposed=True)``: the gradient of a convolution, lowered as a
    stride-1 ``stablehlo.convolution`` of the input dilated by ``stride``
    (``lhs_dilation``), padded by ``dilation * (k - 1) - padding`` (plus
    ``output_padding`` at the high end), with the kernel's spatial dims reversed and its
    ``[Cin, Cout / groups, k...]`` layout regrouped to ``[Cout, Cin / groups, k...]``.

    Raises:
        NotSupportedError: ``padding > dilation * (k - 1)`` on a dynamic ('?') dim.
    """
    out = ctx.out_type()
    xs, ws = shape_of(x), shape_of(w)
    n = len(xs) - 2
    sp = tuple(range(2, 2 + n))

    def per_dim(v: Sequence[int]) -> list[int]:
        v = list(v)
        return v * n if len(v) == 1 else v

    s, p, d, op = (per_dim(v) for v in (stride, padding, dilation, output_padding))
    cin, cog, k = ws[0], ws[1], list(ws[2:])
    # [Cin, Cout/g, k] -> [g, Cin/g, Cout/g, k] -> [g, Cout/g, Cin/g, k] -> [Cout, Cin/g, k]
    kw = ctx.b.reshape(w, (groups, cin // groups, cog, *k))
    kw = ctx.b.transpose(kw, [0, 2, 1, *range(3, 3 + n)])
    kw = ctx.b.reshape(kw, (groups * cog, cin // groups, *k))
    kw = ctx.b.create("stablehlo.reverse", [kw], {"dimensions": A.i64_array(list(sp))}
                      ).results[0]
    lo = [d[i] * (k[i] - 1) - p[i] for i in range(n)]
    hi = [lo[i] + op[i] for i in range(n)]
    crop = any(v < 0 for v in lo + hi)
    full = tuple(out.shape[:2]) + tuple(
        None if xs[2 + i] is None else
        (xs[2 + i] - 1) * s[i] + 1 + max(lo[i], 0) + max(hi[i], 0) - d[i] * (k[i] - 1)
        for i in range(n))
    if crop and None in full:
        raise NotSupportedError("transposed convolution with padding > dilation * "
                                "(kernel - 1) on a dynamic ('?') dimension", loc=ctx.b.loc,
                                notes=["import for concrete shapes (arg_shapes=[...])"])
    pad = np.asarray([[max(a, 0), max(b, 0)] for a, b in zip(lo, hi)],
                     dtype=np.int64).reshape(n, 2)
    dn = A.ConvDimensionNumbers(0, 1, sp, 1, 0, sp, 0, 1, sp)
    attrs = {"dimension_numbers": dn, "window_strides": A.i64_array([1] * n),
             "padding": A.dense(pad, TensorType(pad.shape, IntegerType(64))),
             "lhs_dilation": A.i64_array(s), "rhs_dilation": A.i64_array(d),
             "feature_group_count": A.i64_attr(groups), "batch_group_count": A.i64_attr(1)}
    y = ctx.b.create("stablehlo.convolution", [x, kw], attrs,
                     [TensorType(full if crop else out.shape, out.element_type)]).results[0]
    if crop:
        start = [0, 0] + [max(-a, 0) for a in lo]
        limit = [full[0], full[1]] + [full[2 + i] - max(-hi[i], 0) for i in range(n)]
        y = ctx.b.slice(y, start, limit)
    if bias is not None:
        y = ctx.b.add(y, ctx.broadcast_in_dim(bias, out.shape, [1], y))
    return y


# -- dropout --------------------------------------------------------------------------

def _refuse_train_dropout(ctx: LoweringContext, p: float, train: bool | None) -> None:
    if train and p > 0:
        raise NotSupportedError(
            f"dropout in train mode (p={p}) needs torch's random numbers, which oxla "
            "cannot reproduce", loc=ctx.b.loc,
            notes=["call model.eval() before torch.export.export (oxla_frontend_torch."
                   "compile exports nn.Modules in eval mode) to compile for inference"])


@lowering(aten.native_dropout.default)
def _native_dropout(ctx: LoweringContext, x: Value, p: float, train: bool | None) -> list[Value]:
    """Dropout: the identity and an all-true mask when not training or ``p == 0``.

    Raises:
        NotSupportedError: train-mode dropout with ``p > 0``; oxla cannot reproduce torch's
            random stream, so the model must be exported after ``model.eval()``.
    """
    _refuse_train_dropout(ctx, p, train)
    return [x, ctx.splat(True, ctx.out_type(1).element_type, x)]


@lowering(aten.dropout.default)
def _dropout(ctx: LoweringContext, x: Value, p: float, train: bool) -> Value:
    """``aten.dropout``: the identity unless training (see ``native_dropout``)."""
    _refuse_train_dropout(ctx, p, train)
    return x
