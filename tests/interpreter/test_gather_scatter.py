"""``gather``, ``dynamic_gather`` and ``scatter`` rules (spec sections of the same names);
expected values worked out by hand from the spec."""

from __future__ import annotations

import numpy as np

from oxla.interpreter import Context, run_function
from oxla.ir import parse_module

SPEC_OPERAND = np.arange(1, 49, dtype=np.int64).reshape(2, 3, 4, 2)
SPEC_INDICES = np.array([[[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]],
                         [[[0, 0], [2, 1], [2, 2]], [[1, 2], [0, 1], [1, 0]]]], np.int64)


def run(body: str, sig: str, *args):
    m = parse_module(f"func.func @main({sig}) {body}", "test.mlir")
    return run_function(m, "main", [np.asarray(a) for a in args], Context(module=m))


def test_gather_spec_example_with_batching_dims():
    (r,) = run("""-> tensor<2x2x3x2x2xi64> {
      %r = "stablehlo.gather"(%a, %i) {dimension_numbers = #stablehlo.gather<
        offset_dims = [3, 4], collapsed_slice_dims = [1], operand_batching_dims = [0],
        start_indices_batching_dims = [1], start_index_map = [2, 1], index_vector_dim = 3>,
        slice_sizes = array<i64: 1, 1, 2, 2>, indices_are_sorted = false}
        : (tensor<2x3x4x2xi64>, tensor<2x2x3x2xi64>) -> tensor<2x2x3x2x2xi64>
      return %r : tensor<2x2x3x2x2xi64> }""",
               "%a: tensor<2x3x4x2xi64>, %i: tensor<2x2x3x2xi64>", SPEC_OPERAND, SPEC_INDICES)
    expected = [[[[[1, 2], [3, 4]], [[3, 4], [5, 6]], [[13, 14], [15, 16]]],
                 [[[33, 34], [35, 36]], [[35, 36], [37, 38]], [[41, 42], [43, 44]]]],
                [[[[1, 2], [3, 4]], [[13, 14], [15, 16]], [[21, 22], [23, 24]]],
                 [[[43, 44], [45, 46]], [[33, 34], [35, 36]], [[27, 28], [29, 30]]]]]
    np.testing.assert_array_equal(r, expected)


GATHER_1D = """-> tensor<3x2xi32> {
      %r = "stablehlo.gather"(%a, %i) {dimension_numbers = #stablehlo.gather<
        offset_dims = [1], start_index_map = [0], index_vector_dim = 1>,
        slice_sizes = array<i64: 2>} : (tensor<5xi32>, tensor<3x1xi64>) -> tensor<3x2xi32>
      return %r : tensor<3x2xi32> }"""


def test_gather_clamps_start_indices():
    # starts 4 and 9 clamp to 5 - 2 = 3; -3 clamps to 0.
    (r,) = run(GATHER_1D, "%a: tensor<5xi32>, %i: tensor<3x1xi64>",
               np.arange(5, dtype=np.int32), np.array([[4], [-3], [9]]))
    np.testing.assert_array_equal(r, [[3, 4], [0, 1], [3, 4]])


def test_gather_implicit_index_vector_dim_and_collapsed():
    # index_vector_dim = rank(start_indices): each index is a 1-vector.
    (r,) = run("""-> tensor<2x3xi32> {
      %r = "stablehlo.gather"(%a, %i) {dimension_numbers = #stablehlo.gather<
        offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0],
        index_vector_dim = 1>, slice_sizes = array<i64: 1, 3>}
        : (tensor<3x3xi32>, tensor<2xi32>) -> tensor<2x3xi32>
      return %r : tensor<2x3xi32> }""", "%a: tensor<3x3xi32>, %i: tensor<2xi32>",
               np.arange(9, dtype=np.int32).reshape(3, 3), np.array([2, 0], np.int32))
    np.testing.assert_array_equal(r, [[6, 7, 8], [0, 1, 2]])


def test_dynamic_gather_takes_slice_sizes_operand():
    (r,) = run("""-> tensor<1x2xi32> {
      %r = "stablehlo.dynamic_gather"(%a, %i, %s) {dimension_numbers = #stablehlo.gather<
        offset_dims = [1], start_index_map = [0], index_vector_dim = 1>}
        : (tensor<5xi32>, tensor<1x1xi64>, tensor<1xi64>) -> tensor<1x2xi32>
      return %r : tensor<1x2xi32> }""", "%a: tensor<5xi32>, %i: tensor<1x1xi64>, %s: tensor<1xi64>",
               np.arange(5, dtype=np.int32), np.array([[1]]), np.array([2]))
    np.testing.assert_array_equal(r, [[1, 2]])


def scatter_1d(region: str, n_upd: int, window: int = 0) -> str:
    """A scatter into tensor<4xi32> of ``n_upd`` scalar updates (or of one window)."""
    if window:
        dims = "update_window_dims = [1], scatter_dims_to_operand_dims = [0], index_vector_dim = 1"
        ut, it = f"tensor<1x{window}xi32>", "tensor<1x1xi64>"
    else:
        dims = ("inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], "
                "index_vector_dim = 1")
        ut, it = f"tensor<{n_upd}xi32>", f"tensor<{n_upd}x1xi64>"
    return f"""-> tensor<4xi32> {{
      %r = "stablehlo.scatter"(%a, %i, %u) ({{
        ^bb0(%x: tensor<i32>, %y: tensor<i32>):
          {region}
      }}) {{scatter_dimension_numbers = #stablehlo.scatter<{dims}>}}
        : (tensor<4xi32>, {it}, {ut}) -> tensor<4xi32>
      return %r : tensor<4xi32> }}""", f"%a: tensor<4xi32>, %i: {it}, %u: {ut}"


ADD = """%s = stablehlo.add %x, %y : tensor<i32>
          stablehlo.return %s : tensor<i32>"""
# x * 2 + y: the result depends on the order duplicate updates are applied in.
ORDERED = """%c = stablehlo.constant dense<2> : tensor<i32>
          %m = stablehlo.multiply %x, %c : tensor<i32>
          %s = stablehlo.add %m, %y : tensor<i32>
          stablehlo.return %s : tensor<i32>"""
# The same through reshapes, which are not elementwise: the per-element path.
ORDERED_SERIAL = """%c = stablehlo.constant dense<2> : tensor<i32>
          %v = stablehlo.reshape %x : (tensor<i32>) -> tensor<1xi32>
          %w = stablehlo.reshape %v : (tensor<1xi32>) -> tensor<i32>
          %m = stablehlo.multiply %w, %c : tensor<i32>
          %s = stablehlo.add %m, %y : tensor<i32>
          stablehlo.return %s : tensor<i32>"""


def test_scatter_duplicate_indices_combined():
    (r,) = run(*scatter_1d(ADD, 3), np.zeros(4, np.int32), np.array([[1], [1], [0]]),
               np.array([1, 2, 3], np.int32))
    np.testing.assert_array_equal(r, [3, 3, 0, 0])


def test_scatter_duplicates_applied_in_row_major_order():
    # ((10 * 2 + 1) * 2 + 2) = 44 at index 0; index 2: 0 * 2 + 5 = 5.
    for region in (ORDERED, ORDERED_SERIAL):
        (r,) = run(*scatter_1d(region, 3), np.array([10, 0, 0, 0], np.int32),
                   np.array([[0], [2], [0]]), np.array([1, 5, 2], np.int32))
        np.testing.assert_array_equal(r, [44, 0, 5, 0])


def test_scatter_out_of_bounds_elements_skipped():
    # Scalar updates at -1 and 4 are dropped; only index 2 is updated.
    (r,) = run(*scatter_1d(ADD, 3), np.zeros(4, np.int32), np.array([[-1], [4], [2]]),
               np.array([1, 2, 3], np.int32))
    np.testing.assert_array_equal(r, [0, 0, 3, 0])


def test_scatter_window_partly_out_of_bounds_per_element():
    # Spec: each result_index is checked on its own; start 3, window 2 -> only [3].
    (r,) = run(*scatter_1d(ADD, 1, window=2), np.zeros(4, np.int32), np.array([[3]]),
               np.array([[1, 2]], np.int32))
    np.testing.assert_array_equal(r, [0, 0, 0, 1])


def test_scatter_spec_example_with_batching_dims():
    (r,) = run("""-> tensor<2x3x4x2xi64> {
      %r = "stablehlo.scatter"(%a, %i, %u) ({
        ^bb0(%x: tensor<i64>, %y: tensor<i64>):
          %s = stablehlo.add %x, %y : tensor<i64>
          stablehlo.return %s : tensor<i64>
      }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [3, 4],
          inserted_window_dims = [1], input_batching_dims = [0],
          scatter_indices_batching_dims = [1], scatter_dims_to_operand_dims = [2, 1],
          index_vector_dim = 3>}
        : (tensor<2x3x4x2xi64>, tensor<2x2x3x2xi64>, tensor<2x2x3x2x2xi64>) -> tensor<2x3x4x2xi64>
      return %r : tensor<2x3x4x2xi64> }""",
               "%a: tensor<2x3x4x2xi64>, %i: tensor<2x2x3x2xi64>, %u: tensor<2x2x3x2x2xi64>",
               SPEC_OPERAND, SPEC_INDICES, np.ones((2, 2, 3, 2, 2), np.int64))
    expected = [[[[3, 4], [6, 7], [6, 7], [7, 8]], [[9, 10], [11, 12], [15, 16], [17, 18]],
                 [[17, 18], [19, 20], [22, 23], [24, 25]]],
                [[[25, 26], [28, 29], [30, 31], [31, 32]], [[35, 36], [38, 39], [38, 39],
                                                            [39, 40]],
                 [[41, 42], [44, 45], [46, 47], [47, 48]]]]
    np.testing.assert_array_equal(r, expected)


def test_scatter_variadic_keeps_pairs_together():
    # Two inputs updated by one region: keep the pair with the larger first element.
    (v, k) = run("""-> (tensor<2xf32>, tensor<2xi32>) {
      %r:2 = "stablehlo.scatter"(%a, %b, %i, %u, %w) ({
        ^bb0(%x: tensor<f32>, %kx: tensor<i32>, %y: tensor<f32>, %ky: tensor<i32>):
          %gt = stablehlo.compare GT, %y, %x : (tensor<f32>, tensor<f32>) -> tensor<i1>
          %s = stablehlo.select %gt, %y, %x : tensor<i1>, tensor<f32>
          %t = stablehlo.select %gt, %ky, %kx : tensor<i1>, tensor<i32>
          stablehlo.return %s, %t : tensor<f32>, tensor<i32>
      }) {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0],
          scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}
        : (tensor<2xf32>, tensor<2xi32>, tensor<3x1xi64>, tensor<3xf32>, tensor<3xi32>)
        -> (tensor<2xf32>, tensor<2xi32>)
      return %r#0, %r#1 : tensor<2xf32>, tensor<2xi32> }""",
                    "%a: tensor<2xf32>, %b: tensor<2xi32>, %i: tensor<3x1xi64>, "
                    "%u: tensor<3xf32>, %w: tensor<3xi32>",
                    np.zeros(2, np.float32), np.full(2, -1, np.int32), np.array([[1], [1], [1]]),
                    np.array([5, 7, 6], np.float32), np.array([0, 1, 2], np.int32))
    np.testing.assert_array_equal(v, [0, 7])
    np.testing.assert_array_equal(k, [-1, 1])
