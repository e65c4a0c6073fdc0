"""NCCL for a cuda program's collectives under MPI (one process per GPU): the
``nvidia-nccl-cu13`` wheel's ``libnccl`` by ctypes, optional (loaded at
``exe.attach_mpi``; the error names the wheel when it is missing; it needs no driver to
load).

The calls and their numpy/MPI semantics (what the simulated device runs) are
:mod:`oxla_codegen_llvm.gpu.nccl`'s; here they become ``ncclAllReduce``,
``ncclAllGather``, ``ncclReduceScatter`` and ``ncclSend``/``ncclRecv`` between
``ncclGroupStart`` and ``ncclGroupEnd`` on the executable's stream. The world
communicator is ``ncclCommInitRank`` over an ``ncclUniqueId`` that rank 0 makes and
broadcasts over the MPI communicator; a process group is ``ncclCommSplit`` of it.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable, Sequence
from typing import Any

from oxla_codegen_llvm.gpu.nccl import BYTE, DTYPES, REDOPS, NcclCall

from oxla.errors import OxlaError
from oxla_backend_cuda.cublas import library_path

LIBRARY = "libnccl.so.2"
WHEEL = "nvidia-nccl-cu13==2.32.3"
UNIQUE_ID_BYTES = 128  # NCCL_UNIQUE_ID_BYTES
__all__ = ["LIBRARY", "WHEEL", "NcclComm", "load_library", "run_group"]


class UniqueId(ctypes.Structure):
    """``ncclUniqueId`` (passed by value to ``ncclCommInitRank``)."""

    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


@functools.cache
def load_library() -> ctypes.CDLL:
    """``libnccl`` with the entry points oxla calls declared.

    Raises:
        OxlaError: the library is missing (names the wheel).
    """
    try:
        lib = ctypes.CDLL(library_path(LIBRARY, "nccl"))
    except OSError as exc:
        raise OxlaError(f"NCCL is not loadable (install {WHEEL}): {exc}") from None
    p, i, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    sig = {"ncclGetVersion": [ctypes.POINTER(i)],
           "ncclGetUniqueId": [ctypes.POINTER(UniqueId)],
           "ncclCommInitRank": [ctypes.POINTER(p), i, UniqueId, i],
           "ncclCommSplit": [p, i, i, ctypes.POINTER(p), p],
           "ncclCommDestroy": [p],
           "ncclAllReduce": [p, p, sz, i, i, p, p],
           "ncclAllGather": [p, p, sz, i, p, p],
           "ncclReduceScatter": [p, p, sz, i, i, p, p],
           "ncclSend": [p, sz, i, i, p, p],
           "ncclRecv": [p, sz, i, i, p, p],
           "ncclGroupStart": [], "ncclGroupEnd": []}
    for name, args in sig.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, ctypes.c_int
    lib.ncclGetErrorString.argtypes, lib.ncclGetErrorString.restype = [i], ctypes.c_char_p
    return lib


def _check(lib: Any, status: int, what: str) -> None:
    if status != 0:
        text = lib.ncclGetErrorString(status)
        raise OxlaError(f"{what} failed with ncclResult_t {status}"
                        + (f" ({text.decode()})" if text else ""))


class NcclComm:
    """One ``ncclComm_t`` (``split`` as ``ncclCommSplit``)."""

    def __init__(self, lib: Any, handle: ctypes.c_void_p):
        self.lib, self.handle = lib, handle

    @classmethod
    def world(cls, comm: Any, lib: Any = None) -> NcclComm:
        """The communicator of every rank of the MPI communicator ``comm`` (mpi4py) on
        the current device: rank 0's ``ncclGetUniqueId`` broadcast over ``comm``, then
        ``ncclCommInitRank`` on every rank (collective).

        Raises:
            OxlaError: NCCL is missing or failed (on rank 0 every rank raises it).
        """
        lib = lib or load_library()
        uid = UniqueId()
        msg = ""
        if comm.Get_rank() == 0:
            try:
                _check(lib, lib.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
            except OxlaError as e:
                msg = str(e)
        raw, msg = comm.bcast((ctypes.string_at(ctypes.addressof(uid), UNIQUE_ID_BYTES), msg),
                              root=0)
        if msg:
            raise OxlaError(msg)
        ctypes.memmove(ctypes.addressof(uid), raw, UNIQUE_ID_BYTES)
        handle = ctypes.c_void_p()
        _check(lib, lib.ncclCommInitRank(ctypes.byref(handle), comm.Get_size(), uid,
                                         comm.Get_rank()), "ncclCommInitRank")
        return cls(lib, handle)

    def split(self, color: int, key: int) -> NcclComm | None:
        """``ncclCommSplit`` (collective over this communicator); None for color -1
        (``NCCL_SPLIT_NOCOLOR``: a rank in no group)."""
        handle = ctypes.c_void_p()
        _check(self.lib, self.lib.ncclCommSplit(self.handle, color, key, ctypes.byref(handle),
                                                None), "ncclCommSplit")
        return None if color < 0 else NcclComm(self.lib, handle)

    def close(self) -> None:
        if self.handle:
            self.lib.ncclCommDestroy(self.handle)
            self.handle = ctypes.c_void_p()


def run_group(calls: Sequence[NcclCall], comm: Callable[[tuple[int, ...]], NcclComm],
              stream: int, zero: Callable[[int, int], None]) -> None:
    """``calls`` as one NCCL group on ``stream`` (a ``CUstream``'s integer value);
    ``zero(ptr, nbytes)`` zeroes device memory on the same stream (a ``zero`` call).

    Raises:
        OxlaError: an NCCL call failed (its status named).
    """
    if not calls:
        return
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
