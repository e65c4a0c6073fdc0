"""Gathers from and scatters into an operand sharded along its indexed dimension
(XLA's partitioning of a gather/scatter whose operand is sliced on the indexed
dimension; a vocabulary-parallel embedding lookup and its gradient).

Each device holds rows ``[off, off + L)`` of the table.

* gather: each device clamps each index as the gather would (spec ``gather``: start
  indices are clamped to ``[0, size - 1]`` for a slice of 1), shifts it by ``-off``,
  gathers locally with the out-of-range ones sent to row 0, replaces those rows by
  zeros, and one ``all_reduce`` (sum) over the table's axes completes the lookup: every
  index is in range on exactly one device.
* scatter: scatter indices are not clamped (spec ``scatter``: an update whose result
  index is out of bounds is skipped), so each device keeps the indices in
  ``[off, off + L)``, shifted by ``-off``, and sends the others to ``L`` (out of bounds
  locally: skipped). Its local scatter then applies exactly the updates of its own rows,
  in the same order, with any update computation: the result stays sharded like the
  operand and needs no collective (the indices and updates are replicated over the
  table's axes; full-size window dimensions of the operand may be sharded too, with the
  updates' matching window dimensions).
"""

from __future__ import annotations

import numpy as np

from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.ir.operation import Operation, Value
from oxla.ir.sdy import DimSharding, TensorShardingAttr
from oxla.sharding import model as M
from oxla.sharding.collectives import DeviceOps, _axes


def sharded_index_dim(op: Operation, cur: TensorShardingAttr | None) -> int | None:
    """The operand dimension of gather ``op`` that is indexed, collapsed (slice 1) and
    sharded in ``cur`` while no other operand dimension is, or None."""
    dn = op.attributes.get("dimension_numbers")
    get = getattr(dn, "get", None)
    if get is None or cur is None or tuple(get("operand_batching_dims", ()) or ()):
        return None
    smap = tuple(get("start_index_map", ()) or ())
    collapsed = set(get("collapsed_slice_dims", ()) or ())
    sizes = A.to_python(op.attributes["slice_sizes"])
    sharded = [d for d in range(len(cur.dims)) if _axes(cur, d)]
    if len(smap) != 1 or sharded != [smap[0]]:
        return None
    d = smap[0]
    if d not in collapsed or int(sizes[d]) != 1:
        return None
    return d


def masked_gather(ops: DeviceOps, op: Operation, x: Value, x_sh: TensorShardingAttr,
                  idx: Value, idx_sh: TensorShardingAttr, d: int, mesh_name: str
                  ) -> tuple[Value, TensorShardingAttr]:
    """The local result of gather ``op`` on the local table ``x`` (sharded on ``d``
    only, as ``x_sh``) and local indices ``idx`` (batch dims as ``idx_sh``), and the
    result's sharding (the indices' batch dims; offset dims whole)."""
    b = ops.b
    dn = op.attributes["dimension_numbers"]
    ivd = int(dn.get("index_vector_dim", 0) or 0)
    offset = tuple(dn.get("offset_dims", ()) or ())
    axes = _axes(x_sh, d)
    size = op.operands[0].type.shape[d]
    local_rows = x.type.shape[d]
    it = idx.type.element_type
    dt = it.dtype

    def const(v: int) -> Value:
        return b.broadcast_in_dim(b.constant(np.array(v, dtype=dt), it), idx.type.shape, ())

    start = b.convert(b.multiply(ops.shard_number(axes), ops._const_i32(local_rows)), it)
    g = b.clamp(const(0), idx, const(size - 1))
    local = b.subtract(g, b.broadcast_in_dim(start, idx.type.shape, ()))
    valid = b.and_(b.compare("GE", local, const(0)),  # type: ignore[attr-defined]
                   b.compare("LT", local, const(local_rows)))
    local = b.select(valid, local, const(0))
    out_t = op.results[0].type
    batch_out = [k for k in range(len(out_t.shape)) if k not in offset]
    batch_in = [k for k in range(len(idx.type.shape)) if k != ivd]
    res_dims = [DimSharding(())] * len(out_t.shape)
    for ki, ko in zip(batch_in, batch_out):
        res_dims[ko] = DimSharding(_axes(idx_sh, ki))
    res_sh = TensorShardingAttr(mesh_name, tuple(res_dims))
    shape = M.local_shape(out_t.shape, res_sh, ops.mesh)
    new = Operation.create("stablehlo.gather", [x, local],
                           [T.TensorType(shape, out_t.element_type)],
                           {k: v for k, v in op.attributes.items() if k != M.KEY},
                           loc=op.loc)
    b.insert(new)
    bshape = [idx.type.shape[k] for k in batch_in]
    keep = b.reshape(valid, bshape)
    mask = b.broadcast_in_dim(keep, shape, batch_out)
    et = out_t.element_type
    zeros = b.broadcast_in_dim(b.constant(np.zeros((), et.dtype), et), shape, ())
    picked = b.select(mask, new.results[0], zeros)
    return ops.all_reduce(picked, axes, None, "reduction", op.name), res_sh


def _scatter_dims(op: Operation) -> tuple[int, set[int], list[int]] | None:
    """(the one indexed operand dimension, the inserted window dimensions, the updates'
    window dimensions) of a single-input scatter without batching dimensions, else
    None."""
    dn = op.attributes.get("scatter_dimension_numbers")
    get = getattr(dn, "get", None)
    if get is None or len(op.operands) != 3 or tuple(get("input_batching_dims", ()) or ()):
        return None
    smap = tuple(get("scatter_dims_to_operand_dims", ()) or ())
    inserted = set(get("inserted_window_dims", ()) or ())
    if len(smap) != 1 or smap[0] not in inserted:
        return None
    return smap[0], inserted, list(get("update_window_dims", ()) or ())


def scatter_shardings(op: Operation, cur: TensorShardingAttr | None, mesh_name: str
                      ) -> tuple[int, TensorShardingAttr, TensorShardingAttr] | None:
    """For scatter ``op`` whose operand is sharded as ``cur`` on its indexed, inserted
    dimension ``d``: ``(d, the indices' sharding, the updates' sharding)``, else None.

    Other operand dimensions may be sharded only where the update window spans them
    whole (their updates' window dimension is then sharded alike); the indices and the
    updates' scatter dimensions are replicated.
    """
    dims = _scatter_dims(op)
    if dims is None or cur is None:
        return None
    d, inserted, window = dims
    if not _axes(cur, d):
        return None
    x_shape = op.operands[0].type.shape
    upd = op.operands[2].type
    kept = [k for k in range(len(x_shape)) if k not in inserted]
    upd_dims = [DimSharding(())] * len(upd.shape)
    for k in range(len(x_shape)):
        if k == d or not _axes(cur, k):
            continue
        if k in inserted or upd.shape[window[kept.index(k)]] != x_shape[k]:
            return None
        upd_dims[window[kept.index(k)]] = DimSharding(_axes(cur, k))
    i_rank = len(op.operands[1].type.shape)
    return (d, TensorShardingAttr(mesh_name, (DimSharding(()),) * i_rank),
            TensorShardingAttr(mesh_name, tuple(upd_dims)))


def masked_scatter(ops: DeviceOps, op: Operation, x: Value, x_sh: TensorShardingAttr,
                   idx: Value, upd: Value, d: int) -> Value | None:
    """The local result of scatter ``op`` into the local operand ``x`` (sharded as
    ``x_sh``, on ``d`` among others) of the whole indices ``idx`` and the local updates
    ``upd``; None when ``L`` does not fit the index type."""
    b = ops.b
    local_rows = x.type.shape[d]
    it = idx.type.element_type
    dt = np.dtype(it.dtype)
    if np.array(local_rows).astype(dt) != local_rows:
        return None

    def const(v) -> Value:
        return b.broadcast_in_dim(b.constant(np.array(v, dtype=dt), it), idx.type.shape, ())

    start = b.broadcast_in_dim(b.convert(b.multiply(ops.shard_number(_axes(x_sh, d)),
                                                    ops._const_i32(local_rows)), it),
                               idx.type.shape, ())
    shifted = b.subtract(idx, start)  # (wraps only where idx < start: masked off)
    mine = b.and_(b.compare("GE", idx, start),  # type: ignore[attr-defined]
                  b.compare("LT", shifted, const(local_rows)))
    local = b.select(mine, shifted, const(local_rows))
    new = Operation.create("stablehlo.scatter", [x, local, upd], [x.type],
                           {k: v for k, v in op.attributes.items() if k != M.KEY},
                           [r.clone() for r in op.regions], loc=op.loc)
    b.insert(new)
    return new.results[0]


__all__ = ["sharded_index_dim", "masked_gather", "scatter_shardings", "masked_scatter"]
