"""The ``cuda`` backend: StableHLO to GPU kernels and cuBLAS calls through
:mod:`oxla.lowering`'s pipeline.

``compile`` is ``pipeline.run(module, CUDAPolicy(), CUDATarget.for_options(options),
options)``: the target-free stages asking :class:`~oxla_backend_cuda.policy.CUDAPolicy`,
then this backend's own (:mod:`oxla_backend_cuda.stages`). Compiling needs no GPU and no
driver; running needs one, or the simulated device (``OXLA_CUDA_DEVICE=sim``).

``available()`` is true only where programs can run (a driver, or the simulated device
asked for), so the default-backend choice (:data:`oxla.plugins.BACKEND_PREFERENCE`)
never picks cuda on a machine without a GPU; ``compile_only()`` lets an explicit
``--backend cuda`` compile there. A persistent compile cache
(:mod:`oxla_backend_cuda.cache`) sits in front of the pipeline unless
``CompileOptions(cache=False)`` or a ``dump_dir`` is given.
"""

from __future__ import annotations

from oxla_codegen_llvm.gpu.backend import GPUBackend

from oxla_backend_cuda import cache as cuda_cache
from oxla_backend_cuda import device as cuda_devices
from oxla_backend_cuda.artifact import load_artifact
from oxla_backend_cuda.executable import BACKEND
from oxla_backend_cuda.policy import CUDAPolicy, CUDATarget


class CUDABackend(GPUBackend):
    """Compiles StableHLO for NVIDIA GPUs; runs on a GPU or the simulated device
    (compile, cache, load and grids: :class:`~oxla_codegen_llvm.gpu.backend.GPUBackend`)."""

    name = BACKEND
    policy = CUDAPolicy
    target = CUDATarget
    devices = cuda_devices
    cache = cuda_cache
    load_artifact = staticmethod(load_artifact)
