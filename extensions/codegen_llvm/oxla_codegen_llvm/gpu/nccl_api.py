"""The NCCL C API by ctypes, shared by the GPU backends: NVIDIA's NCCL (the cuda
backend, :mod:`oxla_backend_cuda.nccl`) and AMD's RCCL (the hip backend,
:mod:`oxla_backend_hip.rccl`), which has NCCL's entry points, types and enums. A backend
loads its library and passes it here; :func:`declare` gives it the signatures oxla calls.

The calls and their numpy/MPI semantics (what the simulated device runs) are
:mod:`oxla_codegen_llvm.gpu.nccl`'s; here they become ``ncclAllReduce``,
``ncclAllGather``, ``ncclReduceScatter`` and ``ncclSend``/``ncclRecv`` between
``ncclGroupStart`` and ``ncclGroupEnd`` on the executable's stream (a ``CUstream`` or a
``hipStream_t``: both are the library's ``stream`` argument, a pointer). The world
communicator is ``ncclCommInitRankConfig`` over an ``ncclUniqueId`` that rank 0 makes
and broadcasts over the MPI communicator (``MPI_Ibcast``); a process group is
``ncclCommSplit`` of it.

Nothing here blocks: every communicator is **non-blocking** (``ncclConfig_t.blocking =
0``), so its init, split and group calls return ``ncclInProgress`` at once, and the
caller polls (:class:`NcclComm.ready`, :class:`NcclGroup.done`:
``ncclCommGetAsyncError`` of each communicator, then the backend's stream query,
``cuStreamQuery`` or ``hipStreamQuery``) against ``OXLA_COLLECTIVE_TIMEOUT``, the
deadline policy the simulated device and the MPI path share
(``oxla.sharding.mpi.wait_or_abort``); past it, ``ncclCommAbort`` of every
communicator, then ``MPI_Abort``.

``ncclConfig_t`` is a versioned struct (``size``, ``magic``, ``version``): the library
copies ``min(size, its own sizeof)`` bytes of it, so it reads the fields its own header
has, which are a prefix of :class:`NcclConfig`'s (NCCL 2.32.3's; RCCL's of ROCm 6.x ends
at ``trafficClass``). :meth:`NcclConfig.non_blocking` takes the version to claim: the
pinned NCCL's, or what ``ncclGetVersion`` of the loaded RCCL says.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

from oxla.errors import OxlaError
from oxla_codegen_llvm.gpu.nccl import BYTE, DTYPES, REDOPS, NcclCall

UNIQUE_ID_BYTES = 128  # NCCL_UNIQUE_ID_BYTES
__all__ = ["API_MAGIC", "IN_PROGRESS", "NcclComm", "NcclConfig", "NcclGroup", "UniqueId",
           "declare", "library_version", "run_group"]

IN_PROGRESS = 7  # ncclInProgress
API_MAGIC = 0xCAFEBEEF  # NCCL_API_MAGIC
NCCL_VERSION_CODE = 23203  # NCCL_VERSION_CODE of the nvidia-nccl-cu13 2.32.3 nccl.h
UNDEF_INT = -2**31  # NCCL_CONFIG_UNDEF_INT (INT_MIN)


_CONFIG_INTS = ("blocking", "cgaClusterSize", "minCTAs", "maxCTAs")
_CONFIG_TAIL = ("collnetEnable", "CTAPolicy", "shrinkShare", "nvlsCTAs",
                "nChannelsPerNetPeer", "nvlinkCentricSched", "graphUsageMode", "numRmaCtx",
                "maxP2pPeers", "graphStreamOrdering", "launchOrderImplicit", "numRmaSig",
                "rmaEagerInit", "hostCftMode", "nvlsHostMode")


class NcclConfig(ctypes.Structure):
    """``ncclConfig_t`` as the pinned wheel's ``nccl.h`` (2.32.3) declares it (a
    versioned struct: ``size`` and ``version`` tell the library which fields it has)."""

    _fields_ = ([("size", ctypes.c_size_t), ("magic", ctypes.c_uint),
                 ("version", ctypes.c_uint)]
                + [(n, ctypes.c_int) for n in _CONFIG_INTS]
                + [("netName", ctypes.c_char_p), ("splitShare", ctypes.c_int),
                   ("trafficClass", ctypes.c_int), ("commName", ctypes.c_char_p)]
                + [(n, ctypes.c_int) for n in _CONFIG_TAIL])

    @classmethod
    def non_blocking(cls, version: int = NCCL_VERSION_CODE) -> NcclConfig:
        """``NCCL_CONFIG_INITIALIZER`` with ``blocking = 0``, claiming the library
        ``version`` (an ``NCCL_VERSION_CODE``: the pinned NCCL's by default; the loaded
        RCCL's for the hip backend, so it reads the struct as its own header's)."""
        c = cls()
        c.size, c.magic, c.version = ctypes.sizeof(cls), API_MAGIC, int(version)
        for n in _CONFIG_INTS[1:] + ("splitShare", "trafficClass") + _CONFIG_TAIL:
            setattr(c, n, UNDEF_INT)
        c.blocking = 0
        return c


class UniqueId(ctypes.Structure):
    """``ncclUniqueId`` (passed by value to ``ncclCommInitRank``)."""

    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


def declare(lib: Any) -> Any:
    """Gives ``lib`` (a ``ctypes.CDLL`` of libnccl or librccl) the signatures of the
    entry points oxla calls; returns it.

    Raises:
        OxlaError: an entry point is missing (names it: an RCCL older than ROCm 6.0 has
            no ``ncclCommSplit``).
    """
    p, i, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    sig = {"ncclGetVersion": [ctypes.POINTER(i)],
           "ncclGetUniqueId": [ctypes.POINTER(UniqueId)],
           "ncclCommInitRankConfig": [ctypes.POINTER(p), i, UniqueId, i,
                                      ctypes.POINTER(NcclConfig)],
           "ncclCommSplit": [p, i, i, ctypes.POINTER(p), ctypes.POINTER(NcclConfig)],
           "ncclCommGetAsyncError": [p, ctypes.POINTER(i)],
           "ncclCommAbort": [p],
           "ncclCommDestroy": [p],
           "ncclAllReduce": [p, p, sz, i, i, p, p],
           "ncclAllGather": [p, p, sz, i, p, p],
           "ncclReduceScatter": [p, p, sz, i, i, p, p],
           "ncclSend": [p, sz, i, i, p, p],
           "ncclRecv": [p, sz, i, i, p, p],
           "ncclGroupStart": [], "ncclGroupEnd": []}
    for name, args in sig.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise OxlaError(f"{getattr(lib, '_name', 'the NCCL library')} has no {name} "
                            "(too old for oxla's non-blocking communicators)") from None
        fn.argtypes, fn.restype = args, ctypes.c_int
    lib.ncclGetErrorString.argtypes, lib.ncclGetErrorString.restype = [i], ctypes.c_char_p
    return lib


def library_version(lib: Any) -> int:
    """``ncclGetVersion`` of ``lib`` (an ``NCCL_VERSION_CODE``, e.g. 22005 for 2.20.5).

    Raises:
        OxlaError: the call failed.
    """
    v = ctypes.c_int(0)
    _check(lib, lib.ncclGetVersion(ctypes.byref(v)), "ncclGetVersion")
    return v.value


def _check(lib: Any, status: int, what: str) -> None:
    """Raises unless ``status`` is ``ncclSuccess`` or ``ncclInProgress`` (a
    non-blocking communicator's call under way: polled later)."""
    if status not in (0, IN_PROGRESS):
        text = lib.ncclGetErrorString(status)
        raise OxlaError(f"{what} failed with ncclResult_t {status}"
                        + (f" ({text.decode()})" if text else ""))


class NcclComm:
    """One non-blocking ``ncclComm_t`` (module doc); until :meth:`ready` the world's is
    still waiting for its unique id or being made."""

    def __init__(self, lib: Any, handle: ctypes.c_void_p | None,
                 config: NcclConfig | None = None):
        self.lib, self.handle = lib, handle
        self._config = config if config is not None else NcclConfig.non_blocking()
        self._pending: tuple | None = None  # the world's (request, buffer, size, rank)

    @classmethod
    def world(cls, comm: Any, lib: Any, config: NcclConfig | None = None) -> NcclComm:
        """The communicator of every rank of the MPI communicator ``comm`` (mpi4py) on
        the current device, started (``lib``: a :func:`declare` d library; ``config``:
        :meth:`NcclConfig.non_blocking`'s by default): rank 0's ``ncclGetUniqueId`` (or
        its error) goes out by ``MPI_Ibcast``; :meth:`ready` inits the communicator once
        it arrives."""
        import numpy as np

        buf = np.zeros(UNIQUE_ID_BYTES + 256, np.uint8)  # the id, then rank 0's error
        if comm.Get_rank() == 0:
            uid = UniqueId()
            try:
                _check(lib, lib.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
                buf[:UNIQUE_ID_BYTES] = np.frombuffer(
                    ctypes.string_at(ctypes.addressof(uid), UNIQUE_ID_BYTES), np.uint8)
            except OxlaError as e:
                msg = e.message.encode()[:255] or b"?"
                buf[UNIQUE_ID_BYTES:UNIQUE_ID_BYTES + len(msg)] = np.frombuffer(msg, np.uint8)
        made = cls(lib, None, config)
        made._pending = (comm.Ibcast(buf, root=0), buf, comm.Get_size(), comm.Get_rank())
        return made

    def ready(self) -> bool:
        """Whether the communicator exists (non-blocking: the id's broadcast, then
        ``ncclCommInitRankConfig``, then ``ncclCommGetAsyncError`` until not in
        progress).

        Raises:
            OxlaError: rank 0 could not make the id, or NCCL failed (its status named).
        """
        if self._pending is not None:
            req, buf, size, rank = self._pending
            if not req.Test():
                return False
            self._pending = None
            msg = bytes(buf[UNIQUE_ID_BYTES:]).rstrip(b"\0")
            if msg:
                raise OxlaError(f"rank 0: {msg.decode(errors='replace')}")
            uid = UniqueId()
            ctypes.memmove(ctypes.addressof(uid), bytes(buf[:UNIQUE_ID_BYTES]), UNIQUE_ID_BYTES)
            self.handle = ctypes.c_void_p()
            _check(self.lib, self.lib.ncclCommInitRankConfig(
                ctypes.byref(self.handle), size, uid, rank, ctypes.byref(self._config)),
                "ncclCommInitRankConfig")
        return self.state() != IN_PROGRESS

    def state(self) -> int:
        """``ncclCommGetAsyncError``: 0, or ``ncclInProgress``.

        Raises:
            OxlaError: any other status (the communicator failed).
        """
        st = ctypes.c_int(0)
        _check(self.lib, self.lib.ncclCommGetAsyncError(self.handle, ctypes.byref(st)),
               "ncclCommGetAsyncError")
        _check(self.lib, st.value, "an NCCL operation (ncclCommGetAsyncError)")
        return st.value

    def split(self, color: int, key: int, group: tuple[int, ...] = ()) -> NcclComm | None:
        """``ncclCommSplit`` (collective over this communicator; non-blocking: the new
        communicator's :meth:`ready` polls it); None for color -1
        (``NCCL_SPLIT_NOCOLOR``: a rank in no group; the parent's ``ready`` then)."""
        del group  # (NCCL orders the new communicator by key)
        new = NcclComm(self.lib, ctypes.c_void_p(), self._config)
        _check(self.lib, self.lib.ncclCommSplit(self.handle, color, key, ctypes.byref(new.handle),
                                                ctypes.byref(new._config)), "ncclCommSplit")
        return None if color < 0 else new

    def abort(self) -> None:
        """``ncclCommAbort`` (frees it without waiting for the other ranks)."""
        if self.handle:
            self.lib.ncclCommAbort(self.handle)
            self.handle = ctypes.c_void_p()

    def close(self) -> None:
        if self.handle:
            self.lib.ncclCommDestroy(self.handle)
            self.handle = ctypes.c_void_p()


class NcclGroup:
    """One group of NCCL calls enqueued on a stream: :meth:`done` is non-blocking."""

    def __init__(self, comms: list[NcclComm], stream_done: Callable[[], bool]):
        self.comms, self.stream_done = comms, stream_done

    def done(self) -> bool:
        """True once every communicator left ``ncclInProgress`` (the group is launched)
        and the stream's work completed (the backend's stream query).

        Raises:
            OxlaError: an asynchronous NCCL error or a failed stream.
        """
        if any(c.state() == IN_PROGRESS for c in self.comms):
            return False
        return self.stream_done()

    def abort(self) -> None:
        for c in self.comms:
            c.abort()


def run_group(calls: Sequence[NcclCall], comm: Callable[[tuple[int, ...]], NcclComm],
              stream: int, zero: Callable[[int, int], None],
              stream_done: Callable[[], bool]) -> NcclGroup:
    """Enqueues ``calls`` as one NCCL group on ``stream`` (a ``CUstream``'s or
    ``hipStream_t``'s integer value) without waiting; ``zero(ptr, nbytes)`` zeroes device
    memory on the same stream (a ``zero`` call); ``stream_done()`` queries the stream
    (``cuStreamQuery``, ``hipStreamQuery``). The caller polls the returned group's
    ``done()``.

    Raises:
        OxlaError: an NCCL call failed (its status named).
    """
    comms = list({id(comm(c.group)): comm(c.group) for c in calls}.values())
    if not calls:
        return NcclGroup(comms, stream_done)
    lib = comm(calls[0].group).lib
    s = ctypes.c_void_p(stream)
    for c in calls:
        if c.kind == "zero":
            zero(c.recv, c.recv_bytes)
    _check(lib, lib.ncclGroupStart(), "ncclGroupStart")
    try:
        for c in calls:
            h = comm(c.group).handle
            send, recv = ctypes.c_void_p(c.send), ctypes.c_void_p(c.recv)
            if c.kind == "all_reduce":
                _check(lib, lib.ncclAllReduce(send, recv, c.count, DTYPES[c.dtype],
                                              REDOPS[c.op][0], h, s), "ncclAllReduce")
            elif c.kind == "reduce_scatter":
                _check(lib, lib.ncclReduceScatter(send, recv, c.count, DTYPES[c.dtype],
                                                  REDOPS[c.op][0], h, s), "ncclReduceScatter")
            elif c.kind == "all_gather":
                _check(lib, lib.ncclAllGather(send, recv, c.count, BYTE, h, s), "ncclAllGather")
            elif c.kind == "send":
                _check(lib, lib.ncclSend(send, c.count, BYTE, c.peer, h, s), "ncclSend")
            elif c.kind == "recv":
                _check(lib, lib.ncclRecv(recv, c.count, BYTE, c.peer, h, s), "ncclRecv")
    finally:
        _check(lib, lib.ncclGroupEnd(), "ncclGroupEnd")
    return NcclGroup(comms, stream_done)
