"""Per-element op kernels on the GPU: reduce_window (pooling with padding, strides and
dilation), dot_general of integer and bf16 types, map, optimization_barrier,
real_dynamic_slice, bitcast_convert across widths. Host twin against the interpreter,
ptxas sm_80/sm_90; unsupported kinds name themselves."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from oxla_codegen_llvm.simt.harness import SimtPolicy, plan_for, plan_kernels

from oxla.errors import NotSupportedError
from tests.simt.conftest import check_ptxas, check_twin

POOL = """
func.func @main(%x: tensor<2x7x9xf32>) -> (tensor<2x4x4xf32>, tensor<2x2x4xf32>) {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %m = "stablehlo.reduce_window"(%x, %ninf) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %r = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %r : tensor<f32>
  }) {window_dimensions = array<i64: 1, 3, 3>, window_strides = array<i64: 1, 2, 2>,
      padding = dense<[[0, 0], [1, 1], [0, 0]]> : tensor<3x2xi64>}
     : (tensor<2x7x9xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %s = "stablehlo.reduce_window"(%x, %zero) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %r = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %r : tensor<f32>
  }) {window_dimensions = array<i64: 1, 3, 2>, window_strides = array<i64: 1, 2, 2>,
      window_dilations = array<i64: 1, 2, 1>}
     : (tensor<2x7x9xf32>, tensor<f32>) -> tensor<2x2x4xf32>
  return %m, %s : tensor<2x4x4xf32>, tensor<2x2x4xf32>
}
"""


def test_reduce_window_pooling():
    x = np.random.default_rng(0).standard_normal((2, 7, 9)).astype(np.float32)
    check_ptxas(check_twin(POOL, [x]))


@pytest.mark.parametrize("t,dt", [("i32", np.int32), ("bf16", ml_dtypes.bfloat16)])
def test_dot_general_loop(t, dt):
    text = f"""
func.func @main(%a: tensor<3x4x5x{t}>, %b: tensor<3x5x2x{t}>) -> tensor<3x4x2x{t}> {{
  %d = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1]
     : (tensor<3x4x5x{t}>, tensor<3x5x2x{t}>) -> tensor<3x4x2x{t}>
  return %d : tensor<3x4x2x{t}>
}}
"""
    rng = np.random.default_rng(1)
    a = rng.integers(-9, 9, (3, 4, 5)).astype(dt)
    b = rng.integers(-9, 9, (3, 5, 2)).astype(dt)
    check_ptxas(check_twin(text, [a, b]))


MISC = """
func.func @main(%x: tensor<6xf32>, %y: tensor<6xf32>, %s: tensor<1xi64>, %st: tensor<1xi64>)
    -> (tensor<6xf32>, tensor<6xf32>, tensor<3xf32>, tensor<6x4xui8>) {
  %m = "stablehlo.map"(%x, %y) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %p = stablehlo.multiply %a, %b : tensor<f32>
      %q = stablehlo.subtract %p, %a : tensor<f32>
      stablehlo.return %q : tensor<f32>
  }) {dimensions = array<i64: 0>} : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  %o:2 = stablehlo.optimization_barrier %m, %y : tensor<6xf32>, tensor<6xf32>
  %lim = stablehlo.constant dense<6> : tensor<1xi64>
  %r = stablehlo.real_dynamic_slice %o#0, %s, %lim, %st
     : (tensor<6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xf32>
  %bc = stablehlo.bitcast_convert %o#1 : (tensor<6xf32>) -> tensor<6x4xui8>
  return %o#0, %o#1, %r, %bc : tensor<6xf32>, tensor<6xf32>, tensor<3xf32>, tensor<6x4xui8>
}
"""


def test_map_barrier_dynamic_slice_bitcast():
    rng = np.random.default_rng(2)
    x = rng.standard_normal(6).astype(np.float32)
    y = rng.standard_normal(6).astype(np.float32)
    check_ptxas(check_twin(MISC, [x, y, np.array([1], np.int64), np.array([2], np.int64)]))


class _Everything(SimtPolicy):
    def classify(self, op):
        return "op"


def test_unsupported_kind_names_the_op():
    text = """
func.func @main(%x: tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>> {
  %r = stablehlo.fft %x, type = FFT, length = [8] : (tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>>
  return %r : tensor<8xcomplex<f32>>
}
"""
    plan = plan_for(text, _Everything())
    with pytest.raises(NotSupportedError, match="stablehlo.fft.*no GPU kernel"):
        plan_kernels(plan)


CONV = """
func.func @main(%x: tensor<2x7x6x4xf32>, %w: tensor<3x2x2x6xf32>) -> tensor<2x4x3x6xf32> {
  %y = stablehlo.convolution(%x, %w)
      dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {stride = [2, 2], pad = [[1, 1], [0, 1]], rhs_dilate = [1, 2], reverse = [true, false]}
      {batch_group_count = 1 : i64, feature_group_count = 2 : i64}
      : (tensor<2x7x6x4xf32>, tensor<3x2x2x6xf32>) -> tensor<2x4x3x6xf32>
  return %y : tensor<2x4x3x6xf32>
}
"""


def test_convolution_direct():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 7, 6, 4)).astype(np.float32)
    w = rng.standard_normal((3, 2, 2, 6)).astype(np.float32)
    check_ptxas(check_twin(CONV, [x, w]))


def test_convolution_batch_groups_lhs_dilation_int():
    text = """
func.func @main(%x: tensor<4x5x3xi32>, %w: tensor<2x3x6xi32>) -> tensor<2x9x6xi32> {
  %y = stablehlo.convolution(%x, %w)
      dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f],
      window = {lhs_dilate = [2], pad = [[1, 0]]}
      {batch_group_count = 2 : i64, feature_group_count = 1 : i64}
      : (tensor<4x5x3xi32>, tensor<2x3x6xi32>) -> tensor<2x9x6xi32>
  return %y : tensor<2x9x6xi32>
}
"""
    rng = np.random.default_rng(6)
    x = rng.integers(-5, 5, (4, 5, 3)).astype(np.int32)
    w = rng.integers(-5, 5, (2, 3, 6)).astype(np.int32)
    check_twin(text, [x, w])


@pytest.mark.parametrize("left,lower,trans", [(True, True, "NO_TRANSPOSE"),
                                              (False, False, "TRANSPOSE"),
                                              (True, False, "ADJOINT")])
def test_triangular_solve(left, lower, trans):
    bshape = "2x4x3" if left else "2x3x4"
    text = f"""
func.func @main(%a: tensor<2x4x4xf32>, %b: tensor<{bshape}xf32>) -> tensor<{bshape}xf32> {{
  %x = "stablehlo.triangular_solve"(%a, %b) {{left_side = {str(left).lower()},
      lower = {str(lower).lower()}, unit_diagonal = false,
      transpose_a = #stablehlo<transpose {trans}>}}
     : (tensor<2x4x4xf32>, tensor<{bshape}xf32>) -> tensor<{bshape}xf32>
  return %x : tensor<{bshape}xf32>
}}
"""
    rng = np.random.default_rng(11)
    a = (rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)).astype(np.float32)
    b = rng.standard_normal(tuple(int(d) for d in bshape.split("x"))).astype(np.float32)
    kernels = check_twin(text, [a, b], rtol=1e-5, atol=1e-6)
    check_ptxas(kernels)


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky(lower):
    text = f"""
func.func @main(%a: tensor<3x5x5xf64>) -> tensor<3x5x5xf64> {{
  %l = "stablehlo.cholesky"(%a) {{lower = {str(lower).lower()}}} : (tensor<3x5x5xf64>) -> tensor<3x5x5xf64>
  return %l : tensor<3x5x5xf64>
}}
"""
    m = np.random.default_rng(12).standard_normal((3, 5, 5))
    a = m @ m.transpose(0, 2, 1) + 5 * np.eye(5)
    kernels = check_twin(text, [a], rtol=1e-12, atol=1e-12)
    check_ptxas(kernels)
