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
* scatter of batch-sharded updates into a table that is not sharded on their axes
  (a data-parallel gradient into an embedding table; the table may be sharded where
  the update window spans a dimension whole, the updates then alike): either the indices and updates
  are gathered and every device runs the whole scatter, or, when the update computation
  is a commutative, associative reduction (add, multiply, maximum, minimum, and, or),
  each device scatters its own updates into a table filled with that reduction's
  identity, one ``all_reduce`` with the same computation combines the devices' tables
  (updates of one row on several devices included), and the result is the table
  combined with it. The cheaper by the ring model of :mod:`oxla.sharding.cost` is
  taken: gathering receives the bytes a device lacks of the indices and updates, the
  all-reduce moves ``2 (n - 1) / n`` of the table. Floating-point sums are then
  associated differently from the sequential scatter (as in XLA).
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


_COMBINERS = {"stablehlo.add", "stablehlo.multiply", "stablehlo.maximum",
              "stablehlo.minimum", "stablehlo.and", "stablehlo.or"}


def combiner(op: Operation) -> str | None:
    """The op name of a scatter's update computation when it is one commutative,
    associative binary op of its two arguments (``return a OP b``), else None."""
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        return None
    blk = op.regions[0].blocks[0]
    ops = [o for o in blk.ops if o.name != "sdy.sharding_constraint"]
    if len(blk.args) != 2 or len(ops) != 2 or ops[0].name not in _COMBINERS:
        return None
    ret = ops[1]
    ret_v = ret.operands[0] if ret.name == "stablehlo.return" and len(ret.operands) == 1 \
        else None
    while ret_v is not None and getattr(ret_v, "owner", None) is not None and \
            getattr(ret_v.owner, "name", "") == "sdy.sharding_constraint":
        ret_v = ret_v.owner.operands[0]
    if ret_v is not ops[0].results[0] or set(ops[0].operands) != set(blk.args):
        return None
    return ops[0].name


def identity(name: str, et) -> np.ndarray | None:
    """The identity of reduction ``name`` for element type ``et`` (None: none here)."""
    dt = np.dtype(et.dtype)
    if dt == np.bool_:
        table = {"stablehlo.add": False, "stablehlo.or": False, "stablehlo.and": True,
                 "stablehlo.maximum": False, "stablehlo.minimum": True,
                 "stablehlo.multiply": True}
        return np.array(table[name], dtype=dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        table = {"stablehlo.add": 0, "stablehlo.multiply": 1, "stablehlo.or": 0,
                 "stablehlo.and": -1 if dt.kind == "i" else info.max,
                 "stablehlo.maximum": info.min, "stablehlo.minimum": info.max}
        return np.array(table[name], dtype=dt)
    if dt.kind == "f":
        table = {"stablehlo.add": 0.0, "stablehlo.multiply": 1.0,
                 "stablehlo.maximum": -np.inf, "stablehlo.minimum": np.inf}
        return np.array(table[name], dtype=dt) if name in table else None
    if dt.kind == "c" and name in ("stablehlo.add", "stablehlo.multiply"):
        return np.array(0 if name == "stablehlo.add" else 1, dtype=dt)
    return None


def batch_scatter_shardings(op: Operation, x_cur, i_cur, u_cur, mesh, mesh_name: str):
    """For a single-input scatter without batching dims whose indices or updates are
    sharded on their batch (scatter) dimensions: ``(axes, the table's sharding, the
    indices', the updates')`` with each batch dimension sharded alike in indices and
    updates (the index vector dimension whole), the table's sharding kept where its
    dimension is spanned whole by the update window and its axes are not batch axes
    (the updates' window dimension then sharded alike), else None (nothing sharded,
    not evenly, or a table sharded on an indexed dimension or on a batch axis)."""
    dn = op.attributes.get("scatter_dimension_numbers")
    get = getattr(dn, "get", None)
    if get is None or len(op.operands) != 3 or tuple(get("input_batching_dims", ()) or ()):
        return None
    ivd = int(get("index_vector_dim", 0) or 0)
    window = list(get("update_window_dims", ()) or ())
    inserted = set(get("inserted_window_dims", ()) or ())
    indexed = set(get("scatter_dims_to_operand_dims", ()) or ())
    xshape = op.operands[0].type.shape
    ishape, ushape = op.operands[1].type.shape, op.operands[2].type.shape
    batch = [k for k in range(len(ishape)) if k != ivd]
    scat = [k for k in range(len(ushape)) if k not in window]
    kept = [k for k in range(len(xshape)) if k not in inserted]
    if len(batch) != len(scat) or len(kept) != len(window):
        return None
    i_dims = [DimSharding(())] * len(ishape)
    u_dims = [DimSharding(())] * len(ushape)
    used: list = []
    for ki, ku in zip(batch, scat):
        ax = _axes(i_cur, ki) or _axes(u_cur, ku)
        if not ax or any(a in used for a in ax):
            continue
        k = int(np.prod([a.size(mesh) for a in ax]))
        if ishape[ki] % k:
            continue
        used += list(ax)
        i_dims[ki] = u_dims[ku] = DimSharding(tuple(ax))
    if not used:
        return None
    for d in range(len(xshape)):
        ax = _axes(x_cur, d)
        if not ax:
            continue
        if d in indexed or d in inserted or any(a in used for a in ax):
            return None
        w = window[kept.index(d)]
        if ushape[w] != xshape[d] or xshape[d] % int(np.prod([a.size(mesh) for a in ax])):
            return None
        u_dims[w] = DimSharding(ax)
    x_sh = TensorShardingAttr(mesh_name, tuple(DimSharding(_axes(x_cur, d))
                                                for d in range(len(xshape))))
    return (tuple(used), x_sh, TensorShardingAttr(mesh_name, tuple(i_dims)),
            TensorShardingAttr(mesh_name, tuple(u_dims)))


def combined_scatter(ops: DeviceOps, op: Operation, x: Value, idx: Value, upd: Value,
                     axes, name: str) -> Value:
    """Scatter ``op`` (update computation ``name``) of the local indices and updates
    into an identity-filled copy of the table, combined over ``axes`` by one
    ``all_reduce``, then with the local table ``x`` (not sharded on ``axes``)."""
    b = ops.b
    et = x.type.element_type
    fill = b.broadcast_in_dim(b.constant(identity(name, et), et), x.type.shape, ())
    new = Operation.create("stablehlo.scatter", [fill, idx, upd], [x.type],
                           {k: v for k, v in op.attributes.items() if k != M.KEY},
                           [r.clone() for r in op.regions], loc=op.loc)
    b.insert(new)
    total = ops.all_reduce(new.results[0], axes, op.regions[0].clone(), "scatter", op.name)
    out = Operation.create(name, [x, total], [x.type], loc=op.loc)
    b.insert(out)
    return out.results[0]


__all__ = ["sharded_index_dim", "masked_gather", "scatter_shardings", "masked_scatter",
           "combiner", "identity", "batch_scatter_shardings", "combined_scatter"]
