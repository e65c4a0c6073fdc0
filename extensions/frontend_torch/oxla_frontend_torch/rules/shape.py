"""Shape and indexing ATen ops: views, permutes, concatenation, slicing, gathers, padding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from oxla.errors import NotSupportedError
from oxla.ir import Value
from oxla.ir import attributes as A
from oxla.ir.types import IntegerType, TensorType
from oxla_frontend_torch.registry import (
    LoweringContext,
    etype,
    lowering,
    norm_dim,
    shape_of,
)

aten = torch.ops.aten


@lowering(aten.view.default, aten._unsafe_view.default, aten.reshape.default,
          aten.view_copy.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default,
          aten.unsqueeze.default, aten.flatten.using_ints, aten.unflatten.int)
def _reshape(ctx: LoweringContext, x: Value, *args: Any) -> Value:
    return ctx.reshape(x, ctx.out_type().shape)


@lowering(aten.permute.default, aten.permute_copy.default)
def _permute(ctx: LoweringContext, x: Value, dims: Sequence[int]) -> Value:
    r = len(shape_of(x))
    return ctx.b.transpose(x, [norm_dim(d, r) for d in dims])


@lowering(aten.transpose.int)
def _transpose(ctx: LoweringContext, x: Value, d0: int, d1: int) -> Value:
    r = len(shape_of(x))
    perm = list(range(r))
    d0, d1 = norm_dim(d0, r), norm_dim(d1, r)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return ctx.b.transpose(x, perm)


@lowering(aten.t.default)
def _t(ctx: LoweringContext, x: Value) -> Value:
    return x if len(shape_of(x)) < 2 else ctx.b.transpose(x, [1, 0])


@lowering(aten.expand.default, aten.expand_copy.default, aten.broadcast_to.default)
def _expand(ctx: LoweringContext, x: Value, *args: Any, **kwargs: Any) -> Value:
    return ctx.broadcast_to(x, ctx.out_type().shape)


@lowering(aten.cat.default, aten.concat.default)
def _cat(ctx: LoweringContext, xs: Sequence[Value], dim: int = 0) -> Value:
    out = ctx.out_type()
    dim = norm_dim(dim, len(out.shape))
    parts = [ctx.convert(x, out.element_type) for x in xs
             if not (len(shape_of(x)) == 1 and shape_of(x)[0] == 0 and len(out.shape) != 1)]
    parts = [p for p in parts if shape_of(p)[dim] != 0] or parts[:1]
    return parts[0] if len(parts) == 1 else ctx.b.concatenate(parts, dim)


def _bound(ctx: LoweringContext, b: Any, size: Value, default: Value) -> Value:
    """A torch slice bound as a ``tensor<i64>`` in ``[0, size]`` (negatives count from the
    end); ``b`` is None, an int or a SymInt."""
    if b is None or (isinstance(b, int) and b >= 1 << 62):
        return default
    i64 = IntegerType(64)
    v = ctx.operand(b, i64)
    if isinstance(b, int) and b < 0:
        v = ctx.b.add(size, v)
    zero = ctx.const(0, i64)
    return ctx.b.minimum(ctx.b.maximum(v, zero), size)


def dynamic_slice(ctx: LoweringContext, x: Value, dim: int, lo: Value, hi: Value, step: int,
                  out: TensorType) -> Value:
    """``x`` sliced along ``dim`` from ``lo`` to ``hi`` (``tensor<i64>``), other dims
    whole: a ``real_dynamic_slice`` whose bounds are built from ``x``'s sizes."""
    r = len(shape_of(x))
    starts = [lo if d == dim else 0 for d in range(r)]
    limits = [hi if d == dim else (x, d) for d in range(r)]
    strides = ctx.parts_value([step if d == dim else 1 for d in range(r)])
    return ctx.b.create("stablehlo.real_dynamic_slice",
                        [x, ctx.parts_value(starts), ctx.parts_value(limits), strides],
                        result_types=[out]).results[0]


def _dynamic(shape: Sequence[Any], *bounds: Any) -> bool:
    return None in shape or any(isinstance(b, torch.SymInt) and b.node.expr.free_symbols
                                for b in bounds)


@lowering(aten.slice.Tensor, aten.slice_copy.Tensor)
def _slice(ctx: LoweringContext, x: Value, dim: int = 0, start: Any = None, end: Any = None,
           step: Any = 1) -> Value:
    """``x[..., start:end:step, ...]``; with ``?`` dims or symbolic bounds a
    ``real_dynamic_slice`` with clamped run-time bounds."""
    shape = shape_of(x)
    dim = norm_dim(dim, len(shape))
    if _dynamic(shape, start, end):
        size = ctx.size(x, dim)
        lo = _bound(ctx, start, size, ctx.const(0, IntegerType(64)))
        hi = ctx.b.maximum(_bound(ctx, end, size, size), lo)
        return dynamic_slice(ctx, x, dim, lo, hi, ctx.dim(step), ctx.out_type())
    n = shape[dim]
    lo, hi, st = slice(None if start is None else ctx.dim(start),
                       None if end is None else ctx.dim(end), ctx.dim(step)).indices(n)
    hi = max(hi, lo)
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[dim], limits[dim], strides[dim] = lo, hi, st
    return ctx.b.slice(x, starts, limits, strides)


@lowering(aten.select.int, aten.select_copy.int)
def _select(ctx: LoweringContext, x: Value, dim: int, index: Any) -> Value:
    shape = shape_of(x)
    dim = norm_dim(dim, len(shape))
    out = ctx.out_type()
    if _dynamic(shape, index):
        i64 = IntegerType(64)
        size = ctx.size(x, dim)
        lo = ctx.operand(index, i64)
        if isinstance(index, int) and index < 0:
            lo = ctx.b.add(size, lo)
        one = TensorType(tuple(1 if d == dim else n for d, n in enumerate(shape)), etype(x))
        part = dynamic_slice(ctx, x, dim, lo, ctx.b.add(lo, ctx.const(1, i64)), 1, one)
        return ctx.reshape(part, out.shape, [(x, d) for d in range(len(shape)) if d != dim])
    i = ctx.dim(index)
    i = i + shape[dim] if i < 0 else i
    starts, limits = [0] * len(shape), list(shape)
    starts[dim], limits[dim] = i, i + 1
    return ctx.reshape(ctx.b.slice(x, starts, limits), out.shape)


@lowering(aten.split_with_sizes.default, aten.split.Tensor, aten.split_with_sizes_copy.default,
          aten.unbind.int)
def _split(ctx: LoweringContext, x: Value, sizes: Any = 0, dim: int = 0) -> list[Value]:
    """Consecutive slices along a static ``dim`` (other dims may be ``?``)."""
    shape = shape_of(x)
    if ctx.node.target is aten.unbind.int:
        dim = sizes
    dim = norm_dim(dim, len(shape))
    if shape[dim] is None:
        raise NotSupportedError(f"'{ctx.node.target}' along a dynamic ('?') dimension",
                                loc=ctx.b.loc,
                                notes=["import for concrete shapes (arg_shapes=[...])"])
    outs = []
    start = 0
    i64 = IntegerType(64)
    for t in ctx.out_types():
        assert t is not None
        size = t.shape[dim] if len(t.shape) == len(shape) else 1
        if None in shape:
            part_t = TensorType(tuple(size if d == dim else n for d, n in enumerate(shape)),
                                t.element_type)
            part = dynamic_slice(ctx, x, dim, ctx.const(start, i64),
                                 ctx.const(start + size, i64), 1, part_t)
            outs.append(part if part_t == t else ctx.reshape(
                part, t.shape, [(x, d) for d in range(len(shape)) if d != dim]))
        else:
            starts, limits = [0] * len(shape), list(shape)
            starts[dim], limits[dim] = start, start + size
            outs.append(ctx.reshape(ctx.b.slice(x, starts, limits), t.shape))
        start += size
    return outs


def _gather(ctx: LoweringContext, x: Value, indices: Value, offset_dims: Sequence[int],
            collapsed: Sequence[int], start_index_map: Sequence[int], index_vector_dim: int,
            slice_sizes: Sequence[Any], out: TensorType) -> Value:
    """``stablehlo.gather``; a ``dynamic_gather`` when a slice size is a ``(value, dim)``
    pair (a ``?`` dim taken whole, sized at run time)."""
    dn = A.struct("stablehlo.gather", offset_dims=tuple(offset_dims),
                  collapsed_slice_dims=tuple(collapsed),
                  start_index_map=tuple(start_index_map), index_vector_dim=index_vector_dim)
    attrs: dict[str, Any] = {"dimension_numbers": dn, "indices_are_sorted": A.BoolAttr(False)}
    if all(isinstance(n, int) for n in slice_sizes):
        attrs["slice_sizes"] = A.i64_array(slice_sizes)
        return ctx.b.create("stablehlo.gather", [x, indices], attrs, [out]).results[0]
    return ctx.b.create("stablehlo.dynamic_gather", [x, indices, ctx.parts_value(slice_sizes)],
                        attrs, [out]).results[0]


def _wrap_negative(ctx: LoweringContext, idx: Value, x: Value, d: int) -> Value:
    """Negative indices into dim ``d`` of ``x`` count from the end, as in torch."""
    et = etype(idx)
    zero = ctx.splat(0, et, idx)
    size = ctx.convert(ctx.size(x, d), et)
    n = ctx.broadcast_in_dim(size, shape_of(idx), [], idx)
    return ctx.b.select(ctx.b.compare("LT", idx, zero), ctx.b.add(idx, n), idx)


@lowering(aten.embedding.default)
def _embedding(ctx: LoweringContext, weight: Value, indices: Value, *args: Any) -> Value:
    """``weight[indices]``: rows of ``weight [num_embeddings, ...]`` gathered at integer
    ``indices`` of any shape (``stablehlo.gather``, spec 4.x gather).

    Known difference from torch: an id outside ``[0, num_embeddings)`` is not an error.
    StableHLO's gather clamps start indices so the slice stays in bounds, so a negative id
    reads row 0 and an id ``>= num_embeddings`` reads the last row, where torch raises
    ``IndexError``. Check ids in the caller when they may be out of range.
    """
    w = shape_of(weight)
    r = len(shape_of(indices))
    return _gather(ctx, weight, indices, [r], [0], [0], r, [1, *w[1:]], ctx.out_type())


@lowering(aten.index_select.default)
def _index_select(ctx: LoweringContext, x: Value, dim: int, index: Value) -> Value:
    shape = shape_of(x)
    dim = norm_dim(dim, len(shape))
    idx = ctx.reshape(index, (*shape_of(index), 1), [(index, 0), 1]) if shape_of(index) \
        else ctx.reshape(index, (1, 1))
    sizes: list[Any] = [1 if d == dim else (x, d) if n is None else n
                        for d, n in enumerate(shape)]
    offset = [i for i in range(len(shape)) if i != dim]
    return ctx.reshape(_gather(ctx, x, idx, offset, [dim], [dim], 1, sizes,
                               TensorType(tuple(s if i != dim else shape_of(idx)[0]
                                                for i, s in enumerate(shape)), etype(x))),
                       ctx.out_type().shape)


def index_plan(ctx: LoweringContext, x: Value, indices: Sequence[Value | None]
               ) -> tuple[Value, list[int], list[int], int, list[int]]:
    """Gather/scatter coordinates for advanced indexing ``x[i0, :, i2]``.

    Returns:
        ``(coords, offset_dims, indexed_dims, index_vector_dim, slice_sizes)``: coords
        holds the broadcast i64 indices (negatives wrapped) stacked on the last dim; the
        offset dims follow torch's result-dim placement (adjacent index dims stay in
        place, separated ones go first).
    """
    shape = shape_of(x)
    dims = [d for d, i in enumerate(indices) if i is not None]
    idx_shapes = [shape_of(indices[d]) for d in dims]
    nb = max(len(s) for s in idx_shapes)
    rest = [d for d in range(len(shape)) if d not in dims]
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    p = dims[0] if adjacent else 0
    if adjacent:
        offset = list(range(p)) + list(range(p + nb, p + nb + len(rest) - p))
    else:
        offset = list(range(nb, nb + len(rest)))
    bsizes: list[Any] = []
    if any(None in s for s in idx_shapes):  # the broadcast index shape sits in the result
        val = ctx.node.meta["val"]
        bsizes = list(val.shape[p:p + nb])
        bshape = tuple(ctx.dim(s) for s in bsizes)
    else:
        bshape = tuple(np.broadcast_shapes(*idx_shapes))
    i64 = IntegerType(64)
    cols = []
    for d in dims:
        iv = indices[d]
        assert iv is not None
        if etype(iv) == IntegerType(1):
            raise NotSupportedError("indexing with a boolean mask (data-dependent shape)",
                                    loc=ctx.b.loc, notes=["use torch.where instead"])
        iv = _wrap_negative(ctx, ctx.convert(iv, i64), x, d)
        if bsizes:
            k = len(shape_of(iv))
            sv = ctx.shape_value(bsizes)
            bdims = A.i64_array(list(range(nb - k, nb)))
            iv = ctx.b.create("stablehlo.dynamic_broadcast_in_dim", [iv, sv],
                              {"broadcast_dimensions": bdims},
                              [TensorType(bshape, i64)]).results[0]
            cols.append(ctx.b.create("stablehlo.dynamic_reshape",
                                     [iv, ctx.shape_value([*bsizes, 1])],
                                     result_types=[TensorType((*bshape, 1), i64)]).results[0])
        else:
            cols.append(ctx.reshape(ctx.broadcast_to(iv, bshape), (*bshape, 1)))
    stacked = cols[0] if len(cols) == 1 else ctx.b.concatenate(cols, len(bshape))
    sizes = [1 if d in dims else (x, d) if s is None else s for d, s in enumerate(shape)]
    return stacked, offset, dims, nb, sizes


@lowering(aten.index.Tensor)
def _index(ctx: LoweringContext, x: Value, indices: Sequence[Value | None]) -> Value:
    """Advanced indexing ``x[i0, :, i2]`` as one gather (torch's result-dim placement)."""
    stacked, offset, dims, nb, sizes = index_plan(ctx, x, indices)
    return _gather(ctx, x, stacked, offset, dims, dims, nb, sizes, ctx.out_type())


@lowering(aten.gather.default)
def _torch_gather(ctx: LoweringContext, x: Value, dim: int, index: Value,
                  sparse_grad: bool = False) -> Value:
    """``out[i][j][k] = x[i][index[i][j][k]][k]``: a gather with full coordinates."""
    shape, ishape = shape_of(x), shape_of(index)
    r = len(shape)
    dim = norm_dim(dim, r)
    i64 = IntegerType(64)
    cols = []
    parts = [(index, d) for d in range(r)] + [1]
    for d in range(r):
        if d == dim:
            c = _wrap_negative(ctx, ctx.convert(index, i64), x, d)
        else:
            c = ctx.iota_like(index, None, i64, d)
        cols.append(ctx.reshape(c, (*ishape, 1), parts))
    coords = ctx.b.concatenate(cols, r)
    return _gather(ctx, x, coords, [], list(range(r)), list(range(r)), r, [1] * r,
                   ctx.out_type())


@lowering(aten.constant_pad_nd.default)
def _pad(ctx: LoweringContext, x: Value, pad: Sequence[int], value: Any = 0) -> Value:
    shape = shape_of(x)
    r = len(shape)
    lo, hi = [0] * r, [0] * r
    for k in range(len(pad) // 2):
        d = r - 1 - k
        lo[d], hi[d] = ctx.dim(pad[2 * k]), ctx.dim(pad[2 * k + 1])
    attrs = {"edge_padding_low": A.i64_array(lo), "edge_padding_high": A.i64_array(hi),
             "interior_padding": A.i64_array([0] * r)}
    return ctx.b.create("stablehlo.pad", [x, ctx.const(value, etype(x))], attrs,
                        [ctx.out_type()]).results[0]


def _tri(lower: bool):
    def rule(ctx: LoweringContext, x: Value, diagonal: int = 0) -> Value:
        shape = shape_of(x)
        r = len(shape)
        i64 = IntegerType(64)
        rows, cols = (ctx.iota_like(x, [r - 2, r - 1], i64, d) for d in (0, 1))
        diff = ctx.b.subtract(cols, rows)
        k = ctx.splat(diagonal, i64, diff)
        keep = ctx.broadcast_in_dim(ctx.b.compare("LE" if lower else "GE", diff, k), shape,
                                    [r - 2, r - 1], x)
        return ctx.b.select(keep, x, ctx.splat(0, etype(x), x))

    return rule


lowering(aten.tril.default)(_tri(True))
lowering(aten.triu.default)(_tri(False))


@lowering(aten.flip.default)
def _flip(ctx: LoweringContext, x: Value, dims: Sequence[int]) -> Value:
    r = len(shape_of(x))
    return ctx.b.create("stablehlo.reverse", [x],
                        {"dimensions": A.i64_array(sorted(norm_dim(d, r) for d in dims))}
                        ).results[0]


@lowering(aten.repeat.default)
def _repeat(ctx: LoweringContext, x: Value, repeats: Sequence[int]) -> Value:
    shape = shape_of(x)
    reps = [ctx.dim(r) for r in repeats]
    if None in reps:
        raise NotSupportedError("'aten.repeat' with a dynamic ('?') repeat count",
                                loc=ctx.b.loc,
                                notes=["import for concrete shapes (arg_shapes=[...])"])
    full = (1,) * (len(reps) - len(shape)) + shape
    inter = []
    for r, s in zip(reps, full):
        inter += [r, s]
    dims = [2 * i + 1 for i in range(len(reps))][-len(shape):] if shape else []
    if None in shape:  # the ``?`` sizes come from x: [r0, (x, 0), r1, (x, 1), ...]
        lead = len(reps) - len(shape)
        parts: list[Any] = []
        for i, r in enumerate(reps):
            parts += [r, 1 if i < lead else (x, i - lead)]
        v = ctx.b.create("stablehlo.dynamic_broadcast_in_dim", [x, ctx.parts_value(parts)],
                         {"broadcast_dimensions": A.i64_array(dims)},
                         [TensorType(tuple(inter), etype(x))]).results[0]
    else:
        v = ctx.b.broadcast_in_dim(x, inter, dims)
    return ctx.reshape(v, ctx.out_type().shape)
