"""scatter (atomic adds; the serial path for other combiners, where colliding updates'
order shows) and sort (stable bitonic in shared memory, several operands, descending,
rows along an inner dimension) on the GPU kernels, against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from tests.simt.conftest import check_ptxas, check_twin


def _scatter(body: str, et: str = "f32") -> str:
    return f"""
func.func @main(%x: tensor<5x3x{et}>, %i: tensor<4x1xi32>, %u: tensor<4x3x{et}>) -> tensor<5x3x{et}> {{
  %r = "stablehlo.scatter"(%x, %i, %u) ({{
    ^bb0(%a: tensor<{et}>, %b: tensor<{et}>):
      {body}
  }}) {{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}}
     : (tensor<5x3x{et}>, tensor<4x1xi32>, tensor<4x3x{et}>) -> tensor<5x3x{et}>
  return %r : tensor<5x3x{et}>
}}
"""


ADD = "%s = stablehlo.add %a, %b : tensor<{et}>\n      stablehlo.return %s : tensor<{et}>"
REPLACE = "stablehlo.return %b : tensor<{et}>"
IDX = np.array([[1], [3], [1], [9]], np.int32)  # a collision, one index out of bounds


@pytest.mark.parametrize("et,dt", [("f32", np.float32), ("i32", np.int32), ("f64", np.float64)])
def test_scatter_add_atomic(et, dt):
    x = np.arange(15).reshape(5, 3).astype(dt)
    u = (np.arange(12).reshape(4, 3) * 3 + 1).astype(dt)
    kernels = check_twin(_scatter(ADD.format(et=et), et), [x, IDX, u])
    assert kernels[1].block == (256, 1, 1)  # the atomic kernel: a thread per update
    ptx = check_ptxas(kernels)
    assert "atom.global.add" in ptx["sm_80"] or "red.global.add" in ptx["sm_80"]


def test_scatter_replace_serial_in_order():
    x = np.zeros((5, 3), np.float32)
    u = np.arange(12, dtype=np.float32).reshape(4, 3)
    kernels = check_twin(_scatter(REPLACE.format(et="f32")), [x, IDX, u])
    assert kernels[1].grid == kernels[1].block == (1, 1, 1)
    check_ptxas(kernels)


SORT = """
func.func @main(%k: tensor<3x37xf32>, %v: tensor<3x37xi32>) -> (tensor<3x37xf32>, tensor<3x37xi32>) {
  %r:2 = "stablehlo.sort"(%k, %v) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
      %lt = stablehlo.compare {dir}, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
  }) {dimension = 1 : i64, is_stable = true} : (tensor<3x37xf32>, tensor<3x37xi32>) -> (tensor<3x37xf32>, tensor<3x37xi32>)
  return %r#0, %r#1 : tensor<3x37xf32>, tensor<3x37xi32>
}
"""


@pytest.mark.parametrize("dir", ["LT", "GT"])
def test_sort_stable_with_values(dir):
    rng = np.random.default_rng(0)
    k = rng.integers(0, 6, (3, 37)).astype(np.float32)  # many ties: stability shows
    k[0, 3] = np.nan
    k[1, 4] = -0.0
    v = np.arange(3 * 37, dtype=np.int32).reshape(3, 37)
    kernels = check_twin(SORT.replace("{dir}", dir), [k, v])
    assert kernels[0].block == (32, 1, 1) and kernels[0].shared_bytes == 4 * 64
    check_ptxas(kernels)


def test_sort_inner_dimension():
    text = """
func.func @main(%k: tensor<9x4xi32>) -> tensor<9x4xi32> {
  %r = "stablehlo.sort"(%k) ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %lt = stablehlo.compare LT, %a, %b : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
  }) {dimension = 0 : i64} : (tensor<9x4xi32>) -> tensor<9x4xi32>
  return %r : tensor<9x4xi32>
}
"""
    k = np.random.default_rng(1).integers(-50, 50, (9, 4)).astype(np.int32)
    check_twin(text, [k])
