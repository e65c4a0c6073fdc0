"""Keras applications and RNNs nobody here wrote, lowered by TensorFlow, run on oxla."""

from __future__ import annotations

import pytest

pytest.importorskip("oxla_frontend_tf")
pytest.importorskip("tensorflow")

import keras
import numpy as np
import tensorflow as tf
from oxla_frontend_tf.bridge import lower
from tf_helpers import assert_matches_tf, compile_or_xfail, randomize_batch_norm


def _lowered_model(model, shape):
    x = np.random.default_rng(1).uniform(-1, 1, shape).astype(np.float32)
    expected = model(x, training=False).numpy()
    return lower(model, [tf.TensorSpec(shape, tf.float32)]), x, expected


@pytest.fixture(scope="module")
def mobilenet_v2():
    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35,
                                           weights=None, classifier_activation=None)
    randomize_batch_norm(model)
    return _lowered_model(model, (1, 96, 96, 3))


@pytest.fixture(scope="module")
def resnet50():
    keras.utils.set_random_seed(0)
    model = keras.applications.ResNet50(input_shape=(64, 64, 3), weights=None,
                                        classifier_activation=None)
    randomize_batch_norm(model)
    return _lowered_model(model, (1, 64, 64, 3))


@pytest.fixture(scope="module", params=["LSTM", "GRU"])
def rnn(request):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((6, 4))
    hidden = getattr(keras.layers, request.param)(8, return_sequences=True)(inputs)
    outputs = keras.layers.Dense(3)(hidden)
    return _lowered_model(keras.Model(inputs, outputs), (1, 6, 4))


def test_mobilenet_v2_matches_tensorflow(mobilenet_v2, backend):
    lowered, x, expected = mobilenet_v2
    assert float(np.std(expected)) > 1e-3  # the test would prove nothing on ~0 logits
    fn = compile_or_xfail(lowered, backend)
    assert_matches_tf(fn(x), expected)


def test_resnet50_matches_tensorflow(resnet50, backend):
    lowered, x, expected = resnet50
    assert float(np.std(expected)) > 1e-3
    fn = compile_or_xfail(lowered, backend)
    assert_matches_tf(fn(x), expected)


def test_rnn_matches_tensorflow(rnn, backend):
    lowered, x, expected = rnn
    fn = compile_or_xfail(lowered, backend)
    assert_matches_tf(fn(x), expected)


def test_rnn_module_is_tidy(rnn):
    from oxla_frontend_tf.importer import module_from_lowered

    lowered = rnn[0]
    assert "mhlo.copy" in lowered.text and "cond_wrapper" in lowered.text
    module = module_from_lowered(lowered)
    names = [op.name for op in module.walk()]
    assert "mhlo.copy" not in names
    funcs = [f.attributes["sym_name"].value for f in module.functions]
    assert not [f for f in funcs if f.startswith("cond_wrapper")]
    main = module.main
    assert len(main.regions[0].block.args) == 1  # the weights became constants
