"""``canonicalize``: a zero ``pad`` of a convolution's input folds into its padding;
results checked bit for bit on the interpreter, non-foldable pads left alone."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.interpreter import InterpreterBackend
from oxla.ir import parse_module, print_module
from oxla.passes import run_pipeline

RNG = np.random.default_rng(3)


def _text(value="0.0", low=(0, 0, 1, 2), high=(0, 0, 2, 0), interior=(0, 0, 0, 0),
          stride=(2, 1), wpad=((1, 0), (0, 1)), ldil=(1, 1), rdil=(1, 1), t="f32",
          cin=3) -> str:
    """conv(pad(x)) text: x 1x3x6x5, w 4x{cin}x3x3, NCHW/OIHW."""
    xs = (1, 3, 6, 5)
    ps = tuple(s + a + b + max(0, s - 1) * i for s, a, b, i in zip(xs, low, high, interior))
    osp = []
    for i in range(2):
        size = (ps[2 + i] - 1) * ldil[i] + 1 + sum(wpad[i])
        osp.append((size - (3 - 1) * rdil[i] - 1) // stride[i] + 1)

    def ty(s):
        return "tensor<" + "x".join(map(str, s)) + f"x{t}>"

    out, ws = (1, 4, *osp), (4, cin, 3, 3)
    padtxt = "[" + ", ".join(f"[{a}, {b}]" for a, b in wpad) + "]"
    window = (f"stride = {list(stride)}, pad = {padtxt}, lhs_dilate = {list(ldil)}, "
              f"rhs_dilate = {list(rdil)}")
    return f"""
func.func @main(%x: {ty(xs)}, %w: {ty(ws)}) -> {ty(out)} {{
  %z = stablehlo.constant dense<{value}> : tensor<{t}>
  %p = stablehlo.pad %x, %z, low = {list(low)}, high = {list(high)}, interior = {list(interior)}
      : ({ty(xs)}, tensor<{t}>) -> {ty(ps)}
  %0 = stablehlo.convolution(%p, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1],
      window = {{{window}}}
      {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}
      : ({ty(ps)}, {ty(ws)}) -> {ty(out)}
  return %0 : {ty(out)}
}}"""


def _run(text: str, args):
    return InterpreterBackend().compile(parse_module(text, "t.mlir"))(*args)[0]


def _args(t="f32"):
    dt = np.float32 if t == "f32" else np.int32
    x = (RNG.standard_normal((1, 3, 6, 5)) * 3).astype(dt)
    w = (RNG.standard_normal((4, 3, 3, 3)) * 3).astype(dt)
    return [x, w]


@pytest.mark.parametrize("case", [
    dict(),
    dict(stride=(1, 1), wpad=((0, 0), (0, 0))),
    dict(stride=(1, 2), wpad=((-1, 0), (2, 1)), rdil=(1, 2)),
    dict(t="i32", value="0"),
], ids=["f32", "zero-window-pad", "negative-window-pad", "i32"])
def test_zero_pad_folds_into_the_convolution(case):
    text = _text(**case)
    args = _args(case.get("t", "f32"))
    m = parse_module(text, "t.mlir")
    run_pipeline(m, "canonicalize")
    out = print_module(m)
    assert "stablehlo.pad" not in out and "stablehlo.convolution" in out
    got = InterpreterBackend().compile(m)(*args)[0]
    want = _run(text, args)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


@pytest.mark.parametrize("case", [
    dict(value="1.0"),
    dict(value="-0.0"),  # a -0 pad is not the convolution's +0 padding
    dict(interior=(0, 0, 1, 0)),
    dict(low=(0, 1, 1, 2), cin=4),  # pads the feature dimension
    dict(stride=(1, 1), ldil=(2, 1)),  # padding after dilation differs
], ids=["one", "minus-zero", "interior", "feature-dim", "lhs-dilation"])
def test_other_pads_stay(case):
    text = _text(**case)
    m = parse_module(text, "t.mlir")
    run_pipeline(m, "canonicalize")
    assert "stablehlo.pad" in print_module(m)
