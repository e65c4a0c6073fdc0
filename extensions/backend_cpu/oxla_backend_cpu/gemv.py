"""Matrix-vector products (a :class:`~oxla.lowering.DotKernel` with ``M = 1`` or
``N = 1``, batch 1) as oxla's own GEMV loops (strategy ``gemv``).

A GEMM call with ``N = 1`` packs the whole matrix into panels and then multiplies one
column: it read a 2048 x 2048 f32 matrix at 1.5 GB/s (10.8 ms against XLA:CPU's 0.74
ms). A GEMV only streams the matrix once, so it is memory-bound; two forms cover every
layout of the matrix ``W`` (the operand that is not the vector ``v``):

* ``dot``: ``W`` is ``[R, K]`` (contraction contiguous): ``y[r] = sum_k W[r, k] v[k]``,
  :data:`ROWS` rows at a time, each row's sum one vectorized reduction in the same loop
  (``v`` is loaded once per block; partial accumulators, as the vectorize hint allows:
  the order of a dot's sum is unspecified by the spec, as BLAS's is);
* ``axpy``: ``W`` is ``[K, R]`` (outputs contiguous): ``y[r] += W[k, r] v[k]`` for each
  ``k`` in order over a block of :data:`COLS` outputs (vectorized across the outputs,
  every output summed in index order, as the interpreter does).

Both run their blocks on oxla's parallel-for (:mod:`oxla_backend_cpu.parallel`) when the
matrix is large enough (:func:`gemv_parallel`).
"""

from __future__ import annotations

import llvmlite.ir as ir
from oxla_codegen_llvm import for_range
from oxla_codegen_llvm.fused import load, store

from oxla.ir import types as T
from oxla.lowering import DotKernel
from oxla_backend_cpu.parallel import grain_for, worth_parallel

I64 = ir.IntType(64)
ROWS = 8  # rows of a dot-form block: v is loaded once per 8 row sums
COLS = 1024  # outputs of an axpy-form block: 4 KiB rows of W (a page: see reduction.py)


def _c(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def is_gemv(batch: int, m: int, n: int) -> bool:
    """True for a dot that :mod:`oxla_backend_cpu.gemv` computes: one GEMM (batch 1)
    whose ``M`` or ``N`` is 1."""
    return batch == 1 and (m == 1 or n == 1)


def gemv_form(k: DotKernel) -> tuple[str, int, bool]:
    """``(form, R, w_is_lhs)`` of GEMV kernel ``k``: ``form`` is ``dot`` or ``axpy``
    (module doc), ``R`` the number of outputs, ``w_is_lhs`` whether the matrix is the
    dot's lhs (``N = 1``) rather than its rhs (``M = 1``)."""
    if k.n == 1 and k.m > 1:  # y[M] = A[M,K] x[K]; A stored [K,M] when trans_lhs
        return ("axpy" if k.trans_lhs else "dot"), k.m, True
    # y[N] = x[K] B[K,N]; B stored [N,K] when trans_rhs (also M = N = 1: a dot product)
    return ("dot" if k.trans_rhs or k.n == 1 else "axpy"), k.n, False


def _blocks(k: DotKernel) -> tuple[int, int]:
    """(number of blocks, matrix elements per block) of ``k``'s loop over its outputs."""
    form, r, _ = gemv_form(k)
    per = ROWS if form == "dot" else COLS
    return -(-r // per), per * k.k


def gemv_parallel(k: DotKernel) -> tuple[int, int] | None:
    """``(blocks, grain)`` for a parallel-for over ``k``'s blocks, or None when the
    matrix is too small for threads."""
    nb, per = _blocks(k)
    return (nb, grain_for(nb, per)) if worth_parallel(nb, per) else None


def emit_gemv(s, k: DotKernel, lhs: ir.Value, rhs: ir.Value, out: ir.Value) -> None:
    """Emits GEMV kernel ``k`` into the current (kernel) function: its blocks over
    ``[start, end)`` when the function is parallel (it then takes those two ``i64``
    parameters last), else all of them.

    Args:
        s: the scalar context of the kernel function.
        k: a DotKernel with :func:`is_gemv`; dtype f32 or f64.
        lhs, rhs, out: the kernel's buffer pointers.
    """
    b = s.b
    fn = b.function
    form, r, w_is_lhs = gemv_form(k)
    w, v = (lhs, rhs) if w_is_lhs else (rhs, lhs)
    et = T.FloatType(k.dtype)
    nb, _ = _blocks(k)
    if len(fn.args) >= 2 and fn.args[-1].type == I64:
        fn.oxla_parallel = gemv_parallel(k)  # type: ignore[attr-defined]
        start, end = fn.args[-2], fn.args[-1]
    else:
        start, end = _c(0), _c(nb)
    if form == "dot":
        _emit_dot_form(s, et, w, v, out, r, k.k, start, end)
    else:
        _emit_axpy_form(s, et, w, v, out, r, k.k, start, end)


def _emit_dot_form(s, et, w, v, out, r: int, kk: int, start, end) -> None:
    b = s.b
    ty = ir.FloatType() if et.name == "f32" else ir.DoubleType()
    zero = ir.Constant(ty, 0.0)
    with b.goto_entry_block():
        accs = [b.alloca(ty, name=f"gemv.acc{j}") for j in range(ROWS)]
    full = r // ROWS
    with for_range(b, end, "gemv.blk", start) as blk:
        r0 = b.mul(blk, _c(ROWS), flags=["nsw"])
        with b.if_else(b.icmp_signed("<", blk, _c(full))) as (then, other):
            with then:  # ROWS rows in one pass over v
                for a in accs:
                    b.store(zero, a)
                bases = [b.mul(b.add(r0, _c(j)), _c(kk)) for j in range(ROWS)]
                with for_range(b, kk, "gemv.k", vectorize=True) as i:
                    x = load(s, v, et, i)
                    for a, base in zip(accs, bases):
                        y = b.fmul(load(s, w, et, b.add(base, i, flags=["nsw"])), x)
                        b.store(b.fadd(b.load(a, typ=ty), y), a)
                for j, a in enumerate(accs):
                    store(s, out, et, b.add(r0, _c(j)), b.load(a, typ=ty))
            with other:  # the last r % ROWS rows, one at a time
                with for_range(b, r, "gemv.t", r0) as row:
                    b.store(zero, accs[0])
                    base = b.mul(row, _c(kk))
                    with for_range(b, kk, "gemv.tk", vectorize=True) as i:
                        y = b.fmul(load(s, w, et, b.add(base, i, flags=["nsw"])),
                                   load(s, v, et, i))
                        b.store(b.fadd(b.load(accs[0], typ=ty), y), accs[0])
                    store(s, out, et, row, b.load(accs[0], typ=ty))


def _emit_axpy_form(s, et, w, v, out, r: int, kk: int, start, end) -> None:
    b = s.b
    ty = ir.FloatType() if et.name == "f32" else ir.DoubleType()
    zero = ir.Constant(ty, 0.0)
    with for_range(b, end, "gemv.blk", start) as blk:
        c0 = b.mul(blk, _c(COLS), flags=["nsw"])
        c1 = b.select(b.icmp_signed("<", b.add(c0, _c(COLS)), _c(r)),
                      b.add(c0, _c(COLS)), _c(r))
        with for_range(b, c1, "gemv.z", c0) as c:
            store(s, out, et, c, zero)
        with for_range(b, kk, "gemv.k") as i:
            x = load(s, v, et, i)
            base = b.mul(i, _c(r), flags=["nsw"])
            with for_range(b, c1, "gemv.c", c0) as c:
                y = b.fmul(load(s, w, et, b.add(base, c, flags=["nsw"])), x)
                store(s, out, et, c, b.fadd(load(s, out, et, c), y))
