"""XLA's own custom calls in JAX's output (``@ApproxTopK``) are rewritten to StableHLO
on import and match ``jax.jit`` on every backend."""

from __future__ import annotations

import pytest

pytest.importorskip("jax")
pytest.importorskip("oxla_frontend_jax")

import jax
import numpy as np
import oxla_frontend_jax as oj
from jax import lax

from oxla.errors import NotSupportedError


@pytest.mark.parametrize("fn", [
    lambda x: lax.approx_max_k(x, 3, recall_target=1.0),
    lambda x: lax.approx_min_k(x, 2, reduction_dimension=0),
    lambda x: lax.approx_max_k(x[:, :2] * 0 + 1, 2),  # all equal: the lower index first
], ids=["max_k", "min_k_dim0", "ties"])
def test_approx_top_k_matches_xla(backend, fn):
    # rounded: values repeat, so the order of ties is checked too
    x = np.round(np.random.default_rng(0).normal(size=(4, 9)) * 2).astype(np.float32)
    got = oj.jit(fn, backend=backend, return_numpy=True)(x)
    want = jax.jit(fn)(x)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, np.asarray(w))


def test_approx_top_k_is_rewritten_to_sort():
    module, _, _ = oj.jit(lambda x: lax.approx_max_k(x, 2)).lower(np.ones((3, 5), np.float32))
    names = {op.name for op in module.walk()}
    assert "stablehlo.sort" in names and "stablehlo.custom_call" not in names


def test_approx_top_k_without_aggregation_is_refused():
    f = oj.jit(lambda x: lax.approx_max_k(x, 2, aggregate_to_topk=False))
    with pytest.raises(NotSupportedError, match="aggregate_to_topk"):
        f(np.ones((3, 64), np.float32))
