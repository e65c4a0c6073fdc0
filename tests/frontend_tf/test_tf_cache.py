"""TensorFlow names what it lowers with trace counters (``@a_inference_call_49__.7``,
private ``@a_inference_inner_31__.5``); the importer strips them, so that tracing the same
model again gives the same module text and hits oxla's compile cache."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from oxla_frontend_tf.importer import import_function  # noqa: E402
from oxla_frontend_tf.tidy import normalize_names  # noqa: E402

from oxla.interpreter import run_function  # noqa: E402
from oxla.ir import attributes as A  # noqa: E402
from oxla.ir import parse_module  # noqa: E402

X = np.random.default_rng(3).standard_normal((2, 8)).astype(np.float32)


def _keras_model():
    """A fresh model each call (new layer names, new trace), same weights."""
    tf.keras.utils.set_random_seed(0)
    return tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, "relu"),
                                tf.keras.layers.Dense(4)])


def _looped():
    """A fresh ``tf.function`` each call: a while loop calling a non-inlined function,
    so the module keeps private functions named with trace counters."""

    @tf.function(experimental_attributes={"_noinline": True})
    def inner(x):
        return tf.nn.relu(x) * 0.5

    @tf.function
    def looped(x):
        _, y = tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, inner(x) + 1.0),
                             [tf.constant(0), x])
        return y

    return looped


def _names(module) -> list[str]:
    return [A.to_python(f.attributes["sym_name"]) for f in module.functions]


@pytest.mark.parametrize("make", [_keras_model, _looped], ids=["keras", "while_call"])
def test_two_traces_give_the_same_text(make) -> None:
    a, b = (import_function(make(), [X.shape]) for _ in range(2))
    assert str(a) == str(b)
    assert not any(c.isdigit() for c in str(a.name))
    np.testing.assert_allclose(run_function(a, "main", [X])[0], make()(X).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_private_functions_renamed_with_their_calls() -> None:
    m = import_function(_looped(), [X.shape])
    names = _names(m)
    assert "main" in names and len(names) > 1
    assert all(n == "main" or n.rsplit("_", 1)[1].isdigit() for n in names)
    calls = {op.attributes["callee"].root for op in m.walk() if op.name == "func.call"}
    assert calls and calls <= set(names)
    want = _looped()(X).numpy()
    np.testing.assert_allclose(run_function(m, "main", [X])[0], want, rtol=1e-5, atol=1e-6)


def test_normalize_names_on_tf_text() -> None:
    text = """
module @a_inference_call_49__.7 {
  func.func private @a_inference_inner_31__.5(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = func.call @a_inference_inner_31__.5(%x) : (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
"""
    m = parse_module(text)
    assert normalize_names(m) == {"a_inference_inner_31__.5": "a_inference_inner_0"}
    assert m.name == "a_inference_call"
    assert "@a_inference_inner_0(" in str(m) and "31" not in str(m)
    x = np.arange(2, dtype=np.float32)
    np.testing.assert_array_equal(run_function(m, "main", [x])[0], x)


def test_second_trace_hits_the_cpu_compile_cache(tmp_path, monkeypatch) -> None:
    from oxla import plugins

    if "cpu" not in plugins.backends():
        pytest.skip("the cpu backend (oxla-backend-cpu) is not installed")
    import oxla

    monkeypatch.setenv("OXLA_CACHE_DIR", str(tmp_path))
    first = oxla.compile(import_function(_keras_model(), [X.shape]), backend="cpu")
    model = _keras_model()
    second = oxla.compile(import_function(model, [X.shape]), backend="cpu")
    assert first.stats["cache"] != "hit" and second.stats["cache"] == "hit"
    np.testing.assert_allclose(second(X)[0], model(X).numpy(), rtol=1e-5, atol=1e-6)
