"""Typed-FFI attribute decoding (oxla.ir.ffi): jaxlib's legacy ``mhlo.backend_config``
form and the ``api_version = 4`` dictionary form, value by value."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.errors import NotSupportedError
from oxla.ir import parse_module
from oxla.ir.ffi import api_version, ffi_attributes, frontend_attributes


def _call(attrs: str) -> object:
    text = f"""
func.func @main(%a: tensor<3x3xf32>) -> tensor<3x3xf32> {{
  %0 = stablehlo.custom_call @my_target(%a) {{{attrs}}} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}}"""
    module = parse_module(text)
    return next(op for op in module.walk() if op.name == "stablehlo.custom_call")


def test_legacy_mhlo_backend_config_as_jaxlib_emits_it():
    op = _call('backend_config = "", mhlo.backend_config = {diag = 78 : ui8, side = 76 : '
               'ui8, trans_x = 78 : ui8, uplo = 85 : ui8}, '
               'mhlo.frontend_attributes = {num_batch_dims = "0"}')
    got = ffi_attributes(op)
    assert list(got) == ["diag", "side", "trans_x", "uplo"]
    assert got["uplo"] == 85 and type(got["uplo"]) is np.uint8
    assert chr(got["side"]) == "L"
    assert frontend_attributes(op) == {"num_batch_dims": "0"}
    assert api_version(op) == 0


def test_typed_ffi_dictionary_every_value_kind():
    op = _call("api_version = 4 : i32, backend_config = {b = true, c = 1 : i1, "
               "f = 2.5 : f32, d = 0.25 : f64, i = -3 : i32, u = 200 : ui8, s = \"x\", "
               "arr = array<i64: 1, 2>, fa = array<f32: 1.5>, lst = [1 : i32, \"y\"], "
               "dn = dense<[[1, 2], [3, 4]]> : tensor<2x2xi16>, "
               "nest = {k = 7 : i64}, un}")
    assert api_version(op) == 4
    got = ffi_attributes(op)
    assert got["b"] is True and got["c"] is True
    assert type(got["f"]) is np.float32 and got["f"] == 2.5
    assert type(got["d"]) is np.float64 and got["d"] == 0.25
    assert type(got["i"]) is np.int32 and got["i"] == -3
    assert type(got["u"]) is np.uint8 and got["u"] == 200
    assert got["s"] == "x"
    assert got["arr"] == (1, 2) and all(type(v) is np.int64 for v in got["arr"])
    assert type(got["fa"][0]) is np.float32
    assert got["lst"] == (1, "y") and type(got["lst"][0]) is np.int32
    assert got["dn"].dtype == np.int16 and got["dn"].tolist() == [[1, 2], [3, 4]]
    assert got["nest"] == {"k": 7} and type(got["nest"]["k"]) is np.int64
    assert got["un"] is True


def test_api_version_enum_and_string_dictionary():
    op = _call("api_version = #stablehlo<custom_call_api_version API_VERSION_TYPED_FFI>, "
               'backend_config = "{mode = 65 : ui8}"')
    assert api_version(op) == 4
    assert ffi_attributes(op) == {"mode": 65}


def test_typed_ffi_reads_backend_config_not_mhlo():
    op = _call("api_version = 4 : i32, backend_config = {a = 1 : i32}, "
               "mhlo.backend_config = {b = 2 : i32}")
    assert ffi_attributes(op) == {"a": 1}


def test_no_typed_attributes():
    assert ffi_attributes(_call('backend_config = "opaque bytes"')) == {}
    assert ffi_attributes(_call("")) == {}
    assert frontend_attributes(_call("")) == {}


def test_refuses_what_has_no_ffi_value():
    with pytest.raises(NotSupportedError, match="no FFI value"):
        ffi_attributes(_call("api_version = 4 : i32, backend_config = {s = @sym}"))
    with pytest.raises(NotSupportedError, match="not a typed FFI dictionary"):
        ffi_attributes(_call('api_version = 4 : i32, backend_config = "raw"'))
