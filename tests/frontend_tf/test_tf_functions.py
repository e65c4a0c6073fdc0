"""``tf.function`` and callables: variables as constants or as inputs, specs, outputs."""

from __future__ import annotations

import pytest

pytest.importorskip("oxla_frontend_tf")
pytest.importorskip("tensorflow")

import numpy as np
import oxla_frontend_tf as otf
import tensorflow as tf
from oxla_frontend_tf.bridge import lower
from tf_helpers import assert_matches_tf, compile_or_xfail

from oxla.ir import types as T


def _affine():
    w = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, name="w")
    b = tf.Variable(np.ones(3, np.float32), name="b")

    @tf.function
    def f(x, y):
        return {"out": tf.tanh(tf.matmul(x, w) + b) * y, "aux": tf.reduce_max(x, axis=-1)}

    return f, w, b


def test_tf_function_with_variables_matches_tensorflow(backend):
    f, _, _ = _affine()
    x = np.random.default_rng(0).normal(size=(2, 4)).astype(np.float32)
    y = np.float32(2.5)
    lowered = lower(f, [tf.TensorSpec((2, 4), tf.float32), tf.TensorSpec((), tf.float32)])
    fn = compile_or_xfail(lowered, backend)
    out = fn(x, y)
    expected = f(x, y)
    for k in ("out", "aux"):
        assert_matches_tf(out[k], expected[k].numpy())


def test_variables_become_constants_by_default():
    f, _, _ = _affine()
    module = otf.import_function(f, ["2x4:f32", ":f32"])
    ft = module.main.attributes["function_type"].type
    assert [str(t) for t in ft.inputs] == ["tensor<2x4xf32>", "tensor<f32>"]
    assert any(op.name == "stablehlo.constant" and op.results[0].type == T.TensorType(
        (4, 3), T.f32) for op in module.walk())


def test_variables_as_inputs_follow_assignments(backend):
    f, w, b = _affine()
    x = np.ones((2, 4), np.float32)
    module = otf.import_function(f, [x, np.float32(1)], variables_as_inputs=True)
    ft = module.main.attributes["function_type"].type
    assert [tuple(t.shape) for t in ft.inputs] == [(2, 4), (), (4, 3), (3,)]
    fn = otf.compile(f, [x, np.float32(1)], backend=backend, variables_as_inputs=True)
    frozen = otf.compile(f, [x, np.float32(1)], backend=backend)
    before = frozen(x, np.float32(1))["out"]
    w.assign(w * -1.0)
    assert_matches_tf(fn(x, np.float32(1))["out"], f(x, np.float32(1))["out"].numpy())
    assert_matches_tf(frozen(x, np.float32(1))["out"], before)  # the constants stayed


def test_integer_inputs_and_captured_tensor(backend):
    table = tf.constant([10, 20, 30, 40], tf.int32)

    def f(i):
        return tf.gather(table, i) + i

    idx = np.array([3, 0, 2], np.int32)
    fn = otf.compile(f, [idx], backend=backend)
    np.testing.assert_array_equal(fn(idx), f(idx).numpy())


def test_input_spec_forms_agree():
    spec_types = []
    for spec in ("3x5:f32", (3, 5), tf.TensorSpec((3, 5), tf.float32),
                 np.zeros((3, 5), np.float32)):
        module = otf.import_function(lambda x: x * 2.0, [spec])
        spec_types.append(str(module.main.attributes["function_type"].type))
    assert len(set(spec_types)) == 1
    assert spec_types[0] == "(tensor<3x5xf32>) -> tensor<3x5xf32>"


def test_identity_reshapes_and_converts_are_gone():
    module = otf.import_function(lambda x: tf.cast(tf.reshape(x, (2, 3)), tf.float32) + 1.0,
                                 ["2x3:f32"])
    names = [op.name for op in module.walk()]
    assert "stablehlo.reshape" not in names and "stablehlo.convert" not in names
    assert "stablehlo.add" in names
