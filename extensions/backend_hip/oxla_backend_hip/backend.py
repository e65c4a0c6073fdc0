"""The ``hip`` backend: StableHLO to AMDGPU code objects and rocBLAS calls through
:mod:`oxla.lowering`'s pipeline.

``compile`` is ``pipeline.run(module, HIPPolicy(), HIPTarget.for_options(options),
options)``. Compiling needs no GPU and no ROCm (llvmlite and ``ld.lld``); running needs
ROCm's HIP runtime, or the simulated device (``OXLA_HIP_DEVICE=sim``).

``available()`` is true only where programs can run, so the default-backend choice never
picks hip on a machine without an AMD GPU; ``compile_only()`` lets an explicit
``--backend hip`` compile there.
"""

from __future__ import annotations

from oxla_codegen_llvm.gpu.backend import GPUBackend

from oxla_backend_hip import device as hip_devices
from oxla_backend_hip.artifact import load_artifact
from oxla_backend_hip.executable import BACKEND
from oxla_backend_hip.policy import HIPPolicy, HIPTarget


class HIPBackend(GPUBackend):
    """Compiles StableHLO for AMD GPUs; runs on a GPU or the simulated device (compile,
    load and grids: :class:`~oxla_codegen_llvm.gpu.backend.GPUBackend`; no compile
    cache yet, so ``stats["cache"]`` is ``off``)."""

    name = BACKEND
    policy = HIPPolicy
    target = HIPTarget
    devices = hip_devices
    load_artifact = staticmethod(load_artifact)
