"""The shared state of a process grid: rendezvous and point-to-point channels.

Spec sections "Parallel execution" and "Collective ops": the processes of a
``num_replicas x num_partitions`` grid run on their own threads and meet at a
rendezvous keyed by the op kind, the channel id, the process group and how many times
each process has reached that key before; ``send``/``recv`` go through FIFO channels.
Both the reference interpreter's ``interpreter.run_parallel`` and the cpu backend's
in-process collectives build on :class:`Rendezvous`.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from oxla.errors import OxlaError, RuntimeInputError

ProcessId = tuple[int, int]
"""``(replica_id, partition_id)``."""


class Rendezvous:
    """A ``num_replicas x num_partitions`` grid's meeting points.

    Attributes:
        num_replicas, num_partitions: the grid's size.
        timeout: seconds a process waits at a rendezvous or a ``recv`` before reporting a
            deadlock.
        failed: the first error of any process, or None.
        error_type: raised on a deadlock timeout or an empty channel.
        peer_failed_type: raised in a waiting process when another process failed.
    """

    error_type: type[Exception] = OxlaError
    peer_failed_type: type[Exception] = OxlaError

    def __init__(self, num_replicas: int, num_partitions: int, timeout: float) -> None:
        self.num_replicas = num_replicas
        self.num_partitions = num_partitions
        self.timeout = timeout
        self.failed: BaseException | None = None
        self._cond = threading.Condition()
        self._slots: dict[tuple, dict] = {}
        self._counts: dict[tuple, int] = {}
        self._channels: dict[Any, deque] = {}

    @property
    def num_processes(self) -> int:
        return self.num_replicas * self.num_partitions

    def abort(self, exc: BaseException) -> None:
        """Wakes every waiting process so that one failure ends the whole run."""
        with self._cond:
            if self.failed is None:
                self.failed = exc
            self._cond.notify_all()

    def _wait(self, ready: Callable[[], bool], what: str) -> None:
        if not self._cond.wait_for(lambda: ready() or self.failed is not None,
                                   timeout=self.timeout):
            raise self.error_type(f"{what}: timed out after {self.timeout:.0f}s "
                                  "(a process never arrived: deadlock?)")
        if not ready():
            raise self.peer_failed_type(f"{what}: another process failed: {self.failed}")

    def rendezvous(self, kind: str, channel_id: int, group: Sequence[ProcessId],
                   process: ProcessId, value: Any) -> dict[ProcessId, Any]:
        """Deposits ``value`` for ``process`` and waits until every process of ``group``
        has deposited its own; returns ``{process: value}`` for the whole group.

        Raises:
            error_type: a process of ``group`` did not arrive within ``timeout`` seconds.
            peer_failed_type: another process failed meanwhile.
        """
        base = (kind, channel_id, tuple(group))
        with self._cond:
            n = self._counts.get((process, base), 0)
            self._counts[(process, base)] = n + 1
            key = (*base, n)
            slot = self._slots.setdefault(key, {"values": {}, "left": len(group)})
            slot["values"][process] = value
            self._cond.notify_all()
            self._wait(lambda: len(slot["values"]) == len(group), f"'{kind}' rendezvous")
            slot["left"] -= 1
            if slot["left"] == 0:
                del self._slots[key]
            return dict(slot["values"])

    def send(self, key: Any, values: list) -> None:
        """Appends ``values`` to the channel queue ``key``."""
        with self._cond:
            self._channels.setdefault(key, deque()).append(values)
            self._cond.notify_all()

    def recv(self, key: Any) -> list:
        """Takes the oldest values of the channel queue ``key``, waiting for a sender.

        Raises:
            error_type: nothing was sent on a 1-process grid, or within ``timeout``.
        """
        with self._cond:
            q = self._channels.setdefault(key, deque())
            if not q and self.num_processes == 1:
                raise self.error_type(f"recv on channel {key}: nothing was sent")
            self._wait(lambda: bool(q), f"recv on channel {key}")
            return q.popleft()


def grid_jobs(programs: Sequence[Sequence[Any]], args: Sequence[Any]
              ) -> list[tuple[ProcessId, Any, list]]:
    """``(process, executable, its arguments)`` for each process of a compiled grid
    (one row of executables per replica), handing ``args`` out in row-major process
    order, each executable taking ``len(exe.signature.inputs)`` of them (the backends'
    ``run_parallel``).

    Raises:
        RuntimeInputError: ragged ``programs`` or the wrong number of arguments.
    """
    if not programs or not programs[0] or any(len(r) != len(programs[0]) for r in programs):
        raise RuntimeInputError("run_parallel: programs must be a non-empty grid with rows "
                                "of the same length")
    jobs, pos = [], 0
    for r, row in enumerate(programs):
        for p, exe in enumerate(row):
            n = len(exe.signature.inputs)
            jobs.append(((r, p), exe, list(args[pos:pos + n])))
            pos += n
    if pos != len(args):
        raise RuntimeInputError(f"run_parallel: {len(args)} arguments for programs taking "
                                f"{pos}")
    return jobs
