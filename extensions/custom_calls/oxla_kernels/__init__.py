"""oxla's custom-call SDK (distribution ``oxla-custom-calls``).

Declare a kernel once (:class:`Kernel`), give it implementations per backend (C/C++
for cpu, numpy for the interpreter, SYCL, CUDA C, HIP, Triton), register it through
the ``oxla_custom_calls`` hook (:meth:`Kernel.custom_calls`), and replace a subgraph
of any model by it through the ``oxla_patterns`` hook (:class:`Override`). The package
name differs from the hook's on purpose: ``oxla_kernels`` is this SDK,
``oxla_custom_calls`` the hook a plugin implements.
"""

from __future__ import annotations

from oxla_kernels.gpu import CudaImpl, DeviceKernel, HipImpl
from oxla_kernels.kernel import Kernel, TensorSpec, decode_config, encode_config
from oxla_kernels.native import CImpl, NumpyImpl, SharedLibImpl, compile_shared
from oxla_kernels.override import Override
from oxla_kernels.sycl import SyclImpl, sycl_device_status
from oxla_kernels.triton_impl import TritonImpl, triton_status

__all__ = ["CImpl", "CudaImpl", "DeviceKernel", "HipImpl", "Kernel", "NumpyImpl",
           "Override", "SharedLibImpl", "SyclImpl", "TensorSpec", "TritonImpl",
           "compile_shared", "decode_config", "encode_config", "sycl_device_status",
           "triton_status"]
