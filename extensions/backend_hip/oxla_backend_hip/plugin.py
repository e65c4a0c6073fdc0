"""Hook implementations of oxla-backend-hip (cheap: the runtime, llvmlite and the
kernels are imported on use)."""

from __future__ import annotations

from oxla.hookspecs import hookimpl
from oxla.protocols import Backend, BackendInfo


def _rules() -> set[str]:
    from oxla_backend_hip.policy import HIPPolicy

    return HIPPolicy().rules()


def _make() -> Backend:
    from oxla_backend_hip.backend import HIPBackend

    return HIPBackend()


@hookimpl
def oxla_backends() -> list[BackendInfo]:
    return [BackendInfo(name="hip",
                        description="AMD GPUs (gfx90a, gfx942, gfx1100): SIMT kernels as AMDGPU "
                                    "code objects, rocBLAS dots; OXLA_HIP_DEVICE=sim runs a "
                                    "simulated device",
                        factory=_make, platforms=("x86_64", "aarch64"), rules=_rules)]
