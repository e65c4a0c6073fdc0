"""Edge cases of ``convert``, ``bitcast_convert``, ``reduce_precision``, ``iota``,
``uniform_quantize`` and ``uniform_dequantize``; expected values worked out by hand
from the spec sections of the same names."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from oxla.interpreter import run_function
from oxla.ir import parse_module

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


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
    return run_function(parse_module(text, "test.mlir"), "main", args)[0]


def conv(x, src: str, dst: str):
    return run_op("convert", [x], [src], dst)


def test_float_to_int_truncates_and_saturates():
    x = np.array([2.7, -2.7, np.nan, 1e10, -1e10, -0.5], np.float32)
    assert conv(x, "tensor<6xf32>", "tensor<6xi32>").tolist() == \
        [2, -2, 0, I32_MAX, I32_MIN, 0]
    x = np.array([-3.0, 300.0, 255.9], np.float32)
    assert conv(x, "tensor<3xf32>", "tensor<3xui8>").tolist() == [0, 255, 255]
    r = conv(np.array([7.9, -9.0], np.float32), "tensor<2xf32>", "tensor<2xi4>")
    assert r.astype(int).tolist() == [7, -8]


def test_int_to_narrower_int_wraps():
    x = np.array([300, -129, 255], np.int32)
    assert conv(x, "tensor<3xi32>", "tensor<3xi8>").tolist() == [44, 127, -1]
    assert conv(np.array([-1], np.int8), "tensor<1xi8>", "tensor<1xui8>").tolist() == [255]
    assert conv(np.array([255], np.uint8), "tensor<1xui8>", "tensor<1xi16>").tolist() == [255]


def test_bool_conversions():
    x = np.array([0.0, -0.0, 0.5, np.nan], np.float32)
    assert conv(x, "tensor<4xf32>", "tensor<4xi1>").tolist() == [False, False, True, True]
    r = conv(np.array([True, False]), "tensor<2xi1>", "tensor<2xf32>")
    assert r.tolist() == [1.0, 0.0]
    assert conv(np.array([True]), "tensor<1xi1>", "tensor<1xi32>").tolist() == [1]


def test_complex_conversions():
    r = conv(np.array([3 + 4j], np.complex64), "tensor<1xcomplex<f32>>", "tensor<1xf32>")
    assert r.tolist() == [3.0]
    r = conv(np.array([2.5], np.float32), "tensor<1xf32>", "tensor<1xcomplex<f64>>")
    assert r.tolist() == [2.5 + 0j]


def test_float_narrowing_rounds_to_nearest_even_and_keeps_subnormals():
    x = np.array([1 + 2.0**-8, 1 + 2.0**-8 + 2.0**-20, 1 + 3 * 2.0**-8], np.float32)
    r = conv(x, "tensor<3xf32>", "tensor<3xbf16>")
    assert r.astype(np.float64).tolist() == [1.0, 1 + 2.0**-7, 1 + 2.0**-6]
    tiny = np.array([1], np.uint32).view(np.float32)
    assert conv(tiny, "tensor<1xf32>", "tensor<1xf64>").tolist() == [2.0**-149]
    sub16 = conv(np.array([2.0**-24], np.float64), "tensor<1xf64>", "tensor<1xf16>")
    assert sub16.view(np.uint16).tolist() == [1]


def test_bitcast_same_width_and_across_widths():
    one = np.array([1.0], np.float32)
    assert run_op("bitcast_convert", [one], ["tensor<1xf32>"], "tensor<1xi32>").tolist() \
        == [0x3F800000]
    r = run_op("bitcast_convert", [np.array(1.0, np.float32)], ["tensor<f32>"],
               "tensor<4xui8>")
    assert r.tolist() == [0, 0, 128, 63]  # little-endian bytes
    r = run_op("bitcast_convert", [np.array([1, 0], np.int8)], ["tensor<2xi8>"],
               "tensor<i16>")
    assert r.shape == () and int(r) == 1


def test_bitcast_sub_byte():
    r = run_op("bitcast_convert", [np.array([1, -1], ml_dtypes.int4)], ["tensor<2xi4>"],
               "tensor<i8>")
    assert int(r) == -15  # 0xF1
    r = run_op("bitcast_convert", [np.array(0xF1, np.uint8)], ["tensor<ui8>"],
               "tensor<2xi4>")
    assert r.astype(int).tolist() == [1, -1]


def test_reduce_precision_to_f16_range():
    x = np.array([1 + 2.0**-11, 1 + 2.0**-11 + 2.0**-20, 70000.0, -70000.0, 1e-8, np.nan,
                  -0.0], np.float32)
    r = run_op("reduce_precision", [x], ["tensor<7xf32>"], "tensor<7xf32>",
               "exponent_bits = 5 : i32, mantissa_bits = 10 : i32")
    assert r[:5].tolist() == [1.0, 1 + 2.0**-10, np.inf, -np.inf, 0.0]
    assert np.isnan(r[5]) and r[6] == 0.0 and np.signbit(r[6])


def test_reduce_precision_mantissa_overflow_carries_into_exponent():
    x = np.array([1.9990234375], np.float64)  # 1 + 1023/1024 -> rounds up to 2.0
    r = run_op("reduce_precision", [x], ["tensor<1xf64>"], "tensor<1xf64>",
               "exponent_bits = 11 : i32, mantissa_bits = 2 : i32")
    assert r.tolist() == [2.0]


def test_iota():
    text = """
func.func @main() -> tensor<2x3xf32> {
  %0 = stablehlo.iota dim = 1 : tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}"""
    r = run_function(parse_module(text, "iota.mlir"), "main", [])[0]
    assert r.dtype == np.float32 and r.tolist() == [[0, 1, 2], [0, 1, 2]]


# -- quantization --------------------------------------------------------------------------


def test_uniform_quantize_divides_adds_clamps_rounds_even():
    x = np.array([0.3, -0.7, 100.0, 0.25, 0.75], np.float32)
    r = run_op("uniform_quantize", [x], ["tensor<5xf32>"],
               "tensor<5x!quant.uniform<i8:f32, 5.000000e-01>>")
    assert r.dtype == np.int8 and r.tolist() == [1, -1, 127, 0, 2]
    r = run_op("uniform_quantize", [np.array([0.3], np.float32)], ["tensor<1xf32>"],
               "tensor<1x!quant.uniform<i8:f32, 5.000000e-01:10>>")
    assert r.tolist() == [11]


def test_uniform_dequantize_per_tensor_and_per_axis():
    r = run_op("uniform_dequantize", [np.array([1, -1, 127], np.int8)],
               ["tensor<3x!quant.uniform<i8:f32, 5.000000e-01>>"], "tensor<3xf32>")
    assert r.tolist() == [0.5, -0.5, 63.5]
    r = run_op("uniform_dequantize", [np.array([[2, 2], [3, 3]], np.int8)],
               ["tensor<2x2x!quant.uniform<i8:f32:0, {5.000000e-01:0, 2.000000e+00:1}>>"],
               "tensor<2x2xf32>")
    assert r.tolist() == [[1.0, 1.0], [4.0, 4.0]]


def test_uniform_quantize_per_axis_and_requantize():
    x = np.array([[1.0, 3.0], [1.0, 3.0]], np.float32)
    r = run_op("uniform_quantize", [x], ["tensor<2x2xf32>"],
               "tensor<2x2x!quant.uniform<i8:f32:1, {5.000000e-01:0, 2.000000e+00:1}>>")
    assert r.tolist() == [[2, 2], [2, 2]]  # 1/0.5 = 2; 3/2 + 1 = 2.5 -> 2 (even)
    r = run_op("uniform_quantize", [np.array([4, -3], np.int8)],
               ["tensor<2x!quant.uniform<i8:f32, 5.000000e-01>>"],
               "tensor<2x!quant.uniform<i8:f32, 1.000000e+00>>")
    assert r.tolist() == [2, -2]  # 2.0 -> 2; -1.5 -> -2 (ties to even)


def test_f64_to_narrow_floats_rounds_once():
    # 1 + 2^-8 + 2^-30 is just above the bf16 tie: rounding through f32 first would give 1
    x = np.array([1 + 2.0**-8 + 2.0**-30], np.float64)
    assert conv(x, "tensor<1xf64>", "tensor<1xbf16>").astype(float).tolist() == [1 + 2.0**-7]
    x = np.array([1 + 2.0**-4 + 2.0**-30], np.float64)  # e4m3: ulp 2^-3 at 1
    assert conv(x, "tensor<1xf64>", "tensor<1xf8E4M3FN>").astype(float).tolist() == [1.125]
