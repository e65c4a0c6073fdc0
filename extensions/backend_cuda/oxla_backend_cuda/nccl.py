"""NCCL for a cuda program's collectives under MPI (one process per GPU): the
``nvidia-nccl-cu13`` wheel's ``libnccl`` by ctypes, optional (loaded at
``exe.attach_mpi``; the error names the wheel when it is missing; it needs no driver to
load).

The binding (communicators, groups, the non-blocking polling against
``OXLA_COLLECTIVE_TIMEOUT``) is :mod:`oxla_codegen_llvm.gpu.nccl_api`, shared with the
hip backend's RCCL (:mod:`oxla_backend_hip.rccl`); this module loads the library and
claims the pinned header's version (2.32.3) in ``ncclConfig_t``.
"""

from __future__ import annotations

import ctypes
import functools

from oxla_codegen_llvm.gpu.nccl_api import (
    API_MAGIC,
    IN_PROGRESS,
    NCCL_VERSION_CODE,
    UNIQUE_ID_BYTES,
    NcclComm,
    NcclConfig,
    NcclGroup,
    UniqueId,
    declare,
    run_group,
)

from oxla.errors import OxlaError
from oxla_backend_cuda.cublas import library_path

LIBRARY = "libnccl.so.2"
WHEEL = "nvidia-nccl-cu13==2.32.3"
VERSION_CODE = NCCL_VERSION_CODE  # the pinned wheel's nccl.h (2.32.3)
__all__ = ["API_MAGIC", "IN_PROGRESS", "LIBRARY", "UNIQUE_ID_BYTES", "VERSION_CODE", "WHEEL",
           "NcclComm", "NcclConfig", "NcclGroup", "UniqueId", "load_library", "run_group",
           "world"]


@functools.cache
def load_library() -> ctypes.CDLL:
    """``libnccl`` with the entry points oxla calls declared
    (:func:`~oxla_codegen_llvm.gpu.nccl_api.declare`).

    Raises:
        OxlaError: the library is missing (names the wheel).
    """
    try:
        lib = ctypes.CDLL(library_path(LIBRARY, "nccl"))
    except OSError as exc:
        raise OxlaError(f"NCCL is not loadable (install {WHEEL}): {exc}") from None
    return declare(lib)


def world(comm) -> NcclComm:
    """The world communicator of the MPI job ``comm`` over the pinned NCCL, started
    (:meth:`~oxla_codegen_llvm.gpu.nccl_api.NcclComm.world`).

    Raises:
        OxlaError: NCCL is missing.
    """
    return NcclComm.world(comm, load_library(), NcclConfig.non_blocking(VERSION_CODE))
