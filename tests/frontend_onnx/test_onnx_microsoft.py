"""``com.microsoft`` ops against onnxruntime, which implements them."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import need
from onnx import TensorProto, helper
from onnx_helpers import model, ort_run
from oxla_frontend_onnx import compile as onnx_compile

need("onnxruntime")

F = TensorProto.FLOAT
MS = {"com.microsoft": 1}


def _ms(op: str, ins: list[str], outs: list[str], **attrs):
    return helper.make_node(op, ins, outs, domain="com.microsoft", **attrs)


def _check(m, *args, backend="interpreter", rtol=1e-5, atol=1e-5):
    got = onnx_compile(m, backend)(*args)
    for g, r in zip(got, ort_run(m, *args)):
        np.testing.assert_allclose(g, r, rtol=rtol, atol=atol)


RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 4, 8)).astype(np.float32)


@pytest.mark.parametrize("op", ["Gelu", "FastGelu", "BiasGelu", "QuickGelu"])
def test_gelus(op, backend):
    ins = ["x", "bias"] if op in ("FastGelu", "BiasGelu") else ["x"]
    m = model([_ms(op, ins, ["y"])], [("x", F, [2, 4, 8])], [("y", F, [2, 4, 8])],
              {"bias": RNG.standard_normal(8).astype(np.float32)} if len(ins) == 2 else None,
              extra_opsets=MS)
    _check(m, X, backend=backend)


def test_fused_matmul(backend):
    w = RNG.standard_normal((2, 6, 8)).astype(np.float32)
    m = model([_ms("FusedMatMul", ["x", "w"], ["y"], transB=1, alpha=0.5)],
              [("x", F, [2, 4, 8])], [("y", F, [2, 4, 6])], {"w": w}, extra_opsets=MS)
    _check(m, X, backend=backend)


@pytest.mark.parametrize("op", ["SkipLayerNormalization", "SkipSimplifiedLayerNormalization"])
def test_skip_layer_norm(op, backend):
    inits = {"skip": RNG.standard_normal((2, 4, 8)).astype(np.float32),
             "gamma": RNG.standard_normal(8).astype(np.float32),
             "beta": RNG.standard_normal(8).astype(np.float32),
             "bias": RNG.standard_normal(8).astype(np.float32)}
    ins = ["x", "skip", "gamma", "beta", "bias"] if op == "SkipLayerNormalization" else \
        ["x", "skip", "gamma", "bias"]
    m = model([_ms(op, ins, ["y"], epsilon=1e-5)], [("x", F, [2, 4, 8])],
              [("y", F, [2, 4, 8])], {k: inits[k] for k in ins[1:]}, extra_opsets=MS)
    _check(m, X, backend=backend, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("unidirectional", [0, 1])
def test_attention_packed_qkv_with_mask(unidirectional, backend):
    w = (RNG.standard_normal((8, 24)) * 0.3).astype(np.float32)
    bias = RNG.standard_normal(24).astype(np.float32)
    mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], np.int32)
    m = model([_ms("Attention", ["x", "w", "b", "mask"], ["y"], num_heads=2,
                   unidirectional=unidirectional)],
              [("x", F, [2, 4, 8]), ("mask", TensorProto.INT32, [2, 4])],
              [("y", F, [2, 4, 8])], {"w": w, "b": bias}, extra_opsets=MS)
    _check(m, X, mask, backend=backend, rtol=1e-4, atol=1e-5)
