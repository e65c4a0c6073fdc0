"""Matrix-vector dots (``M`` or ``N`` 1) run oxla's GEMV loops
(:mod:`oxla_backend_cpu.gemv`), both forms (matrix rows contiguous: ``dot``; outputs
contiguous: ``axpy``), every layout of the matrix, odd sizes (row tails of the 8-row
blocks, partial 1024-output blocks), f32 and f64, serial and on threads, against the
interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.ir import parse_module
from oxla.lowering import DotKernel, fuse
from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(21)


def _t(shape, et) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{et}>"


def _dot(a, b, dims, out, et) -> str:
    return f"""func.func @main(%a: {_t(a, et)}, %b: {_t(b, et)}) -> {_t(out, et)} {{
  %0 = stablehlo.dot_general %a, %b, contracting_dims = {dims}
    : ({_t(a, et)}, {_t(b, et)}) -> {_t(out, et)}
  return %0 : {_t(out, et)}
}}"""


def _cases(r: int, k: int):
    """(lhs shape, rhs shape, contracting dims, result shape, expected form)."""
    return [
        ((r, k), (k,), "[1] x [0]", (r,), "dot"),  # A[M,K] x[K]
        ((k, r), (k,), "[0] x [0]", (r,), "axpy"),  # A stored [K,M]
        ((k,), (k, r), "[0] x [0]", (r,), "axpy"),  # x[K] B[K,N]
        ((k,), (r, k), "[0] x [1]", (r,), "dot"),  # B stored [N,K]
        ((1, k), (k, r), "[1] x [0]", (1, r), "axpy"),  # a 1-row GEMM
        ((r, k), (k, 1), "[1] x [0]", (r, 1), "dot"),  # a 1-column GEMM
    ]


def _kernel(text: str):
    from oxla_backend_cpu.policy import CPUPolicy

    (k,) = [k for k in fuse(parse_module(text, "test.mlir"), CPUPolicy()).kernels
            if isinstance(k, DotKernel)]
    return k


@pytest.mark.parametrize("r,k", [(37, 129), (1031, 301), (3, 2000)])
@pytest.mark.parametrize("et", ["f32", "f64"])
def test_gemv_layouts_match_the_interpreter(r, k, et):
    from oxla_backend_cpu.gemv import gemv_form, gemv_parallel

    dt = np.float32 if et == "f32" else np.float64
    for a, b, dims, out, form in _cases(r, k):
        text = _dot(a, b, dims, out, et)
        kern = _kernel(text)
        assert kern.strategy == "gemv" and gemv_form(kern)[0] == form
        if r * k > 200_000:
            assert gemv_parallel(kern) is not None  # the threaded path is exercised
        x, y = RNG.standard_normal(a).astype(dt), RNG.standard_normal(b).astype(dt)
        run_both(text, [x, y], rtol=1e-4 if et == "f32" else 1e-12, atol=1e-4)


def test_axpy_form_sums_in_index_order():
    """Outputs contiguous: each output is summed over k in order, so the f32 result
    equals a sequential f32 accumulation exactly (cancelling terms included)."""
    r, k = 1100, 64
    w = (RNG.standard_normal((k, r)) * 10.0 ** RNG.integers(-3, 4, (k, r))).astype(np.float32)
    v = RNG.standard_normal(k).astype(np.float32)
    exe, (got,) = run_both(_dot((k, r), (k,), "[0] x [0]", (r,), "f32"), [w, v],
                           rtol=1e-4, atol=1e-3)
    want = np.zeros(r, np.float32)
    for i in range(k):
        want = want + w[i] * v[i]
    np.testing.assert_array_equal(np.asarray(got), want)


def test_dot_product_and_nonfinite():
    """M = N = 1 (a dot product) and an infinity in the matrix propagate as in the
    interpreter (inf, and NaN from inf * 0)."""
    k = 777
    a, b = RNG.standard_normal((1, k)).astype(np.float32), \
        RNG.standard_normal((k, 1)).astype(np.float32)
    run_both(_dot((1, k), (k, 1), "[1] x [0]", (1, 1), "f32"), [a, b], rtol=1e-4)
    m = RNG.standard_normal((20, k)).astype(np.float32)
    x = RNG.standard_normal(k).astype(np.float32)
    m[3, 5], m[11, 7], x[7] = np.inf, np.inf, 0.0
    run_both(_dot((20, k), (k,), "[1] x [0]", (20,), "f32"), [m, x], rtol=1e-4, atol=1e-4)
