"""The broad torch suite: oxla ``cpu`` vs torch eager, ``torch.compile`` (inductor) and
onnxruntime on 12 models from tiny to GPT-2-small scale.

Not a test. Models (random weights, seed 0, f32, eval mode, nothing downloaded): an MLP,
a ResNet-18-style CNN, a MobileNetV2-style CNN (inverted residuals, depthwise), a small
UNet, a 1-D conv audio net, an LSTM, a GRU, ``nn.TransformerEncoder``, a 4-layer
hidden-256 GPT-2 and BERT, a small ViT (``transformers``), and GPT-2 small. Each engine
is built and called as in ``torch_models.py`` (its engine wrappers are reused: oxla
through ``oxla_frontend_torch.compile`` with a fresh cache, inductor's first call is its
compile, onnxruntime through ``torch.onnx.export``). Every output is checked against
eager (an engine whose largest error exceeds 1e-3 of the largest eager magnitude is
marked MISMATCH and left out of the best anchor); timing is one interleaved run
(engines take turns in rounds, after a pause for spinning thread pools); figures are
median per-call ratios oxla / best anchor of the same run. One line per model, then
the geomean and the models above 1.2x; ``--json`` writes everything.

The machine may be shared: ratios, not absolute times, are the figures to read.

Usage::

    python bench/torch_suite.py [--quick] [--only NAME,...] [--rounds N] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
import warnings

import torch
from torch import nn
from torch_models import _check, _eager, _inductor, _interleaved, _ort
from torch_models import _oxla as _oxla_engine

# --- models ---------------------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self, d=256):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d), nn.ReLU(),
                                 nn.Linear(d, 10))

    def forward(self, x):
        return self.net(x)


class _Basic(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """ResNet-18's layout (2 basic blocks per stage, 64..512 channels)."""

    def __init__(self, width=64):
        super().__init__()
        w = width
        self.stem = nn.Sequential(nn.Conv2d(3, w, 7, 2, 3, bias=False), nn.BatchNorm2d(w),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], w
        for i, c in enumerate((w, 2 * w, 4 * w, 8 * w)):
            blocks += [_Basic(cin, c, 1 if i == 0 else 2), _Basic(c, c, 1)]
            cin = c
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, 1000)

    def forward(self, x):
        return self.fc(self.blocks(self.stem(x)).mean((2, 3)))


class _InvRes(nn.Module):
    def __init__(self, cin, cout, stride, expand=6):
        super().__init__()
        h = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.net = nn.Sequential(
            nn.Conv2d(cin, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU6(),
            nn.Conv2d(h, h, 3, stride, 1, groups=h, bias=False), nn.BatchNorm2d(h), nn.ReLU6(),
            nn.Conv2d(h, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.net(x)
        return x + y if self.use_res else y


class MobileNetV2(nn.Module):
    """MobileNetV2's first stages (width 1.0) and a classifier."""

    def __init__(self):
        super().__init__()
        cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1)]
        layers = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()]
        cin = 32
        for t, c, n, s in cfg:
            for i in range(n):
                layers.append(_InvRes(cin, c, s if i == 0 else 1, t))
                cin = c
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, 1000)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))


class UNet(nn.Module):
    """A 3-level UNet (conv-BN-ReLU pairs, max-pool down, transposed-conv up)."""

    def __init__(self, c=16):
        super().__init__()

        def dbl(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, 1, 1), nn.BatchNorm2d(o), nn.ReLU(),
                                 nn.Conv2d(o, o, 3, 1, 1), nn.BatchNorm2d(o), nn.ReLU())
        self.d1, self.d2, self.d3 = dbl(3, c), dbl(c, 2 * c), dbl(2 * c, 4 * c)
        self.u2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, 2)
        self.c2 = dbl(4 * c, 2 * c)
        self.u1 = nn.ConvTranspose2d(2 * c, c, 2, 2)
        self.c1 = dbl(2 * c, c)
        self.out = nn.Conv2d(c, 2, 1)

    def forward(self, x):
        a = self.d1(x)
        b = self.d2(nn.functional.max_pool2d(a, 2))
        c = self.d3(nn.functional.max_pool2d(b, 2))
        b = self.c2(torch.cat([self.u2(c), b], 1))
        return self.out(self.c1(torch.cat([self.u1(b), a], 1)))


class AudioConv(nn.Module):
    """A wav2vec-style 1-D conv feature extractor and a projection."""

    def __init__(self):
        super().__init__()
        chans = [(1, 64, 10, 5), (64, 64, 3, 2), (64, 128, 3, 2), (128, 128, 3, 2)]
        self.convs = nn.Sequential(*[m for i, o, k, s in chans
                                     for m in (nn.Conv1d(i, o, k, s), nn.GELU())])
        self.proj = nn.Linear(128, 256)

    def forward(self, x):
        return self.proj(self.convs(x).transpose(1, 2))


class RNN(nn.Module):
    def __init__(self, kind, d=128, h=256):
        super().__init__()
        self.rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(d, h, num_layers=2,
                                                           batch_first=True)
        self.head = nn.Linear(h, 10)

    def forward(self, x):
        return self.head(self.rnn(x)[0][:, -1])


class Encoder(nn.Module):
    def __init__(self, d=256, layers=4):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(x)


class HF(nn.Module):
    def __init__(self, kind, **cfg):
        super().__init__()
        import transformers

        self.kind = kind
        if kind == "gpt2":
            self.m = transformers.GPT2LMHeadModel(transformers.GPT2Config(use_cache=False,
                                                                          **cfg))
        elif kind == "bert":
            self.m = transformers.BertModel(transformers.BertConfig(**cfg))
        else:
            self.m = transformers.ViTModel(transformers.ViTConfig(**cfg))

    def forward(self, x):
        if self.kind == "gpt2":
            return (self.m(input_ids=x).logits,)
        if self.kind == "bert":
            return (self.m(input_ids=x).last_hidden_state,)
        return (self.m(pixel_values=x).last_hidden_state,)


def _ids(b, s, vocab):
    return torch.randint(0, vocab, (b, s), generator=torch.Generator().manual_seed(1))


def _x(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(1))


SMALL_TX = dict(n_layer=4, n_embd=256, n_head=4, vocab_size=8192)
SMALL_BERT = dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4,
                  intermediate_size=1024, vocab_size=8192)
SMALL_VIT = dict(image_size=96, patch_size=16, num_hidden_layers=4, hidden_size=192,
                 num_attention_heads=3, intermediate_size=768)

MODELS = {
    "mlp_b8": (lambda: MLP(), lambda: _x(8, 256)),
    "resnet18_4x128": (lambda: ResNet18(), lambda: _x(4, 3, 128, 128)),
    "mobilenetv2_2x96": (lambda: MobileNetV2(), lambda: _x(2, 3, 96, 96)),
    "unet_1x64": (lambda: UNet(), lambda: _x(1, 3, 64, 64)),
    "audio_conv1d": (lambda: AudioConv(), lambda: _x(2, 1, 16000)),
    "lstm_b8_s32": (lambda: RNN("lstm"), lambda: _x(8, 32, 128)),
    "gru_b8_s32": (lambda: RNN("gru"), lambda: _x(8, 32, 128)),
    "encoder_b2_s128": (lambda: Encoder(), lambda: _x(2, 128, 256)),
    "gpt2_4l256_b2_s128": (lambda: HF("gpt2", **SMALL_TX), lambda: _ids(2, 128, 8192)),
    "bert_4l256_b2_s128": (lambda: HF("bert", **SMALL_BERT), lambda: _ids(2, 128, 8192)),
    "vit_tiny_b2": (lambda: HF("vit", **SMALL_VIT), lambda: _x(2, 3, 96, 96)),
    "gpt2_small_b1_s64": (lambda: HF("gpt2"), lambda: _ids(1, 64, 50257)),
}
QUICK = ("mlp_b8", "mobilenetv2_2x96", "lstm_b8_s32", "gpt2_4l256_b2_s128")
ENGINES = ("eager", "inductor", "onnxruntime")


def run_model(name: str, rounds: int, budget: float, tmp: str, inductor: bool) -> dict:
    make, inputs = MODELS[name]
    torch.manual_seed(0)
    model = make().eval()
    x = inputs()
    engines = {"eager": _eager(model, x)}
    engines["oxla"] = _oxla_engine(model, x, tempfile.mkdtemp(dir=tmp, prefix="oxla_"))
    if inductor:
        engines["inductor"] = _inductor(model, x)
    engines["onnxruntime"] = _ort(model, x, tmp)
    ref = engines["eager"].call()
    row: dict = {"model": name, "compile_s": {}, "notes": {}, "check": {}}
    calls, slowest = {}, 0.0
    for k, e in engines.items():
        row["compile_s"][k] = e.compile_s
        if e.call is None:
            row["notes"][k] = e.note
            continue
        if k != "eager":
            t0 = time.perf_counter()
            c = _check(ref, e.call())
            slowest = max(slowest, time.perf_counter() - t0)
            row["check"][k] = c
            if "error" in c or c["rel_to_max"] > 1e-3:
                row["notes"][k] = f"MISMATCH {c}"
                if k != "oxla":
                    continue
        calls[k] = e.call
    med = _interleaved(calls, rounds, budget, 0.3, slowest)
    row["median_s"] = med
    anchors = {k: v for k, v in med.items() if k != "oxla"}
    if "oxla" in med and "MISMATCH" not in row["notes"].get("oxla", "") and anchors:
        best = min(anchors, key=anchors.get)
        row["best_anchor"], row["ratio_best"] = best, med["oxla"] / anchors[best]
        row["ratio"] = {k: med["oxla"] / v for k, v in anchors.items()}
    return row


def _line(row: dict) -> str:
    r = row.get("ratio", {})
    parts = "  ".join(f"{k} {r[k]:5.2f}x" if k in r else f"{k} {'failed' if k in row['notes'] else '-':>6s}"
                      for k in ENGINES)
    best = f"{row['ratio_best']:5.2f}x ({row['best_anchor']})" if "ratio_best" in row else \
        row["notes"].get("oxla", "-")[:60]
    ms = " ".join(f"{k}={v * 1e3:.2f}" for k, v in row.get("median_s", {}).items())
    return f"{row['model']:22s} oxla/best {best:22s} oxla/{parts}   ms: {ms}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    p.add_argument("--only", default=None, help="comma-separated model names")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--no-inductor", action="store_true", help="skip torch.compile")
    p.add_argument("--json", default=None, help="write results here")
    a = p.parse_args(argv)
    names = a.only.split(",") if a.only else (list(QUICK) if a.quick else list(MODELS))
    rounds = a.rounds or (2 if a.quick else 3)
    budget = 0.2 if a.quick else 0.5
    warnings.filterwarnings("ignore")
    res: dict = {"cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                 "load_avg_start": os.getloadavg(), "torch": torch.__version__, "rows": []}
    print(f"latency ratios oxla / engine (median, same interleaved run; <1 = oxla faster); "
          f"load {res['load_avg_start'][0]:.2f}, {os.cpu_count()} cpus", flush=True)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for n in names:
            row = run_model(n, rounds, budget, tmp, not a.no_inductor)
            res["rows"].append(row)
            print(_line(row), flush=True)
            for k, note in row["notes"].items():
                print(f"{'':22s} {k}: {note[:160]}")
    rs = [r["ratio_best"] for r in res["rows"] if "ratio_best" in r]
    res["geomean_oxla_over_best"] = math.exp(statistics.mean(map(math.log, rs))) if rs else None
    res["above_1.2"] = [(r["model"], round(r["ratio_best"], 2)) for r in res["rows"]
                        if r.get("ratio_best", 0) > 1.2]
    res["load_avg_end"] = os.getloadavg()
    res["wall_s"] = time.perf_counter() - t0
    g = res["geomean_oxla_over_best"]
    print(f"geomean oxla/best anchor over {len(rs)} models: " + (f"{g:.2f}x" if g else "-"))
    print(f"above 1.2x ({len(res['above_1.2'])}): "
          + ", ".join(f"{k} {v}x" for k, v in res["above_1.2"]))
    print(f"load average at end: {res['load_avg_end'][0]:.2f}; wall {res['wall_s']:.0f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
