"""complex64/complex128 on the cpu backend against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both

ELEMENTWISE = """
func.func @main(%x: tensor<6xcomplex<T>>, %y: tensor<6xcomplex<T>>, %r: tensor<6xT>)
    -> (tensor<6xcomplex<T>>, tensor<6xT>, tensor<complex<T>>, tensor<6xcomplex<T>>,
        tensor<6xi1>, tensor<6xT>) {
  %a = stablehlo.multiply %x, %y : tensor<6xcomplex<T>>
  %b = stablehlo.divide %a, %x : tensor<6xcomplex<T>>
  %e = stablehlo.exponential %b : tensor<6xcomplex<T>>
  %c = stablehlo.complex %r, %r : tensor<6xcomplex<T>>
  %s = stablehlo.subtract %e, %c : tensor<6xcomplex<T>>
  %q = stablehlo.sqrt %s : tensor<6xcomplex<T>>
  %ab = stablehlo.abs %q : (tensor<6xcomplex<T>>) -> tensor<6xT>
  %z = stablehlo.constant dense<(0.5, -1.0)> : tensor<complex<T>>
  %red = stablehlo.reduce(%q init: %z) applies stablehlo.add across dimensions = [0]
    : (tensor<6xcomplex<T>>, tensor<complex<T>>) -> tensor<complex<T>>
  %l = stablehlo.log %x : tensor<6xcomplex<T>>
  %sn = stablehlo.sine %l : tensor<6xcomplex<T>>
  %cs = stablehlo.cosine %y : tensor<6xcomplex<T>>
  %th = stablehlo.tanh %cs : tensor<6xcomplex<T>>
  %ng = stablehlo.negate %th : tensor<6xcomplex<T>>
  %t = stablehlo.add %ng, %sn : tensor<6xcomplex<T>>
  %eq = stablehlo.compare EQ, %x, %x : (tensor<6xcomplex<T>>, tensor<6xcomplex<T>>) -> tensor<6xi1>
  %im = stablehlo.imag %t : (tensor<6xcomplex<T>>) -> tensor<6xT>
  return %q, %ab, %red, %t, %eq, %im : tensor<6xcomplex<T>>, tensor<6xT>, tensor<complex<T>>,
    tensor<6xcomplex<T>>, tensor<6xi1>, tensor<6xT>
}"""


def _c(rng, n, dt):
    return (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dt)


@pytest.mark.parametrize("part,dt,rtol", [("f32", np.complex64, 2e-6),
                                          ("f64", np.complex128, 1e-13)])
def test_complex_elementwise_reduce_and_compare(part, dt, rtol):
    rng = np.random.default_rng(1)
    real = np.float32 if part == "f32" else np.float64
    _, got = run_both(ELEMENTWISE.replace("T>", f"{part}>").replace("xT>", f"x{part}>")
                      .replace("<T>", f"<{part}>"),
                      [_c(rng, 6, dt), _c(rng, 6, dt), rng.normal(size=6).astype(real)],
                      rtol=rtol, atol=1e-12)
    assert got[0].dtype == dt and got[4].all()


DOT = """
func.func @main(%a: tensor<2x4x3xcomplex<f64>>, %b: tensor<2x3x5xf64>)
    -> tensor<2x4x5xcomplex<f64>> {
  %c = stablehlo.convert %b : (tensor<2x3x5xf64>) -> tensor<2x3x5xcomplex<f64>>
  %d = stablehlo.dot_general %a, %c, batching_dims = [0] x [0], contracting_dims = [2] x [1]
    : (tensor<2x4x3xcomplex<f64>>, tensor<2x3x5xcomplex<f64>>) -> tensor<2x4x5xcomplex<f64>>
  return %d : tensor<2x4x5xcomplex<f64>>
}"""


def test_complex_dot_general_with_batch():
    rng = np.random.default_rng(2)
    a = _c(rng, 24, np.complex128).reshape(2, 4, 3)
    b = rng.normal(size=(2, 3, 5))
    _, got = run_both(DOT, [a, b], rtol=1e-12)
    np.testing.assert_allclose(got[0], a @ b, rtol=1e-12)


MORE_UNARY = """
func.func @main(%x: tensor<8xcomplex<f64>>, %y: tensor<8xcomplex<f64>>)
    -> (tensor<8xcomplex<f64>>, tensor<8xcomplex<f64>>, tensor<8xcomplex<f64>>,
        tensor<8xcomplex<f64>>, tensor<8xcomplex<f64>>, tensor<8xcomplex<f64>>,
        tensor<8xcomplex<f64>>) {
  %0 = stablehlo.exponential_minus_one %x : tensor<8xcomplex<f64>>
  %1 = stablehlo.log_plus_one %x : tensor<8xcomplex<f64>>
  %2 = stablehlo.logistic %x : tensor<8xcomplex<f64>>
  %3 = stablehlo.cbrt %x : tensor<8xcomplex<f64>>
  %4 = stablehlo.atan2 %x, %y : tensor<8xcomplex<f64>>
  %5 = stablehlo.minimum %x, %y : tensor<8xcomplex<f64>>
  %6 = stablehlo.maximum %x, %y : tensor<8xcomplex<f64>>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<8xcomplex<f64>>, tensor<8xcomplex<f64>>,
    tensor<8xcomplex<f64>>, tensor<8xcomplex<f64>>, tensor<8xcomplex<f64>>,
    tensor<8xcomplex<f64>>, tensor<8xcomplex<f64>>
}"""


@pytest.mark.parametrize("part,dt,rtol", [("f32", np.complex64, 2e-6),
                                          ("f64", np.complex128, 1e-13)])
def test_complex_expm1_log1p_logistic_cbrt_atan2_minmax(part, dt, rtol):
    rng = np.random.default_rng(2)
    x, y = _c(rng, 8, dt), _c(rng, 8, dt)
    x[:3] = [complex(1, 2), complex(1, -1), complex(np.nan, 0)]  # ties and a NaN part
    y[:3] = [complex(1, 3), complex(1, -1), complex(0, 0)]
    _, got = run_both(MORE_UNARY.replace("f64>", f"{part}>"), [x, y], rtol=rtol, atol=1e-12)
    assert got[5][0] == x[0] and got[6][0] == y[0] and np.isnan(got[5][2].real)
