"""``jnp.linalg`` and ``jax.scipy.linalg`` through ``oxla_frontend_jax.jit`` on the
interpreter and the cpu backend against ``jax.jit`` (XLA:CPU with jaxlib's LAPACK).

f32/complex64 here, f64/complex128 in the x64 subprocess (``test_x64.py``); batched
``[2, 4, 4]`` and unbatched ``[4, 4]``; singular and non-positive-definite inputs give
jax's results (NaN factors, zero determinants, ``-inf`` log-determinants). Where a
result is unique only up to sign, phase or order (qr, svd, eig, eigh, schur,
hessenberg), invariants are checked instead: reconstruction of the input,
orthogonality, sorted eigenvalues/singular values against jax's.

Tolerance, relative to the largest magnitude of the expected value: 2e-4 (f32,
complex64), 1e-9 (f64, complex128); eig's ``V diag(w) V^-1`` reconstruction 2e-3 /
1e-8 (non-normal matrices amplify rounding).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import oxla_frontend_jax as oj
import pytest

X64 = bool(jax.config.jax_enable_x64)
DTYPES = ["float64", "complex128"] if X64 else ["float32", "complex64"]
BATCHES = [(), (2,)]


def _tol(dt) -> float:
    return 1e-9 if np.dtype(dt) in (np.float64, np.complex128) else 2e-4


def _rand(shape, dt, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


def _ct(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _inputs(dt, batch):
    a = _rand((*batch, 4, 4), dt) + 3 * np.eye(4, dtype=dt)
    spd = a @ _ct(a) + np.eye(4, dtype=dt)
    sing = a.copy()
    sing[..., 3, :] = 2 * sing[..., 1, :]
    nonpd = spd.copy()
    nonpd[..., 1, 1] = -40
    return {"a": a, "spd": spd, "sing": sing, "nonpd": nonpd,
            "b": _rand((*batch, 4, 2), dt, 1), "rect": _rand((*batch, 5, 3), dt, 2)}


def _close(got, ref, dt, scale=None, tol=None):
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.dtype, ref.dtype)
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    if scale is None:
        scale = max(1.0, float(np.abs(ref[finite]).max())) if finite.any() else 1.0
    np.testing.assert_allclose(got[finite], ref[finite], rtol=0,
                               atol=(tol or _tol(dt)) * scale)


# name -> (function, input names): results unique, compared directly with jax.jit
DIRECT = {
    "solve": (jnp.linalg.solve, ("a", "b")),
    "inv": (jnp.linalg.inv, ("a",)),
    "det": (jnp.linalg.det, ("a",)),
    "det-singular": (jnp.linalg.det, ("sing",)),
    "slogdet": (lambda x: tuple(jnp.linalg.slogdet(x)), ("a",)),
    "slogdet-singular": (lambda x: tuple(jnp.linalg.slogdet(x)), ("sing",)),
    "cholesky": (jnp.linalg.cholesky, ("spd",)),
    "cholesky-nonpd": (jnp.linalg.cholesky, ("nonpd",)),
    "cho_solve": (lambda s, b: jsl.cho_solve(jsl.cho_factor(s), b), ("spd", "b")),
    "pinv": (jnp.linalg.pinv, ("rect",)),
    "lstsq": (lambda r, b: jnp.linalg.lstsq(r, b[..., :1].repeat(5, -2)[..., :5, :])[0],
              ("rect", "b")),
    "expm": (jsl.expm, ("a",)),
    "solve_triangular": (lambda a, b: jsl.solve_triangular(a, b, lower=True), ("a", "b")),
    "solve_triangular-T": (lambda a, b: jsl.solve_triangular(a, b, trans="C"),
                           ("a", "b")),
    "lu": (lambda a: tuple(jsl.lu(a)), ("a",)),
    "lax.lu": (lambda a: tuple(jax.lax.linalg.lu(a)), ("a",)),
    "lax.lu-singular": (lambda a: tuple(jax.lax.linalg.lu(a)), ("sing",)),
    "lu_factor-singular": (lambda a: tuple(jsl.lu_factor(a)), ("sing",)),
    "eigvalsh": (jnp.linalg.eigvalsh, ("spd",)),
    "svdvals": (lambda a: jnp.linalg.svd(a, compute_uv=False), ("rect",)),
    "matrix_rank": (jnp.linalg.matrix_rank, ("sing",)),
    "cond": (jnp.linalg.cond, ("a",)),
}


def _run(f, args, backend):
    return jax.jit(f)(*args), oj.jit(f, backend=backend)(*args)


@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: f"b{len(b)}")
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", sorted(DIRECT))
def test_direct(name, dt, batch, backend):
    f, names = DIRECT[name]
    if name in ("lstsq", "lu") and batch:
        pytest.skip("jax's function takes one matrix")
    if name == "matrix_rank" and dt.startswith("complex"):
        pytest.skip("covered by the real dtype")
    x = _inputs(dt, batch)
    ref, got = _run(f, [x[n] for n in names], backend)
    refs = ref if isinstance(ref, tuple) else (ref,)
    gots = got if isinstance(got, tuple) else (got,)
    assert len(gots) == len(refs)
    for g, r in zip(gots, refs):
        _close(g, r, dt)
    if name == "cholesky-nonpd":
        rows, cols = np.tril_indices(4)
        assert np.isnan(np.asarray(got)[..., rows, cols]).all()  # jax: a NaN factor
    if name == "det-singular":
        assert np.abs(np.asarray(got)).max() < 1e-3 * np.abs(np.asarray(jnp.linalg.det(
            x["a"]))).max()


@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: f"b{len(b)}")
@pytest.mark.parametrize("dt", DTYPES)
def test_qr_invariants(dt, batch, backend):
    a = _inputs(dt, batch)["rect"]
    for mode in ("reduced", "complete"):
        f = lambda x, mode=mode: jnp.linalg.qr(x, mode=mode)  # noqa: E731
        q, r = (np.asarray(v) for v in oj.jit(f, backend=backend)(a))
        rq, rr = jax.jit(f)(a)
        assert q.shape == rq.shape and r.shape == rr.shape
        _close(q @ r, a, dt)
        k = q.shape[-1]
        _close(_ct(q) @ q, np.broadcast_to(np.eye(k, dtype=dt), (*batch, k, k)), dt)
        assert np.allclose(np.tril(r, -1), 0)


@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: f"b{len(b)}")
@pytest.mark.parametrize("dt", DTYPES)
def test_qr_pivoting(dt, batch, backend):
    if batch:
        pytest.skip("jax.scipy.linalg.qr(pivoting=True) takes one matrix")
    a = _inputs(dt, batch)["rect"]
    f = lambda x: jsl.qr(x, pivoting=True)  # noqa: E731
    q, r, p = (np.asarray(v) for v in oj.jit(f, backend=backend)(a))
    np.testing.assert_array_equal(p, np.asarray(jax.jit(f)(a)[2]))
    _close(q @ r, a[:, p], dt)


@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: f"b{len(b)}")
@pytest.mark.parametrize("dt", DTYPES)
def test_svd_invariants(dt, batch, backend):
    a = _inputs(dt, batch)["rect"]
    for full in (False, True):
        f = lambda x, full=full: jnp.linalg.svd(x, full_matrices=full)  # noqa: E731
        u, s, vh = (np.asarray(v) for v in oj.jit(f, backend=backend)(a))
        _close(s, np.asarray(jax.jit(f)(a)[1]), dt)
        k = s.shape[-1]
        _close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, dt)
        _close(_ct(u) @ u, np.broadcast_to(np.eye(u.shape[-1], dtype=dt), _ct(u).shape[:-1]
                                           + (u.shape[-1],)), dt)
        assert np.all(np.diff(s, axis=-1) <= 0)


@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: f"b{len(b)}")
@pytest.mark.parametrize("dt", DTYPES)
def test_eigh_invariants(dt, batch, backend):
    x = _inputs(dt, batch)
    for name in ("spd", "a"):  # "a" is not Hermitian: jax symmetrizes it first
        h = x[name]
        w, v = (np.asarray(t) for t in oj.jit(jnp.linalg.eigh, backend=backend)(h))
        rw = np.asarray(jax.jit(jnp.linalg.eigh)(h)[0])
        _close(w, rw, dt)
        _close((v * w[..., None, :]) @ _ct(v), (h + _ct(h)) / 2, dt)
        assert np.all(np.diff(w, axis=-1) >= 0)


@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: f"b{len(b)}")
@pytest.mark.parametrize("dt", DTYPES)
def test_eig_invariants(dt, batch, backend):
    a = _inputs(dt, batch)["a"]
    w, v = (np.asarray(t) for t in oj.jit(jnp.linalg.eig, backend=backend)(a))
    rw = np.asarray(jax.jit(jnp.linalg.eig)(a)[0])
    assert w.dtype == rw.dtype and v.dtype == rw.dtype
    key = lambda z: np.sort_complex(np.round(z, 3))  # noqa: E731
    _close(key(w), key(rw), dt, tol=_tol(dt) * 10)
    rec = (v * w[..., None, :]) @ np.linalg.inv(v)
    _close(rec, a.astype(rec.dtype), dt, tol=2e-3 if _tol(dt) > 1e-6 else 1e-8)
    wl = np.asarray(oj.jit(jnp.linalg.eigvals, backend=backend)(a))
    _close(key(wl), key(rw), dt, tol=_tol(dt) * 10)


@pytest.mark.parametrize("dt", DTYPES)
def test_schur_and_hessenberg_invariants(dt, backend):
    a = _inputs(dt, ())["a"]
    t, z = (np.asarray(v) for v in oj.jit(jsl.schur, backend=backend)(a))
    _close(z @ t @ _ct(z), a, dt)
    _close(_ct(z) @ z, np.eye(4, dtype=dt), dt)
    assert np.allclose(np.tril(t, -2), 0)  # quasi-triangular (2x2 blocks for real)
    h, q = (np.asarray(v) for v in oj.jit(lambda x: jsl.hessenberg(x, calc_q=True),
                                          backend=backend)(a))
    _close(q @ h @ _ct(q), a, dt)
    assert np.allclose(np.tril(h, -2), 0)


def test_non_finite_eig_input_is_nan_as_in_jax(backend):
    a = np.eye(3, dtype=np.float32)
    a[0, 1] = np.nan
    ref = np.asarray(jax.jit(jnp.linalg.eigvals)(a))
    got = np.asarray(oj.jit(jnp.linalg.eigvals, backend=backend)(a))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
