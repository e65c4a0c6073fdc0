"""hipFFT for ``stablehlo.fft`` on a real AMD GPU, without one: the binding
(:mod:`oxla_backend_hip.hipfft`, pointer plan handles, loaded from ``$ROCM_PATH/lib``)
against a direct-DFT stand-in with hipFFT's entry points, compared with numpy; and the
error when ROCm's hipfft is missing."""

from __future__ import annotations

import ctypes
import ctypes.util

import pytest
from oxla_backend_hip import hipfft
from oxla_backend_hip.hip import HIPDevice

from oxla.errors import OxlaError
from tests.backend_cuda.test_cufft import check_vendor_fft, fake_fft_library  # noqa: F401


def test_hipfft_calls_on_stand_in_library(fake_fft_library, monkeypatch):  # noqa: F811
    monkeypatch.setenv("ROCM_PATH", str(fake_fft_library.parent.parent))
    hipfft.load_library.cache_clear()
    try:
        fft = hipfft.HipFFT(None, None)
        check_vendor_fft(fft, ctypes.CDLL(str(fake_fft_library)), ctypes.c_void_p(0x5678))
    finally:
        hipfft.load_library.cache_clear()


def test_missing_hipfft_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("ROCM_PATH", "/nonexistent")
    if ctypes.util.find_library("hipfft"):
        pytest.skip("a system hipFFT is on the loader's path")
    hipfft.load_library.cache_clear()
    try:
        with pytest.raises(OxlaError, match=r"hipFFT is not loadable \(libhipfft.so: install "
                                            r"ROCm's hipfft"):
            hipfft.load_library()
    finally:
        hipfft.load_library.cache_clear()


def test_real_device_has_an_fft_step():
    """The executable's fft step asks the device for ``fft``; the HIP device has it."""
    assert callable(getattr(HIPDevice, "fft", None))
