"""ONNX integer convolutions (ConvInteger, QLinearConv) on cpu run as 8-bit im2col + the
integer GEMM (:mod:`oxla_backend_cpu.int8_conv`): ConvInteger bit for bit against the
interpreter, QLinearConv within one quantization step of onnxruntime (zero points,
per-channel weight scales, bias, padding, strides, dilations, groups)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import oxla  # noqa: E402

RNG = np.random.default_rng(21)
T8 = {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8}


def _model(node, x_info, y_info, inits):
    g = helper.make_graph([node], "g", [x_info], [y_info],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _ints(shape, dt, lo=None, hi=None):
    info = np.iinfo(dt)
    lo, hi = info.min if lo is None else lo, info.max if hi is None else hi
    return RNG.integers(lo, hi + 1, shape).astype(dt)


def _uses_int8_gemm(exe) -> bool:
    ig = pytest.importorskip("oxla_backend_cpu.int8_gemm")
    return "oxla_igemm_" in exe.executable.llvm_ir or not ig.host_isas()


@pytest.mark.parametrize("xt,wt,zx,zw", [(np.uint8, np.uint8, 131, 128),
                                         (np.int8, np.int8, -5, 0),
                                         (np.uint8, np.int8, 0, None)])
@pytest.mark.parametrize("attrs", [dict(pads=[1, 1, 1, 1]),
                                   dict(strides=[2, 1], pads=[0, 2, 1, 0], dilations=[1, 2]),
                                   dict(group=2, pads=[1, 0, 1, 0])])
def test_conv_integer_matches_the_interpreter(xt, wt, zx, zw, attrs):
    n, c, h, w, f = 2, 6, 9, 10, 4
    g = attrs.get("group", 1)
    wv = _ints((f, c // g, 3, 3), wt)
    inits = {"w": wv, "zx": np.array(zx, xt)}
    names = ["x", "w", "zx"]
    if zw is not None:
        inits["zw"] = np.array(zw, wt)
        names.append("zw")
    node = helper.make_node("ConvInteger", names, ["y"], kernel_shape=[3, 3], **attrs)
    model = _model(node, helper.make_tensor_value_info("x", T8[xt], [n, c, h, w]),
                   helper.make_tensor_value_info("y", TensorProto.INT32, ["n", "f", "h", "w"]), inits)
    x = _ints((n, c, h, w), xt)
    exe = oxla.compile(model, backend="cpu")
    ref = oxla.compile(model, backend="interpreter")
    assert np.array_equal(np.asarray(exe(x)[0]), np.asarray(ref(x)[0]))
    assert _uses_int8_gemm(exe)


@pytest.mark.parametrize("xt", [np.uint8, np.int8])
@pytest.mark.parametrize("shape,f,attrs", [
    ((1, 16, 14, 14), 24, dict(pads=[1, 1, 1, 1])),
    ((2, 8, 11, 7), 6, dict(strides=[2, 2], pads=[1, 1, 1, 1], group=2)),
    ((1, 64, 12, 12), 32, dict(pads=[1, 1, 1, 1], dilations=[2, 2])),
])
def test_qlinear_conv_matches_onnxruntime(xt, shape, f, attrs):
    ort = pytest.importorskip("onnxruntime")
    n, c, h, w = shape
    g = attrs.get("group", 1)
    wq = _ints((f, c // g, 3, 3), np.int8, -127, 127)
    sw = (RNG.random(f) * 0.01 + 0.002).astype(np.float32)
    sx, zx = np.float32(0.02), np.array(128 if xt == np.uint8 else -3, xt)
    sy, zy = np.float32(0.3), np.array(120 if xt == np.uint8 else 2, xt)
    bias = RNG.integers(-2000, 2000, f).astype(np.int32)
    node = helper.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy",
                                            "bias"], ["y"], kernel_shape=[3, 3], **attrs)
    inits = {"sx": sx, "zx": zx, "w": wq, "sw": sw, "zw": np.zeros(f, np.int8),
             "sy": sy, "zy": zy, "bias": bias}
    model = _model(node, helper.make_tensor_value_info("x", T8[xt], list(shape)),
                   helper.make_tensor_value_info("y", T8[xt], ["n", "f", "h", "w"]), inits)
    x = _ints(shape, xt)
    exe = oxla.compile(model, backend="cpu")
    got = np.asarray(exe(x)[0]).astype(np.int64)
    sess = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0].astype(np.int64)
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1
    assert _uses_int8_gemm(exe)
