"""Tiny f32 dots and convolutions skip BLAS: a dot of at most ``SMALL_DOT_MACS``
multiply-adds folds in f32 in contraction order and a convolution of at most
``WIDE_CONV_MACS`` accumulates in f64 (the loop kernel up to ``SMALL_CONV_MACS``, the
f64 convolution kernels above, :mod:`oxla_backend_cpu.wide_conv`), as the interpreter
computes them, so cpu equals
the interpreter bit for bit even where terms cancel (the dynamic conformance files
``vmap_dot_general...1_3_4`` and ``conv_general_dilated_1d_{2,3}`` were a few hundred
ULP apart through BLAS's blocked order); larger ones keep BLAS."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu

RNG = np.random.default_rng(23)

DOT = """
func.func @main(%a: tensor<3x1x3x4xf32>, %b: tensor<3x1x4x3xf32>) -> tensor<3x1xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0, 1] x [0, 1],
      contracting_dims = [3, 2] x [2, 3], precision = [HIGHEST, HIGHEST]
      : (tensor<3x1x3x4xf32>, tensor<3x1x4x3xf32>) -> tensor<3x1xf32>
  return %0 : tensor<3x1xf32>
}"""

CONV = """
func.func @main(%x: tensor<3x12x16xf32>, %w: tensor<4x16x16xf32>) -> tensor<3x24x16xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f],
      window = {pad = [[2, 2]], lhs_dilate = [2]}
      {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<3x12x16xf32>, tensor<4x16x16xf32>) -> tensor<3x24x16xf32>
  return %0 : tensor<3x24x16xf32>
}"""


def _interpret(text, args):
    from oxla.interpreter import InterpreterBackend
    from oxla.ir import parse_module

    return [np.asarray(v) for v in InterpreterBackend().compile(parse_module(text, "t"))(*args)]


@pytest.mark.parametrize("text,shapes", [
    (DOT, [(3, 1, 3, 4), (3, 1, 4, 3)]),
    (CONV, [(3, 12, 16), (4, 16, 16)]),
])
def test_small_f32_products_equal_the_interpreter_bitwise(text, shapes):
    exe = compile_cpu(text)
    for _ in range(20):  # cancellation somewhere: BLAS differed in 1-3 elements per run
        args = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
        np.testing.assert_array_equal(exe(*args)[0], _interpret(text, args)[0])


def test_thresholds_pick_the_kernels():
    from oxla_backend_cpu import linalg
    from oxla_backend_cpu.policy import blas_dot as _blas_dot

    from oxla.ir import parse_module

    dot = next(op for op in parse_module(DOT, "t").walk() if op.name == "stablehlo.dot_general")
    assert linalg.small_f32_dot(dot) and not _blas_dot(dot)
    big = DOT.replace("3x1x3x4", "3x64x3x4").replace("3x1x4x3", "3x64x4x3").replace(
        "batching_dims = [0, 1] x [0, 1]", "batching_dims = [0] x [0]").replace(
        "tensor<3x1xf32>", "tensor<3x64x64xf32>")
    bop = next(op for op in parse_module(big, "t").walk() if op.name == "stablehlo.dot_general")
    assert not linalg.small_f32_dot(bop) and _blas_dot(bop)
    conv = next(op for op in parse_module(CONV, "t").walk()
                if op.name == "stablehlo.convolution")
    assert linalg.small_f32_conv(conv, 8 * 8, 4 * 16)
    assert not linalg.small_f32_conv(conv, 3 * 24 * 16, 4 * 16)
    from oxla_backend_cpu.wide_conv import _applies

    assert _applies(conv)  # 73K multiply-adds: f64 on the convolution kernels
    assert not _applies(next(op for op in parse_module(
        CONV.replace("3x12x16", "64x12x16").replace("3x24x16", "64x24x16"), "t").walk()
        if op.name == "stablehlo.convolution"))  # 1.6M: f32 kernels
