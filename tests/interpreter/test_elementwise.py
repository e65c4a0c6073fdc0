"""Edge cases of the elementwise rules; expected values are worked out from the spec
(sections ``add`` ... ``xor``, "Quantization"), not by running the code."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from oxla.interpreter import run_function
from oxla.ir import parse_module

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
I64_MIN = -(2**63)


def run_op(op: str, args: list, in_types: list[str], out_type: str, attrs: str = ""):
    """Runs ``"stablehlo.<op>"(args...) {attrs}`` on numpy arrays; returns the result."""
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(in_types))
    operands = ", ".join(f"%a{i}" for i in range(len(in_types)))
    attr_text = f" {{{attrs}}}" if attrs else ""
    text = f"""
func.func @main({params}) -> {out_type} {{
  %r = "stablehlo.{op}"({operands}){attr_text} : ({", ".join(in_types)}) -> {out_type}
  func.return %r : {out_type}
}}"""
    module = parse_module(text, "test.mlir")
    return run_function(module, "main", args)[0]


def binary(op, a, b, ty, out=None, attrs=""):
    return run_op(op, [a, b], [ty, ty], out or ty, attrs)


def unary(op, a, ty, out=None):
    return run_op(op, [a], [ty], out or ty)


def bits(x) -> list:
    return np.asarray(x).view(np.uint32).tolist()


# -- integer wrap-around, sub-byte types ---------------------------------------------------


def test_add_wraps_at_width():
    assert binary("add", np.array([127, -128], np.int8), np.array([1, -1], np.int8),
                  "tensor<2xi8>").tolist() == [-128, 127]
    assert binary("add", np.array([255], np.uint8), np.array([1], np.uint8),
                  "tensor<1xui8>").tolist() == [0]
    assert binary("multiply", np.array([2**62], np.int64), np.array([4], np.int64),
                  "tensor<1xi64>").tolist() == [0]


@pytest.mark.parametrize("ty,dt,a,b,op,want", [
    ("i4", ml_dtypes.int4, [7, -8, 4], [1, -1, 4], "add", [-8, 7, -8]),
    ("i4", ml_dtypes.int4, [4, -3], [4, 3], "multiply", [0, 7]),  # 16 -> 0; -9 -> 7
    ("ui4", ml_dtypes.uint4, [15, 0], [1, 1], "add", [0, 1]),
    ("ui4", ml_dtypes.uint4, [0], [1], "subtract", [15]),
    ("i2", ml_dtypes.int2, [1, -2], [1, -1], "add", [-2, 1]),
    ("ui2", ml_dtypes.uint2, [3, 2], [1, 3], "add", [0, 1]),
])
def test_sub_byte_integers_wrap(ty, dt, a, b, op, want):
    n = len(a)
    r = binary(op, np.array(a, dt), np.array(b, dt), f"tensor<{n}x{ty}>")
    assert r.dtype == np.dtype(dt)
    assert r.astype(np.int64).tolist() == want


def test_negate_and_abs_of_int_min_wrap():
    assert unary("negate", np.array([-8], ml_dtypes.int4), "tensor<1xi4>").astype(int) \
        .tolist() == [-8]
    assert unary("abs", np.array([-128, -5], np.int8), "tensor<2xi8>").tolist() == [-128, 5]
    assert unary("negate", np.array([1], np.uint8), "tensor<1xui8>").tolist() == [255]


def test_boolean_add_is_or_and_multiply_is_and():
    t, f = np.array([True, True, False]), np.array([True, False, False])
    assert binary("add", t, f, "tensor<3xi1>").tolist() == [True, True, False]
    assert binary("multiply", t, f, "tensor<3xi1>").tolist() == [True, False, False]


# -- divide / remainder ---------------------------------------------------------------------


def test_integer_divide_truncates_toward_zero():
    a = np.array([7, -7, 7, -7], np.int32)
    b = np.array([2, 2, -2, -2], np.int32)
    assert binary("divide", a, b, "tensor<4xi32>").tolist() == [3, -3, -3, 3]
    assert binary("remainder", a, b, "tensor<4xi32>").tolist() == [1, -1, 1, -1]


def test_integer_divide_by_zero_and_overflow():
    a = np.array([5, -5, I32_MIN], np.int32)
    b = np.array([0, 0, -1], np.int32)
    assert binary("divide", a, b, "tensor<3xi32>").tolist() == [-1, -1, I32_MIN]
    assert binary("remainder", a, b, "tensor<3xi32>").tolist() == [5, -5, 0]
    u = binary("divide", np.array([5], np.uint32), np.array([0], np.uint32), "tensor<1xui32>")
    assert u.tolist() == [2**32 - 1]
    r = binary("remainder", np.array([5], np.uint32), np.array([0], np.uint32),
               "tensor<1xui32>")
    assert r.tolist() == [5]


def test_i64_divide_extremes():
    a = np.array([I64_MIN, I64_MIN, I64_MIN, -7], np.int64)
    b = np.array([-1, 2, 0, 2], np.int64)
    assert binary("divide", a, b, "tensor<4xi64>").tolist() == [I64_MIN, -(2**62), -1, -3]
    assert binary("remainder", a, b, "tensor<4xi64>").tolist() == [0, 0, I64_MIN, -1]


def test_float_remainder_takes_sign_of_dividend():
    a = np.array([5.5, -5.5, -4.0, 5.5], np.float32)
    b = np.array([2.0, 2.0, 2.0, -2.0], np.float32)
    r = binary("remainder", a, b, "tensor<4xf32>")
    assert r.tolist() == [1.5, -1.5, 0.0, 1.5]
    assert np.signbit(r).tolist() == [False, True, True, False]


def test_i4_divide():
    a = np.array([-8, 7, 3], ml_dtypes.int4)
    b = np.array([-1, 0, -2], ml_dtypes.int4)
    assert binary("divide", a, b, "tensor<3xi4>").astype(int).tolist() == [-8, -1, -1]


# -- shifts --------------------------------------------------------------------------------


def test_shifts_at_and_beyond_bit_width():
    a = np.array([1, 1, 1, 1], np.int8)
    n = np.array([7, 8, 100, -1], np.int8)
    assert binary("shift_left", a, n, "tensor<4xi8>").tolist() == [-128, 0, 0, 0]
    a = np.array([-128, -128, 64, 64], np.int8)
    n = np.array([7, 8, 9, 6], np.int8)
    assert binary("shift_right_arithmetic", a, n, "tensor<4xi8>").tolist() == [-1, -1, 0, 1]
    assert binary("shift_right_logical", a, n, "tensor<4xi8>").tolist() == [1, 0, 0, 1]
    u = binary("shift_right_logical", np.array([255, 255], np.uint8),
               np.array([4, 8], np.uint8), "tensor<2xui8>")
    assert u.tolist() == [15, 0]
    # arithmetic shifts read the top bit as the sign, unsigned types included
    u = binary("shift_right_arithmetic", np.array([0x80, 0x80, 0x40], np.uint8),
               np.array([1, 9, 1], np.uint8), "tensor<3xui8>")
    assert u.tolist() == [0xC0, 0xFF, 0x20]
    u = binary("shift_right_arithmetic", np.array([2**63], np.uint64),
               np.array([62], np.uint64), "tensor<1xui64>")
    assert u.tolist() == [2**64 - 2]


def test_shift_i4():
    a = np.array([-8, 1, -8], ml_dtypes.int4)
    n = np.array([1, 3, 3], ml_dtypes.int4)
    assert binary("shift_right_logical", a, n, "tensor<3xi4>").astype(int).tolist() \
        == [4, 0, 1]
    assert binary("shift_left", a, n, "tensor<3xi4>").astype(int).tolist() == [0, -8, 0]


# -- power ---------------------------------------------------------------------------------


def test_integer_power():
    base = np.array([2, 2, 1, -1, -1, 3, 2, 0, -3], np.int32)
    exp = np.array([10, -1, -5, -3, -2, 0, 31, 0, 3], np.int32)
    assert binary("power", base, exp, "tensor<9xi32>").tolist() == \
        [1024, 0, 1, -1, 1, 1, I32_MIN, 1, -27]
    assert binary("power", np.array([2], np.uint8), np.array([9], np.uint8),
                  "tensor<1xui8>").tolist() == [0]


# -- floats: NaN, signed zero, rounding, subnormals ------------------------------------------


def test_maximum_minimum_nan_and_signed_zero():
    a = np.array([np.nan, -0.0, 0.0, 1.0, -1.0], np.float32)
    b = np.array([1.0, 0.0, -0.0, np.nan, -2.0], np.float32)
    mx = binary("maximum", a, b, "tensor<5xf32>")
    mn = binary("minimum", a, b, "tensor<5xf32>")
    assert np.isnan(mx[[0, 3]]).all() and np.isnan(mn[[0, 3]]).all()
    assert mx[1] == 0 and not np.signbit(mx[1]) and not np.signbit(mx[2])
    assert np.signbit(mn[1]) and np.signbit(mn[2])
    assert mx[4] == -1.0 and mn[4] == -2.0


def test_maximum_complex_is_lexicographic():
    a = np.array([1 + 5j, 2 + 0j], np.complex64)
    b = np.array([1 + 6j, 1 + 9j], np.complex64)
    assert binary("maximum", a, b, "tensor<2xcomplex<f32>>").tolist() == [1 + 6j, 2 + 0j]


def test_round_nearest_even_vs_afz():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, -0.3, 2.4999998], np.float32)
    even = unary("round_nearest_even", x, "tensor<7xf32>")
    afz = unary("round_nearest_afz", x, "tensor<7xf32>")
    assert even.tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, -0.0, 2.0]
    assert afz.tolist() == [1.0, 2.0, 3.0, -1.0, -3.0, -0.0, 2.0]
    assert np.signbit(even[3]) and np.signbit(afz[5])


def test_round_afz_f64_just_below_half():
    x = np.array([0.49999999999999994, -0.49999999999999994], np.float64)
    assert unary("round_nearest_afz", x, "tensor<2xf64>").tolist() == [0.0, -0.0]


def test_sign():
    x = np.array([np.nan, -0.0, 0.0, -3.0, 5.0], np.float32)
    s = unary("sign", x, "tensor<5xf32>")
    assert np.isnan(s[0]) and s[1:].tolist() == [0.0, 0.0, -1.0, 1.0]
    assert np.signbit(s[1]) and not np.signbit(s[2])
    assert unary("sign", np.array([-7, 0, 9], np.int32), "tensor<3xi32>").tolist() == \
        [-1, 0, 1]


def test_subnormals_are_kept():
    tiny = np.array([1], np.uint32).view(np.float32)  # 2**-149
    r = binary("add", tiny, tiny, "tensor<1xf32>")
    assert bits(r) == [2]
    r = binary("multiply", np.array([2.0**-126], np.float32), np.array([0.5], np.float32),
               "tensor<1xf32>")
    assert bits(r) == [0x00400000]


def test_bf16_add_rounds_once_to_nearest_even():
    one_p7 = 1 + 2.0**-7
    a = np.array([1.0, one_p7], ml_dtypes.bfloat16)
    b = np.array([2.0**-8, 2.0**-8], ml_dtypes.bfloat16)
    r = binary("add", a, b, "tensor<2xbf16>")
    # both are ties: 1 + 2^-8 -> 1 (even), (1 + 2^-7) + 2^-8 -> 1 + 2^-6 (even)
    assert r.astype(np.float64).tolist() == [1.0, 1 + 2.0**-6]


def test_no_fused_multiply_add():
    text = """
func.func @main(%a: tensor<f32>, %c: tensor<f32>) -> tensor<f32> {
  %p = stablehlo.multiply %a, %a : tensor<f32>
  %s = stablehlo.add %p, %c : tensor<f32>
  func.return %s : tensor<f32>
}"""
    m = parse_module(text, "fma.mlir")
    a = np.array(1 + 2.0**-12, np.float32)
    c = np.array(-(1 + 2.0**-11), np.float32)
    # a*a = 1 + 2^-11 + 2^-24 rounds (tie, to even) to 1 + 2^-11; a fused op gives 2^-24
    assert run_function(m, "main", [a, c])[0] == 0.0


def test_f16_divide_and_sqrt():
    r = binary("divide", np.array([1.0], np.float16), np.array([3.0], np.float16),
               "tensor<1xf16>")
    assert r.view(np.uint16).tolist() == [0x3555]  # 0.33325 (nearest to 1/3)
    s = unary("sqrt", np.array([-1.0, 4.0, -0.0], np.float32), "tensor<3xf32>")
    assert np.isnan(s[0]) and s[1] == 2.0 and np.signbit(s[2])


def test_transcendentals():
    x = np.array([0.0, 1.0], np.float32)
    assert unary("exponential", x, "tensor<2xf32>").tolist() == [1.0, np.float32(math.e)]
    assert unary("logistic", np.array([0.0], np.float32), "tensor<1xf32>").tolist() == [0.5]
    assert unary("log", np.array([0.0, -1.0], np.float32), "tensor<2xf32>")[0] == -np.inf
    r = binary("atan2", np.array([1.0, 0.0], np.float64), np.array([1.0, -1.0], np.float64),
               "tensor<2xf64>")
    assert r.tolist() == [math.pi / 4, math.pi]
    assert unary("cbrt", np.array([-27.0], np.float32), "tensor<1xf32>").tolist() == [-3.0]


def test_complex_arithmetic():
    a = np.array([1 + 2j], np.complex64)
    b = np.array([3 + 4j], np.complex64)
    assert binary("multiply", a, b, "tensor<1xcomplex<f32>>").tolist() == [-5 + 10j]
    assert binary("divide", np.array([-5 + 10j], np.complex64), b,
                  "tensor<1xcomplex<f32>>").tolist() == [1 + 2j]
    c = run_op("complex", [np.array([1.0], np.float32), np.array([np.inf], np.float32)],
               ["tensor<1xf32>", "tensor<1xf32>"], "tensor<1xcomplex<f32>>")
    assert c[0].real == 1.0 and c[0].imag == np.inf
    assert unary("abs", b, "tensor<1xcomplex<f32>>", "tensor<1xf32>").tolist() == [5.0]
    assert unary("real", b, "tensor<1xcomplex<f32>>", "tensor<1xf32>").tolist() == [3.0]
    assert unary("imag", b, "tensor<1xcomplex<f32>>", "tensor<1xf32>").tolist() == [4.0]


# -- compare -------------------------------------------------------------------------------


def _cmp(direction, a, b, ty, ctype="FLOAT"):
    attrs = (f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
             f"compare_type = #stablehlo<comparison_type {ctype}>")
    n = len(a)
    return binary("compare", a, b, f"tensor<{n}x{ty}>", f"tensor<{n}xi1>", attrs).tolist()


def test_compare_float_nan_and_zero():
    a = np.array([np.nan, -0.0, 1.0], np.float32)
    b = np.array([np.nan, 0.0, np.nan], np.float32)
    assert _cmp("EQ", a, b, "f32") == [False, True, False]
    assert _cmp("NE", a, b, "f32") == [True, False, True]
    assert _cmp("LT", a, b, "f32") == [False, False, False]
    assert _cmp("GE", a, b, "f32") == [False, True, False]


def test_compare_totalorder():
    neg_nan = np.array([0xFFC00000], np.uint32).view(np.float32)[0]
    a = np.array([-0.0, np.nan, neg_nan, -0.0, np.nan], np.float32)
    b = np.array([0.0, np.inf, -np.inf, 0.0, np.nan], np.float32)
    assert _cmp("LT", a, b, "f32", "TOTALORDER") == [True, False, True, True, False]
    assert _cmp("GT", a, b, "f32", "TOTALORDER") == [False, True, False, False, False]
    assert _cmp("EQ", a, b, "f32", "TOTALORDER") == [False, False, False, False, True]


def test_compare_signed_unsigned():
    assert _cmp("GT", np.array([2**32 - 1], np.uint32), np.array([1], np.uint32), "ui32",
                "UNSIGNED") == [True]
    assert _cmp("LT", np.array([-1], np.int32), np.array([1], np.int32), "i32",
                "SIGNED") == [True]
    assert _cmp("LT", np.array([-8], ml_dtypes.int4), np.array([7], ml_dtypes.int4), "i4",
                "SIGNED") == [True]


def test_compare_complex_lexicographic():
    a = np.array([1 + 5j, 1 + 1j], np.complex64)
    b = np.array([2 + 0j, 1 + 2j], np.complex64)
    assert _cmp("LT", a, b, "complex<f32>") == [True, True]
    assert _cmp("EQ", a, a, "complex<f32>") == [True, True]


# -- bit ops -------------------------------------------------------------------------------


def test_popcnt_clz_not():
    x = np.array([-1, 0, 7, 64], np.int8)
    assert unary("popcnt", x, "tensor<4xi8>").tolist() == [8, 0, 3, 1]
    assert unary("count_leading_zeros", x, "tensor<4xi8>").tolist() == [0, 8, 5, 1]
    assert unary("count_leading_zeros", np.array([1], ml_dtypes.uint4), "tensor<1xui4>") \
        .astype(int).tolist() == [3]
    assert unary("not", np.array([5], np.int8), "tensor<1xi8>").tolist() == [-6]
    assert unary("not", np.array([0], ml_dtypes.uint4), "tensor<1xui4>").astype(int) \
        .tolist() == [15]
    assert unary("not", np.array([True, False]), "tensor<2xi1>").tolist() == [False, True]
    assert binary("xor", np.array([True]), np.array([True]), "tensor<1xi1>").tolist() == \
        [False]


# -- clamp, select -------------------------------------------------------------------------


def test_clamp_with_scalar_bounds():
    r = run_op("clamp", [np.array(0, np.int32), np.array([-1, 3, 7], np.int32),
                         np.array(5, np.int32)],
               ["tensor<i32>", "tensor<3xi32>", "tensor<i32>"], "tensor<3xi32>")
    assert r.tolist() == [0, 3, 5]
    r = run_op("clamp", [np.array(0.0, np.float32), np.array([np.nan, -0.0], np.float32),
                         np.array(1.0, np.float32)],
               ["tensor<f32>", "tensor<2xf32>", "tensor<f32>"], "tensor<2xf32>")
    assert np.isnan(r[0]) and r[1] == 0.0 and not np.signbit(r[1])


def test_select_scalar_predicate():
    r = run_op("select", [np.array(False), np.array([1, 2], np.int32),
                          np.array([3, 4], np.int32)],
               ["tensor<i1>", "tensor<2xi32>", "tensor<2xi32>"], "tensor<2xi32>")
    assert r.tolist() == [3, 4]


# -- quantized -----------------------------------------------------------------------------

Q = "!quant.uniform<i8:f32, 5.000000e-01>"
Q2 = "!quant.uniform<i8:f32, 1.000000e+00:1>"


def test_quantized_add_dequantizes_computes_and_requantizes():
    a = np.array([2, 4], np.int8)  # 1.0, 2.0
    b = np.array([2, 2], np.int8)  # 1.0, 1.0
    r = run_op("add", [a, b], [f"tensor<2x{Q}>", f"tensor<2x{Q}>"], f"tensor<2x{Q2}>")
    assert r.tolist() == [3, 4]  # 2.0 / 1.0 + 1, 3.0 / 1.0 + 1
    r = run_op("add", [np.array([127], np.int8), np.array([127], np.int8)],
               [f"tensor<1x{Q}>", f"tensor<1x{Q}>"], f"tensor<1x{Q}>")
    assert r.tolist() == [127]  # 127.0 saturates at the storage maximum


def test_quantized_compare_uses_expressed_values():
    def lt(lhs, rhs):
        return run_op("compare", [np.array([lhs], np.int8), np.array([rhs], np.int8)],
                      [f"tensor<1x{Q}>", f"tensor<1x{Q2}>"], "tensor<1xi1>",
                      "comparison_direction = #stablehlo<comparison_direction LT>").tolist()

    assert lt(2, 2) == [False]  # 1.0 < (2 - 1) * 1.0
    assert lt(2, 3) == [True]  # 1.0 < 2.0
