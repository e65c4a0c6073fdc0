"""Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax/ArgMin,
CumSum, TopK (ONNX operator docs; ``axes`` is an input from opset 13 for ReduceSum and
from 18 for the others)."""

from __future__ import annotations

import numpy as np

from oxla.ir import Block, Builder, Region, Value
from oxla.ir import attributes as A
from oxla.ir.types import TensorType, i1, i64
from oxla_frontend_onnx.emit import (
    broadcast_to,
    etype,
    max_value,
    min_value,
    norm_axis,
    reduce,
    reduce_window,
    shape_of,
    splat,
)
from oxla_frontend_onnx.registry import NodeContext, rule

_AXES_AS_INPUT = {"ReduceSum": 13}


def _reduce_axes(ctx: NodeContext, r: int) -> list[int] | None:
    """The reduced axes; None means "no reduction" (``noop_with_empty_axes``)."""
    since = _AXES_AS_INPUT.get(ctx.node.op_type, 18)
    axes = ctx.attr("axes") if ctx.opset < since else ctx.ints(1)
    if not axes:
        if ctx.attr("noop_with_empty_axes", 0) and ctx.opset >= since:
            return None
        return list(range(r))
    return sorted({norm_axis(a, r) for a in axes})


def _do_reduce(ctx: NodeContext) -> Value:
    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    dims = _reduce_axes(ctx, len(shape))
    keep = bool(ctx.attr("keepdims", 1))
    op = ctx.node.op_type
    et = etype(x)
    if dims is None:
        dims = []
    if op in ("ReduceL1", "ReduceL2", "ReduceSumSquare"):
        x = b.abs(x) if op == "ReduceL1" else b.multiply(x, x)
    if op == "ReduceLogSumExp":
        if not dims:
            return x
        m = reduce(b, x, dims, "maximum", min_value(et), True)
        finite = b.compare("LT", b.abs(m), ctx.scalar_like(np.inf, m), "FLOAT") \
            if not _is_int(et) else None
        if finite is not None:
            m = b.select(finite, m, ctx.scalar_like(0, m))
        s = reduce(b, b.exponential(b.subtract(x, broadcast_to(b, m, shape))), dims, "add", 0,
                   True)
        y = b.add(b.log(s), m)
        return y if keep else b.reshape(y, [d for i, d in enumerate(shape) if i not in dims])
    kind, init = {"ReduceMax": ("maximum", min_value(et)), "ReduceMin": ("minimum",
                  max_value(et)), "ReduceProd": ("multiply", 1)}.get(op, ("add", 0))
    if et == i1:
        kind = {"maximum": "or", "minimum": "and"}.get(kind, kind)
    y = reduce(b, x, dims, kind, init, keep) if dims else x
    if op == "ReduceMean":
        n = int(np.prod([shape[d] for d in dims])) if dims else 1
        y = b.divide(y, ctx.scalar_like(n, y))
    elif op == "ReduceL2":
        y = b.sqrt(y)
    elif op == "ReduceLogSum":
        y = b.log(y)
    return y


def _is_int(et) -> bool:
    from oxla.ir.types import IntegerType

    return isinstance(et, IntegerType)


_REDUCE_OPS = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
               "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")


@rule(*_REDUCE_OPS, since=1)
def _reduce(ctx: NodeContext) -> list[Value]:
    return [_do_reduce(ctx)]


@rule("ReduceSum", since=13)
@rule(*(o for o in _REDUCE_OPS if o != "ReduceSum"), since=18)
def _reduce_axes_input(ctx: NodeContext) -> list[Value]:
    return [_do_reduce(ctx)]


def arg_reduce(ctx: NodeContext, x: Value, axis: int, is_max: bool, last: bool,
               keepdims: bool = True) -> Value:
    """Index (i64) of the first (or ``last``) maximum/minimum along ``axis``; NaN wins."""
    b = ctx.b
    shape = shape_of(x)
    et = etype(x)
    idx = b.iota(shape, i64, axis)
    s = TensorType((), et)
    si = TensorType((), i64)
    body = Block([s, si, s, si])
    bb = Builder(body, loc=b.loc)
    v1, i1_, v2, i2 = body.args
    cmp_kind = "FLOAT" if not _is_int(et) else ("UNSIGNED" if getattr(et, "unsigned", False)
                                                else "SIGNED")
    better = bb.compare("GT" if is_max else "LT", v1, v2, cmp_kind)
    if cmp_kind == "FLOAT":
        better = bb.or_(better, bb.compare("NE", v1, v1, "FLOAT"))
    eq = bb.compare("EQ", v1, v2, cmp_kind)
    tie = bb.compare("GT" if last else "LT", i1_, i2, "SIGNED")
    take1 = bb.or_(better, bb.and_(eq, tie))
    bb.create("stablehlo.return", [bb.select(take1, v1, v2), bb.select(take1, i1_, i2)],
              result_types=[])
    init_v = splat(b, min_value(et) if is_max else max_value(et), et)
    init_i = splat(b, 0, i64)
    out_shape = tuple(d for i, d in enumerate(shape) if i != axis)
    op = b.create("stablehlo.reduce", [x, idx, init_v, init_i], {"dimensions": A.i64_array(
        [axis])}, [TensorType(out_shape, et), TensorType(out_shape, i64)],
        regions=[Region([body])])
    y = op.results[1]
    if keepdims:
        y = b.reshape(y, [1 if i == axis else d for i, d in enumerate(shape)])
    return y


@rule("ArgMax", "ArgMin", since=1)
def _argmax(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    axis = norm_axis(ctx.attr("axis", 0), len(shape_of(x)))
    return [arg_reduce(ctx, x, axis, ctx.node.op_type == "ArgMax",
                       bool(ctx.attr("select_last_index", 0)), bool(ctx.attr("keepdims", 1)))]


@rule("CumSum", since=11)
def _cumsum(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    r = len(shape)
    axis = norm_axis(int(ctx.const_required(1, "CumSum's axis").reshape(-1)[0]), r)
    rev = bool(ctx.attr("reverse", 0))
    excl = bool(ctx.attr("exclusive", 0))
    n = shape[axis]
    if rev:
        x = b.create("stablehlo.reverse", [x], {"dimensions": A.i64_array([axis])}).results[0]
    win = [1] * r
    win[axis] = n
    pads = [(0, 0)] * r
    pads[axis] = (n - 1, 0)
    y = reduce_window(b, x, 0, "add", win, [1] * r, pads)
    if excl:
        lo, hi = [0] * r, [0] * r
        lo[axis] = 1
        from oxla_frontend_onnx.emit import pad

        sl = b.slice(y, [0] * r, [d - 1 if i == axis else d for i, d in enumerate(shape)])
        y = pad(b, sl, lo, hi, splat(b, 0, etype(x)))
    if rev:
        y = b.create("stablehlo.reverse", [y], {"dimensions": A.i64_array([axis])}).results[0]
    return [y]


@rule("TopK", since=10)
def _topk(ctx: NodeContext) -> list[Value]:
    """Sorted by value (descending for largest), ties by lower index (stable sort)."""
    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    r = len(shape)
    axis = norm_axis(ctx.attr("axis", -1), r)
    k = int(ctx.const_required(1, "TopK's k").reshape(-1)[0])
    largest = bool(ctx.attr("largest", 1)) if ctx.opset >= 11 else True
    et = etype(x)
    idx = b.iota(shape, i64, axis)
    s, si = TensorType((), et), TensorType((), i64)
    body = Block([s, s, si, si])
    bb = Builder(body, loc=b.loc)
    a, c, ia, ic = body.args
    kind = "FLOAT" if not _is_int(et) else ("UNSIGNED" if getattr(et, "unsigned", False)
                                            else "SIGNED")
    gt = bb.compare("GT" if largest else "LT", a, c, kind)
    eq = bb.compare("EQ", a, c, kind)
    first = bb.and_(eq, bb.compare("LT", ia, ic, "SIGNED"))
    bb.create("stablehlo.return", [bb.or_(gt, first)], result_types=[])
    op = b.create("stablehlo.sort", [x, idx], {"dimension": A.i64_attr(axis),
                                               "is_stable": A.BoolAttr(True)},
                  [TensorType(shape, et), TensorType(shape, i64)], regions=[Region([body])])
    hi = list(shape)
    hi[axis] = k
    vals = b.slice(op.results[0], [0] * r, hi)
    inds = b.slice(op.results[1], [0] * r, hi)
    return [vals, inds]
