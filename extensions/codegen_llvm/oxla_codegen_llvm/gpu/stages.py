"""The stages a GPU backend shares, after :mod:`oxla.lowering`'s target-free ones: the
launch program (``kernels``) and the executable; between them the backend puts its own
assembly stage (cuda: PTX and cubins; hip: AMDGPU code objects), which leaves the image
in ``c.artifacts["image"]``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from oxla.ir import func_type, print_module
from oxla.lowering import Compilation, DotKernel, Stage
from oxla.protocols import Signature
from oxla_codegen_llvm import simt
from oxla_codegen_llvm.gpu.program import build_program, count_steps

INLINE_CONSTANT_BYTES = 4096
"""Constants up to this size are printed in the stored StableHLO; larger ones are
elided there (they travel as ``.npy`` members)."""


def kernels_stage(c: Compilation) -> None:
    """The plan as a launch program, GPU kernels from ``simt.kernels_for``
    (``c.artifacts["program"]``)."""
    assert c.plan is not None
    program = build_program(c.plan, simt, c.policy.name)
    c.artifacts["program"] = program
    c.dump("5-program.json", lambda: json.dumps(program.steps, indent=1))


def executable_stage(make: Callable[..., Any], graphs_option: str) -> Stage:
    """The stage that makes ``make(module_text, program, image, stats, stages,
    signature, use_graphs=...)`` (the backend's executable class); ``graphs_option`` is
    the ``CompileOptions.extra`` key that turns graphs off (``cuda_graphs``)."""

    def run(c: Compilation) -> None:
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
        c.result = make(text, program, c.artifacts["image"], stats, list(plan.notes),
                        Signature(tuple(ft.inputs), tuple(ft.results)),
                        use_graphs=c.options.extra.get(graphs_option, True))

    return Stage("executable", run)
