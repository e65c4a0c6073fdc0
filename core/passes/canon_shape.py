"""Canonicalization of data-movement ops: chains merged, identities removed, dynamic
ops with known shapes made static. These rules move or select elements without
arithmetic, so they are legal for every element type unless a docstring says more.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from oxla.ir import Operation, i64_array
from oxla.ir import types as T
from oxla.passes.rewrite import Rewriter, pattern
from oxla.passes.util import constant_array, i64s, splat_value, static_tensor


def _producer(op: Operation, name: str) -> Operation | None:
    p = op.operands[0].owner_op
    return p if p is not None and p.name == name else None


def _forward(op: Operation, rw: Rewriter, index: int = 0) -> bool:
    """Replaces ``op`` by its operand ``index`` when the types agree."""
    v = op.operands[index]
    if v.type != op.results[0].type:
        return False
    rw.replace_op(op, [v])
    return True


def _recreate(op: Operation, rw: Rewriter, name: str, operand, attrs: dict) -> bool:
    new = rw.create_before(op, name, [operand], [op.results[0].type], attrs)
    rw.replace_op(op, new.results)
    return True


@pattern("stablehlo.reshape")
def reshape_identity(op: Operation, rw: Rewriter) -> bool:
    """``reshape(x) → x`` when the result type equals the operand type."""
    return _forward(op, rw)


@pattern("stablehlo.reshape")
def reshape_reshape(op: Operation, rw: Rewriter) -> bool:
    """``reshape(reshape(x)) → reshape(x)``: both keep row-major element order."""
    inner = _producer(op, "stablehlo.reshape")
    if inner is None:
        return False
    return _recreate(op, rw, "stablehlo.reshape", inner.operands[0], {})


@pattern("stablehlo.transpose")
def transpose_chain(op: Operation, rw: Rewriter) -> bool:
    """``transpose(x, iota) → x``; ``transpose(transpose(x, p1), p2) → transpose(x, p)``
    with ``p[i] = p1[p2[i]]`` (or ``x`` when ``p`` is the identity)."""
    perm = i64s(op, "permutation")
    inner = _producer(op, "stablehlo.transpose")
    src = op.operands[0]
    if inner is not None:
        p1 = i64s(inner, "permutation")
        perm = tuple(p1[i] for i in perm)
        src = inner.operands[0]
    if perm == tuple(range(len(perm))) and src.type == op.results[0].type:
        rw.replace_op(op, [src])
        return True
    if inner is None:
        return False
    return _recreate(op, rw, "stablehlo.transpose", src, {"permutation": i64_array(perm)})


@pattern("stablehlo.broadcast_in_dim")
def broadcast_chain(op: Operation, rw: Rewriter) -> bool:
    """Identity ``broadcast_in_dim`` (same type, dims ``0..r-1``) → ``x``; a
    ``broadcast_in_dim`` of a ``broadcast_in_dim`` → one with dims ``d2[d1[i]]``."""
    dims = i64s(op, "broadcast_dimensions")
    x = op.operands[0]
    if x.type == op.results[0].type and dims == tuple(range(len(dims))):
        rw.replace_op(op, [x])
        return True
    inner = _producer(op, "stablehlo.broadcast_in_dim")
    if inner is None:
        return False
    composed = tuple(dims[d] for d in i64s(inner, "broadcast_dimensions"))
    return _recreate(
        op,
        rw,
        "stablehlo.broadcast_in_dim",
        inner.operands[0],
        {"broadcast_dimensions": i64_array(composed)},
    )


def _float_info(t: T.FloatType) -> tuple[int, int, int, bool, bool]:
    """(mantissa bits, max exponent, min subnormal exponent, has inf, has nan)."""
    dt = t.dtype
    fi = ml_dtypes.finfo(dt)
    with np.errstate(all="ignore"):
        has_inf = bool(np.isinf(np.array(np.inf).astype(dt)))
        has_nan = bool(np.isnan(np.array(np.nan).astype(dt)))
    return int(fi.nmant), int(fi.maxexp), int(fi.minexp) - int(fi.nmant), has_inf, has_nan


def represents_exactly(src: T.ElementType, mid: T.ElementType) -> bool:
    """True when every value of ``src`` converts to ``mid`` and back without change.

    Integers go into wider integers of a compatible signedness and into floats with
    enough mantissa bits; floats into floats with at least the mantissa, exponent
    range (subnormals included), infinities and NaNs of the source. Float to integer
    never qualifies (truncation).
    """
    if src == mid:
        return True
    if isinstance(mid, T.ComplexType):
        base = src.element_type if isinstance(src, T.ComplexType) else src
        return represents_exactly(base, mid.element_type)
    if isinstance(src, T.IntegerType):
        if src.width == 1:
            return isinstance(mid, T.IntegerType | T.FloatType)
        if isinstance(mid, T.IntegerType):
            if mid.width == 1:
                return False
            if mid.unsigned:
                return src.unsigned and mid.width >= src.width
            return mid.width > src.width if src.unsigned else mid.width >= src.width
        if isinstance(mid, T.FloatType):
            try:
                nmant, maxexp, *_ = _float_info(mid)
            except (ValueError, TypeError):
                return False
            bits = src.width if src.unsigned else src.width - 1
            return nmant + 1 >= bits and maxexp > bits
        return False
    if isinstance(src, T.FloatType) and isinstance(mid, T.FloatType):
        try:
            s, m = _float_info(src), _float_info(mid)
        except (ValueError, TypeError):
            return False
        return (
            m[0] >= s[0]
            and m[1] >= s[1]
            and m[2] <= s[2]
            and (m[3] or not s[3])
            and (m[4] or not s[4])
        )
    return False


@pattern("stablehlo.convert")
def convert_identity(op: Operation, rw: Rewriter) -> bool:
    """``convert(x) → x`` when the types are equal (the conversion is the identity)."""
    return _forward(op, rw)


@pattern("stablehlo.convert")
def convert_convert(op: Operation, rw: Rewriter) -> bool:
    """``convert(convert(x: A) : B) : C → convert(x) : C`` when ``B`` represents every
    value of ``A`` exactly (``f16→f32→f64``, ``i8→i32→f64``). Not for ``f32→f16→f32``
    (rounding and overflow to inf are lost) nor anything through an integer from a
    float (truncation)."""
    inner = _producer(op, "stablehlo.convert")
    if inner is None:
        return False
    src, mid = inner.operands[0].type, inner.results[0].type
    if not (isinstance(src, T.TensorType) and isinstance(mid, T.TensorType)):
        return False
    if not represents_exactly(src.element_type, mid.element_type):
        return False
    return _recreate(op, rw, "stablehlo.convert", inner.operands[0], {})


@pattern("stablehlo.slice")
def slice_chain(op: Operation, rw: Rewriter) -> bool:
    """A full slice (start 0, limit = shape, stride 1) → ``x``; a slice of a slice →
    one slice with ``start = s1 + s2*t1``, ``stride = t1*t2`` and
    ``limit = s1 + (l2-1)*t1 + 1``."""
    start, limit, strides = (i64s(op, n) for n in ("start_indices", "limit_indices", "strides"))
    x = op.operands[0]
    if x.type == op.results[0].type and all(s == 0 for s in start) and all(t == 1 for t in strides):
        rw.replace_op(op, [x])
        return True
    inner = _producer(op, "stablehlo.slice")
    if inner is None:
        return False
    s1, t1 = i64s(inner, "start_indices"), i64s(inner, "strides")
    if any(lo >= hi for lo, hi in zip(start, limit)):
        return False  # empty result: no element to anchor the composed limit
    ns = [a + b * t for a, b, t in zip(s1, start, t1)]
    nl = [a + (lim - 1) * t + 1 for a, lim, t in zip(s1, limit, t1)]
    nt = [a * b for a, b in zip(t1, strides)]
    return _recreate(
        op,
        rw,
        "stablehlo.slice",
        inner.operands[0],
        {"start_indices": i64_array(ns), "limit_indices": i64_array(nl), "strides": i64_array(nt)},
    )


@pattern("stablehlo.concatenate")
def concat_single(op: Operation, rw: Rewriter) -> bool:
    """``concatenate(x) → x``: one operand is copied unchanged."""
    return len(op.operands) == 1 and _forward(op, rw)


@pattern("stablehlo.select")
def select_constant_pred(op: Operation, rw: Rewriter) -> bool:
    """``select(splat true, a, b) → a`` and ``select(splat false, a, b) → b``."""
    s = splat_value(op.operands[0])
    if s is None:
        return False
    return _forward(op, rw, 1 if bool(s) else 2)


@pattern("stablehlo.pad")
def pad_zero(op: Operation, rw: Rewriter) -> bool:
    """``pad`` with all edge and interior paddings zero → ``x`` (no element added)."""
    pads = (
        i64s(op, "edge_padding_low") + i64s(op, "edge_padding_high") + i64s(op, "interior_padding")
    )
    return all(p == 0 for p in pads) and _forward(op, rw)


@pattern("stablehlo.dynamic_slice")
def dynamic_slice_constant(op: Operation, rw: Rewriter) -> bool:
    """``dynamic_slice`` with constant start indices → ``slice``.

    Applies the spec's clamping: ``start[i] = clamp(0, idx[i], dim[i] - size[i])``, so
    out-of-range indices give the same elements as at run time.
    """
    x = op.operands[0]
    if not static_tensor(x.type):
        return False
    idx = [constant_array(v) for v in op.operands[1:]]
    if any(a is None for a in idx):
        return False
    sizes = i64s(op, "slice_sizes")
    starts = [
        min(max(int(a.reshape(-1)[0]), 0), d - s) for a, d, s in zip(idx, x.type.shape, sizes)
    ]
    limits = [a + s for a, s in zip(starts, sizes)]
    return _recreate(
        op,
        rw,
        "stablehlo.slice",
        x,
        {
            "start_indices": i64_array(starts),
            "limit_indices": i64_array(limits),
            "strides": i64_array([1] * len(starts)),
        },
    )


def _shape_matches(op: Operation, index: int) -> bool:
    arr = constant_array(op.operands[index])
    t = op.results[0].type
    return (
        arr is not None and static_tensor(t) and tuple(int(v) for v in arr.reshape(-1)) == t.shape
    )


@pattern("stablehlo.dynamic_reshape")
def dynamic_reshape_static(op: Operation, rw: Rewriter) -> bool:
    """``dynamic_reshape`` with a constant shape equal to its static result → ``reshape``."""
    if not (_shape_matches(op, 1) and static_tensor(op.operands[0].type)):
        return False
    return _recreate(op, rw, "stablehlo.reshape", op.operands[0], {})


@pattern("stablehlo.dynamic_broadcast_in_dim")
def dynamic_broadcast_static(op: Operation, rw: Rewriter) -> bool:
    """``dynamic_broadcast_in_dim`` with a constant shape equal to its static result →
    ``broadcast_in_dim`` (the expansion hints are implied by the static shapes)."""
    if not (_shape_matches(op, 1) and static_tensor(op.operands[0].type)):
        return False
    return _recreate(
        op,
        rw,
        "stablehlo.broadcast_in_dim",
        op.operands[0],
        {"broadcast_dimensions": op.attributes["broadcast_dimensions"]},
    )


@pattern("stablehlo.dynamic_iota")
def dynamic_iota_static(op: Operation, rw: Rewriter) -> bool:
    """``dynamic_iota`` with a constant shape equal to its static result → ``iota``."""
    if not _shape_matches(op, 0):
        return False
    new = rw.create_before(
        op,
        "stablehlo.iota",
        [],
        [op.results[0].type],
        {"iota_dimension": op.attributes["iota_dimension"]},
    )
    rw.replace_op(op, new.results)
    return True
