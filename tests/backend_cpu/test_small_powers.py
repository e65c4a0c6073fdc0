"""``stablehlo.power`` with a constant small integer exponent is multiplied out in fused
loops (no libm ``pow`` call, so the loop vectorizes), and agrees with the interpreter,
special values included."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e30, -1e30, 1e-30, 3.5, -2.25]


def _program(exponent: float, dtype: str, n: int) -> str:
    t = f"tensor<{n}x{dtype}>"
    return f"""func.func @main(%x: {t}) -> {t} {{
  %c = stablehlo.constant dense<{exponent!r}> : tensor<{dtype}>
  %e = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<{dtype}>) -> {t}
  %p = stablehlo.power %x, %e : {t}
  %y = stablehlo.multiply %p, %x : {t}
  return %y : {t}
}}"""


def _calls(exe) -> set[str]:
    return set(re.findall(r"call [^@]*@\"?([\w.]+)", exe.llvm_ir))


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("exponent", [0.0, 1.0, 2.0, 3.0, 4.0])
def test_small_integer_power_is_multiplied_out(dtype, exponent):
    rng = np.random.default_rng(int(exponent))
    x = np.concatenate([np.array(SPECIAL), rng.standard_normal(500) * 4]).astype(
        np.dtype("float32" if dtype == "f32" else "float64"))
    # x**3 and x**4 round twice where pow rounds once: a few ulp, not bitwise
    exe, got = run_both(_program(exponent, dtype, x.size), [x], rtol=1e-6 if dtype == "f32"
                        else 1e-14)
    assert not any("pow" in c for c in _calls(exe)), _calls(exe)
    ref = np.power(x.astype(np.float64), exponent) * x
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(np.isnan(got[0]), np.isnan(ref))
    np.testing.assert_array_equal(got[0][~finite & ~np.isnan(ref)], ref[~finite & ~np.isnan(ref)])
    np.testing.assert_array_equal(np.signbit(got[0][ref == 0]), np.signbit(ref[ref == 0]))


def test_other_exponents_keep_pow():
    x = np.abs(np.random.default_rng(5).standard_normal(64)).astype(np.float32)
    exe, got = run_both(_program(2.5, "f32", 64), [x], rtol=1e-6)
    assert any("pow" in c for c in _calls(exe)), _calls(exe)
