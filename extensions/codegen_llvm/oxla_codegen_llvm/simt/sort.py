"""GPU kernel of ``sort``: a stable bitonic sort of each row in shared memory.

One block per row (every dimension but ``dimension``). Shared memory holds the row's
permutation (i32 element indices, padded to a power of two ``P``); each
compare-exchange step of the bitonic network is one region (a barrier between steps),
each thread handling pairs ``t, t + B, ...``. Two elements compare by the comparator
region on every operand's values (read where they are, through the fused emitter), ties
broken by the original index, so the network sorts by a strict total order and the
result is the stable sort's (``is_stable`` or not: a stable result is a valid unstable
one). Padding indices (``>= n``) compare greater than every element. The last region
writes every operand's row permuted.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from oxla.errors import NotSupportedError
from oxla.lowering import OpKernel, Plan
from oxla_codegen_llvm.fused import FusedEmitter, emit_region, shape_of, store
from oxla_codegen_llvm.loops import delinearize, linearize
from oxla_codegen_llvm.simt.model import I32, I64, Kernel, KernelBuilder, Region, strided_loop
from oxla_codegen_llvm.simt.ops import params_of

MAX_ROW = 2048
"""Rows up to this length sort in one block's shared memory (8 KiB of indices)."""
MAX_BLOCK = 256


def _c(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def sort_kernel(k: OpKernel, plan: Plan) -> list[Kernel]:
    """The bitonic sort kernel (module doc).

    Raises:
        NotSupportedError: a row longer than :data:`MAX_ROW`.
    """
    op = k.op
    xs = list(op.operands)
    shape = shape_of(xs[0])
    dim = op.attr("dimension").value
    dim = dim + len(shape) if dim < 0 else dim
    n = shape[dim]
    if n > MAX_ROW:
        raise NotSupportedError(f"'stablehlo.sort' of rows longer than {MAX_ROW} elements "
                                f"({n}) has no GPU kernel yet", op.loc)
    outer = [d for i, d in enumerate(shape) if i != dim]
    rows = math.prod(outer)
    P = 1 << max(0, (n - 1).bit_length())
    B = max(1, min(P // 2, MAX_BLOCK))
    kb = KernelBuilder(k.name, params_of(k, plan), (max(rows, 1), 1, 1), (B, 1, 1), 4 * P)
    if rows == 0 or n == 0:
        return [kb.build()]

    def setup(r: Region) -> tuple[FusedEmitter, list]:
        f = FusedEmitter(r.s, dict(zip(k.inputs, r.params[:len(k.inputs)])))
        return f, delinearize(r.b, r.ctaid(), outer)

    def at(oidx: list, i: ir.Value) -> list:
        idx = list(oidx)
        idx.insert(dim, i)
        return idx

    def slot(r: Region, i: ir.Value) -> ir.Value:
        return r.b.gep(r.shared(), [i], source_etype=I32)

    with kb.region() as r:
        with strided_loop(r.b, r.tid(), P, B, "init") as t:
            r.b.store(r.b.trunc(t, I32), slot(r, t))

    def less(r: Region, f: FusedEmitter, oidx: list, a: ir.Value, c: ir.Value) -> ir.Value:
        """a's element sorts before c's (indices; padding last, ties by index)."""
        b = r.b
        f.reset()
        va = [f.value_at(x, at(oidx, b.select(b.icmp_signed("<", a, _c(n)), a, _c(0))))
              for x in xs]
        vc = [f.value_at(x, at(oidx, b.select(b.icmp_signed("<", c, _c(n)), c, _c(0))))
              for x in xs]
        ac = [v for pair in zip(va, vc) for v in pair]
        ca = [v for pair in zip(vc, va) for v in pair]
        lt = emit_region(r.s, op.regions[0], ac)[0]
        gt = emit_region(r.s, op.regions[0], ca)[0]
        f.reset()
        tie = b.and_(b.not_(gt), b.icmp_signed("<", a, c))
        real = b.or_(lt, tie)
        a_in, c_in = b.icmp_signed("<", a, _c(n)), b.icmp_signed("<", c, _c(n))
        return b.and_(a_in, b.or_(b.not_(c_in), real))

    size = 2
    while size <= P:
        j = size // 2
        while j >= 1:
            with kb.region() as r:
                b = r.b
                f, oidx = setup(r)
                with strided_loop(b, r.tid(), P // 2, B, "pair") as t:
                    i = b.add(b.mul(t, _c(2)), b.neg(b.and_(t, _c(j - 1))))
                    p = b.add(i, _c(j))
                    si, sp = slot(r, i), slot(r, p)
                    a = b.sext(b.load(si, typ=I32), I64)
                    c = b.sext(b.load(sp, typ=I32), I64)
                    up = b.icmp_signed("==", b.and_(i, _c(size)), _c(0))
                    swap = b.select(up, less(r, f, oidx, c, a), less(r, f, oidx, a, c))
                    with b.if_then(swap):
                        b.store(b.trunc(c, I32), si)
                        b.store(b.trunc(a, I32), sp)
            j //= 2
        size *= 2

    with kb.region() as r:
        b = r.b
        f, oidx = setup(r)
        outs = r.params[len(k.inputs):]
        with strided_loop(b, r.tid(), n, B, "out") as t:
            src = b.sext(b.load(slot(r, t), typ=I32), I64)
            f.reset()
            flat = linearize(b, at(oidx, t), shape)
            for out, x in zip(outs, xs):
                store(r.s, out, x.type.element_type, flat, f.value_at(x, at(oidx, src)))
            f.reset()
    return [kb.build()]
