"""Rules for ``gather``, ``dynamic_gather`` and ``scatter``.

Spec sections: ``gather``, ``dynamic_gather``, ``scatter``. Index arithmetic is
vectorized over every result (or update) element; a scatter's update computation is
applied in row-major order of the update index space, which is the schedule this
interpreter picks among the implementation-defined ones the spec allows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from oxla.errors import InterpreterError
from oxla.interpreter.registry import interpreter_rule
from oxla.interpreter.rules.regions import apply_region, is_scalar_elementwise
from oxla.interpreter.rules.util import attr

_I64_MAX = np.iinfo(np.int64).max


def _indices_i64(x: np.ndarray) -> np.ndarray:
    """Integer indices as int64 (huge unsigned values saturate, so they clamp right)."""
    x = np.asarray(x)
    if x.dtype.kind == "u" and x.dtype.itemsize >= 8:
        x = np.minimum(x, np.uint64(_I64_MAX))
    return x.astype(np.int64)


def _index_rows(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """``indices`` with the index vector as its last axis (batch axes keep their order)."""
    idx = _indices_i64(indices)
    if index_vector_dim >= idx.ndim:
        return idx[..., None]
    return np.moveaxis(idx, index_vector_dim, -1)


def _batch_pos(d_start: int, index_vector_dim: int) -> int:
    """Position among the batch axes of ``indices`` axis ``d_start`` (spec:
    ``d_start - (d_start < index_vector_dim ? 0 : 1)``)."""
    return d_start - (0 if d_start < index_vector_dim else 1)


def gather_array(operand: np.ndarray, start_indices: np.ndarray, dims,
                 slice_sizes: Sequence[int]) -> np.ndarray:
    """Spec ``gather`` with ``dims`` the ``#stablehlo.gather`` dimension numbers."""
    operand = np.asarray(operand)
    offset_dims = [int(d) for d in dims.get("offset_dims", ())]
    collapsed = [int(d) for d in dims.get("collapsed_slice_dims", ())]
    op_batching = [int(d) for d in dims.get("operand_batching_dims", ())]
    idx_batching = [int(d) for d in dims.get("start_indices_batching_dims", ())]
    start_index_map = [int(d) for d in dims.get("start_index_map", ())]
    ivd = int(dims.get("index_vector_dim", 0))
    sizes = [int(s) for s in slice_sizes]
    rank = operand.ndim

    rows = _index_rows(start_indices, ivd)  # batch_shape + (K,)
    batch_shape = rows.shape[:-1]
    nb = int(np.prod(batch_shape, dtype=np.int64))
    rows = rows.reshape(nb, rows.shape[-1])
    offset_axes = [d for d in range(rank) if d not in collapsed and d not in op_batching]
    offset_shape = tuple(sizes[d] for d in offset_axes)
    no = int(np.prod(offset_shape, dtype=np.int64))

    # full_start_index + full_batching_index, one row per batch element.
    base = np.zeros((nb, rank), dtype=np.int64)
    for k, d in enumerate(start_index_map):
        base[:, d] = np.clip(rows[:, k], 0, operand.shape[d] - sizes[d])
    if op_batching:
        batch_coords = np.indices(batch_shape).reshape(len(batch_shape), nb)
        for d_op, d_start in zip(op_batching, idx_batching):
            base[:, d_op] += batch_coords[_batch_pos(d_start, ivd)]
    # full_offset_index, one row per offset element.
    offset = np.zeros((no, rank), dtype=np.int64)
    if offset_axes:
        coords = np.indices(offset_shape).reshape(len(offset_axes), no)
        for j, d in enumerate(offset_axes):
            offset[:, d] = coords[j]
    full = base[:, None, :] + offset[None, :, :]
    values = operand[tuple(full[..., d] for d in range(rank))] if rank else \
        np.broadcast_to(operand, (nb, no))
    values = values.reshape(batch_shape + offset_shape)

    result_rank = len(batch_shape) + len(offset_shape)
    result_batch = [a for a in range(result_rank) if a not in offset_dims]
    perm = [0] * result_rank
    for i, a in enumerate(result_batch):
        perm[a] = i
    for j, a in enumerate(offset_dims):
        perm[a] = len(batch_shape) + j
    return np.array(np.transpose(values, perm))


@interpreter_rule("stablehlo.gather")
def gather(ctx, op, args):
    dims = op.attributes["dimension_numbers"]
    return [gather_array(args[0], args[1], dims, attr(op, "slice_sizes", ()))]


@interpreter_rule("stablehlo.dynamic_gather")
def dynamic_gather(ctx, op, args):
    """Spec ``dynamic_gather``: ``gather`` with ``slice_sizes`` given as an operand."""
    dims = op.attributes["dimension_numbers"]
    sizes = [int(s) for s in np.asarray(args[2]).reshape(-1)]
    return [gather_array(args[0], args[1], dims, sizes)]


def _scatter_targets(input_shape: Sequence[int], indices: np.ndarray,
                     update_shape: Sequence[int], dims) -> tuple[np.ndarray, np.ndarray]:
    """For each update element (row-major), its flat result index and whether it is in
    bounds (spec ``scatter``: ``result_index``)."""
    window_dims = [int(d) for d in dims.get("update_window_dims", ())]
    inserted = [int(d) for d in dims.get("inserted_window_dims", ())]
    in_batching = [int(d) for d in dims.get("input_batching_dims", ())]
    idx_batching = [int(d) for d in dims.get("scatter_indices_batching_dims", ())]
    to_operand = [int(d) for d in dims.get("scatter_dims_to_operand_dims", ())]
    ivd = int(dims.get("index_vector_dim", 0))
    rank = len(input_shape)
    ru = len(update_shape)
    n = int(np.prod(update_shape, dtype=np.int64))

    coords = np.indices(tuple(update_shape)).reshape(ru, n)
    scatter_dims = [d for d in range(ru) if d not in window_dims]
    rows = _index_rows(indices, ivd)
    sc = coords[scatter_dims]  # (len(batch), n)
    start = rows[tuple(sc)] if scatter_dims else np.broadcast_to(rows.reshape(-1), (n,
                                                                           rows.shape[-1]))
    full = np.zeros((rank, n), dtype=np.int64)
    for k, d in enumerate(to_operand):
        full[d] += start[:, k]
    for d_in, d_start in zip(in_batching, idx_batching):
        full[d_in] += sc[_batch_pos(d_start, ivd)]
    window_axes = [d for d in range(rank) if d not in inserted and d not in in_batching]
    for d_upd, d_in in zip(window_dims, window_axes):
        full[d_in] += coords[d_upd]
    shape = np.asarray(input_shape, dtype=np.int64).reshape(rank, 1)
    inside = np.all((full >= 0) & (full < shape), axis=0) if rank else np.ones(n, bool)
    flat = np.ravel_multi_index(tuple(np.where(inside, full, 0)), tuple(input_shape)) \
        if rank else np.zeros(n, dtype=np.int64)
    return flat, inside


def _occurrence(targets: np.ndarray) -> np.ndarray:
    """For each element, how many earlier elements have the same target."""
    order = np.argsort(targets, kind="stable")
    s = targets[order]
    starts = np.r_[0, np.flatnonzero(s[1:] != s[:-1]) + 1] if s.size else np.zeros(0, int)
    group_start = np.repeat(starts, np.diff(np.r_[starts, s.size]))
    rank = np.empty_like(order)
    rank[order] = np.arange(s.size) - group_start
    return rank


def scatter_arrays(ctx, region, inputs: Sequence[np.ndarray], indices: np.ndarray,
                   updates: Sequence[np.ndarray], dims) -> list[np.ndarray]:
    """Spec ``scatter`` over variadic ``inputs``/``updates`` with ``region`` as the
    update computation."""
    results = [np.array(x, copy=True) for x in inputs]
    if not results:
        return []
    shape = results[0].shape
    flat, inside = _scatter_targets(shape, indices, np.shape(updates[0]), dims)
    targets = flat[inside]
    block = region.blocks[0]
    n_in = len(results)
    upd_types = [a.type for a in block.args[n_in:]]
    upd = []
    for u, t in zip(updates, upd_types):
        u = np.asarray(u).reshape(-1)[inside]
        et = t.element_type
        dt = et.dtype
        upd.append(u if u.dtype == dt else u.astype(dt))
    flats = [r.reshape(-1) for r in results]
    if targets.size == 0:
        return results
    if is_scalar_elementwise(region):
        occ = _occurrence(targets)
        for k in range(int(occ.max()) + 1):
            sel = occ == k
            t = targets[sel]
            cur = [f[t] for f in flats]
            new = apply_region(ctx, region, cur + [u[sel] for u in upd], vectorize=True)
            for f, v in zip(flats, new):
                f[t] = v
        return results
    for i, t in enumerate(targets):
        outs = ctx.run_region(region, [np.asarray(f[t]) for f in flats] +
                              [np.asarray(u[i]) for u in upd])
        for f, v in zip(flats, outs):
            f[t] = v
    return results


@interpreter_rule("stablehlo.scatter")
def scatter(ctx, op, args):
    inputs = [args[i] for i in range(len(op.operand_group("inputs")))]
    n = len(inputs)
    indices = args[n]
    updates = args[n + 1:]
    if len(updates) != n:
        raise InterpreterError(f"scatter: {n} inputs but {len(updates)} updates", op.loc)
    dims = op.attributes["scatter_dimension_numbers"]
    return scatter_arrays(ctx, op.regions[0], inputs, indices, updates, dims)
