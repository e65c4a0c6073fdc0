"""Rules for ops that move data without computing on it: broadcasts, reshapes,
transposes, slices, concatenation, padding, reversal and the dynamic slices.

Spec sections: ``broadcast_in_dim``, ``reshape``, ``transpose``, ``slice``,
``concatenate``, ``pad``, ``reverse``, ``get_dimension_size``, ``dynamic_slice``,
``dynamic_update_slice``, and "Deprecated Operations" for ``broadcast``,
``real_dynamic_slice`` and ``torch_index_select``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from oxla.errors import InterpreterError
from oxla.interpreter.registry import interpreter_rule
from oxla.interpreter.rules.util import attr, result_dtype, result_type


def broadcast_to_dims(x: np.ndarray, shape: Sequence[int], dims: Sequence[int]) -> np.ndarray:
    """``x`` broadcast to ``shape`` with operand axis ``d`` mapped to ``dims[d]``.

    Spec: ``broadcast_in_dim`` (an operand axis of size 1 is repeated).
    """
    x = np.asarray(x)
    dims = [int(d) for d in dims]
    order = sorted(range(len(dims)), key=lambda d: dims[d])
    x = np.transpose(x, order)
    shaped = [1] * len(shape)
    for d in order:
        shaped[dims[d]] = x.shape[order.index(d)]
    x = x.reshape(shaped)
    return np.array(np.broadcast_to(x, tuple(int(s) for s in shape)))


def pad_array(x: np.ndarray, value: np.ndarray, low: Sequence[int], high: Sequence[int],
              interior: Sequence[int]) -> np.ndarray:
    """Spec ``pad``: interior padding first, then edge padding (negative edges crop)."""
    x = np.asarray(x)
    value = np.asarray(value, dtype=x.dtype)
    low = [int(v) for v in low]
    high = [int(v) for v in high]
    interior = [int(v) for v in interior]
    if any(i < 0 for i in interior):
        raise InterpreterError("pad: interior padding must be non-negative")
    inner = [0 if n == 0 else (n - 1) * (i + 1) + 1 for n, i in zip(x.shape, interior)]
    full_shape = [max(lo, 0) + n + max(hi, 0) for lo, n, hi in zip(low, inner, high)]
    out = np.full(full_shape, value, dtype=x.dtype)
    place = tuple(slice(max(lo, 0), max(lo, 0) + n, i + 1)
                  for lo, n, i in zip(low, inner, interior))
    out[place] = x
    crop = tuple(slice(max(-lo, 0), f - max(-hi, 0)) for lo, hi, f in zip(low, high, full_shape))
    out = out[crop]
    expected = [lo + n + hi for lo, n, hi in zip(low, inner, high)]
    if any(e < 0 for e in expected):
        raise InterpreterError(f"pad: negative result shape {expected}")
    return np.array(out)


def clamp_starts(starts: Sequence, operand_shape: Sequence[int],
                 sizes: Sequence[int]) -> list[int]:
    """Start indices clamped to ``[0, dim - size]`` (spec ``dynamic_slice`` and
    ``dynamic_update_slice``)."""
    return [min(max(int(s), 0), int(n) - int(z)) for s, n, z in zip(starts, operand_shape, sizes)]


def _scalar(v) -> int:
    return int(np.asarray(v).reshape(()))


@interpreter_rule("stablehlo.broadcast_in_dim")
def broadcast_in_dim(ctx, op, args):
    shape = result_type(op).shape
    dims = attr(op, "broadcast_dimensions", ())
    if any(s is None for s in shape):
        raise InterpreterError("broadcast_in_dim: result shape must be static", op.loc)
    return [broadcast_to_dims(args[0], shape, dims)]


@interpreter_rule("stablehlo.broadcast")
def broadcast(ctx, op, args):
    """Deprecated ``broadcast``: ``broadcast_sizes`` become new leading axes."""
    x = np.asarray(args[0])
    sizes = tuple(int(s) for s in attr(op, "broadcast_sizes", ()))
    return [np.array(np.broadcast_to(x, sizes + x.shape))]


def reshape_to(x: np.ndarray, shape: Sequence[int | None]) -> np.ndarray:
    """Spec ``reshape``: row-major element order is kept; one ``None`` dim is inferred."""
    dims = [-1 if s is None else int(s) for s in shape]
    return np.array(np.reshape(np.asarray(x), dims))


@interpreter_rule("stablehlo.reshape")
def reshape(ctx, op, args):
    return [reshape_to(args[0], result_type(op).shape)]


@interpreter_rule("stablehlo.transpose")
def transpose(ctx, op, args):
    perm = [int(p) for p in attr(op, "permutation", ())]
    return [np.array(np.transpose(np.asarray(args[0]), perm))]


@interpreter_rule("stablehlo.slice")
def slice_(ctx, op, args):
    starts = attr(op, "start_indices", ())
    limits = attr(op, "limit_indices", ())
    strides = attr(op, "strides", None) or (1,) * len(starts)
    index = tuple(slice(int(a), int(b), int(s)) for a, b, s in zip(starts, limits, strides))
    return [np.array(np.asarray(args[0])[index])]


@interpreter_rule("stablehlo.concatenate")
def concatenate(ctx, op, args):
    dim = int(attr(op, "dimension", 0))
    dtype = result_dtype(op)
    return [np.concatenate([np.asarray(a, dtype=dtype) for a in args], axis=dim)]


@interpreter_rule("stablehlo.pad")
def pad(ctx, op, args):
    x = np.asarray(args[0])
    low = attr(op, "edge_padding_low", ())
    high = attr(op, "edge_padding_high", ())
    interior = attr(op, "interior_padding", None) or (0,) * x.ndim
    return [pad_array(x, args[1], low, high, interior)]


@interpreter_rule("stablehlo.reverse")
def reverse(ctx, op, args):
    dims = tuple(int(d) for d in attr(op, "dimensions", ()))
    x = np.asarray(args[0])
    return [np.array(np.flip(x, dims)) if dims else x.copy()]


@interpreter_rule("stablehlo.get_dimension_size")
def get_dimension_size(ctx, op, args):
    dim = int(attr(op, "dimension", 0))
    return [np.asarray(np.asarray(args[0]).shape[dim], dtype=result_dtype(op))]


@interpreter_rule("stablehlo.dynamic_slice")
def dynamic_slice(ctx, op, args):
    x = np.asarray(args[0])
    sizes = [int(s) for s in attr(op, "slice_sizes", ())]
    starts = clamp_starts([_scalar(s) for s in args[1:]], x.shape, sizes)
    index = tuple(slice(s, s + z) for s, z in zip(starts, sizes))
    return [np.array(x[index])]


@interpreter_rule("stablehlo.dynamic_update_slice")
def dynamic_update_slice(ctx, op, args):
    x = np.array(args[0], copy=True)
    update = np.asarray(args[1])
    starts = clamp_starts([_scalar(s) for s in args[2:]], x.shape, update.shape)
    index = tuple(slice(s, s + z) for s, z in zip(starts, update.shape))
    x[index] = update
    return [x]


def strided_slice(x: np.ndarray, starts, limits, strides) -> np.ndarray:
    """``x[start:limit:stride]`` per axis (spec ``slice``, with runtime bounds)."""
    index = tuple(slice(int(a), int(b), int(s)) for a, b, s in
                  zip(np.asarray(starts).reshape(-1), np.asarray(limits).reshape(-1),
                      np.asarray(strides).reshape(-1)))
    return np.array(np.asarray(x)[index])


def clamped_slice_bounds(dim: int, start: int, limit: int, stride: int) -> tuple[int, int]:
    """``(start, count)`` of a ``real_dynamic_slice`` along one axis of size ``dim``:
    ``count = ceil((limit - start) / stride)`` (the spec's result size) and ``start``
    clamped so that the slice stays inside the axis, as ``dynamic_slice`` clamps (XLA
    compiles ``real_dynamic_slice`` with ``limit = start + constant`` as a
    ``dynamic_slice``, StableHLO's canonicalize-dynamism pattern).

    Raises:
        InterpreterError: a non-positive stride, or a slice longer than the axis.
    """
    if stride <= 0:
        raise InterpreterError(f"real_dynamic_slice: stride {stride} must be positive")
    count = max(0, -(-(limit - start) // stride))
    span = (count - 1) * stride + 1 if count else 0
    if span > dim:
        raise InterpreterError(f"real_dynamic_slice: {count} elements with stride {stride} "
                               f"do not fit in a dimension of size {dim}")
    return min(max(start, 0), dim - span), count


@interpreter_rule("stablehlo.real_dynamic_slice")
def real_dynamic_slice(ctx, op, args):
    """Deprecated ``real_dynamic_slice``: ``slice`` with operand-given bounds; the result
    has ``ceil((limit - start) / stride)`` elements per axis and out-of-bounds starts
    are clamped (:func:`clamped_slice_bounds`)."""
    x = np.asarray(args[0])
    index = []
    for d, (a, b, st) in enumerate(zip(*(np.asarray(v).reshape(-1) for v in args[1:4]))):
        start, count = clamped_slice_bounds(x.shape[d], int(a), int(b), int(st))
        index.append(slice(start, start + count * int(st), int(st)))
    return [np.array(x[tuple(index)])]


@interpreter_rule("stablehlo.torch_index_select")
def torch_index_select(ctx, op, args):
    """Deprecated ``torch_index_select``: ``operand`` gathered along ``dim`` at ``index``.

    The first ``batch_dims`` axes of ``operand`` and ``index`` are shared batch axes;
    the result has shape ``operand[:dim] + index[batch_dims:] + operand[dim + 1:]``.
    """
    x = np.asarray(args[0])
    index = np.asarray(args[1]).astype(np.int64)
    dim = int(attr(op, "dim", 0))
    batch_dims = int(attr(op, "batch_dims", 0))
    if dim < 0:
        dim += x.ndim
    if batch_dims < 0:
        batch_dims += index.ndim
    if batch_dims == 0:
        return [np.array(np.take(x, index, axis=dim))]
    batch_shape = x.shape[:batch_dims]
    out_shape = x.shape[:dim] + index.shape[batch_dims:] + x.shape[dim + 1:]
    out = np.empty(out_shape, dtype=x.dtype)
    for b in np.ndindex(*batch_shape):
        out[b] = np.take(x[b], index[b], axis=dim - batch_dims)
    return [out]
