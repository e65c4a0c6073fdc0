"""fft, triangular_solve and cholesky on cpu against the interpreter (both in f64)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(6)


def _c(shape, dt=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dt)


@pytest.mark.parametrize("kind,xt,yt,length,shape", [
    ("FFT", "complex<f64>", "complex<f64>", [8], (3, 8)),
    ("IFFT", "complex<f32>", "complex<f32>", [5, 6], (2, 5, 6)),
    ("RFFT", "f64", "complex<f64>", [4, 7], (4, 7)),
    ("IRFFT", "complex<f64>", "f64", [3, 8], (2, 3, 5)),
    ("IRFFT", "complex<f32>", "f32", [7], (4,)),
])
def test_fft_kinds(kind, xt, yt, length, shape):
    out = list(shape)
    if kind == "RFFT":
        out[-1] = length[-1] // 2 + 1
    if kind == "IRFFT":
        out[-1] = length[-1]
    ts = "x".join(map(str, shape)) + "x" + xt
    to = "x".join(map(str, out)) + "x" + yt
    text = f"""
func.func @main(%x: tensor<{ts}>) -> tensor<{to}> {{
  %r = stablehlo.fft %x, type = {kind}, length = {length} : (tensor<{ts}>) -> tensor<{to}>
  return %r : tensor<{to}>
}}"""
    dt = {"f64": np.float64, "complex<f64>": np.complex128, "complex<f32>": np.complex64}[xt]
    x = RNG.standard_normal(shape).astype(dt) if dt == np.float64 else _c(shape, dt)
    _, got = run_both(text, [x], rtol=1e-5 if "f32" in yt else 1e-9, atol=1e-5)
    assert got[0].shape == tuple(out)


@pytest.mark.parametrize("left,lower,unit,trans", [
    (True, True, False, "NO_TRANSPOSE"), (True, False, True, "TRANSPOSE"),
    (False, True, False, "ADJOINT"), (False, False, False, "NO_TRANSPOSE"),
    (False, True, True, "TRANSPOSE"),
])
def test_triangular_solve_variants(left, lower, unit, trans):
    bshape = "2x4x3" if left else "2x3x4"
    text = f"""
func.func @main(%a: tensor<2x4x4xcomplex<f32>>, %b: tensor<{bshape}xcomplex<f32>>)
    -> tensor<{bshape}xcomplex<f32>> {{
  %r = "stablehlo.triangular_solve"(%a, %b) <{{left_side = {str(left).lower()},
      lower = {str(lower).lower()}, unit_diagonal = {str(unit).lower()},
      transpose_a = #stablehlo<transpose {trans}>}}>
      : (tensor<2x4x4xcomplex<f32>>, tensor<{bshape}xcomplex<f32>>)
      -> tensor<{bshape}xcomplex<f32>>
  return %r : tensor<{bshape}xcomplex<f32>>
}}"""
    a = _c((2, 4, 4), np.complex64) + 4 * np.eye(4, dtype=np.complex64)
    b = _c(tuple(int(d) for d in bshape.split("x")), np.complex64)
    run_both(text, [a, b], rtol=1e-5)


def test_triangular_solve_real_f64_matches_numpy():
    text = """
func.func @main(%a: tensor<5x5xf64>, %b: tensor<5x2xf64>) -> tensor<5x2xf64> {
  %r = "stablehlo.triangular_solve"(%a, %b) <{left_side = true, lower = true,
      unit_diagonal = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>}>
      : (tensor<5x5xf64>, tensor<5x2xf64>) -> tensor<5x2xf64>
  return %r : tensor<5x2xf64>
}"""
    a = RNG.standard_normal((5, 5)) + 5 * np.eye(5)
    b = RNG.standard_normal((5, 2))
    _, got = run_both(text, [a, b], rtol=1e-12)
    np.testing.assert_allclose(got[0], np.linalg.solve(np.tril(a), b), rtol=1e-10)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("dt,np_dt", [("f32", np.float32), ("complex<f64>", np.complex128)])
def test_cholesky(lower, dt, np_dt):
    text = f"""
func.func @main(%a: tensor<3x4x4x{dt}>) -> tensor<3x4x4x{dt}> {{
  %r = stablehlo.cholesky %a, lower = {str(lower).lower()} : tensor<3x4x4x{dt}>
  return %r : tensor<3x4x4x{dt}>
}}"""
    m = RNG.standard_normal((3, 4, 4)) + (1j * RNG.standard_normal((3, 4, 4))
                                           if np_dt == np.complex128 else 0)
    a = (m @ np.conj(np.swapaxes(m, -1, -2)) + 4 * np.eye(4)).astype(np_dt)
    a[2, 0, 0] = -1.0  # not positive definite: NaN where the interpreter has it
    run_both(text, [a], rtol=1e-5)
