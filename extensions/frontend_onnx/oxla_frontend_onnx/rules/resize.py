"""Resize (and Upsample): separable interpolation as one constant weight matrix per
resized axis, applied with ``dot_general`` from the last axis to the first (the order
the ONNX reference interpolates in). The matrices follow the operator's formulas for
every coordinate transformation, nearest rounding mode, linear and cubic (with
``exclude_outside`` and antialiasing) and ``tf_crop_and_resize`` extrapolation."""

from __future__ import annotations

import math

import numpy as np

from oxla.ir import Value
from oxla.ir.types import FloatType
from oxla_frontend_onnx.emit import etype, norm_axis, shape_of
from oxla_frontend_onnx.registry import NodeContext, rule


def _coord(i: np.ndarray, n: int, m: int, s: float, mode: str,
           roi: tuple[float, float] | None) -> np.ndarray:
    """Input coordinates of output indices ``i`` (ONNX Resize's formulas); the output
    length in them is the real ``n * s``, ``m`` its integer part."""
    length = s * n
    if mode == "half_pixel":
        return (i + 0.5) / s - 0.5
    if mode == "half_pixel_symmetric":
        center = n / 2
        return center * (1 - m / length) + (i + 0.5) / s - 0.5
    if mode == "pytorch_half_pixel":
        return (i + 0.5) / s - 0.5 if length != 1 else np.full(i.shape, -0.5)
    if mode == "align_corners":
        return i * (n - 1) / (length - 1) if length != 1 else np.zeros(i.shape)
    if mode == "asymmetric":
        return i / s
    if mode == "tf_crop_and_resize":
        start, end = roi if roi is not None else (0.0, 1.0)
        if length == 1:
            return np.full(i.shape, (end - start) * (n - 1) / 2 + start * (n - 1))
        return i * (end - start) * (n - 1) / (length - 1) + start * (n - 1)
    raise ValueError(f"coordinate_transformation_mode '{mode}'")


def _nearest(x: np.ndarray, mode: str) -> np.ndarray:
    frac = x - np.floor(x)
    if mode == "round_prefer_floor":
        return np.where(frac == 0.5, np.floor(x), np.round(x))
    if mode == "round_prefer_ceil":
        return np.where(frac == 0.5, np.ceil(x), np.round(x))
    if mode == "floor":
        return np.floor(x)
    if mode == "ceil":
        return np.ceil(x)
    raise ValueError(f"nearest_mode '{mode}'")


def _cubic(t: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic kernel at distances ``t``."""
    t = np.abs(t)
    return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                    np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))


def weights(n: int, m: int, s: float, mode: str, coord_mode: str, nearest_mode: str,
            cubic_a: float, exclude_outside: bool, antialias: bool,
            roi: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray]:
    """``(W [m, n], outside [m])``: output ``i`` is ``W[i] @ x`` (or the extrapolation
    value where ``outside[i]``)."""
    i = np.arange(m, dtype=np.float64)
    x = _coord(i, n, m, s, coord_mode, roi)
    w = np.zeros((m, n))
    outside = np.zeros(m, bool)
    if coord_mode == "tf_crop_and_resize":
        outside = (x < 0) | (x > n - 1)
    if mode == "nearest":
        j = np.clip(_nearest(x, nearest_mode), 0, n - 1).astype(np.int64)
        w[np.arange(m), j] = 1.0
    else:
        support = 1.0 if mode == "linear" else 2.0
        scale = min(s, 1.0) if antialias else 1.0
        for r in range(m):
            lo = math.floor(x[r] - support / scale) + 1
            hi = math.ceil(x[r] + support / scale) - 1
            taps = np.arange(lo, hi + 1)
            d = (taps - x[r]) * scale
            if mode == "linear":
                k = np.maximum(0.0, 1 - np.abs(d))
            else:
                k = _cubic(d, cubic_a)
            inside = (taps >= 0) & (taps <= n - 1)
            if exclude_outside:
                k = np.where(inside, k, 0.0)
            if antialias or exclude_outside:  # outside taps read the edge (clamped)
                tot = k.sum()
                k = k / tot if tot else k
            for tap, kv in zip(np.clip(taps, 0, n - 1), k):
                w[r, tap] += kv
    w[outside] = 0.0
    return w, outside


def _sizes(ctx: NodeContext, shape: tuple[int, ...], axes: list[int]
           ) -> tuple[list[int], list[float]]:
    """Output sizes and scales of every dim (1.0 / unchanged off ``axes``)."""
    r = len(shape)
    scales_in = ctx.const(2) if ctx.has(2) else None
    sizes_in = ctx.const(3) if ctx.has(3) else None
    if ctx.has(2) and scales_in is None:
        scales_in = ctx.const_required(2, "Resize's scales")
    if ctx.has(3) and sizes_in is None:
        sizes_in = ctx.const_required(3, "Resize's sizes")
    out, sc = list(shape), [1.0] * r
    if scales_in is not None and np.asarray(scales_in).size:
        for a, v in zip(axes, np.asarray(scales_in, np.float64).reshape(-1)):
            sc[a] = float(v)
            out[a] = int(math.floor(shape[a] * float(np.float32(v))))
        return out, sc
    if sizes_in is None:
        raise ctx.fail("Resize needs scales or sizes")
    want = [int(v) for v in np.asarray(sizes_in).reshape(-1)]
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
    if policy != "stretch":
        ratios = [want[k] / shape[a] for k, a in enumerate(axes)]
        s = min(ratios) if policy == "not_larger" else max(ratios)
        for a in axes:
            sc[a] = s
            out[a] = int(math.floor(s * shape[a] + 0.5))
        return out, sc
    for k, a in enumerate(axes):
        out[a] = want[k]
        sc[a] = want[k] / shape[a]
    return out, sc


def _resize(ctx: NodeContext, x: Value, out: list[int], sc: list[float], mode: str,
            coord_mode: str, roi: np.ndarray | None,
            nearest_default: str = "round_prefer_floor") -> Value:
    b = ctx.b
    shape = shape_of(x)
    r = len(shape)
    et = etype(x)
    if not isinstance(et, FloatType) and mode != "nearest":
        raise ctx.fail(f"{mode} Resize of {et} tensors is not supported")
    cur = x
    extrap = float(ctx.attr("extrapolation_value", 0.0))
    for a in reversed(range(r)):
        n, m = shape[a], out[a]
        ident = n == m and coord_mode not in ("tf_crop_and_resize",) and (
            mode == "nearest" or sc[a] == 1.0)
        if ident and sc[a] == 1.0:
            continue
        span = None
        if roi is not None and roi.size == 2 * r:
            span = (float(roi[a]), float(roi[a + r]))
        w, outside = weights(n, m, sc[a], mode, coord_mode,
                             ctx.attr("nearest_mode", nearest_default),
                             float(ctx.attr("cubic_coeff_a", -0.75)),
                             bool(ctx.attr("exclude_outside", 0)),
                             bool(ctx.attr("antialias", 0)), span)
        if np.array_equal(w, np.eye(n)) and not outside.any():
            continue
        wv = ctx.constant(w.T, et if isinstance(et, FloatType) else et)  # [n, m]
        cs = shape_of(cur)
        y = b.dot_general(cur, wv, ((a,), (0,)))  # [.. without a .., m]
        perm = list(range(r - 1))
        perm.insert(a, r - 1)
        y = b.transpose(y, perm)
        if outside.any():
            ys = shape_of(y)
            mask = np.broadcast_to(outside.reshape([-1 if k == a else 1 for k in range(r)]),
                                   ys)
            mv = b.constant(np.ascontiguousarray(mask))
            y = b.select(mv, ctx.scalar_like(extrap, y), y)
        del cs
        cur = y
    return cur


@rule("Resize", since=10)
def _resize_rule(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    shape = shape_of(x)
    r = len(shape)
    if ctx.opset < 11:  # Resize-10: (X, scales), asymmetric coordinates
        scales = np.asarray(ctx.const_required(1, "Resize's scales"), np.float64)
        out = [int(math.floor(d * float(np.float32(s)))) for d, s in zip(shape, scales)]
        mode = ctx.attr("mode", "nearest")
        return [_resize(ctx, x, out, [float(s) for s in scales],
                        "linear" if mode == "linear" else mode, "asymmetric", None, "floor")]
    axes = ctx.attr("axes")
    axes = list(range(r)) if axes is None else [norm_axis(a, r) for a in axes]
    out, sc = _sizes(ctx, shape, axes)
    mode = ctx.attr("mode", "nearest")
    coord = ctx.attr("coordinate_transformation_mode", "half_pixel")
    roi = None
    if ctx.has(1) and coord == "tf_crop_and_resize":
        roi = np.asarray(ctx.const_required(1, "Resize's roi"), np.float64).reshape(-1)
    if roi is not None and axes != list(range(r)) and roi.size == 2 * len(axes):
        full = np.concatenate([np.zeros(r), np.ones(r)])
        for k, a in enumerate(axes):
            full[a], full[a + r] = roi[k], roi[k + len(axes)]
        roi = full
    return [_resize(ctx, x, out, sc, mode, coord, roi)]


@rule("Upsample", since=7)
def _upsample(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    shape = shape_of(x)
    scales = ctx.attr("scales") if ctx.opset < 9 else np.asarray(
        ctx.const_required(1, "Upsample's scales"), np.float64)
    out = [int(math.floor(d * float(s))) for d, s in zip(shape, scales)]
    mode = ctx.attr("mode", "nearest")
    return [_resize(ctx, x, out, [float(s) for s in scales], mode, "asymmetric", None,
                    "floor")]

