"""The SIMT kernel model and the GPU kernels of oxla's CUDA backend (issue #14).

The contract with the backend (``oxla_backend_cuda``):

* :class:`Param`, :class:`Kernel`: one GPU kernel, its parameters (a ``buf`` points at a
  plan buffer: arena base + offset, or an input/output's pointer; an ``i64`` is passed by
  value), launch dimensions and dynamic shared memory;
* :func:`kernels_for` ``(kernel, plan)``: the GPU kernels of one plan kernel, in launch
  order (raises ``NotSupportedError`` naming the op or kind it cannot do yet);
* :func:`to_ptx` ``(kernels, arch)``: one PTX module (no fast math, no FMA contraction);
* :func:`check_ptx` ``(ptx, arch)``: ptxas (``--fmad=false``), raising with its log;
* :func:`to_hsaco` ``(kernels, arch)``: one AMDGPU code object (gfx90a, gfx942,
  gfx1100; :mod:`oxla_codegen_llvm.simt.amdgpu`), :func:`to_amdgcn` its assembly;
* :class:`HostTwin` ``(kernels, warp_size=32)``: the same kernels for this CPU;
  ``launch(name, grid, block, shared_bytes, args)``.

Also for a GPU policy: :data:`OP_KINDS` (the ops with a GPU kernel of their own) and
:func:`claim` (what to take before fusion: a ``bitcast_convert`` across widths).

How a kernel is written once and lowered twice: :mod:`oxla_codegen_llvm.simt.model`.
"""

from __future__ import annotations

from oxla_codegen_llvm.simt.amdgpu import to_amdgcn, to_hsaco
from oxla_codegen_llvm.simt.host import HostTwin
from oxla_codegen_llvm.simt.kernels import OP_KINDS, claim, kernels_for
from oxla_codegen_llvm.simt.model import Kernel, KernelBuilder, Param, Region
from oxla_codegen_llvm.simt.nvptx import check_ptx, to_ptx

__all__ = ["OP_KINDS", "HostTwin", "Kernel", "KernelBuilder", "Param", "Region", "check_ptx",
           "claim", "kernels_for", "to_amdgcn", "to_hsaco", "to_ptx"]
