"""The hip backend's runtimes: the shared :class:`~oxla_codegen_llvm.gpu.runtime.Runtime`
over the HIP runtime (:class:`~oxla_backend_hip.hip.HIPDevice`) or the simulated device
(``OXLA_HIP_DEVICE=sim``), one per device choice.

The simulated device runs each module's host twins with the wavefront size of the
module's first arch (64 for gfx90a/gfx942, 32 for gfx1100), so ``--hip-arch`` picks
what it simulates.
"""

from __future__ import annotations

from typing import Any

from oxla_codegen_llvm.gpu.device import Device, DeviceChoice, sim_device_count
from oxla_codegen_llvm.gpu.runtime import Runtime, Runtimes
from oxla_codegen_llvm.gpu.sim import SimDevice
from oxla_codegen_llvm.simt.amdgpu import WAVEFRONT
from oxla_codegen_llvm.simt.host import HostTwin

from oxla.errors import OxlaError
from oxla_backend_hip import device as devices
from oxla_backend_hip.hip import HIPDevice

__all__ = ["HIPSimDevice", "Runtime", "get_runtime"]


class HIPSimDevice(SimDevice):
    """The shared simulated device, its host twins at the image's arch's wavefront size;
    its collectives under MPI are the calls RCCL would run (named so in their summary and
    errors)."""

    collective_library = "RCCL"

    def __init__(self, ordinal: int = 0):
        super().__init__("HIP", warp_size=64, ordinal=ordinal)

    def load_module(self, image: Any) -> Any:
        if not image.kernels:
            return None
        archs = list(getattr(image, "archs", []))
        self.warp_size = WAVEFRONT.get(archs[0], 64) if archs else 64
        return HostTwin(image.kernels, self.warp_size)


def _make(choice: DeviceChoice) -> Device:
    if choice.kind == "sim":
        return HIPSimDevice(choice.device_ordinal(sim_device_count()))
    ok, why = devices.status()
    path = devices.runtime_path()
    if not ok or path is None:
        raise OxlaError(f"cannot run on hip: {why or devices.NO_RUNTIME} (compile works "
                        f"without a GPU; OXLA_HIP_DEVICE=sim runs a simulated device)")
    return HIPDevice(path, choice.device_ordinal(devices.device_count()))


RUNTIMES = Runtimes(_make)


def get_runtime() -> Runtime:
    """The runtime of the device ``OXLA_HIP_DEVICE`` chooses (made once per choice).

    Raises:
        OxlaError: no HIP runtime is present (and the simulated device was not asked
            for), or it failed to start.
    """
    return RUNTIMES.get(devices.choice())
