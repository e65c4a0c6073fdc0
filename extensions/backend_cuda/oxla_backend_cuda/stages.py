"""The cuda backend's own stages, after :mod:`oxla.lowering`'s target-free ones.

1. ``kernels``: the plan as a launch program, GPU kernels from
   ``oxla_codegen_llvm.simt.kernels_for`` (:func:`oxla_backend_cuda.program.build_program`);
2. ``ptx``: one PTX module for the oldest requested arch (``simt.to_ptx``, FMA
   contraction off), then a cubin per arch through nvJitLink (``-fma=false``); both
   work without a GPU;
3. ``executable``: a :class:`~oxla_backend_cuda.executable.CUDAExecutable`.
"""

from __future__ import annotations

import time

from oxla.ir import func_type, print_module
from oxla.lowering import Compilation, DotKernel, Stage
from oxla.protocols import Signature
from oxla_backend_cuda.driver import ModuleImage
from oxla_backend_cuda.executable import CUDAExecutable
from oxla_backend_cuda.nvjit import ptx_to_cubin
from oxla_backend_cuda.program import build_program, count_steps

INLINE_CONSTANT_BYTES = 4096
"""Constants up to this size are printed in the stored StableHLO; larger ones are
elided there (they travel as ``.npy`` members)."""


def _kernels(c: Compilation) -> None:
    from oxla_codegen_llvm import simt

    assert c.plan is not None
    program = build_program(c.plan, simt)
    c.artifacts["program"] = program
    c.dump("5-program.json", lambda: __import__("json").dumps(program.steps, indent=1))


def _ptx(c: Compilation) -> None:
    program = c.artifacts["program"]
    archs = c.target.archs
    ptx, cubins = "", {}
    if program.kernels:
        from oxla_codegen_llvm import simt

        ptx = simt.to_ptx(program.kernels, arch=c.target.ptx_arch)
        cubins = {a: ptx_to_cubin(ptx, a) for a in archs}
    c.dump("6-module.ptx", ptx)
    c.artifacts["image"] = ModuleImage(ptx, cubins, list(program.kernels))
    assert c.plan is not None
    c.plan.notes.append(f"ptx: {len(program.kernels)} kernels for {c.target.ptx_arch}, "
                        f"cubins for {', '.join(archs)}")


def _executable(c: Compilation) -> None:
    plan, program = c.plan, c.artifacts["program"]
    assert plan is not None
    gemms = count_steps(program.steps, "gemm")
    stats = {"compile_seconds": time.perf_counter() - c.started,
             "kernel_count": len(plan.kernels), "temp_bytes": plan.temp_bytes,
             "gpu_kernels": len(program.kernels), "gemms": gemms,
             "archs": ",".join(c.target.archs), "cache": "off",
             "dots": sum(isinstance(k, DotKernel) for k in plan.kernels)}
    ft = func_type(c.module.main)
    text = print_module(c.module, elide_constants_over=INLINE_CONSTANT_BYTES)
    c.result = CUDAExecutable(text, program, c.artifacts["image"], stats, list(plan.notes),
                              Signature(tuple(ft.inputs), tuple(ft.results)),
                              use_graphs=c.options.extra.get("cuda_graphs", True))


STAGES = (Stage("kernels", _kernels), Stage("ptx", _ptx), Stage("executable", _executable))
"""The cuda backend's stages, in order."""
