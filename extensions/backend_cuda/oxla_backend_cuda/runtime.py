"""The runtime above the device interface: one per process and device, shared by every
executable (the simulated and the real device run this same code).

It owns the :class:`~oxla_backend_cuda.driver.Device`, a stream for frees and host
copies of device arrays, and the device-side copies of executables' constants. Each call
of an executable takes its own stream (:meth:`Runtime.stream`); memory is stream-ordered
(``cuMemAllocAsync``/``cuMemFreeAsync``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from oxla.errors import OxlaError
from oxla_backend_cuda import device as devices
from oxla_backend_cuda.driver import Device, DriverDevice
from oxla_backend_cuda.sim import SimDevice


class Runtime:
    """One device's runtime (module doc).

    Attributes:
        device: the device (real or simulated).
        choice: what ``OXLA_CUDA_DEVICE`` asked for.
    """

    def __init__(self, device: Device, choice: devices.DeviceChoice):
        self.device = device
        self.choice = choice
        self._lock = threading.Lock()
        self._side = device.stream_create()  # frees and host copies of device arrays
        self._streams: list[Any] = []

    @property
    def simulated(self) -> bool:
        return self.choice.kind == "sim"

    @contextlib.contextmanager
    def stream(self) -> Iterator[Any]:
        """A stream for one call (reused from a pool), synchronized at the end."""
        self.device.make_current()  # the calling thread's context
        with self._lock:
            s = self._streams.pop() if self._streams else self.device.stream_create()
        try:
            yield s
            self.device.stream_synchronize(s)
        finally:
            with self._lock:
                self._streams.append(s)

    def alloc(self, nbytes: int, stream: Any) -> int:
        return self.device.alloc(nbytes, stream)

    def release(self, ptr: int) -> None:
        """Frees a device array's memory (stream-ordered, on the side stream)."""
        try:
            with self._lock:
                self.device.make_current()
                self.device.free(ptr, self._side)
        except Exception:  # at interpreter exit the driver may be gone already
            pass

    def upload(self, array: np.ndarray) -> int:
        """A new device copy of ``array``; the caller frees it (:meth:`release`)."""
        data = np.ascontiguousarray(array)
        with self._lock:
            self.device.make_current()
            ptr = self.device.alloc(data.nbytes, self._side)
            self.device.copy_to_device(ptr, data, self._side)
            self.device.stream_synchronize(self._side)
        return ptr

    def to_host(self, ptr: int, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        out = np.empty(shape, dtype)
        with self._lock:
            self.device.make_current()
            self.device.copy_to_host(out, ptr, self._side)
            self.device.stream_synchronize(self._side)
        return out


_runtimes: dict[devices.DeviceChoice, Runtime] = {}
_runtimes_lock = threading.Lock()


def get_runtime() -> Runtime:
    """The runtime of the device ``OXLA_CUDA_DEVICE`` chooses (made once per choice).

    Raises:
        OxlaError: no NVIDIA driver is present (and the simulated device was not asked
            for), or the driver failed to start.
    """
    choice = devices.choice()
    with _runtimes_lock:
        rt = _runtimes.get(choice)
        if rt is None:
            if choice.kind == "sim":
                dev: Device = SimDevice()
            else:
                ok, why = devices.status()
                if not ok:
                    raise OxlaError(f"cannot run on cuda: {why} (compile works without "
                                    f"one; OXLA_CUDA_DEVICE=sim runs a simulated device)")
                dev = DriverDevice(choice.ordinal)
            rt = _runtimes[choice] = Runtime(dev, choice)
        return rt
