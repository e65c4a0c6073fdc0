"""Small StableHLO emission helpers shared by the ONNX rules (static shapes)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from oxla.errors import NotSupportedError
from oxla.ir import Block, Builder, Region, Value
from oxla.ir import attributes as A
from oxla.ir.types import (
    ElementType,
    FloatType,
    IntegerType,
    TensorType,
    i1,
    is_float,
)


def shape_of(v: Value) -> tuple[int, ...]:
    """The static shape of ``v``.

    Raises:
        NotSupportedError: ``v`` has a ``?`` dimension.
    """
    t = v.type
    assert isinstance(t, TensorType)
    if not t.is_static:
        raise NotSupportedError(f"a value of type {t} has a dynamic shape: give every "
                                "input a static shape (--input-spec DIMS:TYPE)")
    return t.shape  # type: ignore[return-value]


def etype(v: Value) -> ElementType:
    t = v.type
    assert isinstance(t, TensorType)
    return t.element_type


def norm_axis(axis: int, rank: int) -> int:
    """A possibly negative ONNX axis made non-negative."""
    return axis + rank if axis < 0 else axis


def is_int(et: ElementType) -> bool:
    return isinstance(et, IntegerType) and et.width > 1


def is_unsigned(et: ElementType) -> bool:
    return isinstance(et, IntegerType) and et.unsigned


def splat(b: Builder, value: float | int | bool, et: ElementType,
          shape: Sequence[int] = ()) -> Value:
    """A constant tensor of ``shape`` filled with ``value``."""
    t = TensorType(tuple(shape), et)
    arr = np.asarray(value).astype(et.dtype)
    return b.create("stablehlo.constant", [], {"value": A.splat(arr.item(), t)}, [t]).results[0]


def broadcast_to(b: Builder, v: Value, shape: Sequence[int]) -> Value:
    """numpy-style (ONNX multidirectional) broadcast of ``v`` to ``shape``."""
    s = shape_of(v)
    shape = tuple(shape)
    if s == shape:
        return v
    r = len(shape)
    # drop size-1 dims that broadcast, so broadcast_in_dim sees a compatible operand
    dims = list(range(r - len(s), r))
    return b.broadcast_in_dim(v, shape, dims)


def broadcast_all(b: Builder, *vs: Value) -> list[Value]:
    """The values broadcast to their common numpy shape."""
    shape = tuple(np.broadcast_shapes(*(shape_of(v) for v in vs)))
    return [broadcast_to(b, v, shape) for v in vs]


def convert(b: Builder, v: Value, et: ElementType) -> Value:
    """``stablehlo.convert`` unless ``v`` already has element type ``et``."""
    return v if etype(v) == et else b.convert(v, et)


def binary(b: Builder, op: str, x: Value, y: Value) -> Value:
    """``stablehlo.<op>`` of ``x`` and ``y`` broadcast together."""
    x, y = broadcast_all(b, x, y)
    return b.create(f"stablehlo.{op}", [x, y]).results[0]


def compare(b: Builder, direction: str, x: Value, y: Value) -> Value:
    """``stablehlo.compare`` with broadcasting; floats compare as FLOAT, unsigned as
    UNSIGNED."""
    x, y = broadcast_all(b, x, y)
    et = etype(x)
    kind = "FLOAT" if is_float(et) else ("UNSIGNED" if is_unsigned(et) or et == i1
                                         else "SIGNED")
    return b.compare(direction, x, y, kind)


def reduce(b: Builder, x: Value, dims: Sequence[int], op: str, init: float | int | bool,
           keepdims: bool = False) -> Value:
    """``stablehlo.reduce`` of ``x`` over ``dims`` with binary ``op`` and ``init``."""
    et = etype(x)
    shape = shape_of(x)
    dims = sorted(set(dims))
    (out,) = b.reduce([x], [splat(b, init, et)], dims, f"stablehlo.{op}")
    if keepdims:
        out = b.reshape(out, [1 if i in dims else d for i, d in enumerate(shape)])
    return out


def min_value(et: ElementType) -> float | int:
    """The smallest value of ``et`` (-inf for floats)."""
    if isinstance(et, FloatType):
        return -np.inf
    if et == i1:
        return False
    return int(np.iinfo(et.dtype).min)


def max_value(et: ElementType) -> float | int:
    if isinstance(et, FloatType):
        return np.inf
    if et == i1:
        return True
    return int(np.iinfo(et.dtype).max)


def reduce_window(b: Builder, x: Value, init: float | int, op: str, window: Sequence[int],
                  strides: Sequence[int], padding: Sequence[tuple[int, int]],
                  dilations: Sequence[int] | None = None) -> Value:
    """``stablehlo.reduce_window`` with binary ``op`` (the result type is inferred)."""
    et = etype(x)
    scalar = TensorType((), et)
    body = Block([scalar, scalar])
    bb = Builder(body, loc=b.loc)
    r = bb.create(f"stablehlo.{op}", [body.args[0], body.args[1]]).results[0]
    bb.create("stablehlo.return", [r], result_types=[])
    pad = np.asarray(padding, dtype=np.int64).reshape(len(window), 2)
    attrs = {"window_dimensions": A.i64_array(window), "window_strides": A.i64_array(strides),
             "padding": A.dense(pad, TensorType(pad.shape, IntegerType(64)))}
    if dilations is not None and any(d != 1 for d in dilations):
        attrs["window_dilations"] = A.i64_array(dilations)
    shape = shape_of(x)
    dil = list(dilations or [1] * len(window))
    out = tuple((shape[i] + padding[i][0] + padding[i][1] - (window[i] - 1) * dil[i] - 1)
                // strides[i] + 1 for i in range(len(window)))
    op_ = b.create("stablehlo.reduce_window", [x, splat(b, init, et)], attrs,
                   [TensorType(out, et)], regions=[Region([body])])
    return op_.results[0]


def pad(b: Builder, x: Value, low: Sequence[int], high: Sequence[int], value: Value,
        interior: Sequence[int] | None = None) -> Value:
    """``stablehlo.pad`` (negative ``low``/``high`` crop)."""
    n = len(low)
    attrs = {"edge_padding_low": A.i64_array(low), "edge_padding_high": A.i64_array(high),
             "interior_padding": A.i64_array(interior or [0] * n)}
    return b.create("stablehlo.pad", [x, value], attrs).results[0]


def matmul(b: Builder, x: Value, y: Value) -> Value:
    """numpy ``matmul`` semantics (1-d operands promoted, batch dims broadcast); f16 and
    bf16 products accumulate in f32 and round once."""
    et = etype(x)
    if isinstance(et, FloatType) and et.name in ("f16", "bf16"):
        from oxla.ir.types import f32

        return b.convert(_matmul(b, b.convert(x, f32), b.convert(y, f32)), et)
    return _matmul(b, x, y)


def _matmul(b: Builder, x: Value, y: Value) -> Value:
    sx, sy = shape_of(x), shape_of(y)
    if len(sx) == 1 and len(sy) == 1:
        return b.dot_general(x, y, ((0,), (0,)))
    if len(sy) == 1:
        return b.dot_general(x, y, ((len(sx) - 1,), (0,)))
    if len(sx) == 1:
        # [k] x [..., k, n] -> [..., n]
        out = b.dot_general(x, y, ((0,), (len(sy) - 2,)))
        return out
    if len(sx) == 2 and len(sy) == 2:
        return b.dot_general(x, y)
    if len(sy) == 2:  # [..., m, k] x [k, n]: one GEMM over the flattened rows
        return b.dot_general(x, y, ((len(sx) - 1,), (0,)))
    batch = tuple(np.broadcast_shapes(sx[:-2], sy[:-2]))
    x = broadcast_to(b, x, (*batch, *sx[-2:]))
    y = broadcast_to(b, y, (*batch, *sy[-2:]))
    nb = len(batch)
    bd = tuple(range(nb))
    return b.dot_general(x, y, ((nb + 1,), (nb,)), (bd, bd))
