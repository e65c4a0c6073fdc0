"""A GPU program's collectives under MPI (one process per GPU) as NCCL calls, and those
calls' semantics over MPI on host memory (what a simulated device runs). The calls are
the NCCL C API's, which AMD's RCCL shares: the cuda backend runs them on NCCL, the hip
backend on RCCL, both through :mod:`oxla_codegen_llvm.gpu.nccl_api`.

Without MPI, a GPU program's collectives are host-staged steps over an in-process grid
(:mod:`oxla_codegen_llvm.gpu.hostops`). Once ``exe.attach_mpi(comm, ...)`` has run on
every rank (:class:`NcclCollectives`), a ``host`` step of one of these ops becomes
:class:`NcclCall` s on the executable's stream, grouped between ``ncclGroupStart`` and
``ncclGroupEnd`` (spec sections "all_reduce", "all_gather", "reduce_scatter",
"all_to_all", "collective_permute"; process groups as spec "Collective ops" defines
them, on the ``1 x size`` grid of ``oxla.sharding.mpi``):

* ``all_reduce``: one ``ncclAllReduce`` per operand, when the reduction body is one
  ``add``/``multiply``/``maximum``/``minimum`` of its two arguments in the operands'
  element type (``ncclSum``/``ncclProd``/``ncclMax``/``ncclMin``);
* ``all_gather`` (``all_gather_dim`` after unit dimensions only, so each peer's block is
  contiguous): ``ncclAllGather``; ``reduce_scatter`` likewise along
  ``scatter_dimension``: ``ncclReduceScatter``;
* ``all_to_all`` (split and concat dimensions after unit dimensions only) and
  ``collective_permute`` with a channel: ``ncclSend``/``ncclRecv`` pairs in one group; a
  ``collective_permute`` target that no pair feeds is zeroed.

A group of processes is a communicator split once from the world's
(``ncclCommSplit``: color = the group's index, key = the rank's place in it). What NCCL
cannot do (another reduction body, a body that promotes, a reduction of ``i1`` or
complex elements, a strided block, a send buffer that overlaps a receive buffer, a
rank outside every group) raises :class:`NotSupportedError` from :func:`nccl_calls`; the executable then
runs the op's host-staged step, which is exact (the interpreter's semantics over
``oxla.sharding.mpi.MpiGrid``). NCCL does not document its reduction order: a real
GPU's floating-point sums may differ from the interpreter's in the last bits.

:func:`start_reference` (over :class:`MpiComm`) runs the same calls as non-blocking
mpi4py messages on the host memory of a simulated device, reducing in the group's
order, so a simulated run checks the pointers, counts, peers and groups a GPU would get.

No wait blocks: the communicators' creation, their splits and each op's group are
polled (``ready()``, ``done()``) by :meth:`NcclCollectives.wait`, which is
``oxla.sharding.mpi.wait_or_abort``, the MPI path's deadline policy, for a real GPU
(``ncclCommGetAsyncError`` and ``cuStreamQuery``) and the simulated device (``MPI_Test``)
alike: past ``OXLA_COLLECTIVE_TIMEOUT`` the waiting rank names the op and itself,
``ncclCommAbort`` s its communicators and ``MPI_Abort`` s the job.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from oxla.errors import NotSupportedError, OxlaError
from oxla.interpreter.rules import collectives as C
from oxla.interpreter.rules.util import attr, dense_2d

# ncclDataType_t and ncclRedOp_t values (nccl.h)
DTYPES = {np.dtype(np.int8): 0, np.dtype(np.uint8): 1, np.dtype(np.int32): 2,
          np.dtype(np.uint32): 3, np.dtype(np.int64): 4, np.dtype(np.uint64): 5,
          np.dtype(np.float16): 6, np.dtype(np.float32): 7, np.dtype(np.float64): 8}
try:  # bfloat16 (ncclBfloat16) where numpy knows it
    import ml_dtypes

    DTYPES[np.dtype(ml_dtypes.bfloat16)] = 9
except ImportError:  # pragma: no cover - ml_dtypes comes with jax
    pass
BYTE = 0  # ncclInt8: the type of every non-reducing transfer (counts in bytes)
REDOPS = {"stablehlo.add": (0, np.add), "stablehlo.multiply": (1, np.multiply),
          "stablehlo.maximum": (2, np.maximum), "stablehlo.minimum": (3, np.minimum)}
"""Reduction body op -> (``ncclRedOp_t``, the numpy ufunc the reference applies)."""
OPS = frozenset({"stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.reduce_scatter",
                 "stablehlo.all_to_all", "stablehlo.collective_permute"})
"""The host ops :func:`nccl_calls` may map to NCCL."""


@dataclass(frozen=True)
class NcclCall:
    """One NCCL call (pointers are device addresses, counts in elements of ``dtype``).

    Attributes:
        kind: ``all_reduce`` (``count`` elements ``send`` -> ``recv``), ``all_gather``
            (``count`` per peer, gathered in group order), ``reduce_scatter`` (``count``
            per peer: this rank's block of the reduction), ``send`` / ``recv`` (``count``
            bytes to / from ``peer``), ``zero`` (``count`` bytes at ``recv`` set to 0).
        dtype: the element type (``ncclInt8`` for ``send``/``recv``/``all_gather``).
        op: the reduction (a key of :data:`REDOPS`) or "".
        group: the ranks of the communicator, in its order (the world's for
            point-to-point calls); ``peer`` is an index into it.
    """

    kind: str
    dtype: np.dtype
    count: int
    send: int
    recv: int
    group: tuple[int, ...]
    op: str = ""
    peer: int = -1

    @property
    def send_bytes(self) -> int:
        """Bytes read at ``send`` (0 for ``recv``/``zero``)."""
        if self.kind in ("recv", "zero"):
            return 0
        n = len(self.group) if self.kind == "reduce_scatter" else 1
        return self.count * self.dtype.itemsize * n

    @property
    def recv_bytes(self) -> int:
        """Bytes written at ``recv`` (0 for ``send``)."""
        if self.kind == "send":
            return 0
        n = len(self.group) if self.kind == "all_gather" else 1
        return self.count * self.dtype.itemsize * n


def _groups(op: Any, size: int) -> list[tuple[int, ...]]:
    """The op's process groups on the ``1 x size`` grid, as rank tuples."""
    return [tuple(p for _, p in g) for g in C.process_groups(C.ProcessGrid(1, size), op)]


def _mine(op: Any, groups: list[tuple[int, ...]], rank: int, size: int) -> tuple[int, ...]:
    """This rank's group; every rank decides alike (a rank outside every group is the
    host-staged step's error)."""
    if {r for g in groups for r in g} != set(range(size)):
        raise NotSupportedError(f"a rank is in no process group of '{op.name}'")
    return next(g for g in groups if rank in g)


def reduction(op: Any) -> str:
    """The body op of ``op``'s reduction region when NCCL has it (:data:`REDOPS`), for
    operands of the region's element type.

    Raises:
        NotSupportedError: any other body, or operands the body would promote.
    """
    region = op.regions[0]
    block = region.blocks[0]
    a, b = block.args
    body = [o for o in block.ops if o.name not in ("stablehlo.return", "func.return")]
    if len(body) != 1 or body[0].name not in REDOPS or \
            {id(v) for v in body[0].operands} != {id(a), id(b)} or len(body[0].operands) != 2:
        names = ", ".join(o.name for o in body)
        raise NotSupportedError(f"NCCL reduces by sum, product, max or min, not a body of "
                                f"[{names}] ('{op.name}')")
    ret = [o for o in block.ops if o.name in ("stablehlo.return", "func.return")]
    if not ret or [id(v) for v in ret[0].operands] != [id(body[0].results[0])]:
        raise NotSupportedError(f"'{op.name}': the reduction body returns another value")
    et = np.dtype(a.type.element_type.dtype)
    if any(np.dtype(v.type.element_type.dtype) != et for v in op.operands):
        raise NotSupportedError(f"'{op.name}': operands promoted to the body's {et}")
    return body[0].name


def _dtype(v: Any) -> np.dtype:
    dt = np.dtype(v.type.element_type.dtype)
    if dt not in DTYPES:
        raise NotSupportedError(f"NCCL has no element type {dt}")
    return dt


def _contiguous_at(shape: Sequence[int], dim: int, what: str) -> None:
    if int(np.prod(shape[:dim], dtype=np.int64)) != 1:
        raise NotSupportedError(f"{what} along dimension {dim} of {list(shape)} is strided "
                                "(NCCL moves contiguous blocks)")


def nccl_calls(op: Any, ins: Sequence[int], outs: Sequence[int], rank: int,
               size: int) -> list[NcclCall]:
    """The NCCL calls of host op ``op`` on rank ``rank`` of ``size``, its operands at
    device addresses ``ins`` and its results at ``outs``.

    Raises:
        NotSupportedError: an op or a form NCCL cannot run (module doc).
    """
    name = op.name.split(".", 1)[1]
    if op.name not in OPS:
        raise NotSupportedError(f"'{op.name}' has no NCCL form")
    if name == "collective_permute":
        return _permute(op, ins[0], outs[0], rank, size)
    group = _mine(op, _groups(op, size), rank, size)
    n = len(group)
    calls = []
    for v, r, src, dst in zip(op.operands, op.results, ins, outs):
        dt = _dtype(v) if name != "all_gather" else np.dtype(v.type.element_type.dtype)
        shape = tuple(int(d) for d in v.type.shape)
        count = int(np.prod(shape, dtype=np.int64))
        if name == "all_reduce":
            calls.append(NcclCall("all_reduce", dt, count, src, dst, group, reduction(op)))
        elif name == "all_gather":
            _contiguous_at(shape, int(attr(op, "all_gather_dim")), "all_gather")
            calls.append(NcclCall("all_gather", np.dtype(np.int8), count * dt.itemsize, src,
                                  dst, group))
        elif name == "reduce_scatter":
            out_shape = tuple(int(d) for d in r.type.shape)
            _contiguous_at(out_shape, int(attr(op, "scatter_dimension")), "reduce_scatter")
            calls.append(NcclCall("reduce_scatter", dt, count // n, src, dst, group,
                                  reduction(op)))
        else:
            calls += _all_to_all(op, v, r, src, dst, group, rank)
    _check_overlap(op, calls)
    return calls


def _all_to_all(op, v, r, src, dst, group, rank) -> list[NcclCall]:
    split, concat = int(attr(op, "split_dimension")), int(attr(op, "concat_dimension"))
    shape = tuple(int(d) for d in v.type.shape)
    _contiguous_at(shape, split, "all_to_all's split")
    _contiguous_at(tuple(int(d) for d in r.type.shape), concat, "all_to_all's concat")
    chunk = int(np.prod(shape, dtype=np.int64)) * np.dtype(v.type.element_type.dtype).itemsize
    chunk //= len(group)
    calls = []
    for j in range(len(group)):  # chunk j to peer j; peer j's chunk into block j
        calls.append(NcclCall("send", np.dtype(np.int8), chunk, src + j * chunk, 0, group,
                              peer=j))
        calls.append(NcclCall("recv", np.dtype(np.int8), chunk, 0, dst + j * chunk, group,
                              peer=j))
    return calls


def _permute(op, src: int, dst: int, rank: int, size: int) -> list[NcclCall]:
    if C.channel_id(op) <= 0:
        raise NotSupportedError("a collective_permute across replicas has no NCCL form "
                                "(one replica per MPI job)")
    pairs = [(int(s), int(t)) for s, t in dense_2d(op, "source_target_pairs").reshape(-1, 2)]
    world = tuple(range(size))
    nbytes = int(np.prod(op.operands[0].type.shape, dtype=np.int64)) * \
        np.dtype(op.operands[0].type.element_type.dtype).itemsize
    i8 = np.dtype(np.int8)
    calls = [NcclCall("send", i8, nbytes, src, 0, world, peer=t) for s, t in pairs if s == rank]
    sources = [s for s, t in pairs if t == rank]
    calls += [NcclCall("recv", i8, nbytes, 0, dst, world, peer=s) for s in sources]
    if not sources:
        calls.append(NcclCall("zero", i8, nbytes, 0, dst, world))
    _check_overlap(op, calls)
    return calls


def _check_overlap(op, calls: list[NcclCall]) -> None:
    """NCCL's out-of-place forms need disjoint send and receive buffers (an all_reduce
    in place is allowed: the same address)."""
    sends = [(c.send, c.send + c.send_bytes) for c in calls if c.send_bytes]
    recvs = [(c.recv, c.recv + c.recv_bytes) for c in calls if c.recv_bytes]
    for s0, s1 in sends:
        for r0, r1 in recvs:
            if s0 < r1 and r0 < s1 and not (s0 == r0 and s1 == r1 and
                                            calls[0].kind == "all_reduce"):
                raise NotSupportedError(f"'{op.name}': an operand overlaps a result")


class MpiComm:
    """A communicator of the reference over a duplicate of the MPI job's communicator
    (``mpi``, made by ``MPI_Comm_idup``: ``request`` until it completes), as the ranks
    ``group`` of it in order; ``split`` (``ncclCommSplit``) is local: the reference
    addresses a group's ranks in ``mpi`` itself. ``None`` for a rank outside every
    group."""

    def __init__(self, mpi: Any, group: tuple[int, ...], request: Any = None):
        self.mpi, self.group, self.request = mpi, group, request

    @classmethod
    def world(cls, comm: Any) -> MpiComm:
        """Every rank of the mpi4py communicator ``comm`` (its ``Idup``, in progress:
        :meth:`ready`)."""
        dup, req = comm.Idup()
        return cls(dup, tuple(range(comm.Get_size())), req)

    def ready(self) -> bool:
        """Whether the communicator exists (non-blocking)."""
        if self.request is not None and not self.request.Test():
            return False
        self.request = None
        return True

    def split(self, color: int, key: int, group: tuple[int, ...]) -> MpiComm | None:
        """The communicator of ``group`` (ready at once); None for color -1."""
        return None if color < 0 else MpiComm(self.mpi, group)

    def abort(self) -> None:
        """Nothing to release (``MPI_Abort`` follows)."""


COLLECTIVE_TAG = 100  # + the call's index in its group (p2p calls use P2P_TAG)
P2P_TAG = 7


class ReferenceGroup:
    """One NCCL group of the reference in flight (:func:`start_reference`): ``done()``
    is True once its messages completed and its results are written."""

    def __init__(self, reqs: list, finish: Callable[[], None]):
        self.reqs, self._finish, self.finished = reqs, finish, False

    def done(self) -> bool:
        from mpi4py import MPI

        if not self.finished and MPI.Request.Testall(self.reqs):
            self._finish()
            self.finished = True
        return self.finished

    def abort(self) -> None:
        """Nothing to release (``MPI_Abort`` follows)."""


def start_reference(calls: Sequence[NcclCall], comm: Callable[[tuple[int, ...]], MpiComm],
                    view: Callable[[int, int], np.ndarray]) -> ReferenceGroup:
    """Starts what NCCL computes for ``calls`` (one group), on memory that
    ``view(ptr, nbytes)`` maps to a writable ``uint8`` array, as non-blocking MPI
    messages: every send buffer is read now, before any result is written (a group's
    calls are concurrent); the results are written when the returned group is
    ``done()``, reductions in the group's order. ``comm(group)`` is the
    :class:`MpiComm` of a group; a peer is an index into the call's group."""
    reqs: list = []
    later: list = []
    keep: list = []
    for i, c in enumerate(calls):
        mc = comm(c.group)
        me = mc.mpi.Get_rank()
        if c.kind in ("all_reduce", "all_gather", "reduce_scatter"):
            mine = view(c.send, c.send_bytes).copy()
            got = []
            for r in c.group:
                if r == me:
                    got.append(mine)
                    continue
                buf = np.empty_like(mine)
                reqs.append(mc.mpi.Isend(mine, dest=r, tag=COLLECTIVE_TAG + i))
                reqs.append(mc.mpi.Irecv(buf, source=r, tag=COLLECTIVE_TAG + i))
                got.append(buf)
            keep.append(mine)
            later.append((c, got, c.group.index(me)))
        elif c.kind == "send":
            buf = view(c.send, c.send_bytes).copy()
            keep.append(buf)
            reqs.append(mc.mpi.Isend(buf, dest=c.group[c.peer], tag=P2P_TAG))
        elif c.kind == "recv":
            buf = np.empty(c.recv_bytes, np.uint8)
            reqs.append(mc.mpi.Irecv(buf, source=c.group[c.peer], tag=P2P_TAG))
            later.append((c, buf, -1))

    def finish() -> None:
        del keep[:]
        for c, got, me in later:
            if c.kind == "recv":
                view(c.recv, c.recv_bytes)[...] = got
            elif c.kind == "all_gather":
                view(c.recv, c.recv_bytes)[...] = np.concatenate(got)
            else:
                ufunc = REDOPS[c.op][1]
                vals = [g.view(c.dtype) for g in got]
                acc = vals[0].copy()
                with np.errstate(all="ignore"):
                    for v in vals[1:]:
                        acc = ufunc(acc, v).astype(c.dtype, copy=False)
                if c.kind == "reduce_scatter":
                    acc = acc[me * c.count:(me + 1) * c.count]
                view(c.recv, acc.nbytes)[...] = acc.view(np.uint8)
        for c in calls:
            if c.kind == "zero":
                view(c.recv, c.recv_bytes)[...] = 0

    return ReferenceGroup(reqs, finish)


class NcclCollectives:
    """An executable's NCCL state under MPI: the world communicator and one split per
    distinct process group (:meth:`prepare`, in op order, on every rank), and what ran
    where (:meth:`summary`).

    ``world`` is the device's communicator over the MPI job (a real ``ncclComm_t``
    wrapper, or :class:`MpiComm` on the simulated device), possibly still being made:
    it has ``ready()`` (non-blocking; raises on an asynchronous error), ``abort()``
    (``ncclCommAbort``) and ``split(color, key, group)``. Every wait (the communicators
    being made, each group's calls completing) is :meth:`wait`: the deadline policy of
    ``oxla.sharding.mpi.wait_or_abort``, ``timeout`` seconds, then this rank names the
    op and itself, aborts its communicators and ``MPI_Abort`` s ``mpi`` (the job's
    mpi4py communicator). ``library`` names the library in those messages and the
    summary: ``NCCL``, or ``RCCL`` for the hip backend (its device's
    ``collective_library``).
    """

    def __init__(self, world: Any, mpi: Any, timeout: float, library: str = "NCCL"):
        self.world, self.mpi, self.timeout = world, mpi, float(timeout)
        self.library = library
        self.rank, self.size = mpi.Get_rank(), mpi.Get_size()
        self._comms: dict[tuple[int, ...], Any] = {tuple(range(self.size)): world}
        self._splits: set[tuple] = set()
        self.native: dict[int, str] = {}  # host op index -> its kind
        self.fallback: dict[int, str] = {}  # host op index -> "kind: why not NCCL"
        self.wait(world.ready, f"creating the {library} communicator")

    def abort(self) -> None:
        """Aborts every communicator (``ncclCommAbort``; the world's last)."""
        for c in list(self._comms.values())[::-1]:
            if c is not None:
                c.abort()

    def wait(self, test: Callable[[], bool], what: str) -> None:
        """Polls ``test`` against the deadline (class doc); returns once it is True."""
        from oxla.sharding.mpi import wait_or_abort

        wait_or_abort(test, what, self.rank, self.timeout, self.mpi, self.abort)

    def comm(self, group: tuple[int, ...]) -> Any:
        """The communicator whose ranks are ``group`` in order (the world's for every
        rank: a point-to-point call's group is the world)."""
        c = self._comms.get(group)
        if c is None:
            raise NotSupportedError(f"internal: no communicator for group {group}")
        return c

    def prepare(self, op: Any) -> None:
        """Splits the communicators of ``op``'s groups (every rank, the same order),
        each split waited for (:meth:`wait`)."""
        if op.name == "stablehlo.collective_permute":
            return
        try:
            groups = tuple(_groups(op, self.size))
        except OxlaError:  # groups the host-staged step refuses (it says why)
            return
        if groups == (tuple(range(self.size)),) or groups in self._splits:
            return
        self._splits.add(groups)
        mine = [i for i, g in enumerate(groups) if self.rank in g]
        group = groups[mine[0]] if mine else ()
        c = self.world.split(mine[0] if mine else -1, group.index(self.rank) if mine else 0,
                             group)
        kind = op.name.split(".", 1)[1]
        self.wait((c or self.world).ready, f"splitting the {self.library} communicator for '{kind}'")
        if mine:
            self._comms[group] = c

    def run(self, op: Any, pending: Any) -> None:
        """Waits for one op's group of calls (``pending``: ``done()`` True once the
        calls completed on the device, raising on an asynchronous error)."""
        kind = op.name.split(".", 1)[1]
        self.wait(pending.done, f"{self.library} '{kind}' (channel {C.channel_id(op)})")

    def summary(self) -> str:
        """``NCCL collectives: all_reduce 2; host-staged: 1 (all_to_all: ...)`` over the
        ops run so far."""
        kinds: dict[str, int] = {}
        for k in self.native.values():
            kinds[k] = kinds.get(k, 0) + 1
        native = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none"
        staged = "; ".join(why for _, why in sorted(self.fallback.items()))
        return f"{self.library} collectives: {native}; host-staged: {len(self.fallback)}" + \
            (f" ({staged})" if staged else "")


__all__ = ["DTYPES", "OPS", "REDOPS", "MpiComm", "NcclCall", "NcclCollectives",
           "ReferenceGroup", "nccl_calls", "reduction", "start_reference"]
