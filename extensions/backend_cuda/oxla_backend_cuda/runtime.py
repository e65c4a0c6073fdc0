"""The cuda backend's runtimes: the shared :class:`~oxla_codegen_llvm.gpu.runtime.Runtime`
over the NVIDIA driver (:class:`~oxla_backend_cuda.driver.DriverDevice`) or the simulated
device (``OXLA_CUDA_DEVICE=sim``), one per device choice."""

from __future__ import annotations

from oxla_codegen_llvm.gpu.device import Device, DeviceChoice, sim_device_count
from oxla_codegen_llvm.gpu.runtime import Runtime, Runtimes
from oxla_codegen_llvm.gpu.sim import SimDevice

from oxla.errors import OxlaError
from oxla_backend_cuda import device as devices
from oxla_backend_cuda.driver import DriverDevice

__all__ = ["Runtime", "get_runtime"]


def _make(choice: DeviceChoice) -> Device:
    if choice.kind == "sim":
        return SimDevice("CUDA", warp_size=32,
                         ordinal=choice.device_ordinal(sim_device_count()))
    ok, why = devices.status()
    if not ok:
        raise OxlaError(f"cannot run on cuda: {why} (compile works without one; "
                        f"OXLA_CUDA_DEVICE=sim runs a simulated device)")
    ordinal = choice.ordinal if choice.local_rank is None else \
        choice.device_ordinal(devices.device_count())
    return DriverDevice(ordinal)


RUNTIMES = Runtimes(_make)


def get_runtime() -> Runtime:
    """The runtime of the device ``OXLA_CUDA_DEVICE`` chooses (made once per choice).

    Raises:
        OxlaError: no NVIDIA driver is present (and the simulated device was not asked
            for), or the driver failed to start.
    """
    return RUNTIMES.get(devices.choice())
