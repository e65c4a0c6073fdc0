"""Collectives, point-to-point, streaming and probe ops of a GPU program on one device:
host-staged steps over an in-process thread grid.

One process per GPU under MPI is :mod:`oxla_codegen_llvm.gpu.nccl`'s (the forms NCCL
lacks stay host steps there, over ``oxla.sharding.mpi.MpiGrid``). Here, as
the interpreter and the cpu backend do for one process, a ``num_replicas x
num_partitions`` grid runs as threads, each calling its executable
(:func:`run_parallel`), all on one device. Each op of :data:`HOST_STEP_OPS` is a
``host`` step of the launch program (:mod:`oxla_codegen_llvm.gpu.program`): the
executable synchronizes its stream, copies the op's tensor operands to the host, and
hands them to :class:`HostCall`, which runs the op's semantics as the reference
interpreter defines them (:mod:`oxla.interpreter.rules.collectives`, ``io``,
``checks``): the rendezvous of the grid keyed by op kind, channel and process group
(spec "Collective ops"), FIFO channels for ``send``/``recv``, the grid's infeed and
outfeed, a reduction's body applied to the gathered values; the results are copied back
to the device. Host staging costs a device round trip per op: it is the one-GPU
semantics, not a fast path.

An executable called outside a grid is process ``(0, 0)`` of its own 1x1 grid for that
call (a ``recv`` of what the call sent works). ``interpreter.probe`` records a copy of
its operand (``exe.probes`` after a call, per thread) and returns it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from oxla.errors import OxlaError
from oxla.interpreter import Context
from oxla.interpreter.registry import TOKEN
from oxla.interpreter.rendezvous import grid_jobs
from oxla.interpreter.rules.collectives import ProcessGrid
from oxla.interpreter.rules.io import outfeed_log
from oxla.ir import Operation

HOST_STEP_OPS = frozenset({
    "stablehlo.all_gather", "stablehlo.all_reduce", "stablehlo.all_to_all",
    "stablehlo.reduce_scatter", "stablehlo.collective_permute",
    "stablehlo.collective_broadcast", "stablehlo.collective_reduce",
    "stablehlo.cross-replica-sum", "stablehlo.replica_id", "stablehlo.partition_id",
    "stablehlo.send", "stablehlo.recv", "stablehlo.infeed", "stablehlo.outfeed",
    "interpreter.probe",
})
"""Ops a GPU program runs as host steps (module doc)."""

_local = threading.local()  # .member: (grid, process, infeed) set by run_parallel


class HostCall:
    """The host side of one executable call: its process, its grid, its probe records.

    Attributes:
        probes: ``probe_id -> [array, ...]`` recorded during the call, in order.
    """

    def __init__(self):
        member = getattr(_local, "member", None)
        if member is None:
            grid, process, infeed = ProcessGrid(1, 1, standalone=True), (0, 0), None
        else:
            grid, process, infeed = member
        self._ctx = Context(process=process, grid=grid, infeed=infeed)

    @property
    def probes(self) -> dict[str, list[np.ndarray]]:
        return self._ctx.probes

    @property
    def outfeed_log(self) -> list[list[np.ndarray]]:
        """Values of ``outfeed`` ops run outside a grid, one list per execution."""
        return outfeed_log(self._ctx)

    def run(self, op: Operation, args: list[Any]) -> list[Any]:
        """The op's results (numpy arrays, ``TOKEN`` for tokens) from its operands.

        Raises:
            OxlaError: the op failed (a deadlock, a process outside every group, an
                empty infeed), naming the op.
        """
        try:
            return list(self._ctx.eval(op, args))
        except OxlaError:
            raise
        except Exception as exc:  # noqa: BLE001 - a rendezvous timeout or a bad group
            raise OxlaError(f"'{op.name}' at {op.loc}: {exc}") from exc


def run_parallel(programs: Sequence[Sequence[Any]], args: Sequence[Any],
                 infeed: Sequence[Sequence] | None = None) -> tuple[list, list]:
    """Runs ``programs[r][p]`` (GPU executables) as process ``(r, p)`` of a new grid,
    one thread each (spec "Parallel execution"; the interpreter's
    ``interpreter.run_parallel``).

    Args:
        programs: executables, one row per replica, one column per partition.
        args: every process's arguments, concatenated in row-major process order.
        infeed: value lists read in order by the grid's ``infeed`` ops.

    Returns:
        (every process's results concatenated in the same order, the outfeed log as
        ``(process, values)`` in execution order).

    Raises:
        RuntimeInputError: ragged ``programs`` or the wrong number of arguments.
        OxlaError: the first error of a process (one that is not a peer giving up).
    """
    jobs, seen = grid_jobs(programs, args), set()
    for i, (process, exe, fargs) in enumerate(jobs):
        if id(exe) in seen:  # one executable's device state serves one call at a time
            jobs[i] = (process, exe.replica(), fargs)
        seen.add(id(exe))
    grid = ProcessGrid(len(programs), len(programs[0]))
    feed = _infeed(infeed)
    outs: list[Any] = [None] * len(jobs)
    errors: list[BaseException | None] = [None] * len(jobs)

    def work(i: int) -> None:
        process, exe, fargs = jobs[i]
        _local.member = (grid, process, feed)
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
    for t in threads:
        t.join()
    failed = [e for e in errors if e is not None]
    if failed:
        raise next((e for e in failed if "another process" not in str(e)), failed[0])
    return [v for o in outs for v in o], list(grid.outfeed)


@contextmanager
def member_of(grid: Any, process: tuple[int, int]) -> Iterator[None]:
    """Executable calls on this thread inside it run as ``process`` of ``grid`` (one
    rank of an MPI job: ``oxla.sharding.mpi.MpiGrid``, process ``(0, rank)``)."""
    _local.member = (grid, process, None)
    try:
        yield
    finally:
        _local.member = None


def _infeed(infeed: Sequence[Sequence] | None) -> Callable | None:
    if infeed is None:
        return None
    queue = deque(list(v) for v in infeed)
    lock = threading.Lock()

    def read() -> list:
        with lock:
            if not queue:
                raise OxlaError("infeed: the infeed queue is empty")
            return queue.popleft()
    return read


def value_spec(v: Any) -> tuple[tuple[int, ...], np.dtype] | None:
    """``(shape, dtype)`` of an operand or result of a host op, None for a token."""
    t = v.type
    if not hasattr(t, "element_type"):
        return None
    return tuple(int(d) for d in t.shape), np.dtype(t.element_type.dtype)


__all__ = ["HOST_STEP_OPS", "TOKEN", "HostCall", "member_of", "run_parallel", "value_spec"]
