"""What a user sees when jax or the frontend is missing, or a shape assertion fails."""

from __future__ import annotations

import pytest

pytest.importorskip("jax")
pytest.importorskip("oxla_frontend_jax")

import sys

import jax
import jax.numpy as jnp
import numpy as np
import oxla_frontend_jax as oj
from jax import export

from oxla import plugins
from oxla.cli.compile_cmd import resolve_frontend
from oxla.errors import PluginError, RuntimeInputError


def test_missing_jax_says_how_to_install(monkeypatch):
    from oxla_frontend_jax._jax import require_jax

    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(PluginError, match="needs jax") as info:
        require_jax()
    assert "pip install -e extensions/frontend_jax" in info.value.render()


def test_frontend_reports_unavailable_without_jax(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)
    ok, why = oj.JaxFrontend().available()
    assert not ok and "install oxla-frontend-jax" in why


def test_jaxexport_without_the_frontend_names_the_distribution():
    registry = plugins.PluginRegistry()
    registry.register_builtins()
    old = plugins.set_registry(registry)
    try:
        with pytest.raises(PluginError, match="jax frontend is not installed") as info:
            resolve_frontend("model.jaxexport", None)
        assert "install oxla-frontend-jax with: pip install" in info.value.render()
    finally:
        plugins.set_registry(old)


def test_failed_shape_assertion_is_jax_message():
    (b,) = export.symbolic_shape("b")
    exp = export.export(jax.jit(lambda x: x * 2))(jax.ShapeDtypeStruct((b, 2), jnp.float32))
    fn = oj.compile_exported(exp, backend="interpreter")
    np.testing.assert_allclose(fn(np.ones((3, 2), np.float32)), np.full((3, 2), 2.0))
    with pytest.raises(RuntimeInputError, match="(?i)expected value >= 1 for dimension variable 'b'"):
        fn(np.ones((0, 2), np.float32))


def test_shape_assertions_are_checked_when_shapes_are_refined():
    from oxla_frontend_jax.exported import import_exported

    (b,) = export.symbolic_shape("b")
    exp = export.export(jax.jit(lambda x: x * 2))(jax.ShapeDtypeStruct((b, 2), jnp.float32))
    module = import_exported(exp, arg_shapes=[(3, 2)])
    # true once refined: erased, so static backends (cpu) need no kernel for it
    assert not any(op.name == "stablehlo.custom_call" for op in module.walk())
    with pytest.raises(RuntimeInputError, match="(?i)expected value >= 1 for dimension variable"):
        import_exported(exp, arg_shapes=[(0, 2)])
