"""Sweep cases of ``jnp.linalg``, ``jax.scipy.linalg``, ``jax.scipy.special``,
``jax.scipy.signal`` and ``jax.scipy.stats``.

Decompositions unique only up to sign, phase or order (qr, svd, eigh, eig, schur) are
compared through invariants computed in the function: reconstructions, Gram
matrices, sorted eigen- and singular values. Functions that JAX lowers to jaxlib's
LAPACK custom calls on CPU run through oxla-lapack.
"""

from __future__ import annotations

import functools

import jax.numpy as jnp
import jax.scipy.linalg as jsl
import jax.scipy.signal as jss
import jax.scipy.special as sp
import jax.scipy.stats as st
import numpy as np
from sweep_common import Case, arr, ins, spd

LIN = "jax.numpy.linalg"
SLIN = "jax.scipy.linalg"
SPEC = "jax.scipy.special"
SIG = "jax.scipy.signal"
STAT = "jax.scipy.stats"
LA = ("f32", "f64", "c64", "c128")
LR = ("f32", "f64")


def _sq(rng: np.random.Generator, dt: str):
    """Well-conditioned square matrices, unbatched and batched."""
    def well(shape):
        return (arr(rng, shape, dt) + 3 * np.eye(shape[-1])).astype(arr(rng, (), dt).dtype)
    return [(well((4, 4)),), (well((2, 3, 3)),)]


def _sq_rhs(rng: np.random.Generator, dt: str):
    (a,), (b,) = _sq(rng, dt)
    return [(a, arr(rng, (4, 2), dt)), (b, arr(rng, (2, 3, 1), dt))]


def _spd(rng: np.random.Generator, dt: str):
    return [(spd(rng, (4, 4), dt),), (spd(rng, (2, 3, 3), dt),)]


def _spd_rhs(rng: np.random.Generator, dt: str):
    return [(spd(rng, (4, 4), dt), arr(rng, (4, 2), dt))]


def _tri_rhs(rng: np.random.Generator, dt: str):
    (a,), (b,) = _sq(rng, dt)
    return [(np.tril(a), arr(rng, (4, 3), dt)), (np.tril(b), arr(rng, (2, 3, 2), dt))]


def _singular(rng: np.random.Generator, dt: str, n: int = 3):
    a = arr(rng, (n, n), dt)
    a[-1] = a[0] + a[1]
    return [(a,)]


def _singular4(rng: np.random.Generator, dt: str):
    return _singular(rng, dt, 4)


def _herm(x):
    return jnp.conj(jnp.swapaxes(x, -1, -2))


def _qr_inv(x):
    q, r = jnp.linalg.qr(x)
    return q @ r, jnp.abs(r), jnp.abs(_herm(q) @ q)


def _svd_inv(x):
    u, s, vh = jnp.linalg.svd(x, full_matrices=False)
    return s, (u * s[..., None, :].astype(u.dtype)) @ vh, jnp.abs(_herm(u) @ u)


def _eigh_inv(x):
    w, v = jnp.linalg.eigh(x)
    return w, (v * w[..., None, :].astype(v.dtype)) @ _herm(v)


def _eig_inv(x):
    w, v = jnp.linalg.eig(x)
    order = jnp.lexsort((jnp.imag(w), jnp.real(w)), axis=-1)
    return (jnp.take_along_axis(w, order, axis=-1),
            jnp.abs(x.astype(v.dtype) @ v - v * w[..., None, :]))


@functools.partial(jnp.vectorize, signature="(n,n)->(n,n)")  # jsl.lu is unbatched
def _lu_inv(x):
    p, l_, u = jsl.lu(x)
    return p @ l_ @ u


@functools.partial(jnp.vectorize, signature="(n,n)->(n,n)")  # jsl.sqrtm is unbatched
def _sqrtm_sq(x):
    return jsl.sqrtm(x) @ jsl.sqrtm(x)


def _schur_inv(x):
    t, z = jsl.schur(x)
    return z @ t @ _herm(z), jnp.abs(jnp.tril(t, -2))


LINALG = [
    Case("jnp.linalg.solve", LIN, jnp.linalg.solve, _sq_rhs, LA, "linalg"),
    Case("jnp.linalg.inv", LIN, jnp.linalg.inv, _sq, LA, "linalg"),
    Case("jnp.linalg.det", LIN, jnp.linalg.det, _sq, LA, "linalg"),
    # 3x3: JAX's closed form (no LU); 4x4: LU with a zero pivot
    Case("jnp.linalg.det_singular_3x3", LIN, jnp.linalg.det, _singular, LR, "linalg"),
    Case("jnp.linalg.det_singular_lu", LIN, jnp.linalg.det, _singular4, LR, "linalg"),
    Case("jnp.linalg.slogdet", LIN, jnp.linalg.slogdet, _sq, LA, "linalg"),
    Case("jnp.linalg.cholesky", LIN, jnp.linalg.cholesky, _spd, LA, "linalg"),
    Case("jnp.linalg.qr", LIN, _qr_inv, ins((5, 3), (2, 4, 4)), LA, "linalg"),
    Case("jnp.linalg.svd", LIN, _svd_inv, ins((5, 3), (2, 3, 4)), LA, "linalg"),
    Case("jnp.linalg.svdvals", LIN, jnp.linalg.svdvals, ins((5, 3)), LA, "linalg"),
    Case("jnp.linalg.eigh", LIN, _eigh_inv, _spd, LA, "linalg"),
    Case("jnp.linalg.eigvalsh", LIN, jnp.linalg.eigvalsh, _spd, LA, "linalg"),
    Case("jnp.linalg.eig", LIN, _eig_inv, _sq, LA, "linalg"),
    Case("jnp.linalg.eigvals", LIN, lambda x: jnp.sort_complex(jnp.linalg.eigvals(x)), _sq,
         LA, "linalg"),
    Case("jnp.linalg.pinv", LIN, jnp.linalg.pinv, ins((5, 3)), LA, "linalg"),
    Case("jnp.linalg.lstsq", LIN, lambda a, b: jnp.linalg.lstsq(a, b)[0],
         ins([(6, 3), (6, 2)]), LR, "linalg"),
    Case("jnp.linalg.matrix_rank", LIN, jnp.linalg.matrix_rank, _singular, LR, "exact"),
    Case("jnp.linalg.norm_2", LIN, lambda x: jnp.linalg.norm(x, ord=2), ins((4, 3)), LR,
         "linalg"),
    Case("jnp.linalg.norm_nuc", LIN, lambda x: jnp.linalg.norm(x, ord="nuc"), ins((4, 3)),
         LR, "linalg"),
    Case("jnp.linalg.cond", LIN, jnp.linalg.cond, _sq, LR, "linalg"),
    Case("jnp.linalg.tensorsolve", LIN, lambda a, b: jnp.linalg.tensorsolve(
         a.reshape(2, 2, 4), b.reshape(2, 2)), lambda r, d: [(_sq(r, d)[0][0],
         arr(r, (4,), d))], LR, "linalg"),
    Case("jnp.linalg.matrix_power", LIN, lambda x: (jnp.linalg.matrix_power(x, 3),
         jnp.linalg.matrix_power(x, 0)), ins((3, 3), (2, 4, 4)), LA, "linalg"),
    Case("jnp.linalg.matrix_power_neg", LIN, lambda x: jnp.linalg.matrix_power(x, -2), _sq,
         LR, "linalg"),
    Case("jnp.linalg.multi_dot", LIN, lambda a, b, c: jnp.linalg.multi_dot([a, b, c]),
         ins([(3, 4), (4, 5), (5, 2)]), LA, "linalg"),
    Case("jnp.linalg.matrix_norm", LIN, lambda x: (jnp.linalg.matrix_norm(x),
         jnp.linalg.matrix_norm(x, ord=1), jnp.linalg.matrix_norm(x, ord=-jnp.inf)),
         ins((4, 3), (2, 3, 3)), LA, "linalg"),
    Case("jnp.linalg.vector_norm", LIN, lambda x: (jnp.linalg.vector_norm(x, axis=-1),
         jnp.linalg.vector_norm(x, ord=3, axis=0)), ins((4, 3)), LA, "linalg"),
    Case("jnp.linalg.vecdot", LIN, jnp.linalg.vecdot, ins([(4, 3), (4, 3)]), LA, "linalg"),
    Case("jnp.linalg.matrix_transpose", LIN, jnp.linalg.matrix_transpose, ins((2, 3, 4)), LA,
         "exact"),
    Case("jnp.linalg.tensordot", LIN, lambda a, b: jnp.linalg.tensordot(a, b, axes=1),
         ins([(3, 4), (4, 2)]), LA, "linalg"),
    Case("jnp.linalg.outer", LIN, jnp.linalg.outer, ins([(3,), (4,)]), LA, "linalg"),
    Case("jnp.linalg.trace", LIN, lambda x: jnp.linalg.trace(x, offset=1), ins((2, 3, 4)), LA,
         "linalg"),
    Case("jnp.linalg.diagonal", LIN, jnp.linalg.diagonal, ins((2, 3, 4)), LA, "exact"),
]

SCIPY_LINALG = [
    Case("jsl.solve_triangular", SLIN, lambda a, b: (jsl.solve_triangular(a, b, lower=True),
         jsl.solve_triangular(a, b, trans=1, lower=True)), _tri_rhs, LA, "linalg"),
    Case("jsl.cho_solve", SLIN, lambda a, b: jsl.cho_solve(jsl.cho_factor(a), b), _spd_rhs,
         LA, "linalg"),
    Case("jsl.cholesky", SLIN, lambda a: jsl.cholesky(a, lower=False), _spd, LA, "linalg"),
    Case("jsl.lu", SLIN, _lu_inv, _sq, LA, "linalg"),
    Case("jsl.lu_solve", SLIN, lambda a, b: jsl.lu_solve(jsl.lu_factor(a), b), _sq_rhs, LA,
         "linalg"),
    Case("jsl.qr", SLIN, lambda x: jsl.qr(x, mode="r")[0], ins((5, 3)), LR, "linalg"),
    Case("jsl.svd", SLIN, lambda x: jsl.svd(x, compute_uv=False), ins((5, 3)), LA, "linalg"),
    Case("jsl.eigh", SLIN, lambda x: jsl.eigh(x, eigvals_only=True), _spd, LA, "linalg"),
    Case("jsl.det", SLIN, jsl.det, _sq, LA, "linalg"),
    Case("jsl.inv", SLIN, jsl.inv, _sq, LA, "linalg"),
    Case("jsl.solve", SLIN, lambda a, b: jsl.solve(a, b, assume_a="pos"), _spd_rhs, LA,
         "linalg"),
    Case("jsl.expm", SLIN, lambda x: jsl.expm(0.3 * x), ins((4, 4), (2, 3, 3)), LA, "linalg"),
    Case("jsl.schur", SLIN, _schur_inv, _sq, LR, "linalg"),
    Case("jsl.hessenberg", SLIN, lambda x: jnp.abs(jnp.tril(jsl.hessenberg(x), -2)),
         ins((4, 4)), LR, "linalg"),
    Case("jsl.polar", SLIN, lambda x: (lambda u, p: (u @ p, p))(*jsl.polar(x)),
         ins((4, 4)), LR, "linalg"),
    Case("jsl.sqrtm", SLIN, _sqrtm_sq, _spd, LR, "linalg"),
    Case("jsl.eigh_tridiagonal", SLIN, lambda d, e: jsl.eigh_tridiagonal(
         d, e, eigvals_only=True), ins([(5,), (4,)]), LR, "linalg"),
    Case("jsl.block_diag", SLIN, jsl.block_diag, ins([(2, 3), (1, 1), (3, 2)]), LA, "exact"),
    Case("jsl.toeplitz", SLIN, jsl.toeplitz, ins([(4,), (3,)]), LA, "exact"),
    Case("jsl.circulant", SLIN, jsl.circulant, ins((4,)), LA, "exact"),
    Case("jsl.hankel", SLIN, jsl.hankel, ins([(3,), (4,)]), LA, "exact"),
    Case("jsl.companion", SLIN, jsl.companion, ins((4,)), LR, "linalg"),
    Case("jsl.hilbert", SLIN, lambda x: x[0] * jsl.hilbert(4), ins((1,)), LR, "linalg"),
    Case("jsl.expm_frechet", SLIN, lambda a, e: jsl.expm_frechet(0.3 * a, e,
         compute_expm=False), ins([(3, 3), (3, 3)]), LR, "linalg"),
    Case("jsl.solve_sylvester", SLIN, jsl.solve_sylvester,
         lambda r, d: [(_sq(r, d)[0][0], -_sq(r, d)[0][0].T, arr(r, (4, 4), d))], LR,
         "linalg"),
]


def _sp(name: str, fn, kind="normal", dtypes=LR, shapes=((7,), (3, 4))) -> Case:
    return Case(f"jax.scipy.special.{name}", SPEC, fn, ins(*shapes, kind=kind), dtypes,
                "special")


def _sp2(name: str, fn, kind=("pos", "pos"), dtypes=LR) -> Case:
    return Case(f"jax.scipy.special.{name}", SPEC, fn,
                ins([(7,), (7,)], [(3, 4), (4,)], kind=kind), dtypes, "special")


SPECIAL = [
    _sp("erf", sp.erf, dtypes=("f32", "f64", "bf16")),
    _sp("erfc", sp.erfc),
    _sp("erfinv", sp.erfinv, "unit"),
    _sp("erfcx", sp.erfcx),
    _sp("gammaln", sp.gammaln, "pos"),
    _sp("digamma", sp.digamma, "pos"),
    _sp("gamma", sp.gamma, "pos"),
    _sp("gammasgn", lambda x: sp.gammasgn(x - 1.0)),
    _sp("loggamma", sp.loggamma, "pos"),
    _sp2("beta", sp.beta),
    _sp2("betaln", sp.betaln),
    _sp2("xlogy", sp.xlogy, ("normal", "pos")),
    _sp2("xlog1py", sp.xlog1py, ("normal", "pos")),
    _sp("expit", sp.expit, dtypes=("f32", "f64", "bf16")),
    _sp("logit", sp.logit, "prob"),
    _sp("log_ndtr", lambda x: sp.log_ndtr(4 * x)),
    _sp("ndtr", sp.ndtr),
    _sp("ndtri", sp.ndtri, "prob"),
    _sp("i0", sp.i0),
    _sp("i0e", sp.i0e),
    _sp("i1", sp.i1),
    _sp("i1e", sp.i1e),
    _sp("entr", sp.entr, "pos"),
    _sp2("zeta", lambda x, q: sp.zeta(x + 1.0, q)),
    Case("jax.scipy.special.polygamma", SPEC, lambda x: (sp.polygamma(1, x),
         sp.polygamma(2, x)), ins((7,), kind="pos"), LR, "special"),
    _sp2("gammainc", sp.gammainc),
    _sp2("gammaincc", sp.gammaincc),
    Case("jax.scipy.special.betainc", SPEC, sp.betainc,
         ins([(7,), (7,), (7,)], kind=("pos", "pos", "prob")), LR, "special"),
    _sp("logsumexp", lambda x: (sp.logsumexp(x), sp.logsumexp(x, axis=-1))),
    _sp("multigammaln", lambda x: sp.multigammaln(x + 2.0, 3), "pos"),
    _sp2("kl_div", sp.kl_div),
    _sp2("rel_entr", sp.rel_entr),
    _sp("exp1", sp.exp1, "pos"),
    _sp("expi", sp.expi, "pos"),
    Case("jax.scipy.special.expn", SPEC, lambda x: sp.expn(2, x), ins((7,), kind="pos"), LR,
         "special"),
    _sp("spence", sp.spence, "pos"),
    _sp("factorial", lambda x: sp.factorial(jnp.round(x * 3)), "pos"),
    _sp2("poch", sp.poch),
    _sp("bernoulli", lambda x: x[0] * sp.bernoulli(6), shapes=((1,),)),
    _sp("softmax", lambda x: sp.softmax(x, axis=-1)),
    _sp("log_softmax", lambda x: sp.log_softmax(x, axis=0)),
    _sp("dawsn", sp.dawsn),
    _sp("fresnel", sp.fresnel),
    _sp("sici", sp.sici, "pos"),
    _sp2("comb", lambda n, k: sp.comb(jnp.round(n * 3) + 3, jnp.round(k))),
    _sp2("hyp1f1", lambda a, x: sp.hyp1f1(a, a + 1.0, x)),
    _sp("boxcox", lambda x: sp.boxcox(x, 0.5), "pos"),
    _sp("owens_t", lambda h: sp.owens_t(h, 0.5)),
    Case("jax.scipy.special.bessel_jn", SPEC, lambda x: sp.bessel_jn(x, v=2),
         ins((7,), kind="pos"), LR, "special"),
]


SIGNAL = [
    Case("jss.convolve", SIG, lambda a, b: (jss.convolve(a, b), jss.convolve(a, b, "same")),
         ins([(10,), (3,)], [(5, 6), (2, 3)]), LR, "reduction"),
    Case("jss.correlate", SIG, lambda a, b: jss.correlate(a, b, "valid"),
         ins([(10,), (3,)], [(5, 6), (2, 3)]), LR, "reduction"),
    Case("jss.convolve2d", SIG, lambda a, b: (jss.convolve2d(a, b),
         jss.convolve2d(a, b, mode="same")), ins([(6, 7), (3, 2)]), LR, "reduction"),
    Case("jss.correlate2d", SIG, jss.correlate2d, ins([(6, 7), (3, 2)]), LR, "reduction"),
    Case("jss.fftconvolve", SIG, jss.fftconvolve, ins([(12,), (5,)], [(6, 7), (3, 2)]), LR,
         "fft"),
    Case("jss.detrend", SIG, lambda x: jss.detrend(x, type="constant"), ins((3, 8)), LR,
         "reduction"),
    Case("jss.detrend_linear", SIG, lambda x: jss.detrend(x, type="linear"), ins((3, 8)),
         LR, "linalg"),
    Case("jss.stft", SIG, lambda x: jss.stft(x, nperseg=8)[2], ins((32,)), LR, "fft"),
    Case("jss.istft", SIG, lambda x: jss.istft(jss.stft(x, nperseg=8)[2], nperseg=8)[1],
         ins((32,)), LR, "fft"),
    Case("jss.welch", SIG, lambda x: jss.welch(x, nperseg=8)[1], ins((32,)), LR, "fft"),
    Case("jss.csd", SIG, lambda x, y: jss.csd(x, y, nperseg=8)[1], ins([(32,), (32,)]), LR,
         "fft"),
]


def _st(name: str, fn, kind="normal", n_args: int = 1) -> Case:
    shapes = [[(7,)] * n_args, [(3, 4)] * n_args]
    return Case(f"jax.scipy.stats.{name}", STAT, fn, ins(*shapes, kind=kind), LR, "special")


STATS = [
    _st("norm", lambda x: (st.norm.pdf(x), st.norm.logpdf(x, 0.5, 2.0), st.norm.cdf(x),
        st.norm.logcdf(x), st.norm.sf(x))),
    _st("norm.ppf", lambda p: (st.norm.ppf(p), st.norm.isf(p)), "prob"),
    _st("t", lambda x: (st.t.logpdf(x, 3.0), st.t.pdf(x, 5.0))),
    _st("beta", lambda p: (st.beta.logpdf(p, 2.0, 3.0), st.beta.cdf(p, 2.0, 3.0)), "prob"),
    _st("gamma", lambda x: (st.gamma.logpdf(x, 2.5), st.gamma.cdf(x, 2.5)), "pos"),
    _st("poisson", lambda k: (st.poisson.logpmf(jnp.round(k * 3), 2.0),
        st.poisson.cdf(jnp.round(k * 3), 2.0)), "pos"),
    _st("bernoulli", lambda p: (st.bernoulli.logpmf(0.0, p), st.bernoulli.logpmf(1.0, p)),
        "prob"),
    _st("binom", lambda k: st.binom.logpmf(jnp.round(k * 3), 10, 0.3), "pos"),
    _st("expon", lambda x: (st.expon.logpdf(x), st.expon.cdf(x, scale=2.0)), "pos"),
    _st("laplace", lambda x: (st.laplace.logpdf(x), st.laplace.cdf(x))),
    _st("logistic", lambda x: (st.logistic.logpdf(x), st.logistic.cdf(x),
        st.logistic.ppf(jnp.clip(st.logistic.cdf(x), 0.05, 0.95)))),
    _st("cauchy", lambda x: (st.cauchy.logpdf(x), st.cauchy.cdf(x))),
    _st("uniform", lambda x: (st.uniform.logpdf(x, -1.0, 2.0), st.uniform.pdf(x))),
    _st("chi2", lambda x: (st.chi2.logpdf(x, 3.0), st.chi2.cdf(x, 3.0)), "pos"),
    _st("truncnorm", lambda x: st.truncnorm.logpdf(x, -1.0, 1.5)),
    _st("geom", lambda k: st.geom.logpmf(jnp.round(k * 3) + 1, 0.3), "pos"),
    _st("pareto", lambda x: st.pareto.logpdf(x + 1.0, 2.0), "pos"),
    _st("gennorm", lambda x: st.gennorm.logpdf(x, 1.5)),
    _st("vonmises", lambda x: st.vonmises.logpdf(x, 2.0)),
    _st("gumbel_r", lambda x: (st.gumbel_r.logpdf(x), st.gumbel_r.cdf(x))),
    _st("nbinom", lambda k: st.nbinom.logpmf(jnp.round(k * 3), 5, 0.4), "pos"),
    Case("jax.scipy.stats.dirichlet", STAT, lambda x: st.dirichlet.logpdf(
         x / jnp.sum(x), jnp.array([1.5, 2.0, 3.0, 0.7])), ins((4,), kind="pos"), LR,
         "special"),
    Case("jax.scipy.stats.multivariate_normal", STAT, lambda x, c: st.multivariate_normal
         .logpdf(x, jnp.zeros(3, x.dtype), c), lambda r, d: [(arr(r, (5, 3), d),
         spd(r, (3, 3), d))], LR, "linalg"),
    Case("jax.scipy.stats.rankdata", STAT, lambda x: (st.rankdata(jnp.round(x)),
         st.rankdata(x, method="min")), ins((9,)), LR, "exact"),
    Case("jax.scipy.stats.mode", STAT, lambda x: st.mode(jnp.round(x), axis=-1),
         ins((3, 8)), LR, "exact"),
    Case("jax.scipy.stats.sem", STAT, lambda x: st.sem(x, axis=-1), ins((3, 8)), LR,
         "reduction"),
]

CASES = LINALG + SCIPY_LINALG + SPECIAL + SIGNAL + STATS
