"""Rules for the shape-dynamic ops: their shapes and paddings come from operand values.

Spec sections: ``dynamic_broadcast_in_dim``, ``dynamic_reshape``, ``dynamic_iota``,
``dynamic_pad`` (each "functionally identical" to its static op). ``dynamic_gather``
lives in :mod:`.gather_scatter`, ``real_dynamic_slice`` in :mod:`.shape`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from oxla.errors import InterpreterError
from oxla.interpreter.registry import interpreter_rule
from oxla.interpreter.rules.shape import broadcast_to_dims, pad_array, reshape_to
from oxla.interpreter.rules.util import attr, result_dtype, result_type


def shape_operand(v, op, what: str) -> tuple[int, ...]:
    """A 1-D integer shape operand as a tuple of ints, checked against the result type's
    static dimensions."""
    shape = tuple(int(s) for s in np.asarray(v).reshape(-1))
    if any(s < 0 for s in shape):
        raise InterpreterError(f"{op.name}: negative {what} {list(shape)}", op.loc)
    static = result_type(op).shape
    if len(static) != len(shape) or any(a is not None and a != b
                                        for a, b in zip(static, shape)):
        raise InterpreterError(
            f"{op.name}: {what} {list(shape)} does not match result type "
            f"{result_type(op)}", op.loc)
    return shape


def iota_array(shape: Sequence[int], dimension: int, dtype: np.dtype) -> np.ndarray:
    """Spec ``iota``: element ``i`` along ``dimension`` is ``i`` (real part for complex)."""
    shape = tuple(int(s) for s in shape)
    ramp = np.arange(shape[dimension], dtype=np.int64)
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return np.array(np.broadcast_to(ramp.reshape(view).astype(dtype), shape))


@interpreter_rule("stablehlo.dynamic_broadcast_in_dim")
def dynamic_broadcast_in_dim(ctx, op, args):
    shape = shape_operand(args[1], op, "output_dimensions")
    return [broadcast_to_dims(args[0], shape, attr(op, "broadcast_dimensions", ()))]


@interpreter_rule("stablehlo.dynamic_reshape")
def dynamic_reshape(ctx, op, args):
    shape = shape_operand(args[1], op, "output_shape")
    x = np.asarray(args[0])
    if int(np.prod(shape, dtype=np.int64)) != x.size:
        raise InterpreterError(
            f"dynamic_reshape: cannot reshape {x.size} elements to {list(shape)}", op.loc)
    return [reshape_to(x, shape)]


@interpreter_rule("stablehlo.dynamic_iota")
def dynamic_iota(ctx, op, args):
    shape = shape_operand(args[0], op, "output_shape")
    return [iota_array(shape, int(attr(op, "iota_dimension", 0)), result_dtype(op))]


@interpreter_rule("stablehlo.dynamic_pad")
def dynamic_pad(ctx, op, args):
    x, value, low, high, interior = args
    flat = [np.asarray(v).reshape(-1) for v in (low, high, interior)]
    return [pad_array(x, value, *flat)]
