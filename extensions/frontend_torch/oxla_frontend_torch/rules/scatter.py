"""Scatter-style ATen ops (``index_put``, ``scatter``, ``scatter_add``): what autograd's
backward graphs use for embeddings, gathers and cross-entropy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from oxla.errors import NotSupportedError
from oxla.ir import Block, Builder, Region, Value
from oxla.ir import attributes as A
from oxla.ir.types import IntegerType, TensorType, is_float
from oxla_frontend_torch.registry import (
    LoweringContext,
    _int_max,
    _int_min,
    etype,
    lowering,
    norm_dim,
    shape_of,
)
from oxla_frontend_torch.rules.shape import _wrap_negative, index_plan

aten = torch.ops.aten


def _scatter(ctx: LoweringContext, x: Value, coords: Value, updates: Value,
             window: Sequence[int], inserted: Sequence[int], to_operand: Sequence[int],
             index_vector_dim: int, accumulate: bool | str) -> Value:
    """``stablehlo.scatter`` (spec 4.x scatter) that adds (``accumulate`` True), combines
    with the binary op ``stablehlo.<accumulate>`` (a str), or overwrites."""
    et = etype(x)
    scalar = TensorType((), et)
    body = Block([scalar, scalar])
    bb = Builder(body, loc=ctx.b.loc)
    if accumulate:
        kind = accumulate if isinstance(accumulate, str) else "add"
        r = bb.create(f"stablehlo.{kind}", [body.args[0], body.args[1]]).results[0]
    else:
        r = body.args[1]
    bb.create("stablehlo.return", [r], result_types=[])
    dn = A.struct("stablehlo.scatter", update_window_dims=tuple(window),
                  inserted_window_dims=tuple(inserted),
                  scatter_dims_to_operand_dims=tuple(to_operand),
                  index_vector_dim=index_vector_dim)
    attrs = {"scatter_dimension_numbers": dn, "indices_are_sorted": A.BoolAttr(False),
             "unique_indices": A.BoolAttr(False)}
    return ctx.b.create("stablehlo.scatter", [x, coords, ctx.convert(updates, et)], attrs,
                        [x.type], regions=[Region([body])]).results[0]


@lowering(aten.index_put.default, aten.index_put_.default, aten._unsafe_index_put.default)
def _index_put(ctx: LoweringContext, x: Value, indices: Sequence[Value | None],
               values: Value, accumulate: bool = False) -> Value:
    """``x[indices] = values`` (``+=`` with ``accumulate``); values broadcast to the
    shape ``x[indices]`` has. Duplicate indices without accumulate: the last write wins
    on the interpreter; torch leaves the order unspecified."""
    stacked, offset, dims, nb, sizes = index_plan(ctx, x, list(indices))
    bshape = shape_of(stacked)[:-1]
    rest = [d for d in range(len(shape_of(x))) if d not in dims]
    out_shape: list[Any] = [0] * (nb + len(rest))
    parts: list[Any] = [0] * (nb + len(rest))  # run-time sizes: ints or (value, dim)
    for i, d in enumerate(offset):
        out_shape[d] = shape_of(x)[rest[i]]
        parts[d] = (x, rest[i])
    batch = [d for d in range(len(out_shape)) if d not in offset]
    for i, d in enumerate(batch):
        out_shape[d] = bshape[i]
        parts[d] = (stacked, i)
    upd = ctx.convert(values, etype(x))
    if None in out_shape:
        r, k = len(out_shape), len(shape_of(upd))
        upd = ctx.b.create("stablehlo.dynamic_broadcast_in_dim", [upd, ctx.parts_value(parts)],
                           {"broadcast_dimensions": A.i64_array(list(range(r - k, r)))},
                           [TensorType(tuple(out_shape), etype(x))]).results[0]
    else:
        upd = ctx.broadcast_to(upd, out_shape)
    return _scatter(ctx, x, stacked, upd, offset, dims, dims, nb, accumulate)


def _full_coords(ctx: LoweringContext, x: Value, dim: int, index: Value) -> Value:
    shape, ishape = shape_of(x), shape_of(index)
    i64 = IntegerType(64)
    cols = []
    for d in range(len(shape)):
        if d == dim:
            c = _wrap_negative(ctx, ctx.convert(index, i64), x, d)
        else:
            c = ctx.iota_like(index, None, i64, d)
        cols.append(ctx.reshape(c, (*ishape, 1), [(index, i) for i in range(len(ishape))] + [1]))
    return ctx.b.concatenate(cols, len(shape)) if len(cols) > 1 else cols[0]


def _scatter_dim(accumulate: bool):
    def rule(ctx: LoweringContext, x: Value, dim: int, index: Value, src: Any,
             reduce: str | None = None) -> Value:
        if reduce is not None and reduce not in ("add", "sum"):
            raise NotSupportedError(f"'{ctx.node.target}' with reduce='{reduce}'",
                                    loc=ctx.b.loc, notes=["use reduce='add' or scatter_add"])
        r = len(shape_of(x))
        dim = norm_dim(dim, r)
        ishape = shape_of(index)
        if isinstance(src, Value) and (None in ishape or None in shape_of(src)):
            # src may be larger than index: its leading corner, sized at run time
            strides = ctx.parts_value([1] * r)
            upd = ctx.b.create("stablehlo.real_dynamic_slice",
                               [src, ctx.parts_value([0] * r), ctx.dims_value(index), strides],
                               result_types=[TensorType(ishape, etype(src))]).results[0]
        elif isinstance(src, Value):
            starts = [0] * r
            upd = ctx.b.slice(src, starts, list(ishape)) if shape_of(src) != ishape else src
        else:
            upd = ctx.splat(src, etype(x), index)
        coords = _full_coords(ctx, x, dim, index)
        acc = accumulate or reduce is not None
        return _scatter(ctx, x, coords, upd, [], list(range(r)), list(range(r)), r, acc)

    return rule


lowering(aten.scatter.value, aten.scatter.src)(_scatter_dim(False))
lowering(aten.scatter_add.default)(_scatter_dim(True))
lowering(aten.scatter.reduce, aten.scatter.value_reduce)(_scatter_dim(False))


_SCATTER_REDUCE = {"sum": ("add", 0.0), "prod": ("multiply", 1.0),
                   "amax": ("maximum", -np.inf), "amin": ("minimum", np.inf)}


@lowering(aten.scatter_reduce.two)
def _scatter_reduce(ctx: LoweringContext, x: Value, dim: int, index: Value, src: Value,
                    reduce: str, *, include_self: bool = True) -> Value:
    """``x`` with ``src`` combined in along ``dim`` at ``index`` by ``reduce`` (sum, prod,
    amax, amin); without ``include_self`` the targeted elements of ``x`` are first set to
    the reduction's identity.

    Raises:
        NotSupportedError: ``reduce="mean"``, or ``?`` dims.
    """
    if reduce not in _SCATTER_REDUCE:
        raise NotSupportedError(f"'{ctx.node.target}' with reduce='{reduce}'", loc=ctx.b.loc,
                                notes=[f"supported: {', '.join(_SCATTER_REDUCE)}"])
    if None in shape_of(x) or None in shape_of(index):
        raise NotSupportedError(f"'{ctx.node.target}' on dynamic ('?') dimensions",
                                loc=ctx.b.loc)
    kind, identity = _SCATTER_REDUCE[reduce]
    et = etype(x)
    if not is_float(et):
        identity = {"add": 0, "multiply": 1, "maximum": _int_min(et),
                    "minimum": _int_max(et)}[kind]
    r = len(shape_of(x))
    dim = norm_dim(dim, r)
    ishape = shape_of(index)
    upd = ctx.b.slice(src, [0] * r, list(ishape)) if shape_of(src) != ishape else src
    coords = _full_coords(ctx, x, dim, index)
    every = list(range(r))
    if not include_self:
        x = _scatter(ctx, x, coords, ctx.splat(identity, et, index), [], every, every, r, False)
    return _scatter(ctx, x, coords, upd, [], every, every, r, kind)
