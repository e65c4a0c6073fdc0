"""``real_dynamic_slice`` whose run-time start leaves the operand: the result keeps
``ceil((limit - start) / stride)`` elements and the start is clamped, as XLA compiles it
(a ``dynamic_slice``); cpu and the interpreter agree and cpu never reads outside the
operand (it returned neighbouring memory before). ``dynamlic_slice_t2.mlir``'s case."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both

TEXT = """
func.func @main(%x: tensor<5x7xf32>, %s: tensor<2xi32>) -> tensor<3x2xf32> {
  %size = stablehlo.constant dense<[3, 4]> : tensor<2xi32>
  %l = stablehlo.add %s, %size : tensor<2xi32>
  %st = stablehlo.constant dense<[1, 3]> : tensor<2xi32>
  %r = stablehlo.real_dynamic_slice %x, %s, %l, %st
      : (tensor<5x7xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<3x2xf32>
  return %r : tensor<3x2xf32>
}"""


@pytest.mark.parametrize("start", [(0, 0), (2, 3), (4, 6), (-3, -1), (9, 1), (1, 100)])
def test_out_of_bounds_start_is_clamped(start):
    x = np.arange(35, dtype=np.float32).reshape(5, 7)
    s = np.array(start, np.int32)
    _, got = run_both(TEXT, [x, s], rtol=0)
    r0 = min(max(start[0], 0), 5 - 3)  # 3 rows, stride 1
    c0 = min(max(start[1], 0), 7 - 4)  # 2 columns, stride 3: span 4
    np.testing.assert_array_equal(got[0], x[r0:r0 + 3, c0:c0 + 4:3])


def test_interpreter_rejects_a_slice_longer_than_the_axis():
    from oxla.errors import InterpreterError
    from oxla.interpreter import InterpreterBackend
    from oxla.ir import parse_module

    text = """
func.func @main(%x: tensor<2xf32>, %s: tensor<1xi32>, %l: tensor<1xi32>) -> tensor<?xf32> {
  %st = stablehlo.constant dense<1> : tensor<1xi32>
  %r = stablehlo.real_dynamic_slice %x, %s, %l, %st
      : (tensor<2xf32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}"""
    exe = InterpreterBackend().compile(parse_module(text, "t.mlir"))
    assert exe(np.ones(2, np.float32), np.array([1], np.int32),
               np.array([2], np.int32))[0].tolist() == [1.0]
    with pytest.raises(InterpreterError, match="do not fit"):
        exe(np.ones(2, np.float32), np.array([0], np.int32), np.array([3], np.int32))
