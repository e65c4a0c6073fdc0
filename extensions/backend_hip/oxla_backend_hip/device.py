"""Which AMD GPU a process runs on: the environment's choice and the HIP runtime's presence.

``OXLA_HIP_DEVICE`` (read by :func:`oxla_codegen_llvm.gpu.device.choice_from_env`):

* unset or ``auto``: device 0 of the HIP runtime when ``libamdhip64.so`` loads
  (``$OXLA_HIP_RUNTIME`` when set, else ``$ROCM_PATH/lib``, ``/opt/rocm/lib``, the
  loader's path) and sees a GPU, else none (the backend is then compile-only);
* ``sim``: the simulated device (host memory, kernels as their host twins with the
  arch's wavefront size, rocBLAS calls by their numpy semantics); never chosen unasked;
* ``N`` (an integer): device ``N`` of the runtime.
"""

from __future__ import annotations

import ctypes
import functools
import os

from oxla_codegen_llvm.gpu.device import DeviceChoice, choice_from_env, library_loads

from oxla.errors import OxlaError

ENV = "OXLA_HIP_DEVICE"
RUNTIME_LIBRARY = "libamdhip64.so"
NO_RUNTIME = f"no AMD GPU runtime: {RUNTIME_LIBRARY} not found"
NO_DEVICE = f"no AMD GPU: {RUNTIME_LIBRARY} loads but hipGetDeviceCount finds no device"
ROCM_DIRS = ("/opt/rocm/lib",)
RUNTIME_ENV = "OXLA_HIP_RUNTIME"

__all__ = ["ENV", "NO_DEVICE", "NO_RUNTIME", "device_count", "RUNTIME_LIBRARY", "DeviceChoice", "choice", "runtime_path",
           "status"]


@functools.cache
def runtime_path() -> str | None:
    """The HIP runtime library that loads here (``$OXLA_HIP_RUNTIME`` alone when set;
    else ``$ROCM_PATH/lib``, ``/opt/rocm/lib``, then the loader's search path), None
    without one. Nothing is initialized."""
    env = os.environ.get(RUNTIME_ENV)
    if env:
        return env if library_loads(env) else None
    dirs = [os.path.join(os.environ["ROCM_PATH"], "lib")] if os.environ.get("ROCM_PATH") else []
    for d in dirs + list(ROCM_DIRS):
        path = os.path.join(d, RUNTIME_LIBRARY)
        if os.path.exists(path) and library_loads(path):
            return path
    return RUNTIME_LIBRARY if library_loads(RUNTIME_LIBRARY) else None


@functools.cache
def device_count() -> int:
    """How many AMD GPUs the HIP runtime sees (``hipGetDeviceCount``; 0 without the
    runtime or on an error such as ``hipErrorNoDevice``)."""
    path = runtime_path()
    if path is None:
        return 0
    try:
        lib = ctypes.CDLL(path)
        n = ctypes.c_int(0)
        return n.value if lib.hipGetDeviceCount(ctypes.byref(n)) == 0 else 0
    except (OSError, AttributeError):
        return 0


def choice() -> DeviceChoice:
    """The device ``OXLA_HIP_DEVICE`` asks for (module doc).

    Raises:
        OxlaError: the variable is neither ``auto``, ``sim`` nor a device number.
    """
    return choice_from_env(ENV)


def status() -> tuple[bool, str]:
    """``(True, "")`` when the chosen device can run programs here, else ``(False,
    reason)``: ``no AMD GPU runtime: libamdhip64.so not found`` without ROCm, or
    :data:`NO_DEVICE` where the runtime loads but sees no GPU (Debian's libamdhip64-5 on a
    machine without one)."""
    try:
        c = choice()
    except OxlaError as exc:
        return False, exc.message
    if c.kind == "sim":
        return True, ""
    if runtime_path() is None:
        return False, NO_RUNTIME
    if device_count() <= c.ordinal:
        return False, NO_DEVICE
    return True, ""
