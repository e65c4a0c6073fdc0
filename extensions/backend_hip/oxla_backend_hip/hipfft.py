"""hipFFT for ``stablehlo.fft`` on AMD GPUs: ROCm's ``libhipfft.so`` by ctypes, optional
(loaded at a GPU's first FFT; the error says which ROCm package provides it). hipFFT
spells cuFFT's plan API with a ``hipfft`` prefix and pointer handles, so the plans and
calls are :class:`oxla_codegen_llvm.gpu.fft.VendorFft`'s, as the cuda backend's are; the
inverse transforms' scale is rocBLAS's ``scal``.

Written against hipFFT's C signatures (ROCm 6.x) and checked here against a stand-in
library with the same entry points (tests/hip/test_hipfft.py); never run on an AMD GPU.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any

from oxla_codegen_llvm.gpu.fft import FftAbi, VendorFft, bind_fft

from oxla_backend_hip.rocblas import load_rocm_library

LIBRARY = "libhipfft.so"
ABI = FftAbi(prefix="hipfft", handle=ctypes.c_void_p, result="hipfftResult")


@functools.cache
def load_library() -> ctypes.CDLL:
    """``libhipfft.so`` from ``$ROCM_PATH/lib``, ``/opt/rocm/lib`` or the loader's path,
    its entry points declared.

    Raises:
        OxlaError: hipFFT is missing (ROCm's hipfft package; Debian 12 has none).
    """
    return bind_fft(load_rocm_library(LIBRARY, "hipFFT", "hipfft",
                                      "stablehlo.fft on AMD GPUs needs"), ABI)


class HipFFT(VendorFft):
    """hipFFT plans on the current device (needs an AMD GPU); ``copy`` and ``scale`` as
    :class:`~oxla_codegen_llvm.gpu.fft.VendorFft`'s."""

    def __init__(self, copy: Callable[[int, int, int, Any], None],
                 scale: Callable[[int, int, float, str, int], None]):
        super().__init__(load_library(), ABI, copy, scale)
