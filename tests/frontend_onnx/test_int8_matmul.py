"""Integer matrix products of the ONNX frontend (MatMulInteger, QLinearMatMul, and the
QDQ MatMul: DequantizeLinear x DequantizeLinear) as one 8-bit dot with zero-point
corrections: exact against numpy for the integer ops, within one quantization step of
onnxruntime for QDQ; signed/unsigned mixes and zero points included."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import oxla  # noqa: E402

RNG = np.random.default_rng(17)
T8 = {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8}


def _model(nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "g", inputs, outputs, [numpy_helper.from_array(v, k)
                                                         for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _ints(shape, dt):
    info = np.iinfo(dt)
    return RNG.integers(info.min, info.max + 1, shape).astype(dt)


@pytest.mark.parametrize("xt,wt", [(np.uint8, np.int8), (np.int8, np.int8),
                                   (np.uint8, np.uint8), (np.int8, np.uint8)])
@pytest.mark.parametrize("m,k,n", [(5, 7, 3), (33, 130, 50)])
def test_matmul_integer_is_exact(xt, wt, m, k, n):
    w, zx, zw = _ints((k, n), wt), _ints((), xt), _ints((n,), wt)
    node = helper.make_node("MatMulInteger", ["x", "w", "zx", "zw"], ["y"])
    model = _model([node], [helper.make_tensor_value_info("x", T8[xt], [m, k])],
                   [helper.make_tensor_value_info("y", TensorProto.INT32, [m, n])],
                   {"w": w, "zx": zx, "zw": zw})
    x = _ints((m, k), xt)
    exe = oxla.compile(model, backend="cpu")
    got = np.asarray(exe(x)[0])
    ref = (x.astype(np.int64) - zx) @ (w.astype(np.int64) - zw)
    assert np.array_equal(got, ref.astype(np.int32))
    assert "oxla_igemm_" in exe.executable.llvm_ir or not _host_has_int8_gemm()


def _host_has_int8_gemm() -> bool:
    ig = pytest.importorskip("oxla_backend_cpu.int8_gemm")
    return bool(ig.host_isas())


@pytest.mark.parametrize("xt", [np.uint8, np.int8])
def test_qdq_matmul_matches_onnxruntime(xt):
    ort = pytest.importorskip("onnxruntime")
    m, k, n = 16, 96, 40
    wq = _ints((k, n), np.int8)
    sw = (RNG.random(n) * 0.02 + 0.005).astype(np.float32)
    sx, zx = np.float32(0.03), np.array(7 if xt == np.uint8 else -3, xt)
    sy, zy = np.float32(0.5), np.array(0 if xt == np.int8 else 128, xt)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
        helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["wd"], axis=1),
        helper.make_node("MatMul", ["xd", "wd"], ["y"]),
        helper.make_node("QuantizeLinear", ["y", "sy", "zy"], ["yq"]),
        helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["out"]),
    ]
    inits = {"sx": np.array(sx), "zx": zx, "wq": wq, "sw": sw,
             "zw": np.zeros(n, np.int8), "sy": np.array(sy), "zy": zy}
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                   [helper.make_tensor_value_info("out", TensorProto.FLOAT, [m, n])], inits)
    x = (RNG.standard_normal((m, k)) * 2).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    exe = oxla.compile(model, backend="cpu")
    got = np.asarray(exe(x)[0])
    assert np.abs(got - ref).max() <= sy * 1.0001  # within one quantization step
    assert "oxla_igemm_" in exe.executable.llvm_ir or not _host_has_int8_gemm()
