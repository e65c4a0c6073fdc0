"""The cpu backend against the interpreter on the ops and element types beyond plain
elementwise code: halves and sub-byte ints, variadic reduce, scatter, gather,
concatenate, pad, dynamic slices."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, run_both

RNG = np.random.default_rng(1)


@pytest.mark.parametrize("ty,dt", [("f16", np.float16), ("bf16", ml_dtypes.bfloat16)])
def test_half_types_round_like_the_interpreter(ty, dt):
    text = f"""
func.func @main(%a: tensor<64x{ty}>, %b: tensor<64x{ty}>, %c: tensor<64xf64>) -> (
    tensor<64x{ty}>, tensor<64x{ty}>, tensor<64xi32>, tensor<64x{ty}>, tensor<64xi16>) {{
  %0 = stablehlo.multiply %a, %b : tensor<64x{ty}>
  %1 = stablehlo.add %0, %a : tensor<64x{ty}>
  %2 = stablehlo.exponential %1 : tensor<64x{ty}>
  %3 = stablehlo.convert %1 : (tensor<64x{ty}>) -> tensor<64xi32>
  %4 = stablehlo.convert %c : (tensor<64xf64>) -> tensor<64x{ty}>
  %5 = stablehlo.bitcast_convert %1 : (tensor<64x{ty}>) -> tensor<64xi16>
  return %1, %2, %3, %4, %5 : tensor<64x{ty}>, tensor<64x{ty}>, tensor<64xi32>,
    tensor<64x{ty}>, tensor<64xi16>
}}"""
    a = (RNG.standard_normal(64) * 3).astype(dt)
    b = (RNG.standard_normal(64) * 3).astype(dt)
    a[:4] = [np.inf, -np.inf, np.nan, 0]
    c = np.concatenate([RNG.standard_normal(30) * 1e-6, RNG.standard_normal(28) * 1e4,
                        [1e6, -1e6, 65519.99, 65520.0, 2.0 ** -25, 3 * 2.0 ** -26]])
    exe = compile_cpu(text)
    got = exe(a, b, c)
    from oxla.interpreter import InterpreterBackend
    from oxla.ir import parse_module

    want = InterpreterBackend().compile(parse_module(text))(a, b, c)
    # Correctly rounded ops and conversions: bitwise (NaN payloads aside).
    for j in (0, 2, 3):
        g, w = np.asarray(got[j]), np.asarray(want[j])
        same = (g.view(np.uint16) == w.view(np.uint16)) if g.dtype.itemsize == 2 else g == w
        nan = np.isnan(g.astype(np.float32)) & np.isnan(w.astype(np.float32)) \
            if j != 2 else np.zeros(g.shape, bool)
        assert np.all(same | nan), (j, g, w)
    np.testing.assert_allclose(got[1].astype(np.float64), np.asarray(want[1], np.float64),
                               rtol=2 ** -7, equal_nan=True)


def test_sub_byte_integers_wrap():
    text = """
func.func @main(%a: tensor<16xi4>, %b: tensor<16xi4>, %c: tensor<16xui4>, %d: tensor<4xi2>)
    -> (tensor<16xi4>, tensor<16xi4>, tensor<16xui4>, tensor<16xi32>, tensor<4xi2>) {
  %0 = stablehlo.add %a, %b : tensor<16xi4>
  %1 = stablehlo.multiply %a, %b : tensor<16xi4>
  %2 = stablehlo.add %c, %c : tensor<16xui4>
  %3 = stablehlo.convert %a : (tensor<16xi4>) -> tensor<16xi32>
  %4 = stablehlo.negate %d : tensor<4xi2>
  return %0, %1, %2, %3, %4 : tensor<16xi4>, tensor<16xi4>, tensor<16xui4>, tensor<16xi32>,
    tensor<4xi2>
}"""
    a = np.arange(-8, 8).astype(ml_dtypes.int4)
    b = np.arange(7, -9, -1).astype(ml_dtypes.int4)
    c = np.arange(16).astype(ml_dtypes.uint4)
    d = np.array([-2, -1, 0, 1]).astype(ml_dtypes.int2)
    run_both(text, [a, b, c, d])


def test_argmax_variadic_reduce():
    text = """
func.func @main(%x: tensor<5x7xf32>) -> (tensor<5xf32>, tensor<5xi32>) {
  %i = stablehlo.iota dim = 1 : tensor<5x7xi32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.reduce(%x init: %ninf), (%i init: %z) across dimensions = [1] :
      (tensor<5x7xf32>, tensor<5x7xi32>, tensor<f32>, tensor<i32>) -> (tensor<5xf32>, tensor<5xi32>)
    reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<i32>, %d: tensor<i32>) {
      %gt = stablehlo.compare GT, %a, %c, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %eq = stablehlo.compare EQ, %a, %c, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %lt = stablehlo.compare LT, %b, %d, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %t = stablehlo.and %eq, %lt : tensor<i1>
      %keep = stablehlo.or %gt, %t : tensor<i1>
      %v = stablehlo.select %keep, %a, %c : tensor<i1>, tensor<f32>
      %j = stablehlo.select %keep, %b, %d : tensor<i1>, tensor<i32>
      stablehlo.return %v, %j : tensor<f32>, tensor<i32>
    }
  return %r#0, %r#1 : tensor<5xf32>, tensor<5xi32>
}"""
    x = RNG.standard_normal((5, 7)).astype(np.float32)
    x[2, 3] = x[2, 5] = 9.0
    _, got = run_both(text, [x])
    np.testing.assert_array_equal(got[1], np.argmax(x, axis=1))


def test_scatter_add_with_repeated_and_out_of_bounds_indices():
    text = """
func.func @main(%x: tensor<6x3xf32>, %i: tensor<5x1xi32>, %u: tensor<5x3xf32>) -> tensor<6x3xf32> {
  %r = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<
      update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0],
      index_vector_dim = 1>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) : (tensor<6x3xf32>, tensor<5x1xi32>, tensor<5x3xf32>) -> tensor<6x3xf32>
  return %r : tensor<6x3xf32>
}"""
    x = RNG.standard_normal((6, 3)).astype(np.float32)
    i = np.array([[1], [4], [1], [-1], [6]], np.int32)
    u = RNG.standard_normal((5, 3)).astype(np.float32)
    _, got = run_both(text, [x, i, u])
    want = x.copy()
    want[1] += u[0] + u[2]
    want[4] += u[1]
    np.testing.assert_allclose(got[0], want, rtol=1e-6)


def test_gather_concatenate_pad_dynamic_slices():
    text = """
func.func @main(%x: tensor<5x4xi32>, %i: tensor<3x2xi64>, %s: tensor<i32>, %y: tensor<2x4xi32>)
    -> (tensor<3x2x2xi32>, tensor<7x4xi32>, tensor<10x11xi32>, tensor<2x3xi32>, tensor<5x4xi32>) {
  %g = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<
      offset_dims = [1, 2], start_index_map = [0, 1], index_vector_dim = 1>,
      slice_sizes = array<i64: 2, 2>}> : (tensor<5x4xi32>, tensor<3x2xi64>) -> tensor<3x2x2xi32>
  %c = stablehlo.concatenate %x, %y, dim = 0 : (tensor<5x4xi32>, tensor<2x4xi32>) -> tensor<7x4xi32>
  %z = stablehlo.constant dense<-7> : tensor<i32>
  %p = stablehlo.pad %x, %z, low = [1, -1], high = [0, 2], interior = [1, 2] :
      (tensor<5x4xi32>, tensor<i32>) -> tensor<10x11xi32>
  %d = stablehlo.dynamic_slice %x, %s, %s, sizes = [2, 3] : (tensor<5x4xi32>, tensor<i32>,
      tensor<i32>) -> tensor<2x3xi32>
  %u = stablehlo.dynamic_update_slice %x, %y, %s, %s : (tensor<5x4xi32>, tensor<2x4xi32>,
      tensor<i32>, tensor<i32>) -> tensor<5x4xi32>
  return %g, %c, %p, %d, %u : tensor<3x2x2xi32>, tensor<7x4xi32>, tensor<10x11xi32>,
    tensor<2x3xi32>, tensor<5x4xi32>
}"""
    x = np.arange(20, dtype=np.int32).reshape(5, 4)
    y = -np.arange(8, dtype=np.int32).reshape(2, 4)
    i = np.array([[0, 0], [4, 3], [-2, 1]], np.int64)
    for s in (1, 3, -5, 100):
        run_both(text, [x, i, np.array(s, np.int32), y])


def test_reduce_window_padding_dilations():
    text = """
func.func @main(%x: tensor<6x5xf32>) -> (tensor<3x3xf32>, tensor<6x5xf32>) {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %s = "stablehlo.reduce_window"(%x, %z) <{window_dimensions = array<i64: 2, 2>,
      window_strides = array<i64: 2, 2>, base_dilations = array<i64: 1, 1>,
      window_dilations = array<i64: 2, 1>, padding = dense<[[1, 1], [0, 1]]> : tensor<2x2xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %r = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %r : tensor<f32>
  }) : (tensor<6x5xf32>, tensor<f32>) -> tensor<3x3xf32>
  %t = "stablehlo.reduce_window"(%x, %m) <{window_dimensions = array<i64: 3, 3>,
      base_dilations = array<i64: 2, 2>, window_strides = array<i64: 2, 2>,
      padding = dense<1> : tensor<2x2xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %r = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %r : tensor<f32>
  }) : (tensor<6x5xf32>, tensor<f32>) -> tensor<6x5xf32>
  return %s, %t : tensor<3x3xf32>, tensor<6x5xf32>
}"""
    run_both(text, [RNG.standard_normal((6, 5)).astype(np.float32)])
