"""Masked, scaled "safe" softmax as torch's ``scaled_dot_product_attention`` lowers it
(``select(mask, s * scale, -inf)``, ``max``, ``select(is_finite(max), max, 0)``, ``exp``,
``sum``, ``divide``) on the cpu row kernels, checked against the interpreter with fully
masked rows (0/0: NaN), NaN and infinite scores; and the masked row max stays a vector
reduction (:func:`oxla_backend_cpu.reduction.freeze`)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, run_both

RNG = np.random.default_rng(5)


def _masked_softmax(b: int, h: int, r: int, c: int, et: str, mask: str,
                    reduce_op: str = "maximum") -> str:
    """``mask`` "arg": an ``i1[r, c]`` parameter; "causal": iota ``col <= row``."""
    x = f"tensor<{b}x{h}x{r}x{c}x{et}>"
    m = f"tensor<{b}x{h}x{r}x{et}>"
    xm = f"tensor<{b}x{h}x{r}x{c}xi1>"
    mm = f"tensor<{b}x{h}x{r}xi1>"
    s = f"tensor<{et}>"
    ninf = "0xFF800000" if reduce_op == "maximum" else "0x7F800000"
    if mask == "arg":
        params, mk = f"%x: {x}, %mask: tensor<{r}x{c}xi1>", ""
    else:
        params = f"%x: {x}"
        mk = f"""  %i0 = stablehlo.iota dim = 0 : tensor<{r}x{c}xi64>
  %i1 = stablehlo.iota dim = 1 : tensor<{r}x{c}xi64>
  %mask = stablehlo.compare LE, %i1, %i0 : (tensor<{r}x{c}xi64>, tensor<{r}x{c}xi64>)
    -> tensor<{r}x{c}xi1>
"""
    return f"""func.func @main({params}) -> {x} {{
{mk}  %sc0 = stablehlo.constant dense<0.125> : tensor<f32>
  %sc = stablehlo.convert %sc0 : (tensor<f32>) -> {s}
  %scb = stablehlo.broadcast_in_dim %sc, dims = [] : ({s}) -> {x}
  %xs = stablehlo.multiply %x, %scb : {x}
  %ni0 = stablehlo.constant dense<{ninf}> : tensor<f32>
  %ni = stablehlo.convert %ni0 : (tensor<f32>) -> {s}
  %nib = stablehlo.broadcast_in_dim %ni, dims = [] : ({s}) -> {x}
  %mb = stablehlo.broadcast_in_dim %mask, dims = [2, 3] : (tensor<{r}x{c}xi1>) -> {xm}
  %sel = stablehlo.select %mb, %xs, %nib : {xm}, {x}
  %mx = stablehlo.reduce(%sel init: %ni) applies stablehlo.{reduce_op} across dimensions = [3]
    : ({x}, {s}) -> {m}
  %fin = stablehlo.is_finite %mx : ({m}) -> {mm}
  %z0 = stablehlo.constant dense<0.0> : tensor<f32>
  %z = stablehlo.convert %z0 : (tensor<f32>) -> {s}
  %zb = stablehlo.broadcast_in_dim %z, dims = [] : ({s}) -> {m}
  %safe = stablehlo.select %fin, %mx, %zb : {mm}, {m}
  %sb = stablehlo.broadcast_in_dim %safe, dims = [0, 1, 2] : ({m}) -> {x}
  %d = stablehlo.subtract %sel, %sb : {x}
  %e = stablehlo.exponential %d : {x}
  %sum = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [3]
    : ({x}, {s}) -> {m}
  %sumb = stablehlo.broadcast_in_dim %sum, dims = [0, 1, 2] : ({m}) -> {x}
  %y = stablehlo.divide %e, %sumb : {x}
  return %y : {x}
}}"""


def _scores(b, h, r, c, dt) -> np.ndarray:
    """Random scores with a NaN row, a row holding +inf and one holding -inf."""
    x = (RNG.standard_normal((b, h, r, c)) * 8).astype(dt)
    x[0, 0, 1, :] = np.nan
    x[0, -1, 2, 3 % c] = np.inf
    x[-1, 0, 3, 0] = -np.inf
    return x


@pytest.mark.parametrize("et,dt", [("f32", np.float32), ("f64", np.float64)])
@pytest.mark.parametrize("shape", [(1, 3, 8, 8), (2, 2, 5, 37), (1, 2, 6, 128)])
def test_masked_softmax_with_fully_masked_rows(et, dt, shape):
    """Rows 0 and 4 of the mask are all False: max -inf, safe max 0, exp 0, 0/0 NaN
    like the interpreter; other rows keep a random half of their columns."""
    b, h, r, c = shape
    mask = RNG.random((r, c)) < 0.5
    mask[0, :] = False
    mask[min(4, r - 1), :] = False
    mask[1, :] = True
    x = _scores(b, h, r, c, dt)
    tol = 1e-5 if et == "f32" else 1e-12
    exe, (got,) = run_both(_masked_softmax(b, h, r, c, et, "arg"), [x, mask],
                           rtol=tol, atol=tol)
    assert np.isnan(got[:, :, 0, :]).all()  # fully masked row: 0/0
    assert np.isnan(got[0, 0, 1, :]).all()  # NaN row
    assert np.isfinite(got[1 % b, 1 % h, 5 % r, :][mask[5 % r]]).all()


@pytest.mark.parametrize("shape", [(1, 12, 16, 16), (1, 2, 33, 33)])
def test_causal_softmax_matches_the_interpreter(shape):
    x = _scores(*shape, np.float32)
    run_both(_masked_softmax(*shape, "f32", "causal"), [x], rtol=1e-5, atol=1e-6)


def test_masked_min_reduction_matches_the_interpreter():
    """The same fold applies to ``minimum`` with a ``+inf`` fill."""
    x = _scores(1, 2, 7, 40, np.float32)
    mask = RNG.random((7, 40)) < 0.5
    mask[2, :] = False
    run_both(_masked_softmax(1, 2, 7, 40, "f32", "arg", "minimum"), [x, mask],
             rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mask", ["arg", "causal"])
def test_masked_row_max_is_a_vector_reduction(mask, tmp_path):
    """Before ``freeze``, InstCombine turned the masked max into a conditional select
    chain that the loop vectorizer leaves scalar (~10x slower at 128 columns)."""
    text = _masked_softmax(1, 4, 64, 64, "f32", mask)
    exe = compile_cpu(text, dump_dir=str(tmp_path), cache=False)
    assert exe.stats["kernel_count"] <= 2
    ir_text = (tmp_path / "6-optimized.ll").read_text()
    assert re.search(r"@llvm\.maximum\.v\d+f32", ir_text)


def test_exp_near_underflow_matches_float64():
    """Masked scores are -inf: ``exp`` takes a zero factor below ``-150 ln 2``
    (:mod:`oxla_codegen_llvm.vmath`); results there and around it stay within 1 ulp of
    float64 ``exp`` rounded to f32 (subnormals included), -inf gives +0, NaN passes."""
    n = 4096
    text = f"""func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %e = stablehlo.exponential %x : tensor<{n}xf32>
  return %e : tensor<{n}xf32>
}}"""
    x = np.linspace(-106, -86, n).astype(np.float32)
    x[:4] = [-np.inf, np.nan, -103.97, -103.98]
    (got,) = compile_cpu(text)(x)
    with np.errstate(invalid="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    ulp = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    assert ulp[2:].max() <= 1
    assert got[0] == 0 and not np.signbit(got[0]) and np.isnan(got[1])
    assert got[3] == 0 and got[2] > 0  # 2^-150 lies between them
