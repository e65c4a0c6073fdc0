"""oxla-codegen-llvm: fused StableHLO loop nests to LLVM IR through llvmlite.

Shared by the CPU backend and, later, the NVPTX/AMDGPU ones; target details live
behind :class:`Target`. Importing this package imports llvmlite.
"""

from __future__ import annotations

from oxla_codegen_llvm import quant  # noqa: F401 - registers the quantized element kind
from oxla_codegen_llvm.fused import FusedEmitter, is_fusible, load, shape_of, store
from oxla_codegen_llvm.jit import JitModule, compile_ir
from oxla_codegen_llvm.loops import for_range, linearize, loop_nest
from oxla_codegen_llvm.rules import RULES, register
from oxla_codegen_llvm.scalar import EMITTERS, Scalar, llvm_type, storage_type
from oxla_codegen_llvm.target import CPUTarget, Target

__all__ = [
    "CPUTarget",
    "EMITTERS",
    "RULES",
    "FusedEmitter",
    "JitModule",
    "Scalar",
    "Target",
    "compile_ir",
    "for_range",
    "is_fusible",
    "linearize",
    "llvm_type",
    "load",
    "loop_nest",
    "register",
    "shape_of",
    "storage_type",
    "store",
]
