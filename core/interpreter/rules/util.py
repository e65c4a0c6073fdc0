"""Helpers shared by interpreter rules: result types, dtypes, attribute access."""

from __future__ import annotations

from typing import Any

import numpy as np

from oxla.ir import Operation
from oxla.ir import attributes as A
from oxla.ir import types as T


def result_type(op: Operation, i: int = 0) -> T.TensorType:
    t = op.results[i].type
    assert isinstance(t, T.TensorType), t
    return t


def element_type(v_type: T.Type) -> T.ElementType:
    return v_type.element_type  # type: ignore[attr-defined]


def result_dtype(op: Operation, i: int = 0) -> np.dtype:
    """The numpy dtype of result ``i`` (storage dtype for quantized types)."""
    et = result_type(op, i).element_type
    return et.dtype


def attr(op: Operation, name: str, default: Any = None) -> Any:
    """Attribute ``name`` as plain Python data (tuples, ints, enum strings...)."""
    a = op.attr(name)
    if a is None:
        return default
    return A.to_python(a)


def dense_2d(op: Operation, name: str, rows: int | None = None) -> np.ndarray | None:
    """A ``dense<[[..]]> : tensor<Nx2xi64>`` attribute (padding, replica groups)."""
    a = op.attr(name)
    if a is None:
        return None
    if isinstance(a, A.DenseElementsAttr):
        return a.array.astype(np.int64)
    return np.asarray(A.to_python(a), dtype=np.int64)


def as_dtype(x: np.ndarray | Any, dtype: np.dtype) -> np.ndarray:
    """``x`` as an array of ``dtype`` (no copy when it already is)."""
    x = np.asarray(x)
    return x if x.dtype == dtype else x.astype(dtype)


# -- quantization (spec "Quantization": dequantize / quantize / dequantize_op_quantize) --


def _axis_params(qt: T.QuantizedType, shape: tuple[int, ...], dtype) -> tuple[Any, Any]:
    """Scales and zero points broadcastable against a tensor of ``shape``."""
    scales = np.asarray(qt.scales, dtype=np.float64)
    zps = np.asarray(qt.zero_points, dtype=np.float64)
    if qt.quantized_dimension is not None:
        bshape = [1] * len(shape)
        bshape[qt.quantized_dimension] = -1
        scales, zps = scales.reshape(bshape), zps.reshape(bshape)
    else:
        scales, zps = scales[0], zps[0]
    return np.asarray(scales).astype(dtype), np.asarray(zps).astype(dtype)


def dequantize(x: np.ndarray, qt: T.QuantizedType) -> np.ndarray:
    """Storage integers of quantized type ``qt`` as values of its expressed type.

    Spec "Quantization", ``dequantize``: ``(storage - zero_point) * scale``, each step
    in the expressed type.
    """
    et = qt.expressed_type.dtype
    scales, zps = _axis_params(qt, np.shape(x), np.float64)
    sub = (np.asarray(x).astype(np.int64) - zps.astype(np.int64)).astype(et)
    return (sub * scales.astype(et)).astype(et)


def quantize(x: np.ndarray, qt: T.QuantizedType) -> np.ndarray:
    """Values of the expressed type as storage integers of quantized type ``qt``.

    Spec "Quantization", ``quantize``: divide by the scale, add the zero point, clamp to
    the storage range, round half to even, convert to the storage type.
    """
    et = qt.expressed_type.dtype
    x = np.asarray(x).astype(et)
    scales, zps = _axis_params(qt, np.shape(x), et)
    with np.errstate(all="ignore"):
        y = (x / scales).astype(et)
        y = (y + zps).astype(et)
        y = np.clip(y.astype(np.float64), qt.storage_min, qt.storage_max)
        y = np.nan_to_num(np.rint(y), nan=0.0)
    return y.astype(np.int64).astype(qt.storage_type.dtype)


def dequantize_op_quantize(fn, args: list, arg_types: list, out_type: T.ElementType):
    """Spec ``dequantize_op_quantize``: dequantizes quantized ``args``, applies ``fn`` to
    expressed values and quantizes the result when ``out_type`` is quantized."""
    vals = [dequantize(a, t) if isinstance(t, T.QuantizedType) else a
            for a, t in zip(args, arg_types)]
    out = fn(*vals)
    if isinstance(out_type, T.QuantizedType):
        return quantize(out, out_type)
    return out


def is_quantized_op(op: Operation) -> bool:
    """True when an operand or result of ``op`` has a quantized element type."""
    for v in list(op.operands) + list(op.results):
        t = v.type
        if isinstance(getattr(t, "element_type", None), T.QuantizedType):
            return True
    return False
