"""Linear-algebra rules (spec ``dot_general``, ``convolution``, ``fft``, ``cholesky``,
``triangular_solve``, ``batch_norm_*``, deprecated ``dot``/``einsum``); expected values
worked out by hand from the spec."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from oxla.interpreter import Context, run_function
from oxla.ir import parse_module


def run(body: str, sig: str, *args):
    """Runs ``func.func @main(sig)`` with ``body`` and returns its results."""
    m = parse_module(f"func.func @main({sig}) {body}", "test.mlir")
    return run_function(m, "main", [np.asarray(a) for a in args], Context(module=m))


def test_dot_general_batching_spec_example():
    lhs = np.array([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], np.int64)
    rhs = np.array([[[1, 0], [0, 1]], [[1, 0], [0, 1]]], np.int64)
    (r,) = run("""-> tensor<2x2x2xi64> {
      %r = stablehlo.dot_general %a, %b, batching_dims = [0] x [0],
        contracting_dims = [2] x [1]
        : (tensor<2x2x2xi64>, tensor<2x2x2xi64>) -> tensor<2x2x2xi64>
      return %r : tensor<2x2x2xi64> }""", "%a: tensor<2x2x2xi64>, %b: tensor<2x2x2xi64>",
               lhs, rhs)
    np.testing.assert_array_equal(r, lhs)


def test_dot_general_integer_wraps():
    (r,) = run("""-> tensor<i8> {
      %r = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0]
        : (tensor<3xi8>, tensor<3xi8>) -> tensor<i8>
      return %r : tensor<i8> }""", "%a: tensor<3xi8>, %b: tensor<3xi8>",
               np.array([100, 100, 1], np.int8), np.array([1, 1, 1], np.int8))
    assert r == np.int8(-55)


def test_dot_general_bf16_accumulates_wide_and_rounds_once():
    # 1 + 2^-8 + 2^-8 = 1 + 2^-7 is a bf16 value; summing in bf16 would round each
    # partial 1 + 2^-8 (a tie) down to 1.
    bf = ml_dtypes.bfloat16
    (r,) = run("""-> tensor<bf16> {
      %r = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0]
        : (tensor<3xbf16>, tensor<3xbf16>) -> tensor<bf16>
      return %r : tensor<bf16> }""", "%a: tensor<3xbf16>, %b: tensor<3xbf16>",
               np.array([1, 2**-8, 2**-8], bf), np.array([1, 1, 1], bf))
    assert float(r) == 1 + 2**-7


def test_deprecated_dot_and_einsum():
    a = np.array([[1, 2], [3, 4]], np.float32)
    b = np.array([[5, 6], [7, 8]], np.float32)
    (r,) = run("""-> tensor<2x2xf32> {
      %r = "stablehlo.dot"(%a, %b) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
      return %r : tensor<2x2xf32> }""", "%a: tensor<2x2xf32>, %b: tensor<2x2xf32>", a, b)
    np.testing.assert_array_equal(r, [[19, 22], [43, 50]])
    (r,) = run("""-> tensor<2x2xf32> {
      %r = "stablehlo.einsum"(%a, %b) {einsum_config = "ab,bc->ca"}
        : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
      return %r : tensor<2x2xf32> }""", "%a: tensor<2x2xf32>, %b: tensor<2x2xf32>", a, b)
    np.testing.assert_array_equal(r, [[19, 43], [22, 50]])


def conv1d(x, w, out_w: int, window: str = "", attrs: str = "", n: int = 1, c: int = 1,
           o: int = 1, ki: int = 1):
    xt = f"tensor<{n}x{len(x[0])}x{c}xi64>"
    wt = f"tensor<{len(w)}x{ki}x{o}xi64>"
    on = n // (1 if "batch_group_count = 1 " in attrs or not attrs else 2)
    rt = f"tensor<{on}x{out_w}x{o}xi64>"
    win = f"window = {{{window or 'stride = [1]'}}}"
    attrs = attrs or "batch_group_count = 1 : i64, feature_group_count = 1 : i64"
    (r,) = run(f"""-> {rt} {{
      %r = stablehlo.convolution(%a, %b) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f],
        {win} {{{attrs}}} : ({xt}, {wt}) -> {rt}
      return %r : {rt} }}""", f"%a: {xt}, %b: {wt}", np.asarray(x, np.int64),
               np.asarray(w, np.int64))
    return r


def test_convolution_plain_1d():
    r = conv1d(np.array([[[1], [2], [3], [4]]]), np.array([[[1]], [[1]]]), 3)
    np.testing.assert_array_equal(r[0, :, 0], [3, 5, 7])


def test_convolution_lhs_dilation_stride_padding():
    # lhs dilated by 2: [1 0 2 0 3 0 4]; padded by (1, 1): [0 1 0 2 0 3 0 4 0];
    # kernel [1, 10] with stride 2 at 0, 2, 4, 6: [10, 20, 30, 40].
    r = conv1d(np.array([[[1], [2], [3], [4]]]), np.array([[[1]], [[10]]]), 4,
               "stride = [2], pad = [[1, 1]], lhs_dilate = [2]")
    np.testing.assert_array_equal(r[0, :, 0], [10, 20, 30, 40])


def test_convolution_rhs_dilation_and_reversal():
    # kernel [1, 10] dilated by 2 reads x[i] and x[i+2]: [1+30, 2+40].
    x = np.array([[[1], [2], [3], [4]]])
    r = conv1d(x, np.array([[[1]], [[10]]]), 2, "rhs_dilate = [2]")
    np.testing.assert_array_equal(r[0, :, 0], [31, 42])
    # window_reversal flips the lhs window: 10*x[i] + x[i+2].
    r = conv1d(x, np.array([[[1]], [[10]]]), 2, "rhs_dilate = [2], reverse = [true]")
    np.testing.assert_array_equal(r[0, :, 0], [13, 24])


def test_convolution_feature_groups():
    # Two groups: output feature 0 sees input feature 0, output 1 sees input 1.
    x = np.array([[[1, 100], [2, 200]]])
    w = np.array([[[1, 2]]])  # 1 x I=1 x O=2
    r = conv1d(x, w, 2, "", "batch_group_count = 1 : i64, feature_group_count = 2 : i64",
               c=2, o=2)
    np.testing.assert_array_equal(r[0], [[1, 200], [2, 400]])


def test_convolution_batch_groups():
    # Two batch groups: output feature 0 from batch 0, feature 1 from batch 1.
    x = np.array([[[1], [2]], [[10], [20]]])
    w = np.array([[[1, 3]]])
    r = conv1d(x, w, 2, "", "batch_group_count = 2 : i64, feature_group_count = 1 : i64",
               n=2, o=2)
    np.testing.assert_array_equal(r[0], [[1, 30], [2, 60]])


def fft(kind: str, x, in_t: str, out_t: str, length: int):
    (r,) = run(f"""-> {out_t} {{
      %r = stablehlo.fft %a, type = {kind}, length = [{length}] : ({in_t}) -> {out_t}
      return %r : {out_t} }}""", f"%a: {in_t}", x)
    return r


def test_fft_all_four_types():
    c = "tensor<4xcomplex<f32>>"
    np.testing.assert_allclose(fft("FFT", np.array([1, 0, 0, 0], np.complex64), c, c, 4),
                               [1, 1, 1, 1])
    np.testing.assert_allclose(fft("IFFT", np.array([4, 0, 0, 0], np.complex64), c, c, 4),
                               [1, 1, 1, 1])
    r = fft("RFFT", np.array([1, 2, 3, 4], np.float32), "tensor<4xf32>",
            "tensor<3xcomplex<f32>>", 4)
    np.testing.assert_allclose(r, [10, -2 + 2j, -2])
    r = fft("IRFFT", np.array([10, -2 + 2j, -2], np.complex64), "tensor<3xcomplex<f32>>",
            "tensor<4xf32>", 4)
    np.testing.assert_allclose(r, [1, 2, 3, 4], rtol=1e-6)
    assert r.dtype == np.float32


def cholesky(a, lower: bool):
    t = f"tensor<{a.shape[0]}x{a.shape[1]}xf64>"
    (r,) = run(f"""-> {t} {{
      %r = stablehlo.cholesky %a, lower = {str(lower).lower()} : {t}
      return %r : {t} }}""", f"%a: {t}", a)
    return r


def test_cholesky_lower_and_upper():
    a = np.array([[4, 2], [2, 5]], np.float64)
    np.testing.assert_allclose(cholesky(a, True), [[2, 0], [1, 2]])
    np.testing.assert_allclose(cholesky(a, False), [[2, 1], [0, 2]])


def test_cholesky_reads_one_triangle_and_gives_nan_when_not_positive_definite():
    a = np.array([[4, 99], [2, 5]], np.float64)  # upper triangle ignored when lower
    np.testing.assert_allclose(cholesky(a, True), [[2, 0], [1, 2]])
    assert np.isnan(cholesky(np.array([[-1.0]]), True)).all()


def trsolve(a, b, left: bool, lower: bool, unit: bool, transpose: str):
    at = f"tensor<{a.shape[0]}x{a.shape[1]}xf32>"
    bt = f"tensor<{b.shape[0]}x{b.shape[1]}xf32>"
    (r,) = run(f"""-> {bt} {{
      %r = "stablehlo.triangular_solve"(%a, %b) {{left_side = {str(left).lower()},
        lower = {str(lower).lower()}, unit_diagonal = {str(unit).lower()},
        transpose_a = #stablehlo<transpose {transpose}>}} : ({at}, {bt}) -> {bt}
      return %r : {bt} }}""", f"%a: {at}, %b: {bt}", a.astype(np.float32),
               b.astype(np.float32))
    return r


@pytest.mark.parametrize("left,transpose,b,expected", [
    # [[2,0],[1,1]] x = [2,3] -> x = [1, 2]
    (True, "NO_TRANSPOSE", [[2], [3]], [[1], [2]]),
    # [[2,1],[0,1]] x = [2,3] -> x2 = 3, x1 = (2 - 3) / 2
    (True, "TRANSPOSE", [[2], [3]], [[-0.5], [3]]),
    # x [[2,0],[1,1]] = [2,3] -> [2 x1 + x2, x2] = [2, 3]
    (False, "NO_TRANSPOSE", [[2, 3]], [[-0.5, 3]]),
    (False, "ADJOINT", [[2, 3]], [[1, 2]]),
])
def test_triangular_solve(left, transpose, b, expected):
    a = np.array([[2, 99], [1, 1]], np.float32)  # the upper 99 must be ignored
    r = trsolve(a, np.array(b, np.float32), left, True, False, transpose)
    np.testing.assert_allclose(r, expected)


def test_triangular_solve_unit_diagonal_upper():
    # Unit diagonal: [[1, 2], [., 1]] x = [5, 1] -> x2 = 1, x1 = 3.
    a = np.array([[7, 2], [-4, 9]], np.float32)
    r = trsolve(a, np.array([[5], [1]], np.float32), True, False, True, "NO_TRANSPOSE")
    np.testing.assert_allclose(r, [[3], [1]])


_T = "tensor<2x2xf32>"
_V = "tensor<2xf32>"


def test_batch_norm_inference():
    (r,) = run(f"""-> {_T} {{
      %r = "stablehlo.batch_norm_inference"(%x, %s, %o, %m, %v)
        {{epsilon = 0.0 : f32, feature_index = 1 : i64}}
        : ({_T}, {_V}, {_V}, {_V}, {_V}) -> {_T}
      return %r : {_T} }}""", f"%x: {_T}, %s: {_V}, %o: {_V}, %m: {_V}, %v: {_V}",
               np.array([[1, 2], [3, 4]], np.float32), np.array([2, 1], np.float32),
               np.array([0, 10], np.float32), np.array([2, 3], np.float32),
               np.array([1, 4], np.float32))
    # feature 0: 2 * (x - 2) / 1; feature 1: (x - 3) / 2 + 10
    np.testing.assert_allclose(r, [[-2, 9.5], [2, 10.5]])


def test_batch_norm_training():
    out, mean, var = run(f"""-> ({_T}, {_V}, {_V}) {{
      %r:3 = "stablehlo.batch_norm_training"(%x, %s, %o)
        {{epsilon = 0.0 : f32, feature_index = 1 : i64}}
        : ({_T}, {_V}, {_V}) -> ({_T}, {_V}, {_V})
      return %r#0, %r#1, %r#2 : {_T}, {_V}, {_V} }}""", f"%x: {_T}, %s: {_V}, %o: {_V}",
                         np.array([[1, 2], [3, 6]], np.float32), np.ones(2, np.float32),
                         np.zeros(2, np.float32))
    np.testing.assert_allclose(mean, [2, 4])
    np.testing.assert_allclose(var, [1, 4])
    np.testing.assert_allclose(out, [[-1, -1], [1, 1]])


def test_batch_norm_grad():
    # grad_output = 1 everywhere: grad_offset = count = 2; grad_scale = sum of the
    # normalized values = 0; i3 = sum(centered) = 0 and i1 = i2, so grad_operand = 0.
    go, gs, gb = run(f"""-> ({_T}, {_V}, {_V}) {{
      %r:3 = "stablehlo.batch_norm_grad"(%x, %s, %m, %v, %g)
        {{epsilon = 0.0 : f32, feature_index = 1 : i64}}
        : ({_T}, {_V}, {_V}, {_V}, {_T}) -> ({_T}, {_V}, {_V})
      return %r#0, %r#1, %r#2 : {_T}, {_V}, {_V} }}""",
                     f"%x: {_T}, %s: {_V}, %m: {_V}, %v: {_V}, %g: {_T}",
                     np.array([[1, 2], [3, 6]], np.float32), np.ones(2, np.float32),
                     np.array([2, 4], np.float32), np.array([1, 4], np.float32),
                     np.ones((2, 2), np.float32))
    np.testing.assert_allclose(go, 0)
    np.testing.assert_allclose(gs, [0, 0])
    np.testing.assert_allclose(gb, [2, 2])
