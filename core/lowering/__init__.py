"""oxla.lowering: the target-free half of every backend (pure Python and numpy).

StableHLO goes in, a :class:`Plan` of kernels with placed buffers comes out; a backend's
own stages turn the plan into code. Nothing here imports llvmlite or any extension.

Stages (:mod:`oxla.lowering.pipeline`, an explicit list): ``verify``, ``prepare`` (the
policy's IR passes), ``fusion`` (:mod:`~oxla.lowering.fusion`, driven by the backend's
**policy**), ``scheduling`` (:mod:`~oxla.lowering.scheduling`, peak memory),
``buffer-assignment`` (:mod:`~oxla.lowering.buffers`, one arena, in-place reuse), then
the backend's stages (codegen, JIT, executable). Kernels describe themselves
(:class:`Kernel`: ``reads``, ``writes``, ``in_place_inputs``, ``has_effect``); effects
come from the op table's ``SIDE_EFFECT``/``COLLECTIVE`` traits.

What a new backend writes, and nothing else::

    # 1. a policy: which ops it fuses, which go to its libraries, how dots run
    class GPUPolicy(PolicyBase):
        name = "mygpu"
        def is_fusible(self, op): return op.name in rules_for("mygpu")
        def classify(self, op): return "dot" if op.name == "stablehlo.dot_general" else None
        def dot_kernels(self, op, vbuf, n, counter): return [DotKernel(...)]
        def prepare(self, module, options):          # IR passes before fusion
            return run_pipeline(module, "default"), ["core pipeline: default"]
        def stages(self):                            # codegen, load, executable
            return [Stage("codegen", emit), Stage("executable", make_executable)]

    # 2. a target (oxla_codegen_llvm.Target): index space, address spaces, vector
    #    width, math library -- what the shared kernel emitter asks
    # 3. a runtime: how the emitted code is loaded and launched (a thread pool, a
    #    driver API)
    # 4. an executable (oxla.protocols.Executable): __call__, save, stats

    # and its compile() is one line:
    exe = lowering.pipeline.run(module, GPUPolicy(), GPUTarget.device(), options)

The cpu backend (``oxla_backend_cpu.policy.CPUPolicy``) is the worked example.
"""

from __future__ import annotations

from oxla.lowering import pipeline
from oxla.lowering.buffers import assign_best, assign_buffers, distinct_locations, location
from oxla.lowering.control import (
    CONTROL_OPS,
    captured_values,
    control_kernel,
    invariant_kernels,
)
from oxla.lowering.dots import (
    GemmDims,
    blas_operand,
    dot_dims,
    dot_operand_indices,
    gemm_dims,
)
from oxla.lowering.effects import has_effect, op_has_effect
from oxla.lowering.fusion import (
    LOWERED_OPS,
    check_static,
    classify,
    fuse,
    fuse_block,
    leaves,
    unsupported,
)
from oxla.lowering.pipeline import Compilation, Stage
from oxla.lowering.plan import (
    Buf,
    ControlKernel,
    DotKernel,
    Kernel,
    KernelBase,
    LoopKernel,
    OpKernel,
    PackKernel,
    Plan,
    kernel_reads,
    kernel_writes,
)
from oxla.lowering.policy import Policy, PolicyBase
from oxla.lowering.scheduling import dependences, schedule
from oxla.lowering.shapes import (
    is_same_index_op,
    is_splat_constant,
    nbytes,
    same_index_inputs,
    shape_of,
    window_update,
)

__all__ = [
    "CONTROL_OPS", "LOWERED_OPS", "Buf", "Compilation", "ControlKernel", "DotKernel",
    "GemmDims", "Kernel", "KernelBase", "blas_operand", "dot_dims", "dot_operand_indices",
    "gemm_dims",
    "LoopKernel", "OpKernel", "PackKernel", "Plan", "Policy", "PolicyBase", "Stage",
    "assign_best", "assign_buffers", "captured_values", "check_static", "classify",
    "control_kernel", "dependences", "distinct_locations", "fuse", "fuse_block",
    "has_effect", "invariant_kernels", "is_same_index_op", "is_splat_constant", "kernel_reads", "kernel_writes",
    "leaves", "location", "nbytes", "op_has_effect", "pipeline", "same_index_inputs",
    "schedule", "shape_of", "unsupported", "window_update",
]
