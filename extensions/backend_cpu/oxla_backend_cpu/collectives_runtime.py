"""The cpu backend's collective runtime: process grids, rendezvous, and the semantics of
the runtime ops (see :mod:`oxla_backend_cpu.collectives` for the calling convention).

:func:`run_parallel` runs a ``num_replicas x num_partitions`` grid of compiled programs,
each process on its own Python thread (the native code releases the GIL), like
XLA:CPU's in-process collectives. The generated code of a runtime op calls back into
:class:`Runtime` (one per executable) with numpy views of its buffers; the calling
thread says which process it is. Collectives meet at a rendezvous of the grid keyed by
op kind, channel id, process group and how often this process reached that key before
(spec "Collective ops"); ``send``/``recv`` go through FIFO channels. Reductions call the
op's native combiner.

An executable called outside a grid runs as process ``(0, 0)`` of its own 1x1 grid for
that call: collectives see one process, ``recv`` of what that call sent works, and
``recv`` of nothing raises. ``outfeed`` values go to the grid's ``outfeed`` hook, else to
:attr:`Runtime.outfeed_log`; ``infeed`` reads the grid's infeed (``run_parallel``'s
``infeed``, or :attr:`Runtime.infeed` outside a grid).

A failing op (a deadlock timeout, a process outside every group, an empty infeed) makes
its process skip the rest of its runtime ops (results zero) and wakes the others; the
executable call then raises the first error. The native code cannot be interrupted: a
process looping on the zeros of a failed collective is left running (``run_parallel``
gives the processes ``timeout`` seconds after a failure, then raises).
"""

from __future__ import annotations

import ctypes
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from oxla.errors import OxlaError, RuntimeInputError
from oxla.interpreter.rendezvous import ProcessId, Rendezvous, grid_jobs
from oxla.ir import types as T
from oxla_backend_cpu.collectives import CALLBACK, DESCRIPTOR, combiner_name

RENDEZVOUS_TIMEOUT = 60.0
"""Seconds a process waits at a rendezvous or a ``recv`` before reporting a deadlock."""

_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
_COMBINE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
_local = threading.local()  # .member: (grid, process) set by run_parallel; .call: _Call


class _PeerFailed(OxlaError):
    """A process gave up because another one failed (not the root cause)."""


class Grid(Rendezvous):
    """A ``num_replicas x num_partitions`` process grid and what its processes share
    (the rendezvous and channels of :class:`~oxla.interpreter.rendezvous.Rendezvous`).

    Attributes:
        num_replicas, num_partitions: the grid's size.
        infeed: ``fn() -> list of arrays`` giving the next ``infeed`` values, or None.
        outfeed: ``fn(process, values)`` receiving ``outfeed`` values, or None (then
            they are appended to ``outfeed_log`` as ``(process, values)``).
        timeout: seconds before a rendezvous or ``recv`` reports a deadlock.
    """

    error_type = OxlaError
    peer_failed_type = _PeerFailed

    def __init__(self, num_replicas: int, num_partitions: int,
                 infeed: Callable[[], Sequence] | None = None,
                 outfeed: Callable[[ProcessId, list], None] | None = None,
                 timeout: float = RENDEZVOUS_TIMEOUT):
        super().__init__(num_replicas, num_partitions, timeout)
        self.infeed = infeed
        self.outfeed = outfeed
        self.outfeed_log: list[tuple[ProcessId, list[np.ndarray]]] = []


class _Call:
    """One executable call on one thread: its process, its grid, its first error."""

    def __init__(self, grid: Grid, process: ProcessId):
        self.grid = grid
        self.process = process
        self.error: BaseException | None = None


# ---------------------------------------------------------------------------
# Op descriptors and process groups (spec "Collective ops").


def _dtype(t: T.Type) -> np.dtype:
    et = t.element_type
    return np.dtype(et.dtype)


def _spec(type_text: str) -> tuple[tuple[int, ...], np.dtype]:
    from oxla.ir import parse_type

    t = parse_type(type_text)
    return tuple(t.shape), _dtype(t)


class Desc:
    """What the runtime needs of one runtime op (from the JSON that
    :func:`~oxla_backend_cpu.collectives.describe` stored in the code): its kind,
    attributes, tensor shapes and dtypes, and (reducing ops) its native combiner."""

    def __init__(self, info: dict, index: int, jit: Any):
        self.index = index
        self.kind = info["kind"]
        self.loc = info["loc"]
        self.ins = [_spec(t) for t in info["ins"]]
        self.outs = [_spec(t) for t in info["outs"]]
        self.channel = int(info["channel"])
        self.global_ids = bool(info["global_ids"])
        self.groups = [list(g) for g in info["groups"]]
        self.pairs = [tuple(p) for p in info["pairs"]]
        self.host_transfer = bool(info["host_transfer"])
        self.dynamic_root = bool(info["dynamic_root"])
        self.attrs = dict(info["attrs"])
        self.combine = None
        self.region_dtype = None
        if info.get("region"):
            addr = jit.address(combiner_name(index))
            if not addr:
                raise OxlaError(f"the code has no combiner for runtime op {index}")
            self.combine = _COMBINE(addr)
            self.region_dtype = _spec(info["region"])[1]

    def error(self, msg: str) -> OxlaError:
        return OxlaError(f"'stablehlo.{self.kind}' at {self.loc}: {msg}")


def _groups(d: Desc, grid: Grid, reduce_like: bool) -> list[list[ProcessId]]:
    """Process groups of ``d`` (spec: ``cross_replica``, ``cross_partition``,
    ``cross_replica_and_partition``, ``flattened_ids``)."""
    nr, npart = grid.num_replicas, grid.num_partitions
    ids = d.groups
    _check_ids(d, grid, [i for g in ids for i in g], "replica_groups", reduce_like)
    if d.channel <= 0:
        mode = "cross_replica"
    elif not reduce_like:
        mode = "cross_partition"
    else:
        mode = "flattened_ids" if d.global_ids else "cross_replica_and_partition"
    if mode == "cross_replica":
        return [[(r, p) for r in g] for g in ids or [list(range(nr))] for p in range(npart)]
    if mode == "cross_partition":
        return [[(r, p) for p in g] for g in ids or [list(range(npart))] for r in range(nr)]
    if mode == "cross_replica_and_partition":
        return [[(r, p) for p in range(npart) for r in g] for g in ids or [list(range(nr))]]
    return [[(i // npart, i % npart) for i in g] for g in ids or [list(range(nr * npart))]]


def _check_ids(d: Desc, grid: Grid, ids: list[int], what: str, reduce_like: bool) -> None:
    """Raises when ``ids`` name a process outside the grid (else: a deadlock)."""
    if d.channel <= 0:
        n, unit = grid.num_replicas, "replicas"
    elif not reduce_like:
        n, unit = grid.num_partitions, "partitions"
    elif d.global_ids:
        n, unit = grid.num_processes, "processes"
    else:
        n, unit = grid.num_replicas, "replicas"
    bad = sorted({i for i in ids if i >= n})
    if bad:
        raise d.error(f"{what} name {unit} {bad}, but the grid has {n} {unit} "
                      f"({grid.num_replicas}x{grid.num_partitions})")


def _my_group(d: Desc, call: _Call, reduce_like: bool, required: bool = True):
    for g in _groups(d, call.grid, reduce_like):
        if call.process in g:
            return g
    if required:
        raise d.error(f"process {call.process} is in no process group")
    return None


def _reduce(d: Desc, values: list[np.ndarray]) -> np.ndarray:
    """Folds ``values`` in group order with the native combiner."""
    dt = d.region_dtype
    acc = np.array(values[0], dtype=dt, order="C", copy=True)
    for v in values[1:]:
        x = np.ascontiguousarray(v, dtype=dt)
        if acc.size:
            d.combine(acc.ctypes.data, x.ctypes.data, acc.size)
    return acc


# ---------------------------------------------------------------------------
# The runtime ops: (desc, call, inputs) -> outputs.


def _all_reduce(d: Desc, call: _Call, xs: list) -> list:
    group = _my_group(d, call, True)
    got = call.grid.rendezvous(d.kind, d.channel, group, call.process, xs)
    return [_reduce(d, [got[q][i] for q in group]) for i in range(len(xs))]


def _cross_replica_sum(d: Desc, call: _Call, xs: list) -> list:
    group = _my_group(d, call, True)
    got = call.grid.rendezvous(d.kind, 0, group, call.process, xs)
    acc = np.array(got[group[0]][0], copy=True)
    with np.errstate(all="ignore"):
        for q in group[1:]:
            acc = (acc + got[q][0]).astype(acc.dtype)
    return [acc]


def _all_gather(d: Desc, call: _Call, xs: list) -> list:
    group = _my_group(d, call, True)
    got = call.grid.rendezvous(d.kind, d.channel, group, call.process, xs)
    dim = int(d.attrs["all_gather_dim"])
    return [np.concatenate([got[q][i] for q in group], axis=dim) for i in range(len(xs))]


def _all_to_all(d: Desc, call: _Call, xs: list) -> list:
    group = _my_group(d, call, False)
    got = call.grid.rendezvous(d.kind, d.channel, group, call.process, xs)
    split, concat = int(d.attrs["split_dimension"]), int(d.attrs["concat_dimension"])
    count = int(d.attrs["split_count"])
    me = group.index(call.process)
    return [np.concatenate([np.split(got[q][i], count, axis=split)[me] for q in group],
                           axis=concat) for i in range(len(xs))]


def _reduce_scatter(d: Desc, call: _Call, xs: list) -> list:
    group = _my_group(d, call, True)
    got = call.grid.rendezvous(d.kind, d.channel, group, call.process, xs)
    dim = int(d.attrs["scatter_dimension"])
    me = group.index(call.process)
    return [np.split(_reduce(d, [got[q][i] for q in group]), len(group), axis=dim)[me]
            for i in range(len(xs))]


def _line(d: Desc, call: _Call, by_partition: bool):
    """(this process's id, id -> process) along its line of the grid."""
    r, p = call.process
    if by_partition:
        return p, (lambda i: (r, i))
    return r, (lambda i: (i, p))


def _collective_permute(d: Desc, call: _Call, xs: list) -> list:
    """Processes of this line named in ``source_target_pairs`` meet; a process that is
    no target gets zeros."""
    mine, to_proc = _line(d, call, d.channel > 0)
    ids = sorted({i for pair in d.pairs for i in pair})
    _check_ids(d, call.grid, ids, "source_target_pairs", False)
    if mine not in ids:
        return [None]
    group = [to_proc(i) for i in ids]
    got = call.grid.rendezvous(d.kind, d.channel, group, call.process, xs[0])
    for s, t in d.pairs:
        if t == mine:
            return [got[to_proc(s)]]
    return [None]


def _roots(d: Desc, xs: list) -> tuple[list, list | None]:
    if not d.dynamic_root:
        return xs, None
    return xs[:-1], [int(x) for x in np.asarray(xs[-1]).reshape(-1)]


def _collective_broadcast(d: Desc, call: _Call, xs: list) -> list:
    data, roots = _roots(d, xs)
    group = _my_group(d, call, False, required=False)
    if group is None:
        return [None] * len(data)
    got = call.grid.rendezvous(d.kind, d.channel, group, call.process, data)
    return [got[group[roots[i] if roots else 0]][i] for i in range(len(data))]


def _collective_reduce(d: Desc, call: _Call, xs: list) -> list:
    """The root of each group (its first process, or the dynamic root) gets the
    reduction; every other process gets zeros."""
    data, roots = _roots(d, xs)
    group = _my_group(d, call, False, required=False)
    if group is None:
        return [None] * len(data)
    got = call.grid.rendezvous(d.kind, d.channel, group, call.process, data)
    return [_reduce(d, [got[q][i] for q in group])
            if call.process == group[roots[i] if roots else 0] else None
            for i in range(len(data))]


def _replica_id(d: Desc, call: _Call, xs: list) -> list:
    return [np.array(call.process[0])]


def _partition_id(d: Desc, call: _Call, xs: list) -> list:
    return [np.array(call.process[1])]


def _peers(d: Desc, call: _Call, as_source: bool) -> list[ProcessId] | None:
    """Targets (``as_source``) or sources of this process per ``source_target_pairs``
    (ids count partitions when the grid has several, else replicas); None for a host
    transfer or an op without pairs (one FIFO per channel)."""
    if not d.pairs or d.host_transfer:
        return None
    mine, to_proc = _line(d, call, call.grid.num_partitions > 1)
    if as_source:
        return [to_proc(t) for s, t in d.pairs if s == mine]
    return [to_proc(s) for s, t in d.pairs if t == mine]


def _send(d: Desc, call: _Call, xs: list) -> list:
    values = [np.array(x, copy=True) for x in xs]
    targets = _peers(d, call, True)
    if targets is None:
        call.grid.send(d.channel, values)
    for t in targets or ():
        call.grid.send((d.channel, call.process, t), values)
    return []


def _recv(d: Desc, call: _Call, xs: list) -> list:
    sources = _peers(d, call, False)
    if sources is None:
        values = call.grid.recv(d.channel)
    elif not sources:
        return [None] * len(d.outs)
    else:
        values = call.grid.recv((d.channel, sources[0], call.process))
    if len(values) != len(d.outs):
        raise d.error(f"expects {len(d.outs)} values on channel {d.channel}, the sender "
                      f"sent {len(values)}")
    return values


def _infeed(d: Desc, call: _Call, xs: list) -> list:
    feed = call.grid.infeed
    if feed is None:
        raise d.error("no infeed to read from (pass infeed= to run_parallel, or set "
                      "the executable's runtime.infeed outside a grid)")
    with call.grid._cond:
        values = [np.asarray(v) for v in feed()]
    if len(values) != len(d.outs) or any(v.shape != s for v, (s, _) in zip(values, d.outs)):
        raise RuntimeInputError(
            f"'stablehlo.infeed' at {d.loc}: expected shapes {[s for s, _ in d.outs]}, the "
            f"infeed gave {[v.shape for v in values]}")
    return values


def _outfeed(d: Desc, call: _Call, xs: list) -> list:
    values = [np.array(x, copy=True) for x in xs]
    grid = call.grid
    if grid.outfeed is not None:
        grid.outfeed(call.process, values)
    else:
        with grid._cond:
            grid.outfeed_log.append((call.process, values))
    return []


OPS: dict[str, Callable[[Desc, _Call, list], list]] = {
    "all_reduce": _all_reduce, "cross-replica-sum": _cross_replica_sum,
    "all_gather": _all_gather, "all_to_all": _all_to_all,
    "reduce_scatter": _reduce_scatter, "collective_permute": _collective_permute,
    "collective_broadcast": _collective_broadcast, "collective_reduce": _collective_reduce,
    "replica_id": _replica_id, "partition_id": _partition_id, "send": _send, "recv": _recv,
    "infeed": _infeed, "outfeed": _outfeed,
}
"""Semantics of each runtime op; ``None`` in the outputs means zeros."""


# ---------------------------------------------------------------------------
# The per-executable runtime.


def _view(address: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if n == 0 or not address:
        return np.zeros(shape, dtype)
    raw = (ctypes.c_uint8 * n).from_address(address)
    return np.frombuffer(raw, np.uint8).view(dtype).reshape(shape)


class Runtime:
    """The runtime ops of one executable: their descriptors and the callback the
    generated code calls (installed by :func:`install`).

    Attributes:
        descs: :class:`Desc` of the runtime ops run so far, by ``op_index``.
        infeed: ``fn() -> list of arrays`` for ``infeed`` in calls outside a grid.
        outfeed_log: ``outfeed`` values of calls outside a grid, one list per op run.
    """

    def __init__(self, jit: Any, entry: Callable):
        self.descs: dict[int, Desc] = {}
        self._jit = jit
        self._lock = threading.Lock()
        self.infeed: Callable[[], Sequence] | None = None
        self.outfeed_log: list[list[np.ndarray]] = []
        self._entry = entry
        self._callback = _CALLBACK(self._on_op)  # kept alive with the executable
        self.native: Any = None
        """What a caller that repointed :attr:`callback_slot` keeps alive with this
        runtime (the native code it points to; ``oxla_backend_cpu.mpi_native``)."""
        self.callback_slot = 0
        """The address of the code's :data:`CALLBACK` pointer (set by :func:`install`): a
        caller may point it at native code that handles some runtime ops itself and
        calls the previous value for the others (:mod:`oxla_backend_cpu.mpi_native`)."""

    def describe(self, index: int) -> Desc | None:
        """Runtime op ``index``'s descriptor, or None when the code has no such op."""
        if index in self.descs:
            return self.descs[index]
        if not self._jit.global_address(f"{DESCRIPTOR}{index}"):
            return None
        return self._describe(index)

    def _on_op(self, index: int, ins: int, outs: int) -> None:
        call: _Call | None = getattr(_local, "call", None)
        views: list[np.ndarray] = []
        try:
            d = self.descs.get(index) or self._describe(index)
            out_ptrs = ctypes.cast(outs, ctypes.POINTER(ctypes.c_void_p))
            views = [_view(out_ptrs[i], s, dt) for i, (s, dt) in enumerate(d.outs)]
            if call is None:
                raise d.error("runtime op called outside an executable call")
            if call.error is not None:
                raise call.error
            in_ptrs = ctypes.cast(ins, ctypes.POINTER(ctypes.c_void_p))
            # copies: other processes read them after this one moved on (and its
            # buffers may be overwritten in place)
            xs = [_view(in_ptrs[i], s, dt).copy() for i, (s, dt) in enumerate(d.ins)]
            results = OPS[d.kind](d, call, xs)
            for v, r in zip(views, results):
                if r is None:
                    v[...] = 0
                else:
                    v[...] = np.asarray(r).astype(v.dtype, copy=False).reshape(v.shape)
        except BaseException as e:  # noqa: BLE001 - raised by the executable call
            for v in views:
                v[...] = 0
            if call is not None and call.error is None:
                call.error = e
                call.grid.abort(e)

    def _describe(self, index: int) -> Desc:
        """Reads runtime op ``index``'s descriptor from the code (first use only)."""
        with self._lock:
            if index not in self.descs:
                address = self._jit.global_address(f"{DESCRIPTOR}{index}")
                if not address:
                    raise OxlaError(f"the code has no descriptor for runtime op {index}")
                info = json.loads(ctypes.string_at(address).decode())
                self.descs[index] = Desc(info, index, self._jit)
            return self.descs[index]

    def run(self, ins: Any, outs: Any, arena: Any) -> None:
        """Runs the entry as the process ``run_parallel`` assigned to this thread, else
        as a 1x1 grid of its own; raises the first error of a runtime op."""
        member = getattr(_local, "member", None)
        if member is None:
            grid, process = Grid(1, 1, infeed=self.infeed, outfeed=self._log), (0, 0)
        else:
            grid, process = member
        outer = getattr(_local, "call", None)
        call = _local.call = _Call(grid, process)
        try:
            self._entry(ins, outs, arena)
        finally:
            _local.call = outer
        if call.error is not None:
            raise call.error

    def _log(self, process: ProcessId, values: list) -> None:
        self.outfeed_log.append(values)


def install(exe: Any, jit: Any) -> None:
    """Connects ``exe``'s generated code to a :class:`Runtime` when it has runtime ops
    (its code defines :data:`CALLBACK`); sets ``exe.runtime`` (None otherwise)."""
    address = jit.global_address(CALLBACK) if hasattr(jit, "global_address") else 0
    if not address:
        exe.runtime = None
        return
    rt = Runtime(jit, exe._entry)
    rt.callback_slot = address
    ctypes.c_void_p.from_address(address).value = ctypes.cast(rt._callback,
                                                              ctypes.c_void_p).value
    exe.runtime = rt
    exe._entry = rt.run


def call_as_process(exe: Any, grid: Any, process: tuple[int, int], args: list) -> Any:
    """Calls ``exe(*args)`` on this thread as ``process`` (replica, partition) of ``grid``,
    whose collectives then exchange with the grid's other members (an in-process grid,
    or one rank of an MPI grid: any object with the grid interface ``run_parallel``'s
    threads use).

    Returns:
        What ``exe`` returns.
    """
    _local.member = (grid, process)
    try:
        return exe(*args)
    finally:
        _local.member = None


def run_parallel(programs: Sequence[Sequence[Any]], args: Sequence[Any],
                 infeed: Callable[[], Sequence] | Sequence[Sequence] | None = None,
                 outfeed: Callable[[ProcessId, list], None] | None = None,
                 timeout: float = RENDEZVOUS_TIMEOUT) -> tuple[list, list]:
    """Runs ``programs[r][p]`` as process ``(r, p)`` of a new grid, one thread each
    (spec "Parallel execution"; the interpreter's ``interpreter.run_parallel``).

    Args:
        programs: executables, one row per replica, one column per partition.
        args: every process's arguments, concatenated in row-major process order.
        infeed: ``fn() -> list of arrays`` or a sequence of value lists, read in order
            by the grid's ``infeed`` ops.
        outfeed: ``fn(process, values)`` for ``outfeed`` values; default: collected.
        timeout: seconds before a rendezvous or ``recv`` reports a deadlock.

    Returns:
        (every process's results concatenated in the same order, the outfeed log as
        ``(process, values)`` in execution order).

    Raises:
        RuntimeInputError: ragged ``programs`` or the wrong number of arguments.
        OxlaError: the first error of a process (a deadlock, a bad process group...).
    """
    jobs = grid_jobs(programs, args)
    if infeed is not None and not callable(infeed):
        queue = deque(list(v) for v in infeed)

        def infeed() -> list:
            if not queue:
                raise OxlaError("infeed: the infeed queue is empty")
            return queue.popleft()

    grid = Grid(len(programs), len(programs[0]), infeed, outfeed, timeout)
    outs: list[Any] = [None] * len(jobs)
    errors: list[BaseException | None] = [None] * len(jobs)

    def work(i: int) -> None:
        process, exe, fargs = jobs[i]
        _local.member = (grid, process)
        try:
            outs[i] = exe(*fargs)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            errors[i] = e
            grid.abort(e)
        finally:
            _local.member = None

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(jobs))]
    for t in threads:
        t.start()
    deadline = None
    for t in threads:  # after a failure, the others get ``timeout`` seconds to stop
        while t.is_alive() and (deadline is None or time.monotonic() < deadline):
            t.join(0.05)
            if deadline is None and grid.failed is not None:
                deadline = time.monotonic() + timeout
    failed = [e for e in errors if e is not None]
    if not failed and grid.failed is not None:
        failed = [grid.failed]
    if failed:
        first = next((e for e in failed if not isinstance(e, _PeerFailed)), failed[0])
        stuck = sum(t.is_alive() for t in threads)
        if stuck:  # e.g. a loop whose condition reads the zeros of a failed collective
            raise OxlaError(f"{first} ({stuck} process(es) did not stop and were left "
                            "running)") from first
        raise first
    return [v for o in outs for v in o], list(grid.outfeed_log)
