"""RCCL for a hip program's collectives under MPI (one process per AMD GPU): ROCm's
``librccl.so.1`` by ctypes, optional (loaded at ``exe.attach_mpi``, from
``$ROCM_PATH/lib``, ``/opt/rocm/lib`` or the loader's path; missing, the error names
ROCm's ``rccl`` package). RCCL has no PyPI wheel.

RCCL has NCCL's C API (the same entry points, ``ncclResult_t``, ``ncclDataType_t`` and
``ncclRedOp_t`` values, ``ncclUniqueId`` and a prefix of ``ncclConfig_t``), so the
binding is the cuda backend's, shared (:mod:`oxla_codegen_llvm.gpu.nccl_api`): the same
:class:`~oxla_codegen_llvm.gpu.nccl.NcclCall` records on the executable's
``hipStream_t``, non-blocking communicators polled by ``ncclCommGetAsyncError`` and
``hipStreamQuery`` against ``OXLA_COLLECTIVE_TIMEOUT``. ``ncclConfig_t`` claims the
version ``ncclGetVersion`` of the loaded RCCL reports (so it reads the struct as its own
header declares it).

Supported: ROCm 6.x's RCCL (NCCL 2.18 and later: non-blocking ``ncclCommInitRankConfig``
and ``ncclCommSplit``); written against RCCL's header, never run here (no AMD GPU was
available: see the README's hip section).
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

from oxla_codegen_llvm.gpu.nccl_api import NcclComm, NcclConfig, declare, library_version

from oxla_backend_hip.rocblas import load_rocm_library

LIBRARY = "librccl.so.1"
__all__ = ["LIBRARY", "load_library", "world"]


@functools.cache
def load_library() -> ctypes.CDLL:
    """``librccl.so.1`` (:func:`oxla_backend_hip.rocblas.load_rocm_library`) with the
    entry points oxla calls declared.

    Raises:
        OxlaError: RCCL is missing (one line naming ROCm's rccl package), or too old.
    """
    lib = load_rocm_library(LIBRARY, "RCCL", "rccl",
                            "collectives of hip programs under MPI need")
    return declare(lib)


def world(comm: Any, lib: Any = None) -> NcclComm:
    """The RCCL world communicator of the MPI job ``comm`` (mpi4py) on the current
    device, started (:meth:`~oxla_codegen_llvm.gpu.nccl_api.NcclComm.world`), its config
    claiming the library's own version.

    Raises:
        OxlaError: RCCL is missing or ``ncclGetVersion`` failed.
    """
    lib = lib or load_library()
    return NcclComm.world(comm, lib, NcclConfig.non_blocking(library_version(lib)))
