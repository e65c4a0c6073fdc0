"""A returned ``reshape`` of a computed value is free: the value's producer writes the
result buffer directly (:func:`oxla.lowering.fusion._reshaped_results`), checked
against the interpreter, with the value also returned, read by other kernels, reshaped
twice, and produced by dot, reduce and loop kernels."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(3)
A = "tensor<6x5xf32>"
W = "tensor<7x5xf32>"
D = "tensor<6x7xf32>"
R = "tensor<1x6x7xf32>"
DOT = f"""  %d = stablehlo.dot_general %a, %w, contracting_dims = [1] x [1] : ({A}, {W}) -> {D}
  %r = stablehlo.reshape %d : ({D}) -> {R}
"""


def _args():
    return [RNG.standard_normal((6, 5)).astype(np.float32),
            RNG.standard_normal((7, 5)).astype(np.float32)]


@pytest.mark.parametrize("body,results,ret,kernels", [
    ("", R, f"%r : {R}", 1),  # the dot writes the result
    ("", f"{R}, {D}", f"%r, %d : {R}, {D}", 2),  # %d returned too: a copy
    ("", f"{R}, {R}", f"%r, %r : {R}, {R}", 2),  # the same reshape twice
    (f"  %r2 = stablehlo.reshape %d : ({D}) -> tensor<42xf32>\n", f"{R}, tensor<42xf32>",
     f"%r, %r2 : {R}, tensor<42xf32>", 2),  # two reshapes of one dot
    (f"  %t = stablehlo.tanh %d : {D}\n", f"{R}, {D}", f"%r, %t : {R}, {D}", 2),
])
def test_returned_reshape_of_a_dot(body, results, ret, kernels):
    text = f"""func.func @main(%a: {A}, %w: {W}) -> ({results}) {{
{DOT}{body}  return {ret}
}}"""
    exe, _ = run_both(text, _args(), rtol=1e-5, atol=1e-6)
    assert exe.stats["kernel_count"] == kernels


def test_reshape_of_reduce_and_loop_results():
    """Row sums (a reduce kernel) reshaped; ``exp``, recomputed by its readers, fuses
    with its reshape; a column sum besides."""
    x = "tensor<64x96xf32>"
    text = f"""func.func @main(%x: {x}) -> (tensor<8x8xf32>, tensor<6144xf32>, tensor<96xf32>) {{
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %e = stablehlo.exponential %x : {x}
  %s = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [1]
    : ({x}, tensor<f32>) -> tensor<64xf32>
  %m = stablehlo.multiply %e, %e : {x}
  %t = stablehlo.reduce(%m init: %z) applies stablehlo.add across dimensions = [0]
    : ({x}, tensor<f32>) -> tensor<96xf32>
  %s2 = stablehlo.reshape %s : (tensor<64xf32>) -> tensor<8x8xf32>
  %e2 = stablehlo.reshape %e : ({x}) -> tensor<6144xf32>
  return %s2, %e2, %t : tensor<8x8xf32>, tensor<6144xf32>, tensor<96xf32>
}}"""
    exe, _ = run_both(text, [RNG.standard_normal((64, 96)).astype(np.float32)],
                      rtol=1e-6, atol=1e-7)
    assert exe.stats["kernel_count"] == 3  # two reduces, exp+reshape: no copy


def test_reshape_of_an_argument_is_still_copied():
    text = f"""func.func @main(%a: {A}) -> tensor<30xf32> {{
  %r = stablehlo.reshape %a : ({A}) -> tensor<30xf32>
  return %r : tensor<30xf32>
}}"""
    exe, (got,) = run_both(text, _args()[:1])
    assert exe.stats["kernel_count"] == 1


def test_blas_dot_writes_the_reshaped_result():
    """A GEMM large enough for BLAS (``DotKernel``), as GPT-2's ``lm_head``."""
    a, w, d, r = ("tensor<1x48x64xf32>", "tensor<300x64xf32>", "tensor<48x300xf32>",
                  "tensor<1x48x300xf32>")
    text = f"""func.func @main(%a: {a}, %w: {w}) -> {r} {{
  %a2 = stablehlo.reshape %a : ({a}) -> tensor<48x64xf32>
  %d = stablehlo.dot_general %a2, %w, contracting_dims = [1] x [1]
    : (tensor<48x64xf32>, {w}) -> {d}
  %r = stablehlo.reshape %d : ({d}) -> {r}
  return %r : {r}
}}"""
    args = [RNG.standard_normal((1, 48, 64)).astype(np.float32),
            RNG.standard_normal((300, 64)).astype(np.float32)]
    exe, _ = run_both(text, args, rtol=1e-4, atol=1e-5)
    assert exe.stats["kernel_count"] == 2  # the argument's reshape, the GEMM
