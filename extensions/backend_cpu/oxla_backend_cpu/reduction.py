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


# Contiguous elements of each row that one chunk of a column reduction owns (4 KiB of
# f32, a page): with the plain grain (4 columns of an 8192 x 1024 sum over axis 0) every
# chunk walked all 8192 rows for 16 bytes each, and with 256 columns (1 KiB) each row
# segment still started the hardware prefetcher cold: two threads took 8-11 ms where one
# thread streaming whole rows took 2.5-3.3 ms (XLA:CPU 3-4.4 ms in the same runs).
COLUMN_CHUNK = 1024


def column_grain(grain: int, i_shape: list[int]) -> int:
    """The parallel grain (in units of the first kept dimension) of a reduction across
    columns whose contiguous kept tail is ``i_shape``: at least :data:`COLUMN_CHUNK`
    contiguous elements per row and chunk, and at least ``grain``."""
    inner = math.prod(i_shape[1:]) if i_shape else 1
    return max(grain, -(-COLUMN_CHUNK // max(inner, 1)))


SHORT_RUN = 64  # contiguous reduced elements below which a row loop re-reads lines


def interleaved_reduce(shape: list[int] | tuple[int, ...], red: list[int]) -> bool:
    """True for reduced dimensions ``red`` (sorted, the last one innermost) with a kept
    dimension between two of them and a contiguous reduced run at the end shorter than
    :data:`SHORT_RUN` elements: read in memory order (``opkernels``'s
    ``_reduce_in_memory_order``)."""
    if not red or red[-1] != len(shape) - 1:
        return False
    gaps = [d for d in range(red[0], len(shape)) if d not in red]
    if not gaps:
        return False
    return math.prod(shape[gaps[-1] + 1:]) < SHORT_RUN


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
