"""The hip executable: the shared GPU executable (:mod:`oxla_codegen_llvm.gpu.executable`:
inputs, launch program, graphs, device results, artifacts) on the runtime of
:func:`oxla_backend_hip.runtime.get_runtime`, with a code object per arch
(:class:`~oxla_backend_hip.image.HIPImage`)."""

from __future__ import annotations

from oxla_codegen_llvm.gpu.executable import GPUExecutable
from oxla_codegen_llvm.gpu.runtime import Runtime

from oxla_backend_hip.runtime import get_runtime

BACKEND = "hip"


class HIPExecutable(GPUExecutable):
    """A program compiled for AMD GPUs (:class:`GPUExecutable`); ``image`` holds the
    code objects by arch and the kernels; ``emit("asm")`` is the first arch's AMDGCN."""

    backend = BACKEND

    def runtime(self) -> Runtime:
        return get_runtime()
