"""Hook implementations of oxla-backend-cuda (cheap: the driver, llvmlite and the
kernels are imported on use)."""

from __future__ import annotations

from oxla.hookspecs import hookimpl
from oxla.protocols import Backend, BackendInfo


def _rules() -> set[str]:
    from oxla_backend_cuda.policy import CUDAPolicy

    return CUDAPolicy().rules()


def _make() -> Backend:
    from oxla_backend_cuda.backend import CUDABackend

    return CUDABackend()


@hookimpl
def oxla_backends() -> list[BackendInfo]:
    return [BackendInfo(name="cuda",
                        description="NVIDIA GPUs (sm_80-sm_90): SIMT kernels as PTX, cuBLAS "
                                    "dots; OXLA_CUDA_DEVICE=sim runs a simulated device",
                        factory=_make, platforms=("x86_64", "aarch64"), rules=_rules)]
