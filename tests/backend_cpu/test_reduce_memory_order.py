"""Reductions whose reduced dimensions have kept ones between them and a short
contiguous reduced run at the end (group norm's statistics) read the operand once in
memory order (``opkernels._reduce_in_memory_order``), in the row loop's order per result
element: float sums bitwise equal to the interpreter's, int32 wrap-around, argmax ties,
threaded (kept leading dims) and serial (none) forms."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(12)


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


def test_group_norm_shape_is_memory_order():
    from oxla_backend_cpu.reduction import interleaved_reduce

    assert interleaved_reduce((4, 64, 64, 8, 4), [1, 2, 4])
    assert not interleaved_reduce((4, 64, 64, 8, 4), [1, 2, 3, 4])  # a suffix
    assert not interleaved_reduce((4, 8, 128), [0, 2])  # long contiguous run


@pytest.mark.parametrize("shape,dims", [((3, 6, 5, 4, 2), [1, 2, 4]), ((2, 7, 3, 5), [1, 3]),
                                        ((50, 3, 7), [0, 2]), ((64, 32, 16, 8, 3), [1, 4]),
                                        ((5, 4, 3, 2), [0, 1, 3])])
def test_float_sums_are_bitwise_the_row_order(shape, dims):
    x = (RNG.standard_normal(shape) * 10.0 ** RNG.integers(-4, 5, shape)).astype(np.float32)
    run_both(_reduce(shape, dims), [x], rtol=0.0)


def test_fused_operand_max_and_int32():
    shape = (6, 9, 4, 5)
    x = RNG.standard_normal(shape).astype(np.float32)
    run_both(_reduce(shape, [1, 3], pre="exponential"), [x], rtol=1e-6)
    x[2, 3, 1, 4] = np.nan
    run_both(_reduce(shape, [1, 3], op="maximum", init="0xFF800000"), [x], rtol=0.0)
    xi = RNG.integers(-2**31, 2**31, shape, dtype=np.int64).astype(np.int32)
    run_both(_reduce(shape, [1, 3], et="i32", init="0"), [xi])


def test_argmax_over_interleaved_dims():
    """Variadic (value, index) reduce: lowest index on ties, as the row loop."""
    shape = (3, 10, 4, 6)
    x = RNG.integers(-2, 3, shape).astype(np.float32)
    t = "x".join(map(str, shape))
    text = f"""func.func @main(%x: tensor<{t}xf32>) -> tensor<3x4xi32> {{
  %i = stablehlo.iota dim = 1 : tensor<{t}xi32>
  %v0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %res:2 = stablehlo.reduce(%x init: %v0), (%i init: %i0) across dimensions = [1, 3]
    : (tensor<{t}xf32>, tensor<{t}xi32>, tensor<f32>, tensor<i32>)
    -> (tensor<3x4xf32>, tensor<3x4xi32>)
   reducer(%a: tensor<f32>, %b: tensor<f32>) (%ai: tensor<i32>, %bi: tensor<i32>) {{
    %gt = stablehlo.compare GT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %eq = stablehlo.compare EQ, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %lt = stablehlo.compare LT, %ai, %bi, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = stablehlo.and %eq, %lt : tensor<i1>
    %keep = stablehlo.or %gt, %tie : tensor<i1>
    %v = stablehlo.select %keep, %a, %b : tensor<i1>, tensor<f32>
    %j = stablehlo.select %keep, %ai, %bi : tensor<i1>, tensor<i32>
    stablehlo.return %v, %j : tensor<f32>, tensor<i32>
  }}
  return %res#1 : tensor<3x4xi32>
}}"""
    run_both(text, [x])
