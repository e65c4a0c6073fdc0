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
    return et.storage_type.dtype if isinstance(et, T.QuantizedType) else et.dtype


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
