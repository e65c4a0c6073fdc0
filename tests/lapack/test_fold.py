"""The cholesky fold (``oxla_lapack.fold``): on the cpu backend, the Hermitian part, the
NaN-on-failure select and the triangle mask JAX's lowering puts around ``potrf`` run in
the LAPACK call, one kernel, with jax's results (``jax.jit`` is the oracle; the
interpreter, which keeps the ops unfolded, too).

Each case mixes positive-definite, non-Hermitian (only the Hermitian part is factored)
and non-positive-definite matrices (NaN in the factor's triangle, zeros in the other),
batched and unbatched, both triangles, on the compiled handlers and on the Python
kernels (``OXLA_LAPACK_NATIVE=0``, a subprocess: the choice is made once per process).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import oxla_frontend_jax as oj
import pytest
from oxla_lapack.fold import FLAGS

import oxla
from oxla.ir import parse_module

X64 = bool(jax.config.jax_enable_x64)
DTYPES = ["float64", "complex128"] if X64 else ["float32", "complex64"]
SHAPES = [(1, 1), (5, 5), (3, 7, 7), (2, 2, 33, 33), (2, 0, 0)]


def _lower(x):
    return jnp.linalg.cholesky(x)


def _upper(x):
    return jax.scipy.linalg.cholesky(x, lower=False)


def _matrices(shape, dt, seed=0):
    """Hermitian positive definite plus a non-Hermitian part; the first matrix of a
    batch negated (not positive definite)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    x = x.astype(dt)
    n = shape[-1]
    a = x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n, dtype=dt) + 0.3 * x
    if len(shape) > 2 and n:
        a[(0,) * (len(shape) - 2)] *= -1
    return a.astype(dt)


def _tol(dt) -> float:
    return 1e-4 if np.dtype(dt) in (np.float32, np.complex64) else 1e-10


def _assert_like_jax(got, ref, dt):
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape and got.dtype == ref.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))  # NaN exactly where jax's
    np.testing.assert_array_equal(got == 0, ref == 0)  # the zeroed triangle
    scale = max(1.0, float(np.nanmax(np.abs(ref)))) if np.isfinite(ref).any() else 1.0
    np.testing.assert_allclose(got, ref, rtol=0, atol=_tol(dt) * scale, equal_nan=True)


def _kernels(exe) -> list[str]:
    return [op.name for op in parse_module(exe.module_text).main.regions[0].block.ops
            if op.name not in ("func.return", "stablehlo.constant")]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("f", [_lower, _upper], ids=["lower", "upper"])
def test_cholesky_is_one_call_with_jax_results(f, shape, dt):
    a = _matrices(shape, dt)
    of = oj.jit(f, backend="cpu")
    _assert_like_jax(of(a), jax.jit(f)(a), dt)
    if shape[-1] == 0:  # empty matrices: canonicalize's empty constants, nothing to fold
        return
    _assert_folded(of.entries()[0].executable, f, shape)


def _assert_folded(exe, f, shape):
    """One potrf call with every flag and no select: nothing else (lower), or jax's
    transpose of the factor (upper: ``jax.scipy.linalg.cholesky`` transposes the lower
    factor); for a 1x1 matrix canonicalize has already removed the Hermitian part."""
    kernels = _kernels(exe)
    assert kernels.count("stablehlo.custom_call") == 1, exe.module_text
    assert "stablehlo.select" not in kernels, exe.module_text
    if f is _lower:
        assert kernels == ["stablehlo.custom_call"], exe.module_text
    flags = FLAGS if f is _lower and shape[-1] > 1 else FLAGS[1:]  # jsl's: no symmetrizing
    assert all(f"{flag} = true" in exe.module_text for flag in flags), exe.module_text


@pytest.mark.parametrize("dt", DTYPES)
def test_interpreter_keeps_the_ops_and_agrees(dt):
    a = _matrices((3, 6, 6), dt, seed=1)
    _assert_like_jax(oj.jit(_lower, backend="interpreter")(a), jax.jit(_lower)(a), dt)


def test_python_kernels_apply_the_flags():
    """The same folded programs with ``OXLA_LAPACK_NATIVE=0``: the cpu backend calls
    ``oxla_lapack.kernels`` (Python) for potrf."""
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import jax, numpy as np, oxla_frontend_jax as oj
        from oxla_lapack import native
        from test_fold import DTYPES, SHAPES, _assert_folded, _assert_like_jax, _lower, _matrices, _upper
        assert not native.available()
        for dt in DTYPES:
            for shape in SHAPES:
                for f in (_lower, _upper):
                    a = _matrices(shape, dt, seed=2)
                    of = oj.jit(f, backend="cpu")
                    _assert_like_jax(of(a), jax.jit(f)(a), dt)
                    if shape[-1]:
                        _assert_folded(of.entries()[0].executable, f, shape)
        print("ok")
    """)
    env = dict(os.environ, OXLA_LAPACK_NATIVE="0")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=600, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.split() == ["ok"]


_POTRF = """
func.func @main(%a: tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>) {
  %f:2 = stablehlo.custom_call @lapack_spotrf_ffi(%a) {backend_config = "",
      mhlo.backend_config = {uplo = 76 : ui8}} : (tensor<2x4x4xf32>)
      -> (tensor<2x4x4xf32>, tensor<2xi32>)
  %r = stablehlo.iota dim = 1 : tensor<2x4x4xi32>
  %c = stablehlo.iota dim = 2 : tensor<2x4x4xi32>
  %m = stablehlo.compare DIR, %r, %c, SIGNED : (tensor<2x4x4xi32>, tensor<2x4x4xi32>)
      -> tensor<2x4x4xi1>
  %z = stablehlo.constant dense<0.0> : tensor<2x4x4xf32>
  %s = stablehlo.select %m, %f#0, %z : tensor<2x4x4xi1>, tensor<2x4x4xf32>
  return %s, SECOND : tensor<2x4x4xf32>, tensor<2x4x4xf32>
}
"""


@pytest.mark.parametrize("direction, second", [("GT", "%z"), ("GE", "%f#0")],
                         ids=["strict-mask", "factor-read-twice"])
def test_other_masks_and_shared_factors_are_not_folded(direction, second):
    """A strict-triangle mask, or a factor that is also returned as it is, stays a
    select (folding would change what the other reader sees); results are the
    interpreter's."""
    text = _POTRF.replace("DIR", direction).replace("SECOND", second)
    a = _matrices((2, 4, 4), np.float32, seed=3)
    exe = oxla.compile(parse_module(text), backend="cpu")
    assert not any(flag in exe.module_text for flag in FLAGS)
    assert "stablehlo.select" in exe.module_text
    ref = oxla.compile(parse_module(text), backend="interpreter")(a)
    for g, r in zip(exe(a), ref, strict=True):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(r))
        np.testing.assert_allclose(g, r, rtol=0, atol=1e-5, equal_nan=True)


def test_compile_cache_keys_cover_the_plugin_patterns(monkeypatch, tmp_path):
    """The same module compiled with the fold turned off (``$OXLA_DISABLE_OVERRIDES``)
    is another cache entry: the cpu cache key hashes the plugin patterns that run, so
    an entry compiled with (or without) a plugin's rewrite is never reused without it."""
    monkeypatch.setenv("OXLA_CACHE_DIR", str(tmp_path))
    a = _matrices((2, 5, 5), DTYPES[0], seed=4)
    folded = oj.jit(_lower, backend="cpu")
    folded(a)
    assert FLAGS[0] in folded.entries()[0].executable.module_text
    monkeypatch.setenv("OXLA_DISABLE_OVERRIDES", "lapack-fold-potrf")
    plain = oj.jit(_lower, backend="cpu")
    _assert_like_jax(plain(a), jax.jit(_lower)(a), DTYPES[0])
    text = plain.entries()[0].executable.module_text
    assert not any(flag in text for flag in FLAGS) and "stablehlo.select" in text
