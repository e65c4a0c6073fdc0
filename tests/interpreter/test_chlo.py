"""CHLO op rules (spec "Dialect Interop > CHLO" and CHLO's op definitions); expected
values worked by hand."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from oxla.interpreter import Context, run_function
from oxla.ir import parse_module

pytest.importorskip("scipy")


def run(text: str) -> list:
    m = parse_module(text, "test.mlir")
    ctx = Context(module=m)
    out = run_function(m, "main", [], ctx)
    assert not ctx.failures, [str(f) for f in ctx.failures]
    return out


def unary(op: str, values: str, t: str, out_t: str | None = None):
    out_t = out_t or t
    return run(f"""
func.func @main() -> {out_t} {{
  %x = stablehlo.constant dense<{values}> : {t}
  %r = "{op}"(%x) : ({t}) -> {out_t}
  return %r : {out_t}
}}""")[0]


def binary(op: str, a: str, b: str, ta: str, tb: str, out_t: str, attrs: str = ""):
    return run(f"""
func.func @main() -> {out_t} {{
  %a = stablehlo.constant dense<{a}> : {ta}
  %b = stablehlo.constant dense<{b}> : {tb}
  %r = "{op}"(%a, %b) {attrs} : ({ta}, {tb}) -> {out_t}
  return %r : {out_t}
}}""")[0]


def test_top_k_descending_nan_first_ties_by_lower_index():
    out = run("""
func.func @main() -> (tensor<3xf32>, tensor<3xi32>) {
  %x = stablehlo.constant dense<[1.0, 0x7FC00000, 3.0, 3.0]> : tensor<4xf32>
  %v, %i = chlo.top_k(%x, k = 3) : tensor<4xf32> -> (tensor<3xf32>, tensor<3xi32>)
  return %v, %i : tensor<3xf32>, tensor<3xi32>
}""")
    assert np.isnan(out[0][0]) and out[0][1:].tolist() == [3.0, 3.0]
    assert out[1].tolist() == [1, 2, 3]


def test_top_k_positive_zero_before_negative_zero():
    out = run("""
func.func @main() -> (tensor<2xf32>, tensor<2xi32>) {
  %x = stablehlo.constant dense<[-0.0, 0.0]> : tensor<2xf32>
  %v, %i = chlo.top_k(%x, k = 2) : tensor<2xf32> -> (tensor<2xf32>, tensor<2xi32>)
  return %v, %i : tensor<2xf32>, tensor<2xi32>
}""")
    assert out[1].tolist() == [1, 0] and not np.signbit(out[0][0]) and np.signbit(out[0][1])


def test_top_k_signed_and_unsigned_integers():
    out = run("""
func.func @main() -> (tensor<2xi8>, tensor<2xi32>, tensor<2xui8>) {
  %x = stablehlo.constant dense<[-128, 127, -1]> : tensor<3xi8>
  %v, %i = chlo.top_k(%x, k = 2) : tensor<3xi8> -> (tensor<2xi8>, tensor<2xi32>)
  %u = stablehlo.constant dense<[1, 255, 128]> : tensor<3xui8>
  %w, %j = chlo.top_k(%u, k = 2) : tensor<3xui8> -> (tensor<2xui8>, tensor<2xi32>)
  return %v, %i, %w : tensor<2xi8>, tensor<2xi32>, tensor<2xui8>
}""")
    assert out[0].tolist() == [127, -1] and out[1].tolist() == [1, 2]
    assert out[2].tolist() == [255, 128]


@pytest.mark.parametrize("t,a,b,hi", [
    ("i8", "[100, -128, -1]", "[100, 127, 1]", [39, -64, -1]),  # 0x2710, 0xC080, 0xFFFF
    ("ui8", "[255, 16]", "[255, 16]", [254, 1]),  # 0xFE01, 0x0100
    ("i64", "[4611686018427387904, -1]", "[4, 1]", [1, -1]),  # 2**64; -1
    ("ui64", "[18446744073709551615]", "[18446744073709551615]", [18446744073709551614]),
])
def test_mulhi(t, a, b, hi):
    n = len(hi)
    out = binary("chlo.mulhi", a, b, f"tensor<{n}x{t}>", f"tensor<{n}x{t}>",
                 f"tensor<{n}x{t}>")
    assert out.tolist() == hi


def test_next_after_f32_and_bf16():
    out = binary("chlo.next_after", "[1.0, 0.0, 2.0, 0x7FC00000]", "[2.0, -1.0, 2.0, 1.0]",
                 "tensor<4xf32>", "tensor<4xf32>", "tensor<4xf32>")
    assert out[0] == np.float32(1 + 2**-23)
    assert out[1] == -np.float32(2**-149) and np.signbit(out[1])  # smallest subnormal
    assert out[2] == 2.0 and np.isnan(out[3])
    down = binary("chlo.next_after", "[1.0]", "[0.0]", "tensor<1xf32>", "tensor<1xf32>",
                  "tensor<1xf32>")
    assert down[0] == np.float32(1 - 2**-24)
    bf = binary("chlo.next_after", "[1.0]", "[2.0]", "tensor<1xbf16>", "tensor<1xbf16>",
                "tensor<1xbf16>")
    assert bf.dtype == ml_dtypes.bfloat16 and float(bf[0]) == 1.0078125


def test_broadcast_add_with_broadcast_dimensions():
    out = binary("chlo.broadcast_add", "[1, 2]", "[[0, 0, 0], [10, 10, 10]]",
                 "tensor<2xi32>", "tensor<2x3xi32>", "tensor<2x3xi32>",
                 "{broadcast_dimensions = array<i64: 0>}")
    assert out.tolist() == [[1, 1, 1], [12, 12, 12]]


def test_broadcast_multiply_numpy_rules_and_scalar():
    out = binary("chlo.broadcast_multiply", "[1, 2, 3]", "2", "tensor<3xi32>", "tensor<i32>",
                 "tensor<3xi32>")
    assert out.tolist() == [2, 4, 6]


def test_broadcast_compare_and_select():
    out = run("""
func.func @main() -> tensor<2x2xf32> {
  %a = stablehlo.constant dense<[1.0, 5.0]> : tensor<2xf32>
  %b = stablehlo.constant dense<[[2.0], [4.0]]> : tensor<2x1xf32>
  %p = "chlo.broadcast_compare"(%a, %b) {comparison_direction = #chlo<comparison_direction LT>}
      : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<2x2xi1>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = "chlo.broadcast_select"(%p, %a, %z) : (tensor<2x2xi1>, tensor<2xf32>, tensor<f32>)
      -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}""")[0]
    # a < b: row 0 (b=2): [1<2, 5<2] ; row 1 (b=4): [1<4, 5<4]
    assert out.tolist() == [[1.0, 0.0], [1.0, 0.0]]


def test_constant_like():
    out = run("""
func.func @main() -> tensor<2x3xf32> {
  %x = stablehlo.constant dense<0.0> : tensor<2x3xf32>
  %r = "chlo.constant_like"(%x) {value = 2.5 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}""")[0]
    assert out.shape == (2, 3) and (out == 2.5).all()


def test_square_wraps_integers():
    assert unary("chlo.square", "[16, -12]", "tensor<2xi8>").tolist() == [0, -112]


def test_poles_lgamma_inf_digamma_nan():
    lg = unary("chlo.lgamma", "[0.0, -1.0, 1.0, 0xFF800000]", "tensor<4xf64>")
    assert lg.tolist() == [math.inf, math.inf, 0.0, math.inf]
    dg = unary("chlo.digamma", "[0.0, -2.0, 1.0]", "tensor<3xf64>")
    assert np.isnan(dg[0]) and np.isnan(dg[1])
    assert dg[2] == -0.5772156649015329  # -Euler's constant


def test_erf_family_and_is_inf():
    assert unary("chlo.erf_inv", "[0.0, 1.0, -1.0]", "tensor<3xf32>").tolist() == \
        [0.0, math.inf, -math.inf]
    assert unary("chlo.erfc", "[0.0]", "tensor<1xf32>").tolist() == [1.0]
    x = "[0x7F800000, 0xFF800000, 1.0]"
    assert unary("chlo.is_inf", x, "tensor<3xf32>", "tensor<3xi1>").tolist() == \
        [True, True, False]
    assert unary("chlo.is_pos_inf", x, "tensor<3xf32>", "tensor<3xi1>").tolist() == \
        [True, False, False]
    assert unary("chlo.is_neg_inf", x, "tensor<3xf32>", "tensor<3xi1>").tolist() == \
        [False, True, False]


def test_polygamma_and_zeta():
    pg = binary("chlo.polygamma", "[1.0, 0.5]", "[1.0, 1.0]", "tensor<2xf64>", "tensor<2xf64>",
                "tensor<2xf64>")
    assert pg[0] == pytest.approx(math.pi ** 2 / 6, rel=1e-15) and np.isnan(pg[1])
    z = binary("chlo.zeta", "[2.0]", "[1.0]", "tensor<1xf64>", "tensor<1xf64>",
               "tensor<1xf64>")
    assert z[0] == pytest.approx(math.pi ** 2 / 6, rel=1e-15)


def test_conj_and_complex_asinh():
    c = unary("chlo.conj", "[(1.0, 2.0)]", "tensor<1xcomplex<f32>>")
    assert c[0] == np.complex64(1 - 2j)
    a = unary("chlo.asinh", "[(0.0, 0.5)]", "tensor<1xcomplex<f64>>")
    assert a[0] == pytest.approx(1j * math.asin(0.5))


def test_bf16_is_computed_wide_and_rounded_once():
    out = unary("chlo.tan", "[1.0]", "tensor<1xbf16>")
    assert out.dtype == ml_dtypes.bfloat16
    assert float(out[0]) == float(ml_dtypes.bfloat16(math.tan(1.0)))


def test_scan_cumsum_and_reverse():
    out = run("""
func.func @main() -> (tensor<4xi32>, tensor<i32>, tensor<4xi32>) {
  %x = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = chlo.scan(%x) inits(%z) dimension=0 {
  ^bb0(%a: tensor<i32>, %c: tensor<i32>):
    %s = stablehlo.add %a, %c : tensor<i32>
    stablehlo.return %s, %s : tensor<i32>, tensor<i32>
  } : (tensor<4xi32>, tensor<i32>) -> (tensor<4xi32>, tensor<i32>)
  %1:2 = chlo.scan(%x) inits(%z) dimension=0 attributes {is_reverse = true} {
  ^bb0(%a: tensor<i32>, %c: tensor<i32>):
    %s = stablehlo.add %a, %c : tensor<i32>
    stablehlo.return %s, %s : tensor<i32>, tensor<i32>
  } : (tensor<4xi32>, tensor<i32>) -> (tensor<4xi32>, tensor<i32>)
  return %0#0, %0#1, %1#0 : tensor<4xi32>, tensor<i32>, tensor<4xi32>
}""")
    assert out[0].tolist() == [1, 3, 6, 10] and int(out[1]) == 10
    assert out[2].tolist() == [10, 9, 7, 4]


def ragged(lhs, rhs, gs, tl, tr, tg, tout, dims):
    return run(f"""
func.func @main() -> {tout} {{
  %l = stablehlo.constant dense<{lhs}> : {tl}
  %r = stablehlo.constant dense<{rhs}> : {tr}
  %g = stablehlo.constant dense<{gs}> : {tg}
  %o = "chlo.ragged_dot"(%l, %r, %g) {{
    ragged_dot_dimension_numbers = #chlo.ragged_dot<{dims}>
  }} : ({tl}, {tr}, {tg}) -> {tout}
  return %o : {tout}
}}""")[0]


def test_ragged_dot_ragged_free_dimension_uses_each_rows_group():
    out = ragged("[[1.0], [2.0], [3.0], [4.0]]", "[[[10.0]], [[100.0]]]", "[1, 2]",
                 "tensor<4x1xf32>", "tensor<2x1x1xf32>", "tensor<2xi64>", "tensor<4x1xf32>",
                 "lhs_batching_dimensions = [], rhs_batching_dimensions = [], "
                 "lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1], "
                 "lhs_ragged_dimensions = [0], rhs_group_dimensions = [0]")
    # rows 0 -> group 0, rows 1-2 -> group 1, row 3 is in no group: zeros
    assert out.tolist() == [[10.0], [200.0], [300.0], [0.0]]


def test_ragged_dot_ragged_contracting_dimension_gives_one_result_per_group():
    out = ragged("[[1.0, 2.0, 3.0]]", "[[1.0], [10.0], [100.0]]", "[2, 1]",
                 "tensor<1x3xf32>", "tensor<3x1xf32>", "tensor<2xi64>", "tensor<2x1x1xf32>",
                 "lhs_batching_dimensions = [], rhs_batching_dimensions = [], "
                 "lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0], "
                 "lhs_ragged_dimensions = [1], rhs_group_dimensions = []")
    assert out.tolist() == [[[21.0]], [[300.0]]]


def test_ragged_dot_ragged_batch_dimension_is_a_plain_dot():
    out = ragged("[[[1.0, 2.0]], [[3.0, 4.0]]]", "[[[1.0], [1.0]], [[2.0], [2.0]]]", "[1, 1]",
                 "tensor<2x1x2xf32>", "tensor<2x2x1xf32>", "tensor<2xi64>",
                 "tensor<2x1x1xf32>",
                 "lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], "
                 "lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1], "
                 "lhs_ragged_dimensions = [0], rhs_group_dimensions = []")
    assert out.tolist() == [[[3.0]], [[14.0]]]
