"""Shared fixtures of the JAX frontend tests; everything skips without jax."""

from __future__ import annotations

import pytest

pytest.importorskip("jax")
pytest.importorskip("oxla_frontend_jax")


@pytest.fixture
def assert_close():
    """Returns a function comparing two pytrees of arrays leaf by leaf, 1e-5 relative."""
    return _assert_close


def _assert_close(actual, expected, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    import jax
    import numpy as np

    a_leaves, a_tree = jax.tree_util.tree_flatten(actual)
    e_leaves, e_tree = jax.tree_util.tree_flatten(expected)
    assert a_tree == e_tree
    for a, e in zip(a_leaves, e_leaves):
        assert np.asarray(a).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=rtol, atol=atol)
