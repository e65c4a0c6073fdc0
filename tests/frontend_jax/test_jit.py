"""oxla_frontend_jax.jit against jax.jit on programs from JAX's own example libraries."""

from __future__ import annotations

import pytest

pytest.importorskip("jax")
pytest.importorskip("oxla_frontend_jax")

import jax
import jax.numpy as jnp
import numpy as np
import oxla_frontend_jax as oj
from jax.example_libraries import optimizers, stax


def _mlp():
    init, apply = stax.serial(stax.Dense(64), stax.Relu, stax.Dense(10), stax.LogSoftmax)
    _, params = init(jax.random.PRNGKey(0), (-1, 32))
    x = jax.random.normal(jax.random.PRNGKey(1), (8, 32), jnp.float32)
    return apply, params, x


def test_stax_mlp_matches_jax(backend, assert_close):
    apply, params, x = _mlp()
    got = oj.jit(apply, backend=backend)(params, x)
    assert isinstance(got, jax.Array)
    assert_close(got, jax.jit(apply)(params, x))


def test_stax_training_step_matches_jax(backend, assert_close):
    apply, params, x = _mlp()
    labels = jax.nn.one_hot(jnp.arange(8) % 10, 10)
    opt_init, opt_update, get_params = optimizers.sgd(0.1)

    def loss(p, x, y):
        return -jnp.mean(jnp.sum(apply(p, x) * y, axis=-1))

    def step(i, state, x, y):
        value, grads = jax.value_and_grad(loss)(get_params(state), x, y)
        return value, opt_update(i, grads, state)

    state = opt_init(params)
    ours = oj.jit(step, backend=backend, static_argnums=0)
    got_loss, got_state = ours(0, state, x, labels)
    want_loss, want_state = jax.jit(step, static_argnums=0)(0, state, x, labels)
    assert_close(got_loss, want_loss)
    assert_close(get_params(got_state), get_params(want_state))


def test_pytree_in_and_out_and_cache_hit(backend, assert_close):
    def f(inputs, scale):
        a, b = inputs["a"], inputs["pair"][1]
        return {"sum": a + b * scale, "stats": (jnp.max(a), jnp.sum(b, axis=0))}

    ours = oj.jit(f, backend=backend, return_numpy=True)
    inputs = {"a": np.ones((3, 4), np.float32), "pair": (None, np.arange(12.0, dtype=np.float32)
                                                          .reshape(3, 4))}
    got = ours(inputs, 2.0)
    assert isinstance(got["sum"], np.ndarray)
    assert_close(got, jax.tree_util.tree_map(np.asarray, jax.jit(f)(inputs, 2.0)))
    ours(inputs, 3.0)
    assert (ours.compile_count, ours.cache_hits) == (1, 1)
    ours({"a": np.ones((2, 4), np.float32), "pair": (None, np.ones((2, 4), np.float32))}, 3.0)
    assert ours.compile_count == 2


def test_static_argument_values_key_the_cache(assert_close):
    def f(x, n):
        return x * n

    ours = oj.jit(f, static_argnums=1)
    x = jnp.arange(4.0)
    assert_close(ours(x, 2), x * 2)
    assert_close(ours(x, 3), x * 3)
    assert ours.compile_count == 2


def test_unused_argument_is_kept(backend, assert_close):
    def f(x, unused):
        return x + 1

    got = oj.jit(f, backend=backend)(jnp.ones(3), jnp.zeros(5, jnp.int32))
    assert_close(got, jnp.full(3, 2.0))


def test_decorator_form(assert_close):
    @oj.jit(backend="interpreter")
    def g(x):
        return jnp.tanh(x) * 2

    assert_close(g(jnp.linspace(-1, 1, 5)), jnp.tanh(jnp.linspace(-1, 1, 5)) * 2)


def test_unknown_backend_is_a_plugin_error():
    from oxla.errors import PluginError

    with pytest.raises(PluginError, match="unknown backend 'nope'"):
        oj.jit(jnp.sin, backend="nope")(jnp.ones(2))


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "complex64", "bfloat16"])
@pytest.mark.parametrize("shape", [(), (3,), (64, 32, 32)], ids=str)
def test_results_are_jax_arrays_like_jax_jit(shape, dtype):
    """Results come back as jax arrays on jax.jit's device, sharding and dtype (the fast
    ``batched_device_put`` path of ``values.wrap_outputs``), one per output, unchanged
    by later calls."""
    import jax.numpy as jnp
    import ml_dtypes

    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    x = (np.arange(int(np.prod(shape))) % 7).reshape(shape).astype(dt)

    def f(v):
        return v, jnp.asarray(v) * 2 if dtype != "bool" else ~v

    of = oj.jit(f, backend="cpu")
    got, ref = of(x), jax.jit(f)(x)
    first = np.asarray(got[1]).copy()
    of(np.ones_like(x))  # a later call does not change earlier results
    for g, r in zip(got, ref, strict=True):
        assert type(g) is type(r) and g.dtype == r.dtype and g.shape == r.shape
        assert g.sharding == r.sharding
        np.testing.assert_array_equal(np.asarray(g), np.asarray(r))
    np.testing.assert_array_equal(np.asarray(got[1]), first)
