"""``mhlo.copy``, which TensorFlow's StableHLO export leaves in Keras RNN loops."""

from __future__ import annotations

import numpy as np

import oxla
from oxla.ir import parse_module, print_module

TEXT = """func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = mhlo.copy %a : tensor<2x3xf32>
  %1 = stablehlo.add %0, %a : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}"""


def test_mhlo_copy_round_trips_through_the_printer():
    printed = print_module(parse_module(TEXT))
    assert "mhlo.copy %arg0 : tensor<2x3xf32>" in printed
    assert print_module(parse_module(printed)) == printed


def test_mhlo_copy_is_the_identity_on_the_interpreter():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (out,) = oxla.compile(TEXT, backend="interpreter")(x)
    np.testing.assert_array_equal(out, 2 * x)
