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
"""

from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from oxla.errors import OxlaError
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


@dataclass(frozen=True)
class DeviceChoice:
    """The device a runtime is made for.

    Attributes:
        kind: ``driver`` (a real GPU through the vendor runtime) or ``sim``.
        ordinal: the runtime's device number (``driver`` only).
    """

    kind: str
    ordinal: int = 0


@functools.cache
def library_loads(name: str) -> bool:
    """True when the shared library ``name`` can be loaded (nothing is initialized)."""
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


def choice_from_env(env: str) -> DeviceChoice:
    """The device the variable ``env`` asks for (module doc).

    Raises:
        OxlaError: the variable is neither ``auto``, ``sim`` nor a device number.
    """
    value = os.environ.get(env, "").strip().lower()
    if value in ("", "auto"):
        return DeviceChoice("driver", 0)
    if value == "sim":
        return DeviceChoice("sim")
    try:
        ordinal = int(value)
    except ValueError:
        ordinal = -1
    if ordinal < 0:
        raise OxlaError(f"{env} must be 'auto', 'sim' or a device number, got '{value}'")
    return DeviceChoice("driver", ordinal)
