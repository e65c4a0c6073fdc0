"""What a user sees when tensorflow or the frontend is missing, or TF cannot lower."""

from __future__ import annotations

import pytest

pytest.importorskip("oxla_frontend_tf")
pytest.importorskip("tensorflow")

import subprocess
import sys

import oxla_frontend_tf as otf
import tensorflow as tf

from oxla import plugins
from oxla.cli.compile_cmd import resolve_frontend
from oxla.errors import LoweringError, NotSupportedError, PluginError


def test_missing_tensorflow_says_how_to_install(monkeypatch):
    from oxla_frontend_tf._tf import require_tf

    monkeypatch.setitem(sys.modules, "tensorflow", None)
    with pytest.raises(PluginError, match="needs tensorflow") as info:
        require_tf()
    assert "install oxla-frontend-tf with: pip install" in info.value.render()
    with pytest.raises(PluginError, match="needs tensorflow"):
        otf.import_function(lambda x: x, ["2:f32"])


def test_frontend_reports_unavailable_without_tensorflow(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow", None)
    ok, why = otf.TFFrontend().available()
    assert not ok and "install oxla-frontend-tf" in why
    monkeypatch.undo()
    assert otf.TFFrontend().available() == (True, "")


def test_saved_model_without_the_frontend_names_the_distribution(tmp_path):
    (tmp_path / "saved_model.pb").write_bytes(b"")
    registry = plugins.PluginRegistry()
    registry.register_builtins()
    old = plugins.set_registry(registry)
    try:
        with pytest.raises(PluginError, match="tf frontend is not installed") as info:
            resolve_frontend(str(tmp_path), None)
        assert "install oxla-frontend-tf with: pip install" in info.value.render()
    finally:
        plugins.set_registry(old)


def test_plugin_discovery_does_not_import_tensorflow():
    code = ("import sys; from oxla import plugins; fs = plugins.frontends(); "
            "assert 'tf' in fs, fs; "
            "assert plugins.detect_frontend('.') is None; "
            "print('tensorflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_function_xla_cannot_compile_is_a_lowering_error():
    def strings(x):
        return tf.strings.as_string(x)  # no XLA kernel

    with pytest.raises(LoweringError, match="TensorFlow could not lower 'strings'"):
        otf.import_function(strings, ["4:f32"])


def test_bounded_dynamic_shapes_name_the_op():
    def dynamic(x):
        return tf.where(x > 0)  # data-dependent output shape, bounded by XLA

    with pytest.raises(NotSupportedError, match="'stablehlo.set_dimension_size'") as info:
        otf.import_function(dynamic, ["4:f32"])
    assert "<tf dynamic>:" in str(info.value)
