"""``jnp.linalg`` and ``jax.scipy.linalg`` through ``oxla_frontend_jax.jit`` on the
interpreter and the cpu backend against ``jax.jit`` (XLA:CPU with jaxlib's LAPACK).

f32/complex64 here, f64 in the x64 subprocess (``test_x64.py``); batched
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
# the x64 run adds f64 (complex128 is covered target by target in test_targets.py)
DTYPES = ["float64"] if X64 else ["float32", "complex64"]
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


def _both(f, backend, argsets):
    """``f`` on each argument set (one per batch shape), compiled as one program (one
    compile for all of them): ``(oxla results, jax.jit results)``, one entry a set."""
    sizes = [len(a) for a in argsets]

    def g(*flat):
        out, i = [], 0
        for n in sizes:
            out.append(f(*flat[i:i + n]))
            i += n
        return tuple(out)

    flat = [x for a in argsets for x in a]
    got = jax.tree_util.tree_map(np.asarray, oj.jit(g, backend=backend)(*flat))
    ref = jax.tree_util.tree_map(np.asarray, jax.jit(g)(*flat))
    return got, ref


def _tuple(x):
    return x if isinstance(x, tuple | list) else (x,)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", sorted(DIRECT))
def test_direct(name, dt, backend):
    """Each function unbatched and batched (one matrix only where jax's takes one)."""
    f, names = DIRECT[name]
    batches = [()] if name in ("lstsq", "lu") else BATCHES
    xs = [_inputs(dt, b) for b in batches]
    gots, refs = _both(f, backend, [[x[n] for n in names] for x in xs])
    for x, got, ref in zip(xs, gots, refs):
        assert len(_tuple(got)) == len(_tuple(ref))
        for g, r in zip(_tuple(got), _tuple(ref)):
            _close(g, r, dt)
        if name == "cholesky-nonpd":
            rows, cols = np.tril_indices(4)
            assert np.isnan(got[..., rows, cols]).all()  # jax: a NaN factor
        if name == "det-singular":
            assert np.abs(got).max() < 1e-3 * np.abs(np.linalg.det(x["a"])).max()


def _eye(n, dt, batch):
    return np.broadcast_to(np.eye(n, dtype=dt), (*batch, n, n))


@pytest.mark.parametrize("dt", DTYPES)
def test_qr_invariants(dt, backend):
    xs = [_inputs(dt, b)["rect"] for b in BATCHES]
    f = lambda x: (jnp.linalg.qr(x, mode="reduced"), jnp.linalg.qr(x, mode="complete"))  # noqa: E731
    gots, refs = _both(f, backend, [[a] for a in xs])
    for a, b, got, ref in zip(xs, BATCHES, gots, refs):
        for (q, r), (rq, rr) in zip(got, ref):
            assert q.shape == rq.shape and r.shape == rr.shape
            _close(q @ r, a, dt)
            _close(_ct(q) @ q, _eye(q.shape[-1], dt, b), dt)
            assert np.allclose(np.tril(r, -1), 0)


@pytest.mark.parametrize("dt", DTYPES)
def test_qr_pivoting(dt, backend):
    """One matrix: jax.scipy.linalg.qr(pivoting=True) takes no batch."""
    a = _inputs(dt, ())["rect"]
    (got,), (ref,) = _both(lambda x: jsl.qr(x, pivoting=True), backend, [[a]])
    q, r, p = got
    np.testing.assert_array_equal(p, ref[2])
    _close(q @ r, a[:, p], dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_svd_invariants(dt, backend):
    xs = [_inputs(dt, b)["rect"] for b in BATCHES]
    f = lambda x: (jnp.linalg.svd(x, full_matrices=False),  # noqa: E731
                   jnp.linalg.svd(x, full_matrices=True))
    gots, refs = _both(f, backend, [[a] for a in xs])
    for a, b, got, ref in zip(xs, BATCHES, gots, refs):
        for (u, s, vh), (_, rs, _) in zip(got, ref):
            _close(s, rs, dt)
            k = s.shape[-1]
            _close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, dt)
            _close(_ct(u) @ u, _eye(u.shape[-1], dt, b), dt)
            _close(vh @ _ct(vh), _eye(vh.shape[-2], dt, b), dt)
            assert np.all(np.diff(s, axis=-1) <= 0)


@pytest.mark.parametrize("dt", DTYPES)
def test_eigh_invariants(dt, backend):
    """``a`` is not Hermitian: jax symmetrizes it first; ``spd`` is."""
    xs = [_inputs(dt, b) for b in BATCHES]
    f = lambda s, a: (jnp.linalg.eigh(s), jnp.linalg.eigh(a))  # noqa: E731
    gots, refs = _both(f, backend, [[x["spd"], x["a"]] for x in xs])
    for x, b, got, ref in zip(xs, BATCHES, gots, refs):
        for h, (w, v), (rw, _) in zip((x["spd"], x["a"]), got, ref):
            _close(w, rw, dt)
            _close((v * w[..., None, :]) @ _ct(v), (h + _ct(h)) / 2, dt)
            _close(_ct(v) @ v, _eye(4, dt, b), dt)
            assert np.all(np.diff(w, axis=-1) >= 0)


@pytest.mark.parametrize("dt", DTYPES)
def test_eig_invariants(dt, backend):
    xs = [_inputs(dt, b)["a"] for b in BATCHES]
    f = lambda a: (jnp.linalg.eig(a), jnp.linalg.eigvals(a))  # noqa: E731
    gots, refs = _both(f, backend, [[a] for a in xs])
    key = lambda z: np.sort_complex(np.round(z, 3))  # noqa: E731
    for a, got, ref in zip(xs, gots, refs):
        (w, v), wl = got
        rw = ref[0][0]
        assert w.dtype == rw.dtype and v.dtype == rw.dtype
        _close(key(w), key(rw), dt, tol=_tol(dt) * 10)
        _close(key(wl), key(rw), dt, tol=_tol(dt) * 10)
        rec = (v * w[..., None, :]) @ np.linalg.inv(v)
        _close(rec, a.astype(rec.dtype), dt, tol=2e-3 if _tol(dt) > 1e-6 else 1e-8)


@pytest.mark.parametrize("dt", DTYPES)
def test_schur_and_hessenberg_invariants(dt, backend):
    """One matrix: jax.scipy.linalg.schur/hessenberg take no batch."""
    a = _inputs(dt, ())["a"]
    f = lambda x: (jsl.schur(x), jsl.hessenberg(x, calc_q=True))  # noqa: E731
    (((t, z), (h, q)),), _ = _both(f, backend, [[a]])
    _close(z @ t @ _ct(z), a, dt)
    _close(_ct(z) @ z, np.eye(4, dtype=dt), dt)
    assert np.allclose(np.tril(t, -2), 0)  # quasi-triangular (2x2 blocks for real)
    _close(q @ h @ _ct(q), a, dt)
    _close(_ct(q) @ q, np.eye(4, dtype=dt), dt)
    assert np.allclose(np.tril(h, -2), 0)


def test_non_finite_eig_input_is_nan_as_in_jax(backend):
    a = np.eye(3, dtype=np.float32)
    a[0, 1] = np.nan
    ref = np.asarray(jax.jit(jnp.linalg.eigvals)(a))
    got = np.asarray(oj.jit(jnp.linalg.eigvals, backend=backend)(a))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
