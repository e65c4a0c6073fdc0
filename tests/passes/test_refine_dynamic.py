"""stablehlo-refine-shapes on the dynamic ops JAX's shape-polymorphic exports leave:
convolution shapes, constant-operand dynamic_pad/dynamic_gather/dynamic_conv made
static, real_dynamic_slice with ``limit = start + constant``. Results must not change
(the interpreter runs the module before and after)."""

from __future__ import annotations

import numpy as np

from oxla.interpreter import run_function
from oxla.ir import parse_module
from oxla.passes import run_pipeline

TEXT = """
func.func public @main(%x: tensor<3x12x16xf32>, %w: tensor<4x16x8xf32>, %p: tensor<2x5xf32>,
                       %t: tensor<3x4x5xf32>, %i: tensor<2x1xi64>, %s: tensor<i32>)
    -> (tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x2xf32>,
        tensor<?x?x?xf32>) {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f],
    window = {pad = [[2, 2]], lhs_dilate = [2]}
    {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
    : (tensor<3x12x16xf32>, tensor<4x16x8xf32>) -> tensor<?x?x?xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %lo = stablehlo.constant dense<[1, 0]> : tensor<2xi32>
  %hi = stablehlo.constant dense<[0, 2]> : tensor<2xi32>
  %in = stablehlo.constant dense<[1, 0]> : tensor<2xi32>
  %1 = stablehlo.dynamic_pad %p, %z, %lo, %hi, %in
    : (tensor<2x5xf32>, tensor<f32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>)
    -> tensor<?x?xf32>
  %sz = stablehlo.constant dense<[1, 1, 5]> : tensor<3xi32>
  %2 = "stablehlo.dynamic_gather"(%t, %i, %sz) {dimension_numbers = #stablehlo.gather<
    offset_dims = [0, 2], collapsed_slice_dims = [1], start_index_map = [1],
    index_vector_dim = 1>} : (tensor<3x4x5xf32>, tensor<2x1xi64>, tensor<3xi32>)
    -> tensor<?x?x?xf32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %c = stablehlo.clamp %zero, %s, %zero : tensor<i32>
  %r1 = stablehlo.reshape %c : (tensor<i32>) -> tensor<1xi32>
  %r2 = stablehlo.reshape %c : (tensor<i32>) -> tensor<1xi32>
  %one = stablehlo.constant dense<1> : tensor<1xi32>
  %start = stablehlo.concatenate %r1, %one, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %start2 = stablehlo.concatenate %r2, %one, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %size = stablehlo.constant dense<[3, 2]> : tensor<2xi32>
  %limit = stablehlo.add %start2, %size : tensor<2xi32>
  %st = stablehlo.constant dense<1> : tensor<2xi32>
  %3 = stablehlo.real_dynamic_slice %t, %start, %limit, %st
    : (tensor<3x4x5xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x2xf32>
  %pad = stablehlo.constant dense<[[1, 0]]> : tensor<1x2xi64>
  %4 = "stablehlo.dynamic_conv"(%x, %w, %pad) {batch_group_count = 1 : i64,
    dimension_numbers = #stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>,
    feature_group_count = 1 : i64, window_strides = array<i64: 2>}
    : (tensor<3x12x16xf32>, tensor<4x16x8xf32>, tensor<1x2xi64>) -> tensor<?x?x?xf32>
  return %0, %1, %2, %3, %4 : tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<?x?x?xf32>,
    tensor<?x2xf32>, tensor<?x?x?xf32>
}
"""


def test_refine_makes_dynamic_ops_static_and_keeps_results():
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32)
            for s in [(3, 12, 16), (4, 16, 8), (2, 5), (3, 4, 5)]]
    args += [np.array([[3], [0]], np.int64), np.array(0, np.int32)]
    before = run_function(parse_module(TEXT), "main", args)
    m = parse_module(TEXT)
    run_pipeline(m, "stablehlo-refine-shapes")
    names = {op.name for op in m.walk()}
    assert not names & {"stablehlo.dynamic_pad", "stablehlo.dynamic_gather",
                        "stablehlo.dynamic_conv"}
    ret = m.lookup("main").regions[0].blocks[0].terminator
    types = [str(v.type) for v in ret.operands]
    assert types == ["tensor<3x24x8xf32>", "tensor<4x7xf32>", "tensor<1x2x5xf32>",
                     "tensor<3x2xf32>", "tensor<3x5x8xf32>"]
    after = run_function(m, "main", args)
    for b, a in zip(before, after):
        assert np.asarray(a).shape == np.asarray(b).shape
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_real_dynamic_slice_with_unrelated_limit_stays_dynamic():
    text = TEXT.replace("%limit = stablehlo.add %start2, %size",
                        "%limit = stablehlo.add %size, %size")
    m = parse_module(text)
    run_pipeline(m, "stablehlo-refine-shapes")
    rds = next(op for op in m.walk() if op.name == "stablehlo.real_dynamic_slice")
    assert str(rds.results[0].type) == "tensor<?x2xf32>"  # start is not a constant
