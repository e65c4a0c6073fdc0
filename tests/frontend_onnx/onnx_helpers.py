"""Small ONNX models built with ``onnx.helper`` and an onnxruntime runner."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(nodes: Sequence[onnx.NodeProto], inputs: Sequence[tuple[str, int, Sequence]],
          outputs: Sequence[tuple[str, int, Sequence | None]],
          initializers: dict[str, np.ndarray] | None = None, opset: int = 18,
          extra_opsets: dict[str, int] | None = None) -> onnx.ModelProto:
    """A checked model: ``inputs``/``outputs`` are (name, TensorProto type, shape) with
    str dims symbolic."""
    g = helper.make_graph(
        list(nodes), "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()])
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in
                                              (extra_opsets or {}).items()]
    m = helper.make_model(g, opset_imports=ops)
    m.ir_version = 8
    return m


def ort_run(m: onnx.ModelProto, *args: np.ndarray) -> list[np.ndarray]:
    import onnxruntime as ort

    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(s.run(None, {i.name: a for i, a in zip(s.get_inputs(), args)}))


def mlp() -> onnx.ModelProto:
    """x[batch, 8] -> Gemm -> Relu -> MatMul + Add -> Softmax, batch symbolic."""
    rng = np.random.default_rng(0)
    inits = {"w1": rng.standard_normal((16, 8)).astype(np.float32),
             "b1": rng.standard_normal(16).astype(np.float32),
             "w2": rng.standard_normal((16, 4)).astype(np.float32),
             "b2": rng.standard_normal(4).astype(np.float32)}
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1, name="fc1"),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["m"]),
             helper.make_node("Add", ["m", "b2"], ["a"]),
             helper.make_node("Softmax", ["a"], ["y"], axis=-1)]
    return model(nodes, [("x", TensorProto.FLOAT, ["batch", 8])],
                 [("y", TensorProto.FLOAT, ["batch", 4])], inits)
