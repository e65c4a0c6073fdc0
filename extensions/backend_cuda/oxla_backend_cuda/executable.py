"""The cuda executable: the shared GPU executable (:mod:`oxla_codegen_llvm.gpu.executable`:
inputs, launch program, graphs, device results, artifacts) on the runtime of
:func:`oxla_backend_cuda.runtime.get_runtime`, with a PTX + cubin module image
(:class:`~oxla_backend_cuda.driver.ModuleImage`)."""

from __future__ import annotations

from oxla_codegen_llvm.gpu.executable import GRAPHS, GPUExecutable, program_json, save_artifact
from oxla_codegen_llvm.gpu.runtime import Runtime

from oxla_backend_cuda.runtime import get_runtime

BACKEND = "cuda"
__all__ = ["BACKEND", "GRAPHS", "CUDAExecutable", "program_json", "save_artifact"]


class CUDAExecutable(GPUExecutable):
    """A program compiled for NVIDIA GPUs (:class:`GPUExecutable`); ``image`` holds the
    PTX, the cubins by arch and the kernels."""

    backend = BACKEND

    @property
    def ptx(self) -> str:
        """The PTX module (what ``oxla compile --emit asm`` prints)."""
        return self.image.ptx

    def runtime(self) -> Runtime:
        return get_runtime()
