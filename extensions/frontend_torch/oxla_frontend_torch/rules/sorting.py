"""Sorting ATen ops: ``sort`` and ``topk`` as a stable two-operand ``stablehlo.sort``
(values and their ``iota`` positions), with torch's NaN order (NaN is the largest)."""

from __future__ import annotations

from typing import Any

import torch

from oxla.ir import Block, Builder, Region, Value
from oxla.ir import attributes as A
from oxla.ir.types import IntegerType, TensorType, is_float
from oxla_frontend_torch.registry import LoweringContext, etype, lowering, norm_dim, shape_of

aten = torch.ops.aten


def sort_with_indices(ctx: LoweringContext, x: Value, dim: int, descending: bool
                      ) -> tuple[Value, Value]:
    """``(values, i64 indices)`` of ``x`` sorted along ``dim``, stably (equal elements keep
    their order); NaNs sort after every number ascending and before them descending."""
    shape = shape_of(x)
    et = etype(x)
    i64 = IntegerType(64)
    dim = norm_dim(dim, len(shape))
    if not shape:  # a 0-d tensor is its own sort
        return x, ctx.const(0, i64)
    idx = ctx.iota_like(x, None, i64, dim)
    scalar, iscalar = TensorType((), et), TensorType((), i64)
    body = Block([scalar, scalar, iscalar, iscalar])
    bb = Builder(body, loc=ctx.b.loc)
    a, b = body.args[0], body.args[1]
    if descending:
        a, b = b, a
    less = bb.compare("LT", a, b)
    if is_float(et):  # a < b also when only b is NaN
        b_nan = bb.compare("NE", b, b)
        a_num = bb.compare("EQ", a, a)
        both = bb.create("stablehlo.and", [b_nan, a_num]).results[0]
        less = bb.create("stablehlo.or", [less, both]).results[0]
    bb.create("stablehlo.return", [less], result_types=[])
    op = ctx.b.create("stablehlo.sort", [x, idx],
                      {"dimension": A.i64_attr(dim), "is_stable": A.BoolAttr(True)},
                      [x.type, idx.type], regions=[Region([body])])
    return op.results[0], op.results[1]


@lowering(aten.sort.default)
def _sort(ctx: LoweringContext, x: Value, dim: int = -1, descending: bool = False
          ) -> list[Value]:
    """``torch.sort``: values and int64 indices; always stable (torch's CPU sort is too)."""
    return list(sort_with_indices(ctx, x, dim, descending))


@lowering(aten.sort.stable)
def _sort_stable(ctx: LoweringContext, x: Value, *, stable: bool | None = None,
                 dim: int = -1, descending: bool = False) -> list[Value]:
    return list(sort_with_indices(ctx, x, dim, descending))


@lowering(aten.topk.default)
def _topk(ctx: LoweringContext, x: Value, k: Any, dim: int = -1, largest: bool = True,
          sorted: bool = True) -> list[Value]:  # noqa: A002 - torch's argument name
    """``torch.topk``: the ``k`` largest (smallest) values along ``dim`` and their indices,
    always in sorted order (also for ``sorted=False``, whose order torch leaves open);
    among equal values the lower index comes first."""
    shape = shape_of(x)
    dim = norm_dim(dim, len(shape))
    vals, idx = sort_with_indices(ctx, x, dim, largest)
    if not shape:
        return [vals, idx]
    k = ctx.dim(k)
    start = [0] * len(shape)
    limit = list(shape)
    limit[dim] = k
    if None in limit:
        from oxla.errors import NotSupportedError

        raise NotSupportedError("topk on a dynamic ('?') dimension", loc=ctx.b.loc,
                                notes=["import for concrete shapes (arg_shapes=[...])"])
    return [ctx.b.slice(vals, start, limit), ctx.b.slice(idx, start, limit)]
