"""What TensorFlow's bridge writes that is not StableHLO but has an exact StableHLO
meaning: ``mhlo.erf`` and full-size ``set_dimension_size`` (found by the TF sweep)."""

from __future__ import annotations

import pytest

pytest.importorskip("oxla_frontend_tf")

import numpy as np
from oxla_frontend_tf.bridge_text import legalize_bridge_text

SET_DIM = """  %c = stablehlo.constant dense<{n}> : tensor<i32> loc(#loc3)
  %5 = stablehlo.set_dimension_size %4, %c, dim = 1 : (tensor<3x6xf32>, tensor<i32>) -> tensor<3x6xf32> loc(#loc14)"""


def test_mhlo_erf_becomes_chlo_erf():
    assert legalize_bridge_text("%1 = mhlo.erf %0 : tensor<7xf32> loc(#loc6)") == (
        "%1 = chlo.erf %0 : tensor<7xf32> -> tensor<7xf32> loc(#loc6)")
    assert legalize_bridge_text('%1 = "mhlo.erf"(%0) : (tensor<2xf64>) -> tensor<2xf64>') == (
        '%1 = "chlo.erf"(%0) : (tensor<2xf64>) -> tensor<2xf64>')


def test_full_size_set_dimension_size_is_the_identity():
    out = legalize_bridge_text(SET_DIM.format(n=6))
    assert "set_dimension_size" not in out
    assert "%5 = stablehlo.reshape %4 : (tensor<3x6xf32>) -> tensor<3x6xf32> loc(#loc14)" in out


@pytest.mark.parametrize("text", [
    SET_DIM.format(n=4),  # a real dynamic size: left for the importer to refuse
    SET_DIM.format(n=6).replace("-> tensor<3x6xf32>", "-> tensor<3x?xf32>"),
    SET_DIM.format(n=6).replace("%c = ", "%d = "),  # no constant known
])
def test_other_set_dimension_sizes_are_left_alone(text):
    assert legalize_bridge_text(text) == text


def _tf_functions():
    import tensorflow as tf

    return {
        "erf": (tf.math.erf, (7,)),
        "sort": (lambda x: (tf.sort(x), tf.argsort(x, stable=True)), (3, 6)),
        "top_k": (lambda x: tuple(tf.math.top_k(x, 3)), (3, 8)),
        "argmax": (lambda x: (tf.math.argmax(x, 1), tf.math.argmin(x, 0)), (3, 4)),
        "truncated_normal": (lambda s: tf.random.stateless_truncated_normal(
            (3, 4), tf.cast(s[:2] * 0 + [3, 7], tf.int32)), (2,)),
    }


@pytest.mark.parametrize("name", ["erf", "sort", "top_k", "argmax", "truncated_normal"])
def test_functions_with_them_match_tensorflow(backend, name):
    pytest.importorskip("tensorflow")
    import oxla_frontend_tf as otf
    import tensorflow as tf

    fn, shape = _tf_functions()[name]
    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    got = tf.nest.flatten(otf.compile(fn, [x], backend=backend)(x))
    # the program oxla compiles is TensorFlow's XLA lowering: compare with that
    want = tf.nest.flatten(tf.function(fn, jit_compile=True)(tf.constant(x)))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-5, atol=1e-6)
