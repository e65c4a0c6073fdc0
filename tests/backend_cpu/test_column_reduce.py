"""Reductions that keep the innermost dimension (sum/max/argmax over axis 0, middle
axes) run across columns (``opkernels._reduce_across_columns``) in the same order as
the row-by-row loop: float sums bitwise equal to the interpreter's, argmax ties (lowest
index) and NaNs, int32 wrap-around, empty reduced dimensions, fused operands."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(4)


def _t(shape, et):
    return f"tensor<{'x'.join(map(str, shape))}x{et}>" if shape else f"tensor<{et}>"


def _reduce(shape, dims, et="f32", op="add", init="0.0", pre=""):
    out = [d for i, d in enumerate(shape) if i not in dims]
    x = "%y" if pre else "%x"
    pre_line = f"  %y = stablehlo.{pre} %x : {_t(shape, et)}\n" if pre else ""
    return f"""func.func @main(%x: {_t(shape, et)}) -> {_t(out, et)} {{
{pre_line}  %init = stablehlo.constant dense<{init}> : tensor<{et}>
  %r = stablehlo.reduce({x} init: %init) applies stablehlo.{op} across dimensions = {dims}
    : ({_t(shape, et)}, tensor<{et}>) -> {_t(out, et)}
  return %r : {_t(out, et)}
}}
"""


@pytest.mark.parametrize("shape,dims", [((300, 37), [0]), ((4, 50, 19), [1]),
                                        ((3, 5, 7, 9), [0, 2]), ((6, 2, 33), [0, 1])])
def test_float_sums_are_bitwise_the_row_order(shape, dims):
    x = (RNG.standard_normal(shape) * 10.0 ** RNG.integers(-4, 5, shape)).astype(np.float32)
    run_both(_reduce(shape, dims), [x], rtol=0.0)


def test_fused_operand_and_max_with_nans():
    x = RNG.standard_normal((64, 40)).astype(np.float32)
    run_both(_reduce((64, 40), [0], pre="exponential"), [x], rtol=1e-6)
    x[5, 3] = np.nan
    run_both(_reduce((64, 40), [0], op="maximum", init="0xFF800000"), [x], rtol=0.0)


def test_int32_wraps():
    x = RNG.integers(-2**31, 2**31, (100, 17), dtype=np.int64).astype(np.int32)
    run_both(_reduce((100, 17), [0], et="i32", init="0"), [x])


@pytest.mark.parametrize("shape", [(0, 8), (5, 0), (0, 3, 4)])
def test_empty_dims(shape):
    run_both(_reduce(shape, [0]), [np.zeros(shape, np.float32)])


def test_argmax_over_axis0_ties_and_nans():
    """Variadic reduce (value, index) as jnp.argmax emits it: lowest index on ties,
    NaN wins."""
    r, c = 50, 24
    x = RNG.integers(-2, 3, (r, c)).astype(np.float32)
    x[7, 2] = np.nan
    x[9, 2] = np.nan
    text = f"""func.func @main(%x: tensor<{r}x{c}xf32>) -> tensor<{c}xi32> {{
  %i = stablehlo.iota dim = 0 : tensor<{r}x{c}xi32>
  %v0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %res:2 = stablehlo.reduce(%x init: %v0), (%i init: %i0) across dimensions = [0]
    : (tensor<{r}x{c}xf32>, tensor<{r}x{c}xi32>, tensor<f32>, tensor<i32>)
    -> (tensor<{c}xf32>, tensor<{c}xi32>)
   reducer(%a: tensor<f32>, %b: tensor<f32>) (%ai: tensor<i32>, %bi: tensor<i32>) {{
    %gt = stablehlo.compare GT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %nan = stablehlo.compare NE, %a, %a, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %pa = stablehlo.or %gt, %nan : tensor<i1>
    %eq = stablehlo.compare EQ, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %lt = stablehlo.compare LT, %ai, %bi, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = stablehlo.and %eq, %lt : tensor<i1>
    %keep = stablehlo.or %pa, %tie : tensor<i1>
    %v = stablehlo.select %keep, %a, %b : tensor<i1>, tensor<f32>
    %j = stablehlo.select %keep, %ai, %bi : tensor<i1>, tensor<i32>
    stablehlo.return %v, %j : tensor<f32>, tensor<i32>
  }}
  return %res#1 : tensor<{c}xi32>
}}
"""
    run_both(text, [x])
