"""The simulated CUDA device (``OXLA_CUDA_DEVICE=sim``): the shared simulated device of
:mod:`oxla_codegen_llvm.gpu.sim` (host memory, host-twin kernels with warps of 32,
cuBLAS calls by their numpy semantics), re-exported here."""

from __future__ import annotations

from oxla_codegen_llvm.gpu.sim import SimDevice, SimGraph, SimStream, host_array

__all__ = ["SimDevice", "SimGraph", "SimStream", "host_array"]
