"""Integer matrix products as one 8-bit ``dot_general`` with an i32 result (what
backends run as integer GEMMs) plus zero-point corrections, for the quantization rules
(:mod:`oxla_frontend_onnx.rules.quant`) and the QDQ form of MatMul
(:mod:`oxla_frontend_onnx.rules.nn`)."""

from __future__ import annotations

import weakref

import numpy as np

from oxla.ir import Value
from oxla.ir import attributes as A
from oxla.ir.types import IntegerType, TensorType, f32, i32
from oxla_frontend_onnx.emit import convert, etype, norm_axis, reduce, shape_of, splat
from oxla_frontend_onnx.registry import NodeContext

DEQUANTIZED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""A DequantizeLinear result -> ``(x, scale, zero_point or None, axis)`` of its node, so
that a MatMul reading two of them can multiply the integers (:func:`qdq_matmul`)."""


def _is8(v: Value) -> bool:
    et = etype(v)
    return isinstance(et, IntegerType) and et.width == 8


def _size(v: Value | None) -> int:
    return 1 if v is None else int(np.prod(shape_of(v)))


def int8_matmul(b, x: Value, zx: Value | None, w: Value, zw: Value | None) -> Value | None:
    """``(x - zx) @ (w - zw)`` in i32 (exact, wrapping as i32) for 8-bit ``x`` ``[..., K]``
    and ``w`` ``[K, N]``, ``zx`` a scalar (one element) and ``zw`` a scalar or ``[N]``
    (None: zero), as one 8-bit ``dot_general`` with an i32 result plus corrections:
    ``x @ w - zx * colsum(w) - zw * rowsum(x) + K * zx * zw``. An unsigned operand
    beside a signed one is read as ``v - 128`` in i8 (its zero point lowered by 128), as
    ``dot_general`` takes one element type. Returns None for other shapes."""
    sx, sw = shape_of(x), shape_of(w)
    if len(sw) != 2 or not sx or sx[-1] != sw[0] or _size(zx) != 1 or \
            _size(zw) not in (1, sw[1]) or not (_is8(x) and _is8(w)):
        return None
    k, n = sw
    i8 = IntegerType(8)

    def zero(z: Value | None, shape) -> Value:
        return splat(b, 0, i32, shape) if z is None else convert(b, b.reshape(z, shape), i32)

    zxi, zwi = zero(zx, ()), zero(zw, () if _size(zw) == 1 else (n,))
    if etype(x) != etype(w):
        def signed(v: Value, z: Value) -> tuple[Value, Value]:
            if not etype(v).unsigned:
                return v, z
            m128 = splat(b, 128, i32, shape_of(v))
            v8 = b.convert(b.subtract(convert(b, v, i32), m128), i8)
            return v8, b.subtract(z, splat(b, 128, i32, shape_of(z)))
        x, zxi = signed(x, zxi)
        w, zwi = signed(w, zwi)
    out_shape = (*sx[:-1], n)
    r = len(sx) - 1
    acc = b.create("stablehlo.dot_general", [x, w], {
        "dot_dimension_numbers": A.dot_dimension_numbers((), (), (r,), (0,))},
        [TensorType(out_shape, i32)]).results[0]
    colsum = reduce(b, convert(b, w, i32), [0], "add", 0)  # [N]
    acc = b.subtract(acc, b.multiply(b.broadcast_in_dim(zxi, out_shape, []),
                                     b.broadcast_in_dim(colsum, out_shape, [r])))
    rowsum = reduce(b, convert(b, x, i32), [r], "add", 0)  # [...]
    zw_b = b.broadcast_in_dim(zwi, out_shape, [] if _size(zw) == 1 else [r])
    acc = b.subtract(acc, b.multiply(zw_b, b.broadcast_in_dim(rowsum, out_shape,
                                                              list(range(r)))))
    kzz = b.multiply(b.broadcast_in_dim(b.multiply(zxi, splat(b, k, i32)), out_shape, []),
                     zw_b)
    return b.add(acc, kzz)


def qdq_matmul(ctx: NodeContext, a: Value, bv: Value) -> Value | None:
    """MatMul of two DequantizeLinear results as :func:`int8_matmul` times ``sa * sb``
    (f32), or None when the pair does not fit it (per-tensor ``a``; ``b`` per-tensor or
    per column)."""
    qa, qb = DEQUANTIZED.get(a), DEQUANTIZED.get(bv)
    if qa is None or qb is None or etype(a) != f32 or etype(bv) != f32:
        return None
    x, sx, zx, _ = qa
    w, sw, zw, axis = qb
    if len(shape_of(w)) != 2 or _size(sx) != 1 or (
            _size(sw) != 1 and norm_axis(axis, 2) != 1) or (
            _size(zw) != 1 and norm_axis(axis, 2) != 1):
        return None
    acc = int8_matmul(ctx.b, x, zx, w, zw)
    if acc is None:
        return None
    b = ctx.b
    shp = shape_of(acc)
    scale = b.broadcast_in_dim(b.reshape(convert(b, sx, f32), ()), shp, [])
    swf = convert(b, sw, f32)
    swb = (b.broadcast_in_dim(b.reshape(swf, ()), shp, []) if _size(sw) == 1 else
           b.broadcast_in_dim(b.reshape(swf, (shp[-1],)), shp, [len(shp) - 1]))
    return b.multiply(b.convert(acc, f32), b.multiply(scale, swb))


