"""Dots BLAS does not cover and convolutions, cpu against the interpreter."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("lt,rt,ot,dt", [
    ("i32", "i32", "i32", np.int32), ("i8", "i8", "i32", np.int8),
    ("ui8", "ui8", "ui8", np.uint8), ("f16", "f16", "f16", np.float16),
    ("bf16", "bf16", "f32", ml_dtypes.bfloat16), ("f32", "f32", "f64", np.float32)])
def test_dot_general_other_types(lt, rt, ot, dt):
    text = f"""
func.func @main(%a: tensor<2x3x5x{lt}>, %b: tensor<2x5x4x{rt}>) -> tensor<2x3x4x{ot}> {{
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1]
      : (tensor<2x3x5x{lt}>, tensor<2x5x4x{rt}>) -> tensor<2x3x4x{ot}>
  return %0 : tensor<2x3x4x{ot}>
}}"""
    if np.issubdtype(np.dtype(dt), np.integer):
        a = RNG.integers(-100 if dt != np.uint8 else 0, 100, (2, 3, 5)).astype(dt)
        b = RNG.integers(-100 if dt != np.uint8 else 0, 100, (2, 5, 4)).astype(dt)
    else:
        a = RNG.standard_normal((2, 3, 5)).astype(dt)
        b = RNG.standard_normal((2, 5, 4)).astype(dt)
    run_both(text, [a, b], rtol=1e-2 if "16" in lt else 1e-6, atol=1e-6)


CONV = """
func.func @main(%x: tensor<{xs}x{t}>, %w: tensor<{ws}x{t}>) -> tensor<{os}x{t}> {{
  %0 = stablehlo.convolution(%x, %w) dim_numbers = {dn},
      window = {{stride = {stride}, pad = {pad}, lhs_dilate = {ld}, rhs_dilate = {rd},
                reverse = {rev}}}
      {{batch_group_count = {bgc} : i64, feature_group_count = {fgc} : i64}}
      : (tensor<{xs}x{t}>, tensor<{ws}x{t}>) -> tensor<{os}x{t}>
  return %0 : tensor<{os}x{t}>
}}"""


def _out_shape(n, c, h, w, o, kh, kw, stride, pad, ld, rd):
    def one(size, k, s, p, l, r):
        size = (size - 1) * l + 1 + p[0] + p[1]
        span = (k - 1) * r + 1
        return max(0, (size - span) // s + 1)
    return one(h, kh, stride[0], pad[0], ld[0], rd[0]), one(w, kw, stride[1], pad[1], ld[1],
                                                             rd[1])


@pytest.mark.parametrize("case", [
    dict(stride=(1, 1), pad=((0, 0), (0, 0)), ld=(1, 1), rd=(1, 1), rev=(0, 0), fgc=1, bgc=1),
    dict(stride=(2, 1), pad=((1, 2), (0, 1)), ld=(1, 2), rd=(2, 1), rev=(1, 0), fgc=1, bgc=1),
    dict(stride=(1, 2), pad=((1, 1), (1, 1)), ld=(1, 1), rd=(1, 1), rev=(0, 0), fgc=2, bgc=1),
    dict(stride=(1, 1), pad=((0, 1), (1, 0)), ld=(2, 1), rd=(1, 1), rev=(0, 1), fgc=1, bgc=2),
])
@pytest.mark.parametrize("t", ["f32", "i32"])
def test_convolution_nhwc_hwio_all_window_attributes(case, t):
    n, h, w, c, kh, kw, o = 2, 6, 5, 4, 3, 2, 6
    fgc, bgc = case["fgc"], case["bgc"]
    oh, ow = _out_shape(n, c, h, w, o, kh, kw, case["stride"], case["pad"], case["ld"],
                        case["rd"])
    pad = "[" + ", ".join(f"[{a}, {b}]" for a, b in case["pad"]) + "]"
    text = CONV.format(
        xs=f"{n}x{h}x{w}x{c}", ws=f"{kh}x{kw}x{c // fgc}x{o}", os=f"{n // bgc}x{oh}x{ow}x{o}",
        t=t, dn="[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
        stride=list(case["stride"]), pad=pad, ld=list(case["ld"]), rd=list(case["rd"]),
        rev=str([bool(r) for r in case["rev"]]).lower(), fgc=fgc, bgc=bgc)
    dt = np.float32 if t == "f32" else np.int32
    x = (RNG.standard_normal((n, h, w, c)) * 4).astype(dt)
    k = (RNG.standard_normal((kh, kw, c // fgc, o)) * 4).astype(dt)
    run_both(text, [x, k], rtol=1e-5, atol=1e-5)


def test_convolution_nchw_oihw_layout():
    text = """
func.func @main(%x: tensor<1x3x7x7xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1],
      window = {stride = [2, 2], pad = [[1, 1], [1, 1]]}
      {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<1x3x7x7xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}"""
    run_both(text, [RNG.standard_normal((1, 3, 7, 7)).astype(np.float32),
                    RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)], rtol=1e-5,
             atol=1e-5)
