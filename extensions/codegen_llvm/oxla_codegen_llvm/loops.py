"""Loop-nest building blocks for llvmlite's IRBuilder."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager

import llvmlite.ir as ir

I64 = ir.IntType(64)
# The vector loop made from a loop of at least this many iterations (known when emitted)
# is not unrolled (``llvm.loop.vectorize.followup_vectorized`` = unroll disabled): the
# vectorizer already interleaves it (up to 4 vectors per iteration), and unrolling the
# vector loop again multiplied the code that instruction selection has to handle
# (softmax's max loop became 8 x 4 x 16 lanes). Measured on softmax and layer norm over
# [4096, 1024]: LLVM's -O3 plus code generation 28-40% shorter. A plain
# ``llvm.loop.unroll.disable`` on the loop would also turn interleaving off (LLVM reads
# it as interleave count 1), which made softmax 1.3x slower.
NO_UNROLL_TRIP_COUNT = 64


def vectorize_hint(b: ir.IRBuilder, latch: ir.Instruction) -> None:
    """Marks the loop whose back edge is ``latch`` with ``llvm.loop.vectorize.enable``.

    Besides asking for vectorization, the hint lets LLVM's loop vectorizer reorder a
    floating-point reduction in the loop (several partial accumulators, combined at the
    end) without any fast-math flag on the arithmetic: the order of a ``reduce`` is
    unspecified by the StableHLO spec, while every other op keeps its exact semantics.
    """
    loop_hint(b, latch, "llvm.loop.vectorize.enable", ir.Constant(ir.IntType(1), 1))


def loop_hint(b: ir.IRBuilder, latch: ir.Instruction, name: str,
              value: ir.Constant | None, *more: tuple[str, ir.Constant | None]) -> None:
    """Attaches loop metadata ``!{name, value}`` (e.g. ``llvm.loop.interleave.count``,
    ``i32 1``; ``!{name}`` when ``value`` is None), and each further ``(name, value)``
    pair of ``more``, to the loop whose back edge is ``latch``, under a fresh loop ID."""
    module = b.module
    hints = tuple(module.add_metadata([ir.MetaDataString(module, k)]
                                      + ([] if v is None else [v]))
                  for k, v in ((name, value), *more))
    # A loop ID refers to itself; a unique placeholder keeps llvmlite from sharing it.
    n = getattr(module, "_oxla_loop_ids", 0)
    module._oxla_loop_ids = n + 1  # type: ignore[attr-defined]
    loop_id = module.add_metadata([ir.MetaDataString(module, f"oxla.loop.{n}")])
    loop_id.operands = (loop_id, *hints)
    latch.set_metadata("llvm.loop", loop_id)


@contextmanager
def for_range(b: ir.IRBuilder, n: int | ir.Value, name: str = "i",
              start: int | ir.Value = 0, vectorize: bool = False,
              hints: Sequence[tuple[str, ir.Value | None]] = ()) -> Iterator[ir.Value]:
    """``for (i = start; i < n; ++i)``: yields ``i`` (i64); the body is emitted inside.

    A simple induction variable (one phi, ``+1 nsw``, a signed compare), which is the
    form LLVM's loop vectorizer recognizes. The builder is left after the loop on exit.
    ``vectorize`` adds :func:`vectorize_hint` (only for reduction loops); a constant
    trip count of at least :data:`NO_UNROLL_TRIP_COUNT` keeps its vector loop from being
    unrolled, and a loop whose body branches (an outer loop) is never unrolled. ``hints``:
    more loop metadata (``("llvm.loop.parallel_accesses", group)``, see :func:`loop_hint`).
    """
    stop = ir.Constant(I64, n) if isinstance(n, int) else n
    first = ir.Constant(I64, start) if isinstance(start, int) else start
    pre = b.block
    header = b.append_basic_block(f"{name}.head")
    body = b.append_basic_block(f"{name}.body")
    end = b.append_basic_block(f"{name}.end")
    b.branch(header)
    b.position_at_end(header)
    i = b.phi(I64, name=name)
    i.add_incoming(first, pre)
    b.cbranch(b.icmp_signed("<", i, stop), body, end)
    b.position_at_end(body)
    blocks = len(b.function.blocks)
    yield i
    nested = len(b.function.blocks) > blocks  # the body has loops or branches of its own
    nxt = b.add(i, ir.Constant(I64, 1), name=f"{name}.next", flags=["nsw"])
    i.add_incoming(nxt, b.block)
    latch = b.branch(header)
    hints = list(hints)
    if vectorize:
        hints.append(("llvm.loop.vectorize.enable", ir.Constant(ir.IntType(1), 1)))
    if nested:  # unrolling would copy the inner loops (GEMM epilogues: 5 copies)
        hints.append(("llvm.loop.unroll.disable", None))
    elif isinstance(n, int) and isinstance(start, int) and n - start >= NO_UNROLL_TRIP_COUNT:
        module = b.module
        no_unroll = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")])
        hints.append(("llvm.loop.vectorize.followup_vectorized", no_unroll))
    if hints:
        loop_hint(b, latch, *hints[0], *hints[1:])
    b.position_at_end(end)


@contextmanager
def loop_nest(b: ir.IRBuilder, shape: Sequence[int], name: str = "d",
              outer: tuple[ir.Value, ir.Value] | None = None,
              vectorize_inner: bool = False) -> Iterator[list]:
    """Nested ``for_range`` over ``shape`` (row-major, outermost first); yields the
    index list (empty for rank 0: the body runs once).

    ``outer = (start, end)`` restricts the outermost dimension to ``[start, end)`` (a
    chunk of a parallel loop, see :mod:`oxla_codegen_llvm.parallel`).
    ``vectorize_inner`` puts :func:`vectorize_hint` on the innermost loop.
    """
    with _nest(b, list(shape), [], name, outer, vectorize_inner) as idx:
        yield idx


@contextmanager
def _nest(b, shape, acc, name, outer=None, vec=False):
    if not shape:
        yield acc
        return
    start, stop = outer if outer is not None else (0, shape[0])
    with for_range(b, stop, f"{name}{len(acc)}", start, vec and len(shape) == 1) as i, \
            _nest(b, shape[1:], acc + [i], name, None, vec) as idx:
        yield idx


@contextmanager
def tiled_loop_nest(b: ir.IRBuilder, shape: Sequence[int], p: int, tile: int,
                    name: str = "t",
                    outer: tuple[ir.Value, ir.Value] | None = None) -> Iterator[list]:
    """:func:`loop_nest` over ``shape`` with dimension ``p`` and the last one taken in
    ``tile`` x ``tile`` blocks (cache blocking for a fusion that reads an operand
    transposed: the rows it touches in one block stay in L1 between the block's rows).

    The order is the dimensions before ``p``, the blocks of ``p``, the dimensions between,
    the blocks of the last one, then ``p`` and the last one within the block (the last
    innermost, contiguous in the output). ``outer = (start, end)`` restricts dimension 0
    to a chunk of a parallel loop, as in :func:`loop_nest` (its blocks then start at
    ``start``). Yields the index list; every index of ``shape`` is visited once.

    Raises:
        ValueError: ``p`` is not a dimension before the last, or ``tile < 1``.
    """
    q = len(shape) - 1
    if not 0 <= p < q or tile < 1:
        raise ValueError(f"expected 0 <= p < {q} and tile >= 1, got p={p}, tile={tile}")
    step = ir.Constant(I64, tile)
    idx: list = [None] * len(shape)
    with ExitStack() as stack:
        def blocks(d: int) -> tuple[ir.Value, ir.Value]:
            lo, hi = outer if outer is not None and d == 0 else (
                ir.Constant(I64, 0), ir.Constant(I64, shape[d]))
            n = b.sdiv(b.add(b.sub(hi, lo), ir.Constant(I64, tile - 1)), step)
            t = stack.enter_context(for_range(b, n, f"{name}{d}b"))
            t0 = b.add(lo, b.mul(t, step, flags=["nsw"]), flags=["nsw"])
            t1 = b.add(t0, step, flags=["nsw"])
            return t0, b.select(b.icmp_signed("<", t1, hi), t1, hi)

        for d in range(len(shape)):
            if d == p:
                p0, p1 = blocks(d)
            elif d == q:
                q0, q1 = blocks(d)
                idx[p] = stack.enter_context(for_range(b, p1, f"{name}{p}", p0))
                idx[q] = stack.enter_context(for_range(b, q1, f"{name}{q}", q0))
            else:
                start, stop = outer if outer is not None and d == 0 else (0, shape[d])
                idx[d] = stack.enter_context(for_range(b, stop, f"{name}{d}", start))
        yield idx


def linearize(b: ir.IRBuilder, idx: Sequence[ir.Value], shape: Sequence[int]) -> ir.Value:
    """Row-major flat offset (i64) of index ``idx`` in a tensor of ``shape``."""
    off = ir.Constant(I64, 0)
    for i, d in zip(idx, shape):
        off = b.add(b.mul(off, ir.Constant(I64, d), flags=["nsw"]), i, flags=["nsw"])
    return off


def delinearize(b: ir.IRBuilder, flat: ir.Value, shape: Sequence[int]) -> list[ir.Value]:
    """The inverse of :func:`linearize`: the index of flat offset ``flat`` in ``shape``."""
    out: list[ir.Value] = []
    for d in reversed(shape):
        c = ir.Constant(I64, d)
        out.append(b.urem(flat, c) if d != 1 else ir.Constant(I64, 0))
        flat = b.udiv(flat, c) if d != 1 else flat
    return out[::-1]
