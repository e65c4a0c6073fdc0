"""Rules for the reductions: ``reduce``, ``reduce_window`` and ``select_and_scatter``.

Spec sections: ``reduce``, ``reduce_window``, ``select_and_scatter``.

The spec leaves the reduction schedule implementation-defined: any full binary tree
whose in-order traversal visits the input elements in ascending index order, with
init values interspersed. Two evaluation strategies follow from that:

* A body that is one of ``add/multiply/maximum/minimum/and/or/xor`` applied to the
  two block arguments is evaluated as a vectorized numpy reduction (float sums and
  products accumulate in f64 and round once to the element type; a sum of ``-0.0``
  values stays ``-0.0``; ``maximum``/``minimum`` propagate NaN and order
  ``-0.0 < +0.0`` as IEEE-754 does), then combined with the init value.
* Any other body is applied batched, each region run covering every output
  position at once: a left fold from the init value (XLA's schedule, which the
  conformance files were made with) for up to 256 reduced elements, else a
  balanced pairwise tree (each level one region run over whole arrays of element
  pairs, then ``body(init, tree)``). Adjacent pairs keep the in-order traversal,
  so order-sensitive bodies (argmax tie-breaking on the index) stay correct.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from oxla.errors import InterpreterError
from oxla.interpreter.registry import interpreter_rule
from oxla.interpreter.rules.util import attr, dense_2d, result_dtype
from oxla.ir import Region
from oxla.ir import types as T

_SIMPLE_BODIES = {
    "stablehlo.add": "add",
    "stablehlo.multiply": "mul",
    "stablehlo.maximum": "max",
    "stablehlo.minimum": "min",
    "stablehlo.and": "and",
    "stablehlo.or": "or",
    "stablehlo.xor": "xor",
}

# Float folds longer than this use numpy's pairwise reduction in f64 instead.
_SEQUENTIAL_LIMIT = 1 << 16
# General bodies fold left to right from the init value (XLA's schedule) up to this
# many reduced elements, and use a pairwise tree above it.
_SEQUENTIAL_REGION_LIMIT = 256
# Fallback to one region run per element only below this many elements.
_PER_ELEMENT_LIMIT = 200_000


# -- dtype helpers ------------------------------------------------------------------


def is_float_dtype(dt: np.dtype) -> bool:
    """True for IEEE-like floats, including the ml_dtypes ones (bf16, f8...)."""
    dt = np.dtype(dt)
    if dt.kind == "f":
        return True
    return dt.kind == "V" and "float" in dt.name


def _is_int_dtype(dt: np.dtype) -> bool:
    dt = np.dtype(dt)
    return dt.kind in "iu" or (dt.kind == "V" and "int" in dt.name)


def _int_bits(dt: np.dtype) -> tuple[int, bool]:
    """(bit width, signed) of an integer dtype, sub-byte ml_dtypes included."""
    dt = np.dtype(dt)
    name = dt.name
    signed = not name.startswith("u")
    digits = "".join(c for c in name if c.isdigit())
    return int(digits), signed


def wrap_int(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Integers (any width, as int64/uint64) wrapped modulo 2^bits into ``dt``."""
    dt = np.dtype(dt)
    if dt.kind in "iu":
        with np.errstate(over="ignore"):
            return np.asarray(x).astype(dt)
    bits, signed = _int_bits(dt)
    v = np.asarray(x).astype(np.int64) & ((1 << bits) - 1)
    if signed:
        v = np.where(v >= (1 << (bits - 1)), v - (1 << bits), v)
    return v.astype(dt)


def _wide(dt: np.dtype) -> np.dtype:
    """The accumulation dtype for float/int reductions of ``dt``."""
    dt = np.dtype(dt)
    if dt.kind == "c":
        return np.dtype(np.complex128)
    if is_float_dtype(dt):
        return np.dtype(np.float64)
    if _is_int_dtype(dt):
        bits, signed = _int_bits(dt)
        return np.dtype(np.int64 if signed or bits < 64 else np.uint64)
    return dt


# -- the simple bodies --------------------------------------------------------------


def simple_body(region: Region, dtypes: Sequence[np.dtype]) -> str | None:
    """The kind (``add``, ``max``...) when ``region`` is ``return op(arg0, arg1)``."""
    if len(dtypes) != 1 or not region.blocks:
        return None
    block = region.blocks[0]
    if len(block.args) != 2 or len(block.ops) != 2:
        return None
    body, ret = block.ops
    kind = _SIMPLE_BODIES.get(body.name)
    if kind is None or ret.name != "stablehlo.return" or len(ret.operands) != 1:
        return None
    if ret.operands[0] is not body.results[0] or len(body.operands) != 2:
        return None
    a, b = body.operands
    if not ((a is block.args[0] and b is block.args[1])
            or (a is block.args[1] and b is block.args[0])):
        return None
    for v in list(block.args) + [body.results[0]]:
        et = getattr(v.type, "element_type", None)
        if et is None or isinstance(et, T.QuantizedType) or et.dtype != dtypes[0]:
            return None
    dt = np.dtype(dtypes[0])
    if dt.kind == "c" and kind in ("max", "min"):
        return None
    return kind


def _fix_zero_sign(r: np.ndarray, x: np.ndarray, axis: int, kind: str) -> np.ndarray:
    """IEEE-754 ``maximum``/``minimum`` order ``-0.0 < +0.0``; numpy may not."""
    zero = (r == 0)
    if not np.any(zero):
        return r
    xf = np.asarray(x, dtype=np.float64)
    neg = (xf == 0) & np.signbit(xf)
    pos = (xf == 0) & ~np.signbit(xf)
    if kind == "max":
        want_neg = ~np.any(pos, axis=axis)
    else:
        want_neg = np.any(neg, axis=axis)
    return np.where(zero, np.where(want_neg, -0.0, 0.0), r)


def _reduce_simple(kind: str, x: np.ndarray, axis: int) -> np.ndarray:
    """Reduces ``x`` along ``axis`` (non-empty) with a simple body, in ``x``'s dtype."""
    dt = x.dtype
    if dt == np.bool_:
        fn = {"add": np.any, "or": np.any, "max": np.any, "mul": np.all, "and": np.all,
              "min": np.all}.get(kind)
        if fn is not None:
            return fn(x, axis=axis)
        return np.logical_xor.reduce(x, axis=axis)
    if is_float_dtype(dt) or dt.kind == "c":
        with np.errstate(all="ignore"):
            if kind in ("add", "mul"):
                return _fold_float(kind, x, axis)
            if kind in ("max", "min"):
                xw = x.astype(_wide(dt))
                r = (np.max if kind == "max" else np.min)(xw, axis=axis)
                return np.asarray(_fix_zero_sign(r, xw, axis, kind)).astype(dt)
        raise InterpreterError(f"'{kind}' is not defined on floats")
    wide = _wide(dt)
    xw = x.astype(wide)
    with np.errstate(all="ignore"):
        fn = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
              "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind]
        r = fn.reduce(xw, axis=axis)
    return wrap_int(r, dt)


def _fold_float(kind: str, x: np.ndarray, axis: int) -> np.ndarray:
    """Float sum/product folded left to right, rounding to the element type per step.

    This is the schedule XLA's CPU backend uses (and the one the conformance files
    were made with); short of huge reductions it is also cheap, each step being one
    vectorized operation over every output position.
    """
    x = np.moveaxis(x, axis, 0)
    fn = np.add if kind == "add" else np.multiply
    if x.shape[0] > _SEQUENTIAL_LIMIT:
        return fn.reduce(x.astype(_wide(x.dtype)), axis=0).astype(x.dtype)
    acc = x[0].copy()
    for i in range(1, x.shape[0]):
        acc = fn(acc, x[i])
    return acc


def binary_simple(kind: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``kind(a, b)`` element-wise, per the spec of the corresponding op."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    return _reduce_simple(kind, np.stack([a, b]), 0)


# -- applying a region to batches ---------------------------------------------------


def apply_region(ctx, region: Region, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Runs ``region`` element-wise over same-shaped ``args``, batched when possible.

    The region is run once with whole (flattened) arrays bound to its scalar block
    arguments; the ops in a reduction body are element-wise, so this equals running
    it per element. When a rule rejects the batched values, falls back to one run
    per element.
    """
    block = region.blocks[0]
    arg_dtypes = [_value_dtype(a) for a in block.args]
    res_dtypes = [_value_dtype(v) for v in block.ops[-1].operands]
    shape = np.shape(args[0])
    n = int(np.prod(shape, dtype=np.int64))
    flat = [_as(np.asarray(a).reshape(-1), dt) for a, dt in zip(args, arg_dtypes)]
    try:
        with np.errstate(all="ignore"):
            outs = ctx.run_region(region, flat)
        outs = [np.broadcast_to(np.asarray(o), (n,)) for o in outs]
    except InterpreterError:
        raise
    except Exception:
        if n > _PER_ELEMENT_LIMIT:
            raise
        per = []
        for i in range(n):
            with np.errstate(all="ignore"):
                per.append(ctx.run_region(region, [f[i] for f in flat]))
        outs = [np.array([p[j] for p in per]).reshape(n) for j in range(len(res_dtypes))]
    return [_as(o, dt).reshape(shape) for o, dt in zip(outs, res_dtypes)]


def _value_dtype(v) -> np.dtype:
    et = v.type.element_type
    return et.dtype


def _as(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    x = np.asarray(x)
    return x if x.dtype == dt else x.astype(dt)


# -- the reduction core -------------------------------------------------------------


def reduce_rows(ctx, region: Region, xs: Sequence[np.ndarray], inits: Sequence[Any],
                ) -> list[np.ndarray]:
    """Reduces 2-d arrays ``xs`` (P, K) along axis 1 with ``region`` and ``inits``.

    ``inits`` are scalars or (P,) arrays. Returns one (P,) array per input.
    """
    block = region.blocks[0]
    n = len(xs)
    arg_dtypes = [_value_dtype(a) for a in block.args]
    xs = [_as(x, dt) for x, dt in zip(xs, arg_dtypes[:n])]
    rows = xs[0].shape[0]
    inits = [np.broadcast_to(_as(np.asarray(i), dt), (rows,))
             for i, dt in zip(inits, arg_dtypes[n:])]
    k = xs[0].shape[1]
    if k == 0:
        return [np.array(i) for i in inits]
    kind = simple_body(region, [x.dtype for x in xs])
    if kind is not None:
        r = _reduce_simple(kind, xs[0], 1)
        return [binary_simple(kind, inits[0], r)]
    if k <= _SEQUENTIAL_REGION_LIMIT:
        acc = list(inits)
        for j in range(k):
            acc = apply_region(ctx, region, acc + [x[:, j] for x in xs])
        return acc
    level = list(xs)
    while k > 1:
        half = k // 2
        left = [x[:, 0:2 * half:2] for x in level]
        right = [x[:, 1:2 * half:2] for x in level]
        comb = apply_region(ctx, region, left + right)
        if k % 2:
            comb = [np.concatenate([c, x[:, k - 1:]], axis=1) for c, x in zip(comb, level)]
        level, k = comb, half + k % 2
    return apply_region(ctx, region, list(inits) + [x[:, 0] for x in level])


@interpreter_rule("stablehlo.reduce")
def reduce(ctx, op, args):
    """Spec ``reduce``: reduces ``inputs`` along ``dimensions`` with ``body``."""
    n = len(args) // 2
    inputs, inits = [np.asarray(a) for a in args[:n]], args[n:]
    dims = tuple(attr(op, "dimensions", ()))
    shape = inputs[0].shape
    keep = [d for d in range(len(shape)) if d not in dims]
    perm = keep + list(dims)
    out_shape = tuple(shape[d] for d in keep)
    p = int(np.prod(out_shape, dtype=np.int64))
    k = int(np.prod([shape[d] for d in dims], dtype=np.int64))
    xs = [np.transpose(x, perm).reshape(p, k) for x in inputs]
    outs = reduce_rows(ctx, op.regions[0], xs, inits)
    return [_as(o, result_dtype(op, i)).reshape(out_shape) for i, o in enumerate(outs)]


# -- reduce_window ------------------------------------------------------------------


def pad_with(x: np.ndarray, value: Any, low: Sequence[int], high: Sequence[int],
             interior: Sequence[int]) -> np.ndarray:
    """Spec ``pad`` (negative edge padding allowed), filling with ``value``."""
    shape = x.shape
    new = []
    for n, lo, hi, it in zip(shape, low, high, interior):
        base = (n - 1) * (it + 1) + 1 if n else 0
        new.append(max(base + lo + hi, 0))
    out = np.full(new, value, dtype=x.dtype)
    src, dst = [], []
    for n, lo, it, size in zip(shape, low, interior, new):
        step = it + 1
        i0 = 0 if lo >= 0 else -(lo // step)  # smallest i with i*step + lo >= 0
        # largest i with i*step + lo < size
        i1 = (size - 1 - lo) // step if size - 1 - lo >= 0 else -1
        i1 = min(i1, n - 1)
        if i1 < i0:
            return out
        src.append(slice(i0, i1 + 1))
        dst.append(slice(i0 * step + lo, i1 * step + lo + 1, step))
    out[tuple(dst)] = x[tuple(src)]
    return out


def _window_params(op, rank: int) -> tuple[tuple[int, ...], ...]:
    wd = tuple(attr(op, "window_dimensions", (1,) * rank))
    ws = tuple(attr(op, "window_strides", None) or (1,) * rank)
    bd = tuple(attr(op, "base_dilations", None) or (1,) * rank)
    wdl = tuple(attr(op, "window_dilations", None) or (1,) * rank)
    pad = dense_2d(op, "padding")
    if pad is None or pad.size == 0:
        pad = np.zeros((rank, 2), dtype=np.int64)
    pad = pad.reshape(rank, 2)
    return wd, ws, bd, wdl, tuple(int(v) for v in pad[:, 0]), tuple(int(v) for v in pad[:, 1])


def _window_out_shape(shape, wd, ws, bd, wdl, lo, hi) -> tuple[int, ...]:
    """The shape of ``reduce_window``'s results, from the operand's runtime shape
    (spec ``reduce_window``, constraint on ``shape(results...)``; the result type may
    have ``?`` dims)."""
    out = []
    for n, w, s, b, d, l_, h in zip(shape, wd, ws, bd, wdl, lo, hi):
        padded = (0 if n == 0 else (n - 1) * b + 1) + l_ + h
        span = (w - 1) * d + 1
        out.append(0 if padded < span else (padded - span) // s + 1)
    return tuple(out)


def windows_of(x: np.ndarray, wd, ws, wdl) -> np.ndarray:
    """The (out..., window...) view of padded ``x`` per strides and window dilations."""
    span = [(w - 1) * d + 1 for w, d in zip(wd, wdl)]
    rank = x.ndim
    v = np.lib.stride_tricks.sliding_window_view(x, span) if rank else x
    idx = tuple(slice(None, None, s) for s in ws) + tuple(slice(None, None, d) for d in wdl)
    return v[idx]


@interpreter_rule("stablehlo.reduce_window")
def reduce_window(ctx, op, args):
    """Spec ``reduce_window``: ``reduce`` over (dilated, padded, strided) windows."""
    n = len(args) // 2
    inputs, inits = [np.asarray(a) for a in args[:n]], [np.asarray(a) for a in args[n:]]
    rank = inputs[0].ndim
    wd, ws, bd, wdl, lo, hi = _window_params(op, rank)
    out_shape = _window_out_shape(inputs[0].shape, wd, ws, bd, wdl, lo, hi)
    p = int(np.prod(out_shape, dtype=np.int64))
    k = int(np.prod(wd, dtype=np.int64))
    if p == 0:
        return [np.zeros(out_shape, result_dtype(op, i)) for i in range(n)]
    xs = []
    for x, init in zip(inputs, inits):
        padded = pad_with(x, init, lo, hi, [b - 1 for b in bd])
        w = windows_of(padded, wd, ws, wdl)
        assert w.shape[:rank] == out_shape, (w.shape, out_shape)
        xs.append(np.ascontiguousarray(w).reshape(p, k))
    outs = reduce_rows(ctx, op.regions[0], xs, inits)
    return [_as(o, result_dtype(op, i)).reshape(out_shape) for i, o in enumerate(outs)]


# -- select_and_scatter -------------------------------------------------------------


@interpreter_rule("stablehlo.select_and_scatter")
def select_and_scatter(ctx, op, args):
    """Spec ``select_and_scatter``.

    Each window's element is chosen with ``select`` left to right (padding elements
    are never chosen); the ``source`` values landing on one operand element are
    combined with ``scatter``, starting from ``init_value``.
    """
    operand, source, init = (np.asarray(a) for a in args)
    rank = operand.ndim
    wd, ws, _, _, lo, hi = _window_params(op, rank)
    ones = (1,) * rank
    flat_idx = np.arange(operand.size, dtype=np.int64).reshape(operand.shape)
    pidx = pad_with(flat_idx, -1, lo, hi, (0,) * rank)
    pval = pad_with(operand, np.zeros((), operand.dtype), lo, hi, (0,) * rank)
    widx = windows_of(pidx, wd, ws, ones)
    wval = windows_of(pval, wd, ws, ones)
    p = source.size
    k = int(np.prod(wd, dtype=np.int64))
    widx = np.ascontiguousarray(widx).reshape(p, k)
    wval = np.ascontiguousarray(wval).reshape(p, k)
    sel_region, scat_region = op.regions
    acc_i = widx[:, 0].copy()
    acc_v = wval[:, 0].copy()
    for j in range(1, k):
        ci, cv = widx[:, j], wval[:, j]
        (keep,) = apply_region(ctx, sel_region, [acc_v, cv])[:1]
        keep = np.asarray(keep, dtype=bool)
        keep = np.where(acc_i < 0, False, np.where(ci < 0, True, keep))
        acc_i = np.where(keep, acc_i, ci)
        acc_v = np.where(keep, acc_v, cv)
    result = np.full(operand.size, init, dtype=result_dtype(op))
    src = source.reshape(-1)
    valid = acc_i >= 0
    targets, vals = acc_i[valid], src[valid]
    # Combine in rounds so that each round scatters to distinct targets.
    order = np.argsort(targets, kind="stable")
    targets, vals = targets[order], vals[order]
    if targets.size:
        starts = np.r_[0, np.flatnonzero(np.diff(targets)) + 1]
        rank_in_group = np.arange(targets.size) - np.repeat(starts, np.diff(
            np.r_[starts, targets.size]))
        for r in range(int(rank_in_group.max()) + 1):
            m = rank_in_group == r
            t = targets[m]
            (out,) = apply_region(ctx, scat_region, [result[t], vals[m]])[:1]
            result[t] = out
    return [result.reshape(operand.shape)]
