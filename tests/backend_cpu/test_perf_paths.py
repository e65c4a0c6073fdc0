"""The fast paths of the cpu backend against numpy / the interpreter: GEMMs split into
row or column blocks on oxla's threads, vectorized and parallel reductions, the
vectorizable exp, memory-aware scheduling and in-place buffer reuse."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, run_both

RNG = np.random.default_rng(7)


def _dot_text(lhs, rhs, out, dims: str) -> str:
    t = lambda s: f"tensor<{'x'.join(map(str, s))}xf32>"  # noqa: E731
    return f"""func.func @main(%a: {t(lhs)}, %b: {t(rhs)}) -> {t(out)} {{
  %0 = stablehlo.dot_general %a, %b, {dims} : ({t(lhs)}, {t(rhs)}) -> {t(out)}
  return %0 : {t(out)}
}}"""


@pytest.mark.parametrize("m,n,k,trans_a,trans_b", [
    (512, 512, 256, False, False),   # row blocks
    (64, 1024, 1024, False, False),  # skinny: column blocks
    (64, 1024, 1024, True, True),    # column blocks, transposed operands
    (700, 300, 200, True, False),    # row blocks, uneven last block
    (33, 17, 5, False, True),        # one small call
])
def test_gemm_blocks_match_numpy(m, n, k, trans_a, trans_b):
    from oxla_backend_cpu.blas import FLOPS_PER_THREAD, row_blocks

    a = RNG.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    b = RNG.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    dims = f"contracting_dims = [{0 if trans_a else 1}] x [{1 if trans_b else 0}]"
    exe = compile_cpu(_dot_text(a.shape, b.shape, (m, n), dims), cache=False)
    want = (a.T if trans_a else a).astype(np.float64) @ (b.T if trans_b else b)
    np.testing.assert_allclose(exe(a, b)[0], want, rtol=1e-4, atol=1e-3 * np.sqrt(k))
    if 2 * m * n * k >= 4 * FLOPS_PER_THREAD:
        assert row_blocks(1, max(m, n), 2.0 * m * n * k) > 1


def test_batched_gemm_matches_numpy():
    a = RNG.standard_normal((6, 96, 64)).astype(np.float32)
    b = RNG.standard_normal((6, 64, 80)).astype(np.float32)
    text = _dot_text(a.shape, b.shape, (6, 96, 80),
                     "batching_dims = [0] x [0], contracting_dims = [2] x [1]")
    exe = compile_cpu(text, cache=False)
    np.testing.assert_allclose(exe(a, b)[0], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
    run_both(text, [a, b], rtol=1e-4, atol=1e-3)
