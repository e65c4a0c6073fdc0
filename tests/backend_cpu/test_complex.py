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


@pytest.mark.parametrize("n", [7, 64, 1000])
def test_complex64_abs_is_hypot_of_the_parts_over_the_whole_range(n):
    """abs of complex<f32> (computed as sqrt(re*re + im*im) in f64, which vectorizes)
    is hypot in f64 rounded to f32, bit for bit, from subnormal to f32-max parts, and
    inf whenever a part is infinite (also with a NaN part); complex<f64> keeps hypot."""
    from tests.backend_cpu.conftest import compile_cpu

    rng = np.random.default_rng(n)
    with np.errstate(over="ignore"):
        re = (rng.standard_normal(n) * np.exp2(rng.integers(-150, 128, n))).astype(np.float32)
        im = (rng.standard_normal(n) * np.exp2(rng.integers(-150, 128, n))).astype(np.float32)
    sp = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 3.4e38, 1e-45, 1.0], np.float32)
    a, b = np.meshgrid(sp, sp)
    re, im = np.concatenate([re, a.ravel()]), np.concatenate([im, b.ravel()])
    z = (re + 0j).astype(np.complex64)
    z.imag = im
    m = z.size
    for ct, rt, x in (("f32", np.float32, z), ("f64", np.float64, z.astype(np.complex128))):
        text = f"""
func.func @main(%x: tensor<{m}xcomplex<{ct}>>) -> tensor<{m}x{ct}> {{
  %r = stablehlo.abs %x : (tensor<{m}xcomplex<{ct}>>) -> tensor<{m}x{ct}>
  return %r : tensor<{m}x{ct}>
}}"""
        got = compile_cpu(text)(x)[0]
        with np.errstate(over="ignore"):
            want = np.hypot(re.astype(np.float64), im.astype(np.float64)).astype(rt)
        np.testing.assert_array_equal(got, want)
        assert np.isinf(got[-64:][np.isinf(a.ravel()) | np.isinf(b.ravel())]).all()
