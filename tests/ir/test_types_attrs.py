"""Types and attributes: every element type, quantized types, dims, dense data."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from oxla.ir import parse_attribute, parse_module, parse_type, print_module
from oxla.ir.types import FLOAT_TYPE_NAMES, QuantizedType, TensorType

ELEMENT_TYPES = [
    "i1", "i2", "i4", "i8", "i16", "i32", "i64", "ui2", "ui4", "ui8", "ui16", "ui32", "ui64",
    *FLOAT_TYPE_NAMES, "complex<f32>", "complex<f64>",
]


def test_every_element_type_round_trips_in_tensors():
    for e in ELEMENT_TYPES:
        for shape in ("", "2x", "?x3x", "0x1x"):
            text = f"tensor<{shape}{e}>"
            assert str(parse_type(text)) == text
    for e in ("f8E3M4", "f8E4M3", "f8E4M3FN", "f8E4M3FNUZ", "f8E4M3B11FNUZ", "f8E5M2",
              "f8E5M2FNUZ", "f8E8M0FNU", "f4E2M1FN", "f6E2M3FN", "f6E3M2FN", "tf32"):
        assert e in ELEMENT_TYPES


@pytest.mark.parametrize("text", [
    "tensor<2x!quant.uniform<i8:f32, 1.000000e-01:-3>>",
    "tensor<2x!quant.uniform<i8<-127:127>:f32, 5.000000e-01>>",
    "tensor<2x3x!quant.uniform<i8:f32:1, {1.000000e-01:1,2.000000e-01:2,3.000000e-01:3}>>",
    "!stablehlo.token",
    "tuple<tensor<f32>, tuple<!stablehlo.token, tensor<2xi1>>>",
    "tensor<?x3xf32, #stablehlo.bounds<5, ?>>",
    "(tensor<2xf32>, tensor<i32>) -> (tensor<2xf32>, tensor<i1>)",
])
def test_structured_types_round_trip(text):
    t = parse_type(text)
    again = parse_type(str(t))
    assert again == t
    assert str(again) == str(t)


def test_quantized_per_axis_fields():
    t = parse_type("tensor<2x!quant.uniform<i8:f32:0, {1.0:1,2.0:2}>>")
    q = t.element_type
    assert isinstance(q, QuantizedType) and q.is_per_axis and q.quantized_dimension == 0
    assert q.scales == (1.0, 2.0) and q.zero_points == (1, 2)


def test_dynamic_and_bounded_dims():
    t = parse_type("tensor<?x3xf32, #stablehlo.bounds<5, ?>>")
    assert isinstance(t, TensorType) and t.shape == (None, 3) and t.encoding is not None


@pytest.mark.parametrize("etype,dtype", [
    ("f32", np.float32), ("bf16", ml_dtypes.bfloat16), ("f16", np.float16),
    ("i64", np.int64), ("ui16", np.uint16), ("f8E4M3FN", ml_dtypes.float8_e4m3fn),
    ("complex<f32>", np.complex64),
])
def test_dense_hex_decode_and_encode(etype, dtype):
    arr = (np.arange(6) % 4).astype(dtype).reshape(2, 3)
    text = f'dense<"0x{arr.tobytes().hex().upper()}"> : tensor<2x3x{etype}>'
    a = parse_attribute(text)
    np.testing.assert_array_equal(a.array, arr)
    again = parse_attribute(str(a))
    assert again == a


def test_dense_hex_splat_and_nested_and_bool():
    a = parse_attribute('dense<"0x0000803F"> : tensor<4x2xf32>')
    assert a.array.shape == (4, 2) and (a.array == 1.0).all() and a.is_splat
    assert str(parse_attribute(str(a))) == str(a)
    b = parse_attribute("dense<[[true, false], [false, true]]> : tensor<2x2xi1>")
    assert b.array.dtype == np.bool_ and b.array.tolist() == [[True, False], [False, True]]
    c = parse_attribute("dense<[(1.0, 2.0), (3.0, -4.0)]> : tensor<2xcomplex<f32>>")
    assert c.array.tolist() == [1 + 2j, 3 - 4j]
    assert parse_attribute(str(c)) == c


@pytest.mark.parametrize("etype,dtype", [("i4", ml_dtypes.int4), ("ui4", ml_dtypes.uint4),
                                         ("i2", ml_dtypes.int2), ("f4E2M1FN",
                                                                  ml_dtypes.float4_e2m1fn)])
def test_sub_byte_dense_values(etype, dtype):
    a = parse_attribute(f"dense<[1, 0, 1, 1]> : tensor<4x{etype}>")
    assert a.array.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a.array.astype(np.float32), [1, 0, 1, 1])
    assert parse_attribute(str(a)) == a


def test_dense_resource_section():
    text = """func.func @main() -> tensor<2xf32> {
  %0 = stablehlo.constant dense_resource<blob1> : tensor<2xf32>
  return %0 : tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000000803F00000040"
    }
  }
#-}
"""
    m = parse_module(text)
    assert m.resources["blob1"] == np.array([1, 2], np.float32).tobytes()
    const = m.main.regions[0].blocks[0].ops[0]
    assert const.attributes["value"].array.tolist() == [1.0, 2.0]
    assert print_module(parse_module(print_module(m))) == print_module(m)


@pytest.mark.parametrize("text", [
    "#stablehlo<comparison_direction LT>",
    "#stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], "
    "lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>",
    "#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>",
    "array<i64: 1, 2, 3>",
    '{mhlo.sharding = "{replicated}", jax.result_info = "out"}',
])
def test_attribute_round_trips(text):
    a = parse_attribute(text)
    assert parse_attribute(str(a)) == a
