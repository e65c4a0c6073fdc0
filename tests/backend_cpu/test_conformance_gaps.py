"""Ops the conformance suite found missing on cpu, each against the interpreter:
integer ``power``, ``composite``, ``bitcast_convert`` across widths, ``dynamic_gather``
with constant slice sizes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both

POWER = """
func.func @main(%x: tensor<64xT>, %e: tensor<64xT>) -> tensor<64xT> {
  %p = stablehlo.power %x, %e : tensor<64xT>
  return %p : tensor<64xT>
}"""


@pytest.mark.parametrize("t,dt", [("i8", np.int8), ("i32", np.int32), ("i64", np.int64),
                                  ("ui16", np.uint16), ("ui64", np.uint64)])
def test_integer_power_wraps_like_the_interpreter(t, dt):
    rng = np.random.default_rng(0)
    lo = -3 if np.issubdtype(dt, np.signedinteger) else 0
    x = rng.integers(lo, 9, 64).astype(dt)
    e = rng.integers(lo, 70, 64).astype(dt)
    x[:4], e[:4] = np.array([1, -1 if lo else 2, 0, 7]).astype(dt), np.array(
        [lo, lo, 0, 63]).astype(dt)
    _, got = run_both(POWER.replace("T>", f"{t}>"), [x, e])
    assert got[0][2] == 1  # 0 ** 0


COMPOSITE = """
func.func @gelu.impl(%x: tensor<5xf32>, %k: tensor<5xf32>) -> tensor<5xf32> {
  %t = stablehlo.tanh %x : tensor<5xf32>
  %m = stablehlo.multiply %t, %k : tensor<5xf32>
  func.return %m : tensor<5xf32>
}

func.func @main(%x: tensor<5xf32>) -> tensor<5xf32> {
  %k = stablehlo.constant dense<2.0> : tensor<5xf32>
  %0 = stablehlo.composite "my.gelu" %x, %k {
    composite_attributes = { approximate = true },
    decomposition = @gelu.impl
  } : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %1 = stablehlo.add %0, %x : tensor<5xf32>
  return %1 : tensor<5xf32>
}"""


def test_composite_runs_its_decomposition():
    x = np.linspace(-2, 2, 5, dtype=np.float32)
    _, got = run_both(COMPOSITE, [x])
    np.testing.assert_allclose(got[0], 2 * np.tanh(x) + x, rtol=1e-6)


BITCAST = """
func.func @main(%b: tensor<3x64xi1>, %w: tensor<3xi64>, %f: tensor<4x2xf32>,
                %c: tensor<2xcomplex<f64>>, %q: tensor<5x2xi4>)
    -> (tensor<3xi64>, tensor<3x64xi1>, tensor<4xf64>, tensor<4x8xui8>,
        tensor<2x2xcomplex<f32>>, tensor<5xi8>, tensor<3x16xi4>, tensor<2xcomplex<f64>>) {
  %0 = stablehlo.bitcast_convert %b : (tensor<3x64xi1>) -> tensor<3xi64>
  %1 = stablehlo.bitcast_convert %w : (tensor<3xi64>) -> tensor<3x64xi1>
  %2 = stablehlo.bitcast_convert %f : (tensor<4x2xf32>) -> tensor<4xf64>
  %3 = stablehlo.bitcast_convert %2 : (tensor<4xf64>) -> tensor<4x8xui8>
  %4 = stablehlo.bitcast_convert %c : (tensor<2xcomplex<f64>>) -> tensor<2x2xcomplex<f32>>
  %5 = stablehlo.bitcast_convert %q : (tensor<5x2xi4>) -> tensor<5xi8>
  %6 = stablehlo.bitcast_convert %w : (tensor<3xi64>) -> tensor<3x16xi4>
  %7 = stablehlo.bitcast_convert %c : (tensor<2xcomplex<f64>>) -> tensor<2xcomplex<f64>>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<3xi64>, tensor<3x64xi1>, tensor<4xf64>,
    tensor<4x8xui8>, tensor<2x2xcomplex<f32>>, tensor<5xi8>, tensor<3x16xi4>,
    tensor<2xcomplex<f64>>
}"""


def test_bitcast_convert_across_widths_packs_little_endian():
    import ml_dtypes

    rng = np.random.default_rng(3)
    b = rng.integers(0, 2, (3, 64)).astype(bool)
    w = rng.integers(-2**62, 2**62, 3, dtype=np.int64)
    f = rng.normal(size=(4, 2)).astype(np.float32)
    c = (rng.normal(size=2) + 1j * rng.normal(size=2)).astype(np.complex128)
    q = rng.integers(-8, 8, (5, 2)).astype(ml_dtypes.int4)
    _, got = run_both(BITCAST, [b, w, f, c, q])
    assert got[0][0] == int(np.packbits(b[0], bitorder="little").view("<i8")[0])
    np.testing.assert_array_equal(got[2].view(np.float32).reshape(4, 2), f)
    np.testing.assert_array_equal(got[7], c)
