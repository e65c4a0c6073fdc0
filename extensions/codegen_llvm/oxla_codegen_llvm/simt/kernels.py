"""``kernels_for``: the GPU kernels of one plan kernel, by kind."""

from __future__ import annotations

from oxla.errors import NotSupportedError
from oxla.lowering import LoopKernel, PackKernel, Plan
from oxla_codegen_llvm.simt.conv import conv_kernel
from oxla_codegen_llvm.simt.linalg import cholesky_kernel, triangular_solve_kernel
from oxla_codegen_llvm.simt.loop import loop_kernel, pack_kernel
from oxla_codegen_llvm.simt.model import Kernel
from oxla_codegen_llvm.simt.ops import (
    barrier_kernel,
    bitcast_kernel,
    dot_kernel,
    map_kernel,
    real_dynamic_slice_kernel,
    reduce_window_kernel,
)
from oxla_codegen_llvm.simt.reduce import reduce_kernel
from oxla_codegen_llvm.simt.rng import rng_kernel
from oxla_codegen_llvm.simt.scatter import scatter_kernel, select_and_scatter_kernel
from oxla_codegen_llvm.simt.sort import sort_kernel

OP_KINDS: dict[str, object] = {
    "stablehlo.reduce": reduce_kernel,
    "stablehlo.reduce_window": reduce_window_kernel,
    "stablehlo.dot_general": dot_kernel,
    "stablehlo.dot": dot_kernel,
    "stablehlo.map": map_kernel,
    "stablehlo.optimization_barrier": barrier_kernel,
    "stablehlo.real_dynamic_slice": real_dynamic_slice_kernel,
    "stablehlo.bitcast_convert": bitcast_kernel,
    "stablehlo.scatter": scatter_kernel,
    "stablehlo.sort": sort_kernel,
    "stablehlo.convolution": conv_kernel,
    "stablehlo.select_and_scatter": select_and_scatter_kernel,
    "stablehlo.rng_bit_generator": rng_kernel,
    "stablehlo.triangular_solve": triangular_solve_kernel,
    "stablehlo.cholesky": cholesky_kernel,
}
"""Op name -> the generator of its GPU kernels (for ``OpKernel``s)."""


def claim(op) -> str | None:
    """``op`` for what a GPU policy must take before fusion (a ``bitcast_convert``
    between widths, which no index rule computes), else None."""
    if op.name == "stablehlo.bitcast_convert" and \
            op.operands[0].type.rank != op.results[0].type.rank:
        return "op"
    return None


def kernels_for(kernel, plan: Plan) -> list[Kernel]:
    """GPU kernels for one :mod:`oxla.lowering` plan kernel, in launch order.

    Args:
        kernel: a plan kernel (``LoopKernel``, ``PackKernel``, ``OpKernel``...).
        plan: the plan it belongs to (its ``vbuf`` maps values to buffers).

    Raises:
        NotSupportedError: the kind, or the op of an ``OpKernel``, has no GPU kernel yet
            (the message names it).
    """
    if isinstance(kernel, LoopKernel):
        return loop_kernel(kernel, plan)
    if isinstance(kernel, PackKernel):
        return pack_kernel(kernel, plan)
    op = getattr(kernel, "op", None)
    gen = OP_KINDS.get(op.name) if op is not None else None
    if gen is not None and type(kernel).__name__ == "OpKernel":
        return gen(kernel, plan)
    what = f"'{op.name}' ({type(kernel).__name__})" if op is not None else \
        type(kernel).__name__
    raise NotSupportedError(f"{what} has no GPU kernel yet (oxla_codegen_llvm.simt)",
                            getattr(op, "loc", None))
