"""The cuda backend's policy and target: what :mod:`oxla.lowering` asks of this backend.

The policy is the shared GPU policy (:class:`oxla_codegen_llvm.gpu.policy.GPUPolicy`:
types, fusion, f32/f64 dots through cuBLAS, op kernels from simt, ``prepare``) named
``cuda``, with its own stages: kernels, PTX (+ cubins), executable
(:mod:`oxla_backend_cuda.stages`).

:class:`CUDATarget` is the choice of archs: ``--cuda-arch`` (``CompileOptions.extra
["cuda_arch"]``), else the current device's, else ``sm_90``.
"""

from __future__ import annotations

from dataclasses import dataclass

from oxla_codegen_llvm.gpu.policy import (
    BLAS_TYPES,
    DOTS,
    HOST_OPS,
    PREPARED_AWAY,
    GPUPolicy,
    blas_dot,
    dot_dims,
    dot_kernels,
)
from oxla_codegen_llvm.gpu.policy import unsupported as _gpu_unsupported

from oxla.errors import NotSupportedError
from oxla.ir import Operation
from oxla.lowering import Stage
from oxla.protocols import CompileOptions
from oxla_backend_cuda import device as devices
from oxla_backend_cuda.nvjit import parse_archs
from oxla_backend_cuda.runtime import get_runtime
from oxla_backend_cuda.stages import STAGES

BACKEND = "cuda"
__all__ = ["BACKEND", "BLAS_TYPES", "DOTS", "HOST_OPS", "PREPARED_AWAY", "CUDAPolicy",
           "CUDATarget", "blas_dot", "default_arch", "dot_dims", "dot_kernels", "unsupported"]


def unsupported(op: Operation, why: str = "") -> NotSupportedError:
    """The error for an op, type or form this backend cannot compile yet."""
    return _gpu_unsupported(op, why, BACKEND)


@dataclass(frozen=True)
class CUDATarget:
    """The archs a compile makes cubins for (PTX is always kept: newer devices JIT it).

    Attributes:
        archs: ``("sm_80", "sm_90")``; the first is the PTX's ``.target``.
    """

    archs: tuple[str, ...]

    @property
    def ptx_arch(self) -> str:
        return min(self.archs)  # the oldest: PTX JITs forward, never backward

    @staticmethod
    def for_options(options: CompileOptions) -> CUDATarget:
        """``options.extra["cuda_arch"]`` (``"sm_80,sm_90"``), else the current device's
        arch (a driver present), else ``sm_90``."""
        return CUDATarget(parse_archs(options.extra.get("cuda_arch"), default_arch()))


def default_arch() -> str:
    """The arch of the device ``OXLA_CUDA_DEVICE`` chooses when it is a GPU, else sm_90."""
    try:
        c = devices.choice()
        if c.kind == "driver" and devices.driver_library_loads():
            arch = get_runtime().device.arch
            return arch if arch in ("sm_80", "sm_86", "sm_89", "sm_90") else "sm_90"
    except Exception:  # a driver without a usable device: compile for the default
        pass
    return "sm_90"


class CUDAPolicy(GPUPolicy):
    """The cuda backend's answers to fusion (module doc)."""

    name = BACKEND

    def stages(self) -> list[Stage]:
        return list(STAGES)
