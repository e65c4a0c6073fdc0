"""Shape-op rules (spec ``pad``, ``slice``, ``dynamic_slice``, ``dynamic_update_slice``,
``broadcast_in_dim``, ``reverse``, ``transpose``, ``concatenate``, ``reshape``, and the
deprecated ``broadcast``, ``real_dynamic_slice``, ``torch_index_select``); expected
values worked out by hand from the spec."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.interpreter import Context, run_function
from oxla.ir import parse_module


def run(body: str, sig: str, *args):
    """Runs ``func.func @main(sig)`` with ``body`` and returns its results."""
    m = parse_module(f"func.func @main({sig}) {body}", "test.mlir")
    return run_function(m, "main", [np.asarray(a) for a in args], Context(module=m))


def i32(*v):
    return np.array(v, dtype=np.int32)


def test_pad_negative_edge_after_interior():
    # interior: [1 9 2 9 3]; low -1 drops the 1; high +1 appends 9.
    (r,) = run("""-> tensor<5xi32> {
      %r = "stablehlo.pad"(%a, %p) {edge_padding_low = array<i64: -1>,
        edge_padding_high = array<i64: 1>, interior_padding = array<i64: 1>}
        : (tensor<3xi32>, tensor<i32>) -> tensor<5xi32>
      return %r : tensor<5xi32> }""", "%a: tensor<3xi32>, %p: tensor<i32>",
               i32(1, 2, 3), np.int32(9))
    np.testing.assert_array_equal(r, [9, 2, 9, 3, 9])


def test_pad_spec_example_2d():
    (r,) = run("""-> tensor<5x9xi32> {
      %r = stablehlo.pad %a, %p, low = [0, 1], high = [2, 1], interior = [1, 2]
        : (tensor<2x3xi32>, tensor<i32>) -> tensor<5x9xi32>
      return %r : tensor<5x9xi32> }""", "%a: tensor<2x3xi32>, %p: tensor<i32>",
               np.array([[1, 2, 3], [4, 5, 6]], np.int32), np.int32(0))
    z = [0] * 9
    np.testing.assert_array_equal(r, [[0, 1, 0, 0, 2, 0, 0, 3, 0], z,
                                      [0, 4, 0, 0, 5, 0, 0, 6, 0], z, z])


def test_pad_crops_everything_to_empty():
    (r,) = run("""-> tensor<0xi32> {
      %r = stablehlo.pad %a, %p, low = [-2], high = [-1], interior = [0]
        : (tensor<3xi32>, tensor<i32>) -> tensor<0xi32>
      return %r : tensor<0xi32> }""", "%a: tensor<3xi32>, %p: tensor<i32>",
               i32(1, 2, 3), np.int32(0))
    assert r.shape == (0,)


@pytest.mark.parametrize(("start", "expected"), [(4, [3, 4]), (-2, [0, 1]), (1, [1, 2])])
def test_dynamic_slice_clamps_start(start, expected):
    (r,) = run("""-> tensor<2xi32> {
      %r = stablehlo.dynamic_slice %a, %s, sizes = [2] : (tensor<5xi32>, tensor<i64>)
        -> tensor<2xi32>
      return %r : tensor<2xi32> }""", "%a: tensor<5xi32>, %s: tensor<i64>",
               i32(0, 1, 2, 3, 4), np.int64(start))
    np.testing.assert_array_equal(r, expected)


def test_dynamic_slice_unsigned_huge_start_clamps_high():
    (r,) = run("""-> tensor<2xi32> {
      %r = stablehlo.dynamic_slice %a, %s, sizes = [2] : (tensor<5xi32>, tensor<ui64>)
        -> tensor<2xi32>
      return %r : tensor<2xi32> }""", "%a: tensor<5xi32>, %s: tensor<ui64>",
               i32(0, 1, 2, 3, 4), np.uint64(2**64 - 1))
    np.testing.assert_array_equal(r, [3, 4])


@pytest.mark.parametrize(("start", "expected"), [(3, [0, 0, 1, 2]), (-1, [1, 2, 0, 0])])
def test_dynamic_update_slice_clamps_start(start, expected):
    (r,) = run("""-> tensor<4xi32> {
      %r = stablehlo.dynamic_update_slice %a, %u, %s
        : (tensor<4xi32>, tensor<2xi32>, tensor<i32>) -> tensor<4xi32>
      return %r : tensor<4xi32> }""", "%a: tensor<4xi32>, %u: tensor<2xi32>, %s: tensor<i32>",
               i32(0, 0, 0, 0), i32(1, 2), np.int32(start))
    np.testing.assert_array_equal(r, expected)


def test_dynamic_update_slice_leaves_operand_untouched():
    a = i32(0, 0, 0)
    run("""-> tensor<3xi32> {
      %r = stablehlo.dynamic_update_slice %a, %u, %s
        : (tensor<3xi32>, tensor<1xi32>, tensor<i32>) -> tensor<3xi32>
      return %r : tensor<3xi32> }""", "%a: tensor<3xi32>, %u: tensor<1xi32>, %s: tensor<i32>",
        a, i32(7), np.int32(1))
    np.testing.assert_array_equal(a, [0, 0, 0])


def test_broadcast_in_dim_permuted_and_expanding_dims():
    # operand axis 0 (size 1) -> result axis 1 (expanded); axis 1 -> result axis 0.
    (r,) = run("""-> tensor<2x3xi32> {
      %r = stablehlo.broadcast_in_dim %a, dims = [1, 0] : (tensor<1x2xi32>) -> tensor<2x3xi32>
      return %r : tensor<2x3xi32> }""", "%a: tensor<1x2xi32>", np.array([[1, 2]], np.int32))
    np.testing.assert_array_equal(r, [[1, 1, 1], [2, 2, 2]])


def test_deprecated_broadcast_prepends_sizes():
    (r,) = run("""-> tensor<2x2xi32> {
      %r = "stablehlo.broadcast"(%a) {broadcast_sizes = array<i64: 2>}
        : (tensor<2xi32>) -> tensor<2x2xi32>
      return %r : tensor<2x2xi32> }""", "%a: tensor<2xi32>", i32(5, 6))
    np.testing.assert_array_equal(r, [[5, 6], [5, 6]])


def test_slice_with_strides_and_reverse_and_transpose():
    (s, v, t) = run("""-> (tensor<2xi32>, tensor<2x3xi32>, tensor<3x2xi32>) {
      %s = "stablehlo.slice"(%a) {start_indices = array<i64: 1>, limit_indices = array<i64: 5>,
        strides = array<i64: 3>} : (tensor<6xi32>) -> tensor<2xi32>
      %v = stablehlo.reverse %b, dims = [0, 1] : tensor<2x3xi32>
      %t = stablehlo.transpose %b, dims = [1, 0] : (tensor<2x3xi32>) -> tensor<3x2xi32>
      return %s, %v, %t : tensor<2xi32>, tensor<2x3xi32>, tensor<3x2xi32> }""",
                     "%a: tensor<6xi32>, %b: tensor<2x3xi32>", i32(0, 1, 2, 3, 4, 5),
                     np.array([[1, 2, 3], [4, 5, 6]], np.int32))
    np.testing.assert_array_equal(s, [1, 4])
    np.testing.assert_array_equal(v, [[6, 5, 4], [3, 2, 1]])
    np.testing.assert_array_equal(t, [[1, 4], [2, 5], [3, 6]])


def test_concatenate_reshape_to_scalar_and_dimension_size():
    (c, r, d) = run("""-> (tensor<3xi32>, tensor<i32>, tensor<i32>) {
      %c = stablehlo.concatenate %a, %b, dim = 0 : (tensor<1xi32>, tensor<2xi32>) -> tensor<3xi32>
      %r = stablehlo.reshape %a : (tensor<1xi32>) -> tensor<i32>
      %d = stablehlo.get_dimension_size %b, dim = 0 : (tensor<2xi32>) -> tensor<i32>
      return %c, %r, %d : tensor<3xi32>, tensor<i32>, tensor<i32> }""",
                    "%a: tensor<1xi32>, %b: tensor<2xi32>", i32(7), i32(8, 9))
    np.testing.assert_array_equal(c, [7, 8, 9])
    assert r.shape == () and r == 7
    assert d.shape == () and d.dtype == np.int32 and d == 2


def test_real_dynamic_slice():
    (r,) = run("""-> tensor<2xi32> {
      %r = "stablehlo.real_dynamic_slice"(%a, %s, %l, %t)
        : (tensor<6xi32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2xi32>
      return %r : tensor<2xi32> }""",
               "%a: tensor<6xi32>, %s: tensor<1xi64>, %l: tensor<1xi64>, %t: tensor<1xi64>",
               i32(0, 1, 2, 3, 4, 5), np.array([1]), np.array([6]), np.array([3]))
    np.testing.assert_array_equal(r, [1, 4])


def test_torch_index_select_with_batch_dims():
    # result[b, i] = operand[b, index[b, i]]
    (r,) = run("""-> tensor<2x2xi32> {
      %r = "stablehlo.torch_index_select"(%a, %i) {dim = 1 : i64, batch_dims = 1 : i64}
        : (tensor<2x3xi32>, tensor<2x2xi32>) -> tensor<2x2xi32>
      return %r : tensor<2x2xi32> }""", "%a: tensor<2x3xi32>, %i: tensor<2x2xi32>",
               np.array([[10, 11, 12], [20, 21, 22]], np.int32),
               np.array([[2, 0], [1, 1]], np.int32))
    np.testing.assert_array_equal(r, [[12, 10], [21, 21]])
