"""The cuda backend's own stages, after :mod:`oxla.lowering`'s target-free ones.

1. ``kernels``: the plan as a launch program, GPU kernels from
   ``oxla_codegen_llvm.simt.kernels_for`` (:func:`oxla_codegen_llvm.gpu.stages.kernels_stage`);
2. ``ptx``: one PTX module for the oldest requested arch (``simt.to_ptx``, FMA
   contraction off), then a cubin per arch through nvJitLink (``-fma=false``); both
   work without a GPU;
3. ``executable``: a :class:`~oxla_backend_cuda.executable.CUDAExecutable`.
"""

from __future__ import annotations

from oxla_codegen_llvm import simt
from oxla_codegen_llvm.gpu.stages import INLINE_CONSTANT_BYTES, executable_stage, kernels_stage

from oxla.lowering import Compilation, Stage
from oxla_backend_cuda.driver import ModuleImage
from oxla_backend_cuda.executable import CUDAExecutable
from oxla_backend_cuda.nvjit import ptx_to_cubin

__all__ = ["INLINE_CONSTANT_BYTES", "STAGES"]


def _ptx(c: Compilation) -> None:
    program = c.artifacts["program"]
    archs = c.target.archs
    ptx, cubins = "", {}
    if program.kernels:
        ptx = simt.to_ptx(program.kernels, arch=c.target.ptx_arch)
        cubins = {a: ptx_to_cubin(ptx, a) for a in archs}
    c.dump("6-module.ptx", ptx)
    c.artifacts["image"] = ModuleImage(ptx, cubins, list(program.kernels))
    assert c.plan is not None
    c.plan.notes.append(f"ptx: {len(program.kernels)} kernels for {c.target.ptx_arch}, "
                        f"cubins for {', '.join(archs)}")


STAGES = (Stage("kernels", kernels_stage), Stage("ptx", _ptx),
          executable_stage(CUDAExecutable, "cuda_graphs"))
"""The cuda backend's stages, in order."""
