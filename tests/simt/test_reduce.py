"""``reduce`` on the GPU kernels: row (shared-memory tree, shuffles on sm_80+), column
(tree across 8 rows) and serial shapes; sums, max, integer and variadic (argmax) bodies;
host twin against the interpreter, ptxas for sm_80/sm_90."""

from __future__ import annotations

import numpy as np
import pytest

from tests.simt.conftest import check_ptxas, check_twin


def _sum(shape, dims, et="f32", body="add"):
    s = "x".join(map(str, shape))
    out = [d for i, d in enumerate(shape) if i not in dims]
    o = "x".join(map(str, out))
    ot = f"tensor<{o}x{et}>" if out else f"tensor<{et}>"
    init = "0.0" if et.startswith("f") else "0"
    if body == "maximum":
        init = "0xFF800000" if et == "f32" else "-2147483648"
    return f"""
func.func @main(%x: tensor<{s}x{et}>) -> {ot} {{
  %z = stablehlo.constant dense<{init}> : tensor<{et}>
  %e = stablehlo.multiply %x, %x : tensor<{s}x{et}>
  %r = stablehlo.reduce(%e init: %z) applies stablehlo.{body} across dimensions = {list(dims)}
      : (tensor<{s}x{et}>, tensor<{et}>) -> {ot}
  return %r : {ot}
}}
"""


def _kind(kernels):
    return kernels[0].block


CASES = {
    "row": ((6, 300), [1], (256, 1, 1)),
    "row-short": ((5, 40), [1], (32, 1, 1)),
    "row-2d": ((3, 8, 16), [1, 2], (128, 1, 1)),
    "column": ((200, 20), [0], (32, 8, 1)),
    "serial-middle": ((4, 7, 3), [1], (256, 1, 1)),
    "serial-small": ((50, 6), [1], (256, 1, 1)),
    "all": ((40, 30), [0, 1], (256, 1, 1)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_sum_shapes(name):
    shape, dims, block = CASES[name]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    kernels = check_twin(_sum(shape, dims), [x], rtol=2e-6, atol=1e-6)
    assert kernels[0].block == block


@pytest.mark.parametrize("body", ["add", "maximum"])
def test_integer_row_exact(body):
    x = np.random.default_rng(2).integers(-1000, 1000, (7, 100)).astype(np.int32)
    check_twin(_sum((7, 100), [1], "i32", body), [x])


def test_max_row_f32_exact_and_ptxas_uses_shuffle():
    x = np.random.default_rng(3).standard_normal((9, 500)).astype(np.float32)
    kernels = check_twin(_sum((9, 500), [1], "f32", "maximum"), [x])
    ptx = check_ptxas(kernels)
    assert "shfl.sync.down" in ptx["sm_80"] and "bar.sync" in ptx["sm_90"]


ARGMAX = """
func.func @main(%x: tensor<5x70xf32>) -> (tensor<5xf32>, tensor<5xi32>) {
  %i = stablehlo.iota dim = 1 : tensor<5x70xi32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.reduce(%x init: %ninf), (%i init: %zero) across dimensions = [1]
      : (tensor<5x70xf32>, tensor<5x70xi32>, tensor<f32>, tensor<i32>) -> (tensor<5xf32>, tensor<5xi32>)
    reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<i32>, %d: tensor<i32>) {
      %gt = stablehlo.compare GT, %a, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %eq = stablehlo.compare EQ, %a, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %lt = stablehlo.compare LT, %b, %d : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %eqlt = stablehlo.and %eq, %lt : tensor<i1>
      %pick = stablehlo.or %gt, %eqlt : tensor<i1>
      %v = stablehlo.select %pick, %a, %c : tensor<i1>, tensor<f32>
      %j = stablehlo.select %pick, %b, %d : tensor<i1>, tensor<i32>
      stablehlo.return %v, %j : tensor<f32>, tensor<i32>
    }
  return %r#0, %r#1 : tensor<5xf32>, tensor<5xi32>
}
"""


def test_variadic_argmax():
    x = np.random.default_rng(4).standard_normal((5, 70)).astype(np.float32)
    x[2, 10] = x[2, 50] = 9.0  # a tie: the lower index wins
    kernels = check_twin(ARGMAX, [x])
    check_ptxas(kernels)
