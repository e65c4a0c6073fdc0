"""bf16/f16 and 8-bit integer dots as f32 GEMMs (:mod:`oxla_backend_cpu.widen_dots`),
against the interpreter: integer results bit for bit, also with the extreme values
(-128 * -128 summed over 2500 terms: three exact f32 chunks, int32 wrap-around),
unsigned, i64 results, batched and multi-dimension contractions, constant
weights; half-precision dots within their rounding."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from oxla.ir import parse_module
from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(8)


def _dot(ls, rs, lt, rt, ot, dims="contracting_dims = [1] x [0]", out=None):
    lts = f"tensor<{'x'.join(map(str, ls))}x{lt}>"
    rts = f"tensor<{'x'.join(map(str, rs))}x{rt}>"
    ots = f"tensor<{'x'.join(map(str, out or (ls[0], rs[1])))}x{ot}>"
    return f"""func.func @main(%a: {lts}, %b: {rts}) -> {ots} {{
  %r = stablehlo.dot_general %a, %b, {dims} : ({lts}, {rts}) -> {ots}
  return %r : {ots}
}}
"""


def _widened(text) -> int:
    from oxla_backend_cpu.widen_dots import widen_dots

    return widen_dots(parse_module(text))


@pytest.mark.parametrize("k", [7, 1024, 2500])
def test_int8_dot_is_exact_across_chunks(k):
    a = RNG.integers(-128, 128, (9, k)).astype(np.int8)
    b = RNG.integers(-128, 128, (k, 11)).astype(np.int8)
    a[0], b[:, 0] = -128, -128  # 16384 * k: past f32's 2^24 for k > 1024
    text = _dot((9, k), (k, 11), "i8", "i8", "i32")
    assert _widened(text) == 1
    run_both(text, [a, b])


def test_uint8_and_i64_results():
    a = RNG.integers(0, 256, (5, 600)).astype(np.uint8)
    b = RNG.integers(0, 256, (600, 4)).astype(np.uint8)
    a[1], b[:, 1] = 255, 255
    run_both(_dot((5, 600), (600, 4), "ui8", "ui8", "i32"), [a, b])
    run_both(_dot((5, 600), (600, 4), "ui8", "ui8", "i64"), [a, b])


def test_int32_wraparound_matches_the_spec():
    k = 140000  # 140000 * 16384 > 2^31: the int32 result wraps
    a = np.full((1, k), -128, np.int8)
    b = np.full((k, 2), -128, np.int8)
    run_both(_dot((1, k), (k, 2), "i8", "i8", "i32"), [a, b])


def test_batched_and_multi_dim_contractions():
    a = RNG.integers(-128, 128, (3, 6, 4, 5)).astype(np.int8)
    b = RNG.integers(-128, 128, (3, 4, 5, 7)).astype(np.int8)
    dims = ("batching_dims = [0] x [0], contracting_dims = [2, 3] x [1, 2]")
    text = _dot((3, 6, 4, 5), (3, 4, 5, 7), "i8", "i8", "i32", dims, out=(3, 6, 7))
    assert _widened(text) == 1
    run_both(text, [a, b])


def test_constant_int8_weights():
    w = RNG.integers(-128, 128, (64, 32)).astype(np.int8)
    body = ", ".join(str(int(v)) for v in w.reshape(-1))
    text = f"""func.func @main(%a: tensor<8x64xi8>) -> tensor<8x32xi32> {{
  %w = stablehlo.constant dense<[{body}]> : tensor<2048xi8>
  %wr = stablehlo.reshape %w : (tensor<2048xi8>) -> tensor<64x32xi8>
  %r = stablehlo.dot_general %a, %wr, contracting_dims = [1] x [0]
    : (tensor<8x64xi8>, tensor<64x32xi8>) -> tensor<8x32xi32>
  return %r : tensor<8x32xi32>
}}
"""
    a = RNG.integers(-128, 128, (8, 64)).astype(np.int8)
    run_both(text, [a])


@pytest.mark.parametrize("lt,ot", [("bf16", "bf16"), ("bf16", "f32"), ("f16", "f16"),
                                   ("f16", "f32")])
def test_half_precision_dots(lt, ot):
    dt = ml_dtypes.bfloat16 if lt == "bf16" else np.float16
    a = RNG.standard_normal((17, 96)).astype(dt)
    b = RNG.standard_normal((96, 13)).astype(dt)
    text = _dot((17, 96), (96, 13), lt, lt, ot)
    assert _widened(text) == 1
    tol = 2e-2 if ot != "f32" else 1e-5
    run_both(text, [a, b], rtol=tol, atol=tol * 10)


def test_int16_dots_are_left_alone():
    text = _dot((4, 8), (8, 4), "i16", "i16", "i32")
    assert _widened(text) == 0
    a = RNG.integers(-3000, 3000, (4, 8)).astype(np.int16)
    run_both(text, [a, a.T.copy()])


def _bcast_dot(wshape, bshape, bdims, lshape, dims, out):
    f = lambda s: "x".join(map(str, s))  # noqa: E731
    return f"""func.func @main(%a: tensor<{f(lshape)}xf32>, %w: tensor<{f(wshape)}xf32>)
    -> tensor<{f(out)}xf32> {{
  %b = stablehlo.broadcast_in_dim %w, dims = {bdims} : (tensor<{f(wshape)}xf32>)
    -> tensor<{f(bshape)}xf32>
  %r = stablehlo.dot_general %a, %b, {dims}
    : (tensor<{f(lshape)}xf32>, tensor<{f(bshape)}xf32>) -> tensor<{f(out)}xf32>
  return %r : tensor<{f(out)}xf32>
}}
"""


def _folded(text) -> int:
    from oxla_backend_cpu.widen_dots import fold_broadcast_batch

    return fold_broadcast_batch(parse_module(text))


def test_batched_dot_of_a_broadcast_weight_is_one_gemm():
    """torch's LSTM input projection: bmm of x[T, B, D] with W broadcast to [T, D, H]."""
    text = _bcast_dot((16, 24), (5, 16, 24), "[1, 2]", (5, 3, 16),
                      "batching_dims = [0] x [0], contracting_dims = [2] x [1]", (5, 3, 24))
    assert _folded(text) == 1
    a = RNG.standard_normal((5, 3, 16)).astype(np.float32)
    w = RNG.standard_normal((16, 24)).astype(np.float32)
    run_both(text, [a, w], rtol=1e-5, atol=1e-5)
    # transposed weight (contracting the broadcast's last dim), two batch dims
    text = _bcast_dot((24, 16), (2, 5, 24, 16), "[2, 3]", (2, 5, 3, 16),
                      "batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]",
                      (2, 5, 3, 24))
    assert _folded(text) == 1
    a = RNG.standard_normal((2, 5, 3, 16)).astype(np.float32)
    run_both(text, [a, w.T.copy()], rtol=1e-5, atol=1e-5)


def test_broadcasts_that_change_the_weight_or_the_order_are_kept():
    # a size-1 weight dimension expanded by the broadcast: not the weight itself
    text = _bcast_dot((1, 24), (5, 16, 24), "[1, 2]", (5, 3, 16),
                      "batching_dims = [0] x [0], contracting_dims = [2] x [1]", (5, 3, 24))
    assert _folded(text) == 0
    a = RNG.standard_normal((5, 3, 16)).astype(np.float32)
    run_both(text, [a, RNG.standard_normal((1, 24)).astype(np.float32)], rtol=1e-5,
             atol=1e-5)
    # lhs batch dimension after its free one: the result order would change
    text = _bcast_dot((16, 24), (5, 16, 24), "[1, 2]", (3, 5, 16),
                      "batching_dims = [1] x [0], contracting_dims = [2] x [1]", (5, 3, 24))
    assert _folded(text) == 0
    a = RNG.standard_normal((3, 5, 16)).astype(np.float32)
    run_both(text, [a, RNG.standard_normal((16, 24)).astype(np.float32)], rtol=1e-5,
             atol=1e-5)


def test_small_transposed_weight_is_folded_for_blas():
    """torch's ``nn.Linear`` form at one row (BLAS: more rows take the packed kernel),
    ``dot_general(x, transpose(W))`` with a constant ``W [out, in]``: the transpose is
    folded into a new constant, so BLAS multiplies untransposed (``NN``); results equal
    the interpreter's."""
    from oxla_backend_cpu.packed_gemm import LARGE_WEIGHT, MIN_CONST_ROWS
    from oxla_backend_cpu.widen_dots import fold_transposed_weights

    from tests.backend_cpu.conftest import compile_cpu

    rng = np.random.default_rng(5)
    w = rng.standard_normal((96, 160)).astype(np.float32)
    dense = str(w.astype(np.float64).tolist())
    text = f"""
func.func @main(%x: tensor<1x160xf32>) -> tensor<1x96xf32> {{
  %w = stablehlo.constant dense<{dense}> : tensor<96x160xf32>
  %t = stablehlo.transpose %w, dims = [1, 0] : (tensor<96x160xf32>) -> tensor<160x96xf32>
  %0 = stablehlo.dot_general %x, %t, contracting_dims = [1] x [0] : (tensor<1x160xf32>, tensor<160x96xf32>) -> tensor<1x96xf32>
  return %0 : tensor<1x96xf32>
}}"""
    module = parse_module(text, "t.mlir")
    assert fold_transposed_weights(module, MIN_CONST_ROWS, LARGE_WEIGHT) == 1
    assert "stablehlo.transpose" not in str(module)
    assert fold_transposed_weights(parse_module(text, "t.mlir"), 1, LARGE_WEIGHT) == 0
    assert fold_transposed_weights(parse_module(text, "t.mlir"), MIN_CONST_ROWS, w.size) == 0
    labels = compile_cpu(text, extra={"profile": True}, cache=False).stats["profile_labels"]
    assert [lab.split()[-1] for lab in labels if " dot " in lab] == ["NN"], labels
    run_both(text, [rng.standard_normal((1, 160)).astype(np.float32)], rtol=1e-5, atol=1e-5)
