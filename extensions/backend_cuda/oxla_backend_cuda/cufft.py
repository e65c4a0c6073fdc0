"""cuFFT for ``stablehlo.fft``: the ``nvidia-cufft`` wheel's ``libcufft`` by ctypes,
optional (loaded at a GPU's first FFT; the error names the wheel when it is missing).
The plans and calls are :class:`oxla_codegen_llvm.gpu.fft.VendorFft`'s (shared with
hipFFT); the call's arguments and their numpy semantics (what the simulated device
runs) are :mod:`oxla_codegen_llvm.gpu.fft`'s.

A plan is made per distinct transform before the program runs (``cufftPlanMany``
allocates its work area, which a stream capture forbids), so a program with an FFT runs
step by step rather than as one graph.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any

from oxla_codegen_llvm.gpu.fft import EXEC_SUFFIX, TYPES, FftAbi, VendorFft, bind_fft

from oxla.errors import OxlaError
from oxla_backend_cuda.cublas import library_path

LIBRARY = "libcufft.so.12"
WHEEL = "nvidia-cufft==12.0.0.61"
ABI = FftAbi(prefix="cufft", handle=ctypes.c_int, result="cufftResult")
EXEC = {key: "cufft" + suffix for key, suffix in EXEC_SUFFIX.items()}
__all__ = ["ABI", "EXEC", "LIBRARY", "TYPES", "WHEEL", "CuFFT", "load_library"]


@functools.cache
def load_library() -> ctypes.CDLL:
    """``libcufft`` (needs no driver), its entry points declared.

    Raises:
        OxlaError: the library is missing (names the wheel).
    """
    try:
        return bind_fft(ctypes.CDLL(library_path(LIBRARY)), ABI)
    except OSError as exc:
        raise OxlaError(f"cuFFT is not loadable (install {WHEEL}): {exc}") from None


class CuFFT(VendorFft):
    """cuFFT plans on the current context (needs a GPU); ``copy`` and ``scale`` as
    :class:`~oxla_codegen_llvm.gpu.fft.VendorFft`'s (a cuBLAS ``Sscal``/``Dscal``)."""

    def __init__(self, copy: Callable[[int, int, int, Any], None],
                 scale: Callable[[int, int, float, str, int], None]):
        super().__init__(load_library(), ABI, copy, scale)
