"""Sweep cases of ``jax.nn``, ``jax.random`` and the transformations (grad, jvp, vjp,
vmap, hessian, jacfwd/jacrev, custom_vjp/jvp, checkpoint, linearize).

``jax.random`` cases take a raw ``uint32[2]`` key (``jax.random.PRNGKey``) as their
input; bits and uniform samples are compared exactly (integer arithmetic on the same
counter-based threefry stream), samplers built on transcendental functions within the
``special`` tolerance.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from sweep_common import Case, arr, ins

NN = "jax.nn"
RND = "jax.random"
TRF = "transformations"
FL = ("f32", "f64")
FLB = ("f32", "bf16", "f16", "f64")
U = ins((7,), (3, 4, 5))


def _nn(name: str, fn, dtypes=FLB, tol="elementwise", make=U) -> Case:
    return Case(f"jax.nn.{name}", NN, fn, make, dtypes, tol)


def _attn_make(rng: np.random.Generator, dt: str):
    return [tuple(arr(rng, (2, 5, 3, 4), dt) for _ in range(3))]


NNS = [
    _nn("relu", jax.nn.relu, FLB + ("i32",)),
    _nn("relu6", lambda x: jax.nn.relu6(x * 4)),
    _nn("sigmoid", jax.nn.sigmoid),
    _nn("softplus", jax.nn.softplus),
    _nn("soft_sign", jax.nn.soft_sign),
    _nn("silu", jax.nn.silu),
    _nn("gelu_tanh", lambda x: jax.nn.gelu(x, approximate=True)),
    _nn("gelu_erf", lambda x: jax.nn.gelu(x, approximate=False)),
    _nn("elu", jax.nn.elu),
    _nn("celu", lambda x: jax.nn.celu(x, 0.5)),
    _nn("selu", jax.nn.selu),
    _nn("leaky_relu", lambda x: jax.nn.leaky_relu(x, 0.1)),
    _nn("hard_tanh", lambda x: jax.nn.hard_tanh(x * 2)),
    _nn("hard_sigmoid", lambda x: jax.nn.hard_sigmoid(x * 3)),
    _nn("hard_silu", lambda x: jax.nn.hard_silu(x * 3)),
    _nn("log_sigmoid", jax.nn.log_sigmoid),
    _nn("softmax", lambda x: (jax.nn.softmax(x), jax.nn.softmax(x, axis=0)), tol="reduction"),
    _nn("log_softmax", lambda x: jax.nn.log_softmax(x, axis=-1), tol="reduction"),
    _nn("logsumexp", lambda x: jax.nn.logsumexp(x, axis=-1), tol="reduction"),
    _nn("logmeanexp", lambda x: jax.nn.logmeanexp(x, axis=-1), FL, tol="reduction"),
    _nn("log1mexp", lambda x: jax.nn.log1mexp(jnp.abs(x) + 0.01), FL),
    _nn("one_hot", lambda x: jax.nn.one_hot(x, 6), ("i32",), "exact",
        ins((5,), (2, 3), kind="small")),
    _nn("standardize", lambda x: jax.nn.standardize(x, axis=-1), FL, "reduction"),
    _nn("glu", jax.nn.glu, FLB, make=ins((4, 6))),
    _nn("squareplus", jax.nn.squareplus),
    _nn("sparse_plus", jax.nn.sparse_plus),
    _nn("sparse_sigmoid", jax.nn.sparse_sigmoid),
    _nn("mish", jax.nn.mish),
    _nn("tanh", jax.nn.tanh),
    # f32 only: JAX computes its softmax in f32 for f64 inputs too (both compilers agree
    # to 1e-7, f32's precision, not f64's)
    _nn("dot_product_attention", lambda q, k, v: (jax.nn.dot_product_attention(q, k, v),
        jax.nn.dot_product_attention(q, k, v, is_causal=True)), ("f32",), "reduction",
        _attn_make),
    _nn("initializers", lambda k: (jax.nn.initializers.glorot_uniform()(k, (4, 3)),
        jax.nn.initializers.he_normal()(k, (4, 3)), jax.nn.initializers.lecun_normal()(
        k, (3, 3))), FL, "special", lambda r, d: [(np.asarray(jax.random.PRNGKey(3)),)]),
]


def _key(rng: np.random.Generator, dt: str):
    del dt
    return [(np.asarray(jax.random.PRNGKey(int(rng.integers(0, 2**31)))),),
            (np.asarray(jax.random.PRNGKey(0)),)]


def _rnd(name: str, fn, tol="special", dtypes=FL, pending=None) -> Case:
    return Case(f"jax.random.{name}", RND, fn, _key, dtypes, tol, pending)


S = (3, 5)
RANDOM = [
    _rnd("split", lambda k: jax.random.split(k, 4), "exact"),
    _rnd("fold_in", lambda k: jax.random.fold_in(k, 17), "exact"),
    _rnd("bits", lambda k: (jax.random.bits(k, S), jax.random.bits(k, (4,), jnp.uint8)),
         "exact"),
    _rnd("key_typed", lambda k: jax.random.key_data(jax.random.split(
         jax.random.wrap_key_data(k), 3)), "exact"),
    _rnd("uniform", lambda k: (jax.random.uniform(k, S), jax.random.uniform(
         k, (4,), minval=-2.0, maxval=3.0), jax.random.uniform(k, (2,), jnp.bfloat16)),
         "elementwise"),
    _rnd("normal", lambda k: jax.random.normal(k, S)),
    _rnd("bernoulli", lambda k: jax.random.bernoulli(k, 0.3, S), "exact"),
    _rnd("categorical", lambda k: jax.random.categorical(k, jnp.log(jnp.arange(1.0, 6.0)),
         shape=(8,)), "exact"),
    _rnd("randint", lambda k: jax.random.randint(k, S, -5, 9), "exact"),
    _rnd("permutation", lambda k: (jax.random.permutation(k, 7),
         jax.random.permutation(k, jnp.arange(12.0).reshape(3, 4), axis=1)), "exact"),
    _rnd("choice", lambda k: (jax.random.choice(k, 10, (4,)), jax.random.choice(
         k, 10, (4,), replace=False), jax.random.choice(k, 5, (3,), p=jnp.arange(5.0) / 10)),
         "exact"),
    _rnd("gumbel", lambda k: jax.random.gumbel(k, S)),
    _rnd("truncated_normal", lambda k: jax.random.truncated_normal(k, -1.0, 2.0, S)),
    _rnd("exponential", lambda k: jax.random.exponential(k, S)),
    _rnd("gamma", lambda k: jax.random.gamma(k, jnp.array([0.5, 1.0, 3.0]), (4, 3))),
    _rnd("beta", lambda k: jax.random.beta(k, 2.0, 3.0, S)),
    _rnd("dirichlet", lambda k: jax.random.dirichlet(k, jnp.array([1.0, 2.0, 0.5]), (4,))),
    _rnd("poisson", lambda k: jax.random.poisson(k, 3.0, S), "exact"),
    _rnd("laplace", lambda k: jax.random.laplace(k, S)),
    _rnd("logistic", lambda k: jax.random.logistic(k, S)),
    _rnd("cauchy", lambda k: jax.random.cauchy(k, S)),
    _rnd("rademacher", lambda k: jax.random.rademacher(k, S), "exact"),
    _rnd("t", lambda k: jax.random.t(k, 4.0, S)),
    _rnd("chisquare", lambda k: jax.random.chisquare(k, 3.0, S)),
    _rnd("weibull_min", lambda k: jax.random.weibull_min(k, 1.5, 2.0, S)),
    _rnd("maxwell", lambda k: jax.random.maxwell(k, S)),
    _rnd("pareto", lambda k: jax.random.pareto(k, 3.0, S)),
    _rnd("loggamma", lambda k: jax.random.loggamma(k, 2.0, S)),
    _rnd("binomial", lambda k: jax.random.binomial(k, 10, 0.3, S)),
    _rnd("geometric", lambda k: jax.random.geometric(k, 0.3, S), "exact"),
    _rnd("lognormal", lambda k: jax.random.lognormal(k, 0.5, S)),
    _rnd("triangular", lambda k: jax.random.triangular(k, -1.0, 0.5, 2.0, S)),
    _rnd("rayleigh", lambda k: jax.random.rayleigh(k, 1.5, S)),
    _rnd("wald", lambda k: jax.random.wald(k, 1.5, S)),
    _rnd("ball", lambda k: jax.random.ball(k, 3, shape=(4,))),
    _rnd("generalized_normal", lambda k: jax.random.generalized_normal(k, 1.5, S)),
    _rnd("multivariate_normal", lambda k: jax.random.multivariate_normal(
         k, jnp.zeros(3), jnp.eye(3) + 0.5, (4,))),
    _rnd("orthogonal", lambda k: jnp.abs(jax.random.orthogonal(k, 3)), "linalg"),
]


def _mlp_make(rng: np.random.Generator, dt: str):
    return [(arr(rng, (4, 3), dt), arr(rng, (3, 2), dt), arr(rng, (5, 4), dt))]


def _mlp_loss(w1, w2, x):
    return jnp.mean(jnp.tanh(x @ w1) @ w2 ** 2)


@jax.custom_vjp
def _clip_grad(x):
    return jnp.sin(x)


_clip_grad.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)),
                  lambda c, g: (jnp.clip(g * c, -0.5, 0.5),))


@jax.custom_jvp
def _safe_log(x):
    return jnp.log(x)


_safe_log.defjvp(lambda p, t: (jnp.log(p[0]), t[0] / jnp.maximum(p[0], 0.1)))


def _f(x):
    return jnp.sum(jnp.sin(x) * x ** 2)


V52 = ins((5,), (2, 3))


def _tr(name: str, fn, make=V52, dtypes=FL) -> Case:
    return Case(f"jax.{name}", TRF, fn, make, dtypes, "transform")


TRANSFORMS = [
    _tr("grad", jax.grad(_f), dtypes=("f32", "f64", "bf16")),
    _tr("value_and_grad", jax.value_and_grad(_mlp_loss, argnums=(0, 1)), _mlp_make),
    _tr("jvp", lambda x, t: jax.jvp(lambda v: jnp.tanh(v) * jnp.exp(v), (x,), (t,)),
        ins([(5,), (5,)], [(2, 3), (2, 3)])),
    _tr("vjp", lambda x, c: jax.vjp(lambda v: jnp.sin(v) @ v.T, x)[1](c),
        ins([(3, 4), (3, 3)])),
    _tr("vmap", jax.vmap(lambda a, b: jnp.dot(a, b) * jnp.max(a)), ins([(4, 3), (4, 3)])),
    _tr("vmap_in_axes", jax.vmap(lambda a, b: a @ b, in_axes=(None, 1), out_axes=1),
        ins([(3, 4), (4, 5)])),
    _tr("vmap_cond", jax.vmap(lambda x: jax.lax.cond(x[0] > 0, jnp.sin, jnp.cos, x)),
        ins((6, 3))),
    _tr("vmap_while", jax.vmap(lambda x: jax.lax.while_loop(
        lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * 0.5 + jnp.abs(c[1])), (0, x))[1]),
        ins((6, 3))),
    _tr("hessian", jax.hessian(_f)),
    _tr("jacfwd", jax.jacfwd(lambda x: jnp.cumsum(jnp.sin(x) * x))),
    _tr("jacrev", jax.jacrev(lambda x: jax.nn.softmax(x) * x)),
    _tr("custom_vjp", jax.grad(lambda x: jnp.sum(_clip_grad(x) * 3))),
    _tr("custom_jvp", jax.grad(lambda x: jnp.sum(_safe_log(jnp.abs(x) + 0.05)))),
    _tr("checkpoint", jax.grad(jax.checkpoint(lambda x: jnp.sum(jnp.sin(jnp.sin(x)) ** 2)))),
    _tr("linearize", lambda x, t: jax.linearize(lambda v: jnp.exp(v) * jnp.cos(v), x)[1](t),
        ins([(5,), (5,)])),
    _tr("grad_scan", jax.grad(lambda x: jax.lax.scan(lambda c, v: (c * jnp.sin(v) + v, c),
        jnp.ones_like(x[0]), x)[0].sum())),
    _tr("grad_fori", jax.grad(lambda x: jnp.sum(jax.lax.fori_loop(
        0, 4, lambda i, v: jnp.sin(v) * v, x)))),
    _tr("grad_cross_entropy", jax.grad(lambda w, x: -jnp.mean(jax.nn.log_softmax(x @ w)[
        :, 0])), ins([(3, 4), (5, 3)])),
    _tr("grad_conv", jax.grad(lambda k, x: jnp.sum(jax.lax.conv(x, k, (1, 1), "SAME") ** 2)),
        ins([(2, 3, 3, 3), (1, 3, 5, 5)])),
    _tr("stop_gradient", jax.grad(lambda x: jnp.sum(x * jax.lax.stop_gradient(jnp.sin(x))))),
    _tr("grad_sort", jax.grad(lambda x: jnp.sum(jnp.sort(x) * jnp.arange(x.shape[-1])))),
]

CASES = NNS + RANDOM + TRANSFORMS
