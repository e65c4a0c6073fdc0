"""Sliding-window ``reduce_window``s rewritten into fused window slices
(:mod:`oxla_backend_cpu.window_slices`), checked against the interpreter bitwise: max
pools (NCHW, NHWC, NaNs), sum pools, 1-d and 3-d windows, window and base dilation,
negative padding, integers, other bodies; the rewrite count, loop kernels only, and the
forms left to the general emitter or the scan (large windows, variadic, prefix)."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.ir import parse_module
from tests.backend_cpu.conftest import compile_cpu, run_both

ws = pytest.importorskip("oxla_backend_cpu.window_slices")

RNG = np.random.default_rng(11)
INITS = {"maximum": {"f32": "0xFF800000", "i32": "-2147483648"},
         "add": {"f32": "0.0", "i32": "0"}, "minimum": {"f32": "0x7F800000"},
         "multiply": {"f32": "1.0"}, "and": {"i1": "true"}, "or": {"i1": "false"}}


def _out_dim(n, w, s, b, d, lo, hi):
    padded = (n - 1) * b + 1 + lo + hi
    return (padded - ((w - 1) * d + 1)) // s + 1


def _text(shape, window, strides=None, pad=None, base=None, wdil=None, op="maximum",
          et="f32", swapped=False):
    rank = len(shape)
    strides = strides or (1,) * rank
    pad = pad or ((0, 0),) * rank
    base, wdil = base or (1,) * rank, wdil or (1,) * rank
    out = tuple(_out_dim(*a, *p) for a, p in
                zip(zip(shape, window, strides, base, wdil), pad))

    def ty(s):
        return f"tensor<{'x'.join(map(str, s))}x{et}>"

    def arr(v):
        return ", ".join(map(str, v))

    args = "%b, %a" if swapped else "%a, %b"
    return f"""func.func @main(%x: {ty(shape)}) -> {ty(out)} {{
  %init = stablehlo.constant dense<{INITS[op][et]}> : tensor<{et}>
  %r = "stablehlo.reduce_window"(%x, %init) <{{window_dimensions = array<i64: {arr(window)}>,
      window_strides = array<i64: {arr(strides)}>, base_dilations = array<i64: {arr(base)}>,
      window_dilations = array<i64: {arr(wdil)}>,
      padding = dense<{[list(p) for p in pad]}> : tensor<{rank}x2xi64>}}> ({{
  ^bb0(%a: tensor<{et}>, %b: tensor<{et}>):
    %s = stablehlo.{op} {args} : tensor<{et}>
    stablehlo.return %s : tensor<{et}>
  }}) : ({ty(shape)}, tensor<{et}>) -> {ty(out)}
  return %r : {ty(out)}
}}
"""


def _rewrites(text: str) -> int:
    return ws.rewrite_window_slices(parse_module(text, "t.mlir"))


def _bitwise(text: str, args: list) -> np.ndarray:
    """The cpu result of ``text``, asserted bit-equal to the interpreter's (signed
    zeros too; any NaN matches a NaN)."""
    from oxla.interpreter import InterpreterBackend

    _, (got,) = run_both(text, args, rtol=0.0)
    (want,) = InterpreterBackend().compile(parse_module(text, "test.mlir"))(*args)
    got, want = np.asarray(got), np.asarray(want)
    bits = got.view(f"u{got.itemsize}") == want.view(f"u{want.itemsize}")
    if got.dtype.kind == "f":
        bits |= np.isnan(got) & np.isnan(want)
    assert bits.all()
    return got


def _check(text: str, x: np.ndarray, count: int = 1) -> np.ndarray:
    assert _rewrites(text) == count
    return _bitwise(text, [x])


MAXPOOL_NCHW = dict(shape=(2, 3, 9, 8), window=(1, 1, 3, 3), strides=(1, 1, 2, 2),
                    pad=((0, 0), (0, 0), (1, 1), (1, 1)))
MAXPOOL_NHWC = dict(shape=(2, 9, 8, 5), window=(1, 3, 3, 1), strides=(1, 2, 2, 1),
                    pad=((0, 0), (1, 1), (1, 1), (0, 0)))


@pytest.mark.parametrize("case", [MAXPOOL_NCHW, MAXPOOL_NHWC], ids=["nchw", "nhwc"])
def test_max_pool_3x3_stride_2_pad_1(case):
    _check(_text(**case), RNG.standard_normal(case["shape"]).astype(np.float32))


def test_max_pool_propagates_nan_and_keeps_signed_zeros():
    x = RNG.standard_normal(MAXPOOL_NCHW["shape"]).astype(np.float32)
    x[0, 0, 3, 3] = np.nan  # padded (4, 4): in the windows of outputs 1 and 2
    x[1, 2, 0, :] = -0.0
    x[1, 2, 1, :] = 0.0
    x[1, 1, :3, :] = -0.0
    got = _check(_text(**MAXPOOL_NCHW), x)
    assert np.isnan(got[0, 0, 1:3, 1:3]).all() and np.isnan(got).sum() == 4


def test_sum_pool_2x2_stride_2_is_bitwise():
    x = (RNG.standard_normal((2, 4, 8, 6)) * 10.0 ** RNG.integers(-3, 4, (2, 4, 8, 6))
         ).astype(np.float32)
    text = _text((2, 4, 8, 6), (1, 1, 2, 2), (1, 1, 2, 2), op="add")
    x[0, 0, :2, :2] = -0.0
    got = _check(text, x)
    want = x.reshape(2, 4, 4, 2, 3, 2)
    w = np.float32(0)
    for i in range(2):
        for j in range(2):
            w = w + want[:, :, :, i, :, j]  # the row-major window order
    np.testing.assert_array_equal(got, w)


@pytest.mark.parametrize("kw", [
    dict(shape=(37,), window=(5,), strides=(2,), pad=((2, 1),), op="add"),  # 1-d
    dict(shape=(4, 7, 6, 5), window=(1, 3, 2, 2), strides=(1, 2, 1, 2),
         pad=((0, 0), (1, 0), (0, 1), (1, 1))),                            # 3-d
    dict(shape=(3, 11, 10), window=(1, 3, 2), wdil=(1, 2, 3), op="add"),   # window dilation
    dict(shape=(3, 5, 6), window=(1, 3, 3), strides=(1, 2, 2), base=(1, 2, 3),
         pad=((0, 0), (1, 1), (2, 0))),                                    # base dilation
    dict(shape=(2, 9, 9), window=(1, 2, 3), strides=(1, 2, 1),
         pad=((0, 0), (-1, 0), (1, -2)), op="add"),                        # negative pad
    dict(shape=(3, 10, 8), window=(2, 3, 2), strides=(1, 2, 2), swapped=True),
    dict(shape=(2, 5, 10), window=(1, 2, 2), strides=(1, 2, 3), wdil=(1, 1, 2),
         op="add"),                                  # phases of 3, the last element cut
    dict(shape=(2, 6, 11), window=(1, 2, 3), strides=(1, 1, 4), pad=((0, 0), (0, 0), (2, 3)),
         base=(1, 1, 2)),                            # phases of 4 over a dilated, padded dim
], ids=["1d", "3d", "wdil", "base", "negpad", "swapped", "stride3", "stride4"])
def test_window_forms_are_bitwise(kw):
    _check(_text(**kw), RNG.standard_normal(kw["shape"]).astype(np.float32))


@pytest.mark.parametrize("op", ["maximum", "add"])
def test_i32_windows_are_exact(op):
    x = RNG.integers(-2**31, 2**31, (3, 12, 10), dtype=np.int64).astype(np.int32)  # wraps
    _check(_text((3, 12, 10), (1, 3, 3), (1, 2, 2), ((0, 0), (1, 1), (1, 1)), op=op,
                 et="i32"), x)


@pytest.mark.parametrize("op,et", [("minimum", "f32"), ("multiply", "f32"), ("and", "i1"),
                                   ("or", "i1")])
def test_other_bodies(op, et):
    shape = (2, 9, 7)
    x = RNG.random(shape) < 0.7 if et == "i1" else \
        (RNG.standard_normal(shape) + 1.0).astype(np.float32)
    _check(_text(shape, (1, 3, 2), (1, 2, 2), ((0, 0), (1, 1), (0, 1)), op=op, et=et), x)


def _labels(text: str) -> list[str]:
    exe = compile_cpu(text, extra={"profile": True}, cache=False)
    return exe.stats["profile_labels"]


def test_max_pool_is_loop_kernels_only():
    """The ResNet-style pool (stride 2 in the last dimension, 9 readers of the phases)
    is two loop kernels: the padded phases, then the slices and maxima; no op kernel."""
    labels = _labels(_text(**MAXPOOL_NCHW))
    assert [lab.split()[1] for lab in labels] == ["loop", "loop"], labels
    assert "pad" in labels[0] and "maximum" in labels[1], labels


def test_unpadded_sum_pool_is_one_loop_kernel():
    labels = _labels(_text((2, 4, 8, 6), (1, 1, 2, 2), (1, 1, 2, 2), op="add"))
    assert len(labels) == 1 and labels[0].split()[1] == "loop", labels


def test_large_window_is_left():
    text = _text((2, 20, 20), (1, 9, 8), (1, 4, 4))  # 72 positions
    _check(text, RNG.standard_normal((2, 20, 20)).astype(np.float32), 0)


def test_variadic_argmax_window_is_left():
    text = """func.func @main(%x: tensor<2x8x8xf32>, %i: tensor<2x8x8xi32>)
    -> (tensor<2x4x4xf32>, tensor<2x4x4xi32>) {
  %m = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = "stablehlo.reduce_window"(%x, %i, %m, %z) <{window_dimensions = array<i64: 1, 2, 2>,
      window_strides = array<i64: 1, 2, 2>}> ({
  ^bb0(%a: tensor<f32>, %ai: tensor<i32>, %b: tensor<f32>, %bi: tensor<i32>):
    %ge = stablehlo.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %v = stablehlo.select %ge, %a, %b : tensor<i1>, tensor<f32>
    %k = stablehlo.select %ge, %ai, %bi : tensor<i1>, tensor<i32>
    stablehlo.return %v, %k : tensor<f32>, tensor<i32>
  }) : (tensor<2x8x8xf32>, tensor<2x8x8xi32>, tensor<f32>, tensor<i32>)
    -> (tensor<2x4x4xf32>, tensor<2x4x4xi32>)
  return %r#0, %r#1 : tensor<2x4x4xf32>, tensor<2x4x4xi32>
}
"""
    assert _rewrites(text) == 0
    x = RNG.standard_normal((2, 8, 8)).astype(np.float32)
    i = np.arange(128, dtype=np.int32).reshape(2, 8, 8)
    run_both(text, [x, i], rtol=0.0)


def test_prefix_window_stays_a_scan():
    from oxla_backend_cpu.scan import prefix_scan

    text = _text((3, 16), (1, 16), pad=((0, 0), (15, 0)), op="add")
    op = next(o for o in parse_module(text).walk() if o.name == "stablehlo.reduce_window")
    assert prefix_scan(op) is not None
    _check(text, RNG.standard_normal((3, 16)).astype(np.float32), 0)
