"""Convolutions sharded along a spatial dimension: halo exchange (XLA's windowed
einsum partitioning for convolutions).

A device holding rows ``[i L, (i+1) L)`` of a spatial dimension needs, for a window of
effective size ``k`` padded ``(lo, hi)`` with ``lo + hi = k - 1`` (a "same"
convolution, stride 1), the last ``lo`` rows of its left neighbour and the first
``hi`` of its right one. Two ``collective_permute`` ops bring them; the first and
last devices receive zeros (spec ``collective_permute``: a process that is no target
gets zeros), which is the convolution's zero padding. The local convolution then runs
unpadded on ``lo + L + hi`` rows and gives the device's ``L`` output rows.
"""

from __future__ import annotations

import numpy as np

from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.ir.operation import Operation, Value
from oxla.ir.sdy import DimSharding, TensorShardingAttr
from oxla.sharding import model as M
from oxla.sharding.collectives import DeviceOps, _axes

I64 = T.IntegerType(64)


def _ints(op: Operation, name: str, n: int, default: int) -> list[int]:
    a = op.attributes.get(name)
    if a is None:
        return [default] * n
    v = a.array if isinstance(a, A.DenseElementsAttr) else A.to_python(a)
    return [int(x) for x in np.asarray(v).reshape(-1)]


def halo_plan(op: Operation, x_sh: TensorShardingAttr | None, mesh) -> dict | None:
    """What a halo exchange needs for convolution ``op`` whose input is sharded as
    ``x_sh`` (one spatial dimension, evenly, a stride-1 "same" window), or None."""
    dn = op.attributes.get("dimension_numbers")
    if dn is None or x_sh is None:
        return None
    sp = list(dn.input_spatial_dimensions)
    sharded = [j for j, d in enumerate(sp) if _axes(x_sh, d)]
    others = [d for d in range(len(x_sh.dims)) if _axes(x_sh, d) and d not in sp
              and d != dn.input_batch_dimension]
    if len(sharded) != 1 or others:
        return None
    j = sharded[0]
    d = sp[j]
    ns = len(sp)
    if _ints(op, "batch_group_count", 1, 1)[0] != 1:
        return None
    strides = _ints(op, "window_strides", ns, 1)
    lhs_dil = _ints(op, "lhs_dilation", ns, 1)
    rhs_dil = _ints(op, "rhs_dilation", ns, 1)
    pad = _ints(op, "padding", 2 * ns, 0)
    axes = _axes(x_sh, d)
    n = 1
    for a in axes:
        n *= a.size(mesh)
    size = op.operands[0].type.shape[d]
    k = op.operands[1].type.shape[dn.kernel_spatial_dimensions[j]]
    keff = (k - 1) * rhs_dil[j] + 1
    lo, hi = pad[2 * j], pad[2 * j + 1]
    if size % n or strides[j] != 1 or lhs_dil[j] != 1 or lo < 0 or hi < 0 \
            or lo + hi != keff - 1 or max(lo, hi) > size // n:
        return None
    batch = tuple(a for a in _axes(x_sh, dn.input_batch_dimension)
                  if a.name not in {b.name for b in axes})
    return {"j": j, "dim": d, "axes": axes, "lo": lo, "hi": hi, "pad": pad,
            "batch": batch, "out_dim": dn.output_spatial_dimensions[j]}


def halo_conv(ops: DeviceOps, op: Operation, x: Value, w: Value, plan: dict,
              mesh_name: str) -> tuple[Value, TensorShardingAttr]:
    """The local result of convolution ``op`` on the local input ``x`` (sharded as the
    plan says) and the whole kernel ``w``, and the result's sharding."""
    b = ops.b
    d, lo, hi, axes = plan["dim"], plan["lo"], plan["hi"], plan["axes"]
    shape = list(x.type.shape)
    rank = len(shape)
    groups = M.device_groups(axes, ops.mesh)
    parts = []
    if lo:
        start = [0] * rank
        start[d] = shape[d] - lo
        left = b.slice(x, start, shape)
        parts.append(ops.permute(left, [(g[i], g[i + 1]) for g in groups
                                        for i in range(len(g) - 1)], axes, op.name))
    parts.append(x)
    if hi:
        lim = list(shape)
        lim[d] = hi
        right = b.slice(x, [0] * rank, lim)
        parts.append(ops.permute(right, [(g[i + 1], g[i]) for g in groups
                                         for i in range(len(g) - 1)], axes, op.name))
    xe = b.concatenate(parts, d) if len(parts) > 1 else x
    pad = list(plan["pad"])
    pad[2 * plan["j"]] = pad[2 * plan["j"] + 1] = 0
    ns = len(pad) // 2
    attrs = {k: v for k, v in op.attributes.items() if k != M.KEY}
    attrs["padding"] = A.dense(np.array(pad, dtype=np.int64).reshape(ns, 2),
                               T.TensorType((ns, 2), I64))
    dn = op.attributes["dimension_numbers"]
    out_t = op.results[0].type
    dims = [DimSharding(())] * len(out_t.shape)
    dims[plan["out_dim"]] = DimSharding(axes)
    dims[dn.output_batch_dimension] = DimSharding(plan["batch"])
    res_sh = TensorShardingAttr(mesh_name, tuple(dims))
    new = Operation.create(op.name, [xe, w], [T.TensorType(
        M.local_shape(out_t.shape, res_sh, ops.mesh), out_t.element_type)], attrs,
        loc=op.loc)
    b.insert(new)
    return new.results[0], res_sh


def input_sharding(op: Operation, plan: dict, mesh_name: str) -> TensorShardingAttr:
    """The input sharding the halo exchange runs on: the spatial dimension's axes and
    the batch dimension's (when they do not overlap), the rest whole."""
    dn = op.attributes["dimension_numbers"]
    dims = [DimSharding(())] * len(op.operands[0].type.shape)
    dims[plan["dim"]] = DimSharding(plan["axes"])
    dims[dn.input_batch_dimension] = DimSharding(plan["batch"])
    return TensorShardingAttr(mesh_name, tuple(dims))


__all__ = ["halo_plan", "halo_conv", "input_sharding"]
