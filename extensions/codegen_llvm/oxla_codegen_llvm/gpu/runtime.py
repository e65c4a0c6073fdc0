"""The runtime above the device interface: one per process and device, shared by every
executable (the simulated and the real device run this same code).

It owns the :class:`~oxla_codegen_llvm.gpu.device.Device`, a stream for frees and host
copies of device arrays, and the device-side copies of executables' constants. Each call
of an executable takes its own stream (:meth:`Runtime.stream`); memory is stream-ordered
(``cuMemAllocAsync``/``hipMallocAsync``). A backend keeps its runtimes in a
:class:`Runtimes` (one per device choice).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from oxla_codegen_llvm.gpu.device import Device, DeviceChoice


class Runtime:
    """One device's runtime (module doc).

    Attributes:
        device: the device (real or simulated).
        choice: what the backend's device variable asked for.
    """

    def __init__(self, device: Device, choice: DeviceChoice):
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


class Runtimes:
    """A backend's runtimes, made once per device choice.

    Args:
        make: the device of a choice (a real device, or the simulated one for ``sim``);
            it raises ``OxlaError`` when the choice cannot run here.
    """

    def __init__(self, make: Callable[[DeviceChoice], Device]):
        self._make = make
        self._runtimes: dict[DeviceChoice, Runtime] = {}
        self._lock = threading.Lock()

    def get(self, choice: DeviceChoice) -> Runtime:
        """The runtime of ``choice`` (made on first use).

        Raises:
            OxlaError: from ``make``: no device for the choice.
        """
        with self._lock:
            rt = self._runtimes.get(choice)
            if rt is None:
                rt = self._runtimes[choice] = Runtime(self._make(choice), choice)
            return rt
