"""8- and 4-bit floats on cpu (computed in f32, rounded by bit manipulation): every
representable value converts and adds exactly as the interpreter (ml_dtypes) does, and
f32 -> small rounding matches ml_dtypes (f64 -> small: the interpreter's single rounding)
on ties, subnormals, overflow, inf and NaN."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu

ml_dtypes = pytest.importorskip("ml_dtypes")
from oxla.interpreter import InterpreterBackend  # noqa: E402
from oxla.ir import parse_module  # noqa: E402

FORMATS = {"f8E3M4": ("float8_e3m4", 256), "f8E4M3": ("float8_e4m3", 256),
           "f8E5M2": ("float8_e5m2", 256), "f8E4M3FN": ("float8_e4m3fn", 256),
           "f8E4M3FNUZ": ("float8_e4m3fnuz", 256), "f8E5M2FNUZ": ("float8_e5m2fnuz", 256),
           "f8E4M3B11FNUZ": ("float8_e4m3b11fnuz", 256),
           "f4E2M1FN": ("float4_e2m1fn", 16),
           "f6E2M3FN": ("float6_e2m3fn", 64), "f6E3M2FN": ("float6_e3m2fn", 64)}


def _all_values(name: str) -> np.ndarray:
    dt, count = FORMATS[name]
    return np.arange(count, dtype=np.uint8).view(getattr(ml_dtypes, dt))


def _bits(x: np.ndarray) -> np.ndarray:
    """Bit patterns with every NaN made one value (payloads are not compared)."""
    u = x.view(np.uint8).astype(np.int32)
    return np.where(np.isnan(x.astype(np.float32)), -1, u)


def _both(text: str, args: list) -> tuple[list, list]:
    got = compile_cpu(text)(*args)
    want = InterpreterBackend().compile(parse_module(text, "t.mlir"))(*args)
    return got, [np.asarray(w) for w in want]


@pytest.mark.parametrize("name", list(FORMATS))
def test_convert_and_add_every_value(name):
    x = _all_values(name)
    n = x.size
    y = np.roll(x, 5)
    text = f"""
func.func @main(%x: tensor<{n}x{name}>, %y: tensor<{n}x{name}>)
    -> (tensor<{n}xf32>, tensor<{n}x{name}>, tensor<{n}x{name}>, tensor<{n}xf64>) {{
  %f = stablehlo.convert %x : (tensor<{n}x{name}>) -> tensor<{n}xf32>
  %s = stablehlo.add %x, %y : tensor<{n}x{name}>
  %m = stablehlo.multiply %x, %x : tensor<{n}x{name}>
  %d = stablehlo.convert %s : (tensor<{n}x{name}>) -> tensor<{n}xf64>
  return %f, %s, %m, %d : tensor<{n}xf32>, tensor<{n}x{name}>, tensor<{n}x{name}>,
      tensor<{n}xf64>
}}"""
    got, want = _both(text, [x, y])
    np.testing.assert_array_equal(got[0], x.astype(np.float32))
    for g, w in zip(got[1:3], want[1:3]):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(_bits(g), _bits(w))
    np.testing.assert_array_equal(got[3], want[3])


@pytest.mark.parametrize("name", list(FORMATS))
def test_f32_and_f64_rounding_matches_ml_dtypes(name):
    dt = getattr(ml_dtypes, FORMATS[name][0])
    vals = _all_values(name).astype(np.float64)
    vals = np.unique(vals[np.isfinite(vals)])
    mids = (vals[:-1] + vals[1:]) / 2  # exact ties: round to even
    rng = np.random.default_rng(3)
    extra = rng.normal(0, float(ml_dtypes.finfo(dt).max), 2000)
    xs = np.concatenate([vals, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                         extra, [np.inf, -np.inf, np.nan, -np.nan, 1e30, -1e30, 1e-30]])
    n = xs.size
    text = f"""
func.func @main(%a: tensor<{n}xf32>, %b: tensor<{n}xf64>)
    -> (tensor<{n}x{name}>, tensor<{n}x{name}>) {{
  %x = stablehlo.convert %a : (tensor<{n}xf32>) -> tensor<{n}x{name}>
  %y = stablehlo.convert %b : (tensor<{n}xf64>) -> tensor<{n}x{name}>
  return %x, %y : tensor<{n}x{name}>, tensor<{n}x{name}>
}}"""
    a32 = xs.astype(np.float32)
    with np.errstate(all="ignore"):
        got, want = _both(text, [a32, xs])
        np.testing.assert_array_equal(got[0].view(np.uint8), a32.astype(dt).view(np.uint8))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(_bits(g), _bits(w))


def test_f8e8m0fnu_is_rejected_by_name():
    from oxla.errors import NotSupportedError

    text = """
func.func @main(%x: tensor<4xf8E8M0FNU>) -> tensor<4xf8E8M0FNU> {
  %m = stablehlo.multiply %x, %x : tensor<4xf8E8M0FNU>
  return %m : tensor<4xf8E8M0FNU>
}"""
    with pytest.raises(NotSupportedError, match="f8E8M0FNU"):
        compile_cpu(text)
