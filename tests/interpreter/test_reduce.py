"""Reduction rules (spec ``reduce``, ``reduce_window``, ``select_and_scatter``);
expected values worked out by hand from the spec."""

from __future__ import annotations

import numpy as np

from oxla.interpreter import Context, run_function
from oxla.ir import parse_module


def run(body: str, sig: str, *args):
    """Runs ``func.func @main(sig)`` with ``body`` and returns its results."""
    m = parse_module(f"func.func @main({sig}) {body}", "test.mlir")
    return run_function(m, "main", [np.asarray(a) for a in args], Context(module=m))


def reduce1(op: str, ty: str, n: int, x, init):
    (r,) = run(f"""-> tensor<{ty}> {{
      %r = stablehlo.reduce(%x init: %i) applies stablehlo.{op} across dimensions = [0]
        : (tensor<{n}x{ty}>, tensor<{ty}>) -> tensor<{ty}>
      return %r : tensor<{ty}> }}""", f"%x: tensor<{n}x{ty}>, %i: tensor<{ty}>", x, init)
    return r


def test_sum_of_negative_zeros_is_negative_zero():
    r = reduce1("add", "f32", 3, np.array([-0.0, -0.0, -0.0], np.float32), np.float32(-0.0))
    assert r == 0 and np.signbit(r)


def test_sum_with_positive_zero_init_is_positive_zero():
    # The init value takes part in the sum: -0 + +0 = +0.
    r = reduce1("add", "f32", 2, np.array([-0.0, -0.0], np.float32), np.float32(0.0))
    assert r == 0 and not np.signbit(r)


def test_integer_sum_wraps():
    r = reduce1("add", "i8", 3, np.array([100, 100, 1], np.int8), np.int8(0))
    assert r == np.int8(-55)  # 201 - 256


def test_unsigned_product_wraps():
    r = reduce1("multiply", "ui8", 2, np.array([16, 17], np.uint8), np.uint8(1))
    assert r == 16  # 272 mod 256


def test_max_propagates_nan_and_orders_signed_zeros():
    r = reduce1("maximum", "f32", 3, np.array([1.0, np.nan, 2.0], np.float32),
                np.float32(-np.inf))
    assert np.isnan(r)
    r = reduce1("maximum", "f32", 2, np.array([-0.0, 0.0], np.float32), np.float32(-np.inf))
    assert r == 0 and not np.signbit(r)
    r = reduce1("minimum", "f32", 2, np.array([0.0, -0.0], np.float32), np.float32(np.inf))
    assert r == 0 and np.signbit(r)


def test_boolean_and_or():
    x = np.array([True, False, True])
    assert not reduce1("and", "i1", 3, x, np.bool_(True))
    assert reduce1("or", "i1", 3, x, np.bool_(False))


def test_empty_reduction_is_init():
    (r,) = run("""-> tensor<2xf32> {
      %r = stablehlo.reduce(%x init: %i) applies stablehlo.add across dimensions = [1]
        : (tensor<2x0xf32>, tensor<f32>) -> tensor<2xf32>
      return %r : tensor<2xf32> }""", "%x: tensor<2x0xf32>, %i: tensor<f32>",
               np.zeros((2, 0), np.float32), np.float32(7))
    np.testing.assert_array_equal(r, [7, 7])


_ARGMAX = """-> (tensor<2xf32>, tensor<2xi32>) {
  %iv = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %ii = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.reduce(%x init: %iv), (%idx init: %ii) across dimensions = [1]
    : (tensor<2x4xf32>, tensor<2x4xi32>, tensor<f32>, tensor<i32>)
    -> (tensor<2xf32>, tensor<2xi32>)
    reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<i32>, %d: tensor<i32>) {
      %gt = stablehlo.compare GT, %a, %c, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %eq = stablehlo.compare EQ, %a, %c, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %lt = stablehlo.compare LT, %b, %d, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %tie = stablehlo.and %eq, %lt : tensor<i1>
      %pick = stablehlo.or %gt, %tie : tensor<i1>
      %v = stablehlo.select %pick, %a, %c : tensor<i1>, tensor<f32>
      %i = stablehlo.select %pick, %b, %d : tensor<i1>, tensor<i32>
      stablehlo.return %v, %i : tensor<f32>, tensor<i32>
    }
  return %r#0, %r#1 : tensor<2xf32>, tensor<2xi32> }"""


def test_variadic_argmax_breaks_ties_on_lower_index():
    x = np.array([[1, 3, 3, 2], [-5, -1, -7, -1]], np.float32)
    idx = np.tile(np.arange(4, dtype=np.int32), (2, 1))
    v, i = run(_ARGMAX, "%x: tensor<2x4xf32>, %idx: tensor<2x4xi32>", x, idx)
    np.testing.assert_array_equal(v, [3, -1])
    np.testing.assert_array_equal(i, [1, 1])


def test_variadic_argmax_long_axis_uses_tree():
    # More elements than the left-fold limit: the pairwise tree must keep ties ordered.
    n = 1000
    x = np.zeros((1, n), np.float32)
    x[0, 700] = x[0, 300] = 5
    text = _ARGMAX.replace("2x4", f"1x{n}").replace("tensor<2x", "tensor<1x").replace(
        "tensor<2xf32>", "tensor<1xf32>").replace("tensor<2xi32>", "tensor<1xi32>")
    idx = np.arange(n, dtype=np.int32)[None]
    v, i = run(text, f"%x: tensor<1x{n}xf32>, %idx: tensor<1x{n}xi32>", x, idx)
    assert v[0] == 5 and i[0] == 300


def test_reduce_window_spec_example_dilations_and_padding():
    # Rows after base dilation 2 and padding (2, 1), init 0:
    #   [0, 0, r0, 0, r1, 0, r2, 0]; windows {s, s+3} at s = 0, 4.
    (r,) = run("""-> tensor<2x2xi64> {
      %r = "stablehlo.reduce_window"(%x, %i) ({
        ^bb0(%a: tensor<i64>, %b: tensor<i64>):
          %s = stablehlo.add %a, %b : tensor<i64>
          stablehlo.return %s : tensor<i64>
      }) {window_dimensions = array<i64: 2, 1>, window_strides = array<i64: 4, 1>,
          base_dilations = array<i64: 2, 1>, window_dilations = array<i64: 3, 1>,
          padding = dense<[[2, 1], [0, 0]]> : tensor<2x2xi64>}
        : (tensor<3x2xi64>, tensor<i64>) -> tensor<2x2xi64>
      return %r : tensor<2x2xi64> }""", "%x: tensor<3x2xi64>, %i: tensor<i64>",
               np.array([[1, 2], [3, 4], [5, 6]], np.int64), np.int64(0))
    np.testing.assert_array_equal(r, [[0, 0], [3, 4]])


def test_reduce_window_max_pads_with_init():
    (r,) = run("""-> tensor<4xf32> {
      %r = "stablehlo.reduce_window"(%x, %i) ({
        ^bb0(%a: tensor<f32>, %b: tensor<f32>):
          %s = stablehlo.maximum %a, %b : tensor<f32>
          stablehlo.return %s : tensor<f32>
      }) {window_dimensions = array<i64: 2>, padding = dense<[[1, 0]]> : tensor<1x2xi64>}
        : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
      return %r : tensor<4xf32> }""", "%x: tensor<4xf32>, %i: tensor<f32>",
               np.array([-3, -1, -2, -4], np.float32), np.float32(-10))
    np.testing.assert_array_equal(r, [-3, -1, -1, -2])


def test_select_and_scatter_spec_example():
    # Column 0: windows [1,2,3] and [3,4,pad] pick rows 2 and 3 (5 -> row 2, 7 -> row 3).
    # Column 1: [5,5,6] and [6,4,pad] both pick row 2: 6 + 8 = 14.
    (r,) = run("""-> tensor<4x2xi64> {
      %r = "stablehlo.select_and_scatter"(%x, %s, %i) ({
        ^bb0(%a: tensor<i64>, %b: tensor<i64>):
          %c = stablehlo.compare GE, %a, %b, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
          stablehlo.return %c : tensor<i1>
      }, {
        ^bb0(%a: tensor<i64>, %b: tensor<i64>):
          %c = stablehlo.add %a, %b : tensor<i64>
          stablehlo.return %c : tensor<i64>
      }) {window_dimensions = array<i64: 3, 1>, window_strides = array<i64: 2, 1>,
          padding = dense<[[0, 1], [0, 0]]> : tensor<2x2xi64>}
        : (tensor<4x2xi64>, tensor<2x2xi64>, tensor<i64>) -> tensor<4x2xi64>
      return %r : tensor<4x2xi64> }""",
               "%x: tensor<4x2xi64>, %s: tensor<2x2xi64>, %i: tensor<i64>",
               np.array([[1, 5], [2, 5], [3, 6], [4, 4]], np.int64),
               np.array([[5, 6], [7, 8]], np.int64), np.int64(0))
    np.testing.assert_array_equal(r, [[0, 0], [0, 0], [5, 14], [7, 0]])


def test_select_and_scatter_ge_picks_first_of_ties():
    (r,) = run("""-> tensor<4xf32> {
      %r = "stablehlo.select_and_scatter"(%x, %s, %i) ({
        ^bb0(%a: tensor<f32>, %b: tensor<f32>):
          %c = stablehlo.compare GE, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
          stablehlo.return %c : tensor<i1>
      }, {
        ^bb0(%a: tensor<f32>, %b: tensor<f32>):
          %c = stablehlo.add %a, %b : tensor<f32>
          stablehlo.return %c : tensor<f32>
      }) {window_dimensions = array<i64: 2>, window_strides = array<i64: 2>}
        : (tensor<4xf32>, tensor<2xf32>, tensor<f32>) -> tensor<4xf32>
      return %r : tensor<4xf32> }""", "%x: tensor<4xf32>, %s: tensor<2xf32>, %i: tensor<f32>",
               np.array([2, 2, 1, 3], np.float32), np.array([10, 20], np.float32),
               np.float32(0))
    np.testing.assert_array_equal(r, [10, 0, 0, 20])
