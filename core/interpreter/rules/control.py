"""Rules for control flow and region-applying ops: ``while``, ``if``, ``case``, ``map``,
``sort``.

Spec sections: ``while``, ``if``, ``case``, ``map``, ``sort``.
"""

from __future__ import annotations

import functools

import numpy as np

from oxla.errors import InterpreterError
from oxla.interpreter.registry import interpreter_rule
from oxla.interpreter.rules.regions import apply_region, is_scalar_elementwise
from oxla.interpreter.rules.util import attr

# Largest number of comparator results computed at once by the vectorized sort.
_SORT_CHUNK = 1 << 22


def _truth(v) -> bool:
    return bool(np.asarray(v).reshape(()))


@interpreter_rule("stablehlo.while")
def while_(ctx, op, args):
    cond, body = op.regions
    state = list(args)
    while _truth(ctx.run_region(cond, state)[0]):
        state = list(ctx.run_region(body, state))
    return state


@interpreter_rule("stablehlo.if")
def if_(ctx, op, args):
    region = op.regions[0] if _truth(args[0]) else op.regions[1]
    return list(ctx.run_region(region, []))


@interpreter_rule("stablehlo.case")
def case(ctx, op, args):
    """Spec ``case``: an index outside ``[0, size(branches))`` selects the last branch."""
    index = int(np.asarray(args[0]).reshape(()))
    branches = op.regions
    region = branches[index] if 0 <= index < len(branches) else branches[-1]
    return list(ctx.run_region(region, []))


@interpreter_rule("stablehlo.map")
def map_(ctx, op, args):
    dims = tuple(int(d) for d in attr(op, "dimensions", ()))
    rank = np.ndim(args[0]) if args else 0
    if dims != tuple(range(rank)):
        raise InterpreterError(f"map: dimensions must be [0, ..., {rank - 1}], got {list(dims)}",
                               op.loc)
    return apply_region(ctx, op.regions[0], args)[:1]


def _pairwise_args(cols: list[np.ndarray]) -> list[np.ndarray]:
    """Comparator arguments ``(lhs0, rhs0, lhs1, rhs1, ...)`` for every pair (i, j)
    of a chunk of rows: lhs broadcast along j, rhs along i."""
    out = []
    for c in cols:
        out.append(c[:, :, None])
        out.append(c[:, None, :])
    return out


def _sort_positions_vectorized(ctx, region, cols: list[np.ndarray]) -> np.ndarray:
    """Stable-sort destination of each element of each row, from the full comparison
    matrix; rows where the comparator is not a strict weak order get -1."""
    m, n = cols[0].shape
    less = apply_region(ctx, region, _pairwise_args(cols), vectorize=True)[0].astype(bool)
    before = less.sum(axis=1)  # number of j with less(j, i)
    equiv = ~less & ~np.swapaxes(less, 1, 2)
    earlier = np.tril(np.ones((n, n), dtype=bool), -1)  # [i, j]: j < i
    pos = before + (equiv & earlier[None]).sum(axis=2)
    ok = (np.sort(pos, axis=1) == np.arange(n)[None]).all(axis=1)
    pos[~ok] = -1
    return pos


def _sort_positions_serial(ctx, region, row: list[np.ndarray]) -> np.ndarray:
    n = row[0].shape[0]

    def cmp(i: int, j: int) -> int:
        args = []
        for c in row:
            args += [np.asarray(c[i]), np.asarray(c[j])]
        if _truth(ctx.run_region(region, args)[0]):
            return -1
        args = []
        for c in row:
            args += [np.asarray(c[j]), np.asarray(c[i])]
        return 1 if _truth(ctx.run_region(region, args)[0]) else 0

    order = sorted(range(n), key=functools.cmp_to_key(cmp))  # stable
    pos = np.empty(n, dtype=np.int64)
    pos[np.asarray(order, dtype=np.int64)] = np.arange(n)
    return pos


@interpreter_rule("stablehlo.sort")
def sort(ctx, op, args):
    """Spec ``sort``: slices along ``dimension`` sorted together by the comparator.

    The sort is always stable (also correct when ``is_stable`` is false).
    """
    inputs = [np.asarray(a) for a in args]
    rank = inputs[0].ndim
    dim = int(attr(op, "dimension", -1))
    if dim < 0:
        dim += rank
    region = op.regions[0]
    moved = [np.moveaxis(x, dim, -1) for x in inputs]
    batch_shape = moved[0].shape[:-1]
    n = moved[0].shape[-1] if rank else 1
    rows = [x.reshape(-1, n) for x in moved]
    m = rows[0].shape[0]
    pos = np.full((m, n), -1, dtype=np.int64)
    if n and m and is_scalar_elementwise(region) and n * n <= _SORT_CHUNK:
        step = max(1, _SORT_CHUNK // (n * n))
        for s in range(0, m, step):
            pos[s:s + step] = _sort_positions_vectorized(ctx, region,
                                                        [r[s:s + step] for r in rows])
    for i in range(m):
        if n and pos[i, 0] < 0:
            pos[i] = _sort_positions_serial(ctx, region, [r[i] for r in rows])
    outs = []
    for r in rows:
        out = np.empty_like(r)
        np.put_along_axis(out, pos, r, axis=1)
        outs.append(np.moveaxis(out.reshape(batch_shape + (n,)), -1, dim) if rank else
                    out.reshape(()))
    return [np.array(o) for o in outs]
