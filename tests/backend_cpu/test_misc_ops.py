"""sort, select_and_scatter, map, real_dynamic_slice, optimization_barrier on cpu
against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(11)


@pytest.mark.parametrize("n", [1, 7, 64])
def test_sort_stable_multi_operand_descending(n):
    text = f"""
func.func @main(%k: tensor<3x{n}xf32>) -> (tensor<3x{n}xf32>, tensor<3x{n}xi32>) {{
  %i = stablehlo.iota dim = 1 : tensor<3x{n}xi32>
  %r:2 = "stablehlo.sort"(%k, %i) <{{dimension = 1 : i64, is_stable = true}}> ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
      %gt = stablehlo.compare GT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %gt : tensor<i1>
  }}) : (tensor<3x{n}xf32>, tensor<3x{n}xi32>) -> (tensor<3x{n}xf32>, tensor<3x{n}xi32>)
  return %r#0, %r#1 : tensor<3x{n}xf32>, tensor<3x{n}xi32>
}}"""
    k = RNG.integers(0, 5, (3, n)).astype(np.float32)  # many ties: stability matters
    _, got = run_both(text, [k])
    np.testing.assert_array_equal(got[1], np.argsort(-k, axis=1, kind="stable"))


def test_sort_along_dimension_zero_ints():
    text = """
func.func @main(%k: tensor<9x2xi32>) -> tensor<9x2xi32> {
  %r = "stablehlo.sort"(%k) <{dimension = 0 : i64}> ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %lt = stablehlo.compare LT, %a, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
  }) : (tensor<9x2xi32>) -> tensor<9x2xi32>
  return %r : tensor<9x2xi32>
}"""
    k = RNG.integers(-50, 50, (9, 2)).astype(np.int32)
    _, got = run_both(text, [k])
    np.testing.assert_array_equal(got[0], np.sort(k, axis=0))


def test_select_and_scatter_max_pool_gradient_with_padding():
    text = """
func.func @main(%x: tensor<5x6xf32>, %g: tensor<3x3xf32>) -> tensor<5x6xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = "stablehlo.select_and_scatter"(%x, %g, %z) <{window_dimensions = array<i64: 2, 3>,
      window_strides = array<i64: 2, 2>, padding = dense<[[1, 0], [1, 0]]> : tensor<2x2xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %ge = stablehlo.compare GE, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %ge : tensor<i1>
  }, {
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) : (tensor<5x6xf32>, tensor<3x3xf32>, tensor<f32>) -> tensor<5x6xf32>
  return %r : tensor<5x6xf32>
}"""
    x = RNG.integers(0, 4, (5, 6)).astype(np.float32)  # ties: the first one wins
    run_both(text, [x, RNG.standard_normal((3, 3)).astype(np.float32)])


def test_map_real_dynamic_slice_optimization_barrier():
    text = """
func.func @main(%x: tensor<4x6xi32>, %y: tensor<4x6xi32>) -> (tensor<4x6xi32>, tensor<2x2xi32>,
    tensor<4x6xi32>, tensor<4x6xi32>) {
  %m = "stablehlo.map"(%x, %y) <{dimensions = array<i64: 0, 1>}> ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %p = stablehlo.multiply %a, %b : tensor<i32>
      %s = stablehlo.subtract %p, %a : tensor<i32>
      stablehlo.return %s : tensor<i32>
  }) : (tensor<4x6xi32>, tensor<4x6xi32>) -> tensor<4x6xi32>
  %st = stablehlo.constant dense<[1, 0]> : tensor<2xi64>
  %li = stablehlo.constant dense<[4, 5]> : tensor<2xi64>
  %sd = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %d = stablehlo.real_dynamic_slice %x, %st, %li, %sd : (tensor<4x6xi32>, tensor<2xi64>,
      tensor<2xi64>, tensor<2xi64>) -> tensor<2x2xi32>
  %b:2 = stablehlo.optimization_barrier %m, %y : tensor<4x6xi32>, tensor<4x6xi32>
  return %m, %d, %b#0, %b#1 : tensor<4x6xi32>, tensor<2x2xi32>, tensor<4x6xi32>, tensor<4x6xi32>
}"""
    x = np.arange(24, dtype=np.int32).reshape(4, 6)
    run_both(text, [x, x[::-1].copy()])


@pytest.mark.parametrize("ty,dt", [("f32", np.float32), ("f64", np.float64),
                                   ("f16", np.float16)])
def test_reduce_precision_bits(ty, dt):
    text = f"""
func.func @main(%x: tensor<12x{ty}>) -> (tensor<12x{ty}>, tensor<12x{ty}>) {{
  %0 = stablehlo.reduce_precision %x, format = e5m2 : tensor<12x{ty}>
  %1 = stablehlo.reduce_precision %x, format = e8m0 : tensor<12x{ty}>
  return %0, %1 : tensor<12x{ty}>, tensor<12x{ty}>
}}"""
    x = np.array([1.0, 1.125, 1.375, -3.3, 1e-6, 65504.0, 6e4, np.inf, np.nan, 0.0, -0.0, 0.3],
                 dt)
    run_both(text, [x], rtol=0.0)
