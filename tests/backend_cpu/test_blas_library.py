"""The BLAS library behind ``dot_general`` and large GEMMs split into row or column
blocks (one or two per thread), every operand layout, against numpy in float64."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from oxla_backend_cpu import blas

import oxla


def _library_of(address: int) -> str:
    info = blas._DlInfo()
    assert ctypes.CDLL(None).dladdr(ctypes.c_void_p(address), ctypes.byref(info))
    return info.dli_fname.decode()


def test_wheel_library_is_used_when_installed():
    wheel = pytest.importorskip("scipy_openblas32")
    syms = blas.blas_symbols()
    for name in ("oxla_sgemm", "oxla_dgemm", blas.THREADS_SYMBOL):
        assert _library_of(syms[name]).startswith(wheel.get_lib_dir()), name


def _dot(m: int, k: int, n: int, trans_lhs: bool, trans_rhs: bool, dtype: str) -> str:
    lhs = f"{k}x{m}" if trans_lhs else f"{m}x{k}"
    rhs = f"{n}x{k}" if trans_rhs else f"{k}x{n}"
    lc, rc = (0 if trans_lhs else 1), (1 if trans_rhs else 0)
    return f"""func.func @main(%a: tensor<{lhs}x{dtype}>, %b: tensor<{rhs}x{dtype}>)
    -> tensor<{m}x{n}x{dtype}> {{
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [{lc}] x [{rc}]
      : (tensor<{lhs}x{dtype}>, tensor<{rhs}x{dtype}>) -> tensor<{m}x{n}x{dtype}>
  return %0 : tensor<{m}x{n}x{dtype}>
}}"""


@pytest.mark.parametrize("trans_lhs,trans_rhs", [(False, False), (True, False),
                                                 (False, True), (True, True)])
@pytest.mark.parametrize("m,k,n", [(520, 256, 264), (96, 384, 1040)])
def test_blocked_gemm_matches_numpy(m, k, n, trans_lhs, trans_rhs):
    assert blas.row_blocks(1, max(m, n), 2.0 * m * k * n) > 1  # split into blocks
    rng = np.random.default_rng(m + n)
    a = rng.standard_normal((k, m) if trans_lhs else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if trans_rhs else (k, n)).astype(np.float32)
    exe = oxla.compile(_dot(m, k, n, trans_lhs, trans_rhs, "f32"), backend="cpu")
    (got,) = exe(a, b)
    want = (a.T if trans_lhs else a).astype(np.float64) @ (b.T if trans_rhs else b)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * np.sqrt(k))


def test_blocked_gemm_f64():
    """An f64 GEMM in blocks, called twice (the BLAS thread count it sets is put back
    after each call)."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((300, 400)), rng.standard_normal((400, 350))
    big = oxla.compile(_dot(300, 400, 350, False, False, "f64"), backend="cpu")
    np.testing.assert_allclose(big(a, b)[0], a @ b, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(big(a, b)[0], a @ b, rtol=1e-12, atol=1e-10)


def test_scipy_cython_blas_fallback(monkeypatch):
    """Without the wheel, scipy's ``cython_blas`` routines serve the same program."""
    monkeypatch.setattr(blas, "_openblas_wheel", lambda: {})
    blas.blas_symbols.cache_clear()
    try:
        assert "cython_blas" in _library_of(blas.blas_symbols()["oxla_sgemm"])
        rng = np.random.default_rng(5)
        a = rng.standard_normal((520, 256)).astype(np.float32)
        b = rng.standard_normal((256, 264)).astype(np.float32)
        exe = oxla.compile(_dot(520, 256, 264, False, False, "f32"), backend="cpu",
                           cache=False)
        np.testing.assert_allclose(exe(a, b)[0], a.astype(np.float64) @ b, rtol=1e-4,
                                   atol=0.02)
    finally:
        monkeypatch.undo()
        blas.blas_symbols.cache_clear()
        blas.blas_symbols()  # re-register the wheel's addresses for later compiles
