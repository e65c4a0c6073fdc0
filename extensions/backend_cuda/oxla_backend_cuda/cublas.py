"""cuBLAS for the plan's dots: a ctypes binding to the ``nvidia-cublas`` wheel's
``libcublas``. The call's arguments from a row-major GEMM (:func:`dot_call`) and their
semantics in numpy (:func:`gemm_reference`, what the simulated device runs) are shared
with the hip backend: :mod:`oxla_codegen_llvm.gpu.gemm` (re-exported here).
"""

from __future__ import annotations

import ctypes
import functools
import os

from oxla_codegen_llvm.gpu.gemm import OP_N, OP_T, GemmCall, dot_call, gemm_reference

from oxla.errors import OxlaError

__all__ = ["OP_N", "OP_T", "CuBLAS", "GemmCall", "dot_call", "gemm_reference", "load_library",
           "version"]
CUDA_TYPES = {"f32": 0, "f64": 1}  # cudaDataType: CUDA_R_32F, CUDA_R_64F
COMPUTE_TYPES = {"f32": 68, "f64": 70}  # cublasComputeType_t: CUBLAS_COMPUTE_32F / _64F
GEMM_DEFAULT = -1  # cublasGemmAlgo_t
SYMBOLS = ("cublasCreate_v2", "cublasDestroy_v2", "cublasSetStream_v2",
           "cublasGemmStridedBatchedEx", "cublasSetMathMode", "cublasGetProperty",
           "cublasSscal_v2_64", "cublasDscal_v2_64")


def library_path(name: str = "libcublas.so.13", folder: str = "cu13") -> str:
    """The path of a library of the ``nvidia-*`` wheels (``nvidia/<folder>/lib``: ``cu13``
    for the CUDA 13 wheels, ``nccl`` for NCCL's), else the bare name for the system's
    loader."""
    try:
        import nvidia
    except ImportError:
        return name
    for base in getattr(nvidia, "__path__", []):
        path = os.path.join(base, folder, "lib", name)
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
    for name in ("cublasSscal_v2_64", "cublasDscal_v2_64"):
        getattr(lib, name).argtypes = [ptr, i64, ptr, ptr, i64]
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

    def scal(self, ptr: int, count: int, factor: float, dtype: str, stream: int) -> None:
        """``x[i] *= factor`` for the ``count`` reals (f32/f64) at ``ptr`` on ``stream``
        (``cublasSscal_v2_64``/``cublasDscal_v2_64``; the inverse FFTs' scale)."""
        lib, h = self._lib, self._handle
        self._check(lib.cublasSetStream_v2(h, ctypes.c_void_p(stream)), "cublasSetStream")
        name = "cublasDscal_v2_64" if dtype == "f64" else "cublasSscal_v2_64"
        scalar = ctypes.c_double if dtype == "f64" else ctypes.c_float
        self._check(getattr(lib, name)(h, count, ctypes.byref(scalar(factor)), ptr, 1), name)
