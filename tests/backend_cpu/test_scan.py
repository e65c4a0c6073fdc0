"""Prefix ``reduce_window``s (cumsum/cumprod/cummax/cummin, both directions) as O(n)
scans (:mod:`oxla_backend_cpu.scan`), checked against the interpreter: integers (with
wrap-around) and forward float scans bitwise, reverse float sums to rounding; NaNs,
ties, empty dimensions, windows longer than the dimension; a non-identity init and a
sliding window keep the general emitter."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.ir import parse_module
from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(11)


def _text(shape, et, op, init, dim, reverse, window=None):
    n = shape[dim]
    w = window or n
    rank = len(shape)
    wd = [1] * rank
    wd[dim] = w
    pad = [[0, 0] for _ in range(rank)]
    pad[dim] = [0, w - 1] if reverse else [w - 1, 0]
    t = f"tensor<{'x'.join(map(str, shape))}x{et}>"
    return f"""func.func @main(%x: {t}) -> {t} {{
  %init = stablehlo.constant dense<{init}> : tensor<{et}>
  %r = "stablehlo.reduce_window"(%x, %init) <{{padding = dense<{pad}> : tensor<{rank}x2xi64>,
      window_dimensions = array<i64: {', '.join(map(str, wd))}>}}> ({{
  ^bb0(%a: tensor<{et}>, %b: tensor<{et}>):
    %s = stablehlo.{op} %a, %b : tensor<{et}>
    stablehlo.return %s : tensor<{et}>
  }}) : ({t}, tensor<{et}>) -> {t}
  return %r : {t}
}}
"""


def _scan_of(text):
    from oxla_backend_cpu.scan import prefix_scan

    op = next(o for o in parse_module(text).walk() if o.name == "stablehlo.reduce_window")
    return prefix_scan(op)


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("op,init", [("add", 0), ("multiply", 1), ("maximum", -2147483648),
                                     ("minimum", 5), ("xor", 0)])
def test_int32_scans_are_exact(dim, reverse, op, init):
    shape = (3, 17, 5)
    x = RNG.integers(-2**31, 2**31, shape, dtype=np.int64).astype(np.int32)  # wraps
    if op == "minimum":
        x = RNG.integers(-3, 8, shape).astype(np.int32)  # ties, init 5 above some
    text = _text(shape, "i32", op, init, dim, reverse)
    assert _scan_of(text) is not None
    run_both(text, [x])


@pytest.mark.parametrize("reverse", [False, True])
def test_int8_cumprod_wraps_and_bool_or(reverse):
    x = RNG.integers(-128, 128, (4, 9)).astype(np.int8)
    run_both(_text((4, 9), "i8", "multiply", 1, 1, reverse), [x])
    b = RNG.random((6, 5)) < 0.2
    text = _text((6, 5), "i1", "or", "false", 0, reverse)
    assert _scan_of(text) is not None
    run_both(text, [b])


@pytest.mark.parametrize("dim", [0, 1])
def test_forward_float_sum_is_the_spec_order_bitwise(dim):
    x = (RNG.standard_normal((33, 65)) * 10.0 ** RNG.integers(-3, 4, (33, 65))).astype(np.float32)
    x[0, 0] = -0.0
    run_both(_text((33, 65), "f32", "add", "0.0", dim, False), [x], rtol=0.0)


@pytest.mark.parametrize("dim", [0, 1])
def test_reverse_float_sum_within_rounding(dim):
    x = RNG.standard_normal((20, 40)).astype(np.float32)
    run_both(_text((20, 40), "f32", "add", "0.0", dim, True), [x], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("op,init", [("maximum", "0xFF800000"), ("minimum", "0x7F800000")])
def test_float_max_min_with_nans_and_ties(reverse, op, init):
    x = RNG.integers(-2, 3, (7, 31)).astype(np.float32)  # many ties
    x[2, 5] = np.nan
    x[4, 30] = np.nan
    x[5, 0] = np.inf
    run_both(_text((7, 31), "f32", op, init, 1, reverse), [x], rtol=0.0)


def test_cumprod_f64_and_window_longer_than_the_dim():
    x = (1 + 0.1 * RNG.standard_normal((5, 12))).astype(np.float64)
    text = _text((5, 12), "f64", "multiply", "1.0", 1, False, window=15)
    assert _scan_of(text) is not None
    run_both(text, [x], rtol=0.0)


@pytest.mark.parametrize("shape,dim", [((0, 5), 1), ((4, 0), 0), ((2, 0, 3), 2)])
def test_empty_dims(shape, dim):
    x = np.zeros(shape, np.float32)
    run_both(_text(shape, "f32", "add", "0.0", dim, False), [x])


def test_non_identity_init_and_sliding_window_use_the_general_emitter():
    x = RNG.integers(-50, 50, (3, 10)).astype(np.int32)
    text = _text((3, 10), "i32", "add", 1, 1, False)  # 1 + 1 != 1: padding counts
    assert _scan_of(text) is None
    run_both(text, [x])
    sliding = _text((3, 10), "i32", "add", 0, 1, False, window=4)
    assert _scan_of(sliding) is None
    run_both(sliding, [x])


def test_jax_cumsum_text_is_recognised_and_linear():
    """A 1x65536 cumsum: the O(n^2) window emitter would take ~2 G adds (seconds);
    the scan must run in well under a second even on a loaded machine."""
    import time

    from tests.backend_cpu.conftest import compile_cpu

    n = 1 << 16
    text = _text((1, n), "f32", "add", "0.0", 1, False)
    exe = compile_cpu(text)
    x = np.ones((1, n), np.float32)
    t0 = time.perf_counter()
    (y,) = exe(x)
    assert time.perf_counter() - t0 < 0.5
    np.testing.assert_array_equal(np.asarray(y)[0, [0, 9, n - 1]], [1.0, 10.0, float(n)])
