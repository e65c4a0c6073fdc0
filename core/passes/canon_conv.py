"""Canonicalization of convolutions: a zero ``pad`` of the input folds into the
convolution's window padding (as XLA's algebraic simplifier does), so a backend never
materializes the padded copy (Keras' ``ZeroPadding2D`` before strided convolutions,
``jnp.pad`` before a ``VALID`` convolution).
"""

from __future__ import annotations

import numpy as np

from oxla.ir import Operation
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.passes.rewrite import Rewriter, pattern
from oxla.passes.util import i64s, splat_value


def _is_plus_zero(v) -> bool:
    s = splat_value(v)
    if s is None or np.iscomplexobj(s):
        return False
    return bool(s == 0) and not bool(np.signbit(s))


@pattern("stablehlo.convolution")
def conv_absorbs_zero_pad(op: Operation, rw: Rewriter) -> bool:
    """``convolution(pad(x, 0, lo, hi, interior = 0), w)`` → ``convolution(x, w)`` with
    ``lo``/``hi`` added to the window padding of each padded spatial dimension.

    Legal when: the pad value is a splat +0 of a float or integer type (the spec defines
    the convolution's own padding as a ``pad`` with 0, so both forms sum the same terms
    in the same order: results are unchanged bit for bit, signed zeros included); the
    interior padding is zero; the edge padding is non-negative and only on spatial
    dimensions (not batch or feature); and the input dilation of every padded dimension
    is 1 (window padding applies after input dilation, ``pad`` before it). A pad with
    other users stays for them.
    """
    p = op.operands[0].owner_op
    if p is None or p.name != "stablehlo.pad":
        return False
    et = op.operands[0].type.element_type
    if not isinstance(et, T.FloatType | T.IntegerType) or not _is_plus_zero(p.operands[1]):
        return False
    lo, hi = i64s(p, "edge_padding_low"), i64s(p, "edge_padding_high")
    if any(i64s(p, "interior_padding")) or min(lo + hi, default=0) < 0:
        return False
    dn = op.attr("dimension_numbers")
    spatial = [int(d) for d in dn.input_spatial_dimensions]
    for d in (int(dn.input_batch_dimension), int(dn.input_feature_dimension)):
        if lo[d] or hi[d]:
            return False
    ns = len(spatial)
    ldil = i64s(op, "lhs_dilation") or (1,) * ns
    if any(ldil[i] != 1 and (lo[d] or hi[d]) for i, d in enumerate(spatial)):
        return False
    old = op.attr("padding")
    pad = (np.asarray(old.array, np.int64).reshape(ns, 2).copy() if old is not None
           else np.zeros((ns, 2), np.int64))
    for i, d in enumerate(spatial):
        pad[i, 0] += lo[d]
        pad[i, 1] += hi[d]
    attrs = dict(op.attributes)
    attrs["padding"] = A.DenseElementsAttr(T.TensorType((ns, 2), T.IntegerType(64)), pad)
    new = rw.create_before(op, op.name, [p.operands[0], op.operands[1]],
                           [op.results[0].type], attrs)
    rw.replace_op(op, new.results)
    return True
