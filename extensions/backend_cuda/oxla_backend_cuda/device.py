"""Which CUDA device a process runs on: the environment's choice and the driver's presence.

``OXLA_CUDA_DEVICE``:

* unset or ``auto``: device 0 of the NVIDIA driver when ``libcuda.so.1`` loads, else
  none (the backend is then compile-only);
* ``sim``: the simulated device (:mod:`oxla_backend_cuda.sim`: host memory, kernels run
  as their host twins, library calls as their numpy semantics); never chosen unasked;
* ``N`` (an integer): device ``N`` of the driver.
"""

from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import dataclass

from oxla.errors import OxlaError

ENV = "OXLA_CUDA_DEVICE"
DRIVER_LIBRARY = "libcuda.so.1"
NO_DRIVER = f"no NVIDIA driver: {DRIVER_LIBRARY} not found"


@dataclass(frozen=True)
class DeviceChoice:
    """The device a runtime is made for.

    Attributes:
        kind: ``driver`` (a real GPU through the CUDA driver) or ``sim``.
        ordinal: the driver's device number (``driver`` only).
    """

    kind: str
    ordinal: int = 0


@functools.cache
def driver_library_loads() -> bool:
    """True when the NVIDIA driver library can be loaded (it is not initialized here)."""
    try:
        ctypes.CDLL(DRIVER_LIBRARY)
    except OSError:
        return False
    return True


def choice() -> DeviceChoice:
    """The device ``OXLA_CUDA_DEVICE`` asks for (module doc).

    Raises:
        OxlaError: the variable is neither ``auto``, ``sim`` nor a device number.
    """
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("", "auto"):
        return DeviceChoice("driver", 0)
    if value == "sim":
        return DeviceChoice("sim")
    try:
        ordinal = int(value)
    except ValueError:
        ordinal = -1
    if ordinal < 0:
        raise OxlaError(f"{ENV} must be 'auto', 'sim' or a device number, got '{value}'")
    return DeviceChoice("driver", ordinal)


def status() -> tuple[bool, str]:
    """``(True, "")`` when the chosen device can run programs here, else ``(False,
    reason)``: ``no NVIDIA driver: libcuda.so.1 not found`` without a driver."""
    try:
        c = choice()
    except OxlaError as exc:
        return False, exc.message
    if c.kind == "sim" or driver_library_loads():
        return True, ""
    return False, NO_DRIVER
