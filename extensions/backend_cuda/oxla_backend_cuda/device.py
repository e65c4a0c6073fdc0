"""Which CUDA device a process runs on: the environment's choice and the driver's presence.

``OXLA_CUDA_DEVICE`` (read by :func:`oxla_codegen_llvm.gpu.device.choice_from_env`):

* unset or ``auto``: device 0 of the NVIDIA driver when ``libcuda.so.1`` loads, else
  none (the backend is then compile-only);
* ``sim``: the simulated device (:mod:`oxla_codegen_llvm.gpu.sim`: host memory, kernels
  run as their host twins, library calls as their numpy semantics); never chosen unasked;
* ``N`` (an integer): device ``N`` of the driver, for every process.

Under a launcher ``auto`` and ``sim`` take device ``local_rank % device_count``
(:mod:`oxla_codegen_llvm.gpu.device`).
"""

from __future__ import annotations

from oxla_codegen_llvm.gpu.device import DeviceChoice, choice_from_env, library_loads

from oxla.errors import OxlaError

ENV = "OXLA_CUDA_DEVICE"
DRIVER_LIBRARY = "libcuda.so.1"
NO_DRIVER = f"no NVIDIA driver: {DRIVER_LIBRARY} not found"

__all__ = ["DRIVER_LIBRARY", "ENV", "NO_DRIVER", "DeviceChoice", "choice", "device_count",
           "driver_library_loads", "status"]


def driver_library_loads() -> bool:
    """True when the NVIDIA driver library can be loaded (it is not initialized here)."""
    return library_loads(DRIVER_LIBRARY)


def device_count() -> int:
    """How many GPUs the NVIDIA driver sees (``cuInit`` then ``cuDeviceGetCount``; 0
    without a driver or on an error)."""
    if not driver_library_loads():
        return 0
    try:
        from cuda.bindings import driver

        if int(driver.cuInit(0)[0]) != 0:
            return 0
        err, n = driver.cuDeviceGetCount()
        return int(n) if int(err) == 0 else 0
    except (ImportError, RuntimeError):
        return 0


def choice() -> DeviceChoice:
    """The device ``OXLA_CUDA_DEVICE`` asks for (module doc).

    Raises:
        OxlaError: the variable is neither ``auto``, ``sim`` nor a device number.
    """
    return choice_from_env(ENV)


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
