"""SavedModel directories through the Python API and ``oxla compile`` / ``oxla run``."""

from __future__ import annotations

import pytest

pytest.importorskip("oxla_frontend_tf")
pytest.importorskip("tensorflow")

import keras
import numpy as np
import oxla_frontend_tf as otf
import tensorflow as tf
from click.testing import CliRunner
from tf_helpers import assert_matches_tf

from oxla import plugins
from oxla.cli.main import cli
from oxla.errors import OxlaError, RuntimeInputError


class _Dense(tf.Module):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(0)
        self.w = tf.Variable(rng.normal(size=(4, 3)).astype(np.float32))
        self.b = tf.Variable(rng.normal(size=(3,)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def __call__(self, x):
        return {"relu": tf.nn.relu(x @ self.w + self.b), "sum": tf.reduce_sum(x, axis=1)}


@pytest.fixture(scope="module")
def dense_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("dense") / "saved"
    module = _Dense()
    tf.saved_model.save(module, str(path))
    return path, module


@pytest.fixture(scope="module")
def keras_cnn_dir(tmp_path_factory):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((12, 12, 3)),
        keras.layers.Conv2D(4, 3, activation="relu"),
        keras.layers.BatchNormalization(),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(5, activation="softmax"),
    ])
    path = tmp_path_factory.mktemp("cnn") / "exported"
    model.export(str(path), verbose=False)
    return path, model


def test_saved_model_dir_is_detected(dense_dir, tmp_path):
    path, _ = dense_dir
    assert plugins.detect_frontend(str(path)) == "tf"
    assert plugins.detect_frontend(str(path / "saved_model.pb")) == "tf"
    assert plugins.detect_frontend(str(tmp_path)) is None


def test_saved_model_outputs_in_name_order(dense_dir, backend):
    path, module = dense_dir
    x = np.random.default_rng(2).normal(size=(2, 4)).astype(np.float32)
    fn = otf.compile(str(path), ["2x4"], backend=backend)
    out = fn(x)
    expected = module(x)
    assert sorted(out) == ["relu", "sum"]
    for name in out:
        assert_matches_tf(out[name], expected[name].numpy())


def test_cli_compile_and_run_keras_export(keras_cnn_dir, tmp_path):
    path, model = keras_cnn_dir
    x = np.random.default_rng(3).uniform(size=(2, 12, 12, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    artifact = tmp_path / "cnn.oxla"
    runner = CliRunner()
    r = runner.invoke(cli, ["compile", str(path), "--input-spec", "2x12x12x3:f32",
                            "--backend", "interpreter", "-o", str(artifact)])
    assert r.exit_code == 0, r.output
    assert "frontend tf" in r.output
    r = runner.invoke(cli, ["run", str(artifact), "-i", str(tmp_path / "x.npy"),
                            "-o", str(tmp_path / "out.npz")])
    assert r.exit_code == 0, r.output
    out = np.load(tmp_path / "out.npz")["result0"]
    assert_matches_tf(out, model(x, training=False).numpy())


def test_cli_without_input_spec_names_the_unknown_dimension(dense_dir):
    path, _ = dense_dir
    r = CliRunner().invoke(cli, ["compile", str(path), "--backend", "interpreter",
                                 "--emit", "stablehlo"])
    assert r.exit_code != 0
    assert "unknown dimensions" in r.output and "--input-spec" in r.output


def test_cli_emit_stablehlo_has_weights_as_constants(dense_dir):
    path, _ = dense_dir
    r = CliRunner().invoke(cli, ["compile", str(path), "--input-spec", "3x4",
                                 "--emit", "stablehlo"])
    assert r.exit_code == 0, r.output
    assert "func.func @main(%arg0: tensor<3x4xf32>) -> (tensor<3x3xf32>, tensor<3xf32>)" \
        in r.output
    assert "mhlo.copy" not in r.output


def test_input_spec_of_the_wrong_dtype(dense_dir):
    path, _ = dense_dir
    with pytest.raises(RuntimeInputError, match="input 'x' has dtype float32, got int32"):
        otf.import_saved_model(path, ["2x4:i32"])
    with pytest.raises(RuntimeInputError, match=r"input 'x' has shape \(None, 4\), got \(2, 5\)"):
        otf.import_saved_model(path, ["2x5"])


def test_unknown_signature(dense_dir):
    path, _ = dense_dir
    with pytest.raises(OxlaError, match="has no signature 'predict'; it has: serving_default"):
        otf.import_saved_model(path, ["2x4"], signature="predict")
