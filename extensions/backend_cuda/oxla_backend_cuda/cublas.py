"""cuBLAS for the plan's dots: the call's arguments from a row-major GEMM, a ctypes
binding to the ``nvidia-cublas`` wheel's ``libcublas``, and the call's semantics in
numpy (what the simulated device runs).

cuBLAS is column-major. A row-major ``C[M,N] = A[M,K] B[K,N]`` is, read column-major,
``C^T[N,M] = B^T[N,K] A^T[K,M]``: one ``cublasGemmStridedBatchedEx`` with ``m=N, n=M,
k=K``, the rhs as cuBLAS's first operand and the lhs as its second, each transposed
(``CUBLAS_OP_T``) exactly when the plan's operand is laid out transposed
(:func:`dot_call`). Both the real call and :func:`gemm_reference` read only the
:class:`GemmCall`, so a simulated run checks the arguments the GPU would get.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from oxla.errors import NotSupportedError, OxlaError

OP_N, OP_T = 0, 1  # cublasOperation_t
CUDA_TYPES = {"f32": 0, "f64": 1}  # cudaDataType: CUDA_R_32F, CUDA_R_64F
COMPUTE_TYPES = {"f32": 68, "f64": 70}  # cublasComputeType_t: CUBLAS_COMPUTE_32F / _64F
NUMPY_TYPES = {"f32": np.float32, "f64": np.float64}
GEMM_DEFAULT = -1  # cublasGemmAlgo_t
SYMBOLS = ("cublasCreate_v2", "cublasDestroy_v2", "cublasSetStream_v2",
           "cublasGemmStridedBatchedEx", "cublasSetMathMode", "cublasGetProperty")
INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class GemmCall:
    """The arguments of one ``cublasGemmStridedBatchedEx`` (column-major; strides and
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
    """The cuBLAS call of the row-major ``out[B,M,N] = lhs[B,M,K] rhs[B,K,N]``, where
    ``trans_lhs`` means lhs is laid out ``[B,K,M]`` and ``trans_rhs`` that rhs is
    ``[B,N,K]`` (:class:`oxla.lowering.DotKernel`). Needs ``m, n, k >= 1``.

    Raises:
        NotSupportedError: a dimension above ``2**31 - 1`` (cuBLAS takes ``int``).
    """
    if max(m, n, k, batch) > INT_MAX:
        raise NotSupportedError(f"a GEMM of {batch}x{m}x{n}x{k} exceeds cuBLAS's int sizes")
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
        raise OxlaError(f"cuBLAS: leading dimension {ld} < {sr} rows")
    span = ((batch - 1) * stride + (sc - 1) * ld + sr) * dt.itemsize
    mem = view(ptr, span).view(dt)
    x = np.lib.stride_tricks.as_strided(mem, (batch, sr, sc), (
        stride * dt.itemsize, dt.itemsize, ld * dt.itemsize), writeable=False)
    return x if trans == OP_N else x.transpose(0, 2, 1)


def gemm_reference(call: GemmCall, view: Callable[[int, int], np.ndarray]) -> None:
    """What ``cublasGemmStridedBatchedEx`` computes, on memory that ``view(ptr, nbytes)``
    maps to a writable ``uint8`` array (the simulated device's). ``beta == 0`` never
    reads ``C`` (its NaNs do not propagate), as cuBLAS documents."""
    dt = np.dtype(NUMPY_TYPES[call.dtype])
    if call.batch == 0 or call.m == 0 or call.n == 0:
        return
    a = _operand(view, call.a, call.transa, call.m, call.k, call.lda, call.stride_a,
                 call.batch, dt)
    b = _operand(view, call.b, call.transb, call.k, call.n, call.ldb, call.stride_b,
                 call.batch, dt)
    if call.ldc < call.m:
        raise OxlaError(f"cuBLAS: ldc {call.ldc} < m {call.m}")
    span = ((call.batch - 1) * call.stride_c + (call.n - 1) * call.ldc + call.m) * dt.itemsize
    cmem = view(call.c, span).view(dt)
    c = np.lib.stride_tricks.as_strided(cmem, (call.batch, call.m, call.n), (
        call.stride_c * dt.itemsize, dt.itemsize, call.ldc * dt.itemsize))
    prod = np.matmul(a, b) if call.k else np.zeros(c.shape, dt)
    result = dt.type(call.alpha) * prod
    if call.beta != 0:
        result = result + dt.type(call.beta) * c
    c[...] = result


def library_path(name: str = "libcublas.so.13") -> str:
    """The path of a library of the ``nvidia-*`` cu13 wheels (``nvidia/cu13/lib``), else
    the bare name for the system's loader."""
    try:
        import nvidia
    except ImportError:
        return name
    for base in getattr(nvidia, "__path__", []):
        path = os.path.join(base, "cu13", "lib", name)
        if os.path.exists(path):
            return path
    return name


@functools.cache
def load_library() -> ctypes.CDLL:
    """``libcublas`` (with ``libcublasLt`` loaded first, beside it); needs no driver.

    Raises:
        OxlaError: the library is missing (names the wheel).
    """
    try:
        ctypes.CDLL(library_path("libcublasLt.so.13"), mode=ctypes.RTLD_GLOBAL)
        lib = ctypes.CDLL(library_path("libcublas.so.13"))
    except OSError as exc:
        raise OxlaError(f"cuBLAS is not loadable (install nvidia-cublas==13.0.2.14): {exc}"
                        ) from None
    c_int, ptr, i64 = ctypes.c_int, ctypes.c_void_p, ctypes.c_longlong
    lib.cublasGemmStridedBatchedEx.argtypes = [
        ptr, c_int, c_int, c_int, c_int, c_int, ptr, ptr, c_int, c_int, i64,
        ptr, c_int, c_int, i64, ptr, ptr, c_int, c_int, i64, c_int, c_int, c_int]
    lib.cublasGemmStridedBatchedEx.restype = c_int
    lib.cublasCreate_v2.argtypes = [ctypes.POINTER(ptr)]
    lib.cublasSetStream_v2.argtypes = [ptr, ptr]
    lib.cublasSetMathMode.argtypes = [ptr, c_int]
    return lib


def version() -> int:
    """cuBLAS's major version (``cublasGetProperty(MAJOR_VERSION)``)."""
    v = ctypes.c_int()
    load_library().cublasGetProperty(0, ctypes.byref(v))
    return v.value


class CuBLAS:
    """A cuBLAS handle on the current context (needs a GPU).

    Math mode ``CUBLAS_PEDANTIC_MATH``: no TF32 and no reduced-precision shortcuts, so
    f32 GEMMs round as f32 arithmetic does.
    """

    PEDANTIC_MATH = 2

    def __init__(self):
        self._lib = load_library()
        self._handle = ctypes.c_void_p()
        self._check(self._lib.cublasCreate_v2(ctypes.byref(self._handle)), "cublasCreate")
        self._check(self._lib.cublasSetMathMode(self._handle, self.PEDANTIC_MATH),
                    "cublasSetMathMode")

    @staticmethod
    def _check(status: int, what: str) -> None:
        if status != 0:
            raise OxlaError(f"{what} failed with cublasStatus_t {status}")

    def gemm(self, call: GemmCall, stream: int) -> None:
        """Runs ``call`` on ``stream`` (a ``CUstream`` as an integer)."""
        lib, h = self._lib, self._handle
        self._check(lib.cublasSetStream_v2(h, ctypes.c_void_p(stream)), "cublasSetStream")
        scalar = ctypes.c_double if call.dtype == "f64" else ctypes.c_float
        alpha, beta = scalar(call.alpha), scalar(call.beta)
        t = CUDA_TYPES[call.dtype]
        self._check(lib.cublasGemmStridedBatchedEx(
            h, call.transa, call.transb, call.m, call.n, call.k, ctypes.byref(alpha),
            call.a, t, call.lda, call.stride_a, call.b, t, call.ldb, call.stride_b,
            ctypes.byref(beta), call.c, t, call.ldc, call.stride_c, call.batch,
            COMPUTE_TYPES[call.dtype], GEMM_DEFAULT), "cublasGemmStridedBatchedEx")
