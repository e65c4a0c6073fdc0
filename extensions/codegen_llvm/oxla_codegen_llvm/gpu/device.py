"""The device interface every GPU runtime path calls, and the environment's device choice.

:class:`Device` is the whole surface between oxla's GPU runtime logic (buffer placement,
argument marshalling, library-call arguments, graphs: :mod:`oxla_codegen_llvm.gpu.runtime`,
:mod:`oxla_codegen_llvm.gpu.executable`) and a device. A backend implements it over its
vendor's API (``oxla_backend_cuda.driver.DriverDevice``, ``oxla_backend_hip.hip.HIPDevice``);
:class:`oxla_codegen_llvm.gpu.sim.SimDevice` implements it over host memory. Everything
above this interface is shared, so the simulated device tests it for every backend.

Pointers are ``int`` device addresses; streams, modules, functions and graphs are opaque
handles. Work is stream-ordered.

A backend's device variable (``OXLA_CUDA_DEVICE``, ``OXLA_HIP_DEVICE``) reads as:
unset or ``auto``: device 0 of the vendor runtime when its library loads; ``sim``: the
simulated device (never chosen unasked); ``N``: device ``N`` (:func:`choice_from_env`).

Under a launcher (one process per GPU: ``mpiexec``, ``oxla launch``, ``srun``), ``auto``
and ``sim`` take device ``local_rank % device_count`` instead of 0, the process's rank
among those of its host (:func:`local_rank`: oxla's ``OXLA_LOCAL_RANK``, else the
launcher's variable; ``exe.attach_mpi`` sets ``OXLA_LOCAL_RANK`` from an
``MPI_COMM_TYPE_SHARED`` split when no launcher set one). ``N`` overrides it: every
process takes device ``N``. The simulated device counts ``OXLA_SIM_DEVICE_COUNT``
devices (default 1), so a simulated job checks the same choice.
"""

from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from oxla.errors import OxlaError, int_setting
from oxla_codegen_llvm.gpu.fft import FftCall
from oxla_codegen_llvm.gpu.gemm import GemmCall


class Device(Protocol):
    """One device, its context and its memory pool (module doc)."""

    name: str
    arch: str  # "sm_90", "gfx942"; "sim" on the simulated device
    dlpack_device: tuple[int, int]  # DLPack (device_type, device_id)

    def make_current(self) -> None: ...
    def stream_create(self) -> Any: ...
    def stream_synchronize(self, stream: Any) -> None: ...
    def stream_destroy(self, stream: Any) -> None: ...
    def alloc(self, nbytes: int, stream: Any) -> int: ...
    def free(self, ptr: int, stream: Any) -> None: ...
    def copy_to_device(self, dst: int, src: np.ndarray, stream: Any) -> None: ...
    def copy_to_host(self, dst: np.ndarray, src: int, stream: Any) -> None: ...
    def copy_device(self, dst: int, src: int, nbytes: int, stream: Any) -> None: ...
    def memset_zero(self, dst: int, nbytes: int, stream: Any) -> None: ...
    def load_module(self, image: Any) -> Any: ...
    def function(self, module: Any, name: str) -> Any: ...
    def launch(self, fn: Any, grid: tuple[int, int, int], block: tuple[int, int, int],
               shared_bytes: int, stream: Any, args: list[tuple[str, int]]) -> None: ...
    def load_custom(self, rec: Any) -> Any: ...
    def launch_custom(self, kernel: Any, grid: tuple[int, int, int],
                      block: tuple[int, int, int], shared_bytes: int, stream: Any,
                      args: list[tuple[str, Any, int]]) -> None: ...
    def gemm(self, call: GemmCall, stream: Any) -> None: ...
    def fft(self, call: FftCall, stream: Any) -> None: ...
    def begin_capture(self, stream: Any) -> None: ...
    def end_capture(self, stream: Any) -> Any: ...
    def graph_launch(self, graph: Any, stream: Any) -> None: ...
    def graph_destroy(self, graph: Any) -> None: ...


LOCAL_RANK_VARS = ("OXLA_LOCAL_RANK", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK",
                   "PMI_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID")
"""Where a process's rank on its host is read, the first one set: oxla's own (a user's
override, or what ``attach_mpi`` found), MPICH's Hydra (and Intel MPI), Open MPI, PMI
(Cray), MVAPICH2, Slurm's ``srun``."""

SIM_DEVICE_COUNT = "OXLA_SIM_DEVICE_COUNT"


def local_rank(environ: Any = None) -> int | None:
    """This process's rank among the processes of its host (module doc), or None when no
    launcher says.

    Raises:
        OxlaError: the variable is not a non-negative integer (names it).
    """
    env = os.environ if environ is None else environ
    for name in LOCAL_RANK_VARS:
        value = env.get(name, "").strip()
        if not value:
            continue
        return int_setting(name, value, 0, "a local rank (an integer >= 0)")
    return None


def set_local_rank_from(comm: Any) -> int:
    """This process's local rank, found from the MPI communicator ``comm`` (mpi4py) when
    no launcher variable gives it: its rank in ``comm``'s ``MPI_COMM_TYPE_SHARED``
    split (collective over ``comm``; it blocks, unlike the collectives), kept in
    ``OXLA_LOCAL_RANK`` for the device choice.

    Raises:
        OxlaError: a launcher's variable is malformed.
    """
    n = local_rank()
    if n is None:
        from mpi4py import MPI

        shared = comm.Split_type(MPI.COMM_TYPE_SHARED)
        n = shared.Get_rank()
        shared.Free()
        os.environ[LOCAL_RANK_VARS[0]] = str(n)
    return n


def sim_device_count() -> int:
    """How many simulated devices a host has (``OXLA_SIM_DEVICE_COUNT``, default 1).

    Raises:
        OxlaError: not a positive integer.
    """
    return int_setting(SIM_DEVICE_COUNT, os.environ.get(SIM_DEVICE_COUNT, "").strip() or "1")


@dataclass(frozen=True)
class DeviceChoice:
    """The device a runtime is made for.

    Attributes:
        kind: ``driver`` (a real GPU through the vendor runtime) or ``sim``.
        ordinal: the device number asked for (``N``; 0 for ``auto``/``sim``).
        local_rank: the process's rank on its host under a launcher (``auto``/``sim``
            only; None otherwise): the device is then chosen by it
            (:meth:`device_ordinal`).
    """

    kind: str
    ordinal: int = 0
    local_rank: int | None = None

    def device_ordinal(self, count: int) -> int:
        """The device to open on a host with ``count`` devices: ``local_rank % count``
        under a launcher, else :attr:`ordinal`.

        Raises:
            OxlaError: no device (``count`` < 1) under a launcher.
        """
        if self.local_rank is None:
            return self.ordinal
        if count < 1:
            raise OxlaError("no device to run on: the runtime reports 0 devices")
        return self.local_rank % count


@functools.cache
def library_loads(name: str) -> bool:
    """True when the shared library ``name`` can be loaded (nothing is initialized)."""
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


def choice_from_env(env: str) -> DeviceChoice:
    """The device the variable ``env`` asks for (module doc), with this process's
    :func:`local_rank` for ``auto``/``sim``.

    Raises:
        OxlaError: the variable is neither ``auto``, ``sim`` nor a device number, or a
            launcher's local rank variable is malformed.
    """
    value = os.environ.get(env, "").strip().lower()
    if value in ("", "auto"):
        return DeviceChoice("driver", 0, local_rank())
    if value == "sim":
        return DeviceChoice("sim", 0, local_rank())
    return DeviceChoice("driver", int_setting(env, value, 0, "'auto', 'sim' or a device number"))
