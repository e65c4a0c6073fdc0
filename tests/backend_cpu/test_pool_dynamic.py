"""The worker pool's dynamic chunks (oxla_backend_cpu.pool): many parallel loops and
GEMMs in a row, more threads than cores (late workers), and calls from several Python
threads at once, each result checked against numpy."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu

RNG = np.random.default_rng(9)
T = "tensor<256x512xf32>"
# a chain of parallel loops (256 rows of 512: several chunks each) and GEMMs
PROGRAM = f"""func.func @main(%x: {T}, %w: tensor<512x512xf32>) -> {T} {{
  %0 = stablehlo.exponential %x : {T}
  %1 = stablehlo.dot_general %0, %w, contracting_dims = [1] x [1] : ({T}, tensor<512x512xf32>) -> {T}
  %2 = stablehlo.add %1, %x : {T}
  %3 = stablehlo.tanh %2 : {T}
  %4 = stablehlo.dot_general %3, %w, contracting_dims = [1] x [0] : ({T}, tensor<512x512xf32>) -> {T}
  %5 = stablehlo.multiply %4, %3 : {T}
  return %5 : {T}
}}"""


def _want(x, w):
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    h = np.tanh(np.exp(x64) @ w64.T + x64)
    return (h @ w64) * h


@pytest.mark.parametrize("threads", ["1", "2", "5"])
def test_dynamic_chunks_match_numpy(monkeypatch, threads):
    monkeypatch.setenv("OXLA_NUM_THREADS", threads)
    exe = compile_cpu(PROGRAM, cache=False)
    x = (RNG.standard_normal((256, 512)) * 0.1).astype(np.float32)
    w = (RNG.standard_normal((512, 512)) * 0.05).astype(np.float32)
    want = _want(x, w)
    first = exe(x, w)[0]
    np.testing.assert_allclose(first, want, rtol=2e-4, atol=2e-4)
    for _ in range(30):  # chunks land on different threads each time: same bits
        np.testing.assert_array_equal(exe(x, w)[0], first)
    errors = []

    def work():
        for _ in range(10):
            if not np.array_equal(exe(x, w)[0], first):
                errors.append(1)

    pool = [threading.Thread(target=work) for _ in range(3)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert not errors


@pytest.mark.parametrize("threads", ["1", "2", "3", "8"])
@pytest.mark.parametrize("m,n,k", [(1000, 300, 256), (96, 2000, 384)])
def test_gemm_blocks_chosen_at_run_time(monkeypatch, threads, m, n, k):
    """Row blocks (m >= n) and column blocks (n > m), their number set by the thread
    count when the executable loads; the last block is shorter."""
    monkeypatch.setenv("OXLA_NUM_THREADS", threads)
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((n, k)).astype(np.float32)
    text = f"""func.func @main(%a: tensor<{m}x{k}xf32>, %b: tensor<{n}x{k}xf32>) -> tensor<{m}x{n}xf32> {{
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [1] : (tensor<{m}x{k}xf32>, tensor<{n}x{k}xf32>) -> tensor<{m}x{n}xf32>
  return %0 : tensor<{m}x{n}xf32>
}}"""
    exe = compile_cpu(text, cache=False)
    want = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(exe(a, b)[0], want, rtol=1e-4, atol=1e-3 * np.sqrt(k))
