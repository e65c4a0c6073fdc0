"""Real models exported by ``torch.onnx.export`` (dynamo and TorchScript exporters),
compiled and run through the CLI on the cpu backend and matched against onnxruntime:
``transformers`` GPT-2, BERT, Llama and ViT from small configs with random weights, a
torch CNN with BatchNorm and ReLU6, BERT with a dynamic batch and sequence at two sizes,
and the CNN quantized to QDQ by onnxruntime's ``quantize_static``."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from conftest import need

ort = need("onnxruntime")
torch = need("torch")
need("onnxscript")
tr = need("transformers")

from oxla import plugins  # noqa: E402

pytestmark = pytest.mark.skipif("cpu" not in plugins.backends(), reason="needs oxla-backend-cpu")

TOL = 1e-4
"""max |error| <= TOL * max |reference| per output."""


def _oxla(*args: str) -> subprocess.CompletedProcess:
    exe = os.path.join(os.path.dirname(sys.executable), "oxla")
    r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return r


def _ort(path: str, x: np.ndarray) -> np.ndarray:
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x})[0]


def _through_cli(path: str, x: np.ndarray, tmp: str, *specs: str) -> np.ndarray:
    stem = os.path.splitext(path)[0] + "_".join(s.replace(":", "") for s in specs)
    xin, out = f"{stem}_x.npy", f"{stem}_y.npy"
    np.save(xin, x)
    spec_args = [a for s in specs for a in ("--input-spec", s)]
    _oxla("compile", path, "--backend", "cpu", "-o", f"{stem}.oxla", *spec_args)
    _oxla("run", f"{stem}.oxla", "--input", xin, "--output", out)
    return np.load(out)


def _check(path: str, x: np.ndarray, tmp: str, *specs: str) -> float:
    got = _through_cli(path, x, tmp, *specs)
    ref = _ort(path, x)
    assert got.shape == ref.shape and got.dtype == ref.dtype
    err = float(np.abs(got.astype(np.float64) - ref).max())
    assert err <= TOL * float(np.abs(ref).max()), (path, err)
    return err


class _Out0(torch.nn.Module):
    """First output of a transformers model (``input_ids`` or ``pixel_values`` in)."""

    def __init__(self, model: torch.nn.Module, vision: bool) -> None:
        super().__init__()
        self.model, self.vision = model, vision

    def forward(self, x):
        out = self.model(pixel_values=x) if self.vision else self.model(input_ids=x)
        return out[0]


def _small(name: str) -> tuple[torch.nn.Module, np.ndarray]:
    torch.manual_seed(0)
    common = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                  intermediate_size=128)
    ids = np.random.default_rng(0).integers(0, 500, (2, 16)).astype(np.int64)
    if name == "gpt2":
        m = tr.GPT2LMHeadModel(tr.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=500,
                                             n_positions=64))
    elif name == "bert":
        m = tr.BertModel(tr.BertConfig(vocab_size=500, **common))
    elif name == "llama":
        m = tr.LlamaForCausalLM(tr.LlamaConfig(vocab_size=500, num_key_value_heads=2,
                                               **common))
    else:
        m = tr.ViTModel(tr.ViTConfig(image_size=32, patch_size=8, **common))
        ids = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    if hasattr(m.config, "use_cache"):
        m.config.use_cache = False
    return _Out0(m.eval(), name == "vit").eval(), ids


def _export(model, x: np.ndarray, path: str, dynamo: bool, dynamic=None) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = {"dynamic_shapes": dynamic} if dynamic else {}
        torch.onnx.export(model, (torch.from_numpy(x),), path, dynamo=dynamo,
                          input_names=["x"], output_names=["y"], verbose=False, **kw)
    return path


class CNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn
        self.c1, self.b1 = nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16)
        self.c2, self.b2 = nn.Conv2d(16, 32, 3, stride=2, padding=1, groups=2), \
            nn.BatchNorm2d(32)
        self.pool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(32, 10)

    def forward(self, x):
        f = torch.nn.functional
        x = f.relu6(self.b1(self.c1(x)))
        x = f.relu6(self.b2(self.c2(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def _cnn() -> tuple[torch.nn.Module, np.ndarray]:
    torch.manual_seed(0)
    m = CNN().eval()
    with torch.no_grad():
        for bn in (m.b1, m.b2):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
    return m, np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)


@pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])
def test_cnn_batchnorm_relu6(dynamo, tmp_path):
    m, x = _cnn()
    _check(_export(m, x, str(tmp_path / "cnn.onnx"), dynamo), x, str(tmp_path))


@pytest.mark.parametrize("name,dynamo", [("gpt2", True), ("bert", True), ("llama", True),
                                         ("vit", True), ("bert", False)])
def test_transformers_model(name, dynamo, tmp_path):
    """GPT-2 and Llama do not export with the TorchScript exporter in torch 2.13
    (``aten::diff`` in transformers' masks has no TorchScript ONNX symbolic)."""
    m, x = _small(name)
    _check(_export(m, x, str(tmp_path / f"{name}.onnx"), dynamo), x, str(tmp_path))


def test_dynamic_batch_and_sequence_at_two_sizes(tmp_path):
    m, x = _small("bert")
    dim = torch.export.Dim
    path = _export(m, x, str(tmp_path / "bert_dyn.onnx"), True,
                   {"x": {0: dim("batch", max=64), 1: dim("seq", max=64)}})
    import onnx

    dims = onnx.load(path).graph.input[0].type.tensor_type.shape.dim
    assert all(d.dim_param for d in dims)  # both dims symbolic in the file
    rng = np.random.default_rng(1)
    for shape in ((2, 16), (3, 24)):
        ids = rng.integers(0, 500, shape).astype(np.int64)
        _check(path, ids, str(tmp_path), f"{shape[0]}x{shape[1]}:i64")


def test_qdq_cnn_within_one_quantization_step(tmp_path):
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    m, x = _cnn()
    fp = _export(m, x, str(tmp_path / "cnn_fp.onnx"), False)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(2)
            self.it = iter([{"x": rng.standard_normal((2, 3, 32, 32)).astype(np.float32)}
                            for _ in range(4)])

        def get_next(self):
            return next(self.it, None)

    qpath = str(tmp_path / "cnn_qdq.onnx")
    quantize_static(fp, qpath, Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    import onnx
    from onnx import numpy_helper

    q = onnx.load(qpath)
    assert {"QuantizeLinear", "DequantizeLinear"} <= {n.op_type for n in q.graph.node}
    inits = {t.name: numpy_helper.to_array(t) for t in q.graph.initializer}
    last = [n for n in q.graph.node if n.op_type == "DequantizeLinear"][-1]
    step = float(inits[last.input[1]].max())
    got = _through_cli(qpath, x, str(tmp_path))
    assert np.abs(got - _ort(qpath, x)).max() <= step + 1e-6
