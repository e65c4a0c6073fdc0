"""Argument specs for tracing: ``tf.TensorSpec``, arrays, shapes or ``4x8:f32`` strings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from oxla.errors import RuntimeInputError
from oxla.ir import parse_input_spec as parse_input_spec_type
from oxla_frontend_tf._tf import require_tf


def parse_input_spec(spec: str, default_dtype: Any = np.float32) -> tuple[tuple[int, ...], Any]:
    """Reads one ``--input-spec`` item: ``1x224x224x3:f32``, ``:i32`` (a scalar) or ``4x8``.

    Args:
        spec: the text.
        default_dtype: the numpy dtype when the text names none.

    Returns:
        ``(shape, numpy dtype)``.

    Raises:
        RuntimeInputError: malformed spec.
    """
    shape, element_type = parse_input_spec_type(spec)
    if element_type is not None:
        return shape, element_type.dtype
    return shape, np.dtype(default_dtype)


def to_tensor_spec(item: Any, default_dtype: Any = np.float32) -> Any:
    """One ``tf.TensorSpec`` from a spec, a ``4x8:f32`` string, an array or tensor (its
    shape and dtype), or a shape tuple (of ``default_dtype``)."""
    tf = require_tf()
    if isinstance(item, tf.TensorSpec):
        return item
    if isinstance(item, str):
        shape, dtype = parse_input_spec(item, default_dtype)
        return tf.TensorSpec(shape, tf.as_dtype(dtype))
    if hasattr(item, "shape") and hasattr(item, "dtype"):
        return tf.TensorSpec(tuple(item.shape), tf.as_dtype(item.dtype))
    try:
        shape = tuple(int(d) for d in item)
    except TypeError as exc:
        raise RuntimeInputError(
            f"cannot read an input spec from {type(item).__name__}: expected a "
            "tf.TensorSpec, an array, a shape tuple or a string like 4x8:f32") from exc
    return tf.TensorSpec(shape, tf.as_dtype(np.dtype(default_dtype)))


def to_tensor_specs(input_specs: Any) -> list[Any]:
    """The flat list of ``tf.TensorSpec``, one per positional argument.

    A single spec (a string, a ``TensorSpec``, an array or a tuple of ints) stands for a
    one-argument function.
    """
    tf = require_tf()
    single = isinstance(input_specs, str | tf.TensorSpec) or hasattr(input_specs, "dtype") or (
        isinstance(input_specs, Sequence) and all(isinstance(d, int) for d in input_specs)
        and len(input_specs) > 0)
    items = [input_specs] if single else list(input_specs)
    return [to_tensor_spec(i) for i in items]
