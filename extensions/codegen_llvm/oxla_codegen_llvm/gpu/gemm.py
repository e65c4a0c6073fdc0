"""The plan's GEMMs as one column-major BLAS call, and that call's semantics in numpy.

cuBLAS, rocBLAS and hipBLAS share the convention: column-major. A row-major
``C[M,N] = A[M,K] B[K,N]`` is, read column-major, ``C^T[N,M] = B^T[N,K] A^T[K,M]``: one
strided-batched GEMM with ``m=N, n=M, k=K``, the rhs as the library's first operand and
the lhs as its second, each transposed (``OP_T``) exactly when the plan's operand is laid
out transposed (:func:`dot_call`). Both a real library call and :func:`gemm_reference`
(what a simulated device runs) read only the :class:`GemmCall`, so a simulated run checks
the arguments the GPU would get.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from oxla.errors import NotSupportedError, OxlaError

OP_N, OP_T = 0, 1  # cublasOperation_t; rocBLAS's and hipBLAS's enums are mapped from these
NUMPY_TYPES = {"f32": np.float32, "f64": np.float64}
INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class GemmCall:
    """The arguments of one strided-batched GEMM (``cublasGemmStridedBatchedEx``,
    ``rocblas_gemm_strided_batched_ex``) (column-major; strides and
    leading dimensions in elements; pointers are device addresses). For each batch
    ``i < batch``: ``C_i = alpha op(A_i) op(B_i) + beta C_i`` with ``op(A_i)`` ``m x k``,
    ``op(B_i)`` ``k x n``, ``C_i`` ``m x n``, ``X_i`` at ``X + i * stride_x`` elements."""

    transa: int
    transb: int
    m: int
    n: int
    k: int
    a: int
    lda: int
    stride_a: int
    b: int
    ldb: int
    stride_b: int
    c: int
    ldc: int
    stride_c: int
    batch: int
    dtype: str  # "f32" | "f64": A, B, C and the compute type
    alpha: float = 1.0
    beta: float = 0.0


def dot_call(batch: int, m: int, n: int, k: int, trans_lhs: bool, trans_rhs: bool,
             dtype: str, lhs: int, rhs: int, out: int) -> GemmCall:
    """The BLAS call of the row-major ``out[B,M,N] = lhs[B,M,K] rhs[B,K,N]``, where
    ``trans_lhs`` means lhs is laid out ``[B,K,M]`` and ``trans_rhs`` that rhs is
    ``[B,N,K]`` (:class:`oxla.lowering.DotKernel`). Needs ``m, n, k >= 1``.

    Raises:
        NotSupportedError: a dimension above ``2**31 - 1`` (the BLAS libraries take ``int``).
    """
    if max(m, n, k, batch) > INT_MAX:
        raise NotSupportedError(f"a GEMM of {batch}x{m}x{n}x{k} exceeds the BLAS libraries' int sizes")
    return GemmCall(transa=OP_T if trans_rhs else OP_N, transb=OP_T if trans_lhs else OP_N,
                    m=n, n=m, k=k,
                    a=rhs, lda=k if trans_rhs else n, stride_a=n * k,
                    b=lhs, ldb=m if trans_lhs else k, stride_b=m * k,
                    c=out, ldc=n, stride_c=m * n, batch=batch, dtype=dtype)


def _operand(view: Callable[[int, int], np.ndarray], ptr: int, trans: int, rows: int,
             cols: int, ld: int, stride: int, batch: int, dt: np.dtype) -> np.ndarray:
    """``op(X_i)`` for every batch, ``[batch, rows, cols]``, read from column-major
    ``X`` (``X_i`` is ``rows x cols`` for ``OP_N``, ``cols x rows`` for ``OP_T``)."""
    sr, sc = (rows, cols) if trans == OP_N else (cols, rows)  # as stored
    if ld < max(1, sr):
        raise OxlaError(f"BLAS: leading dimension {ld} < {sr} rows")
    span = ((batch - 1) * stride + (sc - 1) * ld + sr) * dt.itemsize
    mem = view(ptr, span).view(dt)
    x = np.lib.stride_tricks.as_strided(mem, (batch, sr, sc), (
        stride * dt.itemsize, dt.itemsize, ld * dt.itemsize), writeable=False)
    return x if trans == OP_N else x.transpose(0, 2, 1)


def gemm_reference(call: GemmCall, view: Callable[[int, int], np.ndarray]) -> None:
    """What ``cublasGemmStridedBatchedEx`` computes, on memory that ``view(ptr, nbytes)``
    maps to a writable ``uint8`` array (the simulated device's). ``beta == 0`` never
    reads ``C`` (its NaNs do not propagate), as cuBLAS and rocBLAS document."""
    dt = np.dtype(NUMPY_TYPES[call.dtype])
    if call.batch == 0 or call.m == 0 or call.n == 0:
        return
    a = _operand(view, call.a, call.transa, call.m, call.k, call.lda, call.stride_a,
                 call.batch, dt)
    b = _operand(view, call.b, call.transb, call.k, call.n, call.ldb, call.stride_b,
                 call.batch, dt)
    if call.ldc < call.m:
        raise OxlaError(f"BLAS: ldc {call.ldc} < m {call.m}")
    span = ((call.batch - 1) * call.stride_c + (call.n - 1) * call.ldc + call.m) * dt.itemsize
    cmem = view(call.c, span).view(dt)
    c = np.lib.stride_tricks.as_strided(cmem, (call.batch, call.m, call.n), (
        call.stride_c * dt.itemsize, dt.itemsize, call.ldc * dt.itemsize))
    prod = np.matmul(a, b) if call.k else np.zeros(c.shape, dt)
    result = dt.type(call.alpha) * prod
    if call.beta != 0:
        result = result + dt.type(call.beta) * c
    c[...] = result
