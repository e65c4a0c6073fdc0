"""oxla ``cpu`` vs torch eager, ``torch.compile`` (inductor) and onnxruntime on real models.

Not a test. GPT-2 small (``transformers.GPT2Config(use_cache=False)``, ``GPT2LMHeadModel``,
output: logits) and BERT-base (``transformers.BertConfig()``, ``BertModel``, outputs:
last hidden state and pooler output), random weights (seed 0), f32 forward on the CPU,
``input_ids`` of shape (batch, seq) with batch 1 and 8 at sequence 128. No downloads.

Every engine's outputs are first checked against torch eager (max abs error, and the
error relative to the largest eager magnitude). Timing is one interleaved run: in each
round every engine, after a short pause (spinning thread pools of the engine before
must not share the cores), gets one untimed call and then a block of timed calls; the
figure is the median per-call time over all rounds, shown as a ratio oxla / engine
measured in the same run (>1 = oxla slower). Bare medians are in the JSON and in the
last column. ``--repeat N`` does N timing passes over the same compiled engines.

What each figure includes:

* oxla: ``oxla_frontend_torch.compile(model, (ids,), backend="cpu")`` with a fresh,
  empty ``OXLA_CACHE_DIR`` (torch.export + decompositions + import + CPU compile, a
  cache miss); then a second compile of the same decomposed program (import + cache
  hit). A call: torch tensors in and out through DLPack.
* eager: ``model(ids)`` under ``torch.inference_mode()``; warm-up = first call.
* inductor: ``torch.compile(model)`` (default mode); compile = the first call.
* onnxruntime: ``torch.onnx.export`` (dynamo exporter, then the TorchScript one if it
  fails) + ``InferenceSession`` (all graph optimizations, default threads) + first run.
  A call: ``sess.run`` on numpy inputs, outputs as numpy.

An engine that cannot build (no C++ compiler for inductor, an export failure) is
reported with its error in the table and the JSON, never dropped silently.

onnxruntime and onnx are benchmark-only anchors, in no requirements file; install them
with ``.venv/bin/pip install onnxruntime onnx onnxscript`` (onnxscript: the dynamo
exporter).

Usage::

    python bench/torch_models.py [--quick] [--json OUT.json] [--rounds N] [--repeat N]
                                 [--only gpt2,bert] [--batches 1,8] [--seq 128]

``--quick``: GPT-2 only, batch 1, sequence 32, fewer rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from timing import interleaved

# --- models ---------------------------------------------------------------------------


class _GPT2(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        import transformers

        self.m = transformers.GPT2LMHeadModel(transformers.GPT2Config(use_cache=False))

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (self.m(input_ids=ids).logits,)


class _BERT(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        import transformers

        self.m = transformers.BertModel(transformers.BertConfig())

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.m(input_ids=ids)
        return (out.last_hidden_state, out.pooler_output)


MODELS: dict[str, tuple[type[torch.nn.Module], int]] = {
    "gpt2": (_GPT2, 50257),  # class, vocabulary size
    "bert": (_BERT, 30522),
}

# --- engines --------------------------------------------------------------------------


@dataclass
class Engine:
    call: Callable[[], list[np.ndarray]] | None
    compile_s: float | None = None  # compile / export / warm-up, seconds
    note: str = ""
    extra: dict = field(default_factory=dict)


def _np(outs) -> list[np.ndarray]:
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    return [o.detach().numpy() if isinstance(o, torch.Tensor) else np.asarray(o)
            for o in outs]


def _err(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:200]


def _eager(model: torch.nn.Module, ids: torch.Tensor) -> Engine:
    def call():
        with torch.inference_mode():
            return _np(model(ids))

    t0 = time.perf_counter()
    call()
    return Engine(call, time.perf_counter() - t0)


def _oxla(model: torch.nn.Module, ids: torch.Tensor, cache_dir: str) -> Engine:
    import oxla_frontend_torch as oft
    from oxla_frontend_torch.api import TorchFunction

    from oxla.protocols import CompileOptions

    old = os.environ.get("OXLA_CACHE_DIR")
    os.environ["OXLA_CACHE_DIR"] = cache_dir
    try:
        opts = CompileOptions(cache=True)
        t0 = time.perf_counter()
        fn = oft.compile(model, (ids,), backend="cpu", options=opts)
        compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        hit = TorchFunction(fn.program, "cpu", opts)
        hit_s = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - reported in the table
        return Engine(None, note=_err(exc))
    finally:
        if old is None:
            os.environ.pop("OXLA_CACHE_DIR", None)
        else:
            os.environ["OXLA_CACHE_DIR"] = old
    stats = fn.executable.stats
    extra = {"cache_hit_s": hit_s, "first_cache": stats.get("cache"),
             "second_cache": hit.executable.stats.get("cache")}

    def call():
        with torch.inference_mode():
            return _np(fn(ids))

    return Engine(call, compile_s, extra=extra)


def _inductor(model: torch.nn.Module, ids: torch.Tensor) -> Engine:
    try:
        torch._dynamo.reset()
        cm = torch.compile(model)
        t0 = time.perf_counter()
        with torch.inference_mode():
            cm(ids)
        compile_s = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - reported in the table
        return Engine(None, note=_err(exc))

    def call():
        with torch.inference_mode():
            return _np(cm(ids))

    return Engine(call, compile_s)


def _onnx_export(model: torch.nn.Module, ids: torch.Tensor, path: str) -> str:
    errors = []
    for dynamo in (True, False):
        try:
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(model, (ids,), path, dynamo=dynamo, input_names=["ids"],
                                  opset_version=18)
            return f"dynamo={dynamo}" + (f" (dynamo=True failed: {errors[0]})" if errors
                                         else "")
        except Exception as exc:  # noqa: BLE001 - try the other exporter
            errors.append(_err(exc))
    raise RuntimeError("; ".join(f"dynamo={d}: {e}" for d, e in zip((True, False), errors)))


def _ort(model: torch.nn.Module, ids: torch.Tensor, tmp: str) -> Engine:
    try:
        import onnxruntime as ort
    except ImportError:
        return Engine(None, note="onnxruntime not installed")
    path = os.path.join(tmp, f"model_{ids.shape[0]}x{ids.shape[1]}.onnx")
    try:
        t0 = time.perf_counter()
        how = _onnx_export(model, ids, path)
        export_s = time.perf_counter() - t0
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        name = sess.get_inputs()[0].name
        feed = {name: ids.numpy()}
        sess.run(None, feed)
        compile_s = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - reported in the table
        return Engine(None, note=_err(exc))

    def call():
        return sess.run(None, feed)

    return Engine(call, compile_s, extra={"export": how, "export_s": export_s})


# --- timing ---------------------------------------------------------------------------

def _interleaved(calls: dict[str, Callable], rounds: int, budget_s: float,
                 settle_s: float, slowest: float) -> dict[str, float]:
    times = interleaved(calls, rounds, budget_s, settle_s, max_calls=100, slowest_s=slowest)
    return {k: statistics.median(v) for k, v in times.items()}


def _check(ref: list[np.ndarray], got: list[np.ndarray]) -> dict:
    if len(ref) != len(got):
        return {"error": f"expected {len(ref)} outputs, got {len(got)}"}
    abs_err = max(float(np.max(np.abs(r.astype(np.float64) - g.astype(np.float64))))
                  for r, g in zip(ref, got))
    scale = max(float(np.max(np.abs(r))) for r in ref)
    return {"max_abs": abs_err, "rel_to_max": abs_err / scale if scale else abs_err}


def run_case(model_name: str, batch: int, seq: int, rounds: int, repeat: int,
             budget_s: float, tmp: str) -> dict:
    cls, vocab = MODELS[model_name]
    torch.manual_seed(0)
    model = cls().eval()
    ids = torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(1))
    engines = {"eager": _eager(model, ids)}
    cache_dir = tempfile.mkdtemp(dir=tmp, prefix="oxla_cache_")
    engines["oxla"] = _oxla(model, ids, cache_dir)
    engines["inductor"] = _inductor(model, ids)
    engines["onnxruntime"] = _ort(model, ids, tmp)
    ref = engines["eager"].call()
    row: dict = {"model": model_name, "batch": batch, "seq": seq, "compile_s": {},
                 "notes": {}, "check": {}, "extra": {}, "median_s": [], "ratio": []}
    slowest = 0.0
    for k, e in engines.items():
        row["compile_s"][k] = e.compile_s
        if e.note:
            row["notes"][k] = e.note
        if e.extra:
            row["extra"][k] = e.extra
        if e.call is not None and k != "eager":
            t0 = time.perf_counter()
            row["check"][k] = _check(ref, e.call())
            slowest = max(slowest, time.perf_counter() - t0)
    calls = {k: e.call for k, e in engines.items() if e.call is not None}
    for _ in range(repeat):
        med = _interleaved(calls, rounds, budget_s, 0.3, slowest)
        row["median_s"].append(med)
        row.setdefault("load_avg_after_pass", []).append(os.getloadavg()[0])
        o = med.get("oxla")
        row["ratio"].append({k: o / v for k, v in med.items() if k != "oxla"} if o else {})
    return row


# --- report ---------------------------------------------------------------------------

ENGINES = ("eager", "inductor", "onnxruntime")


def _fmt(row: dict, i: int, k: str) -> str:
    r = row["ratio"][i].get(k)
    if r is not None:
        return f"{r:6.2f}x"
    return "n/a" if k not in row["notes"] else "failed"


def _print_row(row: dict) -> None:
    case = f"{row['model']} b{row['batch']} s{row['seq']}"
    for i, med in enumerate(row["median_s"]):
        ratios = "  ".join(f"{k} {_fmt(row, i, k):>7s}" for k in ENGINES)
        ms = " ".join(f"{k}={v * 1e3:.1f}" for k, v in med.items())
        load = row.get("load_avg_after_pass", [None] * (i + 1))[i]
        print(f"{case:16s} pass {i + 1}: oxla/{ratios}   median ms: {ms}  load {load:.1f}",
              flush=True)
    cs = row["compile_s"]
    ox = row["extra"].get("oxla", {})
    hit = ox.get("cache_hit_s")
    comp = "  ".join(f"{k} {v:.1f}s" for k, v in cs.items() if v is not None)
    if hit is not None:
        # A miss here means the key changed (e.g. backend sources edited mid-run).
        state = "hit" if ox.get("second_cache") == "hit" else \
            f"NOT a hit: {ox.get('second_cache')}"
        comp += f"  (oxla 2nd compile {hit:.1f}s, cache {state})"
    print(f"{'':16s} compile/warm-up: {comp}")
    checks = "  ".join(f"{k} {c.get('max_abs', float('nan')):.2e} "
                       f"(rel {c.get('rel_to_max', float('nan')):.1e})"
                       for k, c in row["check"].items())
    print(f"{'':16s} max abs err vs eager: {checks}")
    for k, n in row["notes"].items():
        print(f"{'':16s} {k} FAILED: {n}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="GPT-2, batch 1, seq 32")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--repeat", type=int, default=1, help="timing passes per case")
    p.add_argument("--only", default=None, help="comma-separated models: gpt2,bert")
    p.add_argument("--batches", default=None, help="comma-separated batch sizes")
    p.add_argument("--seq", type=int, default=None)
    p.add_argument("--json", default=None, help="write results here")
    a = p.parse_args(argv)
    models = a.only.split(",") if a.only else (["gpt2"] if a.quick else ["gpt2", "bert"])
    batches = [int(b) for b in a.batches.split(",")] if a.batches else \
        ([1] if a.quick else [1, 8])
    seq = a.seq or (32 if a.quick else 128)
    rounds = a.rounds or (3 if a.quick else 3)
    budget = 0.3 if a.quick else 1.0
    warnings.filterwarnings("ignore")
    import transformers

    res: dict = {"quick": a.quick, "rounds": rounds, "repeat": a.repeat,
                 "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                 "load_avg_start": os.getloadavg(), "torch": torch.__version__,
                 "transformers": transformers.__version__, "python": platform.python_version(),
                 "cases": []}
    try:
        import onnxruntime

        res["onnxruntime"] = onnxruntime.__version__
    except ImportError:
        res["onnxruntime"] = None
    print(f"latency ratios oxla / engine (median, same interleaved run; <1 = oxla faster); "
          f"load {res['load_avg_start'][0]:.2f}, {os.cpu_count()} cpus", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for m in models:
            for b in batches:
                row = run_case(m, b, seq, rounds, a.repeat, budget, tmp)
                res["cases"].append(row)
                _print_row(row)
    res["load_avg_end"] = os.getloadavg()
    for k in ENGINES:
        rs = [r["ratio"][-1][k] for r in res["cases"] if k in r["ratio"][-1]]
        g = math.exp(statistics.mean(map(math.log, rs))) if rs else None
        res[f"geomean_oxla_over_{k}"] = g
        print(f"geomean oxla/{k} (last pass): " + (f"{g:.2f}x" if g else "-"))
    print(f"load average at end: {res['load_avg_end'][0]:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
