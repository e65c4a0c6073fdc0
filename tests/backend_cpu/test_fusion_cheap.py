"""Broadcasts of splat constants are recomputed by their readers, never stored
(oxla.lowering.fusion), with results checked against the interpreter."""

from __future__ import annotations

import numpy as np

from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(3)


def test_splat_broadcast_read_by_many_kernels_is_not_materialized():
    t = "tensor<16x32xf32>"
    users = "\n".join(f"  %r{i} = stablehlo.multiply %x{i}, %b : {t}" for i in range(6))
    args = ", ".join(f"%x{i}: {t}" for i in range(6))
    rets = ", ".join(f"%r{i}" for i in range(6))
    text = f"""func.func @main({args}) -> ({", ".join([t] * 6)}) {{
  %c = stablehlo.constant dense<1.5> : tensor<f32>
  %b = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> {t}
{users}
  return {rets} : {", ".join([t] * 6)}
}}"""
    xs = [RNG.standard_normal((16, 32)).astype(np.float32) for _ in range(6)]
    exe, got = run_both(text, xs)
    assert exe.stats["kernel_count"] == 6  # one loop per result, none for %b
    assert exe.stats["temp_bytes"] == 0
    for g, x in zip(got, xs):
        np.testing.assert_array_equal(g, x * np.float32(1.5))
