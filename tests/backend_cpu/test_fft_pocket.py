"""cpu ``fft`` replays pocketfft (XLA's and scipy's FFT): its results equal the
interpreter's (scipy.fft in the operand's precision) bit for bit, so the conformance
files' 3-ULP checks against XLA hold (Bluestein lengths included); lines too long to
unroll fall back to the f64 DFT (accurate, not bitwise)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu

sfft = pytest.importorskip("scipy.fft")
P = pytest.importorskip("oxla_backend_cpu.pocketfft")

RNG = np.random.default_rng(17)
LENGTHS = list(range(1, 34)) + [40, 45, 48, 49, 51, 53, 64, 77, 89, 96, 101, 121, 128, 169,
                                 211]  # 89, 101, 211: Bluestein (complex; 211 real too)


def _cplx(shape, dt):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dt)


@pytest.mark.parametrize("rt,ct", [(np.float32, np.complex64), (np.float64, np.complex128)])
def test_model_matches_scipy_bitwise(rt, ct):
    """The numpy replay of the plans equals scipy.fft exactly, every kind and length."""
    for n in LENGTHS:
        x = _cplx((5, n), ct)
        np.testing.assert_array_equal(P.reference(x, "FFT", (n,)), sfft.fft(x), err_msg=n)
        np.testing.assert_array_equal(P.reference(x, "IFFT", (n,)), sfft.ifft(x), err_msg=n)
        xr = RNG.standard_normal((5, n)).astype(rt)
        np.testing.assert_array_equal(P.reference(xr, "RFFT", (n,)), sfft.rfft(xr), err_msg=n)
        h = sfft.rfft(RNG.standard_normal((5, n))).astype(ct)
        np.testing.assert_array_equal(P.reference(h, "IRFFT", (n,)), sfft.irfft(h, n),
                                      err_msg=n)


def test_plan_choice():
    assert P.cfft_factors(16) == [2, 8] and P.rfft_factors(32) == [2, 4, 4]
    assert P.cfft_factors(33) == [3, 11] and P.rfft_factors(17) == [17]
    assert P.good_size_cmplx(101) == 105 and P.good_size_cmplx(177) == 180
    # pocketfft's cost model: 53 and 51 stay direct, 89 goes Bluestein unless real
    assert not P.uses_bluestein(53) and not P.uses_bluestein(51)
    assert P.uses_bluestein(89) and not P.uses_bluestein(89, real=True)
    assert P.uses_bluestein(211, real=True)


def _fft_text(kind, xt, yt, length, shape):
    out = list(shape)
    if kind == "RFFT":
        out[-1] = length[-1] // 2 + 1
    if kind == "IRFFT":
        out[-1] = length[-1]
    ts = "x".join(map(str, shape)) + "x" + xt
    to = "x".join(map(str, out)) + "x" + yt
    return f"""
func.func @main(%x: tensor<{ts}>) -> tensor<{to}> {{
  %r = stablehlo.fft %x, type = {kind}, length = {list(length)} : (tensor<{ts}>) -> tensor<{to}>
  return %r : tensor<{to}>
}}"""


CASES = [
    ("RFFT", "f32", "complex<f32>", [17], (3, 4, 17)),
    ("RFFT", "f64", "complex<f64>", [17], (2, 17)),
    ("IRFFT", "complex<f64>", "f64", [33], (3, 17)),
    ("IRFFT", "complex<f32>", "f32", [15, 16, 32], (2, 15, 16, 17)),
    ("FFT", "complex<f32>", "complex<f32>", [16, 12], (2, 16, 12)),
    ("IFFT", "complex<f64>", "complex<f64>", [7, 13], (7, 13)),
    ("IFFT", "complex<f32>", "complex<f32>", [1, 22], (3, 1, 22)),
    ("RFFT", "f32", "complex<f32>", [6, 10], (2, 6, 10)),
    ("FFT", "complex<f64>", "complex<f64>", [11], (4, 11)),
    ("FFT", "complex<f32>", "complex<f32>", [101], (2, 101)),  # Bluestein
    ("IFFT", "complex<f64>", "complex<f64>", [89], (2, 89)),  # Bluestein
    ("RFFT", "f32", "complex<f32>", [53], (3, 53)),
]


@pytest.mark.parametrize("kind,xt,yt,length,shape", CASES)
def test_cpu_fft_bitwise_equals_interpreter(kind, xt, yt, length, shape):
    from oxla.interpreter import InterpreterBackend
    from oxla.ir import parse_module

    text = _fft_text(kind, xt, yt, length, shape)
    dt = {"f32": np.float32, "f64": np.float64, "complex<f32>": np.complex64,
          "complex<f64>": np.complex128}[xt]
    x = RNG.standard_normal(shape).astype(dt) if xt in ("f32", "f64") else _cplx(shape, dt)
    got = compile_cpu(text)(x)[0]
    want = np.asarray(InterpreterBackend().compile(parse_module(text, "t.mlir"))(x)[0])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_too_long_lines_fall_back_to_accurate_dft():
    assert not P.supported(211, False)  # Bluestein through n2 = 440: 40768 ops
    text = _fft_text("FFT", "complex<f64>", "complex<f64>", [211], (2, 211))
    x = _cplx((2, 211), np.complex128)
    np.testing.assert_allclose(compile_cpu(text)(x)[0], np.fft.fft(x), rtol=1e-12, atol=1e-12)


def test_long_lines_compile_in_reasonable_code():
    """n = 1024 (38150 scalar ops per line) is replayed bit for bit through a shared
    per-line function, not a DFT; n = 2048 complex exceeds MAX_OPS."""
    assert P.supported(1024, False) and P.op_count(1024, False) <= P.MAX_OPS
    assert not P.supported(2048, False) and P.supported(2048, True)
    text = _fft_text("FFT", "complex<f32>", "complex<f32>", [1024], (3, 1024))
    x = _cplx((3, 1024), np.complex64)
    np.testing.assert_array_equal(compile_cpu(text)(x)[0], sfft.fft(x))
