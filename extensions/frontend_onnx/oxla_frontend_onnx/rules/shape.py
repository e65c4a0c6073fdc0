"""Shape and data-movement ONNX ops: Reshape, Transpose, Concat, Split, Slice, Gather,
Expand, Squeeze/Unsqueeze, Flatten, Pad, Tile, ConstantOfShape, Range, Shape, Size, ...

Shape arguments (``shape``, ``axes``, ``starts``...) must be known at import time; the
importer folds shape computations to constants first, so dynamic models work once their
input shapes are fixed (``--input-spec``).
"""

from __future__ import annotations

import numpy as np

from oxla.ir import Value
from oxla.ir import attributes as A
from oxla.ir.types import TensorType, i64
from oxla_frontend_onnx.emit import (
    broadcast_to,
    etype,
    norm_axis,
    pad,
    shape_of,
    splat,
)
from oxla_frontend_onnx.registry import NodeContext, element_type, rule


@rule("Reshape", since=5)
def _reshape(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    shape = shape_of(x)
    target = ctx.ints(1)
    assert target is not None
    allow_zero = ctx.attr("allowzero", 0)
    out = [shape[i] if (t == 0 and not allow_zero) else t for i, t in enumerate(target)]
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1]))
        out[out.index(-1)] = int(np.prod(shape)) // known if known else 0
    return [ctx.b.reshape(x, out)]


@rule("Flatten", since=1)
def _flatten(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    shape = shape_of(x)
    axis = norm_axis(ctx.attr("axis", 1), len(shape))
    return [ctx.b.reshape(x, (int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))))]


@rule("Transpose", since=1)
def _transpose(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    r = len(shape_of(x))
    perm = ctx.attr("perm", list(range(r))[::-1])
    return [ctx.b.transpose(x, perm)]


def _axes(ctx: NodeContext, attr_until: int) -> list[int] | None:
    """``axes`` from the attribute (opset < ``attr_until``) or from input 1."""
    if ctx.opset < attr_until:
        return ctx.attr("axes")
    return ctx.ints(1)


@rule("Squeeze", since=1)
@rule("Squeeze", since=13)
def _squeeze(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    shape = shape_of(x)
    axes = _axes(ctx, 13)
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    axes = {norm_axis(a, len(shape)) for a in axes}
    return [ctx.b.reshape(x, [d for i, d in enumerate(shape) if i not in axes])]


@rule("Unsqueeze", since=1)
@rule("Unsqueeze", since=13)
def _unsqueeze(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    shape = list(shape_of(x))
    axes = _axes(ctx, 13) or []
    r = len(shape) + len(axes)
    for a in sorted(norm_axis(a, r) for a in axes):
        shape.insert(a, 1)
    return [ctx.b.reshape(x, shape)]


@rule("Concat", since=4)
def _concat(ctx: NodeContext) -> list[Value]:
    vals = [v for v in ctx.inputs()]
    r = len(shape_of(vals[0]))
    axis = norm_axis(ctx.attr("axis"), r)
    vals = [v for v in vals if shape_of(v)[axis] != 0] or vals[:1]
    if len(vals) == 1:
        return [vals[0]]
    return [ctx.b.concatenate(vals, axis)]


@rule("Split", since=2)
@rule("Split", since=13)
@rule("Split", since=18)
def _split(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    shape = shape_of(x)
    axis = norm_axis(ctx.attr("axis", 0), len(shape))
    n_out = len(ctx.node.output)
    sizes = ctx.attr("split") if ctx.opset < 13 else ctx.ints(1)
    if not sizes:
        num = ctx.attr("num_outputs", n_out) if ctx.opset >= 18 else n_out
        chunk = -(-shape[axis] // num)
        sizes = [min(chunk, shape[axis] - i * chunk) for i in range(num)]
    outs, start = [], 0
    for s in sizes:
        lo, hi = [0] * len(shape), list(shape)
        lo[axis], hi[axis] = start, start + s
        outs.append(ctx.b.slice(x, lo, hi))
        start += s
    return outs


@rule("Slice", since=1)
@rule("Slice", since=10)
def _slice(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    shape = shape_of(x)
    r = len(shape)
    if ctx.opset < 10:
        starts, ends = ctx.attr("starts"), ctx.attr("ends")
        axes, steps = ctx.attr("axes"), None
    else:
        starts, ends = ctx.ints(1), ctx.ints(2)
        axes, steps = ctx.ints(3), ctx.ints(4)
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    lo, hi, st = [0] * r, list(shape), [1] * r
    rev = []
    for a, s, e, k in zip(axes, starts, ends, steps):
        a = norm_axis(a, r)
        n = shape[a]
        if k > 0:
            s = max(0, min(n, s + n if s < 0 else s))
            e = max(0, min(n, e + n if e < 0 else e))
            lo[a], hi[a], st[a] = s, max(s, e), k
        else:  # walk backwards: reverse, then slice forwards
            s = max(0, min(n - 1, s + n if s < 0 else s))
            e = max(-1, min(n - 1, e + n if e < 0 else e))
            rev.append(a)
            lo[a], hi[a], st[a] = n - 1 - s, max(n - 1 - s, n - 1 - e), -k
    if rev:
        x = ctx.b.create("stablehlo.reverse", [x], {"dimensions": A.i64_array(sorted(rev))}
                         ).results[0]
    return [ctx.b.slice(x, lo, hi, st)]


def take(ctx: NodeContext, x: Value, idx: Value, axis: int) -> Value:
    """numpy ``take(x, idx, axis)`` with negative indices counting from the end."""
    b = ctx.b
    shape = shape_of(x)
    ishape = shape_of(idx)
    idx = b.convert(idx, i64) if etype(idx) != i64 else idx
    n = splat(b, shape[axis], i64, ishape)
    idx = b.select(b.compare("LT", idx, splat(b, 0, i64, ishape), "SIGNED"), b.add(idx, n), idx)
    r = len(shape)
    offset = [d for d in range(r) if d != axis]
    offset_dims = [d if d < axis else d + len(ishape) - 1 for d in offset]
    offset_dims = [d + (0 if d < axis else 0) for d in offset_dims]
    # result dims: x[:axis] + idx dims + x[axis+1:]
    offset_dims = list(range(axis)) + list(range(axis + len(ishape), r - 1 + len(ishape)))
    dn = A.struct("stablehlo.gather", offset_dims=tuple(offset_dims),
                  collapsed_slice_dims=(axis,), start_index_map=(axis,),
                  index_vector_dim=len(ishape))
    sizes = [1 if d == axis else shape[d] for d in range(r)]
    out = TensorType((*shape[:axis], *ishape, *shape[axis + 1:]), etype(x))
    attrs = {"dimension_numbers": dn, "slice_sizes": A.i64_array(sizes),
             "indices_are_sorted": A.BoolAttr(False)}
    return b.create("stablehlo.gather", [x, idx], attrs, [out]).results[0]


@rule("Gather", since=1)
def _gather(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    axis = norm_axis(ctx.attr("axis", 0), len(shape_of(x)))
    return [take(ctx, x, ctx.input(1), axis)]


@rule("GatherElements", since=11)
def _gather_elements(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    axis = norm_axis(ctx.attr("axis", 0), len(shape_of(x)))
    return [_gather_elements_values(ctx, x, ctx.input(1), axis)]


def _gather_elements_values(ctx: NodeContext, x: Value, idx: Value, axis: int) -> Value:
    """``np.take_along_axis(x, idx, axis)`` (negative indices wrap)."""
    b = ctx.b
    shape, ishape = shape_of(x), shape_of(idx)
    r = len(shape)
    idx = b.convert(idx, i64) if etype(idx) != i64 else idx
    n = splat(b, shape[axis], i64, ishape)
    idx = b.select(b.compare("LT", idx, splat(b, 0, i64, ishape), "SIGNED"), b.add(idx, n), idx)
    parts = []
    for d in range(r):
        v = idx if d == axis else b.iota(ishape, i64, d)
        parts.append(b.reshape(v, (*ishape, 1)))
    full = b.concatenate(parts, r)
    dn = A.struct("stablehlo.gather", offset_dims=(), collapsed_slice_dims=tuple(range(r)),
                  start_index_map=tuple(range(r)), index_vector_dim=r)
    attrs = {"dimension_numbers": dn, "slice_sizes": A.i64_array([1] * r),
             "indices_are_sorted": A.BoolAttr(False)}
    out = TensorType(ishape, etype(x))
    return b.create("stablehlo.gather", [x, full], attrs, [out]).results[0]


@rule("GatherND", since=11)
def _gather_nd(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    x, idx = ctx.input(0), ctx.input(1)
    shape, ishape = shape_of(x), shape_of(idx)
    bd = ctx.attr("batch_dims", 0)
    k = ishape[-1]
    idx = b.convert(idx, i64) if etype(idx) != i64 else idx
    lim = b.constant(np.array(shape[bd:bd + k], np.int64))
    lim = b.broadcast_in_dim(lim, ishape, [len(ishape) - 1])
    zero = splat(b, 0, i64, ishape)
    idx = b.select(b.compare("LT", idx, zero, "SIGNED"), b.add(idx, lim), idx)
    if bd:
        parts = [b.iota((*ishape[:-1], 1), i64, d) for d in range(bd)]
        idx = b.concatenate([*parts, idx], len(ishape) - 1)
    kk = bd + k
    r = len(shape)
    offset = tuple(range(len(ishape) - 1, len(ishape) - 1 + r - kk))
    dn = A.struct("stablehlo.gather", offset_dims=offset, collapsed_slice_dims=tuple(range(kk)),
                  start_index_map=tuple(range(kk)), index_vector_dim=len(ishape) - 1)
    sizes = [1] * kk + list(shape[kk:])
    out = TensorType((*ishape[:-1], *shape[kk:]), etype(x))
    attrs = {"dimension_numbers": dn, "slice_sizes": A.i64_array(sizes),
             "indices_are_sorted": A.BoolAttr(False)}
    return [b.create("stablehlo.gather", [x, idx], attrs, [out]).results[0]]


@rule("Expand", since=8)
def _expand(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    target = ctx.ints(1)
    assert target is not None
    shape = tuple(np.broadcast_shapes(shape_of(x), tuple(target)))
    return [broadcast_to(ctx.b, x, shape)]


@rule("Tile", since=6)
def _tile(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    reps = ctx.ints(1)
    assert reps is not None
    shape = shape_of(x)
    r = len(shape)
    # broadcast to [rep0, d0, rep1, d1, ...] then merge pairs
    inter = [v for i in range(r) for v in (reps[i], shape[i])]
    y = b.broadcast_in_dim(x, inter, [2 * i + 1 for i in range(r)])
    return [b.reshape(y, [reps[i] * shape[i] for i in range(r)])]


@rule("ConstantOfShape", since=9)
def _constant_of_shape(ctx: NodeContext) -> list[Value]:
    from onnx import numpy_helper

    shape = ctx.ints(0)
    assert shape is not None
    val = ctx.attr("value")
    arr = numpy_helper.to_array(val).reshape(-1) if val is not None else np.zeros(1, np.float32)
    et = element_type(val.data_type) if val is not None else element_type(1)
    return [splat(ctx.b, arr[0].item(), et, shape)]


@rule("Constant", since=1)
def _constant(ctx: NodeContext) -> list[np.ndarray]:
    raise ctx.fail("this Constant form is not supported (sparse or string value)")


@rule("Range", since=11)
def _range(ctx: NodeContext) -> list[Value]:
    start, limit, delta = (ctx.const_required(i, "Range's bounds") for i in range(3))
    arr = np.arange(start, limit, delta).astype(start.dtype)
    et = etype(ctx.input(0))
    return [ctx.constant(arr, et)]


@rule("Shape", since=1)
@rule("Size", since=1)
def _shape(ctx: NodeContext) -> list[Value]:
    raise ctx.fail(f"{ctx.node.op_type} of a value with a dynamic shape: give every input a "
                   "static shape (--input-spec DIMS:TYPE)")


@rule("Pad", since=2)
@rule("Pad", since=11)
def _pad(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    r = len(shape)
    if ctx.opset < 11:
        pads, value, axes = ctx.attr("pads"), ctx.attr("value", 0.0), None
        cval = splat(b, value, etype(x))
    else:
        pads = ctx.ints(1)
        axes = ctx.ints(3) if ctx.opset >= 18 else None
        cval = b.reshape(ctx.input(2), ()) if ctx.has(2) else splat(b, 0, etype(x))
    assert pads is not None
    axes = list(range(r)) if axes is None else [norm_axis(a, r) for a in axes]
    k = len(axes)
    lo, hi = [0] * r, [0] * r
    for j, a in enumerate(axes):
        lo[a], hi[a] = pads[j], pads[j + k]
    mode = ctx.attr("mode", "constant")
    if mode == "constant":
        return [pad(b, x, lo, hi, cval)]
    for a in range(r):
        x = _pad_edge(ctx, x, a, lo[a], hi[a], mode)
    return [x]


def _pad_edge(ctx: NodeContext, x: Value, a: int, lo: int, hi: int, mode: str) -> Value:
    """``reflect``/``edge``/``wrap`` padding along one axis by slicing and concatenating."""
    b = ctx.b
    shape = shape_of(x)
    n = shape[a]

    def piece(start: int, stop: int, reverse: bool = False) -> Value:
        s0, s1 = [0] * len(shape), list(shape)
        s0[a], s1[a] = start, stop
        v = b.slice(x, s0, s1)
        if reverse:
            v = b.create("stablehlo.reverse", [v], {"dimensions": A.i64_array([a])}).results[0]
        return v

    parts = []
    if lo:
        if mode == "reflect":
            parts.append(piece(1, lo + 1, True))
        elif mode == "edge":
            parts.append(broadcast_to(b, piece(0, 1), [lo if i == a else d
                                                      for i, d in enumerate(shape)]))
        else:  # wrap
            parts.append(piece(n - lo, n))
    parts.append(x)
    if hi:
        if mode == "reflect":
            parts.append(piece(n - 1 - hi, n - 1, True))
        elif mode == "edge":
            parts.append(broadcast_to(b, piece(n - 1, n), [hi if i == a else d
                                                          for i, d in enumerate(shape)]))
        else:
            parts.append(piece(0, hi))
    return parts[0] if len(parts) == 1 else b.concatenate(parts, a)


@rule("DepthToSpace", since=1)
@rule("DepthToSpace", since=13)
def _depth_to_space(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    n, c, h, w = shape_of(x)
    s = ctx.attr("blocksize")
    if ctx.attr("mode", "DCR") == "DCR":
        y = b.reshape(x, (n, s, s, c // (s * s), h, w))
        y = b.transpose(y, (0, 3, 4, 1, 5, 2))
    else:
        y = b.reshape(x, (n, c // (s * s), s, s, h, w))
        y = b.transpose(y, (0, 1, 4, 2, 5, 3))
    return [b.reshape(y, (n, c // (s * s), h * s, w * s))]


@rule("SpaceToDepth", since=1)
@rule("SpaceToDepth", since=13)
def _space_to_depth(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    n, c, h, w = shape_of(x)
    s = ctx.attr("blocksize")
    y = b.reshape(x, (n, c, h // s, s, w // s, s))
    crd = ctx.attr("mode", "DCR") == "CRD"
    y = b.transpose(y, (0, 1, 3, 5, 2, 4) if crd else (0, 3, 5, 1, 2, 4))
    return [b.reshape(y, (n, c * s * s, h // s, w // s))]


@rule("EyeLike", since=9)
def _eye_like(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    shape = shape_of(x)
    dt = ctx.attr("dtype")
    et = element_type(dt) if dt is not None else etype(x)
    arr = np.eye(shape[0], shape[1], ctx.attr("k", 0))
    return [ctx.constant(arr, et)]


@rule("Trilu", since=14)
def _trilu(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    k = int(ctx.ints(1, [0])[0])
    r = len(shape)
    rows = b.iota(shape, i64, r - 2)
    cols = b.iota(shape, i64, r - 1)
    diff = b.subtract(cols, rows)
    kk = splat(b, k, i64, shape)
    keep = b.compare("GE" if ctx.attr("upper", 1) else "LE", diff, kk, "SIGNED")
    return [b.select(keep, x, ctx.scalar_like(0, x))]
