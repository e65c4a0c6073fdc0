"""Shape rules and rewrites that ``stablehlo-refine-shapes`` adds to the op table's:
dynamic ops whose shape operands are constants become their static forms, the
``convolution`` result shape (spec ``convolution`` C25-C27) and ``real_dynamic_slice``
sizes when ``limit_indices`` is ``start_indices`` plus a constant.

Only shapes are decided here; element types stay what the program says.
"""

from __future__ import annotations

import numpy as np

from oxla.ir import Operation, i64_array
from oxla.ir import types as T
from oxla.ir.attributes import DenseElementsAttr
from oxla.passes.rewrite import Pattern, Rewriter, pattern
from oxla.passes.util import constant_array

REFINE_PATTERNS: list[Pattern] = []
"""Rewrites run by ``stablehlo-refine-shapes`` (canonicalize runs them too)."""


def _ints(op: Operation, name: str, default: list[int]) -> list[int]:
    v = op.attr(name)
    return [int(x) for x in v] if v is not None else default


def conv_shape(op: Operation) -> tuple[int, ...] | None:
    """The result shape of ``convolution`` from static operand shapes (spec
    ``convolution`` C25-C27), None when an operand shape is dynamic.

    Output batch is ``lhs`` batch / ``batch_group_count``, output feature the kernel's
    output feature size, each spatial size
    ``floor((dilated padded input - dilated window) / stride) + 1`` (0 when negative).
    """
    lt, rt = op.operands[0].type, op.operands[1].type
    if not (isinstance(lt, T.TensorType) and lt.is_static
            and isinstance(rt, T.TensorType) and rt.is_static):
        return None
    dn = op.attributes["dimension_numbers"]
    ns = len(dn.input_spatial_dimensions)
    strides = _ints(op, "window_strides", [1] * ns)
    lhs_dil = _ints(op, "lhs_dilation", [1] * ns)
    rhs_dil = _ints(op, "rhs_dilation", [1] * ns)
    pad = op.attributes.get("padding")
    pad = getattr(pad, "array", None)
    pad = pad.reshape(ns, 2).tolist() if pad is not None and pad.size else [[0, 0]] * ns
    if not (len(strides) == len(lhs_dil) == len(rhs_dil) == ns):
        return None
    bgc = op.attr("batch_group_count")
    bgc = int(getattr(bgc, "value", bgc) or 1)
    out = [0] * lt.rank
    out[dn.output_batch_dimension] = lt.shape[dn.input_batch_dimension] // bgc
    out[dn.output_feature_dimension] = rt.shape[dn.kernel_output_feature_dimension]
    for i in range(ns):
        n = lt.shape[dn.input_spatial_dimensions[i]]
        k = rt.shape[dn.kernel_spatial_dimensions[i]]
        padded = (0 if n == 0 else (n - 1) * lhs_dil[i] + 1) + pad[i][0] + pad[i][1]
        span = 0 if k == 0 else (k - 1) * rhs_dil[i] + 1
        out[dn.output_spatial_dimensions[i]] = (
            0 if padded < span or strides[i] <= 0 else (padded - span) // strides[i] + 1)
    return tuple(out)


def _same_value(a, b, depth: int = 8) -> bool:
    """True when ``a`` and ``b`` are provably equal: the same value, or made by the same
    region-free op with equal attributes from provably equal operands (JAX exports
    recompute index expressions instead of reusing them)."""
    if a is b:
        return True
    pa, pb = a.owner_op, b.owner_op
    if depth == 0 or pa is None or pb is None or pa.name != pb.name or pa.regions \
            or pb.regions or len(pa.operands) != len(pb.operands) or a.type != b.type:
        return False
    if pa.name == "stablehlo.constant":
        return pa.attributes == pb.attributes
    if list(pa.results).index(a) != list(pb.results).index(b) or pa.attributes != pb.attributes:
        return False
    return all(_same_value(x, y, depth - 1) for x, y in zip(pa.operands, pb.operands))


def real_dynamic_slice_shape(op: Operation) -> tuple[int, ...] | None:
    """``ceil((limit - start) / stride)`` per dimension (spec ``real_dynamic_slice``),
    from constants or from ``limit = add(start, constant)``; None when unknown."""
    start, limit, stride = op.operands[1:4]
    st = constant_array(stride)
    if st is None:
        return None
    lo, hi = constant_array(start), constant_array(limit)
    if lo is not None and hi is not None:
        diff = hi.astype(np.int64) - lo.astype(np.int64)
    else:
        p = limit.owner_op
        if p is None or p.name != "stablehlo.add":
            return None
        x, y = p.operands
        if _same_value(x, start) and constant_array(y) is not None:
            diff = constant_array(y).astype(np.int64)
        elif _same_value(y, start) and constant_array(x) is not None:
            diff = constant_array(x).astype(np.int64)
        else:
            return None
    return tuple(max(0, -(-int(d) // int(s))) for d, s in zip(diff.reshape(-1),
                                                               st.reshape(-1)))


def _replace(op: Operation, rw: Rewriter, name: str, operands: list, attrs: dict) -> bool:
    new = rw.create_before(op, name, operands, [r.type for r in op.results], attrs)
    rw.replace_op(op, new.results)
    return True


@pattern("stablehlo.dynamic_gather", into=REFINE_PATTERNS)
@pattern("stablehlo.dynamic_gather")
def dynamic_gather_constant(op: Operation, rw: Rewriter) -> bool:
    """``dynamic_gather`` with constant ``slice_sizes`` → ``gather``."""
    sizes = constant_array(op.operands[2])
    if sizes is None:
        return False
    attrs = {k: v for k, v in op.attributes.items()}
    attrs["slice_sizes"] = i64_array(sizes.reshape(-1))
    return _replace(op, rw, "stablehlo.gather", list(op.operands[:2]), attrs)


@pattern("stablehlo.dynamic_pad", into=REFINE_PATTERNS)
@pattern("stablehlo.dynamic_pad")
def dynamic_pad_constant(op: Operation, rw: Rewriter) -> bool:
    """``dynamic_pad`` with constant paddings → ``pad``."""
    arrs = [constant_array(v) for v in op.operands[2:5]]
    if any(a is None for a in arrs):
        return False
    names = ("edge_padding_low", "edge_padding_high", "interior_padding")
    attrs = {n: i64_array(a.reshape(-1)) for n, a in zip(names, arrs)}
    return _replace(op, rw, "stablehlo.pad", list(op.operands[:2]), attrs)


@pattern("stablehlo.dynamic_conv", into=REFINE_PATTERNS)
@pattern("stablehlo.dynamic_conv")
def dynamic_conv_constant(op: Operation, rw: Rewriter) -> bool:
    """``dynamic_conv`` with a constant ``padding`` → ``convolution``."""
    pad = constant_array(op.operands[2])
    if pad is None:
        return False
    pad = pad.astype(np.int64).reshape(-1, 2)
    attrs = dict(op.attributes)
    attrs["padding"] = DenseElementsAttr(T.TensorType(pad.shape, T.IntegerType(64)), pad)
    return _replace(op, rw, "stablehlo.convolution", list(op.operands[:2]), attrs)
