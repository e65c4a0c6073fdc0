"""float -> 8/16-bit integer ``convert`` on cpu (a float clamp, a conversion to i32 and
a truncation, which vectorizes) matches the interpreter's saturating conversion bit for
bit: out-of-range values saturate, NaN becomes 0, fractions truncate toward zero."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both

EDGES = [0.0, -0.0, 0.4, -0.6, 1.5, -1.5, 126.9, 127.0, 127.6, 128.0, -128.0, -128.9,
         -129.0, 255.0, 255.9, 256.0, 300.0, -300.0, 32767.5, 32768.0, -32768.9, -40000.0,
         65535.9, 65536.0, 1e30, -1e30, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("src", ["f32", "f64"])
@pytest.mark.parametrize("dst", ["i8", "ui8", "i16", "ui16"])
def test_convert_narrow_saturates(src, dst):
    rng = np.random.default_rng(0)
    x = np.concatenate([np.array(EDGES), rng.uniform(-70000, 70000, 67),
                        rng.uniform(-300, 300, 100)]).astype(np.dtype(src.replace("f", "float")))
    n = x.size
    text = f"""
func.func @main(%x: tensor<{n}x{src}>) -> tensor<{n}x{dst}> {{
  %y = stablehlo.convert %x : (tensor<{n}x{src}>) -> tensor<{n}x{dst}>
  return %y : tensor<{n}x{dst}>
}}"""
    _, got = run_both(text, [x])  # bitwise against the interpreter
    g = np.asarray(got[0])
    info = np.iinfo(g.dtype)
    want = np.where(np.isnan(x), 0, np.clip(np.trunc(np.nan_to_num(x)), info.min, info.max))
    np.testing.assert_array_equal(g.astype(np.float64), want)
