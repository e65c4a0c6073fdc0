"""Every compiling backend against the reference interpreter on small programs (the
``backend`` fixture, :mod:`tests.differential.conftest`); plan figures (kernel counts,
arena bytes) are checked for the cpu backend, whose fusion they describe."""

from __future__ import annotations

import numpy as np
import pytest

from tests.differential.conftest import compile_on, run_both

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_float_elementwise_chain(ty, backend):
    text = f"""
func.func @main(%a: tensor<4x5x{ty}>, %b: tensor<4x5x{ty}>) -> tensor<4x5x{ty}> {{
  %0 = stablehlo.multiply %a, %b : tensor<4x5x{ty}>
  %1 = stablehlo.subtract %0, %a : tensor<4x5x{ty}>
  %2 = stablehlo.divide %1, %b : tensor<4x5x{ty}>
  %3 = stablehlo.maximum %2, %a : tensor<4x5x{ty}>
  %4 = stablehlo.negate %3 : tensor<4x5x{ty}>
  %5 = stablehlo.abs %4 : tensor<4x5x{ty}>
  %6 = stablehlo.sqrt %5 : tensor<4x5x{ty}>
  %7 = stablehlo.exponential %6 : tensor<4x5x{ty}>
  %8 = stablehlo.tanh %7 : tensor<4x5x{ty}>
  %9 = stablehlo.add %8, %0 : tensor<4x5x{ty}>
  return %9 : tensor<4x5x{ty}>
}}"""
    dt = np.float32 if ty == "f32" else np.float64
    a, b = (RNG.standard_normal((4, 5)).astype(dt) for _ in range(2))
    exe, _ = run_both(backend, text, [a, b], rtol=1e-5 if ty == "f32" else 1e-12)
    assert backend != "cpu" or exe.stats["kernel_count"] == 1  # %0 recomputed in one loop


def test_integer_division_edge_cases(backend):
    text = """
func.func @main(%a: tensor<8xi32>, %b: tensor<8xi32>) -> (tensor<8xi32>, tensor<8xi32>,
    tensor<8xi32>, tensor<8xi32>, tensor<8xi32>) {
  %0 = stablehlo.divide %a, %b : tensor<8xi32>
  %1 = stablehlo.remainder %a, %b : tensor<8xi32>
  %2 = stablehlo.shift_left %a, %b : tensor<8xi32>
  %3 = stablehlo.shift_right_arithmetic %a, %b : tensor<8xi32>
  %4 = stablehlo.shift_right_logical %a, %b : tensor<8xi32>
  return %0, %1, %2, %3, %4 : tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>,
    tensor<8xi32>
}"""
    imin = np.iinfo(np.int32).min
    a = np.array([7, -7, 7, -7, imin, imin, 5, -1], np.int32)
    b = np.array([2, 2, -2, 0, -1, 0, 40, 31], np.int32)
    run_both(backend, text, [a, b])


def test_unsigned_and_convert(backend):
    text = """
func.func @main(%a: tensor<6xui8>, %b: tensor<6xui8>, %f: tensor<6xf32>) -> (tensor<6xui8>,
    tensor<6xui8>, tensor<6xi32>, tensor<6xf64>, tensor<6xi1>) {
  %0 = stablehlo.divide %a, %b : tensor<6xui8>
  %1 = stablehlo.remainder %a, %b : tensor<6xui8>
  %2 = stablehlo.convert %a : (tensor<6xui8>) -> tensor<6xi32>
  %3 = stablehlo.convert %f : (tensor<6xf32>) -> tensor<6xf64>
  %4 = stablehlo.compare LT, %a, %b, UNSIGNED : (tensor<6xui8>, tensor<6xui8>) -> tensor<6xi1>
  return %0, %1, %2, %3, %4 : tensor<6xui8>, tensor<6xui8>, tensor<6xi32>, tensor<6xf64>,
    tensor<6xi1>
}"""
    a = np.array([200, 7, 0, 255, 3, 9], np.uint8)
    b = np.array([3, 0, 5, 255, 200, 2], np.uint8)
    f = RNG.standard_normal(6).astype(np.float32)
    run_both(backend, text, [a, b, f])


def test_broadcast_select_iota_transpose(backend):
    text = """
func.func @main(%a: tensor<3x4xf32>, %b: tensor<4xf32>) -> (tensor<4x3xf32>, tensor<3x4xi32>) {
  %0 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<4xf32>) -> tensor<3x4xf32>
  %1 = stablehlo.compare GT, %a, %0 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xi1>
  %2 = stablehlo.select %1, %a, %0 : tensor<3x4xi1>, tensor<3x4xf32>
  %3 = stablehlo.transpose %2, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %4 = stablehlo.iota dim = 1 : tensor<3x4xi32>
  %5 = stablehlo.reshape %4 : (tensor<3x4xi32>) -> tensor<12xi32>
  %6 = stablehlo.reshape %5 : (tensor<12xi32>) -> tensor<3x4xi32>
  return %3, %6 : tensor<4x3xf32>, tensor<3x4xi32>
}"""
    run_both(backend, text, [RNG.standard_normal((3, 4)).astype(np.float32),
                    RNG.standard_normal(4).astype(np.float32)])


@pytest.mark.parametrize("body,dims", [("add", "[1]"), ("maximum", "[0, 2]"),
                                       ("minimum", "[0, 1, 2]"), ("multiply", "[2]")])
def test_reductions(body, dims, backend):
    out = {"[1]": "2x4", "[0, 2]": "3", "[0, 1, 2]": "", "[2]": "2x3"}[dims]
    out_t = f"tensor<{out}xf32>" if out else "tensor<f32>"
    text = f"""
func.func @main(%a: tensor<2x3x4xf32>) -> {out_t} {{
  %c = stablehlo.constant dense<1.0> : tensor<f32>
  %0 = stablehlo.exponential %a : tensor<2x3x4xf32>
  %1 = stablehlo.reduce(%0 init: %c) applies stablehlo.{body} across dimensions = {dims}
    : (tensor<2x3x4xf32>, tensor<f32>) -> {out_t}
  return %1 : {out_t}
}}"""
    exe, _ = run_both(backend, text, [RNG.standard_normal((2, 3, 4)).astype(np.float32)], rtol=1e-5)
    assert backend != "cpu" or exe.stats["kernel_count"] == 1  # exp fused into the reduce


def test_integer_reduction_is_exact(backend):
    text = """
func.func @main(%a: tensor<5x7xi32>) -> tensor<7xi32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.reduce(%a init: %c) applies stablehlo.add across dimensions = [0]
    : (tensor<5x7xi32>, tensor<i32>) -> tensor<7xi32>
  return %0 : tensor<7xi32>
}"""
    run_both(backend, text, [RNG.integers(-2**31, 2**31 - 1, (5, 7), dtype=np.int32)])


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_dot_general_batch_and_transposed_layouts(ty, backend):
    text = f"""
func.func @main(%x: tensor<4x2x3x{ty}>, %w: tensor<4x3x5x{ty}>, %v: tensor<3x4x5x{ty}>)
    -> (tensor<4x2x5x{ty}>, tensor<4x5x2x{ty}>, tensor<4x2x5x{ty}>) {{
  %0 = stablehlo.dot_general %x, %w, batching_dims = [0] x [0], contracting_dims = [2] x [1]
    : (tensor<4x2x3x{ty}>, tensor<4x3x5x{ty}>) -> tensor<4x2x5x{ty}>
  %1 = stablehlo.dot_general %w, %x, batching_dims = [0] x [0], contracting_dims = [1] x [2]
    : (tensor<4x3x5x{ty}>, tensor<4x2x3x{ty}>) -> tensor<4x5x2x{ty}>
  %2 = stablehlo.dot_general %x, %v, batching_dims = [0] x [1], contracting_dims = [2] x [0]
    : (tensor<4x2x3x{ty}>, tensor<3x4x5x{ty}>) -> tensor<4x2x5x{ty}>
  return %0, %1, %2 : tensor<4x2x5x{ty}>, tensor<4x5x2x{ty}>, tensor<4x2x5x{ty}>
}}"""
    dt = np.float32 if ty == "f32" else np.float64
    args = [RNG.standard_normal(s).astype(dt) for s in [(4, 2, 3), (4, 3, 5), (3, 4, 5)]]
    run_both(backend, text, args, rtol=1e-5 if ty == "f32" else 1e-12, atol=1e-6)


def test_mlp(backend):
    text = """
func.func @main(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %b1: tensor<32xf32>,
                %w2: tensor<32x4xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0]
    : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = stablehlo.broadcast_in_dim %b1, dims = [1] : (tensor<32xf32>) -> tensor<8x32xf32>
  %2 = stablehlo.add %0, %1 : tensor<8x32xf32>
  %z = stablehlo.constant dense<0.0> : tensor<8x32xf32>
  %3 = stablehlo.maximum %2, %z : tensor<8x32xf32>
  %4 = stablehlo.dot_general %3, %w2, contracting_dims = [1] x [0]
    : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
  %5 = stablehlo.logistic %4 : tensor<8x4xf32>
  return %5 : tensor<8x4xf32>
}"""
    args = [RNG.standard_normal(s).astype(np.float32) for s in [(8, 16), (16, 32), (32,), (32, 4)]]
    exe, _ = run_both(backend, text, args, rtol=1e-5, atol=1e-6)
    assert backend != "cpu" or exe.stats["kernel_count"] == 4  # dot, bias+relu, dot, logistic
    assert backend != "cpu" or exe.stats["temp_bytes"] > 0


def test_returned_argument_constant_and_duplicate(backend):
    text = """
func.func @main(%a: tensor<3xi32>) -> (tensor<3xi32>, tensor<3xi32>, tensor<3xi32>,
    tensor<3xi32>) {
  %c = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>
  %0 = stablehlo.add %a, %c : tensor<3xi32>
  return %a, %c, %0, %0 : tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>
}"""
    run_both(backend, text, [np.array([4, 5, 6], np.int32)])


def test_buffers_are_reused_and_outputs_are_fresh(backend):
    # column sums (dimension 0), so the reductions stay kernels (row fusion would keep
    # trailing-dimension sums in registers, with no buffers to reuse)
    t, r = "tensor<64x64xf32>", "tensor<64xf32>"
    text = f"""
func.func @main(%a: {t}) -> {t} {{
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0] : ({t}, tensor<f32>) -> {r}
  %1 = stablehlo.broadcast_in_dim %0, dims = [1] : ({r}) -> {t}
  %2 = stablehlo.add %a, %1 : {t}
  %3 = stablehlo.reduce(%2 init: %z) applies stablehlo.add across dimensions = [0] : ({t}, tensor<f32>) -> {r}
  %4 = stablehlo.broadcast_in_dim %3, dims = [1] : ({r}) -> {t}
  %5 = stablehlo.add %a, %4 : {t}
  %6 = stablehlo.reduce(%5 init: %z) applies stablehlo.add across dimensions = [0] : ({t}, tensor<f32>) -> {r}
  %7 = stablehlo.broadcast_in_dim %6, dims = [1] : ({r}) -> {t}
  %8 = stablehlo.add %a, %7 : {t}
  return %8 : {t}
}}"""
    exe = compile_on(backend, text)
    # %0, %3 and %6 are materialized (reduce results); %0 and %3 die before the result is
    # written, so they live inside the result's bytes; only %6 takes arena bytes.
    assert backend != "cpu" or exe.stats["temp_bytes"] == 256
    assert backend != "cpu" or "2 inside results" in "\n".join(exe.stages)
    a = RNG.standard_normal((64, 64)).astype(np.float32)
    r1 = exe(a)[0]
    r2 = exe(a + 1)[0]
    assert r1 is not r2 and not np.array_equal(r1, r2)
