"""The process grid and the collective, point-to-point and async ops.

Spec sections: "Parallel execution", "Point-to-point communication", "Collective
ops" (process-group strategies ``cross_replica``, ``cross_partition``,
``cross_replica_and_partition``, ``flattened_ids``), and the op sections
``all_gather``, ``all_reduce``, ``all_to_all``, ``reduce_scatter``,
``collective_permute``, ``collective_broadcast``, ``collective_reduce``, ``send``,
``recv``, ``replica_id``, ``partition_id``, ``async_start``, ``async_done``, and
``cross-replica-sum`` (Deprecated Operations).

``interpreter.run_parallel`` builds a :class:`ProcessGrid` from its ``programs``
attribute (one row per replica, one column per partition) and runs each process on
its own Python thread; collective ops meet at a rendezvous of the grid keyed by the
op kind, the channel id, the process group and how many times each process has
reached that key before.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from oxla.errors import InterpreterError
from oxla.interpreter.registry import TOKEN, interpreter_rule
from oxla.interpreter.rendezvous import ProcessId, Rendezvous
from oxla.interpreter.rules.regions import apply_region
from oxla.interpreter.rules.util import attr, dense_2d, result_dtype, result_type
from oxla.ir import attributes as A

#: Seconds a process waits at a rendezvous or a ``recv`` before reporting a deadlock.
RENDEZVOUS_TIMEOUT = 60.0


class ProcessGrid(Rendezvous):
    """A ``num_replicas`` x ``num_partitions`` grid of processes (spec "Parallel
    execution") with the shared state its processes communicate through
    (:class:`~oxla.interpreter.rendezvous.Rendezvous`).

    Attributes:
        num_replicas, num_partitions: the grid's size.
        infeed: names of functions whose single result is the next infeed value
            (``interpreter.run_parallel``'s ``infeed`` attribute), shared by all processes.
        outfeed: ``(process, values)`` written by ``outfeed`` ops, in order.
        standalone: a 1x1 grid attached to a context that runs outside any grid.
    """

    error_type = InterpreterError
    peer_failed_type = InterpreterError

    def __init__(self, num_replicas: int, num_partitions: int,
                 infeed: Sequence[str] = (), standalone: bool = False) -> None:
        super().__init__(num_replicas, num_partitions, RENDEZVOUS_TIMEOUT)
        self.infeed: deque[str] = deque(infeed)
        self.standalone = standalone
        self.outfeed: list[tuple[ProcessId, list]] = []


def grid_of(ctx) -> ProcessGrid:
    """The context's process grid; a 1x1 grid is attached when it runs outside one.

    (``Context.grid`` could default to this; the engine owner may fold it in.)
    """
    if ctx.grid is None:
        ctx.grid = ProcessGrid(1, 1, standalone=True)
    return ctx.grid


# ---------------------------------------------------------------------------
# Process groups (spec "Collective ops").


def _id_groups(op, name: str) -> list[list[int]]:
    """``replica_groups``-like attribute as lists of ids, ``-1`` padding dropped."""
    g = dense_2d(op, name)
    if g is None or g.size == 0:
        return []
    g = g.reshape(g.shape[0], -1) if g.ndim == 2 else g.reshape(1, -1)
    return [[int(i) for i in row if i >= 0] for row in g]


def cross_replica(grid: ProcessGrid, groups: list[list[int]]) -> list[list[ProcessId]]:
    groups = groups or [list(range(grid.num_replicas))]
    return [[(r, p) for r in g] for g in groups for p in range(grid.num_partitions)]


def cross_partition(grid: ProcessGrid, groups: list[list[int]]) -> list[list[ProcessId]]:
    groups = groups or [list(range(grid.num_partitions))]
    return [[(r, p) for p in g] for g in groups for r in range(grid.num_replicas)]


def cross_replica_and_partition(grid: ProcessGrid,
                                groups: list[list[int]]) -> list[list[ProcessId]]:
    groups = groups or [list(range(grid.num_replicas))]
    return [[(r, p) for p in range(grid.num_partitions) for r in g] for g in groups]


def flattened_ids(grid: ProcessGrid, groups: list[list[int]]) -> list[list[ProcessId]]:
    groups = groups or [list(range(grid.num_processes))]
    n = grid.num_partitions
    return [[(i // n, i % n) for i in g] for g in groups]


def channel_id(op) -> int:
    h = op.attr("channel_handle")
    if isinstance(h, A.StructAttr):
        return int(h.get("handle", 0))
    return int(attr(op, "channel_id", 0) or 0)


def _groups_reduce_like(ctx, op) -> list[list[ProcessId]]:
    """Strategy of ``all_gather``/``all_reduce``/``reduce_scatter``."""
    grid = grid_of(ctx)
    ids = _id_groups(op, "replica_groups")
    if channel_id(op) <= 0:
        return cross_replica(grid, ids)
    if op.attr("use_global_device_ids") is not None:
        return flattened_ids(grid, ids)
    return cross_replica_and_partition(grid, ids)


def _groups_replica_or_partition(ctx, op, name: str = "replica_groups"):
    """Strategy of ``all_to_all``/``collective_*``: by replica without a channel."""
    grid = grid_of(ctx)
    ids = _id_groups(op, name)
    return cross_replica(grid, ids) if channel_id(op) <= 0 else cross_partition(grid, ids)


def process_groups(grid: ProcessGrid, op) -> list[list[ProcessId]]:
    """The process groups of ``all_gather``/``all_reduce``/``reduce_scatter`` (by
    channel, ``replica_groups`` and ``use_global_device_ids``) or of ``all_to_all`` /
    ``collective_*`` (by channel) on ``grid`` (spec "Collective ops"); for a backend
    that maps the op to a collective library."""
    ctx = SimpleNamespace(grid=grid)
    if op.name in ("stablehlo.all_gather", "stablehlo.all_reduce", "stablehlo.reduce_scatter"):
        return _groups_reduce_like(ctx, op)
    return _groups_replica_or_partition(ctx, op)


def _my_group(ctx, op, groups: list[list[ProcessId]], required: bool = True):
    for g in groups:
        if ctx.process in g:
            return g
    if required:
        raise InterpreterError(
            f"process {ctx.process} is in no process group of '{op.name}'", op.loc)
    return None


# ---------------------------------------------------------------------------
# Reductions with a scalar region (applied to whole arrays by ``apply_region``).


def _to_region_type(region, x: np.ndarray) -> np.ndarray:
    """``to_destination_type`` of the spec: operands promoted to the region's type."""
    t = region.blocks[0].args[0].type
    et = t.element_type

    dt = et.dtype
    return x if x.dtype == dt else x.astype(dt)


def _reduce(ctx, region, values: list[np.ndarray]) -> np.ndarray:
    acc = _to_region_type(region, values[0])
    for v in values[1:]:
        acc = apply_region(ctx, region, [acc, _to_region_type(region, v)])[0]
    return acc


# ---------------------------------------------------------------------------
# interpreter.run_parallel


@interpreter_rule("interpreter.run_parallel")
def run_parallel(ctx, op, args):
    """Runs ``programs[r][p]`` as process ``(r, p)`` of a new grid, concurrently;
    operands are handed out to the processes in order and results gathered in order."""
    from oxla.interpreter.engine import Context

    programs = [[s.root for s in row] for row in op.attributes["programs"]]
    if not programs or not programs[0]:
        raise InterpreterError("'programs' of interpreter.run_parallel is empty", op.loc)
    infeed = [s.root for s in op.attributes["infeed"]] if "infeed" in op.attributes else []
    grid = ProcessGrid(len(programs), len(programs[0]), infeed)
    module = ctx.module
    jobs = []
    pos = 0
    for r, row in enumerate(programs):
        if len(row) != grid.num_partitions:
            raise InterpreterError("rows of 'programs' must have the same length", op.loc)
        for p, name in enumerate(row):
            f = module.lookup(name) if module is not None else None
            if f is None:
                raise InterpreterError(f"run_parallel: unknown function '@{name}'", op.loc)
            n = len(f.regions[0].blocks[0].args)
            child = Context(module=module, custom_calls=ctx.custom_calls, process=(r, p),
                            grid=grid, probes=ctx.probes, infeed=ctx.infeed,
                            outfeed=ctx.outfeed)
            jobs.append((child, name, list(args[pos:pos + n])))
            pos += n
    if pos != len(args):
        raise InterpreterError(f"run_parallel: {len(args)} operands for programs taking "
                               f"{pos}", op.loc)
    outs: list[Any] = [None] * len(jobs)
    errors: list[BaseException | None] = [None] * len(jobs)

    def work(i: int) -> None:
        child, name, fargs = jobs[i]
        try:
            outs[i] = child.call(name, fargs, op.loc)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            errors[i] = e
            grid.abort(e)

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for child, _, _ in jobs:
        ctx.failures.extend(child.failures)
    first = next((e for e in errors if e is not None
                  and not (isinstance(e, InterpreterError) and "another process" in str(e))),
                 next((e for e in errors if e is not None), None))
    if first is not None:
        raise first
    results = [v for o in outs for v in o]
    if len(results) != len(op.results):
        raise InterpreterError(f"run_parallel: programs return {len(results)} values for "
                               f"{len(op.results)} results", op.loc)
    from oxla.interpreter.rules.io import outfeed_log

    outfeed_log(ctx).extend(values for _, values in grid.outfeed)
    return results


# ---------------------------------------------------------------------------
# Process ids.


@interpreter_rule("stablehlo.replica_id")
def replica_id(ctx, op, args):
    return [np.array(ctx.process[0], dtype=result_dtype(op))]


@interpreter_rule("stablehlo.partition_id")
def partition_id(ctx, op, args):
    return [np.array(ctx.process[1], dtype=result_dtype(op))]


# ---------------------------------------------------------------------------
# Collectives.


@interpreter_rule("stablehlo.all_reduce")
def all_reduce(ctx, op, args):
    group = _my_group(ctx, op, _groups_reduce_like(ctx, op))
    got = grid_of(ctx).rendezvous("all_reduce", channel_id(op), group, ctx.process, args)
    region = op.regions[0]
    return [_reduce(ctx, region, [np.asarray(got[q][i]) for q in group]).astype(
        result_dtype(op, i), copy=False) for i in range(len(args))]


@interpreter_rule("stablehlo.cross-replica-sum")
def cross_replica_sum(ctx, op, args):
    grid = grid_of(ctx)
    group = _my_group(ctx, op, cross_replica(grid, _id_groups(op, "replica_groups")))
    got = grid.rendezvous("cross-replica-sum", 0, group, ctx.process, args[0])
    acc = np.asarray(got[group[0]])
    with np.errstate(all="ignore"):
        for q in group[1:]:
            acc = (acc + np.asarray(got[q])).astype(acc.dtype)
    return [acc]


@interpreter_rule("stablehlo.all_gather")
def all_gather(ctx, op, args):
    group = _my_group(ctx, op, _groups_reduce_like(ctx, op))
    got = grid_of(ctx).rendezvous("all_gather", channel_id(op), group, ctx.process, args)
    dim = attr(op, "all_gather_dim")
    return [np.concatenate([np.asarray(got[q][i]) for q in group], axis=dim)
            for i in range(len(args))]


@interpreter_rule("stablehlo.all_to_all")
def all_to_all(ctx, op, args):
    group = _my_group(ctx, op, _groups_replica_or_partition(ctx, op))
    got = grid_of(ctx).rendezvous("all_to_all", channel_id(op), group, ctx.process, args)
    split_dim = attr(op, "split_dimension")
    concat_dim = attr(op, "concat_dimension")
    count = attr(op, "split_count")
    me = group.index(ctx.process)
    return [np.concatenate([np.split(np.asarray(got[q][i]), count, axis=split_dim)[me]
                            for q in group], axis=concat_dim)
            for i in range(len(args))]


@interpreter_rule("stablehlo.reduce_scatter")
def reduce_scatter(ctx, op, args):
    group = _my_group(ctx, op, _groups_reduce_like(ctx, op))
    got = grid_of(ctx).rendezvous("reduce_scatter", channel_id(op), group, ctx.process, args)
    dim = attr(op, "scatter_dimension")
    me = group.index(ctx.process)
    region = op.regions[0]
    outs = []
    for i in range(len(args)):
        reduced = _reduce(ctx, region, [np.asarray(got[q][i]) for q in group])
        outs.append(np.split(reduced, len(group), axis=dim)[me].astype(
            result_dtype(op, i), copy=False))
    return outs


def _zeros(op, i: int = 0) -> np.ndarray:
    return np.zeros(result_type(op, i).shape, dtype=result_dtype(op, i))


@interpreter_rule("stablehlo.collective_permute")
def collective_permute(ctx, op, args):
    """Every process of a line of the grid that appears in ``source_target_pairs``
    meets the others of its line; a process that is no target gets zeros."""
    grid = grid_of(ctx)
    pairs = [(int(s), int(t)) for s, t in dense_2d(op, "source_target_pairs").reshape(-1, 2)]
    r, p = ctx.process
    if channel_id(op) <= 0:
        mine, to_proc = r, (lambda i: (i, p))
    else:
        mine, to_proc = p, (lambda i: (r, i))
    ids = sorted({i for pair in pairs for i in pair})
    if mine not in ids:
        return [_zeros(op)]
    group = [to_proc(i) for i in ids]
    got = grid.rendezvous("collective_permute", channel_id(op), group, ctx.process, args[0])
    for s, t in pairs:
        if t == mine:
            return [np.array(got[to_proc(s)], copy=True)]
    return [_zeros(op)]


def _dynamic_roots(op, args) -> tuple[list, list | None]:
    if not attr(op, "has_dynamic_root", False):
        return list(args), None
    return list(args[:-1]), [int(x) for x in np.asarray(args[-1]).reshape(-1)]


@interpreter_rule("stablehlo.collective_broadcast")
def collective_broadcast(ctx, op, args):
    data, roots = _dynamic_roots(op, args)
    group = _my_group(ctx, op, _groups_replica_or_partition(ctx, op), required=False)
    if group is None:
        return [_zeros(op, i) for i in range(len(data))]
    got = grid_of(ctx).rendezvous("collective_broadcast", channel_id(op), group,
                                  ctx.process, data)
    return [np.array(got[group[roots[i] if roots else 0]][i], copy=True)
            for i in range(len(data))]


@interpreter_rule("stablehlo.collective_reduce")
def collective_reduce(ctx, op, args):
    """The root of each group (its first process, or the dynamic root) gets the
    reduction; every other process gets zeros."""
    data, roots = _dynamic_roots(op, args)
    group = _my_group(ctx, op, _groups_replica_or_partition(ctx, op), required=False)
    if group is None:
        return [_zeros(op, i) for i in range(len(data))]
    got = grid_of(ctx).rendezvous("collective_reduce", channel_id(op), group, ctx.process, data)
    outs = []
    for i in range(len(data)):
        root = group[roots[i] if roots else 0]
        if ctx.process != root:
            outs.append(_zeros(op, i))
            continue
        red = _reduce(ctx, op.regions[0], [np.asarray(got[q][i]) for q in group])
        outs.append(red.astype(result_dtype(op, i), copy=False))
    return outs


# ---------------------------------------------------------------------------
# Point-to-point: send / recv.


def _p2p_peers(ctx, op, as_source: bool) -> list[ProcessId] | None:
    """Processes this one sends to (``as_source``) or receives from, per
    ``source_target_pairs``; ids count partitions when the grid has several, else
    replicas. None when the op has no pairs (or is a host transfer)."""
    pairs = dense_2d(op, "source_target_pairs")
    if pairs is None or pairs.size == 0 or attr(op, "is_host_transfer", False):
        return None
    grid = grid_of(ctx)
    r, p = ctx.process
    if grid.num_partitions > 1:
        mine, to_proc = p, (lambda i: (r, i))
    else:
        mine, to_proc = r, (lambda i: (i, p))
    pairs = pairs.reshape(-1, 2)
    if as_source:
        return [to_proc(int(t)) for s, t in pairs if int(s) == mine]
    return [to_proc(int(s)) for s, t in pairs if int(t) == mine]


@interpreter_rule("stablehlo.send")
def send(ctx, op, args):
    """Queues ``inputs`` on channel ``channel_id`` (per target with
    ``source_target_pairs``); a matching ``recv`` takes them in order."""
    values = [np.array(a, copy=True) if a is not TOKEN else a for a in args[:-1]]
    grid = grid_of(ctx)
    cid = channel_id(op)
    targets = _p2p_peers(ctx, op, as_source=True)
    if targets is None:
        grid.send(cid, values)
    else:
        for t in targets:
            grid.send((cid, ctx.process, t), values)
    return [TOKEN]


@interpreter_rule("stablehlo.recv")
def recv(ctx, op, args):
    grid = grid_of(ctx)
    cid = channel_id(op)
    sources = _p2p_peers(ctx, op, as_source=False)
    n = len(op.results) - 1
    if sources is None:
        values = grid.recv(cid)
    elif not sources:
        values = [_zeros(op, i) for i in range(n)]
    else:
        values = grid.recv((cid, sources[0], ctx.process))
    if len(values) != n:
        raise InterpreterError(f"recv on channel {cid} expects {n} values, the sender sent "
                               f"{len(values)}", op.loc)
    return [*values, TOKEN]


# ---------------------------------------------------------------------------
# Async ops: evaluated eagerly, the future holds the results.


@dataclass(frozen=True)
class Future:
    """The runtime value of ``!stablehlo.future<...>``: already computed results."""

    values: tuple = field(default_factory=tuple)


@interpreter_rule("stablehlo.async_start")
def async_start(ctx, op, args):
    block = op.regions[0].blocks[0]
    outs = ctx.run_region(op.regions[0], args if block.args else [])
    return [Future(tuple(outs))]


@interpreter_rule("stablehlo.async_done")
def async_done(ctx, op, args):
    fut = args[0]
    if not isinstance(fut, Future):
        raise InterpreterError("async_done expects the future of an async_start", op.loc)
    return list(fut.values)
