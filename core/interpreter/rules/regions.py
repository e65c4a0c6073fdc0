"""Applying a scalar region (``map``, ``sort`` comparator, ``scatter`` update) to many
elements at once.

The spec calls these regions once per element (or pair of elements) on rank-0
tensors. When every op of the region is elementwise on rank-0 values, running the
region once on whole arrays gives, element by element, exactly the values of the
per-element calls; otherwise the region is called once per element.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from oxla.ir import Region
from oxla.ir import types as T
from oxla.ir.opdef import ELEMENTWISE

# Ops without the ELEMENTWISE trait that still act element by element on rank-0 values.
_ALSO_ELEMENTWISE = frozenset({
    "stablehlo.constant", "stablehlo.select", "stablehlo.clamp", "stablehlo.return",
    "func.return",
})


def _is_scalar(t) -> bool:
    return isinstance(t, T.TensorType) and t.shape == ()


def is_scalar_elementwise(region: Region) -> bool:
    """True when ``region`` only computes elementwise on rank-0 tensors (so it may be
    run on whole arrays)."""
    if len(region.blocks) != 1:
        return False
    block = region.blocks[0]
    if not all(_is_scalar(a.type) for a in block.args):
        return False
    for op in block.ops:
        if op.regions:
            return False
        if op.name not in _ALSO_ELEMENTWISE and not op.has_trait(ELEMENTWISE):
            return False
        if not all(_is_scalar(v.type) for v in (*op.operands, *op.results)):
            return False
    return True


def apply_region(ctx, region: Region, args: Sequence[np.ndarray],
                 vectorize: bool | None = None) -> list[np.ndarray]:
    """The region's results for each element of the (broadcast) ``args``.

    Args:
        ctx: the interpreter context.
        region: a region whose block arguments are rank-0 tensors.
        args: arrays broadcastable to one common shape, one per block argument.
        vectorize: force (True) or forbid (False) the whole-array path; by default
            it is used when :func:`is_scalar_elementwise` holds.

    Returns:
        One array of the common shape per region result.
    """
    args = [np.asarray(a) for a in args]
    shape = np.broadcast_shapes(*(a.shape for a in args)) if args else ()
    if vectorize is None:
        vectorize = is_scalar_elementwise(region)
    if vectorize:
        try:
            outs = ctx.run_region(region, args)
        except Exception:  # noqa: BLE001 -- fall back to per-element calls below
            outs = None
        if outs is not None:
            outs = [np.asarray(o) for o in outs]
            if all(np.broadcast_shapes(o.shape, shape) == shape for o in outs):
                return [np.array(np.broadcast_to(o, shape)) for o in outs]
    args = [np.broadcast_to(a, shape) for a in args]
    results: list[np.ndarray] | None = None
    for idx in np.ndindex(*shape):
        outs = ctx.run_region(region, [np.asarray(a[idx]) for a in args])
        if results is None:
            results = [np.empty(shape, dtype=np.asarray(o).dtype) for o in outs]
        for r, o in zip(results, outs):
            r[idx] = o
    if results is None:  # no elements: the result dtypes come from the region's types
        block = region.blocks[0]
        term = block.ops[-1]
        results = [np.empty(shape, dtype=_dtype(v.type)) for v in term.operands]
    return results


def _dtype(t) -> np.dtype:
    et = t.element_type
    return et.dtype
