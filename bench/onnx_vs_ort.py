"""oxla cpu vs onnxruntime on real ONNX models, timed in one run.

Models are exported by ``torch.onnx.export(dynamo=True)`` from ``transformers`` configs
with random weights (nothing is downloaded): GPT-2, BERT, Llama, ViT, plus a torch CNN
with BatchNorm and ReLU6 and its QDQ version from onnxruntime's ``quantize_static``.
Each model is compiled by oxla (``oxla_frontend_onnx.compile(..., backend="cpu")``) and
loaded by onnxruntime (CPU provider, all optimizations); outputs are checked against each
other, then both are timed in one interleaved run (:func:`timing.interleaved`: ``--rounds``
rounds, in each a settle pause, an untimed call and a block of timed calls per engine, so
load from other processes hits both alike); the median call is reported, with the load.

    .venv/bin/python bench/onnx_vs_ort.py            # default sizes
    .venv/bin/python bench/onnx_vs_ort.py --quick    # small configs, fewer runs
    .venv/bin/python bench/onnx_vs_ort.py --only cnn,cnn-qdq --threads 1

``--threads N`` gives both engines N threads (``OXLA_NUM_THREADS`` before oxla compiles,
onnxruntime's ``intra_op_num_threads``); by default each uses every CPU of the process.
On a machine loaded by other processes, one thread each compares the code per core with
far less noise than two threads, whose time depends on both being scheduled at once.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from timing import interleaved  # noqa: E402

MODEL_NAMES = ("gpt2", "bert", "llama", "vit", "cnn", "cnn-qdq")


def _models(quick: bool):
    import torch
    import transformers as tr

    sys.path.insert(0, os.path.join(HERE, "..", "tests", "frontend_onnx"))
    torch.manual_seed(0)
    layers, hidden, seq = (2, 64, 16) if quick else (4, 256, 64)
    common = dict(num_hidden_layers=layers, hidden_size=hidden,
                  num_attention_heads=4, intermediate_size=4 * hidden)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 1000, (1, seq)).astype(np.int64)

    class Out0(torch.nn.Module):
        def __init__(self, m, vision=False):
            super().__init__()
            self.m, self.vision = m.eval(), vision

        def forward(self, x):
            return (self.m(pixel_values=x) if self.vision else self.m(input_ids=x))[0]

    def cfg(m):
        if hasattr(m.config, "use_cache"):
            m.config.use_cache = False
        return m

    yield "gpt2", Out0(cfg(tr.GPT2LMHeadModel(tr.GPT2Config(
        n_layer=layers, n_embd=hidden, n_head=4, vocab_size=1000, n_positions=256)))), ids
    yield "bert", Out0(cfg(tr.BertModel(tr.BertConfig(vocab_size=1000, **common)))), ids
    yield "llama", Out0(cfg(tr.LlamaForCausalLM(tr.LlamaConfig(
        vocab_size=1000, num_key_value_heads=2, **common)))), ids
    img = 32 if quick else 96
    pix = rng.standard_normal((1, 3, img, img)).astype(np.float32)
    yield "vit", Out0(cfg(tr.ViTModel(tr.ViTConfig(image_size=img, patch_size=16 if not quick
                                                    else 8, **common))), True), pix
    from test_onnx_models import CNN

    cnn = CNN().eval()
    yield "cnn", cnn, rng.standard_normal((8, 3, 64, 64)).astype(np.float32)


def _export(model, x, path):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.from_numpy(x),), path, dynamo=True,
                          input_names=["x"], output_names=["y"], verbose=False)


def _quantize(fp: str, x: np.ndarray, path: str) -> None:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": x}])

        def get_next(self):
            return next(self.it, None)

    quantize_static(fp, path, Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small configs, fewer runs")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds per model")
    ap.add_argument("--budget", type=float, default=0.1,
                    help="seconds per timed block of the slower engine")
    ap.add_argument("--only", default=None,
                    help=f"comma-separated models ({','.join(MODEL_NAMES)})")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for both engines (default: each engine's own, all CPUs)")
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    if only is not None and only - set(MODEL_NAMES):
        ap.error(f"--only: unknown model(s) {', '.join(sorted(only - set(MODEL_NAMES)))}")
    if args.threads is not None:
        if args.threads < 1:
            ap.error("--threads must be at least 1")
        os.environ["OXLA_NUM_THREADS"] = str(args.threads)
    rounds = args.rounds or (2 if args.quick else 8)
    import onnxruntime as ort
    from oxla_frontend_onnx import compile as onnx_compile

    rows = []
    with tempfile.TemporaryDirectory(prefix="oxla-onnx-bench-") as tmp:
        todo = []
        for name, model, x in _models(args.quick):
            if only is not None and name not in only and not (
                    name == "cnn" and "cnn-qdq" in only):
                continue
            path = os.path.join(tmp, f"{name}.onnx")
            _export(model, x, path)
            todo.append((name, path, x))
            if name == "cnn" and (only is None or "cnn-qdq" in only):
                qpath = os.path.join(tmp, "cnn_qdq.onnx")
                _quantize(path, x, qpath)
                todo.append(("cnn-qdq", qpath, x))
        so = ort.SessionOptions()
        if args.threads is not None:
            so.intra_op_num_threads = args.threads
        for name, path, x in todo:
            if only is not None and name not in only:
                continue
            fn = onnx_compile(path, "cpu")
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            feed = {sess.get_inputs()[0].name: x}
            got, ref = fn(x)[0], sess.run(None, feed)[0]
            err = float(np.abs(got.astype(np.float64) - ref).max() / max(np.abs(ref).max(),
                                                                         1e-30))
            for _ in range(3):
                fn(x)
                sess.run(None, feed)
            times = interleaved({"oxla": lambda: fn(x),  # noqa: B023
                                 "onnxruntime": lambda: sess.run(None, feed)},  # noqa: B023
                                rounds, args.budget, settle_s=0.05, max_calls=200)
            t_ox, t_ort = (float(np.median(times[k])) for k in ("oxla", "onnxruntime"))
            rows.append((name, t_ox * 1e3, t_ort * 1e3, err))
            print(f"{name:8s} oxla {t_ox * 1e3:9.3f} ms  onnxruntime {t_ort * 1e3:9.3f} ms  "
                  f"oxla/ort {t_ox / t_ort:5.2f}x  rel err {err:.1e}  load {os.getloadavg()[0]:.2f}",
                  flush=True)
    worst = max(r[1] / r[2] for r in rows)
    threads = args.threads or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                               else os.cpu_count())
    print(f"worst ratio oxla/onnxruntime: {worst:.2f}x ({threads} threads each, "
          f"{rounds} interleaved rounds, median call)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
