"""Reductions, scans and tensor creation ATen ops."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from oxla.ir import Value
from oxla.ir import attributes as A
from oxla.ir.types import IntegerType, TensorType, is_float
from oxla_frontend_torch.registry import (
    LoweringContext,
    etype,
    lowering,
    norm_dim,
    shape_of,
)

aten = torch.ops.aten


def _dims(x: Value, dims: Any) -> list[int]:
    r = len(shape_of(x))
    if dims is None or (isinstance(dims, Sequence) and len(dims) == 0):
        return list(range(r))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({norm_dim(d, r) for d in dims})


def _reduce(kind: str):
    def rule(ctx: LoweringContext, x: Value, dims: Any = None, keepdim: bool = False, *,
             dtype: Any = None) -> Value:
        out = ctx.out_type()
        v = ctx.convert(x, out.element_type)
        if kind == "add" and etype(v) == IntegerType(1):
            v = ctx.convert(v, IntegerType(64))
        r = ctx.reduce(v, _dims(x, dims), kind)
        return ctx.reshape(ctx.convert(r, out.element_type), out.shape)

    return rule


lowering(aten.sum.dim_IntList, aten.sum.default)(_reduce("add"))
lowering(aten.prod.dim_int, aten.prod.default)(_reduce("multiply"))
lowering(aten.amax.default, aten.max.default)(_reduce("maximum"))
lowering(aten.amin.default, aten.min.default)(_reduce("minimum"))
lowering(aten.any.dim, aten.any.dims, aten.any.default)(_reduce("or"))
lowering(aten.all.dim, aten.all.dims, aten.all.default)(_reduce("and"))


@lowering(aten.mean.dim, aten.mean.default)
def _mean(ctx: LoweringContext, x: Value, dims: Any = None, keepdim: bool = False, *,
          dtype: Any = None) -> Value:
    out = ctx.out_type()
    ds = _dims(x, dims)
    s = ctx.reduce(ctx.convert(x, out.element_type), ds, "add")
    s = ctx.b.divide(s, ctx.broadcast_in_dim(element_count(ctx, x, ds, 0, out.element_type),
                                             shape_of(s), [], s))
    return ctx.reshape(s, out.shape)


def element_count(ctx: LoweringContext, x: Value, ds: Sequence[int], minus: Any, et: Any) -> Value:
    """``tensor<et>``: ``max(prod(sizes of x over ds) - minus, 0)``, a constant when those
    sizes are static, else computed from ``get_dimension_size`` at run time."""
    sizes = [shape_of(x)[d] for d in ds]
    if None not in sizes:
        return ctx.const(max(int(np.prod(sizes)) - minus, 0), et)
    n = ctx.const(1, IntegerType(64))
    for d in ds:
        n = ctx.b.multiply(n, ctx.size(x, d))
    n = ctx.convert(n, et)
    if minus:
        n = ctx.b.maximum(ctx.b.subtract(n, ctx.const(minus, et)), ctx.const(0, et))
    return n


@lowering(aten.var.correction, aten.var.dim)
def _var(ctx: LoweringContext, x: Value, dims: Any = None, *args: Any, correction: Any = None,
         keepdim: bool = False, unbiased: Any = None) -> Value:
    if ctx.node.target is aten.var.dim:  # var.dim(x, dims, unbiased=True, keepdim=False)
        unbiased = args[0] if args else (True if unbiased is None else unbiased)
        keepdim = args[1] if len(args) > 1 else keepdim
        correction = 1 if unbiased else 0
    elif correction is None:
        correction = 1
    out = ctx.out_type()
    ds = _dims(x, dims)
    et = out.element_type
    x = ctx.convert(x, et)
    total = ctx.reduce(x, ds, "add")
    mean = ctx.b.divide(total, ctx.broadcast_in_dim(element_count(ctx, x, ds, 0, et),
                                                    shape_of(total), [], total))
    keep = [d for d in range(len(shape_of(x))) if d not in ds]
    centered = ctx.b.subtract(x, ctx.broadcast_in_dim(mean, shape_of(x), keep, x))
    ss = ctx.reduce(ctx.b.multiply(centered, centered), ds, "add")
    ss = ctx.b.divide(ss, ctx.broadcast_in_dim(element_count(ctx, x, ds, correction, et),
                                               shape_of(ss), [], ss))
    return ctx.reshape(ss, out.shape)


def _arg(kind: str):
    def rule(ctx: LoweringContext, x: Value, dim: int | None = None,
             keepdim: bool = False) -> Value:
        """Index of the first extreme element along ``dim`` (the whole tensor if None)."""
        out = ctx.out_type()
        i64 = IntegerType(64)
        if dim is None:
            if None in shape_of(x):
                n = element_count(ctx, x, range(len(shape_of(x))), 0, i64)
                x = ctx.reshape(x, (None,), [n])
            else:
                x = ctx.reshape(x, (int(np.prod(shape_of(x))),))
            dim = 0
        shape = shape_of(x)
        dim = norm_dim(dim, len(shape))
        ext = ctx.reduce(x, [dim], kind)
        keep = [d for d in range(len(shape)) if d != dim]
        hit = ctx.b.compare("EQ", x, ctx.broadcast_in_dim(ext, shape, keep, x))
        if is_float(etype(x)):
            hit = ctx.b.or_(hit, ctx.b.compare("NE", x, x))
        iota = ctx.iota_like(x, None, i64, dim)
        big = ctx.broadcast_in_dim(ctx.size(x, dim), shape, [], x)
        idx = ctx.reduce(ctx.b.select(hit, iota, big), [dim], "minimum")
        return ctx.reshape(idx, out.shape)

    return rule


lowering(aten.argmax.default)(_arg("maximum"))
lowering(aten.argmin.default)(_arg("minimum"))


@lowering(aten.cumsum.default)
def _cumsum(ctx: LoweringContext, x: Value, dim: int, *, dtype: Any = None) -> Value:
    """Inclusive prefix sum as a Hillis-Steele scan: ceil(log2 n) shifted adds, each a
    ``pad`` of a ``slice`` (elementwise-friendly, no ``reduce_window``)."""
    out = ctx.out_type()
    v = ctx.convert(x, out.element_type)
    if etype(v) == IntegerType(1):
        v = ctx.convert(v, IntegerType(64))
    shape = shape_of(v)
    dim = norm_dim(dim, len(shape))
    n = shape[dim] if shape else 1
    r = len(shape)
    if None in shape:
        return ctx.convert(_masked_cumsum(ctx, v, dim), out.element_type)
    k = 1
    while k < n:
        limits = list(shape)
        limits[dim] = n - k
        part = ctx.b.slice(v, [0] * r, limits)
        lo = [0] * r
        lo[dim] = k
        attrs = {"edge_padding_low": A.i64_array(lo), "edge_padding_high": A.i64_array([0] * r),
                 "interior_padding": A.i64_array([0] * r)}
        shifted = ctx.b.create("stablehlo.pad", [part, ctx.const(0, etype(v))], attrs,
                               [v.type]).results[0]
        v = ctx.b.add(v, shifted)
        k *= 2
    return ctx.convert(v, out.element_type)


def _masked_cumsum(ctx: LoweringContext, v: Value, dim: int) -> Value:
    """Prefix sum on ``?`` dims: ``out[.., i, ..] = sum_j x[.., j, ..] * (j <= i)``, one
    broadcast to a trailing ``i`` dim, a select and a reduce (O(n^2) work)."""
    shape = shape_of(v)
    r = len(shape)
    i64 = IntegerType(64)
    big_shape = (*shape, shape[dim])
    sizes = ctx.parts_value([(v, d) for d in range(r)] + [(v, dim)])
    big_t = TensorType(big_shape, etype(v))
    big = ctx.b.create("stablehlo.dynamic_broadcast_in_dim", [v, sizes],
                       {"broadcast_dimensions": A.i64_array(list(range(r)))},
                       [big_t]).results[0]

    def iota(d: int) -> Value:
        return ctx.b.create("stablehlo.dynamic_iota", [sizes], {"iota_dimension": A.i64_attr(d)},
                            [TensorType(big_shape, i64)]).results[0]

    keep = ctx.b.compare("LE", iota(dim), iota(r))
    summed = ctx.reduce(ctx.b.select(keep, big, ctx.splat(0, etype(v), big)), [dim], "add")
    if dim == r - 1:
        return summed
    perm = [*range(dim), r - 1, *range(dim, r - 1)]
    return ctx.b.transpose(summed, perm)


# -- creation ------------------------------------------------------------------------------
@lowering(aten.full.default, aten.full_like.default, aten.new_full.default)
def _full(ctx: LoweringContext, *args: Any, **kwargs: Any) -> Value:
    value = args[2] if ctx.node.target is aten.new_full.default else args[1]
    out = ctx.out_type()
    if isinstance(value, Value):
        return ctx.broadcast_to(ctx.convert(value, out.element_type), out.shape)
    return ctx.broadcast_to(ctx.const(ctx.dim(value) if not isinstance(value, float | bool)
                                      else value, out.element_type), out.shape)


@lowering(aten.zeros.default, aten.zeros_like.default, aten.new_zeros.default,
          aten.empty.memory_format, aten.empty_like.default, aten.new_empty.default,
          aten.empty_strided.default, aten.empty_permuted.default)
def _zeros(ctx: LoweringContext, *args: Any, **kwargs: Any) -> Value:
    out = ctx.out_type()
    return ctx.broadcast_to(ctx.const(0, out.element_type), out.shape)


@lowering(aten.ones.default, aten.ones_like.default, aten.new_ones.default)
def _ones(ctx: LoweringContext, *args: Any, **kwargs: Any) -> Value:
    out = ctx.out_type()
    return ctx.broadcast_to(ctx.const(1, out.element_type), out.shape)


@lowering(aten.scalar_tensor.default)
def _scalar_tensor(ctx: LoweringContext, value: Any, **kwargs: Any) -> Value:
    out = ctx.out_type()
    if isinstance(value, Value):
        return ctx.reshape(ctx.convert(value, out.element_type), ())
    return ctx.const(value, out.element_type)


@lowering(aten.arange.start_step, aten.arange.default, aten.arange.start)
def _arange(ctx: LoweringContext, *args: Any, **kwargs: Any) -> Value:
    out = ctx.out_type()
    if ctx.node.target is aten.arange.default:
        start, step = 0, 1
    else:
        start = args[0]
        step = args[2] if len(args) > 2 else kwargs.get("step", 1)
    n = out.shape[0]
    if n is None:  # a symbolic length: dynamic_iota * step + start
        et = out.element_type
        iota = ctx.b.create("stablehlo.dynamic_iota",
                            [ctx.shape_value(list(ctx.node.meta["val"].shape))],
                            {"iota_dimension": A.i64_attr(0)}, [out]).results[0]
        if not (isinstance(step, int) and step == 1):
            iota = ctx.b.multiply(iota, ctx.broadcast_to(ctx.operand(step, et), (None,)))
        if not (isinstance(start, int) and start == 0):
            iota = ctx.b.add(iota, ctx.broadcast_to(ctx.operand(start, et), (None,)))
        return iota
    start = start if isinstance(start, float) else ctx.dim(start)
    step = step if isinstance(step, float) else ctx.dim(step)
    if is_float(out.element_type) or isinstance(start, float) or isinstance(step, float):
        vals = (start + step * np.arange(n, dtype=np.float64))
        return ctx.const(vals, out.element_type, (n,))
    iota = ctx.b.iota((n,), out.element_type, 0)
    if step != 1:
        iota = ctx.b.multiply(iota, ctx.broadcast_to(ctx.const(step, out.element_type), (n,)))
    if start != 0:
        iota = ctx.b.add(iota, ctx.broadcast_to(ctx.const(start, out.element_type), (n,)))
    return iota


@lowering(aten.sym_size.int)
def _sym_size(ctx: LoweringContext, x: Value, dim: int) -> int:
    """A size, as a Python int (programs are imported for concrete shapes)."""
    return shape_of(x)[norm_dim(dim, len(shape_of(x)))]


@lowering(aten.sym_numel.default)
def _sym_numel(ctx: LoweringContext, x: Value) -> int:
    return int(np.prod(shape_of(x)))
