"""Quantized types (uniform_quantize/dequantize, dequantize_op_quantize in elementwise
ops and loop dots) and TOTALORDER compares on the cpu backend against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, run_both

Q = "!quant.uniform<i8:f32, 0.0125:-3>"
Q2 = "!quant.uniform<i8:f32, 0.02:5>"
QUANT = f"""
func.func @main(%x: tensor<4x5xf32>, %w: tensor<5x3xf32>) -> (tensor<4x5xf32>, tensor<4x3xf32>) {{
  %q = stablehlo.uniform_quantize %x : (tensor<4x5xf32>) -> tensor<4x5x{Q}>
  %t = stablehlo.tanh %q : (tensor<4x5x{Q}>) -> tensor<4x5x{Q2}>
  %r = stablehlo.uniform_quantize %t : (tensor<4x5x{Q2}>) -> tensor<4x5x{Q}>
  %d = stablehlo.uniform_dequantize %r : (tensor<4x5x{Q}>) -> tensor<4x5xf32>
  %qw = stablehlo.uniform_quantize %w : (tensor<5x3xf32>) -> tensor<5x3x{Q}>
  %m = stablehlo.dot_general %q, %qw, contracting_dims = [1] x [0]
    : (tensor<4x5x{Q}>, tensor<5x3x{Q}>) -> tensor<4x3x!quant.uniform<i32:f32, 0.0002:0>>
  %md = stablehlo.uniform_dequantize %m
    : (tensor<4x3x!quant.uniform<i32:f32, 0.0002:0>>) -> tensor<4x3xf32>
  return %d, %md : tensor<4x5xf32>, tensor<4x3xf32>
}}"""


def test_quantize_elementwise_and_dot_match_the_interpreter_exactly():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(size=18), [np.nan, 9.0]]).astype(np.float32).reshape(4, 5)
    _, got = run_both(QUANT, [x, rng.normal(size=(5, 3)).astype(np.float32)], rtol=0)
    assert np.isfinite(got[0]).all()  # NaN quantizes to the zero point


PA0 = "!quant.uniform<i8:f32:0, {0.5:1, 0.25:-2}>"
PA2 = "!quant.uniform<i8<-100:100>:f32:2, {0.1:0, 0.2:3, 0.05:-7, 1.0:0}>"
PT = "!quant.uniform<i16:f32, 0.01:4>"
PER_AXIS = f"""
func.func @main(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>,
                                           tensor<2x3x4x{PA2}>, tensor<2x3x4xf32>) {{
  %q0 = stablehlo.uniform_quantize %x : (tensor<2x3x4xf32>) -> tensor<2x3x4x{PA0}>
  %d0 = stablehlo.uniform_dequantize %q0 : (tensor<2x3x4x{PA0}>) -> tensor<2x3x4xf32>
  %q2 = stablehlo.uniform_quantize %x : (tensor<2x3x4xf32>) -> tensor<2x3x4x{PA2}>
  %d2 = stablehlo.uniform_dequantize %q2 : (tensor<2x3x4x{PA2}>) -> tensor<2x3x4xf32>
  %s = stablehlo.add %d0, %d2 : tensor<2x3x4xf32>
  %r = stablehlo.uniform_quantize %q2 : (tensor<2x3x4x{PA2}>) -> tensor<2x3x4x{PT}>
  %rd = stablehlo.uniform_dequantize %r : (tensor<2x3x4x{PT}>) -> tensor<2x3x4xf32>
  return %d0, %s, %q2, %rd : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4x{PA2}>,
                             tensor<2x3x4xf32>
}}"""


def test_per_axis_quantization_matches_the_interpreter_exactly():
    """Per-axis types along the first and the last dim, a narrowed storage range, fused
    with float ops, returned as storage integers, and requantized to per-tensor."""
    rng = np.random.default_rng(5)
    x = (rng.normal(size=24) * 40).astype(np.float32)
    x[[0, 7, 13]] = [np.nan, np.inf, -0.0]
    _, got = run_both(PER_AXIS, [x.reshape(2, 3, 4)], rtol=0)
    assert got[2].dtype == np.int8 and got[2].min() >= -100 and got[2].max() <= 100
    assert got[0][1, 0, 0] == (np.clip(np.round(x[12] / 0.25) - 2, -128, 127) + 2) * 0.25


def test_per_axis_operand_of_another_op_is_a_clear_error():
    text = """
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %q = stablehlo.uniform_quantize %x
    : (tensor<2x3xf32>) -> tensor<2x3x!quant.uniform<i8:f32:1, {0.1:0, 0.2:1, 0.3:2}>>
  %a = stablehlo.abs %q : tensor<2x3x!quant.uniform<i8:f32:1, {0.1:0, 0.2:1, 0.3:2}>>
  %d = stablehlo.uniform_dequantize %a
    : (tensor<2x3x!quant.uniform<i8:f32:1, {0.1:0, 0.2:1, 0.3:2}>>) -> tensor<2x3xf32>
  return %d : tensor<2x3xf32>
}"""
    from oxla.errors import NotSupportedError

    with pytest.raises(NotSupportedError, match="per-axis"):
        compile_cpu(text)


@pytest.mark.parametrize("ty,dt", [("f32", np.float32), ("f16", np.float16),
                                   ("f64", np.float64), ("bf16", None)])
def test_compare_totalorder(ty, dt):
    if dt is None:
        dt = pytest.importorskip("ml_dtypes").bfloat16
    text = f"""
func.func @main(%a: tensor<8x{ty}>, %b: tensor<8x{ty}>) -> (tensor<8xi1>, tensor<8xi1>) {{
  %0 = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<8x{ty}>, tensor<8x{ty}>) -> tensor<8xi1>
  %1 = stablehlo.compare EQ, %a, %b, TOTALORDER : (tensor<8x{ty}>, tensor<8x{ty}>) -> tensor<8xi1>
  return %0, %1 : tensor<8xi1>, tensor<8xi1>
}}"""
    a = np.array([-np.nan, -np.inf, -0.0, 0.0, 1.0, np.nan, -2.0, 3.0]).astype(dt)
    b = np.array([np.nan, -1.0, 0.0, -0.0, 1.0, -np.nan, -2.0, np.inf]).astype(dt)
    _, got = run_both(text, [a, b])
    assert got[0].tolist()[:4] == [True, True, True, False]  # -0 < +0, -NaN first
