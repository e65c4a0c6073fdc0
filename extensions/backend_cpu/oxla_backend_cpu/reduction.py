"""What the reduction emitters share (:mod:`oxla_backend_cpu.opkernels`'s ``reduce``,
the row kernels of :mod:`oxla_backend_cpu.rowemit` and :mod:`oxla_backend_cpu.rowlib`):
when a reduction is vectorized, when it runs on threads, and ``freeze``."""

from __future__ import annotations

import math

from llvmlite.ir.instructions import Instruction
from oxla_codegen_llvm import shape_of

from oxla_backend_cpu.parallel import grain_for, worth_parallel

VECTOR_REDUCE_BODIES = ("stablehlo.add", "stablehlo.multiply", "stablehlo.maximum",
                        "stablehlo.minimum", "stablehlo.and", "stablehlo.or")


def reduce_parallel(op) -> tuple[int, int] | None:
    """``(n, grain)`` for a parallel-for over the outermost result dimension of a
    ``reduce`` (each chunk reduces whole rows, so the order within a row is kept), or
    None when the work is too small for threads."""
    out_shape = shape_of(op.results[0])
    if not out_shape:
        return None
    n = out_shape[0]
    per = max(1, math.prod(shape_of(op.operands[0])) // max(n, 1))
    return (n, grain_for(n, per)) if worth_parallel(n, per) else None


def vector_reduce(op, red: list[int], rank: int) -> bool:
    """True for a one-operand reduce over the innermost (contiguous) dimension whose body
    is one associative op: its inner loop gets the vectorize hint (partial accumulators;
    the spec leaves the order of a reduction unspecified)."""
    ops = list(op.regions[0].blocks[0].ops)
    return (len(op.results) == 1 and bool(red) and red[-1] == rank - 1 and len(ops) == 2
            and ops[0].name in VECTOR_REDUCE_BODIES)


MINMAX = ("stablehlo.maximum", "stablehlo.minimum")


def freeze(b, v):
    """``freeze v``: the same value (a row element is never poison), but opaque to
    InstCombine, which otherwise folds ``max(acc, select(mask, x, -inf))`` (a causal or
    padding mask) into the conditional ``select(mask, max(acc, x), acc)``, a reduction
    LLVM's loop vectorizer does not recognise for ``llvm.maximum``/``minimum``: the
    row's max then ran as a scalar chain (10x slower than the unmasked softmax)."""
    instr = Instruction(b.block, v.type, "freeze", [v])
    b._insert(instr)
    return instr
