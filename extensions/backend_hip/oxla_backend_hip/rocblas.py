"""rocBLAS for the plan's dots: a ctypes binding to ROCm's ``librocblas.so``
(``rocblas_gemm_strided_batched_ex``), optional at import and named in the error when
missing. The call's arguments (:class:`~oxla_codegen_llvm.gpu.gemm.GemmCall`, column-major
as cuBLAS's) and their numpy semantics, which the simulated device runs, are shared with
the cuda backend (:mod:`oxla_codegen_llvm.gpu.gemm`).
"""

from __future__ import annotations

import ctypes
import functools
import os

from oxla_codegen_llvm.gpu.gemm import OP_N, OP_T, GemmCall

from oxla.errors import OxlaError

OPERATIONS = {OP_N: 111, OP_T: 112}  # rocblas_operation_none / _transpose
DATATYPES = {"f32": 151, "f64": 152}  # rocblas_datatype_f32_r / _f64_r
GEMM_STANDARD = 0  # rocblas_gemm_algo_standard
LIBRARY = "librocblas.so"


def load_rocm_library(name: str, title: str, package: str, need: str) -> ctypes.CDLL:
    """ROCm's library ``name`` from ``$ROCM_PATH/lib``, ``/opt/rocm/lib`` or the loader's
    path.

    Raises:
        OxlaError: none loads; the message names the library (``title``), ROCm's
            ``package`` and what ``need`` s it.
    """
    dirs = [os.environ.get("ROCM_PATH", "/opt/rocm") + "/lib", "/opt/rocm/lib"]
    for path in [os.path.join(d, name) for d in dirs] + [name]:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    raise OxlaError(f"{title} is not loadable ({name}: install ROCm's {package}, e.g. under "
                    f"/opt/rocm; {need} it)")


@functools.cache
def load_library() -> ctypes.CDLL:
    """``librocblas.so`` (:func:`load_rocm_library`).

    Raises:
        OxlaError: rocBLAS is missing (ROCm's rocblas package; Debian 12 has none).
    """
    lib = load_rocm_library(LIBRARY, "rocBLAS", "rocblas", "dots on AMD GPUs need")
    ptr, i32, i64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64
    lib.rocblas_gemm_strided_batched_ex.argtypes = [
        ptr, i32, i32, i32, i32, i32, ptr, ptr, i32, i32, i64, ptr, i32, i32, i64, ptr,
        ptr, i32, i32, i64, ptr, i32, i32, i64, i32, i32, i32, i32, ctypes.c_uint32]
    lib.rocblas_gemm_strided_batched_ex.restype = i32
    lib.rocblas_create_handle.argtypes = [ctypes.POINTER(ptr)]
    lib.rocblas_set_stream.argtypes = [ptr, ptr]
    for name in ("rocblas_sscal", "rocblas_dscal"):
        getattr(lib, name).argtypes = [ptr, i32, ptr, ptr, i32]
        getattr(lib, name).restype = i32
    return lib


class RocBLAS:
    """A rocBLAS handle (needs an AMD GPU). rocBLAS computes f32 GEMMs in f32 (no
    reduced-precision modes are turned on)."""

    def __init__(self):
        self._lib = load_library()
        self._handle = ctypes.c_void_p()
        self._check(self._lib.rocblas_create_handle(ctypes.byref(self._handle)),
                    "rocblas_create_handle")

    @staticmethod
    def _check(status: int, what: str) -> None:
        if status != 0:
            raise OxlaError(f"{what} failed with rocblas_status {status}")

    def gemm(self, call: GemmCall, stream: int) -> None:
        """Runs ``call`` on ``stream`` (a ``hipStream_t`` as an integer); C is written in
        place (``D = C``)."""
        lib, h = self._lib, self._handle
        self._check(lib.rocblas_set_stream(h, ctypes.c_void_p(stream)), "rocblas_set_stream")
        scalar = ctypes.c_double if call.dtype == "f64" else ctypes.c_float
        alpha, beta = scalar(call.alpha), scalar(call.beta)
        t = DATATYPES[call.dtype]
        self._check(lib.rocblas_gemm_strided_batched_ex(
            h, OPERATIONS[call.transa], OPERATIONS[call.transb], call.m, call.n, call.k,
            ctypes.byref(alpha), call.a, t, call.lda, call.stride_a, call.b, t, call.ldb,
            call.stride_b, ctypes.byref(beta), call.c, t, call.ldc, call.stride_c, call.c, t,
            call.ldc, call.stride_c, call.batch, t, GEMM_STANDARD, 0, 0),
            "rocblas_gemm_strided_batched_ex")

    def scal(self, ptr: int, count: int, factor: float, dtype: str, stream: int) -> None:
        """``x[i] *= factor`` for the ``count`` reals (f32/f64) at ``ptr`` on ``stream``
        (``rocblas_sscal``/``rocblas_dscal``, in chunks of at most 2**31 - 1 elements:
        their count is an ``int``; the inverse FFTs' scale)."""
        lib, h = self._lib, self._handle
        self._check(lib.rocblas_set_stream(h, ctypes.c_void_p(stream)), "rocblas_set_stream")
        name = "rocblas_dscal" if dtype == "f64" else "rocblas_sscal"
        scalar = ctypes.c_double if dtype == "f64" else ctypes.c_float
        item, step = (8 if dtype == "f64" else 4), 2**31 - 1
        for start in range(0, count, step):
            self._check(getattr(lib, name)(h, min(step, count - start),
                                           ctypes.byref(scalar(factor)),
                                           ctypes.c_void_p(ptr + start * item), 1), name)
