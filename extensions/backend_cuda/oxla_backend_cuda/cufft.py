"""cuFFT for ``stablehlo.fft``: a ctypes binding to the ``nvidia-cufft`` wheel's
``libcufft``, optional (loaded at a GPU's first FFT; the error names the wheel when it is
missing). The call's arguments and its numpy semantics (what the simulated device runs)
are :mod:`oxla_codegen_llvm.gpu.fft`'s.

A plan is made per distinct transform before the program runs (``cufftPlanMany``
allocates its work area, which a stream capture forbids), so a program with an FFT runs
step by step rather than as one graph.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any

from oxla_codegen_llvm.gpu.fft import FftCall

from oxla.errors import OxlaError
from oxla_backend_cuda.cublas import library_path

LIBRARY = "libcufft.so.12"
WHEEL = "nvidia-cufft==12.0.0.61"
TYPES = {("c2c", "f32"): 0x29, ("r2c", "f32"): 0x2A, ("c2r", "f32"): 0x2C,
         ("c2c", "f64"): 0x69, ("r2c", "f64"): 0x6A, ("c2r", "f64"): 0x6C}  # cufftType_t


@functools.cache
def load_library() -> ctypes.CDLL:
    """``libcufft`` (needs no driver).

    Raises:
        OxlaError: the library is missing (names the wheel).
    """
    try:
        lib = ctypes.CDLL(library_path(LIBRARY))
    except OSError as exc:
        raise OxlaError(f"cuFFT is not loadable (install {WHEEL}): {exc}") from None
    c_int, ptr = ctypes.c_int, ctypes.c_void_p
    lib.cufftPlanMany.argtypes = [ctypes.POINTER(c_int), c_int, ctypes.POINTER(c_int),
                                  ptr, c_int, c_int, ptr, c_int, c_int, c_int, c_int]
    lib.cufftSetStream.argtypes = [c_int, ptr]
    lib.cufftDestroy.argtypes = [c_int]
    for name in ("cufftExecC2C", "cufftExecZ2Z"):
        getattr(lib, name).argtypes = [c_int, ptr, ptr, c_int]
    for name in ("cufftExecR2C", "cufftExecD2Z", "cufftExecC2R", "cufftExecZ2D"):
        getattr(lib, name).argtypes = [c_int, ptr, ptr]
    return lib


EXEC = {("c2c", "f32"): "cufftExecC2C", ("c2c", "f64"): "cufftExecZ2Z",
        ("r2c", "f32"): "cufftExecR2C", ("r2c", "f64"): "cufftExecD2Z",
        ("c2r", "f32"): "cufftExecC2R", ("c2r", "f64"): "cufftExecZ2D"}


class CuFFT:
    """cuFFT plans on the current context, one per distinct transform (needs a GPU).

    ``copy(dst, src, nbytes, stream)`` (the device's device-to-device copy, on the
    ``CUstream``) and ``scale(ptr, count, factor, dtype, stream)`` (a cuBLAS
    ``Sscal``/``Dscal``, on the stream's integer handle) are passed in.
    """

    def __init__(self, copy: Callable[[int, int, int, Any], None],
                 scale: Callable[[int, int, float, str, int], None]):
        self._lib = load_library()
        self._plans: dict[tuple, int] = {}
        self._copy, self._scale = copy, scale

    def _plan(self, call: FftCall) -> int:
        key = (call.kind, call.dtype, call.n, call.batch)
        plan = self._plans.get(key)
        if plan is None:
            handle = ctypes.c_int()
            n = (ctypes.c_int * len(call.n))(*call.n)
            status = self._lib.cufftPlanMany(ctypes.byref(handle), len(call.n), n, None, 1, 0,
                                             None, 1, 0, TYPES[(call.kind, call.dtype)], call.batch)
            _check(status, "cufftPlanMany")
            plan = self._plans[key] = handle.value
        return plan

    def run(self, call: FftCall, stream: Any) -> None:
        """Runs ``call`` (copy, transform, scale) on ``stream`` (a ``CUstream``)."""
        if call.batch == 0:
            return
        plan = self._plan(call)
        handle = int(stream)
        _check(self._lib.cufftSetStream(plan, ctypes.c_void_p(handle)), "cufftSetStream")
        if call.kind == "c2r":
            self._copy(call.work, call.src, call.in_bytes, stream)
        fn = getattr(self._lib, EXEC[(call.kind, call.dtype)])
        args = [plan, call.in_place_input, call.dst]
        if call.kind == "c2c":
            args.append(call.direction)
        _check(fn(*args), EXEC[(call.kind, call.dtype)])
        if call.scale != 1.0:
            item = 8 if call.dtype == "f64" else 4
            self._scale(call.dst, call.out_bytes // item, call.scale, call.dtype, handle)

    def close(self) -> None:
        for plan in self._plans.values():
            self._lib.cufftDestroy(plan)
        self._plans.clear()


def _check(status: int, what: str) -> None:
    if status != 0:
        raise OxlaError(f"{what} failed with cufftResult {status}")
